//! `make bench`: MSETEX side by side with MSET, a Lua loop and pipelined
//! SETEX, driven by redis-benchmark against one redis-server started here.
//!
//! Every figure in docs/BENCHMARKS.md (and the headline block of README.md)
//! is written by this program. Machines are shared and noisy, so each
//! ratio is the median over rounds of the ratio measured within one round,
//! where the variants run one after another on the same server.
//!
//! Options: `--rounds N` (default 7), `--keys N` keys written per run
//! (default 100000), `--out PATH` (default docs/BENCHMARKS.md),
//! `--readme PATH` (default README.md, "-" to leave it alone).

#[path = "../tests/common/mod.rs"]
mod common;

use common::*;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::process::Command;
use std::time::{Duration, Instant};

const TTL: &str = "3600";
/// Keys of the overwrite workload: a session store's working set.
const OVERWRITE_KEYSPACE: usize = 10_000;
/// Keys of the fresh workload: redis-benchmark's key space (an `int`).
const FRESH_KEYSPACE: u64 = 2_000_000_000;
const CLIENTS: usize = 20;
const BATCHES: [usize; 4] = [1, 10, 100, 1000];
const SMALL_VALUE: usize = 32;
const LARGE_VALUE: usize = 1024;
const LUA_LOOP: &str = "local ttl = ARGV[#ARGV]\n\
     for i = 1, #KEYS do redis.call('SET', KEYS[i], ARGV[i], 'EX', ttl) end\n\
     return redis.status_reply('OK')";

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Variant {
    Msetex,
    Mset,
    Lua,
    Setex,
}

impl Variant {
    const ALL: [Variant; 4] = [Variant::Msetex, Variant::Mset, Variant::Lua, Variant::Setex];

