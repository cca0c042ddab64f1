//! The client examples: examples/redis_rs.rs (the TTL form) and
//! examples/typed_client.rs (redis-rs's typed `mset_ex`, served by the
//! NUMKEYS form), compiled by `cargo test`, examples/redis_py.py
//! (redis-py), and examples/node (node-redis's `mSetEx` and ioredis's
//! `msetex`, installed with `npm ci`), all run here against a live server;
//! the README shows redis_py.py and redis_rs.rs verbatim.

use msetex_harness::*;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

fn manifest_file(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// target/<profile>, where this test's own binary is (in deps/).
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    exe.parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>")
        .to_path_buf()
}

/// target/<profile>/examples/<name>, next to this test's own binary.
fn example_binary(name: &str) -> PathBuf {
    let binary = profile_dir().join("examples").join(name);
    assert!(
        binary.is_file(),
        "{} missing: cargo test builds examples",
        binary.display()
    );
    binary
}

#[test]
fn readme_shows_the_examples_verbatim() {
    let readme = manifest_file("README.md");
    for file in ["examples/redis_rs.rs", "examples/redis_py.py"] {
        let example = manifest_file(file);
        let body = example
            .split_once("\n\n")
            .map(|(_header, body)| body.trim())
            .expect("example body");
        assert!(
            readme.contains(body),
            "README.md's snippet differs from {file}"
        );
    }
}

/// The README's first screen: a call within 45 lines, the whole page within
/// 250, and the redis-cli session it shows is what the server answers.
#[test]
fn readme_first_call_is_what_the_server_answers() {
    if skip_unless(
        !target().has_builtin_msetex(),
        "the README's first call uses the default name, the server's own command here",
    ) {
        return;
    }
    let readme = manifest_file("README.md");
    let lines: Vec<&str> = readme.lines().collect();
    assert!(lines.len() <= 250, "README.md has {} lines", lines.len());
    let first = lines
        .iter()
        .position(|line| line.trim_start().starts_with("$ redis-cli MSETEX"))
        .expect("a redis-cli MSETEX call in README.md");
    assert!(first < 45, "the first call is at line {}", first + 1);
    let server = ServerConfig::default().start();
    let mut con = server.client();
    let mut calls = 0;
    let mut at = first;
    while let Some(line) = lines
        .get(at)
        .and_then(|l| l.trim_start().strip_prefix("$ redis-cli "))
    {
        let call = line.split('#').next().unwrap_or_default();
        let args: Vec<&str> = call.split_whitespace().collect();
        let shown = lines.get(at + 1).map(|l| l.trim()).unwrap_or_default();
        let answer = match raw_command(&args).query::<Value>(&mut con) {
            Ok(Value::Okay) => "OK".to_owned(),
            Ok(Value::Int(n)) => format!("(integer) {n}"),
            other => format!("{other:?}"),
        };
        assert_eq!(answer, shown, "README: {line}");
        calls += 1;
        at += 2;
    }
    assert!(calls >= 3, "{calls} calls read from the README session");
}

/// Runs an example against `server`; returns what it printed.
fn run_example(name: &str, server: &Server) -> String {
    stdout_of(Command::new(example_binary(name)).arg(server.url()))
}

