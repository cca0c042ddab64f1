//! MSETEX [NX | XX] [EX | PX | EXAT | PXAT] time key value [key value ...]

use msetex_harness::*;
use std::time::Duration;

fn deadline(con: &mut Connection, key: &str) -> i64 {
    deadline_of(con, key).0
}

#[test]
fn each_time_unit_sets_the_right_deadline() {
    let server = Server::start();
    let mut con = server.client();
    let exat = now_ms() / 1000 + 3600;
    let pxat = now_ms() + 7_200_123;
    let before = now_ms();
    q::<(), _>(&mut con, &["MSETEX", "EX", "100", "ex", "1"]);
    q::<(), _>(&mut con, &["MSETEX", "PX", "100500", "px", "2"]);
    q::<(), _>(
        &mut con,
        &["MSETEX", "EXAT", &exat.to_string(), "exat", "3"],
    );
    q::<(), _>(
        &mut con,
        &["MSETEX", "PXAT", &pxat.to_string(), "pxat", "4"],
    );
    let after = now_ms();
    assert!((before + 100_000..=after + 100_000).contains(&deadline(&mut con, "ex")));
    assert!((before + 100_500..=after + 100_500).contains(&deadline(&mut con, "px")));
    assert_eq!(deadline(&mut con, "exat"), exat * 1000);
    assert_eq!(deadline(&mut con, "pxat"), pxat);
    let values: Vec<String> = q(&mut con, &["MGET", "ex", "px", "exat", "pxat"]);
    assert_eq!(values, ["1", "2", "3", "4"]);
}

#[test]
fn keywords_ignore_case_and_order() {
    let server = Server::start();
    let mut con = server.client();
    let pxat = (now_ms() + 500_000).to_string();
    for (i, options) in [
        ["NX", "PXAT"],
        ["pxat", "nx"],
        ["Xx", "PxAt"],
        ["PXAT", "xx"],
    ]
    .iter()
    .enumerate()
    {
        let key = if i < 2 {
            format!("fresh{i}")
        } else {
            "fresh0".to_owned()
        };
        let mut args = vec![
            "MSETEX",
            options[0],
            options[1],
            pxat.as_str(),
            key.as_str(),
            "v",
        ];
        let reply = exec(&mut con, &args).unwrap();
        assert_eq!(reply, Value::Int(1), "{args:?}");
        assert_eq!(
            deadline(&mut con, &key),
            pxat.parse::<i64>().unwrap(),
            "{args:?}"
        );
        args.clear();
    }
}

#[test]
fn without_nx_or_xx_the_reply_stays_ok() {
    let server = Server::start();
    let mut con = server.client();
    for args in [
        &["MSETEX", "60", "a", "1"][..],
        &["MSETEX", "EX", "60", "a", "1"],
        &["MSETEX", "PX", "60000", "a", "1"],
        &["MSETEX", "EXAT", "4000000000", "a", "1"],
        &["MSETEX", "PXAT", "4000000000000", "a", "1"],
    ] {
        assert_eq!(exec(&mut con, args).unwrap(), Value::Okay, "{args:?}");
    }
}

#[test]
fn nx_writes_all_or_nothing() {
    let server = Server::start();
    let mut con = server.client();
    let ok = exec(
        &mut con,
        &[
            "MSETEX", "NX", "PX", "60000", "lock:a", "t1", "lock:b", "t1",
        ],
    )
    .unwrap();
    assert_eq!(ok, Value::Int(1));
    // Any existing key, wherever it is in the call, blocks every write.
    for args in [
        &[
            "MSETEX", "NX", "60", "lock:a", "t2", "lock:c", "t2", "lock:d", "t2",
        ][..],
        &[
            "MSETEX", "NX", "60", "lock:c", "t2", "lock:a", "t2", "lock:d", "t2",
        ],
        &[
            "MSETEX", "NX", "60", "lock:c", "t2", "lock:d", "t2", "lock:b", "t2",
        ],
    ] {
        let before = snapshot(&mut con);
        assert_eq!(exec(&mut con, args).unwrap(), Value::Int(0), "{args:?}");
        assert_eq!(snapshot(&mut con), before, "{args:?}");
    }
    // A key of another type exists too.
    q::<i64, _>(&mut con, &["SADD", "lock:set", "x"]);
    let zero = exec(
        &mut con,
        &["MSETEX", "NX", "60", "lock:e", "t", "lock:set", "t"],
    )
    .unwrap();
    assert_eq!(zero, Value::Int(0));
    assert_eq!(q::<i64, _>(&mut con, &["EXISTS", "lock:e"]), 0);
}

