//! Shared harness: real `redis-server` processes on 127.0.0.1, each with its
//! own free port and temporary directory, killed when dropped.
//!
//! - `REDIS_SERVER` picks the server binary (default: `redis-server` on PATH);
//!   [`target`] tells the tests which product and version it is.
//! - `MSETEX_MODULE` picks the module (default: target/release/libmsetex.so,
//!   which `make test` builds first).
//! - `MSETEX_KEEP_TMP=1` keeps the temporary directories for inspection.

#![allow(dead_code)] // each test file uses a different part of the harness

mod target;
pub use target::*;

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::sleep;
use std::time::{Duration, Instant};

pub use redis::{Connection, RedisError, Value};

/// How long a server may take to answer PING after it is spawned.
const START_DEADLINE: Duration = Duration::from_secs(15);
/// Attempts with a new port when the chosen one was taken meanwhile.
const PORT_ATTEMPTS: usize = 5;

/// Path of the module library under test.
pub fn module_path() -> PathBuf {
    let path = std::env::var_os("MSETEX_MODULE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/libmsetex.so")
        });
    assert!(
        path.is_file(),
        "module not found at {} (run `make build` first, or set MSETEX_MODULE)",
        path.display()
    );
    path
}

/// A fresh, empty directory under the system temp dir, removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(label: &str) -> TempDir {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let path = std::env::temp_dir().join(format!(
            "msetex-{label}-{}-{}-{nanos}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        fs::create_dir_all(&path).expect("create temp dir");
        TempDir(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if std::env::var_os("MSETEX_KEEP_TMP").is_none() {
            let _ = fs::remove_dir_all(&self.0);
        }
    }
}

/// How to start a server.
#[derive(Clone)]
pub struct ServerConfig {
    /// Load the module with `loadmodule` (with these arguments).
    pub module: Option<Vec<String>>,
    /// The module file (default: [`module_path`]).
    pub module_file: Option<PathBuf>,
    /// Extra redis.conf lines.
    pub lines: Vec<String>,
    /// Another server binary than the one under test ([`target`]).
    pub binary: Option<&'static Target>,
}

impl Default for ServerConfig {
    /// The module loaded so that the tests reach it as `MSETEX` (see
    /// [`exec`]): under its own name, or where the server has a built-in
    /// MSETEX, under [`RENAMED`].
    fn default() -> Self {
        ServerConfig {
            module: Some(target().default_module_args()),
            module_file: None,
            lines: Vec::new(),
            binary: None,
        }
    }
}

impl ServerConfig {
    /// A server without the module.
    pub fn without_module() -> Self {
        ServerConfig {
            module: None,
            module_file: None,
            lines: Vec::new(),
            binary: None,
        }
    }

    /// Runs `server` instead of the server under test.
    pub fn binary(mut self, server: &'static Target) -> Self {
        self.binary = Some(server);
        self
    }

    /// The server this config runs.
    pub fn server(&self) -> &'static Target {
        self.binary.unwrap_or_else(target)
    }

    /// Loads the module from `path` instead of the build output.
    pub fn module_file(mut self, path: &Path) -> Self {
        self.module_file = Some(path.to_owned());
        self
    }

    /// Starts a server that is expected to refuse to start; returns its log.
    pub fn start_expecting_failure(self) -> String {
        self.start_expecting_failure_in(TempDir::new("fail"))
    }

    /// [`Self::start_expecting_failure`] on existing data (e.g. an AOF).
    pub fn start_expecting_failure_in(self, dir: TempDir) -> String {
        let mut server = Server {
            child: None,
            port: free_port(),
            config: self,
            dir,
        };
        let mut child = spawn_server(server.config.server(), &server.write_config(server.port));
        let deadline = Instant::now() + START_DEADLINE;
        loop {
            if let Ok(Some(_)) = child.try_wait() {
                return server.log();
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                server.child = None;
                panic!(
                    "redis-server started although it should not have:\n{}",
                    server.log()
                );
            }
            sleep(Duration::from_millis(20));
        }
    }

    /// Adds a redis.conf line, e.g. `"appendonly yes"`.
    pub fn line(mut self, line: &str) -> Self {
        self.lines.push(line.to_owned());
        self
    }

    /// The module in its NUMKEYS form (see [`Target::numkeys_name`]).
    pub fn numkeys() -> Self {
        let args = target().numkeys_module_args();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        ServerConfig::default().module_args(&args)
    }

    /// Adds `REPLICATE SET|MSETEX` to the module's load arguments.
    pub fn replicate(mut self, mode: Replicate) -> Self {
        if let Some(args) = &mut self.module {
            args.extend(["REPLICATE".to_owned(), mode.arg().to_owned()]);
        }
        self
    }

    /// Passes arguments to the module after its path in `loadmodule`.
    pub fn module_args(mut self, args: &[&str]) -> Self {
        self.module = Some(args.iter().map(|s| (*s).to_owned()).collect());
        self
    }

    pub fn start(self) -> Server {
        Server::start_with(self, TempDir::new("srv"))
    }
}

