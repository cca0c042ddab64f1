//! The integration tests: one binary, one module per concern, each
//! starting real server processes through `msetex-harness`.
//!
//! `REDIS_SERVER=<binary> cargo test --release --test it` runs them on one
//! server; `make test-matrix` on every server in ../shared/servers.

mod acl;
mod clients;
mod cluster;
mod cluster_clients;
mod compat;
mod configs;
mod durability;
mod errors;
mod hardened;
mod info;
mod install;
mod io_threads;
mod key_reading;
mod like_set;
mod limits;
mod module_load;
mod notifications;
mod numkeys;
mod options;
mod oracle;
mod persistence;
mod portable;
mod replication;
mod resharding;
mod scripts;
mod semantics;
mod soak;
mod visibility;
