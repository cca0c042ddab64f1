//! redis-msetex: a Redis module that adds MSETEX, which sets every key and
//! its time to live in one atomic step, in either of two syntaxes:
//!
//! ```text
//! SYNTAX TTL      MSETEX [NX | XX] [EX | PX | EXAT | PXAT] time key value [key value ...]
//! SYNTAX NUMKEYS  MSETEX numkeys key value [key value ...] [NX | XX] [EX | PX | EXAT | PXAT t | KEEPTTL]
//! ```
//!
//! docs/DESIGN.md opens with the map of these modules. In short: `entry`
//! is everything the server calls and executes the load `plan`
//! (`load_args`, `server`); `command` runs a call (`syntax` validates it,
//! `write` writes the keys, `replication` decides what goes to replicas,
//! the AOF and slot migrations, `outcome` says how a call that fails
//! ends); `acl` says what decides a user's permission and when MODULE
//! UNLOAD may go ahead; `ffi` holds every raw module API call and imports
//! nothing from above it.

// `unsafe` lives in `ffi` only (which allows it), each block with a
// `// SAFETY:` line.
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
mod filter;
mod load_args;
mod outcome;
mod plan;
mod replication;
mod server;
mod sizing;
mod stats;
mod syntax;
mod write;

// Inside the server every allocation goes through the server's allocator,
// so INFO memory counts it; unit tests run outside it.
#[cfg(not(test))]
#[global_allocator]
static ALLOCATOR: redis_module::alloc::RedisAlloc = redis_module::alloc::RedisAlloc;

export_module!(entry::Entry, c"msetex", 20200);
