//! Replicas get native commands with absolute deadlines: they end with the
//! same values and the same PEXPIRETIME as the primary, even when they do
//! not load the module.

use msetex_harness::*;
use std::time::Duration;

const KEYS: [&[u8]; 5] = [b"r:str", b"r:int", b"r:bin", b"r:empty", b"r:list"];

fn write_sample(con: &mut Connection, seconds: &str) {
    q::<i64, _>(con, &["RPUSH", "r:list", "x"]);
    let args: Vec<&[u8]> = vec![
        b"MSETEX",
        seconds.as_bytes(),
        b"r:str",
        b"session-data",
        b"r:int",
        b"12345",
        b"r:bin",
        b"\x00\xff\r\n",
        b"r:empty",
        b"",
        b"r:list",
        b"now a string",
    ];
    assert_eq!(exec(con, &args).unwrap(), Value::Okay);
}

/// An integer value of each kind SET stores differently: a shared
/// integer, an `int`, and a string that only looks like a number.
const INTEGER_KEYS: [&[u8]; 3] = [b"r:small", b"r:large", b"r:padded"];

fn write_integers(con: &mut Connection, seconds: &str) {
    q::<(), _>(
        con,
        &[
            "MSETEX",
            seconds,
            "r:small",
            "7",
            "r:large",
            "1234567890123",
            "r:padded",
            "007",
        ],
    );
}

/// The encodings of `keys`, as OBJECT ENCODING reports them.
fn encodings(con: &mut Connection, keys: &[&[u8]]) -> Vec<String> {
    keys.iter()
        .map(|key| q(con, &[b"OBJECT".as_slice(), b"ENCODING", key]))
        .collect()
}

#[test]
fn replicas_end_identical_in_both_modes() {
    for mode in Replicate::BOTH {
        let (primary, replica) = mode.primary_and_replica();
        let mut p = primary.client();
        let mut r = replica.client();
        write_sample(&mut p, "500");
        // Overwrite in place (same length) and with another length.
        q::<(), _>(
            &mut p,
            &["MSETEX", "300", "r:str", "SESSION-DATA", "r:bin", "xy"],
        );
        write_integers(&mut p, "400");
        // A past deadline leaves the key absent, on both sides.
        q::<(), _>(&mut p, &["SET", "r:gone", "old"]);
        let past = (now_ms() - 1000).to_string();
        q::<(), _>(&mut p, &["MSETEX", "PXAT", &past, "r:gone", "new"]);
        wait_for_replicas(&mut p, 1);
        let on_primary = values_and_deadlines(&mut p, &KEYS);
        assert!(
            on_primary.iter().all(|(v, d)| v.is_some() && d.0 > 0),
            "{mode:?}: {on_primary:?}"
        );
        assert_eq!(values_and_deadlines(&mut r, &KEYS), on_primary, "{mode:?}");
        let integers = values_and_deadlines(&mut p, &INTEGER_KEYS);
        assert_eq!(
            values_and_deadlines(&mut r, &INTEGER_KEYS),
            integers,
            "{mode:?}"
        );
        // Integers keep SET's encoding on the replica too.
        assert_eq!(encodings(&mut p, &INTEGER_KEYS), ["int", "int", "embstr"]);
        assert_eq!(
            encodings(&mut r, &INTEGER_KEYS),
            encodings(&mut p, &INTEGER_KEYS),
            "{mode:?}"
        );
        for con in [&mut p, &mut r] {
            assert_eq!(q::<i64, _>(con, &["EXISTS", "r:gone"]), 0, "{mode:?}");
        }
        assert_eq!(q::<String, _>(&mut r, &["TYPE", "r:list"]), "string");
        assert_eq!(
            info_field(&mut r, "replication", "master_link_status").as_deref(),
            Some("up"),
            "{mode:?}: the replica must not have dropped the link"
        );
        assert!(
            !replica.log().contains("CRITICAL"),
            "{mode:?}: the replica refused a replicated command:\n{}",
            replica.log()
        );
    }
}

