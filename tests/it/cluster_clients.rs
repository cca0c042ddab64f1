//! Every cluster client routes every call (issue #48): on clusters of three primaries,
//! calls with every option and hash-tagged keys, sent through real cluster clients,
//! reach the node that owns their keys and set their TTLs.
//!
//! Clients (tests/clients): redis-py 8.2.0 and 8.1.0 (`RedisCluster` and the asyncio
//! one, `execute_command`; and the typed `msetex()` where the NUMKEYS form is named
//! `msetex`), valkey-glide 2.6.0 (asyncio `GlideClusterClient.custom_command`),
//! node-redis 5 (`createCluster`, `sendCommand(firstKey, ...)`), ioredis 6 (`Cluster`,
//! `call`), redis-rs's `ClusterClient`, and as the reference no client at all: each call
//! sent straight to the node that owns its keys, which shows what the server takes.
//! The Python clients are installed into virtual environments and the Node.js ones with
//! `npm ci`, under target/<profile>/cluster-clients, once, and reused; a client that
//! cannot be installed here (no venv, no Node.js 20, no registry) is skipped with the
//! reason, and one that is installed must pass.
//!
//! Each cluster is started once per server configuration (a row), and every client runs
//! the same calls against it, after FLUSHALL and CONFIG RESETSTAT: none, EX, PX, EXAT,
//! PXAT, NX, XX, KEEPTTL (NUMKEYS form), NX and XX misses that reply 0, options after
//! the pairs in either order, values that are themselves hash-tagged keys of another
//! node, and values that read like options. Afterwards every key is read on its owner
//! (value and PTTL), and no node holds a key of a slot it does not own (KEYS, DBSIZE,
//! CLUSTER COUNTKEYSINSLOT).
//!
//! Which rows: when the server under test is the default one (Debian's Redis 7.0.15,
//! `make test`), the whole matrix: Valkey 9.1.2 (`SYNTAX NUMKEYS COMMAND-NAME
//! msetex.nk`; `COMMAND-NAME msetex.ttl`), Valkey 8.1.1 at io-threads 4 (both forms as
//! `msetex`), Redis 8.6.3 (`msetex.nk` and `msetex.ttl`, at io-threads 1 and 4) from
//! ../shared/servers, and Redis 7.0.15 (both forms as `msetex`): about 45 s once the
//! clients are installed. On any other server (`make test-matrix` runs the suite once
//! per server) only that server's own rows ([`rows_of`]), 10 to 20 s.
//! `MSETEX_CLUSTER_CLIENTS=all` asks for the whole matrix on any server,
//! `MSETEX_CLUSTER_CLIENTS=current` for the current server's rows only.
//!
//! The matrix runs once per test binary, whichever of the tests below comes first; each
//! test then judges its client's cells. The table of every cell (and how each client
//! routed: COMMAND read, COMMAND GETKEYS asked, MOVED followed) is written to
//! target/<profile>/cluster-clients.txt and printed by a failing test.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use msetex_harness::*;

/// The two syntaxes of the module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// `name [NX|XX] [EX|PX|EXAT|PXAT] time key value ...`
    Ttl,
    /// `name numkeys key value ... [NX|XX] [EX s|PX ms|EXAT|PXAT|KEEPTTL]`
    Numkeys,
}

/// One server configuration: a three-primary cluster of `server` with the module in
/// `form`, under the name that server gives it, at `io_threads`.
#[derive(Debug, Clone, Copy)]
struct Row {
    server: &'static Target,
    form: Form,
    io_threads: u32,
}

impl Row {
    fn name(&self) -> &'static str {
        match self.form {
            Form::Ttl => self.server.command_name(),
            Form::Numkeys => self.server.numkeys_name(),
        }
    }

    fn module_args(&self) -> Vec<String> {
        match self.form {
            Form::Ttl => self.server.default_module_args(),
            Form::Numkeys => self.server.numkeys_module_args(),
        }
    }

    fn label(&self) -> String {
        let mut args = self.module_args().join(" ");
        if args.is_empty() {
            args = "no arguments".to_owned();
        }
        // A build made for the tests says so (it reports the version it was built from).
        let build = Path::new(&self.server.binary)
            .parent()
            .and_then(Path::file_name)
            .map(|dir| dir.to_string_lossy().into_owned())
            .filter(|dir| dir.contains("keystep"))
            .map(|dir| format!(" ({dir})"))
            .unwrap_or_default();
        format!(
            "{}{build}, {} ({args}), io-threads {}",
            self.server.describe(),
            self.name(),
            self.io_threads
        )
    }

    fn config(&self) -> ServerConfig {
        let args = self.module_args();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut config = ServerConfig::default()
            .binary(self.server)
            .module_args(&args);
        if self.io_threads > 1 {
            config = config.line(&format!("io-threads {}", self.io_threads));
        }
        config
    }
}

