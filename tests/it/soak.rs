//! Load, extremes and leaks. Sized for the normal suite; `make soak` runs
//! the same tests at full size (MSETEX_SOAK=long) and records the results
//! in docs/RELIABILITY.md.

use msetex_harness::*;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Writes `keys` keys as `prefix:<client>:<n>` through MSETEX calls of
/// 1..=1000 keys (mixed), with mixed TTL forms between 1000 and 2000 s.
/// Returns the number of calls.
fn write_share(con: &mut Connection, client: usize, keys: usize, errors: &AtomicU64) -> u64 {
    let mut rng = Lcg(client as u64 + 1);
    let (mut written, mut calls) = (0, 0);
    while written < keys {
        let batch = (1 + rng.next(1000) as usize).min(keys - written);
        let mut cmd = msetex();
        match rng.next(3) {
            0 => cmd.arg(1000 + rng.next(1000)),
            1 => cmd.arg("PX").arg(1_000_000 + rng.next(1_000_000)),
            _ => cmd
                .arg("EXAT")
                .arg(now_ms() / 1000 + 1000 + rng.next(1000) as i64),
        };
        for n in written..written + batch {
            cmd.arg(format!("load:{client}:{n}"))
                .arg(format!("value-{client}-{n}"));
        }
        if cmd.query::<()>(con).is_err() {
            errors.fetch_add(1, Ordering::Relaxed);
        }
        written += batch;
        calls += 1;
    }
    calls
}