#[test]
fn xx_writes_all_or_nothing() {
    let server = Server::start();
    let mut con = server.client();
    let zero = exec(&mut con, &["MSETEX", "XX", "60", "a", "1"]).unwrap();
    assert_eq!(zero, Value::Int(0));
    assert_eq!(q::<i64, _>(&mut con, &["DBSIZE"]), 0);
    q::<(), _>(&mut con, &["SET", "a", "old"]);
    q::<i64, _>(&mut con, &["RPUSH", "b", "old"]);
    for args in [
        &["MSETEX", "XX", "60", "missing", "1", "a", "1", "b", "1"][..],
        &["MSETEX", "XX", "60", "a", "1", "missing", "1", "b", "1"],
        &["MSETEX", "XX", "60", "a", "1", "b", "1", "missing", "1"],
    ] {
        let before = snapshot(&mut con);
        assert_eq!(exec(&mut con, args).unwrap(), Value::Int(0), "{args:?}");
        assert_eq!(snapshot(&mut con), before, "{args:?}");
    }
    let one = exec(
        &mut con,
        &["MSETEX", "XX", "EX", "60", "a", "new", "b", "new"],
    )
    .unwrap();
    assert_eq!(one, Value::Int(1));
    let values: Vec<String> = q(&mut con, &["MGET", "a", "b"]);
    assert_eq!(values, ["new", "new"]);
    assert!(q::<i64, _>(&mut con, &["TTL", "b"]) > 0);
}

#[test]
fn nx_and_xx_with_a_key_repeated_in_the_call() {
    let server = Server::start();
    let mut con = server.client();
    // NX: the repeated key is absent before the call, so both writes happen
    // and the last value wins, as with MSETNX.
    let one = exec(
        &mut con,
        &["MSETEX", "NX", "60", "r", "first", "r", "second"],
    )
    .unwrap();
    assert_eq!(one, Value::Int(1));
    assert_eq!(q::<String, _>(&mut con, &["GET", "r"]), "second");
    q::<(), _>(&mut con, &["MSETNX", "m", "first", "m", "second"]);
    assert_eq!(q::<String, _>(&mut con, &["GET", "m"]), "second");
    // XX: the repeated key exists, the other does not: nothing is written.
    let zero = exec(
        &mut con,
        &["MSETEX", "XX", "60", "r", "x", "absent", "y", "r", "z"],
    )
    .unwrap();
    assert_eq!(zero, Value::Int(0));
    assert_eq!(q::<String, _>(&mut con, &["GET", "r"]), "second");
    let one = exec(&mut con, &["MSETEX", "XX", "60", "r", "x", "r", "z"]).unwrap();
    assert_eq!(one, Value::Int(1));
    assert_eq!(q::<String, _>(&mut con, &["GET", "r"]), "z");
}

