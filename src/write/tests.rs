//! The write rules against an in-memory keyspace: argument order, repeated
//! keys, batch flushes, what is written in place, through the key API or
//! through the server's command, deadlines and LFU counters.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::ffi::CStr;

use super::*;
use crate::acl::AclCheck;
use crate::ffi::Allocation;
use crate::server::{Callable, Environment, Product, Server};

const NOW: i64 = 1_700_000_000_000;

#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    value: Vec<u8>,
    string: bool,
    deadline: Option<i64>,
    lfu: i64,
    /// The buffer has room to spare (an APPEND left it).
    spare: bool,
}

impl Entry {
    fn string(value: &str) -> Entry {
        Entry {
            value: value.as_bytes().to_vec(),
            string: true,
            deadline: None,
            lfu: 0,
            spare: false,
        }
    }
}

/// The keyspace, and a log of everything the rules did to it, in order.
#[derive(Default)]
struct Store {
    keys: RefCell<BTreeMap<Vec<u8>, Entry>>,
    log: RefCell<Vec<String>>,
    /// Value writes so far (key API stores, batch commands), and the one that fails or panics.
    writes: Cell<usize>,
    fault: Cell<Option<(usize, Fault)>>,
    /// Opens for writing and deadlines set so far, and the one that fails (none is returned, or
    /// the deadline is not set; the key stays as it is).
    opens: Cell<usize>,
    open_fault: Cell<Option<usize>>,
    expiries: Cell<usize>,
    expiry_fault: Cell<Option<usize>>,
}

/// Counts one more `count`; true where `fault` is that one.
fn hit(count: &Cell<usize>, fault: &Cell<Option<usize>>) -> bool {
    let n = count.get();
    count.set(n + 1);
    fault.get() == Some(n)
}

/// How an injected failure shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    Fails,
    Panics,
}

impl Store {
    fn with(keys: &[(&str, Entry)]) -> Store {
        let store = Store::default();
        for (key, entry) in keys {
            store
                .keys
                .borrow_mut()
                .insert(key.as_bytes().to_vec(), entry.clone());
        }
        store
    }

    fn log(&self, line: String) {
        self.log.borrow_mut().push(line);
    }

    /// A value write is about to happen: false (or a panic) where the fault was injected.
    fn write_goes_through(&self) -> bool {
        let n = self.writes.get();
        self.writes.set(n + 1);
        match self.fault.get() {
            Some((at, Fault::Fails)) if at == n => false,
            // A panic without the hook's message (as a caught one unwinds).
            Some((at, Fault::Panics)) if at == n => std::panic::resume_unwind(Box::new(n)),
            _ => true,
        }
    }

    fn lines(&self, prefix: &str) -> Vec<String> {
        self.log
            .borrow()
            .iter()
            .filter(|line| line.starts_with(prefix))
            .cloned()
            .collect()
    }

    fn get(&self, key: &str) -> Option<Entry> {
        self.keys.borrow().get(key.as_bytes()).cloned()
    }

    fn edit(&self, key: &[u8], edit: impl FnOnce(&mut Entry)) -> bool {
        self.keys.borrow_mut().get_mut(key).map(edit).is_some()
    }
}

struct Handle<'s> {
    store: &'s Store,
    key: Vec<u8>,
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

