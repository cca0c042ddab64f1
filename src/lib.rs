//! redis-msetex: a Redis module that adds MSETEX, which sets every key and
//! its time to live in one atomic step, in either of two syntaxes:
//!
//! ```text
//! SYNTAX TTL      MSETEX [NX | XX] [EX | PX | EXAT | PXAT] time key value [key value ...]
//! SYNTAX NUMKEYS  MSETEX numkeys key value [key value ...] [NX | XX] [EX | PX | EXAT | PXAT t | KEEPTTL]
//! ```
//!
//! This file only loads the module: `load_args` reads the load arguments,
//! `server` identifies the server and what it means, `parse` validates a
//! call, `command` applies it (`write` writes the keys, `propagation`
//! decides what goes to replicas and the AOF), `command_info` describes
//! it, and `ffi` holds every raw module API call.

mod acl;
mod command;
mod command_info;
mod config;
mod ffi;
mod load_args;
mod parse;
mod propagation;
mod server;
mod sizing;
mod stats;
mod write;

use std::ffi::{CStr, CString};

use redis_module::{redis_module, Context, RedisString, Status};

use config::{AclCheck, KeysDeclared, Module};
use ffi::{Handler, LogLevel, Optional};
use load_args::Replicate;
use parse::Syntax;
use propagation::PerCallForm;
use server::{Environment, Profile, Registration, Server, TtlOptions};

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
    let raw = ctx.ctx;
    ffi::init_api()?;
    let args: Vec<&[u8]> = args.iter().map(RedisString::as_slice).collect();
    let options = load_args::parse_load_args(&args)?;
    let fields = ffi::server_info_fields(
        c"server",
        &["redis_version", "server_name", "valkey_version"],
    );
    let server = Server::identify(|name| {
        fields
            .iter()
            .find(|(field, _)| *field == name)
            .map(|(_, value)| value.as_str())
    });
    let allocator = ffi::server_info_fields(c"memory", &["mem_allocator"]);
    let environment = Environment {
        cluster: ffi::cluster_enabled(raw),
        io_threads: ffi::load_config(raw, c"io-threads")
            .and_then(|value| value.trim().parse().ok())
            .unwrap_or(1),
        jemalloc: allocator
            .first()
            .is_some_and(|(_, value)| value.starts_with("jemalloc")),
    };
    let profile = Profile::new(server.as_ref(), environment);
    let on = server
        .as_ref()
        .map_or_else(|| "an unidentified server".to_owned(), Server::describe);

    if let Registration::BuiltinServes(line) = server::registration(server.as_ref(), &options)? {
        ffi::log(raw, LogLevel::Notice, &line);
        return Ok(());
    }
    // Every key MSETEX cannot write through the key API is written by the
    // server's MSET, and REPLICATE SET sends SET: neither may have been
    // renamed away, or a call could write without replicating.
    let mut needed = vec![c"MSET"];
    if options.replicate == Replicate::Set {
        needed.push(c"SET");
    }
    if let Some(missing) = needed
        .into_iter()
        .find(|name| !ffi::command_exists(raw, name))
    {
        return Err(format!(
            "MSETEX needs the server's {} command, which this server does not have under that \
             name (rename-command?){}",
            missing.to_string_lossy(),
            if missing == c"SET" {
                "; REPLICATE MSETEX does not replicate through SET"
            } else {
                ""
            }
        ));
    }

    let name = CString::new(options.command_name.as_str()).map_err(|e| e.to_string())?;
    ffi::set_module_options(raw, profile.atomic_slot_migration, profile.signal_on_close)?;
    ffi::register_info(raw)?;
    let keys = if profile.keys_on_io_threads {
        KeysDeclared::BySpecs
    } else {
        KeysDeclared::ByCallback
    };
    let docs = command_info::docs(
        options.syntax,
        keys == KeysDeclared::BySpecs,
        profile.keynum_steps,
    );
    let flags: &CStr = match keys {
        KeysDeclared::ByCallback => c"write deny-oom getkeys-api",
        KeysDeclared::BySpecs => c"write deny-oom",
    };
    ffi::create_command(raw, &name, flags, docs.legacy_keys, Handler::Msetex)?;
    let acl = register_extras(ctx, &name, &docs);
    // How REPLICATE MSETEX replicates a call, registered whatever the mode:
    // replicas and AOF loading apply it, also after a change of mode.
    let apply =
        CString::new(format!("{}.apply", options.command_name)).map_err(|e| e.to_string())?;
    let apply_docs = command_info::apply_docs();
    ffi::create_command(
        raw,
        &apply,
        c"write deny-oom",
        apply_docs.legacy_keys,
        Handler::Apply,
    )?;
    register_extras(ctx, &apply, &apply_docs);
    // Where TTL-form options cannot be routed, the filter sends them to a
    // command without keys that refuses them.
    let unroutable = if options.syntax == Syntax::Ttl && profile.ttl_options == TtlOptions::Refused
    {
        let unroutable = CString::new(format!("{}.unroutable", options.command_name))
            .map_err(|e| e.to_string())?;
        ffi::create_command(raw, &unroutable, c"write", (0, 0, 0), Handler::Unroutable)?;
        if let Err(reason) = ffi::set_acl_categories(raw, &unroutable, command_info::ACL_CATEGORIES)
        {
            ffi::log(raw, LogLevel::Warning, &reason);
        }
        Some(unroutable)
    } else {
        None
    };
    let per_call = if options.syntax == Syntax::Numkeys && options.default_name() {
        PerCallForm::Builtin
    } else {
        PerCallForm::Apply
    };
    let counter_c = match options.replicate {
        Replicate::Msetex => {
            let counter = CString::new(format!("{}.changes", options.command_name))
                .map_err(|e| e.to_string())?;
            ffi::create_command(
                raw,
                &counter,
                c"readonly fast no-monitor no-slowlog allow-loading allow-stale",
                (0, 0, 0),
                Handler::Changes,
            )?;
            Some(counter)
        }
        Replicate::Set => None,
    };

    if acl == AclCheck::Translated {
        // Users defined before (or loaded after) the module hold rules the
        // command filter never saw: corrected before MSETEX first runs.
        acl::set_pending();
    }
    let watching = ffi::watch_replication(raw);
    propagation::set_watching(watching && profile.shortcut_allowed);
    if !watching {
        ffi::log(
            raw,
            LogLevel::Notice,
            "server events or command filters unavailable: every key is always replicated",
        );
    }
    let notes = load_notes(
        &options.command_name,
        options.syntax,
        options.replicate,
        keys,
        profile.ttl_options,
    );
    config::set(Module {
        name: options.command_name.clone(),
        name_c: name,
        syntax: options.syntax,
        replicate: options.replicate,
        profile,
        keys,
        acl,
        cluster: environment.cluster,
        counter_c,
        apply_c: apply,
        per_call,
        unroutable_c: unroutable,
    });
    let syntax = match options.syntax {
        Syntax::Ttl => "TTL",
        Syntax::Numkeys => "NUMKEYS",
    };
    ffi::log(
        raw,
        LogLevel::Notice,
        &format!(
            "command '{}' registered on {on} (SYNTAX {syntax})",
            options.command_name
        ),
    );
    for note in notes {
        ffi::log(raw, LogLevel::Notice, &note);
    }
    Ok(())
}

