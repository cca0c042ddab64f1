//! `make bench`: MSETEX side by side with MSET, a Lua loop, pipelined SETEX
//! and, where the server has one, its built-in MSETEX, driven by
//! redis-benchmark against servers started here.
//!
//! Every figure in docs/BENCHMARKS.md (and the block of README.md between
//! the bench markers) is written by this program. Machines are shared and
//! noisy, so each ratio is the median over rounds of the ratio measured
//! within one round, where the variants run one after another on the same
//! server.
//!
//! Sections:
//! - the server under test (`REDIS_SERVER`, default Debian's redis-server):
//!   no persistence (1 to 1,000 keys per call, large and integer values),
//!   the NUMKEYS form, AOF and one replica in both REPLICATE modes;
//! - the matrix: every server of ../shared/servers (or `SERVERS="bin ..."`)
//!   without persistence and with one replica, the built-in MSETEX beside
//!   the module where the server has one;
//! - one call of 10,000 keys (new and refreshed) against one MSET of them,
//!   and the PHP experiment the project started from;
//! - memory per key against SET ... EX.
//!
//! Options: `--quick` (two rounds, fewer keys and rows: a minute or two),
//! `--rounds N` (default 7), `--keys N` keys written per run (default
//! 200000), `--no-matrix`, `--out PATH` (default docs/BENCHMARKS.md),
//! `--readme PATH` (default README.md, "-" to leave it alone).

#[path = "../tests/common/mod.rs"]
mod common;

use common::*;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::process::Command;
use std::time::Instant;

const TTL: &str = "3600";
/// Keys of the overwrite workload: a session store's working set.
const OVERWRITE_KEYSPACE: usize = 10_000;
/// Keys of the fresh workload: redis-benchmark's key space (an `int`).
const FRESH_KEYSPACE: u64 = 2_000_000_000;
const CLIENTS: usize = 20;
const SMALL_VALUE: usize = 32;
const LARGE_VALUE: usize = 1024;
/// A canonical integer outside the shared-integer range: SET stores it
/// with the `int` encoding.
const INTEGER_VALUE: &str = "1234567890";
const LUA_LOOP: &str = "local ttl = ARGV[#ARGV]\n\
     for i = 1, #KEYS do redis.call('SET', KEYS[i], ARGV[i], 'EX', ttl) end\n\
     return redis.status_reply('OK')";

/// Where the processes run. Unpinned on this 2-core machine, the server's
/// time per call depended on where the scheduler put it and the client: the
/// same row differed by 1.5x from one run to the next. Pinned, the server
/// under test has a CPU to itself, and the client and the replica share the
/// other one.
enum Pinning {
    /// The primary's CPU, then the one of everything else (for taskset).
    Cpus {
        server: &'static str,
        others: &'static str,
    },
    /// Why not: one CPU, or no taskset.
    Off(String),
}

impl Pinning {
    fn detect() -> Pinning {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        if cpus < 2 {
            return Pinning::Off(format!("{cpus} CPU"));
        }
        match Command::new("taskset").args(["-c", "0", "true"]).status() {
            Ok(status) if status.success() => Pinning::Cpus {
                server: "1",
                others: "0",
            },
            _ => Pinning::Off("taskset could not run".into()),
        }
    }

