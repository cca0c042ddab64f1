//! Cluster mode: keys are declared to the server (first=2, last=-1, step=2),
//! so it checks slots before MSETEX runs.

mod common;

use common::*;
use std::time::Duration;

/// A one-node cluster owning every slot.
fn single_node_cluster() -> Server {
    let server = ServerConfig::default()
        .line("cluster-enabled yes")
        .line("cluster-config-file nodes.conf")
        .start();
    let mut con = server.client();
    q::<(), _>(&mut con, &["CLUSTER", "ADDSLOTSRANGE", "0", "16383"]);
    let ok = eventually(Duration::from_secs(20), || {
        info_field(&mut con, "cluster", "cluster_enabled").as_deref() == Some("1")
            && q::<String, _>(&mut con, &["CLUSTER", "INFO"]).contains("cluster_state:ok")
    });
    assert!(ok, "cluster never became ok:\n{}", server.log());
    server
}

#[test]
fn keys_in_one_slot_are_written() {
    let server = single_node_cluster();
    let mut con = server.client();
    let reply = exec(
        &mut con,
        &["MSETEX", "60", "{user:42}:a", "1", "{user:42}:b", "2"],
    )
    .unwrap();
    assert_eq!(reply, Value::Okay);
    let got: Vec<String> = q(&mut con, &["MGET", "{user:42}:a", "{user:42}:b"]);
    assert_eq!(got, ["1", "2"]);
}

#[test]
fn keys_in_two_slots_get_crossslot_and_nothing_is_written() {
    let server = single_node_cluster();
    let mut con = server.client();
    for args in [
        &["MSETEX", "60", "a", "1", "b", "2"][..],
        &["MSETEX", "60", "{x}1", "1", "{x}2", "2", "{y}3", "3"],
    ] {
        assert_eq!(
            err(&mut con, args),
            "CROSSSLOT Keys in request don't hash to the same slot"
        );
    }
    assert_eq!(q::<i64, _>(&mut con, &["DBSIZE"]), 0);
}

#[test]
fn getkeys_lists_every_key_for_clients_that_route() {
    let server = single_node_cluster();
    let mut con = server.client();
    let keys: Vec<String> = q(
        &mut con,
        &[
            "COMMAND", "GETKEYS", "MSETEX", "5", "{t}a", "x", "{t}b", "y", "{t}c", "z",
        ],
    );
    assert_eq!(keys, ["{t}a", "{t}b", "{t}c"]);
}
