//! Which keys the server and clients read from a call, asked of the server
//! rather than taken from its version: the keynum key spec's step (Redis
//! 7.0 to 8.4.3 read only the first half of the keys, redis/redis#14657;
//! ../shared/servers/redis-keystep reproduces it and reports 8.6.3), and
//! what a cluster client that reads COMMAND does with a call it sends.

use msetex_harness::*;

const IO_THREADS: [u32; 2] = [1, 4];

fn with_io_threads(config: ServerConfig, io_threads: u32) -> ServerConfig {
    config.line(&format!("io-threads {io_threads}"))
}

/// A user with the key pattern `~a*` runs a NUMKEYS call whose second key
/// is outside it: refused, nothing written, and COMMAND GETKEYS lists both
/// keys; where the server reads the keynum spec without its step, the load
/// log says so and which path the module took.
#[test]
fn an_acl_key_pattern_sees_every_key_of_a_numkeys_call() {
    let name = target().numkeys_name();
    for io_threads in IO_THREADS {
        let server = with_io_threads(ServerConfig::numkeys(), io_threads).start();
        let mut admin = server.client();
        q::<(), _>(
            &mut admin,
            &["ACL", "SETUSER", "u", "on", ">pw", "~a*", "+@all"],
        );
        let mut user = server.client();
        q::<(), _>(&mut user, &["AUTH", "u", "pw"]);
        let call = [name, "2", "a1", "x", "b1", "y", "EX", "100"];
        let refused = err(&mut user, &call);
        assert!(
            refused.starts_with("NOPERM"),
            "io-threads {io_threads}: {refused}"
        );
        assert_eq!(
            q::<i64, _>(&mut admin, &["DBSIZE"]),
            0,
            "io-threads {io_threads}"
        );
        let getkeys = [&["COMMAND", "GETKEYS"][..], &call].concat();
        assert_eq!(q::<Vec<String>, _>(&mut admin, &getkeys), ["a1", "b1"]);
        let said = server
            .log()
            .contains("reads only the first half of the keys of its own MSETEX");
        assert_eq!(
            said,
            reads_keynum_step() == Some(false),
            "io-threads {io_threads}:\n{}",
            server.log()
        );
    }
}

/// In cluster mode, a NUMKEYS call with keys in two slots writes nothing:
/// CROSSSLOT, or, where the server routes by keys read before any module
/// and cannot read the keynum spec's step, the module's refusal of options
/// among the keys. Without options: CROSSSLOT everywhere.
#[test]
fn a_numkeys_call_across_two_slots_writes_nothing_in_cluster_mode() {
    let name = target().numkeys_name();
    for io_threads in IO_THREADS {
        let server = single_node_cluster_with(with_io_threads(ServerConfig::numkeys(), io_threads));
        let mut con = server.client();
        let crossslot = "CROSSSLOT Keys in request don't hash to the same slot";
        let plain = [name, "2", "{a}1", "x", "{b}2", "y"];
        assert_eq!(err(&mut con, &plain), crossslot, "io-threads {io_threads}");
        let with_ttl = [name, "2", "{a}1", "x", "{b}2", "y", "EX", "100"];
        let refused = err(&mut con, &with_ttl);
        let exact = reads_keynum_step() == Some(true);
        if target().routes_by_keys_read_before_filters(io_threads) && !exact {
            assert!(refused.contains("options cannot be routed"), "{refused}");
        } else {
            assert_eq!(refused, crossslot, "io-threads {io_threads}");
        }
        assert_eq!(
            q::<i64, _>(&mut con, &["DBSIZE"]),
            0,
            "io-threads {io_threads}"
        );
    }
}

