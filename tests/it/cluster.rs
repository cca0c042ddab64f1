//! Cluster mode: keys are declared to the server (first=2, last=-1, step=2),
//! so it checks slots before MSETEX runs.

use msetex_harness::*;

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

/// A typed client's numkeys call sent to the TTL form: cluster clients
/// (redis-py) ask COMMAND GETKEYS before they send a call, and get the
/// refusal the call itself would get, not keys read from its numkeys shape.
#[test]
fn getkeys_of_a_numkeys_shaped_call_answers_its_refusal() {
    let server = single_node_cluster();
    let mut con = server.client();
    let name = target().command_name();
    let getkeys = [
        "COMMAND", "GETKEYS", name, "2", "{u}c", "1", "{u}d", "2", "EX", "60",
    ];
    // (Redis 6.2 quotes the name with backticks.)
    let refused =
        error_text(&raw_command(&getkeys).query::<Value>(&mut con).unwrap_err()).replace('`', "'");
    // (Older servers add ", with args beginning with: " to the text.)
    let expected = format!(
        "ERR unknown command '{name} takes the TTL first; this call has the numkeys form: load \
         the module with SYNTAX NUMKEYS'"
    );
    assert!(refused.starts_with(&expected), "{refused}");
    // And the call itself.
    let call = &getkeys[2..];
    let own = error_text(&raw_command(call).query::<Value>(&mut con).unwrap_err());
    assert!(own.contains("takes the TTL first"), "{own}");
}

/// Reads `keys` from a replica in cluster mode (READONLY connection).
fn on_replica(server: &Server, keys: &[&[u8]]) -> Vec<(Option<Vec<u8>>, Deadline)> {
    let mut con = server.client();
    q::<(), _>(&mut con, &["READONLY"]);
    values_and_deadlines(&mut con, keys)
}

#[test]
fn three_primaries_three_replicas_routing() {
    let cluster = Cluster::start(3);
    let (owner, _) = cluster.owner_of("{user:42}");
    let other = cluster
        .topology()
        .into_iter()
        .find(|n| n.is_primary && n.port != owner.port)
        .expect("another primary");
    let mut on_owner = cluster.node(owner.port).client();
    let mut on_other = cluster.node(other.port).client();
    let call = ["MSETEX", "60", "{user:42}:a", "1", "{user:42}:b", "2"];

    assert_eq!(exec(&mut on_owner, &call).unwrap(), Value::Okay);
    let moved = err(&mut on_other, &call);
    assert!(
        moved.starts_with("MOVED ") && moved.ends_with(&format!("127.0.0.1:{}", owner.port)),
        "{moved}"
    );
    // The options form too, by its real keys (on Valkey 9 the module's
    // filter packs the options before the server reads the keys).
    let moved = err(
        &mut on_other,
        &["MSETEX", "NX", "PX", "60000", "{user:42}:c", "1"],
    );
    assert!(
        moved.starts_with("MOVED ") && moved.ends_with(&format!("127.0.0.1:{}", owner.port)),
        "options form: {moved}"
    );
    for con in [&mut on_owner, &mut on_other] {
        let crossslot = err(
            con,
            &["MSETEX", "60", "{user:42}:x", "1", "{user:7}:y", "2"],
        );
        assert_eq!(
            crossslot,
            "CROSSSLOT Keys in request don't hash to the same slot"
        );
    }

    // A cluster-aware client gets every form to the right node.
    let urls: Vec<String> = cluster.nodes.iter().map(Server::url).collect();
    let client = redis::cluster::ClusterClient::new(urls).expect("cluster client");
    let mut con = client.get_connection().expect("cluster connection");
    for key in ["{user:42}:x", "{user:7}:y"] {
        let found: i64 = redis::cmd("EXISTS").arg(key).query(&mut con).unwrap();
        assert_eq!(found, 0, "CROSSSLOT must write nothing: {key}");
    }
    for tag in ["{a}", "{b}", "{c}", "{user:9}", "{session:77}"] {
        let first = format!("{tag}:1");
        let second = format!("{tag}:2");
        let () = msetex()
            .arg(120)
            .arg(&first)
            .arg("x")
            .arg(&second)
            .arg("y")
            .query(&mut con)
            .unwrap_or_else(|e| panic!("{tag}: {}", error_text(&e)));
        {
            let acquired: i64 = msetex()
                .arg("NX")
                .arg("PX")
                .arg(60_000)
                .arg(format!("{tag}:lock"))
                .arg("t")
                .query(&mut con)
                .unwrap_or_else(|e| panic!("{tag}: {}", error_text(&e)));
            assert_eq!(acquired, 1);
        }
        let values: Vec<String> = redis::cmd("MGET")
            .arg(&first)
            .arg(&second)
            .query(&mut con)
            .unwrap();
        assert_eq!(values, ["x", "y"]);
        let ttl: i64 = redis::cmd("TTL").arg(&second).query(&mut con).unwrap();
        assert!((1..=120).contains(&ttl), "{tag}: ttl {ttl}");
    }
    record_result(
        "cluster routing (3 primaries, 3 replicas)",
        "owner answers, other primary MOVED, two slots CROSSSLOT with nothing written, \
         redis-rs cluster client writes every form",
    );
}

