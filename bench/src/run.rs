//! The runner: starts each setup's servers, runs every variant of every row
//! with redis-benchmark once per round and keeps the samples. The ACL
//! experiment is in `experiments`.

pub mod commandstats;
pub mod experiments;
mod progress;

use crate::options::Options;
use crate::pinning::Pinning;
use crate::plan::*;
use commandstats::command_stats;
use msetex_harness::*;
use std::collections::BTreeMap;
use std::path::PathBuf;

pub use progress::{minutes, Progress};

const LUA_LOOP: &str = "local ttl = ARGV[#ARGV]\n\
     for i = 1, #KEYS do redis.call('SET', KEYS[i], ARGV[i], 'EX', ttl) end\n\
     return redis.status_reply('OK')";

/// What one run of one variant measured.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    pub keys_per_sec: f64,
    pub server_us_per_key: f64,
    /// The server process's CPU time (INFO cpu, user and system) over the run, per key.
    pub cpu_us_per_key: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub failed: u64,
}

/// What a failed run leaves: NaN, so rounds stay aligned across rows.
const FAILED_RUN: Sample = Sample {
    keys_per_sec: f64::NAN,
    server_us_per_key: f64::NAN,
    cpu_us_per_key: f64::NAN,
    p50_ms: f64::NAN,
    p99_ms: f64::NAN,
    failed: 0,
};

pub struct Bench {
    pub options: Options,
    pub servers: &'static [Target],
    pub pinning: Pinning,
    pub samples: BTreeMap<(Row, Variant), Vec<Sample>>,
    pub failures: Vec<String>,
    pub progress: Progress,
}

/// A running setup: its server, its replica, a connection.
pub struct Running {
    pub server: Server,
    pub replica: Option<Server>,
    pub con: Connection,
}

/// redis-benchmark's figures of one run.
struct Csv {
    p50_ms: f64,
    p99_ms: f64,
    requests_per_sec: f64,
}

/// The floor module, built by `make bench-instr` (`cargo build --release -p
/// msetex-floor`): `MSETEX_FLOOR`, or target/release/libmsetex_floor.so.
/// Panics, saying how to build it, when the file is missing.
pub fn floor_module() -> PathBuf {
    built_library(
        "MSETEX_FLOOR",
        "libmsetex_floor.so",
        "run `cargo build --release --locked -p msetex-floor`, as make bench-instr does",
    )
}

impl Bench {
    /// A bench that has run nothing yet, of `runs` runs in all.
    pub fn new(
        options: Options,
        servers: &'static [Target],
        pinning: Pinning,
        runs: usize,
    ) -> Bench {
        Bench {
            options,
            servers,
            pinning,
            samples: BTreeMap::new(),
            failures: Vec::new(),
            progress: Progress::new(runs),
        }
    }

