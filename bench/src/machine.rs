//! The machine and the software the figures come from: the first lines of
//! docs/BENCHMARKS.md.

use crate::run::{minutes, Bench};
use msetex_harness::Target;
use std::process::Command;

/// (what, description) pairs, in the order the report lists them.
pub fn machine(bench: &Bench) -> Vec<(&'static str, String)> {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|l| l.trim_start_matches([' ', '\t', ':']).to_owned())
        .unwrap_or_else(|| "unknown".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let commit = output_of("git", &["rev-parse", "--short", "HEAD"]);
    let date = output_of("date", &["-u", "+%Y-%m-%d %H:%M UTC"]);
    let benchmark = output_of("redis-benchmark", &["--version"]);
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

/// What `program args` prints, trimmed; empty if it cannot run.
fn output_of(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}