impl<'s> OpenKey<&'s [u8]> for Handle<'s> {
    fn contents(&self) -> Contents {
        match self.store.keys.borrow().get(&self.key) {
            None => Contents::Nothing,
            Some(entry) if entry.string => Contents::String(entry.value.len()),
            Some(_) => Contents::Other,
        }
    }
    fn allocation(&mut self, len: usize) -> Option<Allocation> {
        let entry = self.store.keys.borrow().get(&self.key).cloned()?;
        (entry.value.len() == len).then_some(if entry.spare {
            Allocation::Capacity {
                header: 3,
                capacity: 2 * len + 64,
            }
        } else {
            Allocation::Exact
        })
    }
    fn overwrite(&mut self, bytes: &[u8]) -> bool {
        if !self.store.write_goes_through() {
            return false;
        }
        self.store.log(format!("in place {}", text(&self.key)));
        self.store
            .edit(&self.key, |entry| entry.value = bytes.to_vec())
    }
    fn set(&mut self, value: &'s [u8]) -> bool {
        if !self.store.write_goes_through() {
            return false;
        }
        self.store.log(format!("key api {}", text(&self.key)));
        let mut keys = self.store.keys.borrow_mut();
        let lfu = keys.get(&self.key).map_or(0, |entry| entry.lfu);
        keys.insert(
            self.key.clone(),
            Entry {
                lfu,
                ..Entry::string(&text(value))
            },
        );
        true
    }
    fn deadline(&self) -> Option<i64> {
        self.store.keys.borrow().get(&self.key)?.deadline
    }
    fn expire_in(&mut self, ms: i64) -> Option<i64> {
        self.expire_at(NOW + ms).then_some(NOW + ms)
    }
    fn expire_at(&mut self, at: i64) -> bool {
        !hit(&self.store.expiries, &self.store.expiry_fault)
            && self
                .store
                .edit(&self.key, |entry| entry.deadline = Some(at))
    }
    fn persist(&mut self) -> bool {
        !hit(&self.store.expiries, &self.store.expiry_fault)
            && self.store.edit(&self.key, |entry| entry.deadline = None)
    }
    fn lfu(&self) -> Option<i64> {
        Some(self.store.keys.borrow().get(&self.key).map_or(0, |e| e.lfu))
    }
    fn set_lfu(&mut self, lfu: i64) {
        self.store.edit(&self.key, |entry| entry.lfu = lfu);
    }
    fn mark_used_now(&mut self) {
        self.store.log(format!("lru {}", text(&self.key)));
    }
}

impl<'s> Keyspace for &'s Store {
    type Arg = &'s [u8];
    type Key = Handle<'s>;

