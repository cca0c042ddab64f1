//! Crashes and restarts: acknowledged writes survive SIGKILL with
//! `appendfsync always`, RDB restarts keep deadlines (and drop what expired
//! meanwhile), replicas converge after partial and full resyncs.

use msetex_harness::*;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One acknowledged call: its keys, values and absolute deadline.
struct Acked {
    keys: Vec<String>,
    value: String,
    deadline_ms: i64,
}

#[test]
fn acknowledged_writes_survive_sigkill() {
    let mut server = ServerConfig::default()
        .line("appendonly yes")
        .line("appendfsync always")
        .start();
    let acked: Arc<Mutex<Vec<Acked>>> = Arc::default();
    let writer = {
        let acked = Arc::clone(&acked);
        let url = server.url();
        std::thread::spawn(move || {
            let Ok(client) = redis::Client::open(url) else {
                return;
            };
            let Ok(mut con) = client.get_connection() else {
                return;
            };
            for call in 0.. {
                let keys: Vec<String> =
                    (0..1 + call % 7).map(|i| format!("d:{call}:{i}")).collect();
                let value = format!("v{call}");
                let deadline_ms = now_ms() + 3_600_000 + call as i64;
                let mut cmd = msetex();
                if call % 2 == 0 {
                    cmd.arg("PXAT").arg(deadline_ms);
                } else {
                    cmd.arg("XX").arg("PXAT").arg(deadline_ms); // XX: nothing exists, writes nothing
                }
                for key in &keys {
                    cmd.arg(key).arg(&value);
                }
                let written = match cmd.query::<Value>(&mut con) {
                    Ok(Value::Okay) => true,
                    Ok(Value::Int(0)) => false,
                    Ok(other) => panic!("unexpected reply {other:?}"),
                    Err(_) => return, // the server is gone
                };
                if written {
                    let entry = Acked {
                        keys,
                        value,
                        deadline_ms,
                    };
                    acked.lock().expect("lock").push(entry);
                }
            }
        })
    };
    std::thread::sleep(Duration::from_millis(scaled(1500, 10_000) as u64));
    server.kill(); // SIGKILL while the writer is mid-stream
    writer.join().expect("writer thread");
    server.restart();
    let mut con = server.client();
    let acked = acked.lock().expect("lock");
    assert!(
        acked.len() > 50,
        "too few writes before the kill: {}",
        acked.len()
    );
    let mut keys = 0;
    for entry in acked.iter() {
        for key in &entry.keys {
            let value: Option<String> = q(&mut con, &["GET", key]);
            assert_eq!(value.as_deref(), Some(entry.value.as_str()), "{key} lost");
            let deadline = deadline_of(&mut con, key);
            assert_eq!(
                deadline,
                Deadline(entry.deadline_ms),
                "{key}: deadline changed"
            );
            keys += 1;
        }
    }
    record_result(
        "SIGKILL with appendfsync always",
        &format!(
            "{} acknowledged calls, {keys} keys: all present with their deadlines",
            acked.len()
        ),
    );
}

#[test]
fn rdb_restart_keeps_deadlines_and_drops_what_expired_meanwhile() {
    let mut server = Server::start();
    let mut con = server.client();
    q::<(), _>(
        &mut con,
        &["MSETEX", "3600", "keep:a", "1", "keep:b", "two"],
    );
    q::<(), _>(
        &mut con,
        &["MSETEX", "PX", "800", "short:a", "1", "short:b", "two"],
    );
    let keep: [&[u8]; 2] = [b"keep:a", b"keep:b"];
    let before = values_and_deadlines(&mut con, &keep);
    q::<(), _>(&mut con, &["SAVE"]);
    server.kill();
    std::thread::sleep(Duration::from_millis(1200)); // the short TTL passes while down
    server.restart();
    let mut con = server.client();
    assert_eq!(values_and_deadlines(&mut con, &keep), before);
    assert_eq!(q::<i64, _>(&mut con, &["EXISTS", "short:a", "short:b"]), 0);
    record_result(
        "RDB restart",
        "SAVE, SIGKILL, restart: long-TTL keys back with the same PEXPIRETIME, keys whose TTL \
         passed while down gone",
    );
}

fn keyspace(con: &mut Connection) -> Vec<(Vec<u8>, Option<Vec<u8>>, Deadline)> {
    snapshot(con)
        .into_iter()
        .map(|(key, _kind, _dump, deadline)| {
            let value: Option<Vec<u8>> = q(con, &[b"GET".as_slice(), &key]);
            (key, value, deadline)
        })
        .collect()
}

#[test]
fn replica_converges_after_partial_and_full_resync() {
    for mode in Replicate::BOTH {
        resyncs(mode);
    }
    record_result(
        "replica resyncs",
        "after a partial and a full resync the replica holds the same keys, values and \
         PEXPIRETIME, in both REPLICATE modes (SET: a replica without the module)",
    );
}

fn resyncs(mode: Replicate) {
    let primary = mode.primary().line("repl-backlog-size 16kb").start();
    let replica = start_replica(&primary, mode.replica());
    let mut p = primary.client();
    let mut r = replica.client();
    let stat = |con: &mut Connection, name: &str| -> i64 {
        info_field(con, "stats", name)
            .and_then(|v| v.parse().ok())
            .unwrap_or(-1)
    };
    q::<(), _>(&mut p, &["MSETEX", "600", "base", "x"]);
    wait_for_replicas(&mut p, 1);

    // Partial: a short cut, a few writes, well within the backlog.
    q::<i64, _>(&mut p, &["CLIENT", "KILL", "TYPE", "replica"]);
    q::<(), _>(
        &mut p,
        &[
            "MSETEX",
            "PX",
            "500000",
            "partial:a",
            "1",
            "partial:b",
            "22",
        ],
    );
    assert!(eventually(Duration::from_secs(20), || stat(
        &mut p,
        "sync_partial_ok"
    ) == 1));
    wait_for_replicas(&mut p, 1);
    assert_eq!(keyspace(&mut r), keyspace(&mut p));

    // Full: keep the replica busy (it would reconnect at once otherwise),
    // cut its link and write far more than the 16 KiB backlog holds.
    let full_before = stat(&mut p, "sync_full");
    let sleeper = {
        let url = replica.url();
        std::thread::spawn(move || {
            let mut con = redis::Client::open(url)
                .and_then(|c| c.get_connection())
                .expect("replica");
            let _: redis::RedisResult<()> = redis::cmd("DEBUG").arg("SLEEP").arg(3).query(&mut con);
        })
    };
    // Wait until the replica is really asleep: it stops answering PING.
    let asleep = eventually(Duration::from_secs(5), || {
        !answers_ping(replica.port(), Duration::from_millis(100))
    });
    assert!(asleep, "the replica never went to sleep");
    q::<i64, _>(&mut p, &["CLIENT", "KILL", "TYPE", "replica"]);
    let big = "z".repeat(1024);
    for call in 0..100 {
        let key = format!("full:{call}");
        q::<(), _>(
            &mut p,
            &["MSETEX", "EX", "900", &key, &big, &format!("{key}:n"), "7"],
        );
    }
    sleeper.join().expect("sleeper");
    assert!(
        eventually(Duration::from_secs(30), || stat(&mut p, "sync_full")
            > full_before),
        "expected a full resync"
    );
    wait_for_replicas(&mut p, 1);
    assert_eq!(keyspace(&mut r), keyspace(&mut p));
}