    fn label(self) -> &'static str {
        match self {
            Variant::Msetex => "MSETEX",
            Variant::Mset => "MSET (no TTL)",
            Variant::Lua => "Lua SET EX loop",
            Variant::Setex => "SETEX pipelined",
        }
    }

    /// The command whose INFO commandstats entry measures this variant.
    fn stat(self) -> &'static str {
        match self {
            Variant::Msetex => "msetex",
            Variant::Mset => "mset",
            Variant::Lua => "evalsha",
            Variant::Setex => "setex",
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Workload {
    Overwrite,
    Fresh,
}

impl Workload {
    fn label(self) -> &'static str {
        match self {
            Workload::Overwrite => "overwrite",
            Workload::Fresh => "fresh",
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Setup {
    Plain,
    Aof,
    Replica,
}

impl Setup {
    fn label(self) -> &'static str {
        match self {
            Setup::Plain => "no persistence",
            Setup::Aof => "appendonly yes, appendfsync everysec",
            Setup::Replica => "one replica attached",
        }
    }
}

/// One table row: everything but the variant.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
struct Row {
    setup: Setup,
    workload: Workload,
    value_size: usize,
    batch: usize,
}

#[derive(Clone, Copy, Debug)]
struct Sample {
    keys_per_sec: f64,
    server_us_per_key: f64,
    p50_ms: f64,
    p99_ms: f64,
    failed: u64,
}

struct Options {
    rounds: usize,
    keys_per_run: usize,
    out: String,
    readme: String,
}

fn parse_options() -> Options {
    let mut options = Options {
        rounds: 7,
        keys_per_run: 100_000,
        out: "docs/BENCHMARKS.md".into(),
        readme: "README.md".into(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--rounds" => options.rounds = value.parse().expect("--rounds N"),
            "--keys" => options.keys_per_run = value.parse().expect("--keys N"),
            "--out" => options.out = value,
            "--readme" => options.readme = value,
            _ => panic!("unknown option {flag}"),
        }
    }
    assert!(options.rounds > 0 && options.keys_per_run >= 1000);
    options
}

struct Bench {
    server: Server,
    con: Connection,
    lua_sha: String,
    options: Options,
    samples: BTreeMap<(Row, Variant), Vec<Sample>>,
    failures: Vec<String>,
}

fn main() {
    let options = parse_options();
    let server = ServerConfig::default()
        .line("appendfsync everysec")
        .line("repl-diskless-sync-delay 0")
        .start();
    let mut con = server.client();
    let lua_sha: String = q(&mut con, &["SCRIPT", "LOAD", LUA_LOOP]);
    let mut bench = Bench {
        server,
        con,
        lua_sha,
        options,
        samples: BTreeMap::new(),
        failures: Vec::new(),
    };

    let mut rows = Vec::new();
    for workload in [Workload::Overwrite, Workload::Fresh] {
        for batch in BATCHES {
            rows.push(Row {
                setup: Setup::Plain,
                workload,
                value_size: SMALL_VALUE,
                batch,
            });
        }
        rows.push(Row {
            setup: Setup::Plain,
            workload,
            value_size: LARGE_VALUE,
            batch: 100,
        });
    }
    bench.run_rows(&rows);

    q::<(), _>(&mut bench.con, &["CONFIG", "SET", "appendonly", "yes"]);
    wait_for_aof_rewrite(&mut bench.con);
    bench.run_rows(&propagation_rows(Setup::Aof));
    q::<(), _>(&mut bench.con, &["CONFIG", "SET", "appendonly", "no"]);

    let replica = start_replica(&bench.server, ServerConfig::without_module());
    bench.run_rows(&propagation_rows(Setup::Replica));
    drop(replica);

    let classic = classic_experiment(&mut bench);
    let memory = memory_per_key(&mut bench.con);
    let report = Report::new(&bench, classic, memory);
    let markdown = report.markdown(&bench);
    print!("{markdown}");
    std::fs::write(&bench.options.out, &markdown).expect("write the benchmark report");
    eprintln!("wrote {}", bench.options.out);
    if bench.options.readme != "-" {
        report.update_readme(&bench.options.readme);
    }
}

fn propagation_rows(setup: Setup) -> Vec<Row> {
    [Workload::Overwrite, Workload::Fresh]
        .into_iter()
        .map(|workload| Row {
            setup,
            workload,
            value_size: SMALL_VALUE,
            batch: 100,
        })
        .collect()
}

fn wait_for_aof_rewrite(con: &mut Connection) {
    let done = eventually(Duration::from_secs(60), || {
        info_field(con, "persistence", "aof_rewrite_in_progress").as_deref() == Some("0")
            && info_field(con, "persistence", "aof_rewrite_scheduled").as_deref() == Some("0")
    });
    assert!(done, "the AOF rewrite did not finish");
}

impl Bench {
    /// Alternating rounds: every variant of every row once per round.
    fn run_rows(&mut self, rows: &[Row]) {
        for round in 1..=self.options.rounds {
            for row in rows {
                eprintln!(
                    "round {round}/{}: {} {} {}B x{}",
                    self.options.rounds,
                    row.setup.label(),
                    row.workload.label(),
                    row.value_size,
                    row.batch
                );
                for variant in Variant::ALL {
                    match self.run_once(*row, variant) {
                        Ok(sample) => self
                            .samples
                            .entry((*row, variant))
                            .or_default()
                            .push(sample),
                        Err(reason) => self.failures.push(format!(
                            "{} {} {}B x{} {}: {reason}",
                            row.setup.label(),
                            row.workload.label(),
                            row.value_size,
                            row.batch,
                            variant.label()
                        )),
                    }
                }
            }
        }
    }

    fn prepare(&mut self, workload: Workload, value: &str) {
        q::<(), _>(&mut self.con, &["FLUSHALL"]);
        if workload == Workload::Overwrite {
            // Every key of the working set exists and holds a TTL.
            for chunk in (0..OVERWRITE_KEYSPACE).collect::<Vec<_>>().chunks(1000) {
                let mut pipe = redis::pipe();
                for i in chunk {
                    pipe.cmd("SET")
                        .arg(format!("k:{i:012}"))
                        .arg(value)
                        .arg("EX")
                        .arg(TTL)
                        .ignore();
                }
                pipe.query::<()>(&mut self.con).expect("preload");
            }
        }
        q::<(), _>(&mut self.con, &["CONFIG", "RESETSTAT"]);
    }

    fn run_once(&mut self, row: Row, variant: Variant) -> Result<Sample, String> {
        let value = "x".repeat(row.value_size);
        self.prepare(row.workload, &value);
        let batch = row.batch;
        let mut args: Vec<String> = Vec::new();
        match variant {
            Variant::Msetex | Variant::Mset => {
                args.push(
                    if variant == Variant::Msetex {
                        "MSETEX"
                    } else {
                        "MSET"
                    }
                    .into(),
                );
                if variant == Variant::Msetex {
                    args.push(TTL.into());
                }
                for _ in 0..batch {
                    args.push("k:__rand_int__".into());
                    args.push(value.clone());
                }
            }
            Variant::Lua => {
                args.extend(["EVALSHA".into(), self.lua_sha.clone(), batch.to_string()]);
                args.extend((0..batch).map(|_| "k:__rand_int__".to_string()));
                args.extend((0..batch).map(|_| value.clone()));
                args.push(TTL.into());
            }
            Variant::Setex => {
                args.extend([
                    "SETEX".into(),
                    "k:__rand_int__".into(),
                    TTL.into(),
                    value.clone(),
                ]);
            }
        }
        let (requests, pipeline, keys_per_request) = match variant {
            Variant::Setex => (self.options.keys_per_run, batch, 1),
            _ => ((self.options.keys_per_run / batch).max(1), 1, batch),
        };
        let keyspace = match row.workload {
            Workload::Overwrite => OVERWRITE_KEYSPACE as u64,
            Workload::Fresh => FRESH_KEYSPACE,
        };
        let output = Command::new("redis-benchmark")
            .args(["-h", "127.0.0.1", "-p", &self.server.port().to_string()])
            .args(["-c", &CLIENTS.to_string(), "-n", &requests.to_string()])
            .args([
                "-r",
                &keyspace.to_string(),
                "-P",
                &pipeline.to_string(),
                "--csv",
            ])
            .args(&args)
            .output()
            .map_err(|e| format!("cannot run redis-benchmark: {e}"))?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        let row_line = stdout
            .lines()
            .rfind(|line| line.starts_with('"') && !line.starts_with("\"test\""))
            .ok_or_else(|| {
                format!(
                    "redis-benchmark gave no result: {}",
                    String::from_utf8_lossy(&output.stderr)
                )
            })?;
        let fields: Vec<f64> = row_line
            .rsplit("\",\"")
            .take(7)
            .map(|f| f.trim_matches('"').parse().unwrap_or(f64::NAN))
            .collect();
        // Reversed: max, p99, p95, p50, min, avg, rps.
        let (p99, p50, rps) = (fields[1], fields[3], fields[6]);
        let stats = command_stats(&mut self.con, variant.stat())
            .ok_or_else(|| format!("no commandstats for {}", variant.stat()))?;
        let mut failed = stats.failed;
        if variant == Variant::Lua {
            failed += command_stats(&mut self.con, "set").map_or(0, |s| s.failed);
        }
        Ok(Sample {
            keys_per_sec: rps * keys_per_request as f64,
            server_us_per_key: stats.usec_per_call / keys_per_request as f64,
            p50_ms: p50,
            p99_ms: p99,
            failed,
        })
    }
}

struct CommandStats {
    calls: u64,
    usec_per_call: f64,
    failed: u64,
}

fn command_stats(con: &mut Connection, command: &str) -> Option<CommandStats> {
    let line = info_field(con, "commandstats", &format!("cmdstat_{command}"))?;
    let field = |name: &str| -> Option<f64> {
        line.split(',')
            .find_map(|kv| kv.strip_prefix(&format!("{name}=")))
            .and_then(|v| v.parse().ok())
    };
    Some(CommandStats {
        calls: field("calls")? as u64,
        usec_per_call: field("usec_per_call")?,
        failed: (field("failed_calls").unwrap_or(0.0) + field("rejected_calls").unwrap_or(0.0))
            as u64,
    })
}

fn median(mut values: Vec<f64>) -> f64 {
    values.retain(|v| v.is_finite());
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

/// The PHP experiment the project started from: 10,000 keys with a 10 s
/// TTL, one client, each approach timed end to end.
struct Classic {
    seconds: Vec<(&'static str, f64)>,
    msetex_block_us: f64,
    mset_block_us: f64,
}

fn classic_experiment(bench: &mut Bench) -> Classic {
    eprintln!("classic experiment: 10,000 keys, one client");
    const N: usize = 10_000;
    let con = &mut bench.con;
    let keys: Vec<String> = (1..=N).map(|i| format!("key{i}")).collect();
    let values: Vec<String> = (1..=N).map(|i| format!("value{i}")).collect();
    let mut times: BTreeMap<&'static str, Vec<f64>> = BTreeMap::new();
    let mut block = (Vec::new(), Vec::new());
    for _ in 0..bench.options.rounds {
        q::<(), _>(con, &["FLUSHALL"]);
        let start = Instant::now();
        for (k, v) in keys.iter().zip(&values) {
            q::<(), _>(con, &["SETEX", k, "10", v]);
        }
        times
            .entry("(a) SETEX, one round trip per key")
            .or_default()
            .push(start.elapsed().as_secs_f64());

        q::<(), _>(con, &["FLUSHALL"]);
        let start = Instant::now();
        let mut mset = redis::cmd("MSET");
        for (k, v) in keys.iter().zip(&values) {
            mset.arg(k).arg(v);
        }
        mset.query::<()>(con).expect("MSET");
        for k in &keys {
            q::<i64, _>(con, &["EXPIRE", k, "10"]);
        }
        times
            .entry("(b) MSET, then one EXPIRE per key")
            .or_default()
            .push(start.elapsed().as_secs_f64());

        q::<(), _>(con, &["FLUSHALL"]);
        q::<(), _>(con, &["CONFIG", "RESETSTAT"]);
        let start = Instant::now();
        mset.query::<()>(con).expect("MSET");
        times
            .entry("(c) one MSET, no TTL")
            .or_default()
            .push(start.elapsed().as_secs_f64());
        block
            .1
            .push(command_stats(con, "mset").map_or(f64::NAN, |s| s.usec_per_call));

        q::<(), _>(con, &["FLUSHALL"]);
        q::<(), _>(con, &["CONFIG", "RESETSTAT"]);
        let mut msetex = redis::cmd("MSETEX");
        msetex.arg(10);
        for (k, v) in keys.iter().zip(&values) {
            msetex.arg(k).arg(v);
        }
        let start = Instant::now();
        msetex.query::<()>(con).expect("MSETEX");
        times
            .entry("(d) one MSETEX")
            .or_default()
            .push(start.elapsed().as_secs_f64());
        let stats = command_stats(con, "msetex").expect("msetex stats");
        assert_eq!(stats.calls, 1);
        block.0.push(stats.usec_per_call);
        let ttl: i64 = q(con, &["TTL", "key10000"]);
        assert!((9..=10).contains(&ttl), "MSETEX must have set the TTL");
    }
    Classic {
        seconds: times.into_iter().map(|(k, v)| (k, median(v))).collect(),
        msetex_block_us: median(block.0),
        mset_block_us: median(block.1),
    }
}

/// used_memory per key after writing 1,000,000 keys (32-byte values, TTL)
/// with MSETEX and with SET ... EX.
struct Memory {
    msetex_bytes_per_key: f64,
    set_ex_bytes_per_key: f64,
}

fn memory_per_key(con: &mut Connection) -> Memory {
    eprintln!("memory: 1,000,000 keys with MSETEX, then with SET EX");
    const KEYS: usize = 1_000_000;
    const BATCH: usize = 1000;
    let value = "v".repeat(SMALL_VALUE);
    let mut measure = |use_msetex: bool| -> f64 {
        q::<(), _>(con, &["FLUSHALL"]);
        let used = |con: &mut Connection| -> f64 {
            info_field(con, "memory", "used_memory")
                .and_then(|v| v.parse().ok())
                .unwrap_or(f64::NAN)
        };
        let before = used(con);
        for start in (0..KEYS).step_by(BATCH) {
            let mut pipe = redis::pipe();
            if use_msetex {
                let cmd = pipe.cmd(target().command_name()).arg(TTL);
                for i in start..start + BATCH {
                    cmd.arg(format!("mem:{i:07}")).arg(&value);
                }
                cmd.ignore();
            } else {
                for i in start..start + BATCH {
                    pipe.cmd("SET")
                        .arg(format!("mem:{i:07}"))
                        .arg(&value)
                        .arg("EX")
                        .arg(TTL)
                        .ignore();
                }
            }
            pipe.query::<()>(con).expect("write keys");
        }
        let keys: i64 = q(con, &["DBSIZE"]);
        assert_eq!(keys, KEYS as i64);
        (used(con) - before) / KEYS as f64
    };
    let msetex_bytes_per_key = measure(true);
    let set_ex_bytes_per_key = measure(false);
    q::<(), _>(con, &["FLUSHALL"]);
    Memory {
        msetex_bytes_per_key,
        set_ex_bytes_per_key,
    }
}

/// Medians and within-round ratios, ready to print.
struct Report {
    /// (row, variant) -> (median sample, median ratio to MSET of server
    /// time per key, of keys/s)
    cells: BTreeMap<(Row, Variant), (Sample, f64, f64)>,
    /// (row) -> median ratio MSETEX/Lua and MSETEX/SETEX of server time per key
    versus: BTreeMap<Row, (f64, f64)>,
    classic: Classic,
    memory: Memory,
    failed_calls: u64,
}

impl Report {
    fn new(bench: &Bench, classic: Classic, memory: Memory) -> Report {
        let mut cells = BTreeMap::new();
        let mut versus = BTreeMap::new();
        let rows: Vec<Row> = bench.samples.keys().map(|(row, _)| *row).collect();
        let per_round_ratio = |row: Row, num: Variant, den: Variant, f: fn(&Sample) -> f64| {
            let (Some(a), Some(b)) = (
                bench.samples.get(&(row, num)),
                bench.samples.get(&(row, den)),
            ) else {
                return f64::NAN;
            };
            median(a.iter().zip(b).map(|(a, b)| f(a) / f(b)).collect())
        };
        for row in rows {
            for variant in Variant::ALL {
                let Some(samples) = bench.samples.get(&(row, variant)) else {
                    continue;
                };
                let med = |f: fn(&Sample) -> f64| median(samples.iter().map(f).collect());
                let sample = Sample {
                    keys_per_sec: med(|s| s.keys_per_sec),
                    server_us_per_key: med(|s| s.server_us_per_key),
                    p50_ms: med(|s| s.p50_ms),
                    p99_ms: med(|s| s.p99_ms),
                    failed: samples.iter().map(|s| s.failed).sum(),
                };
                let server_ratio =
                    per_round_ratio(row, variant, Variant::Mset, |s| s.server_us_per_key);
                let rate_ratio = per_round_ratio(row, variant, Variant::Mset, |s| s.keys_per_sec);
                cells.insert((row, variant), (sample, server_ratio, rate_ratio));
            }
            versus.insert(
                row,
                (
                    per_round_ratio(row, Variant::Msetex, Variant::Lua, |s| s.server_us_per_key),
                    per_round_ratio(row, Variant::Msetex, Variant::Setex, |s| {
                        s.server_us_per_key
                    }),
                ),
            );
        }
        let failed_calls = bench
            .samples
            .values()
            .flatten()
            .map(|s| s.failed)
            .sum::<u64>()
            + bench.failures.len() as u64;
        Report {
            cells,
            versus,
            classic,
            memory,
            failed_calls,
        }
    }

    fn ratio(&self, workload: Workload) -> f64 {
        let row = Row {
            setup: Setup::Plain,
            workload,
            value_size: SMALL_VALUE,
            batch: 100,
        };
        self.cells
            .get(&(row, Variant::Msetex))
            .map_or(f64::NAN, |c| c.1)
    }

    fn versus(&self, workload: Workload) -> (f64, f64) {
        let row = Row {
            setup: Setup::Plain,
            workload,
            value_size: SMALL_VALUE,
            batch: 100,
        };
        self.versus
            .get(&row)
            .copied()
            .unwrap_or((f64::NAN, f64::NAN))
    }

    fn memory_ratio(&self) -> f64 {
        self.memory.msetex_bytes_per_key / self.memory.set_ex_bytes_per_key
    }

    /// (target, measured, holds)
    fn targets(&self) -> Vec<(String, String, bool)> {
        let (lua_o, setex_o) = self.versus(Workload::Overwrite);
        let (lua_f, setex_f) = self.versus(Workload::Fresh);
        let overwrite = self.ratio(Workload::Overwrite);
        let fresh = self.ratio(Workload::Fresh);
        vec![
            (
                "overwrite: MSETEX <= 1.6x MSET".into(),
                format!("{overwrite:.2}x"),
                overwrite <= 1.6,
            ),
            (
                "fresh: MSETEX <= 2.2x MSET".into(),
                format!("{fresh:.2}x"),
                fresh <= 2.2,
            ),
            (
                "overwrite: MSETEX <= 1/3 of the Lua loop".into(),
                format!("{lua_o:.2}x"),
                lua_o <= 1.0 / 3.0,
            ),
            (
                "fresh: MSETEX <= 1/2 of the Lua loop".into(),
                format!("{lua_f:.2}x"),
                lua_f <= 0.5,
            ),
            (
                "overwrite: MSETEX below pipelined SETEX".into(),
                format!("{setex_o:.2}x"),
                setex_o < 1.0,
            ),
            (
                "fresh: MSETEX below pipelined SETEX".into(),
                format!("{setex_f:.2}x"),
                setex_f < 1.0,
            ),
            (
                "memory per key within 5% of SET EX (1,000,000 keys)".into(),
                format!("{:.3}x", self.memory_ratio()),
                (self.memory_ratio() - 1.0).abs() <= 0.05,
            ),
            (
                "zero failed calls".into(),
                self.failed_calls.to_string(),
                self.failed_calls == 0,
            ),
        ]
    }

    fn markdown(&self, bench: &Bench) -> String {
        let mut md = String::new();
        let _ = writeln!(md, "# MSETEX benchmarks\n");
        let _ = writeln!(
            md,
            "Generated by `make bench` (examples/bench.rs); do not edit by hand.
"
        );
        let _ = writeln!(md, "## Machine and method\n");
        for (k, v) in machine(bench) {
            let _ = writeln!(md, "- {k}: {v}");
        }
        let _ = writeln!(
            md,
            "- method: redis-benchmark, {CLIENTS} clients, {} keys written per run, {} rounds; in \
             each round every variant runs once, one after another, on the same server. \
             Server time per key is INFO commandstats `usec_per_call` divided by the keys per \
             call (MSETEX: `msetex`, MSET: `mset`, Lua: `evalsha`, SETEX: `setex` with `-P` \
             equal to the batch). Figures are medians over rounds; each ratio is the median \
             of the ratios measured within a round. TTL {TTL} s everywhere.",
            bench.options.keys_per_run, bench.options.rounds
        );
        let _ = writeln!(
            md,
            "- workloads: `overwrite` rewrites a fixed set of {OVERWRITE_KEYSPACE} keys that \
             all hold TTLs (reloaded with SET EX before every run), as a session store does; \
             `fresh` starts each run with FLUSHALL and writes random keys from a space of \
             {FRESH_KEYSPACE}, so every key is new. MSET sets no TTL: it is the floor MSETEX \
             is measured against.\n"
        );

        let _ = writeln!(
            md,
            "## Targets (batch 100, 32-byte values, no persistence)\n"
        );
        let _ = writeln!(md, "| target | measured | holds |\n| --- | --- | --- |");
        for (target, measured, holds) in self.targets() {
            let _ = writeln!(
                md,
                "| {target} | {measured} | {} |",
                if holds { "yes" } else { "**no**" }
            );
        }
        let _ = writeln!(
            md,
            "\nRatios of server time per key; below 1 means MSETEX costs less.\n"
        );

        let mut current: Option<(Setup, Workload)> = None;
        for ((row, variant), (sample, server_ratio, rate_ratio)) in &self.cells {
            if current != Some((row.setup, row.workload)) {
                current = Some((row.setup, row.workload));
                let _ = writeln!(
                    md,
                    "\n## {} workload, {}\n\n| value | keys/call | variant | keys/s (client) | ratio to MSET | server µs/key | ratio to MSET | p50 ms | p99 ms | failed |\n| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
                    row.workload.label(),
                    row.setup.label()
                );
            }
            let _ = writeln!(
                md,
                "| {} B | {} | {} | {:.0} | {:.2}x | {:.3} | {:.2}x | {:.3} | {:.3} | {} |",
                row.value_size,
                row.batch,
                variant.label(),
                sample.keys_per_sec,
                rate_ratio,
                sample.server_us_per_key,
                server_ratio,
                sample.p50_ms,
                sample.p99_ms,
                sample.failed
            );
        }

        let _ = writeln!(
            md,
            "\n## The classic experiment: 10,000 keys with a 10 s TTL, one client\n\n\
             A PHP client measured (a) 0.418 s, (b) 0.438 s and (c) 0.029 s per 10,000 keys on a \
             2019 VM. The same four approaches, timed here end to end (median of {} runs):\n\n\
             | approach | seconds per 10,000 keys |\n| --- | ---: |",
            bench.options.rounds
        );
        for (label, seconds) in &self.classic.seconds {
            let _ = writeln!(md, "| {label} | {seconds:.4} |");
        }
        let _ = writeln!(
            md,
            "\nOne MSETEX of 10,000 keys blocks the server for {:.0} µs (server time per call; \
             one MSET of the same keys: {:.0} µs). Nothing else runs meanwhile: split very \
             large batches if that matters.\n",
            self.classic.msetex_block_us, self.classic.mset_block_us
        );

        let _ = writeln!(
            md,
            "## Memory: 1,000,000 keys, 32-byte values, with TTL\n\n\
             | written with | used_memory per key |\n| --- | ---: |\n\
             | MSETEX (1,000 keys per call) | {:.1} B |\n| SET ... EX | {:.1} B |\n\n\
             Ratio: {:.3}.",
            self.memory.msetex_bytes_per_key,
            self.memory.set_ex_bytes_per_key,
            self.memory_ratio()
        );
        if !bench.failures.is_empty() {
            let _ = writeln!(md, "\n## Failed runs\n");
            for failure in &bench.failures {
                let _ = writeln!(md, "- {failure}");
            }
        }
        md
    }

    /// Rewrites the block between the bench markers in README.md.
    fn update_readme(&self, path: &str) {
        const START: &str = "<!-- bench:start -->";
        const END: &str = "<!-- bench:end -->";
        let Ok(readme) = std::fs::read_to_string(path) else {
            eprintln!("{path} not found: not updated");
            return;
        };
        let (Some(start), Some(end)) = (readme.find(START), readme.find(END)) else {
            eprintln!("{path} has no {START} ... {END} block: not updated");
            return;
        };
        let (lua_o, _) = self.versus(Workload::Overwrite);
        let (lua_f, _) = self.versus(Workload::Fresh);
        let classic = |prefix: &str| {
            self.classic
                .seconds
                .iter()
                .find(|(label, _)| label.starts_with(prefix))
                .map_or(f64::NAN, |(_, s)| *s)
        };
        let block = format!(
            "{START}\nFrom the last `make bench` ([docs/BENCHMARKS.md](docs/BENCHMARKS.md); \
             100 keys per call, 32-byte values, 20 clients, server time per key):\n\n\
             - refreshing keys that already hold TTLs (a session store): MSETEX costs \
             **{:.2}x** MSET, which sets no TTL; the usual Lua `SET ... EX` loop costs \
             {:.1}x MSETEX;\n\
             - writing new keys: **{:.2}x** MSET; the Lua loop costs {:.1}x MSETEX;\n\
             - 10,000 keys with a 10 s TTL from one client: {:.3} s with one MSETEX, \
             {:.3} s with one MSET (no TTL), {:.3} s with one SETEX per key;\n\
             - memory per key: {:.3}x that of SET ... EX.\n{END}",
            self.ratio(Workload::Overwrite),
            1.0 / lua_o,
            self.ratio(Workload::Fresh),
            1.0 / lua_f,
            classic("(d)"),
            classic("(c)"),
            classic("(a)"),
            self.memory_ratio()
        );
        let updated = format!(
            "{}{}{}",
            &readme[..start],
            block,
            &readme[end + END.len()..]
        );
        std::fs::write(path, updated).expect("write README");
        eprintln!("updated the benchmark block of {path}");
    }
}

fn machine(bench: &Bench) -> Vec<(&'static str, String)> {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|l| l.trim_start_matches([' ', '\t', ':']).to_owned())
        .unwrap_or_else(|| "unknown".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let mut con = bench.server.client();
    let version = info_field(&mut con, "server", "redis_version").unwrap_or_default();
    let commit = Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    let date = Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    vec![
        ("date", date),
        ("machine", format!("{cores} cores, {cpu}")),
        (
            "server",
            format!("redis-server {version} (redis-benchmark on the same machine)"),
        ),
        ("module", format!("commit {commit}")),
    ]
}