    fn open(&self, key: &'s [u8], touch: Touch) -> Option<Handle<'s>> {
        if hit(&self.opens, &self.open_fault) {
            return None;
        }
        if touch == Touch::Yes {
            self.log(format!("access {}", text(key)));
            self.edit(key, |entry| entry.lfu += 1);
        }
        Some(Handle {
            store: self,
            key: key.to_vec(),
        })
    }
    fn look(&self, key: &'s [u8]) -> Option<Handle<'s>> {
        self.keys.borrow().contains_key(key).then(|| Handle {
            store: self,
            key: key.to_vec(),
        })
    }
    fn notify(&self, _class: EventClass, event: &'static CStr, key: &'s [u8]) {
        self.log(format!("event {} {}", event.to_string_lossy(), text(key)));
    }
    fn signal(&self, key: &'s [u8]) {
        self.log(format!("signal {}", text(key)));
    }
    /// MSET, the built-in MSETEX and SET, as the servers run them; fresh values only in the
    /// counts one `RedisModule_Call` can pass (`fresh_part`), as `ffi::Ctx::call_with_pairs`.
    fn run(&self, call: &ServerWrite, pairs: &[&'s [u8]]) -> bool {
        let count = pairs.len() / 2;
        if call.values == Values::Fresh && fresh_part(count) != count {
            self.log(format!("refused {count} fresh pairs"));
            return false;
        }
        if !self.write_goes_through() {
            return false;
        }
        let tail: Vec<String> = call
            .tail
            .iter()
            .map(|word| match word {
                Word::Text(t) => text(t),
                Word::Number(n) => n.to_string(),
            })
            .collect();
        let flat: Vec<String> = pairs.iter().map(|a| text(a)).collect();
        let command = call.command.to_string_lossy();
        self.log(
            format!("call {command} {} {}", flat.join(" "), tail.join(" "))
                .trim_end()
                .to_owned(),
        );
        let deadline = match tail.as_slice() {
            [unit, at] if unit == "PXAT" => at.parse().ok(),
            [unit, ms] if unit == "PX" => ms.parse::<i64>().ok().map(|ms| NOW + ms),
            _ => None,
        };
        for pair in pairs.chunks(2) {
            let (key, value) = (pair[0], pair[1]);
            let old = self.keys.borrow().get(key).cloned();
            if command != "MSET" && deadline.is_some_and(|at| at <= NOW) {
                // Valkey 8+'s SET with a past deadline deletes the key.
                self.keys.borrow_mut().remove(key);
                continue;
            }
            let keep = tail.first().is_some_and(|t| t == "KEEPTTL");
            let entry = Entry {
                deadline: if keep {
                    old.as_ref().and_then(|e| e.deadline)
                } else {
                    deadline
                },
                lfu: old.map_or(0, |e| e.lfu) + 1,
                ..Entry::string(&text(value))
            };
            self.keys.borrow_mut().insert(key.to_vec(), entry);
            self.log(format!("event set {}", text(key)));
            if command != "MSET" && deadline.is_some() {
                self.log(format!("event expire {}", text(key)));
            }
        }
        true
    }
}

/// What reached the replication: (key, by, expiry).
#[derive(Default)]
struct Recorder(Vec<(String, WrittenBy, Resolved)>);

impl<'s> Sink<&'s [u8]> for Recorder {
    fn written(&mut self, key: &'s [u8], by: WrittenBy, expiry: Resolved) {
        self.0.push((text(key), by, expiry));
    }
    fn vanished(&mut self, key: &'s [u8]) {
        panic!("{} vanished", text(key));
    }
}

const ENVIRONMENT: Environment = Environment {
    cluster: false,
    io_threads: Some(1),
    jemalloc: true,
    callable: Callable::ALL,
    name_in_use: Some(false),
    builtin_listed: None,
    keynum_step: None,
    acl: AclCheck::Categories,
    key_specs: true,
    slot_migrations_at_load: None,
};

fn profile(product: Product, version: (u32, u32, u32)) -> Profile {
    Profile::new(&Server { product, version }, ENVIRONMENT)
}

fn redis(major: u32, minor: u32) -> Profile {
    profile(Product::Redis, (major, minor, 0))
}

fn valkey(major: u32, minor: u32) -> Profile {
    profile(Product::Valkey, (major, minor, 0))
}

/// Writes `pairs` with `expiry` on `store` as `profile` says.
fn write<'s>(
    store: &'s Store,
    profile: &Profile,
    pairs: &[&'s str],
    expiry: Expiry,
) -> (usize, Recorder) {
    let pairs: Vec<&[u8]> = pairs.iter().map(|a| a.as_bytes()).collect();
    let mut recorder = Recorder::default();
    let batching = Batching::choose(profile, expiry, NOW);
    let written = write_all(
        &store,
        profile,
        &pairs,
        expiry,
        batching,
        false,
        &mut recorder,
    )
    .expect("no abort");
    (written, recorder)
}

#[test]
fn keys_are_written_in_argument_order() {
    // a, d: integers (the batch); b: a longer string (the batch); c, e: new
    // keys (the key API). The batch is written before each key-API write.
    let store = Store::with(&[("b", Entry::string("a longer string"))]);
    let pairs = ["a", "1", "b", "xy", "c", "hello", "d", "7", "e", "new"];
    let (written, recorder) = write(&store, &redis(7, 0), &pairs, Expiry::In(100_000));
    assert_eq!(written, 5);
    assert_eq!(
        store.lines("call"),
        ["call MSET a 1", "call MSET b xy", "call MSET d 7"]
    );
    let sets: Vec<String> = store.lines("event set");
    assert_eq!(
        sets,
        [
            "event set a",
            "event set b",
            "event set c",
            "event set d",
            "event set e"
        ]
    );
    let keys: Vec<&str> = recorder.0.iter().map(|(k, _, _)| k.as_str()).collect();
    assert_eq!(keys, ["a", "b", "c", "d", "e"]);
    // Each key's `expire` after its own `set`.
    let log = store.log.borrow();
    for key in ["a", "b", "c", "d", "e"] {
        let at = |line: &str| log.iter().position(|l| l == &format!("{line} {key}"));
        let (set, expire) = (at("event set"), at("event expire"));
        assert!(set.is_some() && set < expire, "{key}: {log:?}");
    }
}

#[test]
fn a_repeated_key_ends_with_its_last_value() {
    let store = Store::default();
    let pairs = ["k", "1", "k", "2", "j", "3", "k", "abc"];
    let (written, _) = write(&store, &redis(7, 2), &pairs, Expiry::In(1000));
    assert_eq!(written, 4);
    // The batch is written before a key waiting in it comes again (and
    // "abc" is no string of the length k holds: the batch again).
    assert_eq!(
        store.lines("call"),
        ["call MSET k 1", "call MSET k 2 j 3", "call MSET k abc"]
    );
    assert_eq!(store.get("k").unwrap().value, b"abc");
    assert_eq!(store.get("k").unwrap().deadline, Some(NOW + 1000));
}

#[test]
fn a_batch_is_written_every_256_pairs() {
    // Strings of another length than the keys hold: the batch, passed as they are.
    let keys: Vec<String> = (0..300).map(|i| format!("n{i:03}")).collect();
    let store = Store::with(
        &keys
            .iter()
            .map(|k| (k.as_str(), Entry::string("old")))
            .collect::<Vec<_>>(),
    );
    let pairs: Vec<&str> = keys.iter().flat_map(|k| [k.as_str(), "value"]).collect();
    let (written, _) = write(&store, &redis(8, 0), &pairs, Expiry::At(NOW + 5));
    assert_eq!(written, 300);
    let pairs_per_call = |store: &Store| -> Vec<usize> {
        let calls = store.lines("call");
        calls
            .iter()
            .map(|c| (c.split(' ').count() - 2) / 2)
            .collect()
    };
    assert_eq!(pairs_per_call(&store), [256, 44]);
    // Integers go as fresh copies, in the parts one call can pass.
    let store = Store::default();
    let pairs: Vec<&str> = keys.iter().flat_map(|k| [k.as_str(), "5"]).collect();
    let (written, _) = write(&store, &redis(8, 0), &pairs, Expiry::At(NOW + 5));
    assert_eq!(written, 300);
    assert_eq!(pairs_per_call(&store), [64, 64, 64, 64, 32, 8, 4]);
}

#[test]
fn what_goes_in_place_and_what_goes_to_the_server() {
    let long = "x".repeat(100);
    let spare = Entry {
        spare: true,
        ..Entry::string(&long)
    };
    let store = Store::with(&[
        ("exact", Entry::string(&long)),
        ("spare", spare),
        ("short", Entry::string("0123456789")),
        (
            "list",
            Entry {
                string: false,
                ..Entry::string("x")
            },
        ),
        ("longer", Entry::string(&"x".repeat(101))),
    ]);
    let new = "y".repeat(100);
    let pairs = [
        "exact",
        &new,
        "spare",
        &new,
        "short",
        "abcdefghij",
        "list",
        &new,
        "longer",
        &new,
        "fresh",
        &new,
    ];
    // Redis 8.6 embeds strings of key + value up to 41 bytes.
    let (written, recorder) = write(&store, &redis(8, 6), &pairs, Expiry::In(60_000));
    assert_eq!(written, 6);
    assert_eq!(store.lines("in place"), ["in place exact"]);
    assert_eq!(store.lines("key api"), ["key api fresh"]);
    let batched = store.lines("call");
    assert_eq!(batched.len(), 1, "{batched:?}");
    for key in ["spare ", "short ", "list ", "longer "] {
        assert!(batched[0].contains(key), "{key}: {batched:?}");
    }
    // Written in place on 8.2+: SET's `overwritten` first.
    assert!(store.lines("event overwritten") == ["event overwritten exact"]);
    let by: Vec<WrittenBy> = recorder.0.iter().map(|(_, by, _)| *by).collect();
    assert_eq!(by.iter().filter(|b| **b == WrittenBy::KeyApi).count(), 2);
    // Every key ends with the one deadline the first key gave.
    for (key, _, expiry) in &recorder.0 {
        assert_eq!(*expiry, Resolved::At(NOW + 60_000), "{key}");
        assert_eq!(
            store.get(key).unwrap().deadline,
            Some(NOW + 60_000),
            "{key}"
        );
    }
}

#[test]
fn without_jemalloc_nothing_is_written_in_place() {
    let long = "x".repeat(100);
    let store = Store::with(&[("k", Entry::string(&long))]);
    let mut profile = redis(7, 0);
    profile.in_place = None;
    let new = "y".repeat(100);
    write(&store, &profile, &["k", &new], Expiry::In(1000));
    assert!(store.lines("in place").is_empty());
    assert_eq!(store.lines("call").len(), 1);
}

#[test]
fn valkey_9_1_leaves_what_set_embeds_to_its_builtin_without_opening_it() {
    let long = "z".repeat(200);
    let store = Store::with(&[("old", Entry::string(&long))]);
    let new = "w".repeat(200);
    let pairs = ["small", "v", "old", &new, "big", &new];
    let (written, recorder) = write(&store, &valkey(9, 1), &pairs, Expiry::In(5000));
    assert_eq!(written, 3);
    // Not opened: the built-in's lookup is its one access.
    assert!(!store.lines("access").contains(&"access small".to_owned()));
    assert_eq!(store.lines("in place"), ["in place old"]);
    // A new key whose value SET would not embed goes through the key API,
    // with the deadline the built-in's batch gave (its clock, PX).
    assert_eq!(store.lines("call"), ["call MSETEX small v PX 5000"]);
    assert_eq!(store.lines("key api"), ["key api big"]);
    assert_eq!(store.get("big").unwrap().deadline, Some(NOW + 5000));
    assert!(recorder
        .0
        .iter()
        .all(|(_, _, e)| *e == Resolved::At(NOW + 5000)));
}

#[test]
fn keepttl_keeps_each_deadline_through_mset() {
    let with_ttl = Entry {
        deadline: Some(NOW + 9),
        ..Entry::string("old")
    };
    let store = Store::with(&[("a", with_ttl), ("b", Entry::string("old"))]);
    let (_, recorder) = write(&store, &redis(7, 0), &["a", "1", "b", "2"], Expiry::Keep);
    assert_eq!(store.get("a").unwrap().deadline, Some(NOW + 9));
    assert_eq!(store.get("b").unwrap().deadline, None);
    assert!(store.lines("event expire").is_empty());
    assert!(recorder.0.iter().all(|(_, _, e)| *e == Resolved::Keep));
}

#[test]
fn a_batched_key_counts_one_access_as_set_does() {
    let counted = Entry {
        lfu: 5,
        ..Entry::string("a string")
    };
    let store = Store::with(&[("k", counted)]);
    write(
        &store,
        &redis(7, 0),
        &["k", "other length"],
        Expiry::In(1000),
    );
    // Opened (one access), then the batch's own lookup: restored to one.
    assert_eq!(store.get("k").unwrap().lfu, 6);
}

#[test]
fn each_batched_key_gets_back_its_own_access_counter() {
    // On Redis 8.6 a short value goes to the batch unopened (SET embeds it), with no counter to
    // restore; a string of another length is opened first, and its counter is restored.
    let long = "z".repeat(60);
    let counted = |lfu| Entry {
        lfu,
        ..Entry::string(&long)
    };
    let store = Store::with(&[("k1", counted(5)), ("k2", counted(9))]);
    let other = "w".repeat(70);
    let pairs = ["n1", "v", "k1", &other, "n2", "v", "k2", &other, "n3", "v"];
    let (written, recorder) = write(&store, &redis(8, 6), &pairs, Expiry::In(1000));
    assert_eq!(written, 5);
    assert_eq!(store.lines("call").len(), 1, "one batch");
    let lfu = |key| store.get(key).unwrap().lfu;
    assert_eq!((lfu("k1"), lfu("k2")), (6, 10), "one access each, as SET");
    assert_eq!(
        (lfu("n1"), lfu("n2"), lfu("n3")),
        (1, 1, 1),
        "the batch's lookup only"
    );
    // Keys finished the general way (a relative TTL, counters waiting) and the short way (n3:
    // one deadline, no counter left) end alike: the deadline, `expire` after `set`, the report.
    for key in ["n1", "k1", "n2", "k2", "n3"] {
        assert_eq!(store.get(key).unwrap().deadline, Some(NOW + 1000), "{key}");
        let log = store.lines("event");
        let at = |line: &str| log.iter().position(|l| l == &format!("{line} {key}"));
        let (set, expire) = (at("event set"), at("event expire"));
        assert!(set.is_some() && set < expire, "{key}: {log:?}");
    }
    assert_eq!(recorder.0.len(), 5);
    assert!(recorder
        .0
        .iter()
        .all(|(_, _, e)| *e == Resolved::At(NOW + 1000)));
}

#[test]
fn redis_6_2_writes_new_keys_with_mset_which_counts_them() {
    // In place as on 7.0 above 44 bytes; a new key goes to MSET (counting a key-API change costs
    // more there).
    let (old, long) = ("b".repeat(45), "y".repeat(45));
    let store = Store::with(&[("b", Entry::string(&old))]);
    let pairs = ["b", &long, "a", "x", "c", "3"];
    let (written, recorder) = write(&store, &redis(6, 2), &pairs, Expiry::In(2000));
    assert_eq!(written, 3);
    assert!(store.lines("key api").is_empty());
    assert_eq!(store.lines("in place"), ["in place b"]);
    assert_eq!(store.lines("call"), ["call MSET a x", "call MSET c 3"]);
    let by: Vec<WrittenBy> = recorder.0.iter().map(|(_, by, _)| *by).collect();
    assert_eq!(
        by,
        [WrittenBy::KeyApi, WrittenBy::Command, WrittenBy::Command]
    );
    let events: Vec<String> = store.lines("event");
    assert_eq!(
        events,
        [
            "event set b",
            "event expire b",
            "event set a",
            "event expire a",
            "event set c",
            "event expire c"
        ]
    );
    assert_eq!(store.get("b").unwrap().deadline, Some(NOW + 2000));

    // A value SET would make `embstr` goes to MSET, whose MEMORY USAGE reads as SET's.
    let store = Store::with(&[("b", Entry::string("bb"))]);
    write(&store, &redis(6, 2), &["b", "yy"], Expiry::In(2000));
    assert!(store.lines("in place").is_empty());
    assert_eq!(store.lines("call"), ["call MSET b yy"]);

    // After a new key, the rest go to MSET unopened: one there is overwritten, as SET would.
    let store = Store::with(&[("b", Entry::string("bb"))]);
    let (written, _) = write(
        &store,
        &redis(6, 2),
        &["a", "x", "b", "yy"],
        Expiry::In(2000),
    );
    assert_eq!(written, 2);
    assert!(store.lines("in place").is_empty());
    assert_eq!(store.lines("call"), ["call MSET a x b yy"]);
    assert_eq!(store.get("b").unwrap().value, b"yy");
    assert_eq!(store.get("b").unwrap().deadline, Some(NOW + 2000));

    // 7.0 writes a new key through the key API.
    let store = Store::default();
    write(&store, &redis(7, 0), &["a", "x"], Expiry::In(2000));
    assert_eq!(store.lines("key api"), ["key api a"]);
}

#[test]
fn a_past_deadline_on_valkey_8_is_for_set_to_decide() {
    let store = Store::with(&[("old", Entry::string("x"))]);
    let past = NOW - 60_000;
    let (written, recorder) = write(
        &store,
        &valkey(8, 1),
        &["old", "y", "new", "z"],
        Expiry::At(past),
    );
    // SET deleted the key that was there and stored nothing for the other;
    // it replicated that itself.
    assert_eq!(written, 0);
    assert!(store.get("old").is_none() && store.get("new").is_none());
    assert!(recorder.0.is_empty());
    assert_eq!(store.lines("call").len(), 2);
    // The same call on Redis stores both keys, logically expired.
    let store = Store::with(&[("old", Entry::string("x"))]);
    let (written, _) = write(
        &store,
        &redis(8, 0),
        &["old", "y", "new", "z"],
        Expiry::At(past),
    );
    assert_eq!(written, 2);
}

// --- A call stopped anywhere leaves replicas equal to the primary ----------------------------

use crate::ffi::Word;
use crate::replication::{CallForm, Link, Replicate, Replication, Sent, Wire};
use std::ffi::CString;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// What the replication link received; it refuses one command where told to, and the counter.
#[derive(Default)]
struct Received {
    commands: RefCell<Vec<Vec<String>>>,
    attempts: Cell<usize>,
    refuse: Option<usize>,
    refuse_counter: bool,
}

struct Recording<'a>(&'a Received);

impl<'s> Link<&'s [u8]> for Recording<'_> {
    fn replicate(
        &mut self,
        command: &CStr,
        head: &[Word],
        pairs: &[&'s [u8]],
        tail: &[Word],
    ) -> bool {
        let attempt = self.0.attempts.get();
        self.0.attempts.set(attempt + 1);
        if self.0.refuse == Some(attempt) {
            return false;
        }
        let word = |word: &Word| match word {
            Word::Text(text) => String::from_utf8_lossy(text).into_owned(),
            Word::Number(n) => n.to_string(),
        };
        let mut line = vec![command.to_string_lossy().into_owned()];
        line.extend(head.iter().map(word));
        line.extend(pairs.iter().map(|a| text(a)));
        line.extend(tail.iter().map(word));
        self.0.commands.borrow_mut().push(line);
        true
    }
    fn count_change(&mut self) {}
    fn count_changes(&mut self, _n: usize) -> bool {
        !self.0.refuse_counter
    }
}

/// Values and deadlines, as a replica compares them.
type State = BTreeMap<String, (String, Option<i64>)>;

fn state(store: &Store) -> State {
    store
        .keys
        .borrow()
        .iter()
        .map(|(k, e)| (text(k), (text(&e.value), e.deadline)))
        .collect()
}

/// `seed` after the commands a replica received: SET, `m.apply` and MSETEX numkeys.
fn replica(seed: &State, commands: &[Vec<String>]) -> State {
    let mut keys = seed.clone();
    let put = |keys: &mut State, pairs: &[String], expiry: &[String]| {
        for pair in pairs.chunks(2) {
            let old = keys.get(&pair[0]).and_then(|(_, d)| *d);
            let deadline = match expiry {
                [unit, at] if unit == "PXAT" => at.parse().ok(),
                [keep] if keep == "KEEPTTL" => old,
                [at] if at != "PERSIST" => at.parse().ok(),
                _ => None,
            };
            keys.insert(pair[0].clone(), (pair[1].clone(), deadline));
        }
    };
    for line in commands {
        match line.first().map(String::as_str) {
            Some("SET") => put(&mut keys, &line[1..3], &line[3..]),
            Some("m.apply") => put(&mut keys, &line[2..], &line[1..2]),
            Some("MSETEX") => {
                let n: usize = line[1].parse().expect("numkeys");
                put(&mut keys, &line[2..2 + 2 * n], &line[2 + 2 * n..]);
            }
            other => panic!("unexpected command {other:?}"),
        }
    }
    keys
}

/// Where an open or a deadline fails.
#[derive(Debug, Clone, Copy)]
enum Site {
    Open(usize),
    Expiry(usize),
}

/// Every profile and mode, every expiry, a call with every write path: a failure or a panic at
/// each value write, a failure to open a key or to set its deadline at each one, a refused command
/// at each replicate (and the finish), a failing counter.
/// Whatever the call answered, what the link received makes a replica of the primary.
#[test]
fn a_call_stopped_anywhere_leaves_replicas_equal_to_the_primary() {
    let seed = || {
        Store::with(&[
            ("b", Entry::string("bb")),
            ("c", Entry::string("a longer string")),
        ])
    };
    let pairs: Vec<&[u8]> = [
        "a",
        "x",
        "b",
        "yy",
        "c",
        "7",
        "d",
        "new",
        "a",
        "z",
        "e",
        "long value",
    ]
    .iter()
    .map(|a| a.as_bytes())
    .collect();
    let modes = [
        Sent::PerKey,
        Sent::PerCall {
            command: CString::from(c"m.apply"),
            form: CallForm::Apply,
        },
        Sent::PerCall {
            command: CString::from(c"MSETEX"),
            form: CallForm::Numkeys,
        },
    ];
    let mut checked = 0;
    for profile in [redis(7, 0), redis(6, 2), valkey(9, 1), redis(8, 6)] {
        for expiry in [Expiry::In(5000), Expiry::At(NOW + 9000), Expiry::Keep] {
            for sent in &modes {
                let replication = &Replication {
                    mode: Replicate::Set,
                    sent: sent.clone(),
                    counter: CString::from(c"m.changes"),
                    counts_at_end: profile.verbatim_copies_call,
                };
                // One run without faults tells how many writes, opens, deadlines and replicates
                // a call makes.
                let (writes, opens, expiries, attempts) = {
                    let store = seed();
                    let sent = Received::default();
                    run(&store, &profile, &pairs, expiry, replication, &sent).expect("no fault");
                    let counts = (store.writes.get(), store.opens.get(), store.expiries.get());
                    (counts.0, counts.1, counts.2, sent.attempts.get())
                };
                let faults = (0..writes)
                    .flat_map(|at| {
                        [
                            (Some((at, Fault::Fails)), None, None),
                            (Some((at, Fault::Panics)), None, None),
                        ]
                    })
                    .chain((0..opens).map(|at| (None, Some(Site::Open(at)), None)))
                    .chain((0..expiries).map(|at| (None, Some(Site::Expiry(at)), None)))
                    .chain((0..attempts).map(|at| (None, None, Some(at))));
                for (fault, site, refuse) in faults.chain([(None, None, None)]) {
                    for refuse_counter in [false, true] {
                        let store = seed();
                        let before = state(&store);
                        store.fault.set(fault);
                        match site {
                            Some(Site::Open(at)) => store.open_fault.set(Some(at)),
                            Some(Site::Expiry(at)) => store.expiry_fault.set(Some(at)),
                            None => {}
                        }
                        let sent = Received {
                            refuse,
                            refuse_counter,
                            ..Received::default()
                        };
                        let _ = catch_unwind(AssertUnwindSafe(|| {
                            run(&store, &profile, &pairs, expiry, replication, &sent)
                        }));
                        assert_eq!(
                            replica(&before, &sent.commands.borrow()),
                            state(&store),
                            "{profile:?} {expiry:?} {replication:?} fault {fault:?} {site:?} \
                             refused {refuse:?} counter refused {refuse_counter}: {:?}",
                            sent.commands.borrow()
                        );
                        checked += 1;
                    }
                }
            }
        }
    }
    assert!(checked > 500, "{checked}");
}

/// An integer batch larger than one call can pass goes in parts; a part that fails leaves every
/// key of the parts before it with its deadline and sent, so a replica equals the primary.
#[test]
fn a_failing_part_of_an_integer_batch_leaves_the_parts_before_it_whole_and_sent() {
    let names: Vec<String> = (0..100).map(|i| format!("k{i}")).collect();
    let values: Vec<String> = (0..100).map(|i| i.to_string()).collect();
    let pairs: Vec<&[u8]> = names
        .iter()
        .zip(&values)
        .flat_map(|(k, v)| [k.as_bytes(), v.as_bytes()])
        .collect();
    let replication = Replication {
        mode: Replicate::Set,
        sent: Sent::PerCall {
            command: CString::from(c"m.apply"),
            form: CallForm::Apply,
        },
        counter: CString::from(c"m.changes"),
        counts_at_end: false,
    };
    for profile in [redis(7, 0), valkey(9, 1)] {
        let whole = Store::default();
        let received = Received::default();
        let written = run(
            &whole,
            &profile,
            &pairs,
            Expiry::In(5000),
            &replication,
            &received,
        );
        assert_eq!(written, Ok(100), "{profile:?}");
        assert_eq!(
            whole.lines("call").len(),
            3,
            "64 + 32 + 4 pairs: {profile:?}"
        );
        // The second part fails: the first part's 64 keys stay, with their deadline, and sent.
        let store = Store::default();
        store.fault.set(Some((1, Fault::Fails)));
        let sent = Received::default();
        let outcome = run(
            &store,
            &profile,
            &pairs,
            Expiry::In(5000),
            &replication,
            &sent,
        );
        assert!(outcome.is_err(), "{profile:?}");
        let primary = state(&store);
        assert_eq!(primary.len(), 64, "{profile:?}");
        assert!(
            primary
                .values()
                .all(|(_, deadline)| *deadline == Some(NOW + 5000)),
            "{profile:?}: {primary:?}"
        );
        assert_eq!(replica(&State::new(), &sent.commands.borrow()), primary);
    }
}

/// One call as `command::write` makes it: the write path reporting to a [`Wire`].
fn run<'s>(
    store: &'s Store,
    profile: &Profile,
    pairs: &[&'s [u8]],
    expiry: Expiry,
    replication: &Replication,
    sent: &Received,
) -> Result<usize, Abort> {
    let mut wire = Wire::new(Recording(sent), replication, pairs, false);
    let batching = Batching::choose(profile, expiry, NOW);
    let written = write_all(&store, profile, pairs, expiry, batching, false, &mut wire)?;
    wire.finish()?;
    Ok(written)
}