/// The module's two replication modes (load argument `REPLICATE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Replicate {
    /// Each key as `SET key value PXAT ms`: replicas need nothing.
    Set,
    /// Each call as one MSETEX with its deadline: replicas need the module.
    Msetex,
}

impl Replicate {
    pub const BOTH: [Replicate; 2] = [Replicate::Set, Replicate::Msetex];

    pub fn arg(self) -> &'static str {
        match self {
            Replicate::Set => "SET",
            Replicate::Msetex => "MSETEX",
        }
    }

    /// A primary (TTL form) in this mode.
    pub fn primary(self) -> ServerConfig {
        ServerConfig::default().replicate(self)
    }

    /// A primary in this mode and a replica of it, in sync.
    pub fn primary_and_replica(self) -> (Server, Server) {
        let primary = self.primary().start();
        let replica = start_replica(&primary, self.replica());
        (primary, replica)
    }

    /// What a replica of such a primary, or a server loading its AOF,
    /// needs: nothing in SET mode (a server without the module), the module
    /// loaded the same way in MSETEX mode.
    pub fn replica(self) -> ServerConfig {
        match self {
            Replicate::Set => ServerConfig::without_module(),
            Replicate::Msetex => self.primary(),
        }
    }
}

/// A running redis-server, killed on drop. Its directory survives
/// [`Server::restart`] and [`Server::kill`], so persistence can be tested.
pub struct Server {
    child: Option<Child>,
    port: u16,
    config: ServerConfig,
    dir: TempDir,
}

impl Server {
    /// A server with the module loaded and default settings.
    pub fn start() -> Server {
        ServerConfig::default().start()
    }

    pub fn start_with(config: ServerConfig, dir: TempDir) -> Server {
        let mut server = Server {
            child: None,
            port: 0,
            config,
            dir,
        };
        server.spawn();
        server
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// A new connection with a read timeout, so a stuck test fails.
    pub fn client(&self) -> Connection {
        let client = redis::Client::open(self.url()).expect("client url");
        let con = client
            .get_connection_with_timeout(Duration::from_secs(10))
            .unwrap_or_else(|e| panic!("connect to {}: {e}\n{}", self.url(), self.log()));
        con.set_read_timeout(Some(Duration::from_secs(30)))
            .expect("set read timeout");
        con
    }

    /// The server log so far (printed by failing start-ups).
    pub fn log(&self) -> String {
        fs::read_to_string(self.dir().join("redis.log")).unwrap_or_default()
    }

    /// SIGKILL, as in a crash: nothing is flushed that was not already.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Stops (SIGKILL) and starts again on the same directory and config.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    /// Replaces redis.conf lines for the next start (e.g. drop the module).
    pub fn set_config(&mut self, config: ServerConfig) {
        self.config = config;
    }

    fn write_config(&self, port: u16) -> PathBuf {
        let dir = self.dir();
        let mut conf = format!(
            "port {port}\nbind 127.0.0.1\nprotected-mode yes\ndaemonize no\n\
             dir {dir}\nlogfile {dir}/redis.log\nsave \"\"\nappendonly no\n\
             repl-diskless-sync-delay 0\n{base}",
            dir = dir.display(),
            base = self.config.server().base_config(),
        );
        if let Some(args) = &self.config.module {
            let file = self.config.module_file.clone().unwrap_or_else(module_path);
            conf.push_str(&format!("loadmodule {}", file.display()));
            for arg in args {
                conf.push(' ');
                conf.push_str(arg);
            }
            conf.push('\n');
        }
        for line in &self.config.lines {
            conf.push_str(line);
            conf.push('\n');
        }
        let path = dir.join("redis.conf");
        fs::write(&path, conf).expect("write redis.conf");
        path
    }

    fn spawn(&mut self) {
        let mut last_error = String::new();
        for _ in 0..PORT_ATTEMPTS {
            let port = free_port();
            let conf = self.write_config(port);
            let log_mark = self.log().len();
            let mut child = spawn_server(self.config.server(), &conf);
            match wait_until_ready(&mut child, port) {
                Ok(()) => {
                    self.child = Some(child);
                    self.port = port;
                    return;
                }
                Err(reason) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    let log = self.log();
                    let new_log = log.get(log_mark..).unwrap_or(&log).to_owned();
                    if new_log.contains("Address already in use") {
                        last_error = new_log;
                        continue; // another test took the port first
                    }
                    panic!("redis-server on port {port} {reason}; its log:\n{new_log}");
                }
            }
        }
        panic!("no free port after {PORT_ATTEMPTS} attempts; last log:\n{last_error}");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Runs redis-server on a config file; its output goes to the log file.
fn spawn_server(server: &Target, conf: &Path) -> Child {
    Command::new(&server.binary)
        .arg(conf)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run {} ({e}): install redis-server or set REDIS_SERVER",
                server.binary
            )
        })
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .expect("bind an ephemeral port")
}

