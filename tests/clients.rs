//! The README's redis-rs example is this repository's examples/redis_rs.rs,
//! compiled by `cargo test` and run here against a live server.

mod common;

use common::*;
use std::path::PathBuf;
use std::process::Command;

fn manifest_file(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// target/<profile>/examples/redis_rs, next to this test's own binary.
fn example_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>");
    let binary = profile_dir.join("examples").join("redis_rs");
    assert!(
        binary.is_file(),
        "{} missing: cargo test builds examples",
        binary.display()
    );
    binary
}

#[test]
fn readme_shows_the_example_verbatim() {
    let readme = manifest_file("README.md");
    let example = manifest_file("examples/redis_rs.rs");
    let body = example
        .split_once("\n\n")
        .map(|(_header, body)| body.trim())
        .expect("example body");
    assert!(
        readme.contains(body),
        "README.md's redis-rs snippet differs from examples/redis_rs.rs"
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
    let output = Command::new(example_binary())
        .arg(server.url())
        .output()
        .expect("run the example");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        stdout.trim(),
        "session stored for 1800 s; lock acquired: true"
    );
    let mut con = server.client();
    let session: String = q(&mut con, &["GET", "session:8f2a"]);
    assert_eq!(session, r#"{"user":42}"#);
    let pttl: i64 = q(&mut con, &["PTTL", "lock:{order:7}:payment"]);
    assert!((1..=10_000).contains(&pttl), "{pttl}");
}