#[test]
fn replica_deadlines_survive_a_manual_failover() {
    let cluster = Cluster::start(3);
    let (primary, replica) = cluster.owner_of("{sess}");
    let mut p = cluster.node(primary.port).client();
    let keys: [&[u8]; 4] = [b"{sess}:a", b"{sess}:b", b"{sess}:n", b"{sess}:lock"];
    q::<(), _>(
        &mut p,
        &[
            "MSETEX", "600", "{sess}:a", "alpha", "{sess}:b", "", "{sess}:n", "42",
        ],
    );
    // An absolute deadline.
    let lock = exec(
        &mut p,
        &[
            "MSETEX",
            "NX",
            "PXAT",
            &(now_ms() + 900_000).to_string(),
            "{sess}:lock",
            "t",
        ],
    );
    assert_eq!(lock.ok(), Some(Value::Int(1)));
    wait_for_replicas(&mut p, 1);
    let before = values_and_deadlines(&mut p, &keys);
    assert!(
        before.iter().all(|(v, d)| v.is_some() && d.0 > 0),
        "{before:?}"
    );
    assert_eq!(on_replica(cluster.node(replica.port), &keys), before);

    // The replica takes over; the old primary becomes its replica. A young
    // cluster may not have gossiped enough for the vote yet: the manual
    // failover then times out (5 s) and is asked again.
    cluster.wait_until_everyone_knows_everyone();
    let mut r = cluster.node(replica.port).client();
    let promoted = (0..3).any(|_| {
        q::<(), _>(&mut r, &["CLUSTER", "FAILOVER"]);
        eventually(std::time::Duration::from_secs(10), || {
            info_field(&mut r, "replication", "role").as_deref() == Some("master")
        })
    });
    assert!(
        promoted,
        "failover did not happen:\n{}",
        cluster.node(replica.port).log()
    );
    cluster.wait_until_stable();
    assert_eq!(values_and_deadlines(&mut r, &keys), before);

    // The new primary runs MSETEX (it loads the module too) and replicates
    // to the old one.
    q::<(), _>(&mut r, &["MSETEX", "300", "{sess}:after", "1"]);
    wait_for_replicas(&mut r, 1);
    let after_keys: [&[u8]; 1] = [b"{sess}:after"];
    assert_eq!(
        on_replica(cluster.node(primary.port), &after_keys),
        values_and_deadlines(&mut r, &after_keys)
    );
    record_result(
        "cluster manual failover",
        "replica holds the same values and PEXPIRETIME; after CLUSTER FAILOVER the new primary \
         keeps them and replicates new MSETEX calls to the old one",
    );
}

#[test]
fn valkey_atomic_slot_migration_moves_keys_written_during_it() {
    // Valkey 9 refuses CLUSTER MIGRATESLOTS while a module that did not
    // declare it handles atomic slot migration is loaded. MSETEX declares
    // it: it keeps no data, and its writes reach the importing node like
    // any command's (so its "nobody listens" shortcut is off in cluster
    // mode there).
    if skip_unless(
        target().at_least(None, Some((9, 0))),
        "atomic slot migration (CLUSTER MIGRATESLOTS) appeared in Valkey 9.0",
    ) {
        return;
    }
    let node = || {
        ServerConfig::default()
            .line("cluster-enabled yes")
            .line("cluster-config-file nodes.conf")
            .start()
    };
    let (a, b) = (node(), node());
    let (mut ca, mut cb) = (a.client(), b.client());
    q::<(), _>(&mut ca, &["CLUSTER", "ADDSLOTSRANGE", "0", "8191"]);
    q::<(), _>(&mut cb, &["CLUSTER", "ADDSLOTSRANGE", "8192", "16383"]);
    q::<(), _>(
        &mut ca,
        &["CLUSTER", "MEET", "127.0.0.1", &b.port().to_string()],
    );
    let ok = eventually(std::time::Duration::from_secs(20), || {
        [&mut ca, &mut cb]
            .into_iter()
            .all(|con| q::<String, _>(con, &["CLUSTER", "INFO"]).contains("cluster_state:ok"))
    });
    assert!(ok, "the cluster never became ok");
    let slot: i64 = q(&mut ca, &["CLUSTER", "KEYSLOT", "{m}"]);
    let (source, target_node) = if slot < 8192 { (&a, &b) } else { (&b, &a) };
    let target_id: String = q(&mut target_node.client(), &["CLUSTER", "MYID"]);

    // Keys before, then a writer running through the migration.
    let mut src = source.client();
    q::<(), _>(
        &mut src,
        &["MSETEX", "500", "{m}before:1", "a", "{m}before:2", "7"],
    );
    let url = source.url();
    let writer = std::thread::spawn(move || {
        let mut con = redis::Client::open(url)
            .and_then(|c| c.get_connection())
            .expect("writer");
        let mut written = Vec::new();
        for i in 0..100_000 {
            let key = format!("{{m}}during:{i}");
            let reply: redis::RedisResult<()> = msetex().arg(500).arg(&key).arg(i).query(&mut con);
            match reply {
                Ok(()) => written.push(key),
                Err(_) => break, // MOVED (or TRYAGAIN): the slot has moved
            }
        }
        written
    });
    std::thread::sleep(std::time::Duration::from_millis(50));
    let slot = slot.to_string();
    q::<(), _>(
        &mut src,
        &[
            "CLUSTER",
            "MIGRATESLOTS",
            "SLOTSRANGE",
            &slot,
            &slot,
            "NODE",
            &target_id,
        ],
    );
    let written = writer.join().expect("writer thread");
    let moved = eventually(std::time::Duration::from_secs(30), || {
        let reply = exec(&mut src, &["GET", "{m}before:1"]);
        matches!(&reply, Err(e) if error_text(e).starts_with("MOVED"))
    });
    assert!(moved, "the slot never moved:\n{}", source.log());
    let mut dst = target_node.client();
    assert_eq!(q::<String, _>(&mut dst, &["GET", "{m}before:2"]), "7");
    assert!(deadline_of(&mut dst, "{m}before:1").0 > 0);
    for key in &written {
        assert_eq!(q::<i64, _>(&mut dst, &["EXISTS", key]), 1, "{key} lost");
    }
    record_result(
        "Valkey atomic slot migration",
        &format!(
            "CLUSTER MIGRATESLOTS with the module loaded: {} keys written during the \
             migration all on the new owner, with their deadlines",
            written.len()
        ),
    );
}