/// Polls PING until the server answers, exits, or the deadline passes.
fn wait_until_ready(child: &mut Child, port: u16) -> Result<(), String> {
    let deadline = Instant::now() + START_DEADLINE;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("exited during start-up ({status})"));
        }
        if ping(port) {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!("did not answer PING within {START_DEADLINE:?}"));
        }
        sleep(Duration::from_millis(20));
    }
}

/// True when the server answers `+PONG` (not `-LOADING`).
fn ping(port: u16) -> bool {
    answers_ping(port, Duration::from_secs(1))
}

/// True when the server on `port` answers PING with `+PONG` within `timeout`
/// (a raw connection: no client handshake that could block).
pub fn answers_ping(port: u16, timeout: Duration) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(timeout));
    if stream.write_all(b"PING\r\n").is_err() {
        return false;
    }
    let mut line = String::new();
    BufReader::new(stream).read_line(&mut line).is_ok() && line.starts_with("+PONG")
}

/// Builds a command from byte strings. `MSETEX` (any case) as the command,
/// or as the command a COMMAND subcommand is asked about, is the module's
/// TTL form: it becomes [`Target::command_name`], so every test reaches the
/// module even where the server has a built-in MSETEX.
pub fn command<A: AsRef<[u8]>>(args: &[A]) -> redis::Cmd {
    let is_msetex = |arg: &A| arg.as_ref().eq_ignore_ascii_case(b"MSETEX");
    let is_command = args
        .first()
        .is_some_and(|a| a.as_ref().eq_ignore_ascii_case(b"COMMAND"));
    let mut cmd = redis::Cmd::new();
    for (index, arg) in args.iter().enumerate() {
        let renamed = (index == 0 || (index == 2 && is_command)) && is_msetex(arg);
        if renamed {
            cmd.arg(target().command_name());
        } else {
            cmd.arg(arg.as_ref());
        }
    }
    cmd
}

/// A command exactly as given: no renaming (for servers without the
/// module, or the server's own MSETEX).
pub fn raw_command<A: AsRef<[u8]>>(args: &[A]) -> redis::Cmd {
    let mut cmd = redis::Cmd::new();
    for arg in args {
        cmd.arg(arg.as_ref());
    }
    cmd
}

/// `redis::cmd("MSETEX")` for the module's TTL form, by the name it has on
/// this server.
pub fn msetex() -> redis::Cmd {
    redis::cmd(target().command_name())
}

/// `text` with `'msetex'` (an error text naming the command) replaced by the
/// name the command has on this server.
pub fn named(text: &str) -> String {
    text.replace("'msetex'", &format!("'{}'", target().command_name()))
}

/// Runs one command given as byte strings; returns the raw reply.
pub fn exec<A: AsRef<[u8]>>(con: &mut Connection, args: &[A]) -> Result<Value, RedisError> {
    command(args).query(con)
}

/// Runs a command that must succeed and converts its reply.
pub fn q<T: redis::FromRedisValue, A: AsRef<[u8]>>(con: &mut Connection, args: &[A]) -> T {
    command(args).query(con).unwrap_or_else(|e| {
        let printable: Vec<String> = args
            .iter()
            .map(|a| String::from_utf8_lossy(a.as_ref()).into_owned())
            .collect();
        panic!("{printable:?} failed: {}", error_text(&e))
    })
}

/// The full error line the server sent, e.g. `ERR value is not an integer ...`.
pub fn error_text(error: &RedisError) -> String {
    match (error.code(), error.detail()) {
        (Some(code), Some(detail)) => format!("{code} {detail}"),
        (Some(code), None) => code.to_owned(),
        _ => error.to_string(),
    }
}

/// Runs a command that must fail, and returns the error line.
pub fn err<A: AsRef<[u8]>>(con: &mut Connection, args: &[A]) -> String {
    match exec(con, args) {
        Ok(value) => panic!("expected an error, got {value:?}"),
        Err(e) => error_text(&e),
    }
}

/// A key's absolute expiry in unix milliseconds, as PEXPIRETIME reports it
/// (-1: no TTL, -2: no such key).
///
/// Redis 6.2 has no PEXPIRETIME; there [`deadline_of`] reads it exactly with
/// [`DEADLINE_SCRIPT`], so deadlines compare exactly on every server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadline(pub i64);

/// Lua for servers without PEXPIRETIME: the same -1 / -2 answers, otherwise
/// the deadline. PTTL is the deadline minus the live clock at the call, so
/// it is read between two TIMEs and trusted only when both fall in the same
/// millisecond: then that millisecond plus PTTL is the stored deadline, not
/// an estimate one millisecond off (a busy machine can stretch the gap).
const DEADLINE_SCRIPT: &str = "local function ms(t)\n\
        return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n\
    end\n\
    for _ = 1, 1000 do\n\
        local before = ms(redis.call('TIME'))\n\
        local pttl = redis.call('PTTL', KEYS[1])\n\
        if pttl < 0 then return pttl end\n\
        if ms(redis.call('TIME')) == before then return before + pttl end\n\
    end\n\
    return redis.error_reply('the clock moved during every PTTL')";

