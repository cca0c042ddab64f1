//! redis-msetex: a Redis module that adds
//!
//! ```text
//! MSETEX [NX | XX] [EX | PX | EXAT | PXAT] time key value [key value ...]
//! ```
//!
//! which sets every key and its time to live in one atomic step.
//!
//! This file only loads the module: `server` reads the load arguments and
//! identifies the server, `parse` validates a call, `command` applies it,
//! `command_info` describes it, and `ffi` holds every raw module API call.

mod command;
mod command_info;
mod ffi;
mod parse;
mod propagation;
mod server;
mod stats;

use std::ffi::CString;

use redis_module::{redis_module, Context, RedisString, Status};

use ffi::{LogLevel, Optional};

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

fn init(ctx: &Context, args: &[RedisString]) -> Status {
    match load(ctx, args) {
        Ok(()) => Status::Ok,
        Err(reason) => {
            ffi::log(ctx.ctx, LogLevel::Warning, &format!("not loaded: {reason}"));
            Status::Err
        }
    }
}

fn load(ctx: &Context, args: &[RedisString]) -> Result<(), String> {
    ffi::init_api()?;
    let args: Vec<&[u8]> = args.iter().map(RedisString::as_slice).collect();
    let options = server::parse_load_args(&args)?;
    let fields = ffi::server_info_fields(
        c"server",
        &["redis_version", "server_name", "valkey_version"],
    );
    let server = server::Server::identify(|name| {
        fields
            .iter()
            .find(|(field, _)| *field == name)
            .map(|(_, value)| value.as_str())
    });
    server::check_command_name(server.as_ref(), &options)?;

    let name = CString::new(options.command_name.as_str()).map_err(|e| e.to_string())?;
    ffi::disable_implicit_signal(ctx.ctx)?;
    ffi::register_info(ctx.ctx)?;
    ffi::create_command(ctx.ctx, &name, COMMAND_FLAGS, FIRST_KEY, LAST_KEY, KEY_STEP)?;
    command::set_command_name(&options.command_name);
    register_extras(ctx, &name);

    let events = ffi::subscribe_propagation_events(ctx.ctx);
    propagation::set_events_subscribed(events);
    if !events {
        ffi::log(
            ctx.ctx,
            LogLevel::Notice,
            "server events unavailable: every key is always replicated in full",
        );
    }
    let on = server
        .as_ref()
        .map_or_else(|| "an unidentified server".to_owned(), |s| s.describe());
    ffi::log(
        ctx.ctx,
        LogLevel::Notice,
        &format!("command '{}' registered on {on}", options.command_name),
    );
    Ok(())
}

/// COMMAND DOCS data (7.0+) and ACL categories (7.2+): the command works
/// without them, so a server that lacks or refuses them only gets a log line.
fn register_extras(ctx: &Context, name: &std::ffi::CStr) {
    let extras = [
        (
            "COMMAND DOCS information",
            ffi::set_command_info(ctx.ctx, name),
        ),
        (
            "ACL categories (rules by command name still work)",
            ffi::set_acl_categories(ctx.ctx, name, command_info::ACL_CATEGORIES),
        ),
    ];
    for (what, outcome) in extras {
        match outcome {
            Ok(Optional::Done) => {}
            Ok(Optional::Unsupported) => ffi::log(
                ctx.ctx,
                LogLevel::Notice,
                &format!("this server does not support {what}; skipped"),
            ),
            Err(reason) => ffi::log(ctx.ctx, LogLevel::Warning, &format!("{what}: {reason}")),
        }
    }
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
    version: 10000,
    allocator: (Allocator, ALLOCATOR),
    data_types: [],
    init: init,
}