#[test]
fn concurrent_writers_and_readers() {
    let clients = scaled(20, 100);
    let total_keys = scaled(200_000, 1_000_000);
    let per_client = total_keys / clients;
    let server = Server::start();
    let url = server.url();
    let errors = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicU64::new(0));
    let started = Instant::now();

    let readers: Vec<_> = (0..4)
        .map(|reader| {
            let (url, errors, done, reads) = (
                url.clone(),
                Arc::clone(&errors),
                Arc::clone(&done),
                Arc::clone(&reads),
            );
            std::thread::spawn(move || {
                let mut con = redis::Client::open(url)
                    .and_then(|c| c.get_connection())
                    .expect("reader");
                let mut rng = Lcg(1000 + reader);
                while !done.load(Ordering::Relaxed) {
                    // 50 random keys per round trip: GET and TTL of each.
                    let keys: Vec<String> = (0..50)
                        .map(|_| {
                            format!(
                                "load:{}:{}",
                                rng.next(clients as u64),
                                rng.next(per_client as u64)
                            )
                        })
                        .collect();
                    let mut pipe = redis::pipe();
                    for key in &keys {
                        pipe.cmd("GET").arg(key).cmd("TTL").arg(key);
                    }
                    let Ok(replies) = pipe.query::<Vec<Value>>(&mut con) else {
                        errors.fetch_add(1, Ordering::Relaxed);
                        continue;
                    };
                    for pair in replies.chunks(2) {
                        let consistent = match pair {
                            // Not written yet.
                            [Value::Nil, Value::Int(-2)] => true,
                            // Written, with its TTL.
                            [Value::BulkString(v), Value::Int(t)] => {
                                v.starts_with(b"value-") && (0..=2000).contains(t)
                            }
                            // Written between the GET and the TTL.
                            [Value::Nil, Value::Int(t)] => *t > 0,
                            _ => false,
                        };
                        if !consistent {
                            errors.fetch_add(1, Ordering::Relaxed);
                        }
                        reads.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();

    let writers: Vec<_> = (0..clients)
        .map(|client| {
            let (url, errors) = (url.clone(), Arc::clone(&errors));
            std::thread::spawn(move || {
                let mut con = redis::Client::open(url)
                    .and_then(|c| c.get_connection())
                    .expect("writer");
                write_share(&mut con, client, per_client, &errors)
            })
        })
        .collect();
    let calls: u64 = writers.into_iter().map(|w| w.join().expect("writer")).sum();
    let write_time = started.elapsed();
    done.store(true, Ordering::Relaxed);
    readers.into_iter().for_each(|r| r.join().expect("reader"));
    assert_eq!(errors.load(Ordering::Relaxed), 0, "errors seen by clients");

    // Every key readable, with a TTL in range.
    let mut con = server.client();
    assert_eq!(
        q::<i64, _>(&mut con, &["DBSIZE"]),
        (per_client * clients) as i64
    );
    for client in 0..clients {
        for chunk in (0..per_client).collect::<Vec<_>>().chunks(1000) {
            let mut pipe = redis::pipe();
            for n in chunk {
                pipe.cmd("GET").arg(format!("load:{client}:{n}"));
                pipe.cmd("TTL").arg(format!("load:{client}:{n}"));
            }
            let replies: Vec<Value> = pipe.query(&mut con).expect("read back");
            for (n, pair) in chunk.iter().zip(replies.chunks(2)) {
                let expected = format!("value-{client}-{n}").into_bytes();
                assert_eq!(pair[0], Value::BulkString(expected), "load:{client}:{n}");
                let Value::Int(ttl) = pair[1] else {
                    panic!("ttl {:?}", pair[1])
                };
                assert!((900..=2000).contains(&ttl), "load:{client}:{n}: ttl {ttl}");
            }
        }
    }
    record_result(
        "concurrent writers and readers",
        &format!(
            "{clients} writers + 4 readers, {} keys in {calls} calls of 1..1000 keys in {:.1} s, \
             {} reads: 0 errors, every key back with its TTL",
            per_client * clients,
            write_time.as_secs_f64(),
            reads.load(Ordering::Relaxed)
        ),
    );
}

#[test]
fn keys_expire_on_time() {
    let server = Server::start();
    let mut con = server.client();
    let keys = scaled(20_000, 200_000);
    for start in (0..keys).step_by(1000) {
        let mut cmd = msetex();
        cmd.arg("PX").arg(1500);
        for n in start..(start + 1000).min(keys) {
            cmd.arg(format!("short:{n}")).arg(n);
        }
        cmd.query::<()>(&mut con).expect("write");
    }
    for n in (0..keys).step_by(keys / 50) {
        let pttl: i64 = q(&mut con, &["PTTL", &format!("short:{n}")]);
        assert!((1..=1500).contains(&pttl), "short:{n}: pttl {pttl}");
    }
    std::thread::sleep(Duration::from_millis(1600));
    for n in (0..keys).step_by(keys / 50) {
        assert_eq!(
            q::<i64, _>(&mut con, &["EXISTS", &format!("short:{n}")]),
            0,
            "short:{n}"
        );
    }
    // The server's own expiry cycle removes the rest without being asked.
    let gone = eventually(Duration::from_secs(30), || {
        q::<i64, _>(&mut con, &["DBSIZE"]) == 0
    });
    assert!(
        gone,
        "expired keys never collected: DBSIZE {}",
        q::<i64, _>(&mut con, &["DBSIZE"])
    );
    record_result(
        "keys expire on time",
        &format!("{keys} keys with PX 1500: all gone after 1.6 s"),
    );
}

#[test]
fn argument_extremes() {
    let server = Server::start();
    let mut con = server.client();

    // 100,000 keys in one call.
    let mut cmd = msetex();
    cmd.arg(600);
    for n in 0..100_000 {
        cmd.arg(format!("many:{n}")).arg(n % 7);
    }
    cmd.query::<()>(&mut con).expect("100,000 keys");
    assert_eq!(q::<i64, _>(&mut con, &["DBSIZE"]), 100_000);
    assert_eq!(
        q::<String, _>(&mut con, &["GET", "many:99999"]),
        (99_999 % 7).to_string()
    );
    assert!(q::<i64, _>(&mut con, &["TTL", "many:0"]) > 0);

    // A 64 MiB value, twice (the second time in place).
    let huge: Vec<u8> = (0..64 * 1024 * 1024).map(|i| (i % 251) as u8).collect();
    for round in 0..2u8 {
        let mut value = huge.clone();
        value[0] = round;
        let args: Vec<&[u8]> = vec![b"MSETEX", b"600", b"huge", &value];
        assert_eq!(exec(&mut con, &args).unwrap(), Value::Okay);
        assert_eq!(
            q::<i64, _>(&mut con, &["STRLEN", "huge"]),
            huge.len() as i64
        );
        let back: Vec<u8> = q(&mut con, &["GET", "huge"]);
        assert!(back == value, "64 MiB value corrupted (round {round})");
    }

    // NUL and non-UTF-8 bytes in keys and values.
    let args: Vec<&[u8]> = vec![
        b"MSETEX",
        b"600",
        b"\x00",
        b"\xff\xfe",
        b"k\x00k",
        b"\x00",
        b"\xc3\x28",
        b"\x80\x81\x00",
    ];
    assert_eq!(exec(&mut con, &args).unwrap(), Value::Okay);
    for (key, value) in [
        (&b"\x00"[..], &b"\xff\xfe"[..]),
        (b"k\x00k", b"\x00"),
        (b"\xc3\x28", b"\x80\x81\x00"),
    ] {
        let back: Vec<u8> = q(&mut con, &[b"GET".as_slice(), key]);
        assert_eq!(back, value, "{key:?}");
    }
    assert_eq!(q::<String, _>(&mut con, &["PING"]), "PONG");
}

fn used_memory(con: &mut Connection) -> i64 {
    info_field(con, "memory", "used_memory")
        .and_then(|v| v.parse().ok())
        .expect("used_memory")
}

/// One round of the leak test's workload: every path of the command.
fn churn(con: &mut Connection, calls: usize) {
    for start in (0..calls).step_by(500) {
        let mut pipe = redis::pipe();
        for n in start..(start + 500).min(calls) {
            let key = format!("leak:{}", n % 2000);
            match n % 8 {
                0 => pipe
                    .cmd(target().command_name())
                    .arg(600)
                    .arg(&key)
                    .arg("same-len")
                    .ignore(),
                1 => pipe
                    .cmd(target().command_name())
                    .arg(600)
                    .arg(&key)
                    .arg(n)
                    .ignore(), // integer: SET path
                2 => pipe
                    .cmd(target().command_name())
                    .arg("NX")
                    .arg("PX")
                    .arg(60_000)
                    .arg(&key)
                    .arg("x")
                    .ignore(),
                3 => pipe
                    .cmd(target().command_name())
                    .arg("XX")
                    .arg("EXAT")
                    .arg(4_000_000_000u64)
                    .arg(&key)
                    .arg("y")
                    .ignore(),
                4 => pipe.cmd(target().command_name()).arg(0).arg(&key).arg("x"), // error
                5 => pipe
                    .cmd(target().command_name())
                    .arg("NX")
                    .arg("XX")
                    .arg(1)
                    .arg(&key)
                    .arg("x"), // error
                6 => pipe
                    .cmd(target().command_name())
                    .arg(600)
                    .arg(&key)
                    .arg("x".repeat(n % 50))
                    .arg(format!("{key}b"))
                    .arg("")
                    .ignore(),
                _ => pipe
                    .cmd(target().command_name())
                    .arg("PXAT")
                    .arg(1)
                    .arg(&key)
                    .arg("past")
                    .ignore(),
            };
        }
        // Error replies are expected; the pipeline result is not.
        let _: redis::RedisResult<Vec<Value>> = pipe.query(con);
    }
    q::<(), _>(con, &["FLUSHALL"]);
}

#[test]
fn no_memory_leak() {
    let server = Server::start();
    let mut con = server.client();
    // Warm up: the server's own buffers and pools reach their size first,
    // and every command used below has run once (Redis 7 allocates each
    // command's latency histogram on its first call, INFO included).
    churn(&mut con, 20_000);
    used_memory(&mut con);
    std::thread::sleep(Duration::from_millis(200));
    let before = used_memory(&mut con);
    let calls = scaled(200_000, 1_000_000);
    churn(&mut con, calls);
    std::thread::sleep(Duration::from_millis(200));
    let after = used_memory(&mut con);
    let drift = (after - before) as f64 / before as f64;
    assert!(
        drift.abs() <= 0.01,
        "used_memory {before} -> {after} after {calls} calls ({:+.2}%)",
        drift * 100.0
    );
    let calls_seen: i64 = info_field(&mut con, "msetex", "msetex_calls")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    assert!(
        calls_seen >= calls as i64,
        "the calls must have reached the module"
    );
    record_result(
        "no memory leak",
        &format!(
            "{calls} calls over every path (in place, integer, NX, XX, errors, past deadline), \
             then FLUSHALL: used_memory {before} -> {after} B ({:+.3}%)",
            drift * 100.0
        ),
    );
}