/// The absolute expiry of `key` (see [`Deadline`]).
pub fn deadline_of<K: AsRef<[u8]>>(con: &mut Connection, key: K) -> Deadline {
    let key = key.as_ref();
    if target().is_7_0_or_later() {
        Deadline(q(con, &[b"PEXPIRETIME".as_slice(), key]))
    } else {
        Deadline(q(
            con,
            &[b"EVAL".as_slice(), DEADLINE_SCRIPT.as_bytes(), b"1", key],
        ))
    }
}

/// One key as [`snapshot`] sees it: name, type, DUMP payload, deadline.
pub type KeyState = (Vec<u8>, String, Option<Vec<u8>>, Deadline);

/// A snapshot of every key, sorted by name. Comparing two snapshots proves
/// that a call changed nothing.
pub fn snapshot(con: &mut Connection) -> Vec<KeyState> {
    let mut keys: Vec<Vec<u8>> = q(con, &["KEYS", "*"]);
    keys.sort();
    keys.into_iter()
        .map(|key| {
            let kind: String = q(con, &[b"TYPE".as_slice(), &key]);
            let dump: Option<Vec<u8>> = q(con, &[b"DUMP".as_slice(), &key]);
            let deadline = deadline_of(con, &key);
            (key, kind, dump, deadline)
        })
        .collect()
}

/// Polls `check` until it returns true or `timeout` passes.
pub fn eventually(timeout: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if check() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        sleep(Duration::from_millis(20));
    }
}

/// Unix time in milliseconds on this machine (same clock as the servers).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// One field of an INFO section, e.g. `info_field(con, "replication", "role")`.
pub fn info_field(con: &mut Connection, section: &str, field: &str) -> Option<String> {
    let info: String = q(con, &["INFO", section]);
    let prefix = format!("{field}:");
    info.lines()
        .find_map(|line| line.strip_prefix(prefix.as_str()))
        .map(|value| value.trim().to_owned())
}

/// Starts a replica of `primary` (module loaded or not, per `config`) and
/// waits until its link is up and the initial sync is done.
pub fn start_replica(primary: &Server, config: ServerConfig) -> Server {
    let replica = config
        .line(&format!("replicaof 127.0.0.1 {}", primary.port()))
        .start();
    let mut con = replica.client();
    let up = eventually(std::time::Duration::from_secs(20), || {
        info_field(&mut con, "replication", "master_link_status").as_deref() == Some("up")
    });
    assert!(up, "replica never synced; its log:\n{}", replica.log());
    replica
}

/// A cluster of two nodes, both with `config` plus cluster mode: a primary
/// owning every slot and its replica, linked and synced.
pub fn cluster_pair(config: ServerConfig, replica_config: ServerConfig) -> (Server, Server) {
    let cluster = |config: ServerConfig| {
        config
            .line("cluster-enabled yes")
            .line("cluster-config-file nodes.conf")
            .line("cluster-node-timeout 5000")
            .start()
    };
    let primary = cluster(config);
    let replica = cluster(replica_config);
    let mut p = primary.client();
    let mut addslots = vec!["CLUSTER".to_owned(), "ADDSLOTS".to_owned()];
    addslots.extend((0..16384).map(|slot: u32| slot.to_string()));
    q::<(), _>(&mut p, &addslots);
    let id: String = q(&mut p, &["CLUSTER", "MYID"]);
    let mut r = replica.client();
    q::<(), _>(
        &mut r,
        &["CLUSTER", "MEET", "127.0.0.1", &primary.port().to_string()],
    );
    let known = eventually(Duration::from_secs(20), || {
        q::<String, _>(&mut r, &["CLUSTER", "NODES"]).contains(&id)
    });
    assert!(
        known,
        "the replica never learned the primary:\n{}",
        replica.log()
    );
    q::<(), _>(&mut r, &["CLUSTER", "REPLICATE", &id]);
    let up = eventually(Duration::from_secs(30), || {
        info_field(&mut r, "replication", "master_link_status").as_deref() == Some("up")
            && q::<String, _>(&mut p, &["CLUSTER", "INFO"]).contains("cluster_state:ok")
    });
    assert!(up, "the cluster replica never synced:\n{}", replica.log());
    (primary, replica)
}

/// `DEBUG DIGEST`: one hash of every key, value and expiry instant, for
/// proving that two servers hold the same data.
pub fn digest(con: &mut Connection) -> String {
    q(con, &["DEBUG", "DIGEST"])
}

/// Runs redis-benchmark against `server` for about `seconds` with `args`
/// (`-c`, `--threads`, the command...), killed at the deadline.
pub fn benchmark_for(server: &Server, seconds: u64, args: &[&str]) {
    let mut child = Command::new("redis-benchmark")
        .args(["-h", "127.0.0.1", "-p", &server.port().to_string()])
        .args(["-n", "1000000000", "-q"])
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("run redis-benchmark (install redis-tools)");
    std::thread::sleep(Duration::from_secs(seconds));
    let _ = child.kill();
    let _ = child.wait();
}