#[test]
fn a_replica_that_attaches_later_gets_everything() {
    // Before any replica exists nothing receives replicated commands; the
    // module then skips building them. A replica that attaches afterwards
    // (a full sync) must still end identical, as must writes made after it
    // attached.
    for mode in Replicate::BOTH {
        let primary = mode.primary().start();
        let mut p = primary.client();
        assert!(
            eventually(Duration::from_secs(5), || listeners(&mut p) == "none"),
            "the probe should find no replica and no backlog"
        );
        write_sample(&mut p, "500");
        write_integers(&mut p, "500");
        let replica = start_replica(&primary, mode.replica());
        assert_eq!(listeners(&mut p), "possible");
        let mut r = replica.client();
        assert_eq!(
            values_and_deadlines(&mut r, &KEYS),
            values_and_deadlines(&mut p, &KEYS),
            "{mode:?}"
        );
        assert_eq!(
            encodings(&mut r, &INTEGER_KEYS),
            encodings(&mut p, &INTEGER_KEYS),
            "{mode:?}"
        );
        q::<(), _>(
            &mut p,
            &["MSETEX", "77", "r:after", "1", "r:str", "changed!!!!!"],
        );
        wait_for_replicas(&mut p, 1);
        let keys: [&[u8]; 2] = [b"r:after", b"r:str"];
        let on_primary = values_and_deadlines(&mut p, &keys);
        assert_eq!(values_and_deadlines(&mut r, &keys), on_primary, "{mode:?}");
    }
}

fn listeners(con: &mut Connection) -> String {
    info_field(con, "msetex", "msetex_replication_listeners").unwrap_or_default()
}

#[test]
fn a_replica_catches_up_by_partial_resync() {
    for mode in Replicate::BOTH {
        let (primary, replica) = mode.primary_and_replica();
        let mut p = primary.client();
        let mut r = replica.client();
        write_sample(&mut p, "500");
        wait_for_replicas(&mut p, 1);
        // Cut the link; write while the replica is away; let it reconnect.
        q::<i64, _>(&mut p, &["CLIENT", "KILL", "TYPE", "replica"]);
        q::<(), _>(
            &mut p,
            &["MSETEX", "400", "r:str", "while-away", "r:away", "1"],
        );
        assert!(eventually(Duration::from_secs(20), || {
            q::<i64, _>(&mut r, &["EXISTS", "r:away"]) == 1
        }));
        let partial = info_field(&mut p, "stats", "sync_partial_ok").unwrap_or_default();
        assert_eq!(partial, "1", "{mode:?}: expected a partial resync");
        let keys: [&[u8]; 2] = [b"r:str", b"r:away"];
        assert_eq!(
            values_and_deadlines(&mut r, &keys),
            values_and_deadlines(&mut p, &keys),
            "{mode:?}"
        );
    }
}

#[test]
fn a_call_that_writes_nothing_replicates_nothing() {
    for mode in Replicate::BOTH {
        let (primary, _replica) = mode.primary_and_replica();
        let mut p = primary.client();
        q::<(), _>(&mut p, &["MSETEX", "100", "a", "1", "b", "2"]);
        wait_for_replicas(&mut p, 1);
        let offset = |con: &mut Connection| info_field(con, "replication", "master_repl_offset");
        let before = offset(&mut p);
        let calls: [&[&str]; 3] = [
            &["MSETEX", "NX", "100", "a", "1", "new", "2"],
            &["MSETEX", "XX", "EX", "100", "a", "1", "missing", "2"],
            &["MSETEX", "NX", "PXAT", "1", "b", "3"],
        ];
        for call in calls {
            assert_eq!(q::<i64, _>(&mut p, call), 0, "{mode:?}: {call:?}");
        }
        assert_eq!(offset(&mut p), before, "{mode:?}");
    }
}

