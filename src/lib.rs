//! redis-msetex: a Redis module that adds
//!
//! ```text
//! MSETEX seconds key value [key value ...]
//! ```
//!
//! which sets every key and its time to live in one atomic step.
//!
//! This file only registers the module; `parse` validates arguments,
//! `command` applies them, and `ffi` holds every raw module API call.

mod command;
mod ffi;
pub mod parse;
mod propagation;
mod stats;

use redis_module::{redis_module, Context, RedisString, Status};

/// Name the command is registered under.
const COMMAND_NAME: &std::ffi::CStr = c"msetex";
/// `write`: refused on read-only replicas and counted as a write;
/// `deny-oom`: refused (before running) when maxmemory is reached;
/// `getkeys-api`: the command itself says where its keys are, since they
/// move with the options.
const COMMAND_FLAGS: &std::ffi::CStr = c"write deny-oom getkeys-api";
/// Without options, keys are argv[2], argv[4], ... up to the last argument:
/// what COMMAND INFO shows for clients that read first/last/step.
const FIRST_KEY: i32 = 2;
const LAST_KEY: i32 = -1;
const KEY_STEP: i32 = 2;

fn init(ctx: &Context, _args: &[RedisString]) -> Status {
    match register(ctx) {
        Ok(()) => Status::Ok,
        Err(reason) => {
            ffi::log(
                ctx.ctx,
                ffi::LogLevel::Warning,
                &format!("not loaded: {reason}"),
            );
            Status::Err
        }
    }
}

fn register(ctx: &Context) -> Result<(), String> {
    ffi::init_api()?;
    command::set_command_name(&COMMAND_NAME.to_string_lossy());
    ffi::create_command(
        ctx.ctx,
        COMMAND_NAME,
        COMMAND_FLAGS,
        FIRST_KEY,
        LAST_KEY,
        KEY_STEP,
    )?;
    ffi::disable_implicit_signal(ctx.ctx)?;
    ffi::register_info(ctx.ctx)?;
    let events = ffi::subscribe_propagation_events(ctx.ctx);
    propagation::set_events_subscribed(events);
    if !events {
        ffi::log(
            ctx.ctx,
            ffi::LogLevel::Notice,
            "server events unavailable: every key is always replicated in full",
        );
    }
    ffi::log(
        ctx.ctx,
        ffi::LogLevel::Notice,
        &format!("command '{}' registered", COMMAND_NAME.to_string_lossy()),
    );
    Ok(())
}

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
    version: 1,
    allocator: (Allocator, ALLOCATOR),
    data_types: [],
    init: init,
}