/// The rows a server gets: both forms, at the io-threads where its keys are read
/// differently. Valkey 9+: io-threads 1 (it reads key specs in cluster mode anyway);
/// Valkey 8.x: io-threads 4 (key specs only then); Redis 8.2+: io-threads 1 and 4 (key
/// specs only, and the TTL form's refusal); others io-threads 1.
fn rows_of(server: &'static Target) -> Vec<Row> {
    let row = |form, io_threads| Row {
        server,
        form,
        io_threads,
    };
    if server.is_valkey() {
        if server.at_least(None, Some((9, 0))) {
            vec![row(Form::Numkeys, 1), row(Form::Ttl, 1)]
        } else if server.at_least(None, Some((8, 0))) {
            vec![row(Form::Ttl, 4), row(Form::Numkeys, 4)]
        } else {
            vec![row(Form::Ttl, 1), row(Form::Numkeys, 1)]
        }
    } else if server.at_least(Some((8, 2)), None) {
        vec![
            row(Form::Numkeys, 1),
            row(Form::Ttl, 1),
            row(Form::Ttl, 4),
            row(Form::Numkeys, 4),
        ]
    } else {
        vec![row(Form::Ttl, 1), row(Form::Numkeys, 1)]
    }
}

/// The servers of the whole matrix besides the default one, in ../shared/servers.
const MATRIX_SERVERS: [&str; 3] = [
    "valkey-9.1.2/valkey-server",
    "valkey-8.1.1/valkey-server",
    "redis-8.6.3/redis-server",
];

/// Whether this run covers the whole matrix (see the module's doc).
fn whole_matrix() -> bool {
    match std::env::var("MSETEX_CLUSTER_CLIENTS").as_deref() {
        Ok("all") => true,
        Ok("current") => false,
        _ => {
            let server = target();
            !server.is_valkey() && server.version == (7, 0, 15)
        }
    }
}

/// The rows of this run, and the matrix's servers missing from this machine.
fn rows() -> (Vec<Row>, Vec<String>) {
    let mut rows = Vec::new();
    let mut missing = Vec::new();
    if whole_matrix() {
        for path in MATRIX_SERVERS {
            let path = shared_servers_dir().join(path).display().to_string();
            match targets_at(std::slice::from_ref(&path)).pop() {
                Some(server) => rows.extend(rows_of(Box::leak(Box::new(server)))),
                None => missing.push(path),
            }
        }
    }
    // The server under test, unless it is one of the matrix's binaries.
    let canonical = |binary: &str| std::fs::canonicalize(binary).ok();
    let current = target();
    let here = canonical(&current.binary);
    if !rows
        .iter()
        .any(|row| here.is_some() && canonical(&row.server.binary) == here)
    {
        rows.extend(rows_of(current));
    }
    (rows, missing)
}

/// Where a client's library comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Env {
    /// A Python virtual environment from tests/clients/python/requirements-<name>.txt.
    Venv(&'static str),
    /// tests/clients/node, installed with `npm ci`.
    Node,
    /// This test binary (redis-rs, or no client).
    Here,
}

/// One way of sending the calls.
struct Client {
    label: &'static str,
    env: Env,
    /// The driver's variant (tests/clients/*/driver.*), or `redis-rs` / `owner`.
    variant: &'static str,
}

impl Client {
    /// Whether this client can send `row`'s calls at all: a typed method sends the name
    /// MSETEX and the numkeys form; ioredis's own command table reads `msetex` as the
    /// built-in's numkeys form, so it cannot send the TTL form under that name (its first
    /// argument read as the count of pairs: a `TypeError` in the client; docs/OPERATIONS.md,
    /// "Cluster clients").
    fn applies_to(&self, row: &Row) -> bool {
        let msetex = row.name() == "msetex";
        match self.variant {
            "ioredis" => !(msetex && row.form == Form::Ttl),
            typed if typed.ends_with("-typed") => row.form == Form::Numkeys && msetex,
            _ => true,
        }
    }
}

const CLIENTS: [Client; 11] = [
    Client {
        label: "no client: to the owner",
        env: Env::Here,
        variant: "owner",
    },
    Client {
        label: "redis-py 8.2.0",
        env: Env::Venv("redis-py-8.2"),
        variant: "redis-py",
    },
    Client {
        label: "redis-py 8.2.0 asyncio",
        env: Env::Venv("redis-py-8.2"),
        variant: "redis-py-asyncio",
    },
    Client {
        label: "redis-py 8.2.0 msetex()",
        env: Env::Venv("redis-py-8.2"),
        variant: "redis-py-typed",
    },
    Client {
        label: "redis-py 8.1.0",
        env: Env::Venv("redis-py-8.1"),
        variant: "redis-py",
    },
    Client {
        label: "redis-py 8.1.0 asyncio",
        env: Env::Venv("redis-py-8.1"),
        variant: "redis-py-asyncio",
    },
    Client {
        label: "redis-py 8.1.0 msetex()",
        env: Env::Venv("redis-py-8.1"),
        variant: "redis-py-typed",
    },
    Client {
        label: "valkey-glide 2.6.0",
        env: Env::Venv("valkey-glide"),
        variant: "glide",
    },
    Client {
        label: "node-redis 5.12.4",
        env: Env::Node,
        variant: "node-redis",
    },
    Client {
        label: "ioredis 6.1.0",
        env: Env::Node,
        variant: "ioredis",
    },
    Client {
        label: "redis-rs 1.8 cluster",
        env: Env::Here,
        variant: "redis-rs",
    },
];

