//! The module's entry points: all the server calls, and the only place calling from `ffi` up into
//! the module. `load` reads the server, lets `plan` decide and executes the plan; the commands,
//! filter, server events, INFO and MODULE UNLOAD go to `ffi` as implementations of its traits.

use std::ffi::CStr;

use crate::config;
use crate::ffi::{self, ArgsChange, InfoValue, KeyPositions, LogLevel, Optional, Reply};
use crate::ffi::{Arg, Ctx};
use crate::plan::{Plan, Registration, Registrations, Role};
use crate::replication::{self, ReplicationInfo};
use crate::server::{Callable, Environment, Server};
use crate::syntax::ACL_CATEGORIES;
use crate::{command, load_args, plan, stats};

/// The module, as the server loads and unloads it.
pub struct Entry;

impl ffi::Module for Entry {
    fn load(ctx: *mut ffi::RawCtx, args: &[&[u8]]) -> Result<(), String> {
        load(ctx, args)
    }

    fn may_unload(ctx: &Ctx<'_>) -> bool {
        may_unload(ctx)
    }
}

/// Whether MODULE UNLOAD may go ahead: only where the module registered nothing (it stepped
/// aside for the server's own MSETEX). Every server of the matrix can crash once a module command
/// is gone: a client that queued it in MULTI runs freed memory at EXEC (all ten), a client whose
/// last command it was makes Redis 8.0+ reuse it, and ACL rules naming it crash Redis 6.2 to 8.6
/// and Valkey 7.2 to 8.1. No module API says whether any client or rule still holds it.
fn may_unload(ctx: &Ctx<'_>) -> bool {
    if config::get().is_none() {
        return true;
    }
    ctx.log_warning(
        "MODULE UNLOAD refused: the server can crash once this module's commands are gone (a \
         client with MSETEX queued in MULTI, a client that last ran it, an ACL rule naming it); \
         restart the server without the loadmodule line to remove the module",
    );
    false
}

/// MODULE LOAD / `loadmodule`.
fn load(raw: *mut ffi::RawCtx, args: &[&[u8]]) -> Result<(), String> {
    let options = load_args::parse_load_args(args)?;
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
        io_threads: ffi::config_number(raw, c"io-threads").and_then(|n| u32::try_from(n).ok()),
        jemalloc: allocator
            .first()
            .is_some_and(|(_, value)| value.starts_with("jemalloc")),
        callable: Callable::probe(|command| ffi::command_callable(raw, command.name())),
        name_in_use: if options.default_name() || options.command_name.contains('.') {
            Some(false)
        } else {
            ffi::original_command_name(raw, &options.command_name)
        },
    };
    match plan::plan(&options, server.as_ref(), environment)? {
        Plan::BuiltinServes { line, options } => {
            ffi::set_module_options(raw, options.atomic_slot_migration, options.signal_on_close)?;
            ffi::log(raw, LogLevel::Notice, &line);
            Ok(())
        }
        Plan::Register(registrations) => register(raw, *registrations),
    }
}

/// Executes a plan, in its order.
fn register(raw: *mut ffi::RawCtx, plan: Registrations) -> Result<(), String> {
    ffi::set_module_options(
        raw,
        plan.options.atomic_slot_migration,
        plan.options.signal_on_close,
    )?;
    ffi::register_info::<Info>(raw)?;
    let acl = plan.module.profile.acl;
    let mut lines: Vec<(LogLevel, String)> = Vec::new();
    for command in &plan.commands {
        let (docs, categories) = create(raw, command)?;
        if command.role == Role::Msetex {
            acl.confirm(
                categories == Some(Ok(Optional::Done)),
                ffi::acl_check_available(),
            )
            .map_err(|error| match &categories {
                Some(Err(reason)) => format!("{error}: {reason}"),
                _ => error,
            })?;
        }
        let extras = [
            ("COMMAND DOCS information", docs),
            ("ACL categories", categories),
        ];
        for (what, outcome) in extras {
            let line = match outcome {
                Some(Err(reason)) => (LogLevel::Warning, format!("{what}: {reason}")),
                // Older servers: the command works without them (the ACL note says how).
                _ => continue,
            };
            if !lines.contains(&line) {
                lines.push(line);
            }
        }
    }
    let watching = ffi::watch::<Hooks>(raw);
    replication::set_watching(watching && plan.shortcut_allowed);
    if !watching {
        lines.push((
            LogLevel::Notice,
            "server events or command filters unavailable: every key is always replicated"
                .to_owned(),
        ));
    }
    let acl_note = acl.load_note(&plan.module.name);
    config::set(plan.module);
    ffi::log(raw, LogLevel::Notice, &plan.registered);
    for note in plan.notes.iter().chain(acl_note.iter()) {
        ffi::log(raw, LogLevel::Notice, note);
    }
    for (level, line) in lines {
        ffi::log(raw, level, &line);
    }
    Ok(())
}

