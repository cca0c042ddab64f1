//! Which keys the server and clients read from a call, asked of the server
//! rather than taken from its version: the keynum key spec's step (Redis
//! 7.0 to 8.4.3 read only the first half of the keys, redis/redis#14657;
//! ../shared/servers/redis-keystep reproduces it and reports 8.6.3), what a
//! cluster client that evaluates COMMAND INFO (redis-py 8.2) finds in a call
//! it sends, and the errors of calls the command refuses, in and out of
//! cluster mode.

use msetex_harness::*;

const IO_THREADS: [u32; 2] = [1, 4];

fn with_io_threads(config: ServerConfig, io_threads: u32) -> ServerConfig {
    config.line(&format!("io-threads {io_threads}"))
}

/// The module's two forms on this server: (name, config) for the TTL form
/// and the NUMKEYS form.
fn forms() -> [(bool, &'static str, ServerConfig); 2] {
    [
        (false, target().command_name(), ServerConfig::default()),
        (true, target().numkeys_name(), ServerConfig::numkeys()),
    ]
}

/// A user with the key pattern `~a*` runs a NUMKEYS call whose second key
/// is outside it: refused, nothing written, and COMMAND GETKEYS lists both
/// keys; INFO and the load log say what the server answered about the step.
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
        assert_eq!(q::<i64, _>(&mut admin, &["DBSIZE"]), 0);
        let getkeys = [&["COMMAND", "GETKEYS"][..], &call].concat();
        assert_eq!(q::<Vec<String>, _>(&mut admin, &getkeys), ["a1", "b1"]);
        let step = info_field(&mut admin, "msetex", "msetex_keynum_step");
        let expected = match reads_keynum_step() {
            Some(true) => "read",
            Some(false) => "not_read",
            None => "not_asked",
        };
        assert_eq!(step.as_deref(), Some(expected));
        let said = server
            .log()
            .contains("read only the first half of its keys");
        assert_eq!(said, reads_keynum_step() == Some(false), "{}", server.log());
    }
}

/// In cluster mode, a NUMKEYS call with keys in two slots writes nothing:
/// CROSSSLOT, with or without options.
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
        assert_eq!(
            err(&mut con, &with_ttl),
            crossslot,
            "io-threads {io_threads}"
        );
        assert_eq!(q::<i64, _>(&mut con, &["DBSIZE"]), 0);
    }
}