/// What a call's keys hold afterwards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ttl {
    /// A relative TTL of this many ms, set during the run.
    For(i64),
    /// A deadline, Unix time in ms.
    At(i64),
    /// No TTL (PTTL -1).
    Persist,
    /// The TTL the key had (KEEPTTL).
    Keep,
}

/// What a call must do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// Reply `reply` (OK, or 1) and write every pair with `ttl`.
    Written { reply: &'static str, ttl: Ttl },
    /// Reply 0 and write nothing (an NX or XX condition that fails).
    Miss,
}

/// One call of a plan.
#[derive(Debug, Clone)]
struct Call {
    /// The matrix's column title: the options.
    option: &'static str,
    args: Vec<String>,
    pairs: Vec<(String, String)>,
    expect: Expect,
}

/// What a client got back for one call.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Reply {
    /// `OK`, or an integer.
    Value(String),
    /// The error's class (the client's exception type) and text.
    Error(String, String),
}

impl Reply {
    fn short(&self) -> String {
        match self {
            Reply::Value(value) => value.clone(),
            Reply::Error(class, text) => format!("{class}: {text}"),
        }
    }
}

/// The calls of one client on one row. Tags are picked so that the calls' keys spread
/// over the three primaries; every value is a hash-tagged string of another node's slot.
struct Planner<'a> {
    owners: &'a [SlotOwner],
    ports: Vec<u16>,
    prefix: String,
    tags: usize,
}

impl Planner<'_> {
    /// A new hash tag whose slot the `n`-th primary owns.
    fn tag_on(&mut self, n: usize) -> String {
        let port = self.ports[n % self.ports.len()];
        loop {
            self.tags += 1;
            let tag = format!("{}{}", self.prefix, self.tags);
            if owner_port(self.owners, key_slot(tag.as_bytes())) == Some(port) {
                return tag;
            }
        }
    }

    /// Pairs `key -> value` for `names` under `tag`; values tagged for another node.
    fn pairs(&mut self, tag: &str, names: &[&str], call: usize) -> Vec<(String, String)> {
        let here = owner_port(self.owners, key_slot(tag.as_bytes()));
        let index = self
            .ports
            .iter()
            .position(|p| Some(*p) == here)
            .unwrap_or(0);
        let elsewhere = self.tag_on(index + 1);
        names
            .iter()
            .map(|name| {
                (
                    format!("{{{tag}}}:{name}"),
                    format!("{{{elsewhere}}}v{call}{name}"),
                )
            })
            .collect()
    }
}

/// What a plan's call does, before the form and the row decide its reply.
#[derive(Clone, Copy)]
enum Does {
    /// Writes every pair with this TTL.
    Write(Ttl),
    /// An NX or XX condition that fails: 0, nothing written.
    Miss,
}