/// Runs `command` to completion; returns its stdout (it must succeed, else its output is shown).
fn stdout_of(command: &mut Command) -> String {
    let output = command.output().expect("run the client");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// What both client examples print and leave: the session with its value,
/// the lock with a TTL of at most 10 s. Returns a connection to look further.
fn assert_the_examples_writes(server: &Server, stdout: &str) -> Connection {
    assert_eq!(
        stdout.trim(),
        "session stored for 1800 s; lock acquired: true"
    );
    let mut con = server.client();
    let session: String = q(&mut con, &["GET", "session:8f2a"]);
    assert_eq!(session, r#"{"user":42}"#);
    let pttl: i64 = q(&mut con, &["PTTL", "lock:{order:7}:payment"]);
    assert!((1..=10_000).contains(&pttl), "{pttl}");
    con
}

#[test]
fn the_typed_client_example_runs_on_the_numkeys_form() {
    // Under its default name, which is the server's own MSETEX where there
    // is one: the same loadmodule line serves the example everywhere.
    let server = ServerConfig::default()
        .module_args(&["SYNTAX", "NUMKEYS"])
        .start();
    let stdout = run_example("typed_client", &server);
    let mut con = assert_the_examples_writes(&server, &stdout);
    assert_eq!(
        q::<i64, _>(&mut con, &["DBSIZE"]),
        4,
        "no key named EX or PX"
    );
}

#[test]
fn the_redis_rs_example_runs() {
    if skip_unless(
        !target().has_builtin_msetex(),
        "the README example calls MSETEX by its default name, which is the server's own command here",
    ) {
        return;
    }
    let server = Server::start();
    let stdout = run_example("redis_rs", &server);
    assert_the_examples_writes(&server, &stdout);
}

/// A Python 3 that has redis-py: `python3`, or Debian's own (`make deps`
/// installs python3-redis for it).
fn python_with_redis() -> Option<&'static str> {
    ["python3", "/usr/bin/python3"].into_iter().find(|python| {
        Command::new(python)
            .args(["-c", "import redis"])
            .output()
            .is_ok_and(|out| out.status.success())
    })
}

#[test]
fn the_redis_py_example_runs() {
    let python = python_with_redis();
    if skip_unless(
        python.is_some() && !target().has_builtin_msetex(),
        "needs redis-py (make deps installs python3-redis), and MSETEX as the module's default \
         name, which the server's own command takes on Redis 8.4+ / Valkey 9.1+",
    ) {
        return;
    }
    let server = Server::start();
    let stdout = stdout_of(
        Command::new(python.unwrap_or("python3"))
            .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/redis_py.py"))
            .arg(server.url()),
    );
    assert_the_examples_writes(&server, &stdout);
}

/// What `npm ci` says when it cannot reach the registry (npm 7 to 11).
const NPM_UNREACHABLE: [&str; 9] = [
    "npm error network",
    "npm ERR! network",
    "ECONNREFUSED",
    "ENOTFOUND",
    "EAI_AGAIN",
    "ETIMEDOUT",
    "ECONNRESET",
    "ENETUNREACH",
    "EHOSTUNREACH",
];

/// Installs examples/node, the exact node-redis and ioredis of its lock file,
/// with `npm ci` into target/<profile>/node-clients (the source tree stays
/// clean); returns that directory, or why the clients cannot run here: no
/// `node` or `npm`, or a registry (or npm cache) out of reach.
fn install_node_clients() -> Result<PathBuf, String> {
    for tool in ["node", "npm"] {
        let runs = Command::new(tool)
            .arg("--version")
            .output()
            .is_ok_and(|out| out.status.success());
        if !runs {
            return Err(format!("needs `{tool}` on PATH (Node.js 18.19+ with npm)"));
        }
    }
    let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/node");
    let dir = profile_dir().join("node-clients");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for file in ["package.json", "package-lock.json", "typed_clients.mjs"] {
        std::fs::copy(source.join(file), dir.join(file))
            .unwrap_or_else(|e| panic!("copy examples/node/{file}: {e}"));
    }
    let output = Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund", "--ignore-scripts"])
        .arg("--prefer-offline")
        .current_dir(&dir)
        .output()
        .expect("run npm ci");
    if output.status.success() {
        return Ok(dir);
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    if NPM_UNREACHABLE.iter().any(|sign| stderr.contains(sign)) {
        let code = stderr
            .lines()
            .find(|line| line.contains(" code "))
            .unwrap_or("a network error")
            .trim();
        return Err(format!("`npm ci` cannot reach the registry: {code}"));
    }
    panic!(
        "npm ci in {} failed:\n{}{stderr}",
        dir.display(),
        String::from_utf8_lossy(&output.stdout)
    );
}

/// node-redis's `mSetEx` and ioredis's `msetex` (examples/node/typed_clients.mjs)
/// with `SYNTAX NUMKEYS` under the default name: the module's NUMKEYS form, or
/// on Redis 8.4+ / Valkey 9.1+, where the module leaves the name to it, the
/// server's own MSETEX, which then checks the same expectations.
#[test]
fn the_node_typed_clients_run_on_the_numkeys_form() {
    let installed = install_node_clients();
    let reason = installed.as_ref().err().cloned().unwrap_or_default();
    if skip_unless(installed.is_ok(), &reason) {
        return;
    }
    let dir = installed.unwrap_or_default();
    let server = ServerConfig::default()
        .module_args(&["SYNTAX", "NUMKEYS"])
        .start();
    let stdout = stdout_of(
        Command::new("node")
            .arg("typed_clients.mjs")
            .arg(server.url())
            .current_dir(&dir),
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    let mut con = server.client();
    // Each key's value and PTTL after the script's seven calls (see there):
    // a rewritten by XX EX 200, b's TTL cleared by the call without expiry
    // (the TTL form would read its `2` as 2 seconds), c kept by KEEPTTL, zz
    // never written by the XX that found it missing.
    let expected: [(&str, Option<&str>, std::ops::RangeInclusive<i64>); 6] = [
        ("a", Some("a2"), 150_001..=200_000),
        ("b", Some("b3"), -1..=-1),
        ("c", Some("c2"), 1..=50_000),
        ("d", Some("d1"), 1..=50_000),
        ("e", Some("e1"), -1..=-1),
        ("zz", None, -2..=-2),
    ];
    for (line, (client, prefix)) in lines
        .iter()
        .zip([("node-redis", "nr:"), ("ioredis", "io:")])
    {
        let mut words = line.split_whitespace();
        assert_eq!(words.next(), Some(client), "{stdout}");
        let fields: BTreeMap<&str, &str> = words.filter_map(|w| w.split_once('=')).collect();
        let field = |name: &str| -> &str {
            fields
                .get(name)
                .unwrap_or_else(|| panic!("{client}: no {name} in {line}"))
        };
        // EX; NX with a key taken (0); NX; XX; XX with a key missing (0);
        // no expiry; KEEPTTL.
        assert_eq!(field("replies"), "1,0,1,1,0,1,1", "{client}: {line}");
        for (key, value, pttl) in &expected {
            // What the client read back...
            assert_eq!(field(key), value.unwrap_or("nil"), "{client}: {line}");
            let read: i64 = field(&format!("pttl_{key}")).parse().expect("a PTTL");
            assert!(pttl.contains(&read), "{client}: {key}'s PTTL {read}");
            // ... is what the server holds.
            let name = format!("{prefix}{key}");
            let held: Option<String> = q(&mut con, &["GET", &name]);
            assert_eq!(held.as_deref(), *value, "{name}");
            let held_pttl: i64 = q(&mut con, &["PTTL", &name]);
            assert!(pttl.contains(&held_pttl), "{name}'s PTTL {held_pttl}");
        }
    }
    assert_eq!(
        q::<i64, _>(&mut con, &["DBSIZE"]),
        10,
        "five keys per client, none named after an option"
    );
    // Who served: the module counts 7 calls per client; a module that steps
    // aside for the built-in has no INFO section.
    let calls = info_field(&mut con, "msetex", "msetex_calls");
    if target().has_builtin_msetex() {
        assert_eq!(calls, None, "the server's own MSETEX serves");
    } else {
        assert_eq!(calls.as_deref(), Some("14"));
        assert_eq!(
            info_field(&mut con, "msetex", "msetex_syntax").as_deref(),
            Some("numkeys")
        );
    }
}