/// Where the filter rewrites a call to its keys (Valkey in cluster mode), it holds the values for
/// the command: calls queued in MULTI get theirs, in order, and what a call refused after the
/// filter, a discarded MULTI or a client gone held is released (INFO msetex `held_calls`).
#[test]
fn values_held_for_a_call_reach_it_or_are_released() {
    let server = single_node_cluster();
    let mut con = server.client();
    if KeysRead::of(&mut con) != KeysRead::KeysOnly {
        return;
    }
    let mut admin = server.client();
    let mut held = || info_field(&mut admin, "msetex", "msetex_held_calls");
    let zero = Some("0".to_owned());
    q::<(), _>(&mut con, &["MULTI"]);
    for call in [
        &["MSETEX", "60", "{t}a", "1", "{t}b", "2"][..],
        &["MSETEX", "60", "{t}c", "3"],
    ] {
        assert_eq!(q::<String, _>(&mut con, call), "QUEUED");
    }
    assert_eq!(held(), Some("2".to_owned()));
    let replies: Vec<Value> = q(&mut con, &["EXEC"]);
    assert_eq!(replies, [Value::Okay, Value::Okay]);
    let got: Vec<String> = q(&mut con, &["MGET", "{t}a", "{t}b", "{t}c"]);
    assert_eq!(
        (got, held()),
        (vec!["1".into(), "2".into(), "3".into()], zero.clone())
    );
    assert!(q::<i64, _>(&mut con, &["TTL", "{t}c"]) > 0);

    // Refused after the filter (a key the user may not write): released by its next call.
    q::<(), _>(
        &mut con,
        &["ACL", "SETUSER", "app", "on", ">pw", "~{t}a*", "+@all"],
    );
    let mut app = server.client();
    q::<(), _>(&mut app, &["AUTH", "app", "pw"]);
    assert!(err(&mut app, &["MSETEX", "60", "{t}a", "4", "{t}b", "5"]).starts_with("NOPERM"));
    assert_eq!(held(), Some("1".to_owned()));
    assert_eq!(
        q::<Value, _>(&mut app, &["MSETEX", "60", "{t}a", "6"]),
        Value::Okay
    );
    assert_eq!(held(), zero);
    let got: Vec<String> = q(&mut con, &["MGET", "{t}a", "{t}b"]);
    assert_eq!(got, ["6", "2"]);

    // A discarded MULTI: released when the client disconnects.
    q::<(), _>(&mut app, &["MULTI"]);
    assert_eq!(
        q::<String, _>(&mut app, &["MSETEX", "60", "{t}a", "7"]),
        "QUEUED"
    );
    q::<(), _>(&mut app, &["DISCARD"]);
    assert_eq!(held(), Some("1".to_owned()));
    drop(app);
    let released = eventually(std::time::Duration::from_secs(10), || held() == zero);
    assert!(released, "held_calls: {:?}", held());
    assert_eq!(q::<String, _>(&mut con, &["GET", "{t}a"]), "6");
}