/// Where the server reads the keynum spec's step (Redis 8.4.4+, Valkey
/// 9.1+), the module declares the NUMKEYS form's keys by the built-in's
/// keynum spec alone outside cluster mode: no command filter rewrites a call
/// (SLOWLOG shows it as sent), and the log says so.
#[test]
fn where_the_step_is_read_the_keynum_spec_alone_declares_the_keys() {
    let server = with_io_threads(ServerConfig::numkeys(), 4)
        .line("slowlog-log-slower-than 0")
        .start();
    let mut con = server.client();
    if skip_unless(
        reads_keynum_step() == Some(true),
        "a server that reads the keynum step (Redis 8.4.4+, Valkey 9.1+)",
    ) {
        return;
    }
    assert_eq!(KeysRead::of(&mut con), KeysRead::KeynumSpec);
    let log = server.log();
    assert!(log.contains("from the keynum key specification"), "{log}");
    let name = target().numkeys_name();
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

/// The hardened configuration of a server that reads a keynum spec without
/// its step (redis-keystep), where nothing can be asked: MSETEX and COMMAND
/// renamed away, io-threads 2, the NUMKEYS form under its own name. A user
/// with `~a*` cannot write `b1`; in cluster mode a call across two slots
/// writes nothing; the module says the step was not asked, and claims no
/// confirmation. Run on redis-keystep from ../shared/servers (whatever server
/// is under test), and on the server under test where it has a built-in.
#[test]
fn where_nothing_can_be_asked_no_key_escapes() {
    let keystep = shared_servers_dir().join("redis-keystep/redis-server");
    let mut servers = targets_at(&[keystep.display().to_string()]);
    if target().has_builtin_msetex() {
        servers.push(target().clone());
    }
    if skip_unless(
        !servers.is_empty(),
        "needs ../shared/servers/redis-keystep or a server with a built-in MSETEX",
    ) {
        return;
    }
    let value = "v".repeat(100);
    for server in servers {
        let server: &'static Target = Box::leak(Box::new(server));
        let config = || {
            ServerConfig::default()
                .binary(server)
                .module_args(&["SYNTAX", "NUMKEYS", "COMMAND-NAME", "msetex.nk"])
                .line("rename-command MSETEX \"\"")
                .line("rename-command COMMAND \"\"")
                .line("io-threads 2")
        };
        let what = server.describe();
        // An ACL user with a key pattern.
        let node = config().start();
        let mut admin = node.client();
        assert_eq!(
            info_field(&mut admin, "msetex", "msetex_keynum_step").as_deref(),
            Some("not_asked"),
            "{what}"
        );
        assert!(!node.log().contains("confirmed"), "{what}: {}", node.log());
        q::<(), _>(
            &mut admin,
            &["ACL", "SETUSER", "alice", "on", "nopass", "~a*", "+@all"],
        );
        let mut alice = node.client();
        q::<(), _>(&mut alice, &["AUTH", "alice", "x"]);
        let call = ["msetex.nk", "2", "a1", &value, "b1", &value, "EX", "100"];
        let refused = err(&mut alice, &call);
        assert!(refused.starts_with("NOPERM"), "{what}: {refused}");
        assert_eq!(q::<i64, _>(&mut admin, &["EXISTS", "b1"]), 0, "{what}");
        // Cluster mode: keys in two slots, with and without options.
        let node = single_node_cluster_with(config());
        let mut con = node.client();
        for options in [&["EX", "100"][..], &[]] {
            let call = [
                &["msetex.nk", "2", "{a}3", &value, "{b}4", &value][..],
                options,
            ]
            .concat();
            let refused = err(&mut con, &call);
            assert!(refused.starts_with("CROSSSLOT"), "{what}: {refused}");
        }
        assert_eq!(q::<i64, _>(&mut con, &["DBSIZE"]), 0, "{what}");
        for slot in ["15495", "15934"] {
            let count: i64 = q(&mut con, &["CLUSTER", "COUNTKEYSINSLOT", slot]);
            assert_eq!(count, 0, "{what}: slot {slot}");
        }
    }
}

// --- COMMAND INFO as a cluster client reads it ------------------------------

/// One key specification of COMMAND INFO.
#[derive(Debug)]
struct Spec {
    flags: Vec<String>,
    begin: String,
    index: i64,
    find: String,
    /// range: lastkey, keystep, limit; keynum: keynumidx, firstkey, keystep.
    a: i64,
    b: i64,
    step: i64,
}

/// A RESP2 map (a flat list of names and values) as pairs.
fn fields(value: &Value) -> Vec<(String, Value)> {
    let Value::Array(items) = value else {
        return Vec::new();
    };
    items
        .chunks(2)
        .filter_map(|pair| {
            let name: String = redis::from_redis_value(pair.first()?.clone()).ok()?;
            Some((name, pair.get(1)?.clone()))
        })
        .collect()
}

fn field(value: &Value, name: &str) -> Option<Value> {
    fields(value)
        .into_iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v)
}

fn int(value: Option<Value>) -> i64 {
    value
        .and_then(|v| redis::from_redis_value(v).ok())
        .unwrap_or(0)
}