#[test]
fn a_condition_that_fails_notifies_counts_and_propagates_nothing() {
    let server = ServerConfig::default()
        .line("notify-keyspace-events KEA")
        .line("appendonly yes")
        // No replication PING may move the offset while we watch it.
        .line("repl-ping-replica-period 3600")
        .start();
    let replica = start_replica(&server, ServerConfig::without_module());
    let mut con = server.client();
    let mut listener = server.client();
    let mut pubsub = listener.as_pubsub();
    pubsub.psubscribe("__keyevent@0__:*").unwrap();
    pubsub
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    q::<(), _>(&mut con, &["SET", "held", "x"]);
    // The SET's own event, then silence.
    assert_eq!(
        pubsub
            .get_message()
            .unwrap()
            .get_payload::<String>()
            .unwrap(),
        "held"
    );

    let changes =
        |con: &mut Connection| info_field(con, "persistence", "rdb_changes_since_last_save");
    let offset = |con: &mut Connection| info_field(con, "replication", "master_repl_offset");
    let (changes_before, offset_before) = (changes(&mut con), offset(&mut con));
    let zero = exec(&mut con, &["MSETEX", "NX", "60", "free", "1", "held", "2"]).unwrap();
    assert_eq!(zero, Value::Int(0));
    let zero = exec(&mut con, &["MSETEX", "XX", "60", "held", "1", "free", "2"]).unwrap();
    assert_eq!(zero, Value::Int(0));
    assert!(pubsub.get_message().is_err(), "no event expected");
    assert_eq!(changes(&mut con), changes_before);
    assert_eq!(offset(&mut con), offset_before, "nothing may be propagated");
    drop(pubsub);
    drop(replica);
}

#[test]
fn a_failed_condition_does_not_fail_other_clients_watch() {
    let server = Server::start();
    let mut watcher = server.client();
    let mut other = server.client();
    q::<(), _>(&mut watcher, &["SET", "w", "1"]);
    q::<(), _>(&mut watcher, &["WATCH", "w", "w2"]);
    let zero = exec(&mut other, &["MSETEX", "NX", "60", "w2", "a", "w", "b"]).unwrap();
    assert_eq!(zero, Value::Int(0));
    q::<(), _>(&mut watcher, &["MULTI"]);
    q::<(), _>(&mut watcher, &["SET", "w", "2"]);
    let reply = exec(&mut watcher, &["EXEC"]).unwrap();
    assert_eq!(
        reply,
        Value::Array(vec![Value::Okay]),
        "nothing changed: EXEC must run"
    );
    // And a successful NX write does fail it.
    q::<(), _>(&mut watcher, &["WATCH", "w2"]);
    let one = exec(&mut other, &["MSETEX", "NX", "60", "w2", "a"]).unwrap();
    assert_eq!(one, Value::Int(1));
    q::<(), _>(&mut watcher, &["MULTI"]);
    q::<(), _>(&mut watcher, &["GET", "w2"]);
    assert_eq!(exec(&mut watcher, &["EXEC"]).unwrap(), Value::Nil);
}

/// An error text as written for Redis 7.0 and the name `msetex`, as this
/// server and the module's name on it word it.
fn expected_text(text: &str) -> String {
    if text == "ERR invalid expire time in 'msetex' command" {
        target().invalid_expire(target().command_name())
    } else {
        named(text)
    }
}

