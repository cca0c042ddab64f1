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