#[test]
fn each_key_counts_one_change_for_save_points() {
    // `save <seconds> <changes>` counts changed keys, as MSET does: every
    // path (new key, in place, integer, other length), in both modes.
    // With a listener, each RedisModule_Replicate counts one more change
    // and MSET counts its own keys: in SET mode a key MSET wrote counts
    // twice, in MSETEX mode a call whose keys all went through MSET counts
    // one extra (README, "Replication and the AOF").
    for mode in Replicate::BOTH {
        for with_replica in [false, true] {
            let primary = mode.primary().start();
            let replica = with_replica.then(|| start_replica(&primary, mode.replica()));
            let mut p = primary.client();
            if replica.is_none() {
                let quiet = eventually(Duration::from_secs(5), || listeners(&mut p) == "none");
                assert!(quiet, "the probe should find no replica and no backlog");
            }
            q::<(), _>(&mut p, &["SET", "same", "xxxx"]);
            q::<(), _>(&mut p, &["SET", "other", "x"]);
            let changes = |con: &mut Connection| -> i64 {
                info_field(con, "persistence", "rdb_changes_since_last_save")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(-1)
            };
            let calls: [&[&str]; 4] = [
                &[
                    "MSETEX", "100", "new", "v", "same", "yyyy", "int", "42", "other", "xyz",
                ],
                &["MSETEX", "100", "i1", "1", "i2", "2", "i3", "3"],
                &["MSETEX", "100", "one", "v"],
                &["MSETEX", "100", "twice", "a", "twice", "b"],
            ];
            for call in calls {
                let before = changes(&mut p);
                q::<(), _>(&mut p, call);
                let keys = (call.len() as i64 - 2) / 2;
                let counted = changes(&mut p) - before;
                let most = match (with_replica, mode) {
                    (false, _) => keys,
                    (true, Replicate::Set) => 2 * keys,
                    (true, Replicate::Msetex) => keys + 1,
                };
                assert!(
                    (keys..=most).contains(&counted),
                    "{mode:?}, replica {with_replica}: {call:?} counted {counted}"
                );
            }
        }
    }
}

#[test]
fn transactions_and_scripts_replicate_whole() {
    for mode in Replicate::BOTH {
        let (primary, replica) = mode.primary_and_replica();
        let mut p = primary.client();
        let name = target().command_name();
        let mut pipe = redis::pipe();
        pipe.atomic()
            .add_command(command(&["MSETEX", "100", "t:a", "1", "t:b", "two"]))
            .cmd("SET")
            .arg("t:c")
            .arg("3")
            .add_command(command(&["MSETEX", "PX", "200000", "t:a", "one"]));
        pipe.query::<()>(&mut p).unwrap();
        let script = format!(
            "redis.call('{name}', 'EX', 300, KEYS[1], ARGV[1], KEYS[2], ARGV[2]) \
             return redis.call('{name}', 'NX', 300, KEYS[3], ARGV[3])"
        );
        let written: i64 = redis::cmd("EVAL")
            .arg(&script)
            .arg(3)
            .arg(&["s:a", "s:b", "t:c"])
            .arg(&["alpha", "12", "x"])
            .query(&mut p)
            .unwrap();
        assert_eq!(written, 0);
        wait_for_replicas(&mut p, 1);
        let keys: [&[u8]; 5] = [b"t:a", b"t:b", b"t:c", b"s:a", b"s:b"];
        let on_primary = values_and_deadlines(&mut p, &keys);
        assert_eq!(on_primary[0].0.as_deref(), Some(b"one".as_slice()));
        assert_eq!(
            values_and_deadlines(&mut replica.client(), &keys),
            on_primary,
            "{mode:?}"
        );
    }
}

#[test]
fn replicate_msetex_needs_the_module_on_replicas() {
    // REPLICATE MSETEX sends the module's own `<name>.apply`. The module
    // says so when it loads; a replica without it cannot run what it
    // receives: it keeps the link but misses those writes (the server logs
    // each refusal). Where the server runs MSETEX natively, the module
    // sends the built-in's own command, which a replica runs without it.
    let primary = Replicate::Msetex.primary().start();
    let native = target().replicates_natively(false);
    let logged = if native {
        "one native MSETEX command".to_owned()
    } else {
        format!("as one '{}.apply' command", target().command_name())
    };
    assert!(primary.log().contains(&logged), "{}", primary.log());
    let replica = start_replica(&primary, ServerConfig::without_module());
    let mut p = primary.client();
    q::<(), _>(&mut p, &["MSETEX", "100", "lost", "v"]);
    q::<(), _>(&mut p, &["SET", "kept", "v"]);
    wait_for_replicas(&mut p, 1);
    let mut r = replica.client();
    assert_eq!(q::<i64, _>(&mut r, &["EXISTS", "kept"]), 1);
    assert_eq!(
        q::<i64, _>(&mut r, &["EXISTS", "lost"]),
        i64::from(native),
        "a replica without the module runs only the native form"
    );
    // A full sync copies data, not commands: the next one heals it.
    drop(replica);
    let replica = start_replica(&primary, ServerConfig::without_module());
    assert_eq!(q::<i64, _>(&mut replica.client(), &["EXISTS", "lost"]), 1);
}

