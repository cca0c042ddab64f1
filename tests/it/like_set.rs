//! Each key as `SET key value <expiry>` leaves it, on this server: two
//! servers start from the same data, one gets one MSETEX, the other one SET
//! per pair, and everything a client can observe is compared key by key:
//! keyspace events (every class the server has, `new`, `overwritten` and
//! `type_changed` included), keyspace hits, values, encodings, memory, TTLs,
//! LFU counters, what reaches the AOF, and what a deadline in the past does.

use msetex_harness::*;
use std::time::Duration;

/// Every keyspace event class this server knows, on top of `KEA`.
fn notify_everything(con: &mut Connection) {
    for classes in ["KEAnoc", "KEAn", "KEA"] {
        if exec(con, &["CONFIG", "SET", "notify-keyspace-events", classes]).is_ok() {
            return;
        }
    }
    panic!("no keyspace notifications");
}

/// What one side of the comparison observed.
#[derive(Debug)]
struct Observed {
    events: Vec<(String, String)>,
    hits: i64,
    misses: i64,
    reply: Value,
}

fn stat(con: &mut Connection, name: &str) -> i64 {
    info_field(con, "stats", name)
        .and_then(|v| v.parse().ok())
        .unwrap_or(-1)
}

/// Runs `seed`, then `write`, on `server`, collecting the events `write`
/// fires (a marker key ends the stream) and the keyspace statistics.
fn observe(
    server: &Server,
    seed: &dyn Fn(&mut Connection),
    write: &dyn Fn(&mut Connection) -> Value,
) -> Observed {
    let mut con = server.client();
    notify_everything(&mut con);
    seed(&mut con);
    let mut listener = server.client();
    let mut pubsub = listener.as_pubsub();
    pubsub.psubscribe("__keyevent@0__:*").expect("psubscribe");
    pubsub
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let (hits, misses) = (
        stat(&mut con, "keyspace_hits"),
        stat(&mut con, "keyspace_misses"),
    );
    let reply = write(&mut con);
    let hits = stat(&mut con, "keyspace_hits") - hits;
    let misses = stat(&mut con, "keyspace_misses") - misses;
    q::<i64, _>(&mut con, &["PUBLISH", "__keyevent@0__:end", "marker"]);
    let events = keyevents_until(&mut pubsub, |event, key| event == "end" && key == "marker");
    Observed {
        events,
        hits,
        misses,
        reply,
    }
}

/// One key as a client sees it: value, type, encoding, memory, deadline.
fn key_state(
    con: &mut Connection,
    key: &str,
) -> (Option<Vec<u8>>, String, Option<String>, i64, Deadline) {
    let kind: String = q(con, &["TYPE", key]);
    let value: Option<Vec<u8>> = if kind == "string" {
        q(con, &["GET", key])
    } else {
        None
    };
    let encoding: Option<String> = q(con, &["OBJECT", "ENCODING", key]);
    let memory: Option<i64> = q(con, &["MEMORY", "USAGE", key, "SAMPLES", "0"]);
    (
        value,
        kind,
        encoding,
        memory.unwrap_or(0),
        deadline_of(con, key),
    )
}

/// The commands of an AOF, MULTI/EXEC/SELECT aside, with every PXAT
/// deadline replaced by `<deadline>` (the two servers' clocks differ).
fn aof_commands(dir: &std::path::Path) -> Vec<String> {
    let text = aof_text(dir);
    let mut commands = Vec::new();
    let mut lines = text.split("\r\n").peekable();
    while let Some(line) = lines.next() {
        let Some(count) = line.strip_prefix('*').and_then(|n| n.parse::<usize>().ok()) else {
            continue;
        };
        let mut args = Vec::new();
        for _ in 0..count {
            lines.next(); // $len
            args.push(lines.next().unwrap_or_default().to_owned());
        }
        let name = args
            .first()
            .map(|a| a.to_ascii_uppercase())
            .unwrap_or_default();
        if ["MULTI", "EXEC", "SELECT"].contains(&name.as_str()) {
            continue;
        }
        if let Some(at) = args.iter().position(|a| a.eq_ignore_ascii_case("PXAT")) {
            if let Some(deadline) = args.get_mut(at + 1) {
                *deadline = "<deadline>".to_owned();
            }
        }
        // The built-in's `MSETEX n k v ... <expiry>` (where the server runs
        // it natively) leaves each key as `SET k v <expiry>` would: compared
        // as those.
        if name == "MSETEX" {
            let pairs = args
                .get(1)
                .and_then(|n| n.parse::<usize>().ok())
                .unwrap_or(0);
            let expiry = args.get(2 + 2 * pairs..).unwrap_or_default().join(" ");
            for pair in args.get(2..2 + 2 * pairs).unwrap_or_default().chunks(2) {
                let set = format!("SET {} {expiry}", pair.join(" "));
                commands.push(set.trim_end().to_owned());
            }
            continue;
        }
        commands.push(args.join(" "));
    }
    commands
}