    pub(crate) fn server(&self, setup: Setup) -> &'static Target {
        &self.servers[setup.server]
    }

    /// The module's form: the setup's, but the built-in's own (NUMKEYS) in the instruction bench
    /// on a server with a built-in MSETEX, call for call with it, as typed clients send it.
    pub fn form(&self, setup: Setup) -> Form {
        match self.options.instr && self.server(setup).has_builtin_msetex() {
            true => Form::Numkeys,
            false => setup.form,
        }
    }

    pub fn module_name(&self, setup: Setup) -> &'static str {
        let server = self.server(setup);
        match self.form(setup) {
            Form::Ttl => server.command_name(),
            Form::Numkeys => server.numkeys_name(),
        }
    }

    /// The primary's configuration (a replica with the module gets the same).
    pub(crate) fn config(&self, setup: Setup) -> ServerConfig {
        let server = self.server(setup);
        let mut args = match self.form(setup) {
            Form::Ttl => server.default_module_args(),
            Form::Numkeys => server.numkeys_module_args(),
        };
        args.extend(["REPLICATE".to_owned(), setup.replicate.arg().to_owned()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut config = ServerConfig::default()
            .binary(self.server(setup))
            .module_args(&args)
            .line("repl-diskless-sync-delay 0");
        if self.options.instr {
            // After the module's own line: both in the same server. jemalloc's purging thread
            // wakes up on a clock: its instructions would vary.
            config = config
                .line(&format!(
                    "loadmodule {} {}",
                    floor_module().display(),
                    propagation(server, setup, self.module_name(setup))
                ))
                .line("jemalloc-bg-thread no");
        }
        let p = setup.persistence;
        if matches!(p, Persistence::Aof | Persistence::ClusterAof) {
            config = config.line("appendonly yes").line("appendfsync everysec");
        }
        if p.cluster() {
            config = config
                .line("cluster-enabled yes")
                .line("cluster-config-file nodes.conf");
        }
        config
    }

    pub fn start(&self, setup: Setup) -> Running {
        let server = self.server(setup);
        let config = self.config(setup);
        let primary = config.clone().start();
        let mut con = primary.client();
        if setup.persistence.cluster() {
            own_every_slot(&mut con);
        }
        self.pinning.move_server(&mut con, true);
        let replica = (setup.persistence == Persistence::Replica).then(|| {
            let replica_config = match setup.replicate {
                Replicate::Set => ServerConfig::without_module().binary(server),
                Replicate::Msetex => config,
            };
            let replica = start_replica(&primary, replica_config);
            self.pinning.move_server(&mut replica.client(), false);
            replica
        });
        q::<String, _>(&mut con, &["SCRIPT", "LOAD", LUA_LOOP]);
        Running {
            server: primary,
            replica,
            con,
        }
    }

    pub fn describe_setup(&self, setup: Setup) -> String {
        let server = self.server(setup);
        let form = if setup.form == Form::Numkeys {
            ", NUMKEYS form"
        } else {
            ""
        };
        format!(
            "{}{form}, {}",
            server.describe(),
            setup_label(server, setup)
        )
    }

    /// Runs a group of setups: every setup's server at once, every row of
    /// every setup once per round.
    pub fn run_group(&mut self, group: &[Setup]) {
        for setup in group {
            let starting = format!("starting {}", self.describe_setup(*setup));
            self.progress.report(&starting);
        }
        let mut running: Vec<Running> = group.iter().map(|setup| self.start(*setup)).collect();
        for round in 1..=self.options.rounds {
            for (setup, running) in group.iter().zip(running.iter_mut()) {
                for row in rows_of(*setup, &self.options) {
                    for variant in variants(row, self.servers) {
                        self.run_and_record(running, row, variant, round);
                    }
                }
            }
        }
    }

    fn run_and_record(&mut self, running: &mut Running, row: Row, variant: Variant, round: usize) {
        let (setup, label) = (
            self.describe_setup(row.setup),
            self.variant_label(row.setup, variant),
        );
        let (workload, values, batch) = (row.workload.label(), row.values.label(), row.batch);
        let what = format!("{setup}: {workload} {values} x{batch}, {label}");
        let rounds = self.options.rounds;
        self.progress
            .report(&format!("{what}, round {round}/{rounds}"));
        // A failed run leaves NaN, so rounds stay aligned across rows.
        let sample = self
            .run_once(running, row, variant)
            .unwrap_or_else(|reason| {
                self.failures.push(format!("{what}: {reason}"));
                FAILED_RUN
            });
        self.samples.entry((row, variant)).or_default().push(sample);
        self.progress.done += 1;
    }

    pub fn variant_label(&self, setup: Setup, variant: Variant) -> String {
        let name = self.module_name(setup).to_uppercase();
        match variant {
            Variant::Module if setup.form == Form::Ttl => format!("{name} (module)"),
            Variant::Module => format!("{name} numkeys (module)"),
            Variant::Mset => "MSET (no TTL)".to_owned(),
            Variant::Builtin => "MSETEX (built-in)".to_owned(),
            Variant::Lua => "Lua SET EX loop".to_owned(),
            Variant::Setex => "SETEX pipelined".to_owned(),
            _ => self.stat(setup, variant),
        }
    }

    /// The command whose INFO commandstats entry measures `variant`.
    pub(crate) fn stat(&self, setup: Setup, variant: Variant) -> String {
        match variant {
            Variant::Module => self.module_name(setup).to_ascii_lowercase(),
            Variant::Mset => "mset".to_owned(),
            Variant::Builtin => "msetex".to_owned(),
            Variant::Lua => "evalsha".to_owned(),
            Variant::Setex => "setex".to_owned(),
            // bench/floor's commands (`--instr`).
            Variant::Floor => "floor.bare".to_owned(),
            Variant::FloorEvents => "floor.events".to_owned(),
            Variant::FloorMset => "floor.mset".to_owned(),
        }
    }

    fn prepare(&self, running: &mut Running, workload: Workload, value: &str) {
        let con = &mut running.con;
        flush_now(con);
        // The allocator keeps freed pages for a while, then returns them:
        // a run writing new keys either reused the last run's pages or
        // faulted in new ones (MSET of new integers: 58 or 88 us a call).
        // Returned at once, every run starts from the same state. Servers
        // without jemalloc refuse the command, which changes nothing.
        let _ = exec(con, &["MEMORY", "PURGE"]);
        if workload == Workload::Overwrite {
            preload(con, value);
        }
        q::<(), _>(con, &["CONFIG", "RESETSTAT"]);
    }

    /// The arguments of one call of `variant` in `setup` writing `keys` (SETEX: the first), each
    /// with `value`: also the instruction bench's.
    pub fn command(&self, setup: Setup, v: Variant, keys: &[String], value: &str) -> Vec<String> {
        let (n, name) = (keys.len().to_string(), self.stat(setup, v));
        let pairs = || keys.iter().flat_map(|key| [key.as_str(), value]);
        let mut args: Vec<&str> = Vec::new();
        let sha = redis::Script::new(LUA_LOOP).get_hash().to_owned();
        match v {
            Variant::Setex => args.extend(["SETEX", &keys[0], TTL, value]),
            Variant::Mset => args.extend(std::iter::once("MSET").chain(pairs())),
            Variant::Lua => {
                args.extend(
                    ["EVALSHA", &sha, &n]
                        .into_iter()
                        .chain(keys.iter().map(String::as_str)),
                );
                args.extend(keys.iter().map(|_| value).chain([TTL]));
            }
            Variant::Module | Variant::Builtin
                if v == Variant::Builtin || self.form(setup) == Form::Numkeys =>
            {
                let name = if v == Variant::Builtin {
                    "MSETEX"
                } else {
                    self.module_name(setup)
                };
                args.extend([name, &n].into_iter().chain(pairs()).chain(["EX", TTL]));
            }
            // The module's TTL form, and the floors, which take the same arguments.
            _ => args.extend([name.as_str(), TTL].into_iter().chain(pairs())),
        }
        args.into_iter().map(str::to_owned).collect()
    }

    /// Requests, pipeline depth and keys per request of a run.
    fn shape(&self, row: Row, variant: Variant) -> (usize, usize, usize) {
        match variant {
            Variant::Setex => (self.options.keys_per_run, row.batch, 1),
            _ => ((self.options.keys_per_run / row.batch).max(1), 1, row.batch),
        }
    }

    fn run_once(
        &mut self,
        running: &mut Running,
        row: Row,
        variant: Variant,
    ) -> Result<Sample, String> {
        self.prepare(running, row.workload, &row.values.value());
        let keys = vec!["k:__rand_int__".to_owned(); row.batch];
        let args = self.command(row.setup, variant, &keys, &row.values.value());
        let (requests, pipeline, keys_per_request) = self.shape(row, variant);
        let cpu_before = cpu_seconds(&mut running.con);
        let csv = self.redis_benchmark(running, row.workload, requests, pipeline, &args)?;
        let cpu = cpu_seconds(&mut running.con) - cpu_before;
        let stat = self.stat(row.setup, variant);
        let stats = command_stats(&mut running.con, &stat)
            .ok_or_else(|| format!("no commandstats for {stat}"))?;
        let mut failed = stats.failed;
        // The Lua loop's SETs fail inside EVALSHA.
        if variant == Variant::Lua {
            failed += command_stats(&mut running.con, "set").map_or(0, |s| s.failed);
        }
        if stats.calls == 0 {
            return Err(format!("{stat} was never called"));
        }
        Ok(Sample {
            keys_per_sec: csv.requests_per_sec * keys_per_request as f64,
            server_us_per_key: stats.usec_per_call / keys_per_request as f64,
            cpu_us_per_key: cpu * 1e6 / (requests * keys_per_request) as f64,
            p50_ms: csv.p50_ms,
            p99_ms: csv.p99_ms,
            failed,
        })
    }

    /// Runs redis-benchmark against the setup's primary, on the client's CPU.
    fn redis_benchmark(
        &self,
        running: &Running,
        workload: Workload,
        requests: usize,
        pipeline: usize,
        args: &[String],
    ) -> Result<Csv, String> {
        let keyspace = match workload {
            Workload::Overwrite => OVERWRITE_KEYSPACE as u64,
            Workload::Fresh => FRESH_KEYSPACE,
        };
        let port = running.server.port();
        let options = format!(
            "-h 127.0.0.1 -p {port} -c {CLIENTS} -n {requests} -r {keyspace} -P {pipeline} --csv"
        );
        let mut command = self.pinning.client("redis-benchmark");
        command.args(options.split(' ')).args(args);
        let output = command
            .output()
            .map_err(|e| format!("cannot run redis-benchmark: {e}"))?;
        parse_csv(
            &String::from_utf8_lossy(&output.stdout),
            &String::from_utf8_lossy(&output.stderr),
        )
    }
}

/// Empties the server before a measurement, freeing every key now: Valkey 8.0+ flushes lazily
/// by default (lazyfree-lazy-user-flush), and its background thread, pinned with the server,
/// freed the last run's keys during the next one (in `make bench` the first variant of a round
/// paid for the last round's new keys: MSETEX / floor 1.1-1.9x on Valkey 8.0-9.1 overwrite).
pub fn flush_now(con: &mut Connection) {
    q::<(), _>(con, &["FLUSHALL", "SYNC"]);
}

/// The server process's CPU time so far (INFO cpu: user and system), in seconds.
fn cpu_seconds(con: &mut Connection) -> f64 {
    ["used_cpu_user", "used_cpu_sys"]
        .map(|field| info_field(con, "cpu", field).and_then(|v| v.parse().ok()))
        .into_iter()
        .map(|seconds: Option<f64>| seconds.unwrap_or(f64::NAN))
        .sum()
}

/// Makes a one-node cluster own every slot and waits until it says ok.
fn own_every_slot(con: &mut Connection) {
    let mut addslots = vec!["CLUSTER".to_owned(), "ADDSLOTS".to_owned()];
    addslots.extend((0..16384).map(|slot: u32| slot.to_string()));
    q::<(), _>(con, &addslots);
    let ok = eventually(std::time::Duration::from_secs(20), || {
        q::<String, _>(con, &["CLUSTER", "INFO"]).contains("cluster_state:ok")
    });
    assert!(ok, "the one-node cluster never became ok");
}

/// Every key of the overwrite workload's working set, holding a TTL.
fn preload(con: &mut Connection, value: &str) {
    for chunk in (0..OVERWRITE_KEYSPACE).collect::<Vec<_>>().chunks(1000) {
        let mut pipe = redis::pipe();
        for i in chunk {
            pipe.cmd("SET")
                .arg(format!("k:{i:012}"))
                .arg(value)
                .arg("EX")
                .arg(TTL);
        }
        pipe.query::<()>(con).expect("preload");
    }
}

/// The figures of redis-benchmark's `--csv` output: its last result line.
fn parse_csv(stdout: &str, stderr: &str) -> Result<Csv, String> {
    let row_line = stdout
        .lines()
        .rfind(|line| line.starts_with('"') && !line.starts_with("\"test\""))
        .ok_or_else(|| format!("redis-benchmark gave no result: {stderr}"))?;
    let fields: Vec<f64> = row_line
        .rsplit("\",\"")
        .take(7)
        .map(|f| f.trim_matches('"').parse().unwrap_or(f64::NAN))
        .collect();
    let [_max, p99, _p95, p50, _min, _avg, rps] = fields[..] else {
        return Err(format!("unexpected redis-benchmark output: {row_line}"));
    };
    Ok(Csv {
        p50_ms: p50,
        p99_ms: p99,
        requests_per_sec: rps,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_of_each_variant() {
        let valkey = crate::plan::tests::server(Product::Valkey, (9, 1, 2));
        let servers = Box::leak(Box::new([valkey]));
        let bench = Bench::new(Options::default(), servers, Pinning::Off(String::new()), 0);
        let keys = ["a".to_owned(), "b".to_owned()];
        let command = |setup, v| bench.command(setup, v, &keys, "x").join(" ");
        let (ttl, numkeys) = (crate::plan::setups()[0], crate::plan::setups()[1]);
        assert_eq!(command(ttl, Variant::Module), "msetex.ttl 3600 a x b x");
        let numkeys_call = "msetex.nk 2 a x b x EX 3600";
        assert_eq!(command(numkeys, Variant::Module), numkeys_call);
        // The instruction bench runs the module in the built-in's own form, where there is one.
        let options = Options {
            instr: true,
            ..Options::default()
        };
        let instr = Bench::new(options, servers, Pinning::Off(String::new()), 0);
        let call = instr.command(ttl, Variant::Module, &keys, "x").join(" ");
        assert_eq!(
            (call.as_str(), instr.module_name(ttl)),
            (numkeys_call, "msetex.nk")
        );
        assert_eq!(command(ttl, Variant::Builtin), "MSETEX 2 a x b x EX 3600");
        assert_eq!(command(ttl, Variant::FloorMset), "floor.mset 3600 a x b x");
        assert_eq!(command(ttl, Variant::Setex), "SETEX a 3600 x");
        let sha = redis::Script::new(LUA_LOOP).get_hash().to_owned();
        let lua = format!("EVALSHA {sha} 2 a b x x 3600");
        assert_eq!(command(ttl, Variant::Lua), lua);
    }

    #[test]
    fn the_last_csv_line_gives_the_figures() {
        let stdout = "\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\"\n\
             \"MSET\",\"12345.67\",\"1.500\",\"0.100\",\"1.400\",\"2.000\",\"2.500\",\"9.000\"\n";
        let csv = parse_csv(stdout, "").unwrap();
        let figures = (csv.requests_per_sec, csv.p50_ms, csv.p99_ms);
        assert_eq!(figures, (12345.67, 1.4, 2.5));
        // No result line: a failed run.
        let error = parse_csv("\"test\",\"rps\"\n", "Connection refused").err();
        let refused = "redis-benchmark gave no result: Connection refused";
        assert_eq!(error.as_deref(), Some(refused));
        let error = parse_csv("\"MSET\",\"1\",\"2\"\n", "").err().unwrap();
        assert!(
            error.starts_with("unexpected redis-benchmark output"),
            "{error}"
        );
    }
}
