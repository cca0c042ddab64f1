//! The experiments outside the redis-benchmark rows: one call of 10,000
//! keys against one MSET of them, the PHP experiment the project started
//! from, memory per key against SET ... EX, and ACL LOAD of 2,000 users
//! with and without the module.

use super::commandstats::command_stats;
use super::{flush_now, Bench};
use crate::instr::BIG_CALL;
use crate::plan::{Setup, Values, TTL};
use crate::statistics::{median, median_ratio};
use msetex_harness::{info_field, q, Connection, ServerConfig, TempDir};
use std::collections::BTreeMap;
use std::time::Instant;

// ---------------------------------------------------------------------------
// One call of 10,000 keys

/// Server time of one call of 10,000 keys, MSETEX against MSET of the same pairs, on new keys
/// and on keys that exist with a TTL (same-length values: a session store's refresh): [new,
/// refresh] of (MSETEX µs, MSET µs, MSETEX / MSET), medians over rounds (the ratio: of the
/// ratios within a round).
pub type BigCall = [(f64, f64, f64); 2];

/// Server times (µs) of the one call, by (refresh, MSETEX rather than MSET), one per round.
type BigCallSamples = BTreeMap<(bool, bool), Vec<f64>>;

pub fn big_call(bench: &Bench, server: usize) -> BigCall {
    let setup = Setup::plain(server);
    let mut running = bench.start(setup);
    let name = bench.module_name(setup);
    let samples = time_big_calls(&mut running.con, name, bench.options.rounds.max(3));
    big_call_figures(&samples)
}

/// Medians and within-round ratios of the samples.
fn big_call_figures(samples: &BigCallSamples) -> BigCall {
    let get = |refresh, module| samples.get(&(refresh, module)).cloned().unwrap_or_default();
    let (module, mset) = (|refresh| get(refresh, true), |refresh| get(refresh, false));
    [false, true].map(|r| {
        (
            median(module(r)),
            median(mset(r)),
            median_ratio(&module(r), &mset(r)),
        )
    })
}

/// Rounds of MSETEX and MSET calls setting key1 .. key10000 (a TTL of 10 s), their server time.
fn time_big_calls(con: &mut Connection, name: &str, rounds: usize) -> BigCallSamples {
    // One call of `command`, with the TTL first if `ttl`; the values change with the round.
    let call = |command: &str, ttl: bool, round: usize| {
        let mut cmd = redis::cmd(command);
        cmd.arg(if ttl { vec![10] } else { vec![] });
        for i in 0..BIG_CALL {
            cmd.arg(format!("key{}", i + 1))
                .arg(format!("value{:05}-{}", i, round % 10));
        }
        cmd
    };
    let mut samples = BigCallSamples::new();
    for round in 0..rounds {
        for refresh in [false, true] {
            for module in [true, false] {
                flush_now(con);
                if refresh {
                    // Every key exists with a TTL and a value of the same length.
                    call(name, true, round + 1).query::<()>(con).expect("seed");
                }
                q::<(), _>(con, &["CONFIG", "RESETSTAT"]);
                let command = if module { name } else { "MSET" };
                let stat = command.to_ascii_lowercase();
                let done = call(command, module, round).query::<()>(con);
                done.expect("the 10,000-key call");
                let stats = command_stats(con, &stat).expect("commandstats");
                assert_eq!(stats.calls, 1, "{stat}");
                let times = samples.entry((refresh, module)).or_default();
                times.push(stats.usec_per_call);
            }
        }
    }
    samples
}

// ---------------------------------------------------------------------------
// The classic experiment

