//! The machine and the software the figures come from: the first lines of
//! docs/BENCHMARKS.md.

use crate::run::{minutes, Bench};
use msetex_harness::Target;
use std::process::Command;

/// (what, description) pairs, in the order the report lists them.
pub fn machine(bench: &Bench) -> Vec<(&'static str, String)> {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo.lines().find_map(|l| l.strip_prefix("model name"));
    let cpu = cpu.map_or("unknown", |l| l.trim_start_matches([' ', '\t', ':']));
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let commit = output_of("git", &["rev-parse", "--short", "HEAD"]);
    let date = output_of("date", &["-u", "+%Y-%m-%d %H:%M UTC"]);
    let benchmark = output_of("redis-benchmark", &["--version"]);
    let servers: Vec<String> = bench.servers.iter().map(Target::describe).collect();
    let duration = minutes(bench.progress.started.elapsed().as_secs());
    vec![
        ("date", date),
        ("machine", format!("{cores} cores, {cpu}")),
        ("servers", servers.join(", ")),
        ("client", format!("{benchmark}, on the same machine")),
        ("CPU pinning", bench.pinning.describe()),
        ("module", format!("commit {commit}")),
        ("duration", duration),
    ]
}

/// What `program args` prints, trimmed; empty if it cannot run.
fn output_of(program: &str, args: &[&str]) -> String {
    let out = Command::new(program).args(args).output();
    out.map_or(String::new(), |o| {
        String::from_utf8_lossy(&o.stdout).trim().to_owned()
    })
}