    /// Moves a running server, every thread of it, to a CPU.
    fn move_server(&self, con: &mut Connection, primary: bool) {
        let Pinning::Cpus { server, others } = self else {
            return;
        };
        let cpu = if primary { server } else { others };
        let pid = info_field(con, "server", "process_id").unwrap_or_default();
        let moved = Command::new("taskset")
            .args(["-a", "-p", "-c", cpu, &pid])
            .stdout(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        assert!(
            moved,
            "taskset could not move server process {pid} to CPU {cpu}"
        );
    }

    /// The client command, on the CPU that is not the server's.
    fn client(&self, program: &str) -> Command {
        match self {
            Pinning::Cpus { others, .. } => {
                let mut command = Command::new("taskset");
                command.args(["-c", others, program]);
                command
            }
            Pinning::Off(_) => Command::new(program),
        }
    }

    fn describe(&self) -> String {
        match self {
            Pinning::Cpus { server, others } => format!(
                "taskset: the server under test on CPU {server}, redis-benchmark and any replica on CPU {others}"
            ),
            Pinning::Off(why) => format!("none ({why})"),
        }
    }
}

// ---------------------------------------------------------------------------
// What is measured

/// The module's two syntaxes.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Form {
    Ttl,
    Numkeys,
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Persistence {
    None,
    Aof,
    Replica,
    /// Cluster mode, one node owning every slot, nothing else: where the
    /// module never trusts "nobody listens" (docs/DESIGN.md).
    Cluster,
}

/// One server configuration; its rows run on one server (and replica).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
struct Setup {
    /// Index into the benchmark's server list (0: the server under test).
    server: usize,
    form: Form,
    persistence: Persistence,
    replicate: Replicate,
}

impl Setup {
    /// The TTL form without persistence on `server`.
    fn plain(server: usize) -> Setup {
        Setup {
            server,
            form: Form::Ttl,
            persistence: Persistence::None,
            replicate: Replicate::Set,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Workload {
    Overwrite,
    Fresh,
}

impl Workload {
    const BOTH: [Workload; 2] = [Workload::Overwrite, Workload::Fresh];

    fn label(self) -> &'static str {
        match self {
            Workload::Overwrite => "overwrite",
            Workload::Fresh => "fresh",
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Values {
    Small,
    Integer,
    Large,
}

impl Values {
    fn label(self) -> &'static str {
        match self {
            Values::Small => "32 B",
            Values::Integer => "integer",
            Values::Large => "1024 B",
        }
    }

    fn value(self) -> String {
        match self {
            Values::Small => "x".repeat(SMALL_VALUE),
            Values::Integer => INTEGER_VALUE.to_owned(),
            Values::Large => "x".repeat(LARGE_VALUE),
        }
    }
}

/// One table row: everything but the variant.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
struct Row {
    setup: Setup,
    workload: Workload,
    values: Values,
    batch: usize,
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Variant {
    /// The module's command, in the setup's form.
    Module,
    Mset,
    /// The server's own MSETEX (Redis 8.4+, Valkey 9.1+).
    Builtin,
    Lua,
    Setex,
}

#[derive(Clone, Copy, Debug)]
struct Sample {
    keys_per_sec: f64,
    server_us_per_key: f64,
    p50_ms: f64,
    p99_ms: f64,
    failed: u64,
}

// ---------------------------------------------------------------------------
// Options and plan

struct Options {
    quick: bool,
    rounds: usize,
    keys_per_run: usize,
    matrix: bool,
    out: String,
    readme: String,
}

fn parse_options() -> Options {
    let mut options = Options {
        quick: false,
        rounds: 7,
        keys_per_run: 200_000,
        matrix: true,
        out: "docs/BENCHMARKS.md".into(),
        readme: "README.md".into(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || {
            args.next()
                .unwrap_or_else(|| panic!("{flag} needs a value"))
        };
        match flag.as_str() {
            "--quick" => {
                options.quick = true;
                options.rounds = 2;
                options.keys_per_run = 50_000;
            }
            "--rounds" => options.rounds = value().parse().expect("--rounds N"),
            "--keys" => options.keys_per_run = value().parse().expect("--keys N"),
            "--no-matrix" => options.matrix = false,
            "--out" => options.out = value(),
            "--readme" => options.readme = value(),
            _ => panic!("unknown option {flag}"),
        }
    }
    assert!(options.rounds > 0 && options.keys_per_run >= 1000);
    options
}

/// The servers: the one under test first, then the matrix.
fn servers(options: &Options) -> &'static [Target] {
    let mut list = vec![target().clone()];
    if options.matrix {
        let paths: Vec<String> = match std::env::var("SERVERS") {
            Ok(list) => list.split_whitespace().map(str::to_owned).collect(),
            Err(_) => shared_server_paths(),
        };
        list.extend(targets_at(&paths));
    }
    Box::leak(list.into_boxed_slice())
}

/// The rows of one setup.
fn rows_of(setup: Setup, options: &Options) -> Vec<Row> {
    let row = |workload, values, batch| Row {
        setup,
        workload,
        values,
        batch,
    };
    let mut rows = Vec::new();
    for workload in Workload::BOTH {
        let main = setup.server == 0;
        match (main, setup.form, setup.persistence) {
            (true, Form::Ttl, Persistence::None) => {
                let batches: &[usize] = if options.quick {
                    &[100]
                } else {
                    &[1, 10, 100, 1000]
                };
                rows.extend(batches.iter().map(|b| row(workload, Values::Small, *b)));
                rows.push(row(workload, Values::Integer, 100));
                rows.push(row(workload, Values::Large, 100));
            }
            (true, _, _) => {
                rows.push(row(workload, Values::Small, 100));
                rows.push(row(workload, Values::Integer, 100));
            }
            (false, _, _) => rows.push(row(workload, Values::Small, 100)),
        }
    }
    rows
}

/// Every setup, in groups that run at once, interleaved round by round,
/// so that their figures can be compared within a round.
fn groups(servers: &[Target]) -> Vec<Vec<Setup>> {
    let setup = |server, form, persistence, replicate| Setup {
        server,
        form,
        persistence,
        replicate,
    };
    let mut list = vec![
        vec![
            setup(0, Form::Ttl, Persistence::None, Replicate::Set),
            setup(0, Form::Numkeys, Persistence::None, Replicate::Set),
        ],
        Replicate::BOTH
            .map(|mode| setup(0, Form::Ttl, Persistence::Aof, mode))
            .to_vec(),
        Replicate::BOTH
            .map(|mode| setup(0, Form::Ttl, Persistence::Replica, mode))
            .to_vec(),
        vec![setup(0, Form::Ttl, Persistence::Cluster, Replicate::Set)],
    ];
    for server in 1..servers.len() {
        list.push(vec![setup(
            server,
            Form::Ttl,
            Persistence::None,
            Replicate::Set,
        )]);
        list.push(vec![setup(
            server,
            Form::Ttl,
            Persistence::Replica,
            Replicate::Msetex,
        )]);
    }
    list
}

/// The variants of a row.
fn variants(row: Row, servers: &[Target]) -> Vec<Variant> {
    let setup = row.setup;
    let mut list = vec![Variant::Module, Variant::Mset];
    if servers[setup.server].has_builtin_msetex() && setup.form == Form::Ttl {
        list.push(Variant::Builtin);
    }
    if setup.form == Form::Ttl {
        if setup.server == 0 && setup.persistence == Persistence::None {
            list.push(Variant::Lua);
        }
        list.push(Variant::Setex);
    }
    list
}

// ---------------------------------------------------------------------------
// Running

/// Counts runs and prints where the benchmark is and what is left.
struct Progress {
    started: Instant,
    total: usize,
    done: usize,
}

impl Progress {
    fn report(&mut self, what: &str) {
        let elapsed = self.started.elapsed().as_secs();
        let left = if self.done == 0 {
            "?".to_owned()
        } else {
            let per_run = elapsed as f64 / self.done as f64;
            minutes((per_run * (self.total - self.done) as f64) as u64)
        };
        eprintln!(
            "[{}/{} runs, {} so far, about {left} left] {what}",
            self.done,
            self.total,
            minutes(elapsed)
        );
    }
}

fn minutes(seconds: u64) -> String {
    format!("{}m{:02}s", seconds / 60, seconds % 60)
}

struct Bench {
    options: Options,
    servers: &'static [Target],
    pinning: Pinning,
    samples: BTreeMap<(Row, Variant), Vec<Sample>>,
    failures: Vec<String>,
    progress: Progress,
}

/// A running setup: its server, its replica, a connection.
struct Running {
    server: Server,
    _replica: Option<Server>,
    con: Connection,
    lua_sha: String,
    has_replica: bool,
}

impl Bench {
    fn server(&self, setup: Setup) -> &'static Target {
        &self.servers[setup.server]
    }

    fn module_args(&self, setup: Setup) -> Vec<String> {
        let server = self.server(setup);
        let mut args = match setup.form {
            Form::Ttl => server.default_module_args(),
            Form::Numkeys => server.numkeys_module_args(),
        };
        args.extend(["REPLICATE".to_owned(), setup.replicate.arg().to_owned()]);
        args
    }

    fn module_name(&self, setup: Setup) -> &'static str {
        let server = self.server(setup);
        match setup.form {
            Form::Ttl => server.command_name(),
            Form::Numkeys => server.numkeys_name(),
        }
    }

    fn start(&self, setup: Setup) -> Running {
        let server = self.server(setup);
        let args = self.module_args(setup);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let config = ServerConfig::default()
            .binary(server)
            .module_args(&args)
            .line("repl-diskless-sync-delay 0");
        let config = match setup.persistence {
            Persistence::Aof => config.line("appendonly yes").line("appendfsync everysec"),
            Persistence::Cluster => config
                .line("cluster-enabled yes")
                .line("cluster-config-file nodes.conf"),
            _ => config,
        };
        let primary = config.clone().start();
        let mut con = primary.client();
        if setup.persistence == Persistence::Cluster {
            let mut addslots = vec!["CLUSTER".to_owned(), "ADDSLOTS".to_owned()];
            addslots.extend((0..16384).map(|slot: u32| slot.to_string()));
            q::<(), _>(&mut con, &addslots);
            let ok = eventually(std::time::Duration::from_secs(20), || {
                q::<String, _>(&mut con, &["CLUSTER", "INFO"]).contains("cluster_state:ok")
            });
            assert!(ok, "the one-node cluster never became ok");
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
        let lua_sha: String = q(&mut con, &["SCRIPT", "LOAD", LUA_LOOP]);
        Running {
            has_replica: replica.is_some(),
            server: primary,
            _replica: replica,
            con,
            lua_sha,
        }
    }

    fn describe_setup(&self, setup: Setup) -> String {
        let server = self.server(setup).describe();
        let form = match setup.form {
            Form::Ttl => "",
            Form::Numkeys => ", NUMKEYS form",
        };
        let persistence = match setup.persistence {
            Persistence::None => "no persistence".to_owned(),
            Persistence::Aof => format!(
                "appendonly yes (everysec), REPLICATE {}",
                setup.replicate.arg()
            ),
            Persistence::Replica => format!(
                "one replica attached{}, REPLICATE {}",
                match setup.replicate {
                    Replicate::Set => " (without the module)",
                    Replicate::Msetex => " (with the module)",
                },
                setup.replicate.arg()
            ),
            Persistence::Cluster => {
                "cluster mode (one node, no replica, keys of one hash tag)".to_owned()
            }
        };
        format!("{server}{form}, {persistence}")
    }

    /// Runs a group of setups: every setup's server at once, every row of
    /// every setup once per round.
    fn run_group(&mut self, group: &[Setup]) {
        for setup in group {
            self.progress
                .report(&format!("starting {}", self.describe_setup(*setup)));
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
        let what = format!(
            "{}: {} {} x{}, {}",
            self.describe_setup(row.setup),
            row.workload.label(),
            row.values.label(),
            row.batch,
            self.variant_label(row.setup, variant),
        );
        self.progress
            .report(&format!("{what}, round {round}/{}", self.options.rounds));
        // A failed run leaves NaN, so rounds stay aligned across rows.
        let sample = self
            .run_once(running, row, variant)
            .unwrap_or_else(|reason| {
                self.failures.push(format!("{what}: {reason}"));
                Sample {
                    keys_per_sec: f64::NAN,
                    server_us_per_key: f64::NAN,
                    p50_ms: f64::NAN,
                    p99_ms: f64::NAN,
                    failed: 0,
                }
            });
        self.samples.entry((row, variant)).or_default().push(sample);
        self.progress.done += 1;
    }

    fn variant_label(&self, setup: Setup, variant: Variant) -> String {
        match variant {
            Variant::Module => match setup.form {
                Form::Ttl => format!("{} (module)", self.module_name(setup).to_uppercase()),
                Form::Numkeys => format!(
                    "{} numkeys (module)",
                    self.module_name(setup).to_uppercase()
                ),
            },
            Variant::Mset => "MSET (no TTL)".to_owned(),
            Variant::Builtin => "MSETEX (built-in)".to_owned(),
            Variant::Lua => "Lua SET EX loop".to_owned(),
            Variant::Setex => "SETEX pipelined".to_owned(),
        }
    }

    /// The command whose INFO commandstats entry measures `variant`.
    fn stat(&self, setup: Setup, variant: Variant) -> String {
        match variant {
            Variant::Module => self.module_name(setup).to_ascii_lowercase(),
            Variant::Mset => "mset".to_owned(),
            Variant::Builtin => "msetex".to_owned(),
            Variant::Lua => "evalsha".to_owned(),
            Variant::Setex => "setex".to_owned(),
        }
    }

    /// Every key of a run starts with this: in cluster mode one hash tag,
    /// so that a call's keys share a slot.
    fn key_prefix(setup: Setup) -> &'static str {
        match setup.persistence {
            Persistence::Cluster => "{k}:",
            _ => "k:",
        }
    }

    fn prepare(&self, running: &mut Running, setup: Setup, workload: Workload, value: &str) {
        let con = &mut running.con;
        q::<(), _>(con, &["FLUSHALL"]);
        // The allocator keeps freed pages for a while, then returns them:
        // a run writing new keys either reused the last run's pages or
        // faulted in new ones (MSET of new integers: 58 or 88 us a call).
        // Returned at once, every run starts from the same state. Servers
        // without jemalloc refuse the command, which changes nothing.
        let _ = exec(con, &["MEMORY", "PURGE"]);
        if workload == Workload::Overwrite {
            // Every key of the working set exists and holds a TTL.
            for chunk in (0..OVERWRITE_KEYSPACE).collect::<Vec<_>>().chunks(1000) {
                let mut pipe = redis::pipe();
                for i in chunk {
                    pipe.cmd("SET")
                        .arg(format!("{}{i:012}", Self::key_prefix(setup)))
                        .arg(value)
                        .arg("EX")
                        .arg(TTL)
                        .ignore();
                }
                pipe.query::<()>(con).expect("preload");
            }
        }
        if running.has_replica {
            wait_for_replicas(con, 1);
        }
        q::<(), _>(con, &["CONFIG", "RESETSTAT"]);
    }

    fn command_args(&self, running: &Running, row: Row, variant: Variant) -> Vec<String> {
        let value = row.values.value();
        let key = format!("{}__rand_int__", Self::key_prefix(row.setup));
        let pairs = || (0..row.batch).flat_map(|_| [key.clone(), value.clone()]);
        let mut args: Vec<String> = Vec::new();
        match variant {
            Variant::Module if row.setup.form == Form::Ttl => {
                args.extend([self.module_name(row.setup).to_owned(), TTL.to_owned()]);
                args.extend(pairs());
            }
            Variant::Module | Variant::Builtin => {
                let name = match variant {
                    Variant::Module => self.module_name(row.setup),
                    _ => "MSETEX",
                };
                args.extend([name.to_owned(), row.batch.to_string()]);
                args.extend(pairs());
                args.extend(["EX".to_owned(), TTL.to_owned()]);
            }
            Variant::Mset => {
                args.push("MSET".to_owned());
                args.extend(pairs());
            }
            Variant::Lua => {
                args.extend([
                    "EVALSHA".to_owned(),
                    running.lua_sha.clone(),
                    row.batch.to_string(),
                ]);
                args.extend((0..row.batch).map(|_| key.clone()));
                args.extend((0..row.batch).map(|_| value.clone()));
                args.push(TTL.to_owned());
            }
            Variant::Setex => {
                args.extend([
                    "SETEX".to_owned(),
                    key.clone(),
                    TTL.to_owned(),
                    value.clone(),
                ]);
            }
        }
        args
    }

    fn run_once(
        &mut self,
        running: &mut Running,
        row: Row,
        variant: Variant,
    ) -> Result<Sample, String> {
        self.prepare(running, row.setup, row.workload, &row.values.value());
        let args = self.command_args(running, row, variant);
        let (requests, pipeline, keys_per_request) = match variant {
            Variant::Setex => (self.options.keys_per_run, row.batch, 1),
            _ => ((self.options.keys_per_run / row.batch).max(1), 1, row.batch),
        };
        let keyspace = match row.workload {
            Workload::Overwrite => OVERWRITE_KEYSPACE as u64,
            Workload::Fresh => FRESH_KEYSPACE,
        };
        let output = self
            .pinning
            .client("redis-benchmark")
            .args(["-h", "127.0.0.1", "-p", &running.server.port().to_string()])
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
        let [_max, p99, _p95, p50, _min, _avg, rps] = fields[..] else {
            return Err(format!("unexpected redis-benchmark output: {row_line}"));
        };
        let stat = self.stat(row.setup, variant);
        let stats = command_stats(&mut running.con, &stat)
            .ok_or_else(|| format!("no commandstats for {stat}"))?;
        let mut failed = stats.failed;
        if variant == Variant::Lua {
            failed += command_stats(&mut running.con, "set").map_or(0, |s| s.failed);
        }
        if stats.calls == 0 {
            return Err(format!("{stat} was never called"));
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

// ---------------------------------------------------------------------------
// One call of 10,000 keys

const BIG_CALL: usize = 10_000;

/// Server time of one call of 10,000 keys, MSETEX against MSET of the same
/// pairs, on new keys and on keys that exist with a TTL (same-length
/// values: a session store's refresh). Medians over rounds.
#[derive(Clone, Copy, Debug)]
struct BigCall {
    new_us: (f64, f64),
    refresh_us: (f64, f64),
    /// Median within-round ratios MSETEX / MSET.
    new_ratio: f64,
    refresh_ratio: f64,
}

fn big_call(bench: &Bench, server: usize) -> BigCall {
    let setup = Setup::plain(server);
    let mut running = bench.start(setup);
    let con = &mut running.con;
    let name = bench.module_name(setup);
    let keys: Vec<String> = (1..=BIG_CALL).map(|i| format!("key{i}")).collect();
    let call = |command: &str, ttl: bool, round: usize| {
        let mut cmd = redis::cmd(command);
        if ttl {
            cmd.arg(10);
        }
        for (i, key) in keys.iter().enumerate() {
            cmd.arg(key).arg(format!("value{:05}-{}", i, round % 10));
        }
        cmd
    };
    let mut samples: BTreeMap<(bool, bool), Vec<f64>> = BTreeMap::new();
    for round in 0..bench.options.rounds.max(3) {
        for refresh in [false, true] {
            for module in [true, false] {
                q::<(), _>(con, &["FLUSHALL"]);
                if refresh {
                    // Every key exists with a TTL and a value of the same length.
                    call(name, true, round + 1).query::<()>(con).expect("seed");
                }
                q::<(), _>(con, &["CONFIG", "RESETSTAT"]);
                let (command, stat) = if module {
                    (name, name.to_ascii_lowercase())
                } else {
                    ("MSET", "mset".to_owned())
                };
                call(command, module, round)
                    .query::<()>(con)
                    .expect("the 10,000-key call");
                let stats = command_stats(con, &stat).expect("commandstats");
                assert_eq!(stats.calls, 1, "{stat}");
                samples
                    .entry((refresh, module))
                    .or_default()
                    .push(stats.usec_per_call);
            }
        }
    }
    let get = |refresh, module| samples.get(&(refresh, module)).cloned().unwrap_or_default();
    let ratio = |refresh| {
        median(
            get(refresh, true)
                .iter()
                .zip(get(refresh, false))
                .map(|(a, b)| a / b)
                .collect(),
        )
    };
    BigCall {
        new_us: (median(get(false, true)), median(get(false, false))),
        refresh_us: (median(get(true, true)), median(get(true, false))),
        new_ratio: ratio(false),
        refresh_ratio: ratio(true),
    }
}

/// The PHP experiment the project started from: 10,000 keys with a 10 s
/// TTL, one client, each approach timed end to end.
fn classic_experiment(bench: &Bench) -> Vec<(&'static str, f64)> {
    let setup = Setup::plain(0);
    let mut running = bench.start(setup);
    let con = &mut running.con;
    let name = bench.module_name(setup);
    let keys: Vec<String> = (1..=BIG_CALL).map(|i| format!("key{i}")).collect();
    let values: Vec<String> = (1..=BIG_CALL).map(|i| format!("value{i}")).collect();
    let mut times: BTreeMap<&'static str, Vec<f64>> = BTreeMap::new();
    let mut time = |label: &'static str, con: &mut Connection, run: &dyn Fn(&mut Connection)| {
        q::<(), _>(con, &["FLUSHALL"]);
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
            mset.query::<()>(con).expect("MSET");
        });
        let mut msetex = redis::cmd(name);
        msetex.arg(10);
        for (k, v) in keys.iter().zip(&values) {
            msetex.arg(k).arg(v);
        }
        time("(d) one MSETEX", con, &|con| {
            msetex.query::<()>(con).expect("MSETEX");
        });
        let ttl: i64 = q(con, &["TTL", "key10000"]);
        assert!((9..=10).contains(&ttl), "MSETEX must have set the TTL");
    }
    times.into_iter().map(|(k, v)| (k, median(v))).collect()
}

// ---------------------------------------------------------------------------
// Memory

/// used_memory per key after writing 1,000,000 keys with TTL, with MSETEX
/// and with SET ... EX, for 32-byte and for integer values.
struct Memory {
    /// (values, MSETEX bytes per key, SET EX bytes per key)
    rows: Vec<(Values, f64, f64)>,
}

fn memory_per_key(bench: &Bench) -> Memory {
    let keys = if bench.options.quick {
        200_000
    } else {
        1_000_000
    };
    const BATCH: usize = 1000;
    let setup = Setup::plain(0);
    let mut running = bench.start(setup);
    let con = &mut running.con;
    let name = bench.module_name(setup);
    let mut measure = |values: Values, use_msetex: bool| -> f64 {
        q::<(), _>(con, &["FLUSHALL"]);
        let used = |con: &mut Connection| -> f64 {
            info_field(con, "memory", "used_memory")
                .and_then(|v| v.parse().ok())
                .unwrap_or(f64::NAN)
        };
        let value = |i: usize| match values {
            // Integers of every size, as counters and ids are.
            Values::Integer => (i * 7919).to_string(),
            _ => values.value(),
        };
        let before = used(con);
        for start in (0..keys).step_by(BATCH) {
            let mut pipe = redis::pipe();
            if use_msetex {
                let cmd = pipe.cmd(name).arg(TTL);
                for i in start..start + BATCH {
                    cmd.arg(format!("mem:{i:07}")).arg(value(i));
                }
                cmd.ignore();
            } else {
                for i in start..start + BATCH {
                    pipe.cmd("SET")
                        .arg(format!("mem:{i:07}"))
                        .arg(value(i))
                        .arg("EX")
                        .arg(TTL)
                        .ignore();
                }
            }
            pipe.query::<()>(con).expect("write keys");
        }
        let written: i64 = q(con, &["DBSIZE"]);
        assert_eq!(written, keys as i64);
        (used(con) - before) / keys as f64
    };
    let rows = [Values::Small, Values::Integer]
        .into_iter()
        .map(|values| (values, measure(values, true), measure(values, false)))
        .collect();
    Memory { rows }
}

// ---------------------------------------------------------------------------
// Main

fn main() {
    let options = parse_options();
    let servers = servers(&options);
    let groups = groups(servers);
    let runs: usize = groups
        .iter()
        .flatten()
        .map(|setup| {
            rows_of(*setup, &options)
                .iter()
                .map(|row| variants(*row, servers).len())
                .sum::<usize>()
                * options.rounds
        })
        .sum();
    let mut bench = Bench {
        options,
        servers,
        pinning: Pinning::detect(),
        samples: BTreeMap::new(),
        failures: Vec::new(),
        progress: Progress {
            started: Instant::now(),
            total: runs,
            done: 0,
        },
    };
    for group in &groups {
        bench.run_group(group);
    }
    bench
        .progress
        .report("one call of 10,000 keys against one MSET, on every server");
    let big_calls: Vec<(usize, BigCall)> = (0..servers.len())
        .map(|server| (server, big_call(&bench, server)))
        .collect();
    bench
        .progress
        .report("the classic experiment: 10,000 keys, one client");
    let classic = classic_experiment(&bench);
    bench.progress.report("memory per key");
    let memory = memory_per_key(&bench);
    let report = Report::new(&bench, big_calls, classic, memory);
    let markdown = report.markdown(&bench);
    print!("{markdown}");
    std::fs::write(&bench.options.out, &markdown).expect("write the benchmark report");
    eprintln!(
        "wrote {} in {}",
        bench.options.out,
        minutes(bench.progress.started.elapsed().as_secs())
    );
    if bench.options.readme != "-" {
        report.update_readme(&bench.options.readme);
    }
}

// ---------------------------------------------------------------------------
// Report

/// Medians and within-round ratios, ready to print.
struct Report {
    /// (row, variant) -> median sample
    cells: BTreeMap<(Row, Variant), Sample>,
    big_calls: Vec<(usize, BigCall)>,
    classic: Vec<(&'static str, f64)>,
    memory: Memory,
    failed_calls: u64,
    /// (row, numerator, denominator) -> median within-round ratio of server
    /// time per key
    ratios: BTreeMap<(Row, Variant, Variant), f64>,
    /// (row, variant) -> median within-round ratio to MSET of keys/s
    rate_ratios: BTreeMap<(Row, Variant), f64>,
    /// (workload, values) -> median within-round ratio of the NUMKEYS
    /// form's server time per key to the TTL form's
    numkeys_vs_ttl: BTreeMap<(Workload, Values), f64>,
}

/// One target: what, where, the figure, whether it holds.
struct Goal {
    what: String,
    measured: String,
    holds: bool,
}

impl Report {
    fn new(
        bench: &Bench,
        big_calls: Vec<(usize, BigCall)>,
        classic: Vec<(&'static str, f64)>,
        memory: Memory,
    ) -> Report {
        let mut cells = BTreeMap::new();
        let mut ratios = BTreeMap::new();
        let mut rate_ratios = BTreeMap::new();
        let per_round = |row: Row, num: Variant, den: Variant, f: fn(&Sample) -> f64| {
            let (Some(a), Some(b)) = (
                bench.samples.get(&(row, num)),
                bench.samples.get(&(row, den)),
            ) else {
                return f64::NAN;
            };
            median(a.iter().zip(b).map(|(a, b)| f(a) / f(b)).collect())
        };
        for ((row, variant), samples) in &bench.samples {
            let med = |f: fn(&Sample) -> f64| median(samples.iter().map(f).collect());
            cells.insert(
                (*row, *variant),
                Sample {
                    keys_per_sec: med(|s| s.keys_per_sec),
                    server_us_per_key: med(|s| s.server_us_per_key),
                    p50_ms: med(|s| s.p50_ms),
                    p99_ms: med(|s| s.p99_ms),
                    failed: samples.iter().map(|s| s.failed).sum(),
                },
            );
            for den in [
                Variant::Mset,
                Variant::Builtin,
                Variant::Lua,
                Variant::Setex,
            ] {
                let ratio = per_round(*row, *variant, den, |s| s.server_us_per_key);
                if ratio.is_finite() {
                    ratios.insert((*row, *variant, den), ratio);
                }
            }
            rate_ratios.insert(
                (*row, *variant),
                per_round(*row, *variant, Variant::Mset, |s| s.keys_per_sec),
            );
        }
        let mut numkeys_vs_ttl = BTreeMap::new();
        for values in [Values::Small, Values::Integer] {
            for workload in Workload::BOTH {
                let row = |form| Row {
                    setup: Setup {
                        server: 0,
                        form,
                        persistence: Persistence::None,
                        replicate: Replicate::Set,
                    },
                    workload,
                    values,
                    batch: 100,
                };
                // The two forms run on identical servers (pinned alike), one
                // after the other in each round: their server times compare
                // directly. Dividing each by its own server's MSET first
                // added MSET's noise: MSET of new integers took 0.55 or
                // 0.9 us a key from one server process to the next.
                let cost = |form| -> Vec<f64> {
                    bench
                        .samples
                        .get(&(row(form), Variant::Module))
                        .map(|samples| samples.iter().map(|s| s.server_us_per_key).collect())
                        .unwrap_or_default()
                };
                let per_round = cost(Form::Numkeys)
                    .iter()
                    .zip(cost(Form::Ttl))
                    .map(|(numkeys, ttl)| numkeys / ttl)
                    .collect();
                numkeys_vs_ttl.insert((workload, values), median(per_round));
            }
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
            big_calls,
            classic,
            memory,
            failed_calls,
            ratios,
            rate_ratios,
            numkeys_vs_ttl,
        }
    }

    /// The within-round ratio of the module to `den` in the row given.
    fn ratio(&self, row: Row, den: Variant) -> f64 {
        self.ratios
            .get(&(row, Variant::Module, den))
            .copied()
            .unwrap_or(f64::NAN)
    }

    fn main_row(&self, persistence: Persistence, replicate: Replicate, values: Values) -> [Row; 2] {
        Workload::BOTH.map(|workload| Row {
            setup: Setup {
                server: 0,
                form: Form::Ttl,
                persistence,
                replicate,
            },
            workload,
            values,
            batch: 100,
        })
    }

    fn targets(&self, bench: &Bench) -> Vec<Goal> {
        let mut list = Vec::new();
        let main = bench.servers[0].describe();
        let both = |what: &str, rows: [Row; 2], den: Variant, limits: [f64; 2]| {
            let mut goals = Vec::new();
            for (row, limit) in rows.into_iter().zip(limits) {
                let ratio = self.ratio(row, den);
                goals.push(Goal {
                    what: format!(
                        "{what}, {}: at most {}x",
                        row.workload.label(),
                        // 1.6, 2.3, 0.33: as short as the limit needs.
                        format!("{limit:.2}")
                            .trim_end_matches('0')
                            .trim_end_matches('.')
                    ),
                    measured: format!("{ratio:.2}x"),
                    holds: ratio <= limit,
                });
            }
            goals
        };
        list.extend(both(
            &format!("{main}, no persistence, MSETEX / MSET (no regression)"),
            self.main_row(Persistence::None, Replicate::Set, Values::Small),
            Variant::Mset,
            [1.7, 2.2],
        ));
        // Every server from Redis 7.0 on: below pipelined SETEX, without
        // persistence and with a replica in REPLICATE MSETEX mode; refreshing
        // sessions at most 1.8x MSET on the servers without a cheaper path
        // before (Valkey 8.1, Redis 8.6).
        for (index, server) in bench.servers.iter().enumerate() {
            if server.product == Product::Redis && server.version < (7, 0, 0) {
                continue;
            }
            let rows = |persistence, replicate| {
                Workload::BOTH.map(|workload| Row {
                    setup: Setup {
                        server: index,
                        form: Form::Ttl,
                        persistence,
                        replicate,
                    },
                    workload,
                    values: Values::Small,
                    batch: 100,
                })
            };
            let name = server.describe();
            list.extend(both(
                &format!("{name}, no persistence, MSETEX / pipelined SETEX"),
                rows(Persistence::None, Replicate::Set),
                Variant::Setex,
                [0.99, 0.99],
            ));
            list.extend(both(
                &format!("{name}, one replica, REPLICATE MSETEX, MSETEX / pipelined SETEX"),
                rows(Persistence::Replica, Replicate::Msetex),
                Variant::Setex,
                [0.99, 0.99],
            ));
            let session_target = match server.product {
                Product::Valkey => server.version.0 == 8 && server.version.1 == 1,
                Product::Redis => server.version.0 == 8 && server.version.1 == 6,
            };
            if session_target {
                let [overwrite, _] = rows(Persistence::None, Replicate::Set);
                let ratio = self.ratio(overwrite, Variant::Mset);
                list.push(Goal {
                    what: format!("{name}, no persistence, MSETEX / MSET, overwrite: at most 1.8x"),
                    measured: format!("{ratio:.2}x"),
                    holds: ratio <= 1.8,
                });
            }
        }
        list.extend(both(
            &format!("{main}, no persistence, integer values, MSETEX / MSET"),
            self.main_row(Persistence::None, Replicate::Set, Values::Integer),
            Variant::Mset,
            [2.5, 2.5],
        ));
        list.extend(both(
            &format!("{main}, one replica, REPLICATE MSETEX, MSETEX / MSET"),
            self.main_row(Persistence::Replica, Replicate::Msetex, Values::Small),
            Variant::Mset,
            [1.8, 2.3],
        ));
        for (index, server) in bench.servers.iter().enumerate() {
            if !server.has_builtin_msetex() {
                continue;
            }
            let rows = Workload::BOTH.map(|workload| Row {
                setup: Setup {
                    server: index,
                    form: Form::Ttl,
                    persistence: Persistence::Replica,
                    replicate: Replicate::Msetex,
                },
                workload,
                values: Values::Small,
                batch: 100,
            });
            list.extend(both(
                &format!(
                    "{}, one replica, REPLICATE MSETEX, module / built-in MSETEX",
                    server.describe()
                ),
                rows,
                Variant::Builtin,
                [1.0, 1.0],
            ));
        }
        list.extend(both(
            &format!("{main}, no persistence, MSETEX / Lua SET EX loop"),
            self.main_row(Persistence::None, Replicate::Set, Values::Small),
            Variant::Lua,
            [1.0 / 3.0, 0.5],
        ));
        list.extend(both(
            &format!("{main}, no persistence, MSETEX / pipelined SETEX"),
            self.main_row(Persistence::None, Replicate::Set, Values::Small),
            Variant::Setex,
            [0.99, 0.99],
        ));
        // The NUMKEYS form costs what the TTL form costs (within 10%).
        for values in [Values::Small, Values::Integer] {
            for ttl_row in self.main_row(Persistence::None, Replicate::Set, values) {
                let ratio = self
                    .numkeys_vs_ttl
                    .get(&(ttl_row.workload, values))
                    .copied()
                    .unwrap_or(f64::NAN);
                list.push(Goal {
                    what: format!(
                        "{main}, no persistence, {} {}: NUMKEYS form / TTL form, server time per key, within 10% of 1",
                        values.label(),
                        ttl_row.workload.label()
                    ),
                    measured: format!("{ratio:.2}x"),
                    holds: (ratio - 1.0).abs() <= 0.10,
                });
            }
        }
        for (index, call) in &self.big_calls {
            if *index != 0 {
                continue;
            }
            list.push(Goal {
                what: format!(
                    "{main}, one call refreshing 10,000 keys: server time at most 1.5x one MSET of them"
                ),
                measured: format!("{:.2}x", call.refresh_ratio),
                holds: call.refresh_ratio <= 1.5,
            });
        }
        for (values, msetex, set) in &self.memory.rows {
            let ratio = msetex / set;
            list.push(Goal {
                what: format!(
                    "{main}, memory per key, {} values: within 5% of SET EX",
                    values.label()
                ),
                measured: format!("{ratio:.3}x"),
                holds: (ratio - 1.0).abs() <= 0.05,
            });
        }
        list.push(Goal {
            what: "zero failed calls or runs".into(),
            measured: self.failed_calls.to_string(),
            holds: self.failed_calls == 0,
        });
        list
    }

    fn markdown(&self, bench: &Bench) -> String {
        let mut md = String::new();
        let _ = writeln!(md, "# MSETEX benchmarks\n");
        let _ = writeln!(
            md,
            "Generated by `make bench` (examples/bench.rs{}); do not edit by hand.\n",
            if bench.options.quick {
                ", **quick mode: two rounds, fewer keys; a first look, not a measurement**"
            } else {
                ""
            }
        );
        let _ = writeln!(md, "## Machine and method\n");
        for (k, v) in machine(bench) {
            let _ = writeln!(md, "- {k}: {v}");
        }
        let _ = writeln!(
            md,
            "- method: redis-benchmark, {CLIENTS} clients, {} keys written per run, {} rounds; in \
             each round every variant of a row runs once, one after another, on the same \
             server. Server time per key is INFO commandstats `usec_per_call` divided by the \
             keys per call (SETEX: pipelined with `-P` equal to the batch). Figures are \
             medians over rounds; each ratio is the median of the ratios measured within a \
             round. TTL {TTL} s everywhere. A replica runs on the same machine, on the \
             client's CPU when pinned (see CPU pinning).",
            bench.options.keys_per_run, bench.options.rounds
        );
        let _ = writeln!(
            md,
            "- workloads: `overwrite` rewrites a fixed set of {OVERWRITE_KEYSPACE} keys that \
             all hold TTLs and values of the same size (reloaded with SET EX before every \
             run), as a session store does; `fresh` starts each run with FLUSHALL and writes \
             random keys from a space of {FRESH_KEYSPACE}, so every key is new. Values: 32 \
             bytes, 1024 bytes, or the integer {INTEGER_VALUE} (stored as `int`). MSET sets \
             no TTL: it is the floor MSETEX is measured against.\n"
        );

        let _ = writeln!(md, "## Targets\n");
        let _ = writeln!(
            md,
            "Batch 100, 32-byte values unless said otherwise; ratios of server time per key \
             (below 1: MSETEX costs less).\n"
        );
        let _ = writeln!(md, "| target | measured | holds |\n| --- | ---: | --- |");
        for target in self.targets(bench) {
            let _ = writeln!(
                md,
                "| {} | {} | {} |",
                target.what,
                target.measured,
                if target.holds { "yes" } else { "**no**" }
            );
        }

        self.matrix_markdown(bench, &mut md);
        self.big_call_markdown(bench, &mut md);

        let _ = writeln!(
            md,
            "\n## {}: every row\n\nOne section per server configuration. `vs MSET` is \
             the within-round ratio of server time per key; `rate vs MSET` that of keys/s \
             seen by the clients.",
            bench.servers[0].describe()
        );
        let mut current: Option<Setup> = None;
        for ((row, variant), sample) in &self.cells {
            if row.setup.server != 0 {
                continue;
            }
            if current != Some(row.setup) {
                current = Some(row.setup);
                let _ = writeln!(
                    md,
                    "\n### {}\n\n| workload | value | keys/call | variant | keys/s | rate vs MSET | server µs/key | vs MSET | p50 ms | p99 ms | failed |\n| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
                    bench.describe_setup(row.setup)
                );
            }
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {:.0} | {:.2}x | {:.3} | {:.2}x | {:.3} | {:.3} | {} |",
                row.workload.label(),
                row.values.label(),
                row.batch,
                bench.variant_label(row.setup, *variant),
                sample.keys_per_sec,
                self.rate_ratios
                    .get(&(*row, *variant))
                    .copied()
                    .unwrap_or(f64::NAN),
                sample.server_us_per_key,
                self.ratios
                    .get(&(*row, *variant, Variant::Mset))
                    .copied()
                    .unwrap_or(f64::NAN),
                sample.p50_ms,
                sample.p99_ms,
                sample.failed
            );
        }

        let _ = writeln!(
            md,
            "\n## The classic experiment: 10,000 keys with a 10 s TTL, one client\n\n\
             A PHP client measured (a) 0.418 s, (b) 0.438 s and (c) 0.029 s per 10,000 keys \
             on a 2019 VM. The same four approaches, timed here end to end on {} (median \
             of {} runs):\n\n| approach | seconds per 10,000 keys |\n| --- | ---: |",
            bench.servers[0].describe(),
            if bench.options.quick { 1 } else { 3 }
        );
        for (label, seconds) in &self.classic {
            let _ = writeln!(md, "| {label} | {seconds:.4} |");
        }

        let _ = writeln!(
            md,
            "\n## Memory: 1,000,000 keys with TTL on {}\n\n\
             | values | MSETEX (1,000 keys per call), used_memory per key | SET ... EX | ratio |\n\
             | --- | ---: | ---: | ---: |",
            bench.servers[0].describe()
        );
        for (values, msetex, set) in &self.memory.rows {
            let _ = writeln!(
                md,
                "| {} | {msetex:.1} B | {set:.1} B | {:.3} |",
                match values {
                    Values::Integer => "integers (0 to 7.9 billion)",
                    _ => values.label(),
                },
                msetex / set
            );
        }
        if !bench.failures.is_empty() {
            let _ = writeln!(md, "\n## Failed runs\n");
            for failure in &bench.failures {
                let _ = writeln!(md, "- {failure}");
            }
        }
        md
    }

    /// One line per server: the module against MSET, pipelined SETEX and
    /// the built-in, without persistence and with a replica.
    fn matrix_markdown(&self, bench: &Bench, md: &mut String) {
        let _ = writeln!(
            md,
            "\n## Every server\n\nBatch 100, 32-byte values, server time per key as a ratio \
             to MSET in the same round (overwrite / fresh). The replica runs with the module \
             (REPLICATE MSETEX). On servers with a built-in MSETEX the module is loaded as \
             `{RENAMED}`; the last column is the module against the built-in.\n\n\
             | server | MSETEX, no persistence | MSETEX, one replica | SETEX pipelined, one replica | built-in MSETEX, one replica | module / built-in, one replica |\n\
             | --- | ---: | ---: | ---: | ---: | ---: |"
        );
        for (index, server) in bench.servers.iter().enumerate() {
            let pair = |persistence, replicate, variant, den| {
                Workload::BOTH
                    .map(|workload| {
                        let row = Row {
                            setup: Setup {
                                server: index,
                                form: Form::Ttl,
                                persistence,
                                replicate,
                            },
                            workload,
                            values: Values::Small,
                            batch: 100,
                        };
                        self.ratios
                            .get(&(row, variant, den))
                            .map_or("-".to_owned(), |r| format!("{r:.2}x"))
                    })
                    .join(" / ")
            };
            let builtin = server.has_builtin_msetex();
            let replicate = Replicate::Msetex;
            let note = if index == 0 {
                " (server under test)"
            } else {
                ""
            };
            let _ = writeln!(
                md,
                "| {}{note} | {} | {} | {} | {} | {} |",
                server.describe(),
                pair(
                    Persistence::None,
                    Replicate::Set,
                    Variant::Module,
                    Variant::Mset
                ),
                pair(
                    Persistence::Replica,
                    replicate,
                    Variant::Module,
                    Variant::Mset
                ),
                pair(
                    Persistence::Replica,
                    replicate,
                    Variant::Setex,
                    Variant::Mset
                ),
                if builtin {
                    pair(
                        Persistence::Replica,
                        replicate,
                        Variant::Builtin,
                        Variant::Mset,
                    )
                } else {
                    "-".to_owned()
                },
                if builtin {
                    pair(
                        Persistence::Replica,
                        replicate,
                        Variant::Module,
                        Variant::Builtin,
                    )
                } else {
                    "-".to_owned()
                },
            );
        }
    }

    fn big_call_markdown(&self, bench: &Bench, md: &mut String) {
        let _ = writeln!(
            md,
            "\n## One call of 10,000 keys\n\nServer time of one MSETEX of 10,000 keys against \
             one MSET of the same keys (no persistence; median of {} rounds). `refresh`: \
             every key exists with a TTL and a value of the same length, as when a session \
             store rewrites its sessions. Nothing else runs while such a call does: split \
             very large batches if that matters.\n\n\
             | server | new keys: MSETEX µs | MSET µs | ratio | refresh: MSETEX µs | MSET µs | ratio |\n\
             | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
            bench.options.rounds.max(3)
        );
        for (index, call) in &self.big_calls {
            let _ = writeln!(
                md,
                "| {} | {:.0} | {:.0} | {:.2}x | {:.0} | {:.0} | {:.2}x |",
                bench.servers[*index].describe(),
                call.new_us.0,
                call.new_us.1,
                call.new_ratio,
                call.refresh_us.0,
                call.refresh_us.1,
                call.refresh_ratio
            );
        }
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
        // (label, persistence, REPLICATE mode, values, against)
        let lines = [
            (
                "no persistence",
                Persistence::None,
                Replicate::Set,
                Values::Small,
                Variant::Mset,
            ),
            (
                "integer values, no persistence",
                Persistence::None,
                Replicate::Set,
                Values::Integer,
                Variant::Mset,
            ),
            (
                "cluster mode, no replica",
                Persistence::Cluster,
                Replicate::Set,
                Values::Small,
                Variant::Mset,
            ),
            (
                "one replica, `REPLICATE SET` (default)",
                Persistence::Replica,
                Replicate::Set,
                Values::Small,
                Variant::Mset,
            ),
            (
                "one replica, `REPLICATE MSETEX`",
                Persistence::Replica,
                Replicate::Msetex,
                Values::Small,
                Variant::Mset,
            ),
            (
                "MSETEX against the usual Lua `SET ... EX` loop",
                Persistence::None,
                Replicate::Set,
                Values::Small,
                Variant::Lua,
            ),
        ];
        let table: String = lines
            .iter()
            .map(|(label, persistence, replicate, values, den)| {
                let [overwrite, fresh] = self
                    .main_row(*persistence, *replicate, *values)
                    .map(|row| format!("{:.2}x", self.ratio(row, *den)));
                format!("| {label} | {overwrite} | {fresh} |\n")
            })
            .collect();
        let classic = |prefix: &str| {
            self.classic
                .iter()
                .find(|(label, _)| label.starts_with(prefix))
                .map_or(f64::NAN, |(_, s)| *s)
        };
        let refresh = self
            .big_calls
            .iter()
            .find(|(index, _)| *index == 0)
            .map_or(f64::NAN, |(_, call)| call.refresh_ratio);
        let block = format!(
            "{START}\nFrom the last `make bench` ([docs/BENCHMARKS.md](docs/BENCHMARKS.md): \
             every server, every row); server time per key against MSET, which sets no TTL, \
             in the same run (100 keys per call, 32-byte values, 20 clients; keys that \
             already hold TTLs / new keys):\n\n\
             | | overwrite | new keys |\n| --- | ---: | ---: |\n{table}\n\
             10,000 keys with a 10 s TTL from one client: {:.3} s with one MSETEX, {:.3} s \
             with one MSET (no TTL), {:.3} s with one SETEX per key; one call refreshing \
             10,000 keys costs {refresh:.2}x the server time of one MSET of them.\n{END}",
            classic("(d)"),
            classic("(c)"),
            classic("(a)"),
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
    let benchmark = Command::new("redis-benchmark")
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    vec![
        ("date", date),
        ("machine", format!("{cores} cores, {cpu}")),
        (
            "servers",
            bench
                .servers
                .iter()
                .map(Target::describe)
                .collect::<Vec<_>>()
                .join(", "),
        ),
        ("client", format!("{benchmark}, on the same machine")),
        ("CPU pinning", bench.pinning.describe()),
        ("module", format!("commit {commit}")),
        (
            "duration",
            minutes(bench.progress.started.elapsed().as_secs()),
        ),
    ]
}
