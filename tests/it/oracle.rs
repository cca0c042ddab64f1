//! A mixed workload against an oracle: MSETEX on one server, the same
//! changes as plain SET commands on another. The two keyspaces agree, and so
//! does everything that copies the data: a replica (without the module in
//! REPLICATE SET mode, with it in REPLICATE MSETEX mode), DEBUG RELOAD,
//! BGREWRITEAOF and a restart from the AOF, and (SET mode) that AOF loaded
//! on a server without the module. 5,000 key writes in `make test`, 50,000
//! under `make soak`.

use msetex_harness::*;

const POOL: usize = 1000;

fn key(rng: &mut Lcg) -> String {
    format!("o:{}", rng.below(POOL))
}

/// Values that take every write path: shared and plain integers, numbers
/// that are not canonical, short, embedded and long strings, binary, empty.
fn value(rng: &mut Lcg) -> Vec<u8> {
    match rng.below(9) {
        0 => rng.below(100).to_string().into_bytes(),
        1 => (1_000_000 + rng.below(1_000_000)).to_string().into_bytes(),
        2 => b"007".to_vec(),
        3 => b"short".to_vec(),
        4 => vec![b'a' + rng.below(26) as u8; 32],
        5 => vec![b'm'; 100],
        6 => vec![b'z'; 300 + rng.below(2)],
        7 => vec![0, 255, b'\r', b'\n'],
        _ => Vec::new(),
    }
}

/// Applies one random step to both servers; returns the keys MSETEX wrote.
fn step(rng: &mut Lcg, ours: &mut Connection, oracle: &mut Connection) -> usize {
    let k = key(rng);
    let both = |con: &mut Connection, args: &[&[u8]]| {
        let _ = exec(con, args);
    };
    match rng.below(20) {
        0 | 1 => {
            both(ours, &[b"RPUSH", k.as_bytes(), b"x"]);
            both(oracle, &[b"RPUSH", k.as_bytes(), b"x"]);
            0
        }
        2 => {
            both(ours, &[b"DEL", k.as_bytes()]);
            both(oracle, &[b"DEL", k.as_bytes()]);
            0
        }
        3 => {
            both(ours, &[b"APPEND", k.as_bytes(), b"abc"]);
            both(oracle, &[b"APPEND", k.as_bytes(), b"abc"]);
            0
        }
        4 => {
            let v = value(rng);
            both(ours, &[b"SET", k.as_bytes(), &v]);
            both(oracle, &[b"SET", k.as_bytes(), &v]);
            0
        }
        _ => msetex_step(rng, ours, oracle),
    }
}

fn msetex_step(rng: &mut Lcg, ours: &mut Connection, oracle: &mut Connection) -> usize {
    let pairs: Vec<(String, Vec<u8>)> = (0..1 + rng.below(20))
        .map(|_| (key(rng), value(rng)))
        .collect();
    let condition: &[u8] = match rng.below(10) {
        0 => b"NX",
        1 => b"XX",
        _ => b"",
    };
    let now = now_ms();
    let (unit, time): (&[u8], String) = match rng.below(50) {
        0 => (b"PXAT", (now - 5000).to_string()),
        n if n < 15 => (b"EX", (1000 + rng.below(1000)).to_string()),
        n if n < 30 => (b"PX", (2_000_000 + rng.below(1000)).to_string()),
        n if n < 40 => (b"EXAT", (now / 1000 + 3000).to_string()),
        _ => (b"PXAT", (now + 4_000_000).to_string()),
    };
    // What NX / XX will decide, from the oracle's keyspace.
    let exists = |con: &mut Connection, key: &str| q::<i64, _>(con, &["EXISTS", key]) == 1;
    let writes = match condition {
        b"NX" => pairs.iter().all(|(k, _)| !exists(oracle, k)),
        b"XX" => pairs.iter().all(|(k, _)| exists(oracle, k)),
        _ => true,
    };
    let mut call: Vec<&[u8]> = vec![b"MSETEX"];
    if !condition.is_empty() {
        call.push(condition);
    }
    call.extend([unit, time.as_bytes()]);
    for (k, v) in &pairs {
        call.extend([k.as_bytes(), v.as_slice()]);
    }
    let reply = exec(ours, &call).expect("MSETEX");
    let expected = match (condition.is_empty(), writes) {
        (true, _) => Value::Okay,
        (false, true) => Value::Int(1),
        (false, false) => Value::Int(0),
    };
    assert_eq!(reply, expected, "{call:?}");
    if !writes {
        return 0;
    }
    // The oracle: one SET per pair, with the deadline MSETEX computed.
    let deadline = match unit {
        b"PXAT" => time.clone(),
        b"EXAT" => (time.parse::<i64>().unwrap_or(0) * 1000).to_string(),
        _ => {
            let (last, _) = &pairs[pairs.len() - 1];
            deadline_of(ours, last).0.to_string()
        }
    };
    for (k, v) in &pairs {
        let _: Value = exec(
            oracle,
            &[b"SET", k.as_bytes(), v, b"PXAT", deadline.as_bytes()],
        )
        .expect("SET");
    }
    pairs.len()
}