/// Blocks until every write so far reached `replicas` replicas.
pub fn wait_for_replicas(primary: &mut Connection, replicas: i64) {
    let acked: i64 = q(primary, &["WAIT", &replicas.to_string(), "10000"]);
    assert!(acked >= replicas, "only {acked} replicas acknowledged");
}

/// The value and deadline of each key, for comparing two servers.
pub fn values_and_deadlines(
    con: &mut Connection,
    keys: &[&[u8]],
) -> Vec<(Option<Vec<u8>>, Deadline)> {
    keys.iter()
        .map(|key| {
            let value: Option<Vec<u8>> = q(con, &[b"GET".as_slice(), key]);
            (value, deadline_of(con, key))
        })
        .collect()
}

/// A one-node cluster owning every slot: enough for slot checks.
pub fn single_node_cluster() -> Server {
    let server = ServerConfig::default()
        .line("cluster-enabled yes")
        .line("cluster-config-file nodes.conf")
        .start();
    let mut con = server.client();
    // CLUSTER ADDSLOTSRANGE is 7.0+; ADDSLOTS with every slot works everywhere.
    let mut addslots = vec!["CLUSTER".to_owned(), "ADDSLOTS".to_owned()];
    addslots.extend((0..16384).map(|slot: u32| slot.to_string()));
    q::<(), _>(&mut con, &addslots);
    let ok = eventually(Duration::from_secs(20), || {
        q::<String, _>(&mut con, &["CLUSTER", "INFO"]).contains("cluster_state:ok")
    });
    assert!(ok, "cluster never became ok:\n{}", server.log());
    server
}

/// A Redis Cluster of real servers on 127.0.0.1, module loaded everywhere.
pub struct Cluster {
    pub nodes: Vec<Server>,
}

/// One line of CLUSTER NODES.
#[derive(Debug, Clone)]
pub struct ClusterNode {
    pub id: String,
    pub port: u16,
    pub is_primary: bool,
    /// The primary's id, for a replica.
    pub primary_id: Option<String>,
}