#[test]
fn read_only_replica_refuses() {
    let primary = Server::start();
    let replica = start_replica(&primary, ServerConfig::default());
    let mut r = replica.client();
    assert_eq!(
        err(&mut r, &["MSETEX", "60", "k", "v"]),
        "READONLY You can't write against a read only replica."
    );
    assert_eq!(q::<i64, _>(&mut r, &["DBSIZE"]), 0);
}

#[test]
fn a_key_written_twice_in_one_call_replicates_in_order() {
    // Redis 6.2 sent a nested RedisModule_Call's own propagation at once
    // and RedisModule_Replicate's at the end, so `k abc k 123` reached the
    // replica as `k 123` then `k abc`. Every key's change is now queued.
    let primary = Server::start();
    let replica = start_replica(&primary, ServerConfig::without_module());
    let mut p = primary.client();
    q::<(), _>(&mut p, &["MSETEX", "100", "k", "abc", "k", "123"]);
    q::<(), _>(&mut p, &["MSETEX", "100", "j", "123", "j", "abc"]);
    q::<(), _>(
        &mut p,
        &["MSETEX", "100", "m", "1", "m", "two", "m", "3", "m", "four"],
    );
    wait_for_replicas(&mut p, 1);
    let keys: [&[u8]; 3] = [b"k", b"j", b"m"];
    let on_primary = values_and_deadlines(&mut p, &keys);
    let values: Vec<Option<Vec<u8>>> = on_primary.iter().map(|(v, _)| v.clone()).collect();
    assert_eq!(
        values,
        [
            Some(b"123".to_vec()),
            Some(b"abc".to_vec()),
            Some(b"four".to_vec())
        ]
    );
    let mut r = replica.client();
    assert_eq!(values_and_deadlines(&mut r, &keys), on_primary);
}

/// The bytes of `SET key value PXAT deadline` for every pair, wrapped in
/// MULTI/EXEC when there are several: what REPLICATE SET puts on the wire;
/// where the server runs MSETEX natively, one `MSETEX n key value ... PXAT
/// deadline` instead.
fn set_commands(pairs: &[(String, String)], deadline: i64) -> Vec<u8> {
    let deadline = deadline.to_string();
    if target().replicates_natively(false) {
        let n = pairs.len().to_string();
        let mut call = vec!["MSETEX", n.as_str()];
        for (key, value) in pairs {
            call.extend([key.as_str(), value.as_str()]);
        }
        call.extend(["PXAT", &deadline]);
        return resp(&call);
    }
    let mut out = Vec::new();
    if pairs.len() > 1 {
        out.extend(resp(&["MULTI"]));
    }
    for (key, value) in pairs {
        out.extend(resp(&["SET", key, value, "PXAT", &deadline]));
    }
    if pairs.len() > 1 {
        out.extend(resp(&["EXEC"]));
    }
    out
}

