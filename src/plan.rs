//! The load step as a plan: from the load arguments, the server and its
//! environment, everything the module registers and logs and what every
//! call will read, decided without a server (unit-tested for every server
//! kind in `plan/tests.rs`). `entry::init` executes it.

use std::ffi::{CStr, CString};

use crate::config::{AclCheck, Module};
use crate::ffi::docs::Docs;
use crate::load_args::LoadOptions;
use crate::server::{Environment, KeysDeclared, Profile, Server, TtlOptions};
use crate::syntax::{apply, ReplicatedForm};

/// What a load does.
#[derive(Debug)]
pub enum Plan {
    /// Register nothing: the server's own MSETEX serves the NUMKEYS form
    /// (the log line says so).
    BuiltinServes(String),
    /// Register the module's commands.
    Register(Box<Registrations>),
}

/// Everything a load registers, in order.
#[derive(Debug)]
pub struct Registrations {
    /// Server commands MSETEX calls or sends, which must exist under their
    /// own names (or a call could write without replicating), each with
    /// the error the load fails with if it does not.
    pub needed: Vec<(&'static CStr, String)>,
    /// Module options: declare the handling of atomic slot migration.
    pub atomic_slot_migration: bool,
    /// Module options: keys are signalled by closing them.
    pub signal_on_close: bool,
    pub commands: Vec<Registration>,
    /// What every call reads; `acl` is settled when the server accepts or
    /// refuses ACL categories (`entry`).
    pub module: Module,
    /// Whether the "nobody listens" shortcut may be used, once the events
    /// and the command filter that keep it true are registered.
    pub shortcut_allowed: bool,
    /// The log line once everything is registered, then the notes.
    pub registered: String,
    pub notes: Vec<String>,
}

/// One command to register.
#[derive(Debug)]
pub struct Registration {
    pub name: CString,
    pub role: Role,
    pub flags: &'static CStr,
    /// Legacy first key, last key and step.
    pub legacy_keys: (i32, i32, i32),
    /// COMMAND DOCS and key specifications (Redis 7.0+).
    pub docs: Option<Docs>,
    /// Put in MSETEX's ACL categories (Redis 7.2+).
    pub categories: bool,
}

/// What a registered command runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Msetex,
    /// `<name>.apply`, the replicated form of REPLICATE MSETEX, registered
    /// whatever the mode: replicas and AOF loading apply it, also after a
    /// change of mode.
    Apply,
    /// `<name>.unroutable`, which refuses TTL-form options where they
    /// cannot be routed.
    Unroutable,
    /// `<name>.changes`, the changes counter of REPLICATE MSETEX.
    ChangesCounter,
}