/// COMMAND INFO of `name`: arity, flags, legacy positions and key specs.
fn command_info(
    con: &mut Connection,
    name: &str,
) -> (i64, Vec<String>, (i64, i64, i64), Vec<Spec>) {
    let info: Vec<Value> = q(con, &["COMMAND", "INFO", name]);
    let Some(Value::Array(items)) = info.first() else {
        panic!("COMMAND INFO {name}: {info:?}");
    };
    let strings = |v: Option<&Value>| -> Vec<String> {
        match v {
            Some(Value::Array(list) | Value::Set(list)) => list
                .iter()
                .filter_map(|f| redis::from_redis_value(f.clone()).ok())
                .collect(),
            _ => Vec::new(),
        }
    };
    let n = |i: usize| int(items.get(i).cloned());
    let specs = match items.get(8) {
        Some(Value::Array(specs)) => specs
            .iter()
            .map(|spec| {
                let begin = field(spec, "begin_search").unwrap_or(Value::Nil);
                let find = field(spec, "find_keys").unwrap_or(Value::Nil);
                let begin_spec = field(&begin, "spec").unwrap_or(Value::Nil);
                let find_spec = field(&find, "spec").unwrap_or(Value::Nil);
                let kind = |v: &Value| -> String {
                    field(v, "type")
                        .and_then(|t| redis::from_redis_value(t).ok())
                        .unwrap_or_default()
                };
                let find_kind = kind(&find);
                let (a, b) = if find_kind == "range" {
                    (
                        int(field(&find_spec, "lastkey")),
                        int(field(&find_spec, "limit")),
                    )
                } else {
                    (
                        int(field(&find_spec, "keynumidx")),
                        int(field(&find_spec, "firstkey")),
                    )
                };
                Spec {
                    flags: strings(field(spec, "flags").as_ref()),
                    begin: kind(&begin),
                    index: int(field(&begin_spec, "index")),
                    find: find_kind,
                    a,
                    b,
                    step: int(field(&find_spec, "keystep")),
                }
            })
            .collect(),
        _ => Vec::new(),
    };
    (n(1), strings(items.get(2)), (n(3), n(4), n(5)), specs)
}

/// The keys redis-py 8.2's cluster client finds in `call` from COMMAND
/// INFO (`commands.py`: `_compile_key_specs`, `_get_keys_from_specs`):
/// `None` where it asks COMMAND GETKEYS (a movable command with no specs it
/// can evaluate: one flagged incomplete or variable_flags, a search it does
/// not implement, a last key past the call).
fn keys_from_info(con: &mut Connection, call: &[&str]) -> Option<Vec<String>> {
    let (arity, flags, (first, last, step), specs) = command_info(con, call[0]);
    let argc = call.len() as i64;
    let at = |i: i64| call[i as usize].to_owned();
    if !flags.iter().any(|f| f == "movablekeys") {
        let last = if last < 0 { argc + last } else { last };
        if step < 1 {
            return Some(Vec::new());
        }
        return Some((first..=last).step_by(step as usize).map(at).collect());
    }
    if specs.is_empty() || argc < arity.abs() || (arity > 0 && argc != arity) {
        return None;
    }
    let mut keys = Vec::new();
    for spec in &specs {
        let flag = |f: &str| spec.flags.iter().any(|g| g == f);
        if flag("incomplete") || flag("variable_flags") {
            return None;
        }
        if flag("not_key") {
            continue;
        }
        if spec.begin != "index" || spec.index < 1 || spec.step < 1 {
            return None;
        }
        let (start, end) = match spec.find.as_str() {
            "range" => {
                let end = if spec.a >= 0 {
                    spec.index + spec.a
                } else if spec.b == 0 {
                    argc + spec.a
                } else {
                    spec.index + (argc - spec.index) / spec.b + spec.a
                };
                (spec.index, end)
            }
            "keynum" => {
                let numkeys: i64 = call.get((spec.index + spec.a) as usize)?.parse().ok()?;
                let start = spec.index + spec.b;
                (start, start + (numkeys - 1) * spec.step)
            }
            _ => return None,
        };
        if end < start {
            continue;
        }
        if end >= argc {
            return None;
        }
        keys.extend((start..=end).step_by(spec.step as usize).map(at));
    }
    Some(keys)
}

