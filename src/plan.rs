//! The load as a plan: from the load arguments, the server and its environment, what the module
//! registers and logs and what every call reads, decided without a server (unit-tested for every
//! server kind in `plan/tests.rs`). `entry::load` executes it.

use std::ffi::CString;

use crate::acl::AclCheck;
use crate::config::Module;
use crate::docs::Docs;
use crate::load_args::{LoadOptions, DEFAULT_COMMAND_NAME};
use crate::replication::{CallForm, Replication};
use crate::server::{Builtin, Environment, KeysDeclared, Profile, Server};
use crate::syntax::{apply, Syntax};
use crate::write::Batching;

/// What a load does.
#[derive(Debug)]
pub enum Plan {
    /// Register nothing: the server's MSETEX serves the NUMKEYS form (the log line says so). The
    /// module options are still declared, so that the module blocks nothing.
    BuiltinServes {
        line: String,
        options: ModuleOptions,
    },
    Register(Box<Registrations>),
}

/// What the module declares to the server (`RedisModule_SetModuleOptions`): the `Profile` fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModuleOptions {
    pub atomic_slot_migration: bool,
    pub signal_on_close: bool,
}

impl ModuleOptions {
    fn of(profile: &Profile) -> ModuleOptions {
        ModuleOptions {
            atomic_slot_migration: profile.atomic_slot_migration,
            signal_on_close: profile.signal_on_close,
        }
    }
}

impl Plan {
    fn step_aside(line: String, options: ModuleOptions) -> Plan {
        Plan::BuiltinServes { line, options }
    }
}

/// Everything a load registers, in order.
#[derive(Debug)]
pub struct Registrations {
    pub options: ModuleOptions,
    pub commands: Vec<Registration>,
    /// What every call reads; `acl` is settled once the server takes or refuses ACL categories.
    pub module: Module,
    /// Whether the "nobody listens" shortcut may be used, once its events and filter are in place.
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
    pub flags: &'static std::ffi::CStr,
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
    /// `<name>.apply`, what REPLICATE MSETEX sends where the built-in's form cannot serve.
    Apply,
    /// `<name>.changes`: counts key-API writes where each call is replicated as one command.
    ChangesCounter,
}

/// Decides the load; the error is the log line saying why it cannot load here and what to do.
pub fn plan(
    options: &LoadOptions,
    server: Option<&Server>,
    environment: Environment,
) -> Result<Plan, String> {
    let profile = Profile::new(server, environment);
    let module_options = ModuleOptions::of(&profile);
    let (name, alias) = match naming(server, &profile, options, environment)? {
        Naming::StepAside(line) => return Ok(Plan::step_aside(line, module_options)),
        Naming::Register { name, alias } => (name, alias),
    };
    let c_name = |suffix: &str| CString::new(format!("{name}{suffix}")).map_err(|e| e.to_string());
    let syntax = options.syntax;
    let replication = Replication::decide(
        options.replicate,
        syntax == Syntax::Numkeys && name == DEFAULT_COMMAND_NAME,
        &profile,
        environment.cluster,
        &c_name(".apply")?,
    );
    check_commands(&profile, &replication, environment)?;
    let commands = registrations(&c_name, syntax, &profile, &replication)?;
    let counter_c = commands
        .iter()
        .find(|command| command.role == Role::ChangesCounter)
        .map(|command| command.name.clone());
    let module = Module {
        name_c: c_name("")?,
        syntax,
        replicate: options.replicate,
        replication,
        acl: AclCheck::ByName,
        cluster: environment.cluster,
        counter_c,
        alias,
        profile,
        name,
    };
    let on = server.map_or_else(|| "an unidentified server".to_owned(), Server::describe);
    let syntax_label = syntax.label().to_string_lossy().to_uppercase();
    Ok(Plan::Register(Box::new(Registrations {
        options: module_options,
        registered: format!(
            "command '{}' registered on {on} (SYNTAX {syntax_label})",
            module.name
        ),
        notes: notes(&module, environment),
        shortcut_allowed: module.profile.shortcut_allowed,
        commands,
        module,
    })))
}

/// The commands to register, in order: only what this deployment sends (each name is one more
/// that ACL rules can hold).
fn registrations(
    c_name: &dyn Fn(&str) -> Result<CString, String>,
    syntax: Syntax,
    profile: &Profile,
    replication: &Replication,
) -> Result<Vec<Registration>, String> {
    let docs = syntax.docs(&profile.keys, profile.keynum_steps);
    let by_specs = profile.keys != KeysDeclared::ByCallback;
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
    if let Replication::PerCall {
        form: CallForm::Apply,
        ..
    } = replication
    {
        let apply_docs = apply::docs();
        commands.push(Registration {
            name: c_name(".apply")?,
            role: Role::Apply,
            flags: c"write deny-oom",
            legacy_keys: apply_docs.legacy_keys,
            docs: Some(apply_docs),
            categories: true,
        });
    }
    if replication.counts_changes() {
        commands.push(Registration {
            name: c_name(".changes")?,
            role: Role::ChangesCounter,
            flags: c"readonly fast no-monitor no-slowlog allow-loading allow-stale",
            legacy_keys: (0, 0, 0),
            docs: None,
            categories: false,
        });
    }
    Ok(commands)
}

