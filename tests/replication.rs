//! Replicas get native commands with absolute deadlines: they end with the
//! same values and the same PEXPIRETIME as the primary, even when they do
//! not load the module.

mod common;

use common::*;
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

#[test]
fn replica_without_the_module_gets_the_same_deadlines() {
    let primary = Server::start();
    let replica = start_replica(&primary, ServerConfig::without_module());
    let mut p = primary.client();
    let mut r = replica.client();
    write_sample(&mut p, "500");
    // Overwrite in place (same length) and with another length.
    q::<(), _>(
        &mut p,
        &["MSETEX", "300", "r:str", "SESSION-DATA", "r:bin", "xy"],
    );
    wait_for_replicas(&mut p, 1);
    let on_primary = values_and_deadlines(&mut p, &KEYS);
    assert!(
        on_primary.iter().all(|(v, d)| v.is_some() && d.0 > 0),
        "{on_primary:?}"
    );
    assert_eq!(values_and_deadlines(&mut r, &KEYS), on_primary);
    let kind: String = q(&mut r, &["TYPE", "r:list"]);
    assert_eq!(kind, "string");
    assert_eq!(
        info_field(&mut r, "replication", "master_link_status").as_deref(),
        Some("up"),
        "the replica must not have dropped the link over an unknown command"
    );
}

#[test]
fn a_replica_that_attaches_later_gets_everything() {
    // Before any replica exists nothing receives replicated commands; the
    // module then skips building them. A replica that attaches afterwards
    // must still end identical, as must writes made after it attached.
    let primary = Server::start();
    let mut p = primary.client();
    assert!(
        eventually(Duration::from_secs(5), || listeners(&mut p) == "none"),
        "the probe should find no replica and no backlog"
    );
    write_sample(&mut p, "500");
    let replica = start_replica(&primary, ServerConfig::without_module());
    assert_eq!(listeners(&mut p), "possible");
    let mut r = replica.client();
    assert_eq!(
        values_and_deadlines(&mut r, &KEYS),
        values_and_deadlines(&mut p, &KEYS)
    );
    q::<(), _>(
        &mut p,
        &["MSETEX", "77", "r:after", "1", "r:str", "changed!!!!!"],
    );
    wait_for_replicas(&mut p, 1);
    let keys: [&[u8]; 2] = [b"r:after", b"r:str"];
    let on_primary = values_and_deadlines(&mut p, &keys);
    assert_eq!(values_and_deadlines(&mut r, &keys), on_primary);
}

fn listeners(con: &mut Connection) -> String {
    info_field(con, "msetex", "msetex_replication_listeners").unwrap_or_default()
}

#[test]
fn a_replica_catches_up_by_partial_resync() {
    let primary = Server::start();
    let replica = start_replica(&primary, ServerConfig::without_module());
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
    assert_eq!(partial, "1", "expected a partial resync");
    let keys: [&[u8]; 2] = [b"r:str", b"r:away"];
    assert_eq!(
        values_and_deadlines(&mut r, &keys),
        values_and_deadlines(&mut p, &keys)
    );
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

#[test]
fn a_renamed_set_refuses_the_load_in_set_mode_and_works_in_msetex_mode() {
    // RedisModule_Replicate(ctx, "SET", ...) fails once SET is renamed, and
    // used to fail after the key was written: the primary held it, its
    // replicas and AOF did not. Now the load refuses, before any write.
    let mut args = target().default_module_args();
    let log = ServerConfig::default()
        .line("rename-command SET myset")
        .start_expecting_failure();
    assert!(
        log.contains("<msetex> not loaded: MSETEX needs the server's SET command")
            && log.contains("REPLICATE MSETEX does not replicate through SET"),
        "{log}"
    );
    let log = ServerConfig::default()
        .line("rename-command MSET mymset")
        .start_expecting_failure();
    assert!(
        log.contains("<msetex> not loaded: MSETEX needs the server's MSET command"),
        "{log}"
    );
    // REPLICATE MSETEX sends MSETEX itself: replicas need the module.
    args.extend(["REPLICATE".to_owned(), "MSETEX".to_owned()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let config = || {
        ServerConfig::default()
            .module_args(&args)
            .line("rename-command SET myset")
    };
    let primary = config().line("appendonly yes").start();
    let replica = start_replica(&primary, config());
    let mut p = primary.client();
    q::<(), _>(&mut p, &["MSETEX", "100", "d", "x", "e", "7"]);
    wait_for_replicas(&mut p, 1);
    let keys: [&[u8]; 2] = [b"d", b"e"];
    let on_primary = values_and_deadlines(&mut p, &keys);
    assert!(on_primary.iter().all(|(v, d)| v.is_some() && d.0 > 0));
    assert_eq!(
        values_and_deadlines(&mut replica.client(), &keys),
        on_primary
    );
}

/// The bytes of `SET key value PXAT deadline` for every pair, wrapped in
/// MULTI/EXEC when there are several: what REPLICATE SET puts on the wire.
fn set_commands(pairs: &[(String, String)], deadline: i64) -> Vec<u8> {
    let deadline = deadline.to_string();
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
    // stall). The module now sees the SYNC itself.
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
    assert!(!text.to_ascii_lowercase().contains("msetex"), "{text:.300}");
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