#[test]
fn option_errors() {
    let server = Server::start();
    let mut con = server.client();
    q::<(), _>(&mut con, &["SET", "k", "old", "EX", "1000"]);
    let cases: [(&[&str], &str); 12] = [
        (&["MSETEX", "NX", "NX", "60", "k", "v"], "ERR syntax error"),
        (&["MSETEX", "NX", "XX", "60", "k", "v"], "ERR syntax error"),
        (&["MSETEX", "EX", "PX", "60", "k", "v"], "ERR syntax error"),
        (
            &["MSETEX", "pxat", "EXAT", "60", "k", "v"],
            "ERR syntax error",
        ),
        (
            &["MSETEX", "NX", "EX", "xx", "60", "k", "v"],
            "ERR syntax error",
        ),
        (
            &["MSETEX", "NX", "60", "k"],
            "ERR wrong number of arguments for 'msetex' command",
        ),
        (
            &["MSETEX", "PX", "60", "k", "v", "k2"],
            "ERR wrong number of arguments for 'msetex' command",
        ),
        (
            &["MSETEX", "NX", "EX", "k", "v"],
            "ERR wrong number of arguments for 'msetex' command",
        ),
        (
            &["MSETEX", "PX", "1.5", "k", "v"],
            "ERR value is not an integer or out of range",
        ),
        (
            &["MSETEX", "KEEPTTL", "k", "v"],
            "ERR KEEPTTL exists only in the numkeys form (load the module with SYNTAX NUMKEYS); \
             msetex takes msetex [NX|XX] [EX|PX|EXAT|PXAT] time key value [key value ...]",
        ),
        (
            &["MSETEX", "PXAT", "0", "k", "v"],
            "ERR invalid expire time in 'msetex' command",
        ),
        (
            &["MSETEX", "EXAT", "9223372036854776", "k", "v"],
            "ERR invalid expire time in 'msetex' command",
        ),
    ];
    for (args, expected) in cases {
        let expected =
            expected_text(expected).replace(" msetex ", &format!(" {} ", target().command_name()));
        let before = snapshot(&mut con);
        assert_eq!(err(&mut con, args), expected, "{args:?}");
        assert_eq!(snapshot(&mut con), before, "{args:?}");
    }
    for (unit, time) in [
        ("PX", "-1"),
        ("PX", "9223372036854775807"),
        ("EX", "0"),
        ("EXAT", "-3"),
    ] {
        assert_eq!(
            err(&mut con, &["MSETEX", unit, time, "k", "v"]),
            expected_text("ERR invalid expire time in 'msetex' command"),
            "{unit} {time}"
        );
    }
}

#[test]
fn a_deadline_in_the_past_leaves_the_keys_absent_everywhere() {
    let mut primary = ServerConfig::default()
        .line("appendonly yes")
        .line("appendfsync always")
        .start();
    let replica = start_replica(&primary, ServerConfig::without_module());
    let mut p = primary.client();
    q::<(), _>(&mut p, &["SET", "old", "value"]);
    q::<(), _>(&mut p, &["SET", "old_ttl", "value", "EX", "1000"]);
    let past_ms = (now_ms() - 60_000).to_string();
    let past_s = (now_ms() / 1000 - 60).to_string();
    let ok = exec(
        &mut p,
        &[
            "MSETEX", "PXAT", &past_ms, "old", "new", "fresh", "1", "n", "42",
        ],
    )
    .unwrap();
    assert_eq!(ok, Value::Okay);
    let ok = exec(&mut p, &["MSETEX", "EXAT", &past_s, "old_ttl", "new"]).unwrap();
    assert_eq!(ok, Value::Okay);
    wait_for_replicas(&mut p, 1);
    let keys = ["old", "old_ttl", "fresh", "n"];
    let mut r = replica.client();
    for key in keys {
        assert_eq!(
            q::<Option<String>, _>(&mut p, &["GET", key]),
            None,
            "primary: {key}"
        );
        assert_eq!(
            q::<Option<String>, _>(&mut r, &["GET", key]),
            None,
            "replica: {key}"
        );
    }
    assert_eq!(
        q::<i64, _>(&mut p, &["EXISTS", "old", "old_ttl", "fresh", "n"]),
        0
    );
    drop(replica);
    primary.restart();
    let mut p = primary.client();
    assert_eq!(
        q::<i64, _>(&mut p, &["EXISTS", "old", "old_ttl", "fresh", "n"]),
        0,
        "after AOF reload"
    );
}