/// Decides the load. The error is the log line that explains why the
/// module cannot load here and what to do.
pub fn plan(
    options: &LoadOptions,
    server: Option<&Server>,
    environment: Environment,
) -> Result<Plan, String> {
    if let Some(line) = builtin_serves(server, options)? {
        return Ok(Plan::BuiltinServes(line));
    }
    let name = options.command_name.as_str();
    let c_name = |suffix: &str| CString::new(format!("{name}{suffix}")).map_err(|e| e.to_string());
    let profile = Profile::new(server, environment);
    let syntax = options.syntax;
    let by_specs = profile.keys == KeysDeclared::BySpecs;

    let docs = syntax.docs(by_specs, profile.keynum_steps);
    let mut commands = vec![Registration {
        name: c_name("")?,
        role: Role::Msetex,
        flags: if by_specs {
            c"write deny-oom"
        } else {
            c"write deny-oom getkeys-api"
        },
        legacy_keys: docs.legacy_keys,
        docs: Some(docs),
        categories: true,
    }];
    let apply_docs = apply::docs();
    commands.push(Registration {
        name: c_name(".apply")?,
        role: Role::Apply,
        flags: c"write deny-oom",
        legacy_keys: apply_docs.legacy_keys,
        docs: Some(apply_docs),
        categories: true,
    });
    // Where TTL-form options cannot be routed, the filter sends them to a
    // command without keys that refuses them.
    let refuses_options =
        syntax.has_leading_options() && profile.ttl_options == TtlOptions::Refused;
    if refuses_options {
        commands.push(Registration {
            name: c_name(".unroutable")?,
            role: Role::Unroutable,
            flags: c"write",
            legacy_keys: (0, 0, 0),
            docs: None,
            categories: true,
        });
    }
    if options.replicate.counts_changes() {
        commands.push(Registration {
            name: c_name(".changes")?,
            role: Role::ChangesCounter,
            flags: c"readonly fast no-monitor no-slowlog allow-loading allow-stale",
            legacy_keys: (0, 0, 0),
            docs: None,
            categories: false,
        });
    }
    let name_of = |role: Role| {
        commands
            .iter()
            .find(|command| command.role == role)
            .map(|command| command.name.clone())
    };

    let replicated_form = syntax.replicated_form(options.default_name());
    let module = Module {
        name: name.to_owned(),
        name_c: c_name("")?,
        syntax,
        replicate: options.replicate,
        acl: AclCheck::Unavailable,
        cluster: environment.cluster,
        counter_c: name_of(Role::ChangesCounter),
        apply_c: c_name(".apply")?,
        replicated_form,
        unroutable_c: name_of(Role::Unroutable),
        profile: profile.clone(),
    };
    let mut notes: Vec<String> = options
        .replicate
        .load_note(
            &module.replicated_name().to_string_lossy(),
            replicated_form == ReplicatedForm::Builtin,
        )
        .into_iter()
        .collect();
    if by_specs {
        notes.push(format!(
            "this server may ask for command keys from I/O threads: keys are declared by key \
             specifications only, and {}",
            syntax.by_specs_note(refuses_options)
        ));
    }
    let on = server.map_or_else(|| "an unidentified server".to_owned(), Server::describe);
    let registered = format!(
        "command '{name}' registered on {on} (SYNTAX {})",
        syntax.label().to_string_lossy().to_uppercase()
    );

    // Every key MSETEX cannot write through the key API is written by the
    // server's MSET, and REPLICATE SET sends SET.
    let needed = [Some(c"MSET"), options.replicate.sends()]
        .into_iter()
        .flatten()
        .map(|command| (command, missing_command(command, command != c"MSET")))
        .collect();
    Ok(Plan::Register(Box::new(Registrations {
        needed,
        atomic_slot_migration: profile.atomic_slot_migration,
        signal_on_close: profile.signal_on_close,
        commands,
        module,
        shortcut_allowed: profile.shortcut_allowed,
        registered,
        notes,
    })))
}

/// The load error when the server lacks `command` under its own name.
fn missing_command(command: &CStr, replicated: bool) -> String {
    format!(
        "MSETEX needs the server's {} command, which this server does not have under that name \
         (rename-command?){}",
        command.to_string_lossy(),
        if replicated {
            "; REPLICATE MSETEX does not replicate through SET"
        } else {
            ""
        }
    )
}

/// Where the server has its own MSETEX (Redis 8.4+, Valkey 9.1+) and the
/// module would take its name: the built-in's own syntax leaves it to the
/// built-in (`Some`: the log line); the TTL form cannot be registered
/// there.
fn builtin_serves(
    server: Option<&Server>,
    options: &LoadOptions,
) -> Result<Option<String>, String> {
    let Some(server) = server.filter(|s| s.has_builtin_msetex()) else {
        return Ok(None);
    };
    if !options.default_name() {
        return Ok(None);
    }
    if options.syntax.is_builtins() {
        Ok(Some(format!(
            "{} has its own MSETEX with this syntax: it serves MSETEX, and this module \
             registers nothing (the same redis.conf works before and after the upgrade)",
            server.describe()
        )))
    } else {
        Err(format!(
            "{} has a built-in MSETEX that takes numkeys first, so this module cannot \
             register its TTL-first 'msetex' there (the built-in would read those calls \
             differently); load it under another name (COMMAND-NAME msetex.ttl), or with \
             SYNTAX NUMKEYS to let the built-in serve",
            server.describe()
        ))
    }
}

#[cfg(test)]
mod tests;