/// The PHP experiment the project started from: 10,000 keys with a 10 s
/// TTL, one client, each approach timed end to end.
pub fn classic_experiment(bench: &Bench) -> Vec<(&'static str, f64)> {
    let setup = Setup::plain(0);
    let mut running = bench.start(setup);
    let con = &mut running.con;
    let name = bench.module_name(setup);
    let keys: Vec<String> = (1..=BIG_CALL).map(|i| format!("key{i}")).collect();
    let values: Vec<String> = (1..=BIG_CALL).map(|i| format!("value{i}")).collect();
    let mut times: BTreeMap<&'static str, Vec<f64>> = BTreeMap::new();
    let mut time = |label: &'static str, con: &mut Connection, run: &dyn Fn(&mut Connection)| {
        flush_now(con);
        let start = Instant::now();
        run(con);
        times
            .entry(label)
            .or_default()
            .push(start.elapsed().as_secs_f64());
    };
    let rounds = if bench.options.quick { 1 } else { 3 };
    for _ in 0..rounds {
        time("(a) SETEX, one round trip per key", con, &|con| {
            for (k, v) in keys.iter().zip(&values) {
                q::<(), _>(con, &["SETEX", k, "10", v]);
            }
        });
        let mut mset = redis::cmd("MSET");
        for (k, v) in keys.iter().zip(&values) {
            mset.arg(k).arg(v);
        }
        time("(b) MSET, then one EXPIRE per key", con, &|con| {
            mset.query::<()>(con).expect("MSET");
            for k in &keys {
                q::<i64, _>(con, &["EXPIRE", k, "10"]);
            }
        });
        time("(c) one MSET, no TTL", con, &|con| {
            mset.query::<()>(con).expect("MSET")
        });
        let mut msetex = redis::cmd(name);
        msetex.arg(10);
        for (k, v) in keys.iter().zip(&values) {
            msetex.arg(k).arg(v);
        }
        time("(d) one MSETEX", con, &|con| {
            msetex.query::<()>(con).expect("MSETEX")
        });
        let ttl: i64 = q(con, &["TTL", "key10000"]);
        assert!((9..=10).contains(&ttl), "MSETEX must have set the TTL");
    }
    times.into_iter().map(|(k, v)| (k, median(v))).collect()
}

// ---------------------------------------------------------------------------
// Memory

/// Keys written per call (MSETEX) or per pipeline (SET ... EX).
const MEMORY_BATCH: usize = 1000;

/// used_memory per key after writing 1,000,000 keys with TTL, with MSETEX
/// and with SET ... EX, for 32-byte and for integer values.
#[derive(Default)]
pub struct Memory {
    /// (values, MSETEX bytes per key, SET EX bytes per key)
    pub rows: Vec<(Values, f64, f64)>,
}

pub fn memory_per_key(bench: &Bench) -> Memory {
    let keys = if bench.options.quick {
        200_000
    } else {
        1_000_000
    };
    let setup = Setup::plain(0);
    let mut running = bench.start(setup);
    let con = &mut running.con;
    let name = bench.module_name(setup);
    let mut bytes = |values, msetex| bytes_per_key(con, name, keys, values, msetex);
    let rows = [Values::Small, Values::Integer].map(|v| (v, bytes(v, true), bytes(v, false)));
    Memory {
        rows: rows.to_vec(),
    }
}

/// used_memory per key after writing `keys` keys from empty, with the
/// module's `name` if `use_msetex`, with SET ... EX if not.
fn bytes_per_key(
    con: &mut Connection,
    name: &str,
    keys: usize,
    values: Values,
    use_msetex: bool,
) -> f64 {
    flush_now(con);
    let used = |con: &mut Connection| -> f64 {
        let used = info_field(con, "memory", "used_memory");
        used.and_then(|v| v.parse().ok()).unwrap_or(f64::NAN)
    };
    let value = |i: usize| match values {
        // Integers of every size, as counters and ids are.
        Values::Integer => (i * 7919).to_string(),
        _ => values.value(),
    };
    let before = used(con);
    for start in (0..keys).step_by(MEMORY_BATCH) {
        let mut pipe = redis::pipe();
        if use_msetex {
            let cmd = pipe.cmd(name).arg(TTL);
            for i in start..start + MEMORY_BATCH {
                cmd.arg(format!("mem:{i:07}")).arg(value(i));
            }
            cmd.ignore();
        } else {
            for i in start..start + MEMORY_BATCH {
                pipe.cmd("SET")
                    .arg(format!("mem:{i:07}"))
                    .arg(value(i))
                    .arg("EX")
                    .arg(TTL);
            }
        }
        pipe.query::<()>(con).expect("write keys");
    }
    let written: i64 = q(con, &["DBSIZE"]);
    assert_eq!(written, keys as i64);
    (used(con) - before) / keys as f64
}