impl Cluster {
    /// `primaries` primaries with one replica each, created with
    /// `redis-cli --cluster create`, every slot covered and every replica
    /// in sync.
    pub fn start(primaries: usize) -> Cluster {
        let nodes: Vec<Server> = (0..primaries * 2)
            .map(|_| {
                ServerConfig::default()
                    .line("cluster-enabled yes")
                    .line("cluster-config-file nodes.conf")
                    .line("cluster-node-timeout 3000")
                    .start()
            })
            .collect();
        let mut create = std::process::Command::new(
            std::env::var("REDIS_CLI").unwrap_or_else(|_| "redis-cli".to_owned()),
        );
        create.arg("--cluster").arg("create");
        for node in &nodes {
            create.arg(format!("127.0.0.1:{}", node.port()));
        }
        let output = create
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .output()
            .expect("run redis-cli --cluster create (install redis-tools)");
        assert!(
            output.status.success(),
            "cluster create failed:\n{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        let cluster = Cluster { nodes };
        cluster.wait_until_stable();
        cluster
    }

    /// Waits until every node says `cluster_state:ok` and every replica's
    /// link to its primary is up.
    pub fn wait_until_stable(&self) {
        for node in &self.nodes {
            let mut con = node.client();
            let ok = eventually(Duration::from_secs(60), || {
                let info: String = q(&mut con, &["CLUSTER", "INFO"]);
                let state_ok = info.contains("cluster_state:ok");
                let role = info_field(&mut con, "replication", "role");
                let linked = role.as_deref() == Some("master")
                    || info_field(&mut con, "replication", "master_link_status").as_deref()
                        == Some("up");
                state_ok && linked
            });
            assert!(
                ok,
                "node {} never became stable:\n{}",
                node.port(),
                node.log()
            );
        }
    }

    /// Waits until every node lists every other one as connected, with the
    /// same primaries and replicas.
    pub fn wait_until_everyone_knows_everyone(&self) {
        let expected = self.nodes.len();
        for node in &self.nodes {
            let mut con = node.client();
            let ok = eventually(Duration::from_secs(30), || {
                let text: String = q(&mut con, &["CLUSTER", "NODES"]);
                let lines: Vec<&str> = text.lines().collect();
                let connected = lines.iter().filter(|l| l.contains(" connected")).count();
                let replicas = lines.iter().filter(|l| l.contains("slave")).count();
                lines.len() == expected && connected == expected && replicas == expected / 2
            });
            assert!(ok, "node {} does not know the whole cluster", node.port());
        }
    }

    /// CLUSTER NODES as seen from the first node.
    pub fn topology(&self) -> Vec<ClusterNode> {
        let mut con = self.nodes[0].client();
        let text: String = q(&mut con, &["CLUSTER", "NODES"]);
        text.lines()
            .filter_map(|line| {
                let fields: Vec<&str> = line.split_whitespace().collect();
                let port = fields.get(1)?.split(['@', ':']).nth(1)?.parse().ok()?;
                let flags = fields.get(2)?;
                let primary = fields.get(3)?;
                Some(ClusterNode {
                    id: fields.first()?.to_string(),
                    port,
                    is_primary: flags.contains("master"),
                    primary_id: (*primary != "-").then(|| primary.to_string()),
                })
            })
            .collect()
    }

    pub fn node(&self, port: u16) -> &Server {
        self.nodes
            .iter()
            .find(|n| n.port() == port)
            .unwrap_or_else(|| panic!("no node on port {port}"))
    }

    /// The primary that owns `key`'s slot, and its replica.
    pub fn owner_of(&self, key: &str) -> (ClusterNode, ClusterNode) {
        let mut con = self.nodes[0].client();
        let slot: i64 = q(&mut con, &["CLUSTER", "KEYSLOT", key]);
        let slots: Value = q(&mut con, &["CLUSTER", "SLOTS"]);
        let Value::Array(ranges) = slots else {
            panic!("CLUSTER SLOTS: {slots:?}")
        };
        let port = ranges
            .iter()
            .find_map(|range| match range {
                Value::Array(items) => match (&items[0], &items[1], &items[2]) {
                    (Value::Int(start), Value::Int(end), Value::Array(primary))
                        if (*start..=*end).contains(&slot) =>
                    {
                        match primary.get(1) {
                            Some(Value::Int(port)) => Some(*port as u16),
                            _ => None,
                        }
                    }
                    _ => None,
                },
                _ => None,
            })
            .unwrap_or_else(|| panic!("no owner for slot {slot}"));
        // Gossip may take a moment to tell every node who replicates whom.
        let mut found = None;
        let settled = eventually(Duration::from_secs(30), || {
            let nodes = self.topology();
            let primary = nodes.iter().find(|n| n.port == port).cloned();
            let replica = primary.as_ref().and_then(|p| {
                nodes
                    .iter()
                    .find(|n| n.primary_id.as_deref() == Some(p.id.as_str()))
                    .cloned()
            });
            found = primary.zip(replica);
            found.is_some()
        });
        assert!(settled, "no replica of port {port} in CLUSTER NODES");
        found.expect("checked above")
    }
}

/// True under `make soak` (MSETEX_SOAK=long): tests use their full size.
pub fn long_run() -> bool {
    std::env::var("MSETEX_SOAK").is_ok_and(|v| v == "long")
}

/// `suite` in the normal test suite, `long` under `make soak`.
pub fn scaled(suite: usize, long: usize) -> usize {
    if long_run() {
        long
    } else {
        suite
    }
}

/// Appends one result row (`| test | figures |`) to $MSETEX_RESULTS, which
/// `make soak` turns into docs/RELIABILITY.md. A no-op otherwise.
pub fn record_result(test: &str, figures: &str) {
    let Some(path) = std::env::var_os("MSETEX_RESULTS") else {
        return;
    };
    let line = format!("| {test} | {figures} |\n");
    let written = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut file| file.write_all(line.as_bytes()));
    if let Err(e) = written {
        eprintln!(
            "cannot record a result in {}: {e}",
            Path::new(&path).display()
        );
    }
}

/// Skips the running test on servers that lack what it tests: returns true
/// (and the test returns at once) unless `supported`. The skip and its reason
/// go to stderr and to $MSETEX_SKIPS, which `make test-matrix` reads so that
/// a skipped test is reported as skipped, never counted as passed.
///
/// ```ignore
/// if skip_unless(target().is_7_0_or_later(), "COMMAND DOCS needs Redis 7.0") {
///     return;
/// }
/// ```
pub fn skip_unless(supported: bool, reason: &str) -> bool {
    if supported {
        return false;
    }
    let test = std::thread::current()
        .name()
        .unwrap_or("unnamed")
        .to_owned();
    let line = format!(
        "{}::{test}\t{}\t{reason}\n",
        env!("CARGO_CRATE_NAME"),
        target().describe()
    );
    eprintln!(
        "SKIPPED {}::{test} on {}: {reason}",
        env!("CARGO_CRATE_NAME"),
        target().describe()
    );
    if let Some(path) = std::env::var_os("MSETEX_SKIPS") {
        let written = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut file| file.write_all(line.as_bytes()));
        if let Err(e) = written {
            eprintln!(
                "cannot record a skip in {}: {e}",
                Path::new(&path).display()
            );
        }
    }
    true
}

/// Copies the persistence files of a server directory (the AOF directory
/// or file, and dump.rdb) into a fresh one.
pub fn copy_data(from: &Path) -> TempDir {
    let to = TempDir::new("copy");
    let copy_file = |name: &str, into: &Path| {
        let source = from.join(name);
        if source.is_file() {
            fs::copy(&source, into.join(name)).expect("copy a data file");
        }
    };
    copy_file("appendonly.aof", to.path());
    copy_file("dump.rdb", to.path());
    if let Ok(entries) = fs::read_dir(from.join("appendonlydir")) {
        let dir = to.path().join("appendonlydir");
        fs::create_dir_all(&dir).expect("create appendonlydir");
        for entry in entries.filter_map(Result::ok) {
            fs::copy(entry.path(), dir.join(entry.file_name())).expect("copy an AOF file");
        }
    }
    to
}