/// Every key with its type, value (DUMP) and deadline.
fn state(con: &mut Connection) -> Vec<KeyState> {
    snapshot(con)
}

fn assert_same(what: &str, mode: Replicate, a: &[KeyState], b: &[KeyState]) {
    assert_eq!(a.len(), b.len(), "{mode:?}, {what}: key count");
    for (x, y) in a.iter().zip(b) {
        assert_eq!(
            x,
            y,
            "{mode:?}, {what}: key {}",
            String::from_utf8_lossy(&x.0)
        );
    }
}

#[test]
fn everything_that_copies_the_data_agrees_with_set() {
    let target_keys = scaled(5_000, 50_000);
    for mode in Replicate::BOTH {
        let config = mode
            .primary()
            .line("appendonly yes")
            .line("appendfsync everysec");
        let mut ours = config.clone().start();
        let replica = start_replica(&ours, mode.replica());
        let oracle = ServerConfig::without_module().start();
        let (mut a, mut o) = (ours.client(), oracle.client());
        let mut rng = Lcg(0x5eed);
        let mut written = 0;
        while written < target_keys {
            written += step(&mut rng, &mut a, &mut o);
        }
        let expected = state(&mut o);
        assert!(expected.len() > POOL / 2, "{} keys", expected.len());
        assert_same("primary vs SET", mode, &state(&mut a), &expected);

        wait_for_replicas(&mut a, 1);
        assert_same("replica", mode, &state(&mut replica.client()), &expected);

        q::<(), _>(&mut a, &["DEBUG", "RELOAD"]);
        assert_same("DEBUG RELOAD", mode, &state(&mut a), &expected);

        q::<String, _>(&mut a, &["BGREWRITEAOF"]);
        let rewritten = eventually(std::time::Duration::from_secs(30), || {
            info_field(&mut a, "persistence", "aof_rewrite_in_progress").as_deref() == Some("0")
                && info_field(&mut a, "persistence", "aof_rewrite_scheduled").as_deref()
                    == Some("0")
        });
        assert!(rewritten, "BGREWRITEAOF did not finish");
        // More writes after the rewrite, then a crash: the AOF replays them.
        for _ in 0..50 {
            step(&mut rng, &mut a, &mut o);
        }
        q::<(), _>(&mut a, &["CONFIG", "SET", "appendfsync", "always"]);
        step(&mut rng, &mut a, &mut o);
        let expected = state(&mut o);
        ours.restart();
        assert_same(
            "restart from the AOF",
            mode,
            &state(&mut ours.client()),
            &expected,
        );
        if mode == Replicate::Set {
            let plain = Server::start_with(
                ServerConfig::without_module().line("appendonly yes"),
                copy_data(ours.dir()),
            );
            assert_same(
                "the AOF on a server without the module",
                mode,
                &state(&mut plain.client()),
                &expected,
            );
        }
    }
    record_result(
        "mixed workload against SET",
        &format!(
            "{target_keys} key writes by MSETEX (every option, integers, strings of every \
             size, type changes, DEL, APPEND) in each REPLICATE mode: primary, replica, \
             DEBUG RELOAD, BGREWRITEAOF + restart from the AOF (and, in SET mode, that AOF \
             without the module) all equal to the same writes made with SET"
        ),
    );
}