/// What the log says once the commands are registered.
fn notes(module: &Module, environment: Environment) -> Vec<String> {
    let (name, profile) = (&module.name, &module.profile);
    let mut notes: Vec<String> = module.replication.load_note().into_iter().collect();
    if profile.keys != KeysDeclared::ByCallback {
        notes.push(format!(
            "this server may ask for command keys from I/O threads{}: keys are declared by key \
             specifications only, and {}",
            if environment.io_threads.is_none() {
                " (io-threads could not be read, CONFIG renamed?, so taken as above 1)"
            } else {
                ""
            },
            module.syntax.by_specs_note(&profile.keys)
        ));
    }
    if module.alias {
        notes.push(format!(
            "the server's own MSETEX is renamed away (rename-command): this module serves \
             MSETEX calls in its place, as '{name}' (the server cannot give a module the name \
             of a command it renamed; grant '{name}' or its categories in ACL rules)"
        ));
    }
    notes
}

/// Refuses the load unless every server command a call may run or replicate exists under its name
/// (so no call writes a key, then fails on a renamed one); the profile avoids what it can.
fn check_commands(
    profile: &Profile,
    replication: &Replication,
    environment: Environment,
) -> Result<(), String> {
    let needs = Batching::commands(profile)
        .into_iter()
        .chain(replication.command());
    for (command, why) in needs {
        if !environment.callable.has(command) {
            return Err(format!(
                "this server has no '{}' command under that name (rename-command?), which \
                 MSETEX needs: it {why}; restore the command's name or load the module elsewhere",
                command.name().to_string_lossy()
            ));
        }
    }
    Ok(())
}

/// MSETEX's name where it serves the calls of a built-in renamed away (the default name is taken).
pub const REPLACEMENT_NAME: &str = "msetex.nk";

/// What the command is called.
enum Naming {
    /// The server's own MSETEX serves (the log line).
    StepAside(String),
    /// Register as `name`; `alias`: the filter also sends it the renamed built-in's MSETEX calls.
    Register { name: String, alias: bool },
}

/// Where the server has its own MSETEX (Redis 8.4+, Valkey 9.1+), the built-in's syntax under its
/// name leaves the calls to it; if it is renamed away, the module serves them under another name
/// (`RedisModule_CreateCommand` under a renamed command's original name crashes Redis 8.6 and
/// Valkey 9.1). The TTL form cannot take the name there (typed clients send the numkeys form). A
/// dotless name that could be a renamed server command is refused for the same reason.
fn naming(
    server: Option<&Server>,
    profile: &Profile,
    options: &LoadOptions,
    environment: Environment,
) -> Result<Naming, String> {
    let name = options.command_name.clone();
    let builtin = server.filter(|s| s.has_builtin_msetex());
    let replaces = options.syntax == Syntax::Numkeys && profile.builtin == Builtin::RenamedAway;
    match builtin {
        Some(server) if options.default_name() => match (options.syntax, profile.builtin) {
            (Syntax::Numkeys, Builtin::Serving) => Ok(Naming::StepAside(format!(
                "{} has its own MSETEX with this syntax: it serves MSETEX, and this module \
                 registers nothing (the same redis.conf works before and after the upgrade)",
                server.describe()
            ))),
            (Syntax::Numkeys, _) => Ok(Naming::Register {
                name: REPLACEMENT_NAME.to_owned(),
                alias: true,
            }),
            (Syntax::Ttl, _) => Err(format!(
                "{} has a built-in MSETEX that takes numkeys first, so this module cannot \
                 register its TTL-first 'msetex' there (typed clients send the numkeys form); \
                 load it under another name (COMMAND-NAME msetex.ttl), or with SYNTAX NUMKEYS",
                server.describe()
            )),
        },
        _ if options.default_name() || name.contains('.') => Ok(Naming::Register {
            name,
            alias: replaces,
        }),
        _ => match environment.name_in_use {
            Some(false) => Ok(Naming::Register {
                name,
                alias: replaces,
            }),
            Some(true) => Err(format!(
                "COMMAND-NAME '{name}' is the name of a server command (even renamed away, a \
                 module cannot take it): choose another one, with a dot (app.{name})"
            )),
            None => Err(format!(
                "cannot tell whether COMMAND-NAME '{name}' names a server command renamed away \
                 (ACL CAT, which lists them, is renamed away), which a module cannot take: \
                 choose a name with a dot (app.{name})"
            )),
        },
    }
}

#[cfg(test)]
mod tests;