/// `MSETEX <options> <time> pairs...` (the TTL form, by its name here).
fn ttl_call(options: &[&str], time: &str, pairs: &[(&str, &str)]) -> Vec<String> {
    let mut call = vec![target().command_name().to_owned()];
    call.extend(options.iter().map(|o| (*o).to_owned()));
    call.push(time.to_owned());
    for (k, v) in pairs {
        call.extend([(*k).to_owned(), (*v).to_owned()]);
    }
    call
}

/// `MSETEX <numkeys> pairs... <options>` (the NUMKEYS form, by its name here).
fn numkeys_call(pairs: &[(&str, &str)], options: &[&str]) -> Vec<String> {
    let mut call = vec![target().numkeys_name().to_owned(), pairs.len().to_string()];
    for (k, v) in pairs {
        call.extend([(*k).to_owned(), (*v).to_owned()]);
    }
    call.extend(options.iter().map(|o| (*o).to_owned()));
    call
}

/// Runs the same seed on two servers, the MSETEX `call` on one and `SET key
/// value <set_options>` per pair on the other, and compares everything per
/// key. Returns both servers.
fn compare(
    config: ServerConfig,
    seed: &dyn Fn(&mut Connection),
    call: &[String],
    set_options: &[&str],
    pairs: &[(&str, &str)],
) -> (Server, Server) {
    let ours = config.clone().start();
    let theirs = config.start();
    let a = observe(&ours, seed, &|con| {
        raw_command(call).query::<Value>(con).expect("MSETEX")
    });
    let b = observe(&theirs, seed, &|con| {
        for (k, v) in pairs {
            let mut set = vec!["SET", k, v];
            set.extend_from_slice(set_options);
            let _: Value = q(con, &set);
        }
        Value::Okay
    });
    assert!(
        matches!(a.reply, Value::Okay | Value::Int(1)),
        "{:?}",
        a.reply
    );
    assert_eq!(
        (a.hits, a.misses),
        (b.hits, b.misses),
        "keyspace hits/misses"
    );
    let mut con_a = ours.client();
    let mut con_b = theirs.client();
    assert_eq!(
        q::<i64, _>(&mut con_a, &["DBSIZE"]),
        q::<i64, _>(&mut con_b, &["DBSIZE"]),
        "DBSIZE"
    );
    let mut keys: Vec<&str> = pairs.iter().map(|(k, _)| *k).collect();
    keys.dedup();
    for key in keys {
        let of_key = |events: &[(String, String)]| -> Vec<String> {
            events
                .iter()
                .filter(|(_, k)| k == key)
                .map(|(e, _)| e.clone())
                .collect()
        };
        assert_eq!(of_key(&a.events), of_key(&b.events), "{key}: events");
        let (value_a, kind_a, encoding_a, memory_a, deadline_a) = key_state(&mut con_a, key);
        let (value_b, kind_b, encoding_b, memory_b, deadline_b) = key_state(&mut con_b, key);
        assert_eq!((value_a, kind_a), (value_b, kind_b), "{key}: value");
        // SET embeds a short string; a string refreshed in place is a plain
        // one of the same size or smaller (the only encoding difference).
        let same_encoding = encoding_a == encoding_b
            || (encoding_a.as_deref() == Some("raw") && encoding_b.as_deref() == Some("embstr"));
        assert!(
            same_encoding,
            "{key}: {encoding_a:?} vs SET's {encoding_b:?}"
        );
        assert!(
            memory_a as f64 <= memory_b as f64 * 1.05,
            "{key}: MEMORY USAGE {memory_a} vs SET's {memory_b}"
        );
        // Both relative to their own clock: within a second of each other.
        let close = match (deadline_a.0, deadline_b.0) {
            (a, b) if a < 0 || b < 0 => a == b,
            (a, b) if set_options.iter().any(|o| o.starts_with('P')) => a == b,
            (a, b) => (a - b).abs() < 1000,
        };
        assert!(
            close,
            "{key}: deadline {deadline_a:?} vs SET's {deadline_b:?}"
        );
    }
    (ours, theirs)
}

