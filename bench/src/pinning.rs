//! CPU pinning with taskset: the server under test on a CPU of its own.

use msetex_harness::{info_field, Connection};
use std::process::Command;

/// Where the processes run. Unpinned on this 2-core machine, the server's
/// time per call depended on where the scheduler put it and the client: the
/// same row differed by 1.5x from one run to the next. Pinned, the server
/// under test has a CPU to itself, and the client and the replica share the
/// other one.
pub enum Pinning {
    /// The primary's CPU, then the one of everything else (for taskset).
    Cpus {
        server: &'static str,
        others: &'static str,
    },
    /// Why not: one CPU, or no taskset.
    Off(String),
}

impl Pinning {
    pub fn detect() -> Pinning {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        if cpus < 2 {
            return Pinning::Off(format!("{cpus} CPU"));
        }
        let taskset = Command::new("taskset").args(["-c", "0", "true"]).status();
        match taskset.is_ok_and(|status| status.success()) {
            true => Pinning::Cpus {
                server: "1",
                others: "0",
            },
            false => Pinning::Off("taskset could not run".into()),
        }
    }

    /// Moves a running server, every thread of it, to a CPU.
    pub fn move_server(&self, con: &mut Connection, primary: bool) {
        let Pinning::Cpus { server, others } = self else {
            return;
        };
        let cpu = if primary { server } else { others };
        let pid = info_field(con, "server", "process_id").unwrap_or_default();
        let mut taskset = Command::new("taskset");
        taskset
            .args(["-a", "-p", "-c", cpu, &pid])
            .stdout(std::process::Stdio::null());
        let moved = taskset.status().is_ok_and(|s| s.success());
        assert!(
            moved,
            "taskset could not move server process {pid} to CPU {cpu}"
        );
    }

    /// The client command, on the CPU that is not the server's.
    pub fn client(&self, program: &str) -> Command {
        let Pinning::Cpus { others, .. } = self else {
            return Command::new(program);
        };
        let mut command = Command::new("taskset");
        command.args(["-c", others, program]);
        command
    }

    pub fn describe(&self) -> String {
        match self {
            Pinning::Cpus { server, others } => format!(
                "taskset: the server under test on CPU {server}, redis-benchmark and any replica on CPU {others}"
            ),
            Pinning::Off(why) => format!("none ({why})"),
        }
    }
}
