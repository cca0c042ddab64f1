//! The harness the integration tests (`tests/it`) and the benchmark
//! (`bench/`) share: real `redis-server` processes on 127.0.0.1, each with
//! its own free port and temporary directory, killed when dropped.
//!
//! - `REDIS_SERVER` picks the server binary (default: `redis-server` on PATH);
//!   [`target`] tells which product and version it is.
//! - `MSETEX_MODULE` picks the module (default: target/release/libmsetex.so,
//!   which `make test` builds first).
//! - `MSETEX_KEEP_TMP=1` keeps the temporary directories for inspection.
//!
//! By concern: `server` (processes, configs), `client` (commands, replies),
//! `keys` (deadlines, snapshots, events), `replicas`, `cluster` (nodes and
//! slot migrations), `persistence` (data directories, AOF), `workload`
//! (redis-benchmark, a generator), `primaries` (clusters of primaries
//! only, slots, command and error statistics), `client_envs` (other languages'
//! client libraries, installed under target/), `report` (long runs, figures, skips) and
//! `target` (the server under test and what it does, stated once with the
//! upstream source each fact comes from).

mod client;
mod client_envs;
mod cluster;
mod keys;
mod persistence;
mod primaries;
mod replicas;
mod report;
mod server;
mod target;
mod workload;

pub use client::*;
pub use client_envs::*;
pub use cluster::*;
pub use keys::*;
pub use persistence::*;
pub use primaries::*;
pub use redis::{Connection, RedisError, Value};
pub use replicas::*;
pub use report::*;
pub use server::*;
pub use target::*;
pub use workload::*;
