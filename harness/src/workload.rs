//! Load on a server: redis-benchmark runs and a deterministic generator.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::*;

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