/// Data that sends keys down every write path.
fn seed(con: &mut Connection) {
    let long = "l".repeat(300);
    q::<(), _>(con, &["SET", "p:same", "aaaa", "EX", "100"]);
    q::<(), _>(con, &["SET", "p:short", "xx"]);
    q::<i64, _>(con, &["RPUSH", "p:list", "x"]);
    q::<(), _>(con, &["SET", "p:int", "12"]);
    q::<(), _>(con, &["SET", "p:str", "hello"]);
    q::<(), _>(con, &["SET", "p:long", &long, "EX", "100"]);
    // A string grown by APPEND holds spare room an in-place write would keep.
    q::<(), _>(con, &["SET", "p:appended", &"a".repeat(150)]);
    q::<i64, _>(con, &["APPEND", "p:appended", &"a".repeat(150)]);
}

fn pairs_for_every_path() -> Vec<(&'static str, String)> {
    vec![
        ("p:same", "bbbb".to_owned()),
        ("p:short", "yyyyy".to_owned()),
        ("p:list", "s".to_owned()),
        ("p:int", "abc".to_owned()),
        ("p:str", "77".to_owned()),
        ("p:long", "m".repeat(300)),
        ("p:appended", "c".repeat(300)),
        ("p:new", "v".to_owned()),
        ("p:newint", "5".to_owned()),
        ("p:new", "again".to_owned()),
    ]
}

#[test]
fn every_write_path_leaves_each_key_as_set_ex_does() {
    let owned = pairs_for_every_path();
    let pairs: Vec<(&str, &str)> = owned.iter().map(|(k, v)| (*k, v.as_str())).collect();
    compare(
        ServerConfig::default(),
        &seed,
        &ttl_call(&[], "100", &pairs),
        &["EX", "100"],
        &pairs,
    );
}

#[test]
fn the_numkeys_form_leaves_each_key_as_set_does() {
    let owned = pairs_for_every_path();
    let pairs: Vec<(&str, &str)> = owned.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let at = (now_ms() + 3_600_000).to_string();
    let cases: [(&[&str], &[&str]); 4] = [
        (&["EX", "100"], &["EX", "100"]),
        (&["PXAT", &at], &["PXAT", &at]),
        (&["KEEPTTL"], &["KEEPTTL"]),
        (&[], &[]),
    ];
    for (options, set_options) in cases {
        compare(
            ServerConfig::numkeys(),
            &seed,
            &numkeys_call(&pairs, options),
            set_options,
            &pairs,
        );
    }
}