/// What the log should say about the choices a load made.
fn load_notes(
    name: &str,
    syntax: Syntax,
    replicate: Replicate,
    keys: KeysDeclared,
    ttl_options: TtlOptions,
) -> Vec<String> {
    let mut notes = Vec::new();
    if replicate == Replicate::Msetex {
        let runs_natively = if syntax == Syntax::Numkeys && name == load_args::DEFAULT_COMMAND_NAME
        {
            " (or be Redis 8.4+ / Valkey 9.1+, which run it natively)"
        } else {
            ""
        };
        notes.push(format!(
            "REPLICATE MSETEX: each call goes to replicas, the AOF and slot migrations as one \
             '{}' command; replicas, AOF loading and the nodes slots migrate to need this module \
             loaded with the same arguments{runs_natively}",
            if runs_natively.is_empty() {
                format!("{name}.apply")
            } else {
                name.to_owned()
            }
        ));
    }
    if keys == KeysDeclared::BySpecs {
        notes.push(format!(
            "this server may ask for command keys from I/O threads: keys are declared by key \
             specifications only, and {}",
            match (syntax, ttl_options) {
                (Syntax::Ttl, TtlOptions::Refused) => {
                    "the TTL form's options are refused (in cluster mode with io-threads, this \
                     server routes a call by keys it reads before any module)"
                }
                (Syntax::Ttl, _) => {
                    "a command filter packs the TTL form's options into one argument before the \
                     server reads the keys (MONITOR and SLOWLOG show that form)"
                }
                (Syntax::Numkeys, _) => {
                    "where the server cannot read them from the key spec (cluster mode, or \
                     before Redis 8.4 / Valkey 9.1) every call is refused"
                }
            }
        ));
    }
    notes
}

/// COMMAND DOCS information (7.0+) and ACL categories (7.2+): the command
/// works without them, so a server that lacks or refuses them only gets a
/// log line. Returns how ACL rules reach the command.
fn register_extras(ctx: &Context, name: &CStr, docs: &command_info::Docs) -> AclCheck {
    let categories = ffi::set_acl_categories(ctx.ctx, name, command_info::ACL_CATEGORIES);
    let acl = match categories {
        Ok(Optional::Done) => AclCheck::ByServer,
        _ if ffi::acl_check_available() => AclCheck::Translated,
        _ => AclCheck::Unavailable,
    };
    let extras = [
        (
            "COMMAND DOCS information",
            ffi::set_command_info(ctx.ctx, name, docs),
        ),
        (
            "ACL categories (MSETEX gets the permission of its categories through the rules \
             ACL SETUSER sets)",
            categories,
        ),
    ];
    for (what, outcome) in extras {
        match outcome {
            Ok(Optional::Done) => {}
            Ok(Optional::Unsupported) => {
                let what = if acl == AclCheck::Unavailable {
                    "ACL categories (rules by command name still work)"
                } else {
                    what
                };
                ffi::log(
                    ctx.ctx,
                    LogLevel::Notice,
                    &format!("this server does not support {what}; skipped"),
                )
            }
            Err(reason) => ffi::log(ctx.ctx, LogLevel::Warning, &format!("{what}: {reason}")),
        }
    }
    acl
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

/// MODULE UNLOAD: refused while it would leave the server unable to
/// describe or replay users' ACL rules (see `command::on_unload`).
fn deinit(ctx: &Context) -> Status {
    if ffi::may_unload(ctx.ctx) {
        Status::Ok
    } else {
        Status::Err
    }
}

redis_module! {
    name: "msetex",
    version: 20100,
    allocator: (Allocator, ALLOCATOR),
    data_types: [],
    init: init,
    deinit: deinit,
}