/// The text of every AOF file of a server directory, in order: the base
/// and increments of a multi-part AOF (Redis 7.0+), or appendonly.aof.
pub fn aof_text(dir: &Path) -> String {
    let aof_dir = dir.join("appendonlydir");
    let mut files: Vec<PathBuf> = match fs::read_dir(&aof_dir) {
        Ok(entries) => entries
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "aof"))
            .collect(),
        Err(_) => vec![dir.join("appendonly.aof")],
    };
    files.sort();
    let mut text = Vec::new();
    for file in files {
        text.extend(fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display())));
    }
    String::from_utf8_lossy(&text).into_owned()
}

/// The RESP encoding of one command, as the replication stream carries it.
pub fn resp<A: AsRef<[u8]>>(args: &[A]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        let arg = arg.as_ref();
        out.extend(format!("${}\r\n", arg.len()).into_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// A raw connection that speaks as a replica: sends `line`, e.g.
/// `PSYNC ? -1`, and reads what the primary streams back.
pub struct FakeReplica {
    stream: TcpStream,
}

impl FakeReplica {
    pub fn connect(server: &Server, line: &str) -> FakeReplica {
        let mut stream = TcpStream::connect(("127.0.0.1", server.port())).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        // A diskless-capable replica, as real ones announce themselves: the
        // primary then waits `repl-diskless-sync-delay` before it forks.
        stream
            .write_all(b"REPLCONF capa eof capa psync2\r\n")
            .expect("send");
        let mut replica = FakeReplica { stream };
        let ok = replica.line();
        assert_eq!(ok, "+OK", "REPLCONF");
        replica
            .stream
            .write_all(format!("{line}\r\n").as_bytes())
            .expect("send");
        replica
    }

    /// Reads one line (without its CRLF), skipping the newlines a primary
    /// sends to keep a waiting replica alive.
    pub fn line(&mut self) -> String {
        let mut line = Vec::new();
        let mut byte = [0u8; 1];
        loop {
            use std::io::Read;
            self.stream.read_exact(&mut byte).expect("read a line");
            if byte[0] == b'\n' {
                if line.is_empty() || line == b"\r" {
                    line.clear();
                    continue;
                }
                line.pop();
                return String::from_utf8_lossy(&line).into_owned();
            }
            line.push(byte[0]);
        }
    }

    /// Reads exactly `len` bytes of the stream.
    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        use std::io::Read;
        let mut buf = vec![0u8; len];
        self.stream.read_exact(&mut buf).expect("read the stream");
        buf
    }
}

/// A tiny deterministic generator, so that a failing run can be replayed.
pub struct Lcg(pub u64);

impl Lcg {
    /// A number from 0 to `below - 1`.
    pub fn next(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % below.max(1)
    }

    /// [`Lcg::next`] for indexes.
    pub fn below(&mut self, n: usize) -> usize {
        self.next(n as u64) as usize
    }
}

/// Keyevent notifications (`__keyevent@0__:<event>` with the key as the
/// message) from `pubsub`, in order, until `is_end(event, key)`: the caller's
/// marker, which tells that every earlier event has been delivered.
pub fn keyevents_until(
    pubsub: &mut redis::PubSub<'_>,
    is_end: impl Fn(&str, &str) -> bool,
) -> Vec<(String, String)> {
    let mut events = Vec::new();
    loop {
        let msg = pubsub.get_message().expect("events until the marker");
        let event = msg
            .get_channel_name()
            .trim_start_matches("__keyevent@0__:")
            .to_owned();
        let key: String = msg.get_payload().expect("key");
        if is_end(&event, &key) {
            return events;
        }
        events.push((event, key));
    }
}

/// Two cluster nodes started with `config` (the module loaded as it says):
/// the first owns slots 0-8191, the second 8192-16383, both `cluster_state:ok`.
pub fn two_node_cluster(config: ServerConfig) -> [Server; 2] {
    let node = || {
        config
            .clone()
            .line("cluster-enabled yes")
            .line("cluster-config-file nodes.conf")
            .line("cluster-node-timeout 5000")
            .start()
    };
    let nodes = [node(), node()];
    for (node, (first, last)) in nodes.iter().zip([(0u32, 8191u32), (8192, 16383)]) {
        let mut addslots = vec!["CLUSTER".to_owned(), "ADDSLOTS".to_owned()];
        addslots.extend((first..=last).map(|slot| slot.to_string()));
        q::<(), _>(&mut node.client(), &addslots);
    }
    let port = nodes[1].port().to_string();
    q::<(), _>(
        &mut nodes[0].client(),
        &["CLUSTER", "MEET", "127.0.0.1", &port],
    );
    for node in &nodes {
        let mut con = node.client();
        let ok = eventually(Duration::from_secs(30), || {
            q::<String, _>(&mut con, &["CLUSTER", "INFO"]).contains("cluster_state:ok")
                && q::<String, _>(&mut con, &["CLUSTER", "NODES"])
                    .lines()
                    .count()
                    == 2
        });
        assert!(ok, "the two-node cluster never became ok:\n{}", node.log());
    }
    nodes
}

/// Whether this server moves slots with its own atomic slot migration:
/// Redis 8.4+ (`CLUSTER MIGRATION IMPORT`), Valkey 9.0+ (`CLUSTER MIGRATESLOTS`).
pub fn has_atomic_slot_migration() -> bool {
    target().at_least(Some((8, 4)), Some((9, 0)))
}

/// An atomic slot migration in progress (see [`AtomicMigration::start`]).
pub struct AtomicMigration {
    /// Where its state is read: the target on Redis, the source on Valkey.
    watch: u16,
    /// Redis: the task id. Valkey: the target's node id.
    id: String,
    slot: i64,
}

impl AtomicMigration {
    /// Starts moving `slot` from `source` to `target` with the server's own
    /// atomic slot migration.
    pub fn start(source: &Server, target_node: &Server, slot: i64) -> AtomicMigration {
        let slot_text = slot.to_string();
        if target().is_valkey() {
            let id: String = q(&mut target_node.client(), &["CLUSTER", "MYID"]);
            q::<(), _>(
                &mut source.client(),
                &[
                    "CLUSTER",
                    "MIGRATESLOTS",
                    "SLOTSRANGE",
                    &slot_text,
                    &slot_text,
                    "NODE",
                    &id,
                ],
            );
            AtomicMigration {
                watch: source.port(),
                id,
                slot,
            }
        } else {
            let id: String = q(
                &mut target_node.client(),
                &["CLUSTER", "MIGRATION", "IMPORT", &slot_text, &slot_text],
            );
            AtomicMigration {
                watch: target_node.port(),
                id,
                slot,
            }
        }
    }

    /// The migration's state as the server names it: Redis `completed`,
    /// `failed`, `canceled`...; Valkey `success`, `failed`, `cancelled`...
    /// With the server's message, if any.
    pub fn state(&self) -> (String, String) {
        self.state_on(self.watch)
    }

    /// [`AtomicMigration::state`] as the node on `port` sees it (Redis:
    /// the source and the target each report their side of the task).
    pub fn state_on(&self, port: u16) -> (String, String) {
        let mut con = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
            .and_then(|c| c.get_connection())
            .expect("connect to the migration's node");
        let entries: Value = if target().is_valkey() {
            q(&mut con, &["CLUSTER", "GETSLOTMIGRATIONS"])
        } else {
            q(
                &mut con,
                &["CLUSTER", "MIGRATION", "STATUS", "ID", &self.id],
            )
        };
        let range = format!("{0}-{0}", self.slot);
        field_maps(&entries)
            .into_iter()
            .find(|entry| {
                let field = |name: &str| entry.get(name).map(String::as_str);
                if target().is_valkey() {
                    field("operation") == Some("EXPORT")
                        && field("target_node") == Some(self.id.as_str())
                        && field("slot_ranges").is_some_and(|r| r.split(' ').any(|r| r == range))
                } else {
                    field("id") == Some(self.id.as_str())
                }
            })
            .map(|entry| {
                let message = ["last_error", "message"]
                    .iter()
                    .find_map(|f| entry.get(*f).cloned())
                    .unwrap_or_default();
                (entry.get("state").cloned().unwrap_or_default(), message)
            })
            .unwrap_or_else(|| ("unknown".to_owned(), format!("no entry in {entries:?}")))
    }

    /// Waits until the migration has succeeded (`Ok`), or has ended
    /// otherwise (`Err` with its state and message).
    pub fn wait(&self, timeout: Duration) -> Result<(), String> {
        let mut last = (String::new(), String::new());
        let ended = eventually(timeout, || {
            last = self.state();
            ["completed", "success", "failed", "canceled", "cancelled"].contains(&last.0.as_str())
        });
        match last.0.as_str() {
            "completed" | "success" if ended => Ok(()),
            _ => Err(format!("migration state {:?}: {}", last.0, last.1)),
        }
    }
}

/// Each element of an array reply as a map of field to value: RESP2 flat
/// `[field, value, ...]` arrays or RESP3 maps (numbers as text).
pub fn field_maps(value: &Value) -> Vec<std::collections::BTreeMap<String, String>> {
    let text = |v: &Value| match v {
        Value::BulkString(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        Value::SimpleString(s) => s.clone(),
        Value::Int(n) => n.to_string(),
        other => format!("{other:?}"),
    };
    let Value::Array(entries) = value else {
        return Vec::new();
    };
    entries
        .iter()
        .map(|entry| match entry {
            Value::Array(flat) => flat
                .chunks(2)
                .filter_map(|pair| match pair {
                    [k, v] => Some((text(k), text(v))),
                    _ => None,
                })
                .collect(),
            Value::Map(pairs) => pairs.iter().map(|(k, v)| (text(k), text(v))).collect(),
            _ => Default::default(),
        })
        .collect()
}