#[test]
fn with_lfu_eviction_the_access_counter_ends_as_set_leaves_it() {
    // lfu-log-factor 0: every access counts; lfu-decay-time 0: the counter
    // never decays (it would by one at a minute boundary that one server's
    // accesses cross and the other's do not), so two servers agree exactly.
    let config = ServerConfig::default()
        .line("maxmemory-policy allkeys-lfu")
        .line("lfu-log-factor 0")
        .line("lfu-decay-time 0");
    let read_ten_times = |con: &mut Connection| {
        seed(con);
        for key in [
            "p:same",
            "p:short",
            "p:list",
            "p:int",
            "p:str",
            "p:long",
            "p:appended",
        ] {
            for _ in 0..10 {
                let _: Value = q(con, &["TYPE", key]);
                let _: Value = q(con, &["OBJECT", "FREQ", key]);
                let _ = exec(con, &["GET", key]);
            }
        }
    };
    let owned = pairs_for_every_path();
    let pairs: Vec<(&str, &str)> = owned.iter().map(|(k, v)| (*k, v.as_str())).collect();
    for (options, set_options) in [
        (&[][..], &["EX", "100"][..]),
        (&["XX"], &["XX", "EX", "100"]),
    ] {
        let pairs: Vec<(&str, &str)> = if options.is_empty() {
            pairs.clone()
        } else {
            pairs
                .iter()
                .filter(|(k, _)| !k.starts_with("p:new"))
                .copied()
                .collect()
        };
        let (ours, theirs) = compare(
            config.clone(),
            &read_ten_times,
            &ttl_call(options, "100", &pairs),
            set_options,
            &pairs,
        );
        let (mut a, mut b) = (ours.client(), theirs.client());
        for (key, _) in &pairs {
            let freq = |con: &mut Connection| -> i64 { q(con, &["OBJECT", "FREQ", key]) };
            assert_eq!(freq(&mut a), freq(&mut b), "{options:?} {key}: OBJECT FREQ");
        }
    }
}

