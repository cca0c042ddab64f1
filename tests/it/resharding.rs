//! Resharding: a slot moves to another node while clients write to it.
//!
//! - Atomic slot migration (Redis 8.4+ `CLUSTER MIGRATION IMPORT`, Valkey
//!   9+ `CLUSTER MIGRATESLOTS`): the source streams the writes made during
//!   the migration to the target through the same propagation as replicas.
//!   Every acknowledged MSETEX must be on the target with its value and its
//!   deadline, in both REPLICATE modes and both syntaxes, with or without
//!   io-threads, and the source must stay up; SET is the oracle.
//! - The built-in MSETEX of Redis 8.6.3 and Valkey 9.1.2 is wrong in a
//!   cluster (docs/OPERATIONS.md, *Cluster*): these tests show it, so that the docs
//!   stays true.
//! - Legacy migration (`CLUSTER SETSLOT ... MIGRATING / IMPORTING` and
//!   MIGRATE) on every server.

use msetex_harness::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The hash tag of the slot that moves: slot 15627, owned by the second node.
const TAG: &str = "{m}";
/// Keys in that slot before the migration; with `rdb-key-save-delay` below,
/// the snapshot of the slot takes about 2 s, during which the writer writes.
const PRELOADED: usize = 20_000;
const SAVE_DELAY_US: &str = "100";
/// How far the server's command clock may read from the test's.
const CLOCK_SLACK_MS: i64 = 5;

/// What the writer sends during the migration, two keys per call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Writes {
    /// The TTL form: `name 3600 k v k v`, and with `options` in turn `name
    /// PXAT d k v k v` (packed by the module where keys come from key specs).
    Ttl { options: bool },
    /// The NUMKEYS form: `name 2 k v k v PXAT d`, or without `options`
    /// `name 2 k v k v` (no TTL).
    Numkeys { options: bool },
    /// The oracle: `SET k v PXAT d`, one key per call.
    Set,
}

/// One acknowledged call: its pairs and the deadline they must have, as an
/// inclusive range (exact for absolute deadlines).
struct Acked {
    pairs: Vec<(String, String)>,
    deadline: (i64, i64),
    sent_ms: i64,
    acked_ms: i64,
}

/// What the writer saw: acknowledged calls, and the errors other than the
/// final MOVED.
struct Written {
    acked: Vec<Acked>,
    errors: Vec<String>,
}

