//! Real `redis-server` processes on 127.0.0.1, each with its own free
//! port, temporary directory and start-up deadline, killed when dropped.

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::sleep;
use std::time::{Duration, Instant};

use redis::Connection;

use crate::*;

/// How long a server may take to answer PING after it is spawned.
const START_DEADLINE: Duration = Duration::from_secs(15);
/// Attempts with a new port when the chosen one was taken meanwhile.
const PORT_ATTEMPTS: usize = 5;

/// The repository this harness is part of (its parent directory).
pub fn repo_root() -> PathBuf {
    let harness = Path::new(env!("CARGO_MANIFEST_DIR"));
    harness.parent().unwrap_or(harness).to_path_buf()
}

/// Path of the module library under test.
pub fn module_path() -> PathBuf {
    built_library("MSETEX_MODULE", "libmsetex.so", "run `make build` first")
}

/// A library the build leaves in target/release as `file`, or the path in the environment
/// variable `var`. Panics, saying `how` to build it, when the file is missing.
pub fn built_library(var: &str, file: &str, how: &str) -> PathBuf {
    let path = std::env::var_os(var)
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target/release").join(file));
    assert!(
        path.is_file(),
        "{file} not found at {} ({how}, or set {var})",
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
    /// Command-line arguments after the config file (`--user ...`).
    pub args: Vec<String>,
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
            args: Vec::new(),
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
            args: Vec::new(),
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
        server.spawn_expecting_failure()
    }

    /// Adds command-line arguments, after the config file (`--user`, ...).
    pub fn args(mut self, args: &[&str]) -> Self {
        self.args.extend(args.iter().map(|a| (*a).to_owned()));
        self
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

    /// A normal shutdown, by SIGTERM or by the SHUTDOWN command; returns how the server exited.
    /// The server is down afterwards: `restart` it.
    pub fn shut_down(&mut self, sigterm: bool) -> std::process::ExitStatus {
        let mut child = self.child.take().expect("a running server");
        if sigterm {
            let pid = child.id().to_string();
            let sent = Command::new("kill").args(["-TERM", &pid]).status();
            assert!(
                sent.is_ok_and(|status| status.success()),
                "kill -TERM {pid}"
            );
        } else {
            // The server closes the connection instead of answering.
            let _ = redis::cmd("SHUTDOWN").query::<Value>(&mut self.client());
        }
        let deadline = Instant::now() + START_DEADLINE;
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                return status;
            }
            assert!(Instant::now() < deadline, "no exit:\n{}", self.log());
            sleep(Duration::from_millis(20));
        }
    }

    /// Stops (SIGKILL) and starts again from redis.conf as the server left it (`CONFIG
    /// REWRITE`), on its port, rather than from its [`ServerConfig`].
    pub fn restart_as_rewritten(&mut self) {
        self.kill();
        let conf = self.dir().join("redis.conf");
        let mut child = spawn_server(self.config.server(), &conf, &self.config.args);
        if let Err(reason) = wait_until_ready(&mut child, self.port) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("redis-server {reason}; its log:\n{}", self.log());
        }
        self.child = Some(child);
    }

    /// The config file the server was started with (as `CONFIG REWRITE` left it).
    pub fn config_file(&self) -> String {
        fs::read_to_string(self.dir().join("redis.conf")).unwrap_or_default()
    }

    /// Replaces redis.conf lines for the next start (e.g. drop the module).
    pub fn set_config(&mut self, config: ServerConfig) {
        self.config = config;
    }

    /// Stops (SIGKILL), then starts with `config` on the same directory,
    /// expecting the server to refuse to start (an AOF it cannot load, say);
    /// returns its log. The server is down afterwards: `restart` it with
    /// another config.
    pub fn restart_expecting_failure(&mut self, config: ServerConfig) -> String {
        self.kill();
        self.config = config;
        self.port = free_port();
        self.spawn_expecting_failure()
    }

    fn spawn_expecting_failure(&mut self) -> String {
        let mut child = spawn_server(
            self.config.server(),
            &self.write_config(self.port),
            &self.config.args,
        );
        let deadline = Instant::now() + START_DEADLINE;
        loop {
            if let Ok(Some(_)) = child.try_wait() {
                return self.log();
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "redis-server started although it should not have:\n{}",
                    self.log()
                );
            }
            sleep(Duration::from_millis(20));
        }
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
            let mut child = spawn_server(self.config.server(), &conf, &self.config.args);
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
fn spawn_server(server: &Target, conf: &Path, args: &[String]) -> Child {
    Command::new(&server.binary)
        .arg(conf)
        .args(args)
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

/// Polls PING until the server answers, exits, or the deadline passes. A
/// server answering on the port is ours only if it reports our child's
/// process id: another test's server may have taken the port between
/// [`free_port`] and our bind (ours then exits with "Address already in
/// use", which the caller retries).
fn wait_until_ready(child: &mut Child, port: u16) -> Result<(), String> {
    let deadline = Instant::now() + START_DEADLINE;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("exited during start-up ({status})"));
        }
        if ping(port) && process_id(port) == Some(child.id()) {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!("did not answer PING within {START_DEADLINE:?}"));
        }
        sleep(Duration::from_millis(20));
    }
}

/// The `process_id` that the server on `port` reports in `INFO server`.
fn process_id(port: u16) -> Option<u32> {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}/")).ok()?;
    let mut con = client
        .get_connection_with_timeout(Duration::from_secs(1))
        .ok()?;
    let info: String = redis::cmd("INFO").arg("server").query(&mut con).ok()?;
    info.lines()
        .find_map(|line| line.strip_prefix("process_id:"))
        .and_then(|pid| pid.trim().parse().ok())
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