#[test]
fn a_replica_attaching_gets_only_set_commands_and_only_once_per_key() {
    // Between a replica's SYNC (which creates the replication backlog) and
    // the module's next probe, calls used to reach the backlog as the
    // verbatim MSETEX with its relative TTL, once per key: a 3-key call
    // three times, a 5,000-key call 5,000 times (gigabytes, seconds of
    // stall). The module now sees the SYNC itself. (Where the server runs
    // MSETEX natively, each call is one native MSETEX instead.)
    let primary = ServerConfig::default()
        .line("repl-diskless-sync yes")
        .line("repl-diskless-sync-delay 30")
        .line("repl-ping-replica-period 3600")
        // One cron tick per second: a probe can only notice the new replica
        // that late, which leaves the window wide open.
        .line("hz 1")
        .start();
    let mut p = primary.client();
    let quiet = eventually(Duration::from_secs(5), || listeners(&mut p) == "none");
    assert!(quiet, "the probe should find no replica and no backlog");

    // A replica's handshake, then at once (long before the next probe, and
    // the fork the sync delay postpones) one small call and one big call.
    let _replica = FakeReplica::connect(&primary, "PSYNC ? -1");
    let small: Vec<(String, String)> = (0..3)
        .map(|i| (format!("s:{i}"), format!("v{i}")))
        .collect();
    let big: Vec<(String, String)> = (0..5000)
        .map(|i| (format!("b:{i:05}"), format!("value-{i:05}")))
        .collect();
    let started = eventually(Duration::from_secs(5), || {
        info_field(&mut p, "replication", "repl_backlog_active").as_deref() == Some("1")
    });
    assert!(started, "the fake replica's PSYNC did not create a backlog");
    let offset = |con: &mut Connection| -> i64 {
        info_field(con, "replication", "master_repl_offset")
            .and_then(|v| v.parse().ok())
            .unwrap_or(-1)
    };
    let mut sent = Vec::new();
    for pairs in [&small, &big] {
        let before = offset(&mut p);
        let mut args = vec!["MSETEX".to_owned(), "100".to_owned()];
        for (k, v) in pairs {
            args.extend([k.clone(), v.clone()]);
        }
        q::<(), _>(&mut p, &args);
        let deadline = deadline_of(&mut p, &pairs[0].0).0;
        let expected = set_commands(pairs, deadline);
        let grown = (offset(&mut p) - before) as usize;
        // The stream may also carry the SELECT that opens it.
        let select = resp(&["SELECT", "0"]).len();
        assert!(
            grown == expected.len() || grown == expected.len() + select,
            "a {}-key call put {grown} bytes in the backlog, not {}",
            pairs.len(),
            expected.len()
        );
        sent.push(expected);
    }

    // And those bytes are exactly the SET commands: read the backlog from
    // its first byte with a partial resync.
    let replid = info_field(&mut p, "replication", "master_replid").unwrap_or_default();
    let first: i64 = info_field(&mut p, "replication", "repl_backlog_first_byte_offset")
        .and_then(|v| v.parse().ok())
        .unwrap_or(-1);
    let end = offset(&mut p);
    let mut reader = FakeReplica::connect(&primary, &format!("PSYNC {replid} {first}"));
    let reply = reader.line();
    assert!(reply.starts_with("+CONTINUE"), "{reply}");
    let backlog = reader.bytes((end - first + 1) as usize);
    let text = String::from_utf8_lossy(&backlog);
    assert!(!text.contains(target().command_name()), "{text:.300}");
    // The SELECT that opens the stream aside (older servers send it before
    // MULTI, newer ones inside), the backlog is exactly the SET commands.
    let select = resp(&["SELECT", "0"]);
    let mut backlog = backlog;
    if let Some(at) = backlog.windows(select.len()).position(|w| w == select) {
        backlog.drain(at..at + select.len());
    }
    let expected: Vec<u8> = sent.concat();
    assert!(
        backlog == expected,
        "the backlog is not exactly the SET commands: {} bytes, expected {}: {:?}",
        backlog.len(),
        expected.len(),
        String::from_utf8_lossy(&backlog[..300.min(backlog.len())])
    );
}

#[test]
fn a_replica_with_the_module_loads_asynchronously_with_swapdb() {
    // `repl-diskless-load swapdb` loads the new data set while serving the
    // old one, but only when every module declares it can handle that.
    let primary = ServerConfig::default()
        .line("repl-diskless-sync yes")
        .start();
    let mut p = primary.client();
    q::<(), _>(&mut p, &["MSETEX", "500", "a", "1", "b", "2"]);
    let replica = start_replica(
        &primary,
        ServerConfig::default().line("repl-diskless-load swapdb"),
    );
    let log = replica.log();
    assert!(
        !log.contains("Skipping diskless-load"),
        "the replica refused diskless load:\n{log}"
    );
    assert!(
        log.contains("receiving streamed RDB"),
        "the replica did not load from the stream:\n{log}"
    );
    let mut r = replica.client();
    assert_eq!(
        values_and_deadlines(&mut r, &[b"a", b"b"]),
        values_and_deadlines(&mut p, &[b"a", b"b"])
    );
}