/// The calls for `form` under `name`, on the cluster whose slots `owners` lists. Each call's TTL differs from
/// every other's by far more than the checks' slack, so every key shows which call set it.
fn plan(form: Form, name: &str, owners: &[SlotOwner], prefix: &str) -> Vec<Call> {
    // The primaries in slot order, so that the same tags land on the same shares of the
    // slots in every run.
    let mut by_slot = owners.to_vec();
    by_slot.sort_by_key(|owner| owner.first);
    let mut ports: Vec<u16> = Vec::new();
    for owner in by_slot {
        if !ports.contains(&owner.port) {
            ports.push(owner.port);
        }
    }
    let mut p = Planner {
        owners,
        ports,
        prefix: prefix.to_owned(),
        tags: 0,
    };
    let now = now_ms();
    let s = |seconds: i64| seconds * 1000;
    // New tags go to the primaries in turn.
    let tags: Vec<String> = (0..8).map(|n| p.tag_on(n)).collect();
    let mut calls = Vec::new();
    // A call of `names` under tag `tag` with `options` (the TTL form's time included),
    // where the form puts them.
    let mut call = |option: &'static str, tag: usize, names: &[&str], options: &str, does: Does| {
        let index = calls.len();
        let mut pairs = p.pairs(&tags[tag], names, index);
        if let Some(words) = option.strip_prefix("v=") {
            // Values that read like the options of the title (v=NX,EX).
            for (pair, word) in pairs.iter_mut().zip(words.split(',')) {
                pair.1 = word.to_owned();
            }
        }
        let options: Vec<String> = options.split_whitespace().map(str::to_owned).collect();
        let conditional = options.iter().any(|o| o == "NX" || o == "XX");
        let expect = match does {
            Does::Miss => Expect::Miss,
            Does::Write(ttl) => Expect::Written {
                reply: if form == Form::Ttl && !conditional {
                    "OK"
                } else {
                    "1"
                },
                ttl,
            },
        };
        let mut args = vec![name.to_owned()];
        let flat = pairs.iter().flat_map(|(k, v)| [k.clone(), v.clone()]);
        match form {
            Form::Ttl => {
                args.extend(options);
                args.extend(flat);
            }
            Form::Numkeys => {
                args.push(pairs.len().to_string());
                args.extend(flat);
                args.extend(options);
            }
        }
        calls.push(Call {
            option,
            args,
            pairs,
            expect,
        });
    };
    use Does::{Miss, Write};
    use Ttl::{At, For, Keep, Persist};
    match form {
        Form::Numkeys => {
            let exat = now / 1000 + 3000;
            let pxat = now + s(4000);
            let pxat_nx = now + s(9000);
            call("none", 0, &["a", "b"], "", Write(Persist));
            call("EX", 1, &["a", "b"], "EX 1000", Write(For(s(1000))));
            call("PX", 2, &["a", "b", "c"], "PX 2000000", Write(For(s(2000))));
            call(
                "EXAT",
                3,
                &["a", "b"],
                &format!("EXAT {exat}"),
                Write(At(exat * 1000)),
            );
            call(
                "PXAT",
                4,
                &["a", "b"],
                &format!("PXAT {pxat}"),
                Write(At(pxat)),
            );
            call("NX EX", 5, &["a", "b"], "NX EX 5000", Write(For(s(5000))));
            // NX where one key exists.
            call("NX PX:0", 5, &["c", "a"], "NX PX 6000000", Miss);
            call("XX EX", 0, &["a", "b"], "XX EX 7000", Write(For(s(7000))));
            // XX where one key is missing.
            call("XX PX:0", 1, &["a", "z"], "XX PX 8000000", Miss);
            call("KEEPTTL", 1, &["a", "b"], "KEEPTTL", Write(Keep));
            // No expiry on keys with a TTL: cleared, as SET clears it.
            call("none/TTL", 2, &["a", "b"], "", Write(Persist));
            // The condition after the expiry.
            let options = format!("PXAT {pxat_nx} NX");
            call("PXAT NX", 6, &["a", "b", "c"], &options, Write(At(pxat_nx)));
            call("XX KEEPTTL", 3, &["a"], "XX KEEPTTL", Write(Keep));
            call("v=NX,EX", 7, &["a", "b"], "", Write(Persist));
        }
        Form::Ttl => {
            let exat = now / 1000 + 4000;
            let pxat = now + s(5000);
            let nx_pxat = now + s(10_000);
            let xx_exat = now / 1000 + 11_000;
            call("none", 0, &["a", "b"], "1000", Write(For(s(1000))));
            call("EX", 1, &["a", "b"], "EX 2000", Write(For(s(2000))));
            call("PX", 2, &["a", "b", "c"], "PX 3000000", Write(For(s(3000))));
            call(
                "EXAT",
                3,
                &["a", "b"],
                &format!("EXAT {exat}"),
                Write(At(exat * 1000)),
            );
            call(
                "PXAT",
                4,
                &["a", "b"],
                &format!("PXAT {pxat}"),
                Write(At(pxat)),
            );
            call("NX", 5, &["a", "b"], "NX 6000", Write(For(s(6000))));
            call("NX PX:0", 5, &["c", "a"], "NX PX 7000000", Miss);
            call("XX EX", 0, &["a", "b"], "XX EX 8000", Write(For(s(8000))));
            call("XX:0", 1, &["a", "z"], "XX 9000", Miss);
            let options = format!("NX PXAT {nx_pxat}");
            call("NX PXAT", 6, &["a", "b", "c"], &options, Write(At(nx_pxat)));
            let options = format!("XX EXAT {xx_exat}");
            call(
                "XX EXAT",
                2,
                &["a", "b"],
                &options,
                Write(At(xx_exat * 1000)),
            );
            call("v=NX,PX", 7, &["a", "b"], "12000", Write(For(s(12_000))));
        }
    }
    calls
}

/// How a client routed one row's calls, from every node's statistics.
#[derive(Debug, Clone, Copy, Default)]
struct Routing {
    /// `COMMAND` (the whole table) and `COMMAND INFO` calls: a client reading key
    /// positions or key specs.
    command: u64,
    /// `COMMAND GETKEYS` calls.
    getkeys: u64,
    /// `MOVED` replies.
    moved: u64,
    /// `CROSSSLOT` replies.
    crossslot: u64,
    /// Calls of the module's command on every node (MOVED ones included, as rejected).
    calls: u64,
}

impl Routing {
    fn show(&self) -> String {
        format!(
            "COMMAND {} GETKEYS {} MOVED {} CROSSSLOT {} calls {}",
            self.command, self.getkeys, self.moved, self.crossslot, self.calls
        )
    }
}

/// One client on one row.
struct Cell {
    row: usize,
    client: usize,
    outcome: CellOutcome,
}

enum CellOutcome {
    /// Not this client's kind of call (a typed method elsewhere than `msetex` NUMKEYS).
    NotApplicable,
    /// The client is not installed here: why.
    Unavailable(String),
    Ran {
        /// Per call: None when right, else what was wrong.
        calls: Vec<Option<String>>,
        /// What is wrong beyond single calls (a driver that died, stray keys).
        general: Vec<String>,
        routing: Routing,
    },
}

impl Cell {
    fn passed(&self) -> bool {
        match &self.outcome {
            CellOutcome::Ran { calls, general, .. } => {
                general.is_empty() && calls.iter().all(Option::is_none)
            }
            _ => true,
        }
    }
}

/// Everything the tests below judge.
struct Matrix {
    rows: Vec<Row>,
    /// Per row: the option titles of its calls.
    columns: Vec<Vec<&'static str>>,
    missing_servers: Vec<String>,
    /// Per client env: installed, or why not.
    envs: BTreeMap<&'static str, Result<PathBuf, String>>,
    cells: Vec<Cell>,
    seconds: f64,
}