/// Calls with every option, keys of one hash tag, values that look like
/// keys of another slot (`{x}`).
fn calls(numkeys: bool, name: &'static str) -> Vec<Vec<&'static str>> {
    let ttl: [&[&str]; 8] = [
        &["100"],
        &["EX", "100"],
        &["PX", "100000"],
        &["EXAT", "4000000000"],
        &["PXAT", "4000000000000"],
        &["NX", "PX", "100000"],
        &["XX", "EX", "100"],
        &["EX", "XX", "100"],
    ];
    let numkeys_options: [&[&str]; 8] = [
        &[],
        &["EX", "100"],
        &["PX", "100000"],
        &["EXAT", "4000000000"],
        &["PXAT", "4000000000000"],
        &["KEEPTTL"],
        &["NX", "PX", "100000"],
        &["EX", "100", "XX"],
    ];
    let pairs = ["{t}a", "{x}1", "{t}b", "{x}2"];
    if numkeys {
        numkeys_options
            .iter()
            .map(|options| [&[name, "2"][..], &pairs, options].concat())
            .collect()
    } else {
        ttl.iter()
            .map(|options| [&[name][..], options, &pairs].concat())
            .collect()
    }
}

/// COMMAND and COMMAND INFO describe a call as a client sends it, in either
/// form, in and out of cluster mode, at io-threads 1 and 4: a client that
/// evaluates them as redis-py 8.2 does finds exactly the call's keys, or is
/// told to ask COMMAND GETKEYS, which answers them.
#[test]
fn command_info_describes_each_call_as_sent() {
    for cluster in [false, true] {
        for io_threads in IO_THREADS {
            for (numkeys, name, config) in forms() {
                let config = with_io_threads(config, io_threads);
                let server = if cluster {
                    single_node_cluster_with(config)
                } else {
                    config.start()
                };
                let mut con = server.client();
                let read = KeysRead::of(&mut con);
                for call in calls(numkeys, name) {
                    let what =
                        format!("cluster {cluster}, io-threads {io_threads}, {read:?}, {call:?}");
                    let getkeys = [&["COMMAND", "GETKEYS"][..], &call].concat();
                    let expected = ["{t}a", "{t}b"];
                    let found = keys_from_info(&mut con, &call)
                        .unwrap_or_else(|| q::<Vec<String>, _>(&mut con, &getkeys));
                    assert_eq!(found, expected, "{what}");
                    assert_eq!(q::<Vec<String>, _>(&mut con, &getkeys), expected, "{what}");
                    let reply = exec(&mut con, &call).unwrap_or_else(|e| panic!("{what}: {e}"));
                    assert!(
                        matches!(reply, Value::Okay | Value::Int(_)),
                        "{what}: {reply:?}"
                    );
                }
            }
        }
    }
}

/// A call the command refuses gets the error it gets outside cluster mode,
/// whatever the io-threads; a user with a key pattern gets that error, not
/// a NOPERM naming a value or an option, and ACL LOG stays empty.
#[test]
fn refused_calls_get_the_same_error_in_cluster_mode() {
    for (numkeys, name, config) in forms() {
        let malformed: Vec<Vec<&str>> = if numkeys {
            vec![
                vec![name, "2", "{z}a", "1", "{z}b"],
                vec![name, "0", "{z}a", "1"],
                vec![name, "2", "a1", "b1", "a2"],
                vec![name, "1", "{z}a", "1", "EX"],
                vec![name, "1", "{z}a", "1", "EX", "0"],
            ]
        } else {
            vec![
                vec![name, "10", "{z}a", "1", "NX"],
                vec![name, "10", "{z}a", "1", "{z}b"],
                vec![name, "EX", "EX", "10", "{z}a", "1"],
                vec![name, "-5", "{z}a", "1"],
                vec![name, "2", "{z}a", "1", "{z}b", "2", "EX", "60"],
            ]
        };
        for io_threads in IO_THREADS {
            let config = with_io_threads(config.clone(), io_threads);
            let alone = config.clone().start();
            let node = single_node_cluster_with(config);
            for server in [&alone, &node] {
                let mut admin = server.client();
                q::<(), _>(
                    &mut admin,
                    &["ACL", "SETUSER", "u", "on", ">pw", "~a*", "~{z}*", "+@all"],
                );
            }
            for call in &malformed {
                let what = format!("io-threads {io_threads}: {call:?}");
                let expected = err(&mut alone.client(), call);
                assert!(!expected.starts_with("NOPERM"), "{what}: {expected}");
                for server in [&alone, &node] {
                    let mut user = server.client();
                    q::<(), _>(&mut user, &["AUTH", "u", "pw"]);
                    assert_eq!(err(&mut user, call), expected, "{what}");
                    let log: Vec<Value> = q(&mut server.client(), &["ACL", "LOG"]);
                    assert!(log.is_empty(), "{what}: {log:?}");
                }
            }
        }
    }
}
