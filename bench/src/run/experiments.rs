//! The experiment outside the redis-benchmark rows: ACL LOAD of 2,000 users with and without the
//! module. (One call of 10,000 keys, and each key's memory against SET EX's: the instruction
//! bench's, deterministic.)

use super::commandstats::command_stats;
use super::Bench;
use crate::plan::Setup;
use crate::statistics::{median, median_ratio};
use msetex_harness::{q, ServerConfig, TempDir};

// ---------------------------------------------------------------------------
// ACL LOAD

/// Users in the ACL file [`acl_load`] loads.
const ACL_USERS: usize = 2_000;

/// Server time of `ACL LOAD` of [`ACL_USERS`] users on the server under
/// test, with the module loaded and without: the module must not make it
/// dearer (it never looks at users' rules).
#[derive(Clone, Copy, Debug, Default)]
pub struct AclLoad {
    pub with_ms: f64,
    pub without_ms: f64,
    /// Median within-round ratio, with over without.
    pub ratio: f64,
}

pub fn acl_load(bench: &Bench) -> AclLoad {
    let server = bench.server(Setup::plain(0));
    let start = |with_module: bool| {
        let dir = TempDir::new("bench-acl");
        let file = dir.path().join("users.acl");
        let mut users = String::from("user default on nopass ~* &* +@all\n");
        for i in 0..ACL_USERS {
            let rules = match i % 4 {
                0 => "+@all -@write ~app:*",
                1 => "-@all +@read +@write ~* &chan:*",
                2 => "+@all ~s:* (+@write -@dangerous ~w:*)",
                _ => "-@all +get +set +mset ~k:* %R~r:*",
            };
            users.push_str(&format!("user u{i} on >pw{i} {rules}\n"));
        }
        std::fs::write(&file, users).expect("write the ACL file");
        let config = if with_module {
            ServerConfig::default()
        } else {
            ServerConfig::without_module()
        };
        let config = config
            .binary(server)
            .line(&format!("aclfile {}", file.display()));
        msetex_harness::Server::start_with(config, dir)
    };
    let running = [start(true), start(false)];
    let mut samples: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for _ in 0..bench.options.rounds.max(3) {
        for (node, times) in running.iter().zip(samples.iter_mut()) {
            let mut con = node.client();
            q::<(), _>(&mut con, &["CONFIG", "RESETSTAT"]);
            for _ in 0..3 {
                q::<(), _>(&mut con, &["ACL", "LOAD"]);
            }
            // Subcommands have statistics of their own from Redis 7.0 on.
            let stat = if server.is_7_0_or_later() {
                "acl|load"
            } else {
                "acl"
            };
            let stats = command_stats(&mut con, stat).expect("commandstats");
            assert_eq!(stats.calls, 3);
            times.push(stats.usec_per_call / 1000.0);
        }
    }
    let [with, without] = samples;
    AclLoad {
        ratio: median_ratio(&with, &without),
        with_ms: median(with),
        without_ms: median(without),
    }
}