/// target/<profile>, where this test binary is (in deps/).
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    exe.parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>")
        .to_path_buf()
}

fn clients_source() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/clients")
}

fn env_key(env: Env) -> &'static str {
    match env {
        Env::Venv(name) => name,
        Env::Node => "node",
        Env::Here => "here",
    }
}

/// Installs every client environment (in parallel: pip and npm mostly wait).
fn install_clients() -> BTreeMap<&'static str, Result<PathBuf, String>> {
    let base = profile_dir().join("cluster-clients");
    let mut unique: Vec<Env> = Vec::new();
    for client in &CLIENTS {
        if !unique.contains(&client.env) {
            unique.push(client.env);
        }
    }
    std::thread::scope(|scope| {
        let handles: Vec<_> = unique
            .iter()
            .map(|&env| {
                let base = base.clone();
                scope.spawn(move || {
                    let result = match env {
                        Env::Venv(name) => {
                            let requirements = clients_source()
                                .join("python")
                                .join(format!("requirements-{name}.txt"));
                            python_venv(&base.join(format!("venv-{name}")), &requirements)
                        }
                        Env::Node => npm_project(
                            &clients_source().join("node"),
                            &["package.json", "package-lock.json", "driver.mjs"],
                            &base.join("node"),
                            20,
                        ),
                        Env::Here => Ok(base.clone()),
                    };
                    (env_key(env), result)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    })
}

/// Runs `command` (its output to files in `dir`), killed after `limit`; returns stdout,
/// or why it failed.
fn run_driver(mut command: Command, dir: &Path, limit: Duration) -> Result<String, String> {
    let out_path = dir.join("stdout");
    let err_path = dir.join("stderr");
    let stdout = std::fs::File::create(&out_path).expect("driver stdout file");
    let stderr = std::fs::File::create(&err_path).expect("driver stderr file");
    let mut child = command
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .map_err(|e| format!("cannot start the driver: {e}"))?;
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the driver") {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = std::fs::read_to_string(&out_path).unwrap_or_default();
    let err = std::fs::read_to_string(&err_path).unwrap_or_default();
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = lines[lines.len().saturating_sub(6)..].join(" | ");
    match status {
        None => Err(format!("no answer within {limit:?}; stderr: {tail}")),
        Some(status) if !status.success() => Err(format!("driver exited {status}: {tail}")),
        Some(_) => Ok(out),
    }
}

/// The driver's lines as replies.
fn parse_replies(stdout: &str) -> Vec<Reply> {
    stdout
        .lines()
        .filter_map(|line| {
            let mut fields = line.splitn(3, '\t');
            match (fields.next(), fields.next(), fields.next()) {
                (Some("ok"), Some(value), None) => Some(Reply::Value(value.to_owned())),
                (Some("error"), Some(class), text) => Some(Reply::Error(
                    class.to_owned(),
                    text.unwrap_or_default().to_owned(),
                )),
                _ => None,
            }
        })
        .collect()
}

fn value_text(value: &Value) -> String {
    match value {
        Value::Okay => "OK".to_owned(),
        Value::Int(n) => n.to_string(),
        Value::SimpleString(s) => s.clone(),
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        other => format!("{other:?}"),
    }
}

fn redis_reply(result: Result<Value, RedisError>) -> Reply {
    match result {
        Ok(value) => Reply::Value(value_text(&value)),
        Err(e) => Reply::Error("RedisError".to_owned(), error_text(&e)),
    }
}

/// Sends the plan through `client`; the replies, or why the client did not run.
fn send(
    client: &Client,
    env: &Path,
    cluster: &Cluster,
    owners: &[SlotOwner],
    calls: &[Call],
) -> Result<Vec<Reply>, String> {
    let seeds: Vec<String> = cluster
        .nodes
        .iter()
        .map(|n| format!("127.0.0.1:{}", n.port()))
        .collect();
    match client.variant {
        "owner" => Ok(calls
            .iter()
            .map(|call| {
                let slot = key_slot(call.pairs[0].0.as_bytes());
                let port = owner_port(owners, slot).expect("every slot has an owner");
                let mut con = cluster.node(port).client();
                redis_reply(raw_command(&call.args).query(&mut con))
            })
            .collect()),
        "redis-rs" => {
            let urls: Vec<String> = seeds.iter().map(|s| format!("redis://{s}/")).collect();
            let client = redis::cluster::ClusterClient::builder(urls)
                .connection_timeout(Duration::from_secs(10))
                .response_timeout(Duration::from_secs(30))
                .build()
                .map_err(|e| format!("ClusterClient: {e}"))?;
            let mut con = client
                .get_connection()
                .map_err(|e| format!("ClusterClient connection: {e}"))?;
            Ok(calls
                .iter()
                .map(|call| redis_reply(raw_command(&call.args).query(&mut con)))
                .collect())
        }
        variant => {
            let dir = TempDir::new("client");
            let plan_file = dir.path().join("plan.tsv");
            let mut text = String::new();
            for call in calls {
                text.push_str(&call.pairs[0].0);
                for arg in &call.args {
                    text.push('\t');
                    text.push_str(arg);
                }
                text.push('\n');
            }
            std::fs::write(&plan_file, text).expect("write the plan");
            let command = match client.env {
                Env::Venv(_) => {
                    let mut command = Command::new(env);
                    command.arg(clients_source().join("python/driver.py"));
                    command
                }
                _ => {
                    let mut command = Command::new("node");
                    command.arg(env.join("driver.mjs")).current_dir(env);
                    command
                }
            };
            let mut command = command;
            command.arg(variant).arg(seeds.join(",")).arg(&plan_file);
            let stdout = run_driver(command, dir.path(), Duration::from_secs(120))?;
            let replies = parse_replies(&stdout);
            if replies.len() != calls.len() {
                return Err(format!(
                    "{} replies for {} calls: {stdout}",
                    replies.len(),
                    calls.len()
                ));
            }
            Ok(replies)
        }
    }
}

/// Clears every node's keys and statistics before a client runs.
fn reset(cluster: &Cluster) {
    for node in &cluster.nodes {
        let mut con = node.client();
        q::<(), _>(&mut con, &["FLUSHALL"]);
        q::<(), _>(&mut con, &["CONFIG", "RESETSTAT"]);
    }
}

/// What every node's statistics say of the client that just ran.
fn routing(cluster: &Cluster, name: &str) -> Routing {
    let mut routing = Routing::default();
    for node in &cluster.nodes {
        let mut con = node.client();
        let commands = command_stats(&mut con);
        let errors = error_stats(&mut con);
        let calls = |name: &str| commands.get(name).map_or(0, |s| s.calls);
        routing.command += calls("command") + calls("command|info");
        routing.getkeys += calls("command|getkeys");
        routing.calls += commands
            .get(&name.to_ascii_lowercase())
            .map_or(0, |s| s.calls + s.rejected_calls);
        routing.moved += errors.get("MOVED").copied().unwrap_or(0);
        routing.crossslot += errors.get("CROSSSLOT").copied().unwrap_or(0);
    }
    routing
}

/// What each key must hold after the calls, and which call decided it.
struct Model {
    keys: BTreeMap<String, (String, Ttl, usize)>,
    absent: BTreeMap<String, usize>,
}

fn model(calls: &[Call]) -> Model {
    let mut keys: BTreeMap<String, (String, Ttl, usize)> = BTreeMap::new();
    let mut absent = BTreeMap::new();
    for (index, call) in calls.iter().enumerate() {
        match call.expect {
            Expect::Written { ttl, .. } => {
                for (key, value) in &call.pairs {
                    let ttl = match ttl {
                        Ttl::Keep => keys.get(key).map_or(Ttl::Persist, |k| k.1),
                        ttl => ttl,
                    };
                    keys.insert(key.clone(), (value.clone(), ttl, index));
                    absent.remove(key);
                }
            }
            Expect::Miss => {
                for (key, _) in &call.pairs {
                    if !keys.contains_key(key) {
                        absent.insert(key.clone(), index);
                    }
                }
            }
        }
    }
    Model { keys, absent }
}

/// Whether `pttl` (ms, read now) fits `ttl`.
fn ttl_fits(ttl: Ttl, pttl: i64) -> bool {
    const SLACK: i64 = 120_000;
    match ttl {
        Ttl::Persist | Ttl::Keep => pttl == -1,
        Ttl::For(ms) => pttl > ms - SLACK && pttl <= ms,
        Ttl::At(at) => {
            let left = at - now_ms();
            pttl > left - SLACK && pttl <= left + 1000
        }
    }
}

/// Checks one client's run: each reply, then what every node holds.
fn judge(
    cluster: &Cluster,
    owners: &[SlotOwner],
    calls: &[Call],
    replies: &[Reply],
) -> (Vec<Option<String>>, Vec<String>) {
    let mut verdicts: Vec<Option<String>> = vec![None; calls.len()];
    let mut general = Vec::new();
    let flag = |verdicts: &mut Vec<Option<String>>, index: usize, why: String| {
        if verdicts[index].is_none() {
            verdicts[index] = Some(why);
        }
    };
    for (index, (call, reply)) in calls.iter().zip(replies).enumerate() {
        let right = match (call.expect, reply) {
            (Expect::Written { reply: want, .. }, Reply::Value(got)) => got == want,
            (Expect::Miss, Reply::Value(got)) => got == "0",
            _ => false,
        };
        if !right {
            let want = match call.expect {
                Expect::Written { reply, .. } => reply.to_owned(),
                Expect::Miss => "0".to_owned(),
            };
            flag(
                &mut verdicts,
                index,
                format!("wanted {want}, got {}", reply.short()),
            );
        }
    }
    let model = model(calls);
    let mut by_port: BTreeMap<u16, Connection> = cluster
        .nodes
        .iter()
        .map(|n| (n.port(), n.client()))
        .collect();
    let owner_of = |key: &str| owner_port(owners, key_slot(key.as_bytes())).expect("owned slot");
    for (key, (value, ttl, index)) in &model.keys {
        let con = by_port.get_mut(&owner_of(key)).expect("owner node");
        let held: Option<String> = q(con, &["GET", key]);
        let pttl: i64 = q(con, &["PTTL", key]);
        if held.as_deref() != Some(value.as_str()) {
            let why = format!("{key} holds {held:?} on its owner, not {value:?}");
            flag(&mut verdicts, *index, why);
        } else if !ttl_fits(*ttl, pttl) {
            flag(
                &mut verdicts,
                *index,
                format!("{key}: PTTL {pttl}, wanted {ttl:?}"),
            );
        }
    }
    for (key, index) in &model.absent {
        let con = by_port.get_mut(&owner_of(key)).expect("owner node");
        if q::<i64, _>(con, &["EXISTS", key]) != 0 {
            flag(&mut verdicts, *index, format!("{key} was written"));
        }
    }
    // Where every key is: each on its owner, in its slot, and nothing else anywhere.
    let mut total = 0;
    let mut per_slot: BTreeMap<u16, i64> = BTreeMap::new();
    for key in model.keys.keys() {
        *per_slot.entry(key_slot(key.as_bytes())).or_default() += 1;
    }
    for (port, con) in by_port.iter_mut() {
        total += q::<i64, _>(con, &["DBSIZE"]);
        let keys: Vec<String> = q(con, &["KEYS", "*"]);
        for key in keys {
            let owner = owner_of(&key);
            if owner != *port || !model.keys.contains_key(&key) {
                let index = model.keys.get(&key).map(|k| k.2);
                let why = format!("{key} is on node {port} (its slot's owner: {owner})");
                match index {
                    Some(index) => flag(&mut verdicts, index, why),
                    None => general.push(why),
                }
            }
        }
    }
    if total != model.keys.len() as i64 {
        general.push(format!(
            "the nodes hold {total} keys, not {}",
            model.keys.len()
        ));
    }
    for (slot, count) in per_slot {
        let port = owner_port(owners, slot).expect("owned slot");
        let con = by_port.get_mut(&port).expect("owner node");
        let slot_text = slot.to_string();
        let counted: i64 = q(con, &["CLUSTER", "COUNTKEYSINSLOT", &slot_text]);
        if counted != count {
            general.push(format!(
                "CLUSTER COUNTKEYSINSLOT {slot} is {counted} on its owner, not {count}"
            ));
        }
    }
    (verdicts, general)
}

/// Starts one row's cluster and runs every client against it.
fn run_row(
    row_index: usize,
    row: &Row,
    envs: &BTreeMap<&'static str, Result<PathBuf, String>>,
) -> (Vec<&'static str>, Vec<Cell>) {
    let cluster = primaries_cluster(row.config(), 3);
    let owners = slot_owners(&mut cluster.nodes[0].client());
    let mut columns = Vec::new();
    let mut cells = Vec::new();
    for (client_index, client) in CLIENTS.iter().enumerate() {
        let env = &envs[env_key(client.env)];
        let outcome = if !client.applies_to(row) {
            CellOutcome::NotApplicable
        } else {
            match env {
                Err(reason) => CellOutcome::Unavailable(reason.clone()),
                Ok(env) => {
                    reset(&cluster);
                    let prefix = format!("c{client_index}.");
                    let calls = plan(row.form, row.name(), &owners, &prefix);
                    columns = calls.iter().map(|c| c.option).collect();
                    let sent = send(client, env, &cluster, &owners, &calls);
                    let routing = routing(&cluster, row.name());
                    match sent {
                        Ok(replies) => {
                            let (calls, general) = judge(&cluster, &owners, &calls, &replies);
                            CellOutcome::Ran {
                                calls,
                                general,
                                routing,
                            }
                        }
                        Err(why) => CellOutcome::Ran {
                            calls: vec![Some(why.clone()); calls.len()],
                            general: vec![why],
                            routing,
                        },
                    }
                }
            }
        };
        cells.push(Cell {
            row: row_index,
            client: client_index,
            outcome,
        });
    }
    (columns, cells)
}

/// How many rows run at once.
const ROW_WORKERS: usize = 2;

fn run_matrix() -> Matrix {
    let started = Instant::now();
    let (rows, missing_servers) = rows();
    let envs = install_clients();
    // Rows on ROW_WORKERS threads: a row mostly waits (gossip, client start-up), and the
    // suite's other threads wait for this matrix anyway.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut done: Vec<(usize, Vec<&'static str>, Vec<Cell>)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..ROW_WORKERS)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let index = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(row) = rows.get(index) else {
                            return done;
                        };
                        let (columns, cells) = run_row(index, row, &envs);
                        done.push((index, columns, cells));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    done.sort_by_key(|(index, _, _)| *index);
    let mut cells = Vec::new();
    let mut columns = Vec::new();
    for (_, row_columns, row_cells) in done {
        columns.push(row_columns);
        cells.extend(row_cells);
    }
    let matrix = Matrix {
        rows,
        columns,
        missing_servers,
        envs,
        cells,
        seconds: started.elapsed().as_secs_f64(),
    };
    let path = profile_dir().join("cluster-clients.txt");
    match std::fs::write(&path, matrix.table()) {
        Ok(()) => eprintln!("cluster clients: the matrix is in {}", path.display()),
        Err(e) => eprintln!("cluster clients: cannot write {}: {e}", path.display()),
    }
    matrix
}

impl Matrix {
    /// Every row: a line per client, a column per call (`ok`, `X` wrong, `-` not run),
    /// then how it routed; below, the first thing wrong per failing client.
    fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "cluster clients: {} rows in {:.0} s; ok = right reply and keys, X = wrong (why below)",
            self.rows.len(),
            self.seconds
        );
        for missing in &self.missing_servers {
            let _ = writeln!(out, "missing server: {missing}");
        }
        for (name, env) in &self.envs {
            if let Err(reason) = env {
                let _ = writeln!(out, "not installed: {name}: {reason}");
            }
        }
        let width = CLIENTS.iter().map(|c| c.label.len()).max().unwrap_or(0);
        for (index, row) in self.rows.iter().enumerate() {
            let columns = &self.columns[index];
            let _ = writeln!(out, "\n== {}", row.label());
            let _ = write!(out, "{:width$} |", "");
            for column in columns {
                let _ = write!(out, " {column}");
            }
            let _ = writeln!(out, " | routing");
            let mut notes = Vec::new();
            for cell in self.cells.iter().filter(|c| c.row == index) {
                let client = &CLIENTS[cell.client];
                let _ = write!(out, "{:width$} |", client.label);
                match &cell.outcome {
                    CellOutcome::NotApplicable => {
                        let _ = writeln!(out, " (not this form or name)");
                    }
                    CellOutcome::Unavailable(why) => {
                        let _ = writeln!(out, " (skipped: {why})");
                    }
                    CellOutcome::Ran {
                        calls,
                        general,
                        routing,
                    } => {
                        for (column, verdict) in columns.iter().zip(calls) {
                            let mark = if verdict.is_some() { "X" } else { "ok" };
                            let _ = write!(out, " {mark:^w$}", w = column.len());
                        }
                        let _ = writeln!(out, " | {}", routing.show());
                        let first = calls
                            .iter()
                            .zip(columns)
                            .find_map(|(v, c)| v.as_ref().map(|v| format!("{c}: {v}")));
                        let mut wrong: Vec<String> = first.into_iter().collect();
                        wrong.extend(general.iter().take(2).cloned());
                        if general.len() > 2 {
                            wrong.push(format!("{} more", general.len() - 2));
                        }
                        if !wrong.is_empty() {
                            let failed = calls.iter().filter(|v| v.is_some()).count();
                            notes.push(format!(
                                "  {}: {failed}/{} calls wrong; {}",
                                client.label,
                                calls.len(),
                                wrong.join("; ")
                            ));
                        }
                    }
                }
            }
            for note in notes {
                let _ = writeln!(out, "{note}");
            }
        }
        out
    }
}