#[test]
fn a_deadline_in_the_past_does_what_set_does_on_this_server() {
    // Redis stores the key, then it is logically expired; Valkey 8+ deletes
    // an existing key at once (`del` on 8.0, `expired` from 8.1, replicated
    // as DEL or UNLINK) and does nothing for a missing one. `always`: every
    // write reaches the AOF file before its reply (with `everysec` a write can
    // wait up to 2 s behind a background fsync, and the file lack it).
    let config = ServerConfig::default()
        .line("appendonly yes")
        .line("appendfsync always");
    let seed = |con: &mut Connection| {
        // Keys stored with a past deadline are logically expired at once:
        // the active expiry cycle would delete them on one server and not
        // yet on the other.
        q::<(), _>(con, &["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
        q::<(), _>(con, &["SET", "x:old", "value", "EX", "1000"]);
        q::<i64, _>(con, &["RPUSH", "x:list", "v"]);
    };
    let past = (now_ms() - 60_000).to_string();
    let pairs = [
        ("x:old", "new"),
        ("x:list", "s"),
        ("x:new", "n"),
        ("x:num", "1"),
    ];
    let (ours, theirs) = compare(
        config,
        &seed,
        &ttl_call(&["PXAT"], &past, &pairs),
        &["PXAT", &past],
        &pairs,
    );
    // The same commands reach the AOF, in the same order for each key.
    let (a, b) = (aof_commands(ours.dir()), aof_commands(theirs.dir()));
    for (key, _) in pairs {
        let of_key = |commands: &[String]| -> Vec<String> {
            commands
                .iter()
                .filter(|c| c.split(' ').nth(1) == Some(key))
                .cloned()
                .collect()
        };
        assert_eq!(of_key(&a), of_key(&b), "{key}: AOF");
    }
    let sorted = |mut commands: Vec<String>| {
        commands.sort();
        commands
    };
    assert_eq!(sorted(a), sorted(b), "AOF");
}

#[test]
fn relative_ttls_follow_the_commands_clock_in_a_long_script() {
    // Redis 7.2+ computes SET's relative TTL from the time the command (the
    // script) started; a script that runs 1.5 s must not move MSETEX's
    // deadline 1.5 s later than SET's. Older servers read the live clock for
    // both, one command apart: the same millisecond or the next.
    let server = Server::start();
    let mut con = server.client();
    let script = format!(
        "local t = redis.call('TIME')\n\
         repeat local n = redis.call('TIME')\n\
         until (n[1] - t[1]) * 1000000 + (n[2] - t[2]) > 1500000\n\
         redis.call('{}', '100', KEYS[1], 'x')\n\
         redis.call('SET', KEYS[2], 'x', 'EX', '100')\n\
         return 1",
        target().command_name()
    );
    let _: Value = q(&mut con, &["EVAL", &script, "2", "{s}ours", "{s}theirs"]);
    let ours = deadline_of(&mut con, "{s}ours");
    let theirs = deadline_of(&mut con, "{s}theirs");
    if target().at_least(Some((7, 2)), Some((7, 2))) {
        assert_eq!(ours, theirs);
    } else {
        assert!(
            (0..=1).contains(&(theirs.0 - ours.0)),
            "{ours:?} {theirs:?}"
        );
    }
}

#[test]
fn an_in_place_write_refreshes_the_lru_clock_while_a_fork_runs() {
    // While a child process runs, lookups do not touch keys (copy-on-write);
    // SET still stores a fresh object, so the key is not idle afterwards.
    let server = ServerConfig::default()
        .line("rdb-key-save-delay 1000000")
        .start();
    let mut con = server.client();
    q::<(), _>(&mut con, &["SET", "lru:ours", "0123456789", "EX", "100"]);
    q::<(), _>(&mut con, &["SET", "lru:theirs", "0123456789", "EX", "100"]);
    // Once written in place, the value is a plain string the next in-place
    // write keeps (the first one replaced SET's embedded string).
    q::<(), _>(&mut con, &["MSETEX", "100", "lru:ours", "abcdefghij"]);
    std::thread::sleep(Duration::from_millis(2100));
    q::<String, _>(&mut con, &["BGSAVE"]);
    let forked = eventually(Duration::from_secs(5), || {
        info_field(&mut con, "persistence", "rdb_bgsave_in_progress").as_deref() == Some("1")
    });
    assert!(forked, "BGSAVE did not start");
    q::<(), _>(&mut con, &["MSETEX", "100", "lru:ours", "9876543210"]);
    q::<(), _>(&mut con, &["SET", "lru:theirs", "9876543210", "EX", "100"]);
    let idle = |con: &mut Connection, key: &str| -> i64 { q(con, &["OBJECT", "IDLETIME", key]) };
    assert_eq!(idle(&mut con, "lru:ours"), idle(&mut con, "lru:theirs"));
    let _ = exec(&mut con, &["CONFIG", "SET", "rdb-key-save-delay", "0"]);
}

#[test]
fn a_deadline_passing_during_a_script_is_decided_by_the_commands_clock() {
    // SET decides whether a PXAT deadline is already past from the
    // command's clock, inside a script its start (Redis 7.2+, Valkey): a
    // deadline that passes while the script runs is still ahead of it, so
    // SET stores the key, which then expires, rather than deleting it at
    // once (Valkey 8+ for a deadline already past). MSETEX does the same.
    let server = ServerConfig::default()
        .line("notify-keyspace-events KEA")
        .start();
    let mut con = server.client();
    let mut listener = server.client();
    let mut pubsub = listener.as_pubsub();
    pubsub.psubscribe("__keyevent@0__:*").expect("psubscribe");
    pubsub
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let deadline = (now_ms() + 200).to_string();
    let script = format!(
        "local deadline = tonumber(ARGV[1])\n\
         repeat local t = redis.call('TIME')\n\
         until tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) > deadline + 50\n\
         redis.call('SET', KEYS[1], 'x', 'PXAT', ARGV[1])\n\
         redis.call('{}', 'PXAT', ARGV[1], KEYS[2], 'x')\n\
         return 1",
        target().command_name()
    );
    let _: Value = q(
        &mut con,
        &["EVAL", &script, "2", "{d}theirs", "{d}ours", &deadline],
    );
    q::<i64, _>(&mut con, &["PUBLISH", "__keyevent@0__:end", "marker"]);
    let events = keyevents_until(&mut pubsub, |event, key| event == "end" && key == "marker");
    let of_key = |key: &str| -> Vec<String> {
        events
            .iter()
            .filter(|(_, k)| k == key)
            .map(|(e, _)| e.clone())
            .collect()
    };
    assert_eq!(of_key("{d}ours"), of_key("{d}theirs"), "{events:?}");
    assert_eq!(
        q::<i64, _>(&mut con, &["EXISTS", "{d}ours", "{d}theirs"]),
        0
    );
}