/// Where the server reads the keynum spec's step and asks for keys from its
/// I/O threads (Redis 8.6.3 with io-threads), the module declares the
/// NUMKEYS form's keys by the built-in's keynum spec alone: no command
/// filter rewrites a call (SLOWLOG shows it as sent), and the log says so.
#[test]
fn where_the_step_is_read_the_keynum_spec_alone_declares_the_keys() {
    let server = with_io_threads(ServerConfig::numkeys(), 4)
        .line("slowlog-log-slower-than 0")
        .start();
    let exact = reads_keynum_step() == Some(true);
    let by_specs = target().keys_by_specs(4, false);
    if skip_unless(
        exact && by_specs,
        "a server that reads keys from I/O threads outside cluster mode and reads the keynum \
         step (Redis 8.4.4+)",
    ) {
        return;
    }
    let log = server.log();
    assert!(
        log.contains("the NUMKEYS form's keynum specification describes every call"),
        "{log}"
    );
    let name = target().numkeys_name();
    let mut con = server.client();
    let call = [name, "2", "a", "1", "b", "2", "NX", "EX", "100"];
    assert_eq!(exec(&mut con, &call).unwrap(), Value::Int(1));
    // SLOWLOG GET: [id, time, duration, [args...], ...] per entry.
    let entries: Vec<Value> = q(&mut con, &["SLOWLOG", "GET", "10"]);
    let logged: Vec<Vec<String>> = entries
        .iter()
        .filter_map(|entry| match entry {
            Value::Array(fields) => redis::from_redis_value(fields.get(3)?.clone()).ok(),
            _ => None,
        })
        .collect();
    assert!(
        logged.iter().any(|args| args == &call),
        "the call as sent, options in place: {logged:?}"
    );
}

/// Beside its built-in renamed away, the server cannot be asked about the
/// keynum step before the module registers; with keys from key specs only
/// (io-threads) it is taken as read, and confirmed on the module's own
/// command: the load goes on where the server reads every key (its calls
/// with options then pass no filter), and is refused with one line naming
/// the keys read where it reads half (redis-keystep).
#[test]
fn beside_a_renamed_builtin_the_load_confirms_the_keynum_step() {
    if skip_unless(
        target().keys_by_specs(4, false) && target().has_builtin_msetex(),
        "a built-in MSETEX and keys from I/O threads outside cluster mode (Redis 8.4+)",
    ) {
        return;
    }
    let config = with_io_threads(ServerConfig::numkeys(), 4).line("rename-command MSETEX \"\"");
    if reads_keynum_step() == Some(false) {
        let log = config.start_expecting_failure();
        let line = "not loaded: the server reads the keys of 'msetex.nk 2 {msetex}a 1 {msetex}b 2 \
                    NX PX 100000' as [{msetex}a], not [{msetex}a {msetex}b]";
        assert!(log.contains(line), "{log}");
        return;
    }
    let server = config.start();
    assert!(
        server.log().contains("renamed away?): taken as yes"),
        "{}",
        server.log()
    );
    let mut con = server.client();
    let call = [
        target().numkeys_name(),
        "2",
        "a1",
        "x",
        "b1",
        "y",
        "EX",
        "100",
    ];
    assert_eq!(exec(&mut con, &call).unwrap(), Value::Int(1));
    let getkeys = [&["COMMAND", "GETKEYS"][..], &call].concat();
    assert_eq!(q::<Vec<String>, _>(&mut con, &getkeys), ["a1", "b1"]);
}

/// COMMAND INFO of `name`: its flags and legacy key positions.
fn command_info(con: &mut Connection, name: &str) -> (Vec<String>, (i64, i64, i64)) {
    let info: Vec<Value> = q(con, &["COMMAND", "INFO", name]);
    let Some(Value::Array(fields)) = info.first() else {
        panic!("COMMAND INFO {name}: {info:?}");
    };
    let flags = match fields.get(2) {
        Some(Value::Array(flags) | Value::Set(flags)) => flags
            .iter()
            .filter_map(|flag| redis::from_redis_value::<String>(flag.clone()).ok())
            .collect(),
        other => panic!("flags: {other:?}"),
    };
    let int = |i: usize| match fields.get(i) {
        Some(Value::Int(n)) => *n,
        other => panic!("field {i}: {other:?}"),
    };
    (flags, (int(3), int(4), int(5)))
}