#[test]
fn the_numkeys_form_replicates_exactly_in_both_modes() {
    let name = target().numkeys_name();
    for mode in Replicate::BOTH {
        let config = ServerConfig::numkeys().replicate(mode);
        let replica_config = match mode {
            Replicate::Set => ServerConfig::without_module(),
            Replicate::Msetex => config.clone(),
        };
        let primary = config.start();
        let replica = start_replica(&primary, replica_config);
        let mut p = primary.client();
        // An absolute deadline: Redis 6.2 replicates `SET ... EX` as it is,
        // and the replica would compute its own deadline from its clock.
        let kept_until = (now_ms() + 900_000).to_string();
        q::<(), _>(&mut p, &["SET", "n:kept", "old", "PXAT", &kept_until]);
        q::<(), _>(&mut p, &["SET", "n:gone", "old"]);
        let past = (now_ms() - 1000).to_string();
        let calls: [&[&str]; 5] = [
            &[name, "2", "n:a", "1", "n:b", "two", "EX", "100"],
            &[name, "1", "n:kept", "new", "KEEPTTL"],
            &[name, "2", "n:plain", "p", "n:int", "12345"],
            &[name, "1", "n:gone", "x", "PXAT", &past],
            &[name, "1", "n:a", "never", "NX", "EX", "5"],
        ];
        for call in calls {
            let _: Value = raw_command(call).query(&mut p).unwrap();
        }
        wait_for_replicas(&mut p, 1);
        let keys: [&[u8]; 6] = [b"n:a", b"n:b", b"n:kept", b"n:plain", b"n:int", b"n:gone"];
        let on_primary = values_and_deadlines(&mut p, &keys);
        assert_eq!(on_primary[0].0.as_deref(), Some(b"1".as_slice()));
        assert!(on_primary[2].1 .0 > 0 && on_primary[3].1 .0 == -1);
        let mut r = replica.client();
        assert_eq!(values_and_deadlines(&mut r, &keys), on_primary, "{mode:?}");
        assert_eq!(encodings(&mut r, &[b"n:int"]), ["int"], "{mode:?}");
    }
}

#[test]
fn the_replicated_form_is_for_replicas_and_the_aof_only() {
    // `<name>.apply` is how REPLICATE MSETEX replicates a call where the
    // built-in's form cannot serve (replicas and AOF loading, loaded the
    // same way, run it). A client gets an error and nothing is written; its
    // keys are where its key specification says, with no callback to ask.
    // It is registered only where it is sent.
    let name = target().command_name();
    let apply = format!("{name}.apply");
    let call = [apply.as_str(), "1900000000000", "k", "v"];
    let unknown = |con: &mut Connection| {
        let refused = error_text(&raw_command(&call).query::<Value>(con).unwrap_err());
        assert!(refused.starts_with("ERR unknown command"), "{refused}");
    };
    unknown(&mut Server::start().client());
    let server = Replicate::Msetex.primary().start();
    let mut con = server.client();
    if target().replicates_natively(false) {
        unknown(&mut con);
        return;
    }
    assert_eq!(
        error_text(&raw_command(&call).query::<Value>(&mut con).unwrap_err()),
        format!(
            "ERR {apply} only applies what MSETEX replicated (on replicas, while the AOF \
             loads, on the node a slot migrates to): call {name}"
        )
    );
    assert_eq!(q::<i64, _>(&mut con, &["DBSIZE"]), 0);
    if target().is_7_0_or_later() {
        let getkeys = [
            "COMMAND",
            "GETKEYS",
            &apply,
            "1900000000000",
            "a",
            "1",
            "b",
            "2",
        ];
        assert_eq!(
            raw_command(&getkeys)
                .query::<Vec<String>>(&mut con)
                .unwrap(),
            ["a", "b"]
        );
    }
}