static MATRIX: OnceLock<Result<Matrix, String>> = OnceLock::new();

/// The matrix, run by the first test that asks.
fn matrix() -> &'static Matrix {
    let result = MATRIX.get_or_init(|| {
        std::panic::catch_unwind(run_matrix).map_err(|panic| {
            panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_else(|| "a panic".to_owned())
        })
    });
    match result {
        Ok(matrix) => matrix,
        Err(why) => panic!("the cluster client matrix did not run: {why}"),
    }
}

/// Judges the cells of the clients whose labels start with `family`: skipped with the
/// reason where the client is not installed here, else every cell must pass.
fn judge_family(family: &str) {
    let matrix = matrix();
    let members: Vec<usize> = (0..CLIENTS.len())
        .filter(|&i| CLIENTS[i].label.starts_with(family))
        .collect();
    assert!(!members.is_empty(), "no client {family}");
    let env = &matrix.envs[env_key(CLIENTS[members[0]].env)];
    let reason = env.as_ref().err().cloned().unwrap_or_default();
    if skip_unless(
        env.is_ok(),
        &format!("{family} is not installed here: {reason}"),
    ) {
        return;
    }
    let failed: Vec<String> = matrix
        .cells
        .iter()
        .filter(|cell| members.contains(&cell.client) && !cell.passed())
        .map(|cell| {
            format!(
                "{} on {}",
                CLIENTS[cell.client].label,
                matrix.rows[cell.row].label()
            )
        })
        .collect();
    assert!(
        failed.is_empty(),
        "{} cells fail:\n  {}\n\n{}",
        failed.len(),
        failed.join("\n  "),
        matrix.table()
    );
}

/// The servers of the whole matrix are on this machine (../shared/servers).
#[test]
fn the_matrix_servers_are_here() {
    let matrix = matrix();
    let missing = matrix.missing_servers.join(", ");
    if skip_unless(
        matrix.missing_servers.is_empty(),
        &format!("servers of the cluster client matrix missing: {missing}"),
    ) {
        return;
    }
    assert!(!matrix.rows.is_empty());
}

/// The reference: each call sent straight to its owner. The server takes every call.
#[test]
fn the_owner_takes_every_call() {
    judge_family("no client");
}

#[test]
fn redis_py_8_2_routes_every_call() {
    judge_family("redis-py 8.2.0");
}

#[test]
fn redis_py_8_1_routes_every_call() {
    judge_family("redis-py 8.1.0");
}

#[test]
fn valkey_glide_routes_every_call() {
    judge_family("valkey-glide");
}

#[test]
fn node_redis_routes_every_call() {
    judge_family("node-redis");
}

#[test]
fn ioredis_routes_every_call() {
    judge_family("ioredis");
}

#[test]
fn redis_rs_routes_every_call() {
    judge_family("redis-rs");
}