/// Writes calls in `TAG`'s slot to `source` until it answers MOVED (the
/// slot has moved) or `stop` is set.
fn writer(
    source: &Server,
    writes: Writes,
    name: String,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<Written> {
    let url = source.url();
    std::thread::spawn(move || {
        let mut con = redis::Client::open(url)
            .and_then(|c| c.get_connection())
            .expect("writer connection");
        let mut written = Written {
            acked: Vec::new(),
            errors: Vec::new(),
        };
        for i in 0..1_000_000u64 {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let pairs: Vec<(String, String)> = match writes {
                Writes::Set => vec![(format!("{TAG}w:{i}"), format!("v{i}"))],
                _ => vec![
                    (format!("{TAG}w:{i}:a"), format!("{i}")),
                    (format!("{TAG}w:{i}:b"), format!("value-{i}")),
                ],
            };
            let sent_ms = now_ms();
            let at = sent_ms + 3_600_000;
            let at_text = at.to_string();
            let mut args: Vec<&str> = Vec::new();
            let relative = match writes {
                Writes::Ttl { options } => !options || i % 2 == 0,
                _ => false,
            };
            let persist = writes == Writes::Numkeys { options: false };
            match writes {
                Writes::Ttl { .. } if relative => args.extend([name.as_str(), "3600"]),
                Writes::Ttl { .. } => args.extend([name.as_str(), "PXAT", &at_text]),
                Writes::Numkeys { .. } => args.extend([name.as_str(), "2"]),
                Writes::Set => args.push("SET"),
            }
            for (key, value) in &pairs {
                args.extend([key.as_str(), value.as_str()]);
            }
            if !matches!(writes, Writes::Ttl { .. }) && !persist {
                args.extend(["PXAT", &at_text]);
            }
            let reply: redis::RedisResult<Value> = raw_command(&args).query(&mut con);
            let acked_ms = now_ms();
            match reply {
                Ok(_) => written.acked.push(Acked {
                    pairs,
                    // A relative TTL runs from the server's clock for the
                    // command, which may read a millisecond or two apart
                    // from this process's (Valkey's cached clock).
                    deadline: if persist {
                        (-1, -1)
                    } else if relative {
                        (
                            sent_ms + 3_600_000 - CLOCK_SLACK_MS,
                            acked_ms + 3_600_000 + CLOCK_SLACK_MS,
                        )
                    } else {
                        (at, at)
                    },
                    sent_ms,
                    acked_ms,
                }),
                Err(e) if error_text(&e).starts_with("MOVED") => break,
                Err(e) => {
                    written.errors.push(error_text(&e));
                    if written.errors.len() > 20 {
                        break;
                    }
                }
            }
        }
        written
    })
}

/// Moves `TAG`'s slot from the second node to the first while a writer
/// writes `writes`; asserts that every acknowledged write is on the target
/// with its value and deadline and that the source stayed up. Returns the
/// calls acknowledged while the migration ran.
fn migrate_while_writing(config: ServerConfig, writes: Writes, name: &str) -> usize {
    let [target_node, source] = two_node_cluster(config);
    let mut src = source.client();
    let slot: i64 = q(&mut src, &["CLUSTER", "KEYSLOT", TAG]);
    assert!(slot >= 8192, "{TAG} must hash to the second node's half");
    // Nothing consumes what the module replicates until the export starts: the module replicates
    // nothing then, and the server's slot migration event must end that in time.
    let none = eventually(Duration::from_secs(10), || {
        info_field(&mut src, "msetex", "msetex_replication_listeners").as_deref() == Some("none")
    });
    assert!(none, "the source never proved that nobody listens");
    q::<(), _>(
        &mut src,
        &[
            "DEBUG",
            "POPULATE",
            &PRELOADED.to_string(),
            &format!("{TAG}pre"),
            "32",
        ],
    );
    q::<(), _>(
        &mut src,
        &["CONFIG", "SET", "rdb-key-save-delay", SAVE_DELAY_US],
    );

    let stop = Arc::new(AtomicBool::new(false));
    let handle = writer(&source, writes, name.to_owned(), stop.clone());
    std::thread::sleep(Duration::from_millis(100));
    let started = now_ms();
    let migration = AtomicMigration::start(&source, &target_node, slot);
    let outcome = migration.wait(Duration::from_secs(90));
    let ended = now_ms();
    // The writer stops at the first MOVED; a migration that failed leaves
    // the slot where it was, so stop it then.
    if outcome.is_err() || !eventually(Duration::from_secs(20), || handle.is_finished()) {
        stop.store(true, Ordering::Relaxed);
    }
    let written = handle.join().expect("writer thread");
    let up = answers_ping(source.port(), Duration::from_secs(5));
    assert!(up, "the source went down:\n{}", source.log());
    if let Err(why) = outcome {
        panic!(
            "{writes:?}: {why}\nsource log:\n{}\ntarget log:\n{}",
            source.log(),
            target_node.log()
        );
    }
    assert!(
        written.errors.is_empty(),
        "{writes:?}: the writer got {:?}",
        written.errors
    );

    // Every acknowledged key on the target, with its value and deadline.
    let mut dst = target_node.client();
    let mut lost = Vec::new();
    let expected: Vec<(&String, &String, (i64, i64))> = written
        .acked
        .iter()
        .flat_map(|call| call.pairs.iter().map(|(k, v)| (k, v, call.deadline)))
        .collect();
    for chunk in expected.chunks(1000) {
        let mut pipe = redis::pipe();
        for (key, _, _) in chunk {
            pipe.cmd("GET")
                .arg(key.as_str())
                .cmd("PEXPIRETIME")
                .arg(key.as_str());
        }
        let replies: Vec<(Option<String>, i64)> = pipe.query(&mut dst).expect("read the target");
        for ((key, value, deadline), (got, at)) in chunk.iter().zip(replies) {
            if got.as_deref() != Some(value.as_str()) || !(deadline.0..=deadline.1).contains(&at) {
                lost.push(format!(
                    "{key}: {got:?} until {at}, expected {value} until {deadline:?}"
                ));
            }
        }
    }
    let moved: i64 = q(&mut dst, &["CLUSTER", "COUNTKEYSINSLOT", &slot.to_string()]);
    assert!(
        lost.is_empty(),
        "{writes:?}: {} of {} acknowledged keys missing or different on the target, first: {:?}",
        lost.len(),
        written.acked.iter().map(|c| c.pairs.len()).sum::<usize>(),
        &lost[..lost.len().min(5)]
    );
    assert!(moved as usize >= PRELOADED, "only {moved} keys moved");
    let during = written
        .acked
        .iter()
        .filter(|c| c.sent_ms >= started && c.acked_ms <= ended)
        .count();
    assert!(
        during > 0,
        "{writes:?}: no call was acknowledged while the slot moved"
    );
    eprintln!(
        "{writes:?}: migration {} ms, {during} calls during it, {} acknowledged in all",
        ended - started,
        written.acked.len()
    );
    during
}

/// The module's configurations whose writes must survive a migration on
/// this server: both modes, both syntaxes where the cluster serves them,
/// without and with io-threads.
fn module_configs(mode: Replicate) -> Vec<(String, ServerConfig, Writes, String)> {
    let mut list = Vec::new();
    for io_threads in [1, 4] {
        let threads = format!("io-threads {io_threads}");
        // With options where the server can route them (see the test below).
        list.push((
            format!("TTL form, REPLICATE {}, {threads}", mode.arg()),
            ServerConfig::default().replicate(mode).line(&threads),
            Writes::Ttl { options: true },
            target().command_name().to_owned(),
        ));
        // The NUMKEYS form: its keynum spec, the getkeys callback, or the command filter moving
        // everything but the keys in front of them (Valkey, which routes a module command by its
        // legacy key range).
        list.push((
            format!("NUMKEYS form, REPLICATE {}, {threads}", mode.arg()),
            ServerConfig::numkeys().replicate(mode).line(&threads),
            Writes::Numkeys { options: true },
            target().numkeys_name().to_owned(),
        ));
        // docs/OPERATIONS.md, *Servers with their own MSETEX*: the built-in renamed away, the
        // module beside it under its own name.
        if target().has_builtin_msetex() {
            list.push((
                format!(
                    "NUMKEYS form, the built-in renamed away, REPLICATE {}, {threads}",
                    mode.arg()
                ),
                builtin_renamed_away().replicate(mode).line(&threads),
                Writes::Numkeys { options: true },
                target().numkeys_name().to_owned(),
            ));
        }
    }
    list
}

/// Redis 8.4+ / Valkey 9.1+ clusters where the operator keeps clients off the
/// built-in: it renamed away, the module under its own name
/// ([`Target::numkeys_name`]).
fn builtin_renamed_away() -> ServerConfig {
    ServerConfig::numkeys().line("rename-command MSETEX \"\"")
}

fn nothing_lost_during_atomic_slot_migration(mode: Replicate) {
    if skip_unless(
        has_atomic_slot_migration(),
        "atomic slot migration appeared in Redis 8.4 and Valkey 9.0",
    ) {
        return;
    }
    let mut figures = Vec::new();
    for (label, config, writes, name) in module_configs(mode) {
        let during = migrate_while_writing(config, writes, &name);
        figures.push(format!("{label}: {during} calls during the migration"));
    }
    record_result(
        &format!("atomic slot migration, REPLICATE {}", mode.arg()),
        &format!(
            "0 acknowledged keys lost, source up; {}",
            figures.join("; ")
        ),
    );
}

#[test]
fn atomic_slot_migration_loses_nothing_in_set_mode() {
    nothing_lost_during_atomic_slot_migration(Replicate::Set);
}

#[test]
fn atomic_slot_migration_loses_nothing_in_msetex_mode() {
    nothing_lost_during_atomic_slot_migration(Replicate::Msetex);
}

#[test]
fn atomic_slot_migration_loses_no_set_either() {
    // The oracle: the server's own SET through the same migration.
    if skip_unless(
        has_atomic_slot_migration(),
        "atomic slot migration appeared in Redis 8.4 and Valkey 9.0",
    ) {
        return;
    }
    migrate_while_writing(ServerConfig::default(), Writes::Set, "SET");
}

#[test]
fn ttl_options_are_routed_by_their_real_keys() {
    // The key `{m}a` is in slot 15627 (second node); a key specification
    // read as it stands would take the deadline 1900000000002 (slot 8119,
    // first node) for a key: a redirection there would follow a misread
    // key. Where keys come from key specifications only, the module's
    // command filter marks the keys before the server reads them (Redis
    // 8.2+ with io-threads reads none from the call as sent, then routes by
    // the marked ones), or moves the rest in front of them (Valkey).
    for io_threads in [1, 4] {
        let threads = format!("io-threads {io_threads}");
        let [first, second] = two_node_cluster(ServerConfig::default().line(&threads));
        let call = ["MSETEX", "PXAT", "1900000000002", "{m}a", "1900000000002"];
        let (mut on_first, mut on_second) = (first.client(), second.client());
        let moved = err(&mut on_first, &call);
        assert_eq!(
            moved,
            format!("MOVED 15627 127.0.0.1:{}", second.port()),
            "{threads}"
        );
        assert_eq!(
            exec(&mut on_second, &call).unwrap(),
            Value::Okay,
            "{threads}"
        );
        assert_eq!(deadline_of(&mut on_second, "{m}a").0, 1_900_000_000_002);
        let crossslot = err(
            &mut on_second,
            &["MSETEX", "NX", "PX", "5000", "{m}b", "1", "{x}c", "2"],
        );
        assert_eq!(
            crossslot,
            "CROSSSLOT Keys in request don't hash to the same slot"
        );
        for node in [&first, &second] {
            assert_eq!(
                q::<i64, _>(&mut node.client(), &["CLUSTER", "COUNTKEYSINSLOT", "8119"]),
                0
            );
        }
    }
}

/// A module that steps aside for the built-in (`SYNTAX NUMKEYS` under its
/// name) serves nothing, and blocks nothing: Valkey 9 refuses to migrate
/// slots while a loaded module has not declared it handles that.
#[test]
fn a_module_that_steps_aside_does_not_block_atomic_slot_migration() {
    if skip_unless(
        has_atomic_slot_migration() && target().has_builtin_msetex(),
        "the module steps aside for a built-in MSETEX (Redis 8.4+, Valkey 9.1+)",
    ) {
        return;
    }
    let config = ServerConfig::default().module_args(&["SYNTAX", "NUMKEYS"]);
    let [target_node, source] = two_node_cluster(config);
    assert!(
        source.log().contains("registers nothing"),
        "{}",
        source.log()
    );
    let mut src = source.client();
    q::<(), _>(&mut src, &["SET", "{m}k", "v"]);
    let slot: i64 = q(&mut src, &["CLUSTER", "KEYSLOT", "{m}"]);
    AtomicMigration::start(&source, &target_node, slot)
        .wait(Duration::from_secs(60))
        .expect("the migration");
    assert_eq!(
        q::<Option<String>, _>(&mut target_node.client(), &["GET", "{m}k"]).as_deref(),
        Some("v")
    );
}

/// Beside a built-in renamed away, the module's command is routed like MSET, under its own name;
/// `MSETEX` is unknown.
#[test]
fn beside_a_builtin_renamed_away_the_module_is_routed_by_its_keys() {
    if skip_unless(
        target().has_builtin_msetex(),
        "a built-in MSETEX (Redis 8.4+, Valkey 9.1+)",
    ) {
        return;
    }
    let [first, second] = two_node_cluster(builtin_renamed_away());
    let mut con = first.client();
    let name = target().numkeys_name();
    // {m} is slot 15627 (second node), {b} slot 3300 (first node).
    let call = |args: &[&str]| raw_command(args).query::<Value>(&mut first.client());
    assert_eq!(
        error_text(&call(&[name, "1", "{m}x", "1", "EX", "60"]).unwrap_err()),
        format!("MOVED 15627 127.0.0.1:{}", second.port())
    );
    assert_eq!(
        error_text(&call(&[name, "2", "{b}y", "1", "{m}z", "2", "EX", "60"]).unwrap_err()),
        "CROSSSLOT Keys in request don't hash to the same slot"
    );
    assert!(
        error_text(&call(&["MSETEX", "1", "{b}y", "1", "EX", "60"]).unwrap_err())
            .contains("unknown command")
    );
    assert_eq!(
        call(&[name, "2", "{b}y", "1", "{b}z", "2", "EX", "60"]).unwrap(),
        Value::Int(1)
    );
    assert_eq!(
        q::<i64, _>(&mut con, &["CLUSTER", "COUNTKEYSINSLOT", "15627"]),
        0
    );
    assert_eq!(
        info_field(&mut con, "msetex", "msetex_calls").as_deref(),
        Some("1")
    );
}

/// docs/OPERATIONS.md, *Cluster*: Redis 8.4+'s built-in MSETEX is not sent to the
/// node a slot migrates to (it declares no key the migration's slot filter
/// can read), so a write acknowledged while the slot moves is lost; SET and
/// the module's MSETEX in the same migration arrive.
#[test]
fn redis_builtin_msetex_is_lost_during_atomic_slot_migration() {
    if skip_unless(
        has_atomic_slot_migration() && target().has_builtin_msetex() && !target().is_valkey(),
        "shows the defect of Redis 8.4+'s built-in MSETEX",
    ) {
        return;
    }
    let [source, target_node] = two_node_cluster(ServerConfig::default());
    let mut src = source.client();
    // Tag {06S} is slot 0, on the first node. One key, saved 3 s into the
    // snapshot: the stream of writes runs meanwhile.
    q::<(), _>(&mut src, &["SET", "{06S}seed", "s"]);
    q::<(), _>(
        &mut src,
        &["CONFIG", "SET", "rdb-key-save-delay", "3000000"],
    );
    let migration = AtomicMigration::start(&source, &target_node, 0);
    let streaming = eventually(Duration::from_secs(20), || {
        migration.state_on(source.port()).0 == "send-bulk-and-stream"
    });
    assert!(
        streaming,
        "never streamed: {:?}",
        migration.state_on(source.port())
    );
    assert_eq!(
        raw_command(&["MSETEX", "1", "{06S}builtin", "v", "PX", "600000"])
            .query::<i64>(&mut src)
            .unwrap(),
        1
    );
    q::<(), _>(&mut src, &["SET", "{06S}set", "v", "PX", "600000"]);
    q::<(), _>(&mut src, &["MSETEX", "600", "{06S}module", "v"]);
    migration
        .wait(Duration::from_secs(60))
        .expect("the migration");
    let mut dst = target_node.client();
    let get = |con: &mut Connection, key: &str| q::<Option<String>, _>(con, &["GET", key]);
    assert_eq!(get(&mut dst, "{06S}set").as_deref(), Some("v"));
    assert_eq!(get(&mut dst, "{06S}module").as_deref(), Some("v"));
    assert_eq!(
        get(&mut dst, "{06S}builtin"),
        None,
        "the built-in's write arrived: docs/OPERATIONS.md needs updating"
    );
    record_result(
        "Redis built-in MSETEX during atomic slot migration",
        "written while the slot moved: SET and the module's MSETEX on the new owner, the built-in's write lost",
    );
}

/// docs/OPERATIONS.md, *Cluster*: Valkey 9.1's built-in MSETEX is not routed: a node
/// writes keys of slots it does not own, and accepts keys of two slots.
#[test]
fn valkey_builtin_msetex_ignores_slot_ownership() {
    if skip_unless(
        target().is_valkey() && target().has_builtin_msetex(),
        "shows the defect of Valkey 9.1+'s built-in MSETEX",
    ) {
        return;
    }
    let [first, _second] = two_node_cluster(ServerConfig::default());
    let mut con = first.client();
    // {m} is slot 15627 (second node), {b} slot 3300 (first node).
    let moved = err(&mut con, &["MSET", "{m}x", "1"]);
    assert!(moved.starts_with("MOVED 15627 "), "{moved}");
    assert!(
        err(&mut con, &["MSETEX", "60", "{m}x", "1"]).starts_with("MOVED 15627 "),
        "the module"
    );
    let builtin = |con: &mut Connection, args: &[&str]| raw_command(args).query::<i64>(con);
    assert_eq!(
        builtin(&mut con, &["MSETEX", "1", "{m}x", "1"]).ok(),
        Some(1),
        "docs/OPERATIONS.md needs updating"
    );
    assert_eq!(
        q::<i64, _>(&mut con, &["CLUSTER", "COUNTKEYSINSLOT", "15627"]),
        1
    );
    assert_eq!(
        err(&mut con, &["MSET", "{b}y", "1", "{m}z", "2"]),
        "CROSSSLOT Keys in request don't hash to the same slot"
    );
    assert_eq!(
        builtin(&mut con, &["MSETEX", "2", "{b}y", "1", "{m}z", "2"]).ok(),
        Some(1)
    );
}

/// Legacy resharding (what `redis-cli --cluster reshard` does on every
/// server): the slot is MIGRATING on the source and IMPORTING on the
/// target, MIGRATE moves its keys one by one, and the server redirects
/// MSETEX as it redirects MSET: ASK for keys already moved, TRYAGAIN (ASK
/// before Redis 7.0) for a call whose keys are split, the new node takes
/// ASKING calls.
#[test]
fn legacy_migration_redirects_msetex_as_any_multi_key_command() {
    let [target_node, source] = two_node_cluster(ServerConfig::default());
    let (mut src, mut dst) = (source.client(), target_node.client());
    let slot = q::<i64, _>(&mut src, &["CLUSTER", "KEYSLOT", TAG]).to_string();
    let (source_id, target_id): (String, String) = (
        q(&mut src, &["CLUSTER", "MYID"]),
        q(&mut dst, &["CLUSTER", "MYID"]),
    );
    let keys = ["{m}a", "{m}b", "{m}c"];
    let pxat = (now_ms() + 600_000).to_string();
    let all = [
        "MSETEX", "PXAT", &pxat, keys[0], "1", keys[1], "2", keys[2], "3",
    ];
    assert_eq!(exec(&mut src, &all).unwrap(), Value::Okay);
    q::<(), _>(
        &mut dst,
        &["CLUSTER", "SETSLOT", &slot, "IMPORTING", &source_id],
    );
    q::<(), _>(
        &mut src,
        &["CLUSTER", "SETSLOT", &slot, "MIGRATING", &target_id],
    );
    let port = target_node.port().to_string();
    q::<(), _>(
        &mut src,
        &["MIGRATE", "127.0.0.1", &port, keys[0], "0", "5000"],
    );
    // Keys still here: served here.
    assert_eq!(
        exec(&mut src, &["MSETEX", "600", keys[1], "b2", keys[2], "c2"]).unwrap(),
        Value::Okay
    );
    // A key already moved: ASK; a call with keys on both sides: what MSET
    // gets (TRYAGAIN from Redis 7.0 on, ASK before).
    let ask = err(&mut src, &["MSETEX", "600", keys[0], "a2"]);
    assert_eq!(ask, format!("ASK {slot} 127.0.0.1:{port}"));
    let split = err(&mut src, &["MSETEX", "600", keys[0], "a2", keys[1], "b3"]);
    assert_eq!(
        split,
        err(&mut src, &["MSET", keys[0], "a2", keys[1], "b3"])
    );
    assert!(split.starts_with("TRYAGAIN") || split == ask, "{split}");
    // The new node takes the call after ASKING, options included.
    let mut asking = redis::pipe();
    asking.cmd("ASKING").ignore();
    asking.add_command(command(&["MSETEX", "NX", "PX", "600000", "{m}new", "n"]));
    let (one,): (i64,) = asking.query(&mut dst).unwrap();
    assert_eq!(one, 1);
    for key in &keys[1..] {
        q::<(), _>(&mut src, &["MIGRATE", "127.0.0.1", &port, key, "0", "5000"]);
    }
    for node in [&mut src, &mut dst] {
        q::<(), _>(node, &["CLUSTER", "SETSLOT", &slot, "NODE", &target_id]);
    }
    let moved = err(&mut src, &["MSETEX", "600", keys[0], "x"]);
    assert_eq!(moved, format!("MOVED {slot} 127.0.0.1:{port}"));
    let values: Vec<Option<String>> = q(&mut dst, &["MGET", keys[0], keys[1], keys[2], "{m}new"]);
    assert_eq!(
        values,
        [Some("1"), Some("b2"), Some("c2"), Some("n")].map(|v| v.map(str::to_owned))
    );
    // MIGRATE carries the time left (RESTORE ttl), not the deadline.
    let deadline = deadline_of(&mut dst, keys[0]).0;
    assert!(
        (deadline - pxat.parse::<i64>().unwrap_or(0)).abs() < 1000,
        "{deadline} vs {pxat}"
    );
}