/// The keys a cluster client that reads COMMAND (redis-py) finds in `call`:
/// COMMAND GETKEYS where the command is `movablekeys`, else the legacy
/// positions (a negative last counts from the end).
fn keys_as_a_client_reads_them(con: &mut Connection, call: &[&str]) -> Vec<String> {
    let (flags, (first, last, step)) = command_info(con, call[0]);
    if flags.iter().any(|flag| flag == "movablekeys") {
        let getkeys = [&["COMMAND", "GETKEYS"][..], call].concat();
        return q(con, &getkeys);
    }
    let len = call.len() as i64;
    let last = if last < 0 { len + last } else { last };
    let positions = (first..=last).step_by(step.max(1) as usize);
    positions.map(|i| call[i as usize].to_owned()).collect()
}

/// A cluster client that reads COMMAND finds exactly a call's keys, with or
/// without options, in either syntax, at any io-threads, and the call
/// reaches the node that owns their slot and sets the TTL. (The clients
/// measured: redis-py 8 reads COMMAND; node-redis, ioredis, Jedis and
/// Lettuce route by their own tables, docs/OPERATIONS.md.) Where the
/// server routes by keys read before any module (Redis 8.2+ with
/// io-threads), calls with options among the keys are refused instead.
#[test]
fn a_cluster_client_reading_command_routes_every_call_to_its_slot() {
    for io_threads in IO_THREADS {
        for numkeys in [false, true] {
            let (config, name) = if numkeys {
                (ServerConfig::numkeys(), target().numkeys_name())
            } else {
                (ServerConfig::default(), target().command_name())
            };
            let nodes = two_node_cluster(with_io_threads(config, io_threads));
            let exact = reads_keynum_step() == Some(true);
            let calls: [Vec<&str>; 3] = if numkeys {
                [
                    vec![name, "2", "{t}a", "1", "{t}b", "2"],
                    vec![name, "2", "{t}c", "1", "{t}d", "2", "EX", "100"],
                    vec![name, "2", "{t}e", "1", "{t}f", "2", "NX", "PX", "100000"],
                ]
            } else {
                [
                    vec![name, "100", "{t}a", "1", "{t}b", "2"],
                    vec![name, "PX", "100000", "{t}c", "1", "{t}d", "2"],
                    vec![name, "NX", "PX", "100000", "{t}e", "1", "{t}f", "2"],
                ]
            };
            let refuses_options =
                target().routes_by_keys_read_before_filters(io_threads) && !(numkeys && exact);
            for (index, call) in calls.iter().enumerate() {
                let what = format!("io-threads {io_threads}, {call:?}");
                let mut any = nodes[1].client();
                let keys = keys_as_a_client_reads_them(&mut any, call);
                if refuses_options && index > 0 {
                    let (_, owner) = slot_owner(&nodes, "{t}");
                    let refused = err(&mut owner.client(), call);
                    assert!(
                        refused.contains("options cannot be routed"),
                        "{what}: {refused}"
                    );
                    continue;
                }
                let expected: Vec<&str> = call
                    .iter()
                    .copied()
                    .filter(|a| a.starts_with("{t}"))
                    .collect();
                assert_eq!(keys, expected, "{what}: the keys a client reads");
                let (_, owner) = slot_owner(&nodes, &keys[0]);
                let mut con = owner.client();
                let reply = exec(&mut con, call).unwrap_or_else(|e| panic!("{what}: {e}"));
                assert!(
                    matches!(reply, Value::Okay | Value::Int(1)),
                    "{what}: {reply:?}"
                );
                // The NUMKEYS form without options sets no TTL.
                let persist = numkeys && index == 0;
                for key in &keys {
                    let ttl: i64 = q(&mut con, &["PTTL", key]);
                    assert!(
                        if persist { ttl == -1 } else { ttl > 0 },
                        "{what}: {key} has TTL {ttl}"
                    );
                }
            }
        }
    }
}
