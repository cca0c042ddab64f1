//! redis-msetex: a Redis module adding MSETEX, which sets every key and its TTL in one atomic step.
//! docs/DESIGN.md maps the modules; `ffi` alone calls the module API (importing nothing above it).

// `unsafe` lives in `ffi` only (which allows it), each block with a `// SAFETY:` line.
#![deny(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

mod acl;
mod command;
mod config;
mod deadline;
mod docs;
mod entry;
#[allow(unsafe_code)]
mod ffi;
mod keys;
mod loaded;
mod outcome;
mod plan;
mod replication;
mod server;
mod sizing;
mod stats;
mod syntax;
mod write;

// In the server every allocation goes through its allocator, so INFO memory counts it (not tests).
#[cfg(not(test))]
#[global_allocator]
static ALLOCATOR: redis_module::alloc::RedisAlloc = redis_module::alloc::RedisAlloc;

export_module!(entry::Entry, c"msetex", 20200);
