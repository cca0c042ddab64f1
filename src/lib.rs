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

use entry::{deinit, init};
use redis_module::redis_module;

// Inside Redis every allocation goes through the server's allocator, so
// INFO memory counts it; unit tests run outside Redis, where that
// allocator does not exist.
#[cfg(not(test))]
type Allocator = redis_module::alloc::RedisAlloc;
#[cfg(not(test))]
const ALLOCATOR: Allocator = redis_module::alloc::RedisAlloc;
#[cfg(test)]
type Allocator = std::alloc::System;
#[cfg(test)]
const ALLOCATOR: Allocator = std::alloc::System;

redis_module! {
    name: "msetex",
    version: 20100,
    allocator: (Allocator, ALLOCATOR),
    data_types: [],
    init: init,
    deinit: deinit,
}