#[test]
fn replicas_get_the_absolute_deadline_of_every_form() {
    let primary = Server::start();
    let replica = start_replica(&primary, ServerConfig::without_module());
    let mut p = primary.client();
    let pxat = (now_ms() + 900_000).to_string();
    q::<(), _>(
        &mut p,
        &["MSETEX", "PX", "500000", "f:px", "a", "f:int", "7"],
    );
    q::<(), _>(&mut p, &["MSETEX", "EXAT", "4000000000", "f:exat", "b"]);
    assert_eq!(
        exec(&mut p, &["MSETEX", "NX", "PXAT", &pxat, "f:nx", "c"]).unwrap(),
        Value::Int(1)
    );
    assert_eq!(
        exec(&mut p, &["MSETEX", "XX", "EX", "100", "f:nx", "d"]).unwrap(),
        Value::Int(1)
    );
    wait_for_replicas(&mut p, 1);
    let keys: [&[u8]; 4] = [b"f:px", b"f:int", b"f:exat", b"f:nx"];
    let mut r = replica.client();
    let on_primary = values_and_deadlines(&mut p, &keys);
    assert!(on_primary.iter().all(|(v, d)| v.is_some() && d.0 > 0));
    assert_eq!(values_and_deadlines(&mut r, &keys), on_primary);
}

#[test]
fn getkeys_returns_exactly_the_keys_of_every_form() {
    let server = Server::start();
    let mut con = server.client();
    for args in [
        &["MSETEX", "10", "a", "1", "b", "2"][..],
        &["MSETEX", "NX", "10", "a", "1", "b", "2"],
        &["MSETEX", "PX", "10", "a", "1", "b", "2"],
        &["MSETEX", "xx", "PXAT", "10", "a", "1", "b", "2"],
        &["MSETEX", "EXAT", "nx", "10", "a", "NX", "b", "EX"],
    ] {
        let mut full = vec!["COMMAND", "GETKEYS"];
        full.extend_from_slice(args);
        let keys: Vec<String> = q(&mut con, &full);
        assert_eq!(keys, ["a", "b"], "{args:?}");
    }
}

/// The getkeys callback parses a call with the command's clock: a relative
/// TTL that overflows it is refused by the command, and declares no keys
/// (it used to be parsed with a clock of 0 there, and declared `k`).
#[test]
fn a_call_the_command_refuses_declares_no_keys() {
    let server = Server::start();
    let mut con = server.client();
    let call = [
        target().command_name(),
        "PX",
        "9223372036854775807",
        "k",
        "v",
    ];
    let text = err(&mut con, &call);
    assert!(text.contains("invalid expire time"), "{text}");
    // The getkeys callback parses the call, and declares no keys where it is refused; key specs
    // (Redis outside cluster mode) declare its keys whatever its time, as SET's and the
    // built-in's do: an ACL key pattern then refuses it before the command does, as it does SET.
    let by_specs = KeysRead::of(&mut con).by_specs();
    let getkeys = |con: &mut Connection, call: &[&str]| {
        let getkeys = [&["COMMAND", "GETKEYS"][..], call].concat();
        if by_specs {
            assert_eq!(q::<Vec<String>, _>(con, &getkeys), ["k"]);
        } else {
            let text = err(con, &getkeys);
            assert!(text.contains("Invalid arguments"), "{text}");
        }
    };
    getkeys(&mut con, &call);
    // One millisecond less than the overflow at the epoch is still refused today.
    let call = [
        target().command_name(),
        "PX",
        "9223372036854775000",
        "k",
        "v",
    ];
    err(&mut con, &call);
    getkeys(&mut con, &call);
    assert_eq!(q::<i64, _>(&mut con, &["DBSIZE"]), 0);
}