// ---------------------------------------------------------------------------
// ACL LOAD

/// Users in the ACL file [`acl_load`] loads.
const ACL_USERS: usize = 2_000;

/// Server time of `ACL LOAD` of [`ACL_USERS`] users on the server under
/// test, with the module loaded and without: the module must not make it
/// dearer (it never looks at users' rules).
#[derive(Clone, Copy, Debug, Default)]
pub struct AclLoad {
    pub with_ms: f64,
    pub without_ms: f64,
    /// Median within-round ratio, with over without.
    pub ratio: f64,
}

pub fn acl_load(bench: &Bench) -> AclLoad {
    let server = bench.server(Setup::plain(0));
    let start = |with_module: bool| {
        let dir = TempDir::new("bench-acl");
        let file = dir.path().join("users.acl");
        let mut users = String::from("user default on nopass ~* &* +@all\n");
        for i in 0..ACL_USERS {
            let rules = match i % 4 {
                0 => "+@all -@write ~app:*",
                1 => "-@all +@read +@write ~* &chan:*",
                2 => "+@all ~s:* (+@write -@dangerous ~w:*)",
                _ => "-@all +get +set +mset ~k:* %R~r:*",
            };
            users.push_str(&format!("user u{i} on >pw{i} {rules}\n"));
        }
        std::fs::write(&file, users).expect("write the ACL file");
        let config = if with_module {
            ServerConfig::default()
        } else {
            ServerConfig::without_module()
        };
        let config = config
            .binary(server)
            .line(&format!("aclfile {}", file.display()));
        msetex_harness::Server::start_with(config, dir)
    };
    let running = [start(true), start(false)];
    let mut samples: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for _ in 0..bench.options.rounds.max(3) {
        for (node, times) in running.iter().zip(samples.iter_mut()) {
            let mut con = node.client();
            q::<(), _>(&mut con, &["CONFIG", "RESETSTAT"]);
            for _ in 0..3 {
                q::<(), _>(&mut con, &["ACL", "LOAD"]);
            }
            // Subcommands have statistics of their own from Redis 7.0 on.
            let stat = if server.is_7_0_or_later() {
                "acl|load"
            } else {
                "acl"
            };
            let stats = command_stats(&mut con, stat).expect("commandstats");
            assert_eq!(stats.calls, 3);
            times.push(stats.usec_per_call / 1000.0);
        }
    }
    let [with, without] = samples;
    AclLoad {
        ratio: median_ratio(&with, &without),
        with_ms: median(with),
        without_ms: median(without),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_big_call_figures() {
        let mut samples = BigCallSamples::new();
        samples.insert((false, true), vec![110.0, 120.0, 100.0]);
        samples.insert((false, false), vec![50.0, 60.0, 40.0]);
        samples.insert((true, true), vec![90.0, 99.0, 80.0]);
        // A round whose MSET failed counts not.
        samples.insert((true, false), vec![60.0, 60.0, f64::NAN]);
        let call = big_call_figures(&samples);
        // Within rounds: 2.2, 2.0, 2.5; 1.5, 1.65.
        assert_eq!(call[0], (110.0, 50.0, 2.2));
        assert_eq!((call[1].0, call[1].1), (90.0, 60.0));
        assert!((call[1].2 - 1.575).abs() < 1e-9);
    }
}