/// What became of COMMAND DOCS (7.0+) or ACL categories (7.2+); `None` if not asked for.
type Extra = Option<Result<Optional, String>>;

/// Registers one command; returns what became of its docs and ACL categories.
fn create(raw: *mut ffi::RawCtx, command: &Registration) -> Result<(Extra, Extra), String> {
    let (name, flags, keys) = (&command.name, command.flags, command.legacy_keys);
    match command.role {
        Role::Msetex => ffi::create_command::<Msetex>(raw, name, flags, keys)?,
        Role::Apply => ffi::create_command::<Apply>(raw, name, flags, keys)?,
        Role::ChangesCounter => ffi::create_command::<Changes>(raw, name, flags, keys)?,
    }
    let docs = command
        .docs
        .as_ref()
        .map(|docs| ffi::set_command_info(raw, name, docs));
    let categories = command
        .categories
        .then(|| ffi::set_acl_categories(raw, name, ACL_CATEGORIES));
    Ok((docs, categories))
}

struct Msetex;

impl ffi::Command for Msetex {
    fn run<'c>(ctx: &Ctx<'c>, args: &[Arg<'c>]) -> Reply {
        command::msetex(ctx, args)
    }

    fn declare_keys(positions: &KeyPositions, args: &[Arg<'_>]) {
        command::declare_keys(positions, args);
    }
}

/// `<name>.apply`.
struct Apply;

impl ffi::Command for Apply {
    fn run<'c>(ctx: &Ctx<'c>, args: &[Arg<'c>]) -> Reply {
        command::apply(ctx, args)
    }
}

/// `<name>.changes`.
struct Changes;

impl ffi::Command for Changes {
    fn run<'c>(ctx: &Ctx<'c>, args: &[Arg<'c>]) -> Reply {
        replication::count_changes(ctx, args)
    }
}

/// The command filter and the server events.
struct Hooks;

impl ffi::Hooks for Hooks {
    fn filter_wants(name: &[u8]) -> bool {
        if replication::is_replication_handshake(name) {
            replication::on_listener_may_appear();
            return false;
        }
        config::get().is_some_and(|module| module.keys.filter_wants(&module.name, name))
    }

    fn filter(args: &[&[u8]]) -> Vec<ArgsChange> {
        config::get().map_or_else(Vec::new, |module| module.keys.rewrite(&module.name, args))
    }

    fn on_replication_event() {
        replication::on_listener_may_appear();
    }

    fn on_cron() {
        replication::on_cron(|| {
            let fields = ffi::server_info_fields(c"replication", &replication::PROBED_FIELDS);
            ReplicationInfo::from_fields(&fields)
        });
    }
}

/// `INFO msetex`.
struct Info;

impl ffi::InfoSection for Info {
    fn fields(aof_on: bool) -> Vec<(&'static CStr, InfoValue)> {
        let mut fields: Vec<(&'static CStr, InfoValue)> = stats::fields()
            .into_iter()
            .map(|(name, value)| (name, InfoValue::Integer(value)))
            .collect();
        fields.push((
            c"replication_listeners",
            InfoValue::Text(replication::listeners_label(aof_on)),
        ));
        if let Some(module) = config::get() {
            fields.push((c"syntax", InfoValue::Text(module.syntax.label())));
            fields.push((c"replicate", InfoValue::Text(module.replicate.label())));
            fields.push((c"acl", InfoValue::Text(module.profile.acl.label())));
        }
        fields
    }
}