#[test]
fn acl_key_rules_apply_to_every_form() {
    let server = Server::start();
    let mut admin = server.client();
    q::<(), _>(
        &mut admin,
        &["ACL", "SETUSER", "app", "on", ">pw", "~app:*", "+@all"],
    );
    let mut app = server.client();
    q::<(), _>(&mut app, &["AUTH", "app", "pw"]);
    for args in [
        &["MSETEX", "NX", "60", "app:a", "1", "other", "2"][..],
        &["MSETEX", "PX", "60", "other", "1", "app:a", "2"],
        &[
            "MSETEX",
            "XX",
            "EXAT",
            "9999999999",
            "app:a",
            "1",
            "other",
            "2",
        ],
    ] {
        let text = err(&mut app, args);
        assert!(text.starts_with("NOPERM"), "{args:?}: {text}");
    }
    assert_eq!(q::<i64, _>(&mut admin, &["DBSIZE"]), 0);
    let one = exec(
        &mut app,
        &["MSETEX", "NX", "PX", "60000", "app:a", "1", "app:b", "2"],
    )
    .unwrap();
    assert_eq!(one, Value::Int(1));
}

#[test]
fn cluster_slot_checks_apply_to_every_form() {
    // Where keys come from key specifications only (Valkey 9 in cluster
    // mode), the module's command filter packs the options first.
    let server = single_node_cluster();
    let mut con = server.client();
    for args in [
        &["MSETEX", "NX", "60", "a", "1", "b", "2"][..],
        &["MSETEX", "PX", "NX", "60", "{t}a", "1", "b", "2"],
    ] {
        assert_eq!(
            err(&mut con, args),
            "CROSSSLOT Keys in request don't hash to the same slot"
        );
    }
    let one = exec(
        &mut con,
        &["MSETEX", "NX", "PX", "60000", "{t}a", "1", "{t}b", "2"],
    )
    .unwrap();
    assert_eq!(one, Value::Int(1));
}

#[test]
fn options_work_in_transactions_and_scripts() {
    let server = Server::start();
    let mut con = server.client();
    let reply: Vec<Value> = redis::pipe()
        .atomic()
        .cmd(target().command_name())
        .arg("NX")
        .arg("PX")
        .arg(60_000)
        .arg("t:a")
        .arg("1")
        .cmd(target().command_name())
        .arg("NX")
        .arg("PX")
        .arg(60_000)
        .arg("t:a")
        .arg("2")
        .query(&mut con)
        .unwrap();
    assert_eq!(reply, [Value::Int(1), Value::Int(0)]);
    let script = format!(
        "return redis.call('{}', 'XX', 'EX', ARGV[1], KEYS[1], ARGV[2])",
        target().command_name()
    );
    let one = exec(&mut con, &["EVAL", &script, "1", "t:a", "60", "3"]).unwrap();
    assert_eq!(one, Value::Int(1));
    assert_eq!(q::<String, _>(&mut con, &["GET", "t:a"]), "3");
}

#[test]
fn multi_key_lock_example_from_the_readme() {
    let server = Server::start();
    let mut a = server.client();
    let mut b = server.client();
    let keys = ["lock:{order:7}:stock", "lock:{order:7}:payment"];
    let acquire = |con: &mut Connection, token: &str| -> Value {
        exec(
            con,
            &[
                "MSETEX", "NX", "PX", "10000", keys[0], token, keys[1], token,
            ],
        )
        .unwrap()
    };
    let release = "local n = 0\n\
        for _, key in ipairs(KEYS) do\n\
          if redis.call('GET', key) == ARGV[1] then n = n + redis.call('DEL', key) end\n\
        end\n\
        return n";
    assert_eq!(acquire(&mut a, "3f2a"), Value::Int(1));
    assert_eq!(acquire(&mut b, "9c41"), Value::Int(0), "held by a");
    let not_ours = exec(&mut b, &["EVAL", release, "2", keys[0], keys[1], "9c41"]).unwrap();
    assert_eq!(not_ours, Value::Int(0), "b must not release a's lock");
    let released = exec(&mut a, &["EVAL", release, "2", keys[0], keys[1], "3f2a"]).unwrap();
    assert_eq!(released, Value::Int(2));
    assert_eq!(acquire(&mut b, "9c41"), Value::Int(1));
    assert!(q::<i64, _>(&mut b, &["PTTL", keys[1]]) > 0);
}
