//! The load as a plan, decided without a server (tested in `plan/tests.rs`); `entry` executes it.

use std::ffi::{CStr, CString};

use crate::acl::AclCheck;
use crate::config::{LoadOptions, DEFAULT_COMMAND_NAME};
use crate::docs::Docs;
use crate::keys::Keys;
use crate::loaded::Loaded;
use crate::replication::{apply, Replication, Sent};
use crate::server::{Builtin, Environment, PastDeadline, Profile, Server, ServerCommand};
use crate::syntax::Syntax;

#[derive(Debug)]
pub enum Plan {
    /// Register nothing: the server's MSETEX serves the NUMKEYS form (the module options are still
    /// declared, so that the module blocks nothing).
    BuiltinServes {
        line: String,
        profile: Box<Profile>,
    },
    Register(Box<Registrations>),
}

#[derive(Debug)]
pub struct Registrations {
    pub commands: Vec<Registration>,
    pub module: Loaded,
    /// The log line once everything is registered, then the notes.
    pub registered: String,
    pub notes: Vec<String>,
}

#[derive(Debug)]
pub struct Registration {
    pub name: CString,
    pub role: Role,
    pub flags: &'static CStr,
    pub legacy_keys: (i32, i32, i32),
    /// COMMAND DOCS, key specs and (MSETEX's) ACL categories.
    pub docs: Option<Docs>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Msetex,
    /// `<name>.apply`, what REPLICATE MSETEX sends where the built-in's form cannot serve.
    Apply,
    /// `<name>.changes`: counts a call's key-API writes in one go.
    ChangesCounter,
}

/// Decides the load; the error is the log line saying why not here and what to do.
pub fn plan(
    options: &LoadOptions,
    server: &Server,
    environment: Environment,
) -> Result<Plan, String> {
    let profile = Profile::new(server, environment);
    let Some(name) = naming(server, &profile, options, environment)? else {
        let line = format!(
            "{} has its own MSETEX with this syntax: it serves MSETEX, and this module registers \
             nothing (the same redis.conf works before and after the upgrade)",
            server.describe()
        );
        let profile = Box::new(profile);
        return Ok(Plan::BuiltinServes { line, profile });
    };
    let syntax = options.syntax;
    let numkeys_as_msetex = syntax == Syntax::Numkeys && name == DEFAULT_COMMAND_NAME;
    let replication = Replication::decide(options.replicate, numkeys_as_msetex, &profile, &name)?;
    check_commands(&profile, &replication, environment)?;
    let on = server.describe();
    let syntax_label = syntax.label().to_string_lossy().to_uppercase();
    let registered = format!("command '{name}' registered on {on} (SYNTAX {syntax_label})");
    let module = Loaded {
        c_name: CString::new(name.as_str()).map_err(|e| e.to_string())?,
        name,
        syntax,
        replication,
        keys: Keys::new(syntax, &profile),
        profile,
    };
    let io_threads_assumed = environment.io_threads.is_none() && module.profile.keys_on_io_threads;
    let mut notes: Vec<String> = module.replication.load_note().into_iter().collect();
    notes.push(module.keys.load_note(io_threads_assumed));
    Ok(Plan::Register(Box::new(Registrations {
        registered,
        notes,
        commands: registrations(&module),
        module,
    })))
}

/// The commands to register, in order: only what this deployment sends (ACL rules can hold each).
fn registrations(module: &Loaded) -> Vec<Registration> {
    let documented = |name, role, flags, docs: Docs| Registration {
        name,
        role,
        flags,
        legacy_keys: docs.keys.legacy,
        docs: Some(docs),
    };
    let docs = Docs {
        arity: module.keys.arity(),
        ..module.syntax.docs(module.keys.docs())
    };
    let msetex = module.c_name.clone();
    let mut commands = vec![documented(msetex, Role::Msetex, module.keys.flags(), docs)];
    if let Some(command) = module.replication.apply() {
        let (name, docs) = (command.to_owned(), apply::docs());
        commands.push(documented(name, Role::Apply, c"write deny-oom", docs));
    }
    commands.push(Registration {
        name: module.replication.counter.clone(),
        role: Role::ChangesCounter,
        flags: c"readonly fast no-monitor no-slowlog allow-loading allow-stale",
        legacy_keys: (0, 0, 0),
        docs: None,
    });
    commands
}

/// Refuses the load unless every server command a call may run or replicate exists under its name
/// (so no call writes a key, then fails on a renamed one): the write path's, replication's, and
/// those Redis 7.0's ACL check asks about.
fn check_commands(
    profile: &Profile,
    replication: &Replication,
    environment: Environment,
) -> Result<(), String> {
    use ServerCommand::{Mset, Msetex, Set};
    let (batch, acl) = (profile.builtin_batch(), profile.acl == AclCheck::Capability);
    let past = profile.past_deadline == PastDeadline::DecidedBySet;
    let native = profile.native_replication();
    let acl_why = "asks the server whether the user may run it on the call's keys (MSETEX's ACL \
                   check on Redis 7.0)";
    let mset_why = "writes the values the key API cannot store as SET does (integers, strings SET \
                    embeds)";
    let past_why = "decides, key by key, what a deadline in the past does on this server";
    let per_key_why =
        "is what REPLICATE SET sends to replicas and the AOF (REPLICATE MSETEX does not)";
    let native_why = "is what replicas and the AOF get where the server runs MSETEX itself";
    let needs = [
        (batch, Msetex, "writes what the key API cannot"),
        (!batch, Mset, mset_why),
        (past, Set, past_why),
        (replication.sent == Sent::PerKey, Set, per_key_why),
        (native, Msetex, native_why),
        (acl, Mset, acl_why),
        (acl, Set, acl_why),
    ];
    for (needed, command, why) in needs {
        if needed && !environment.callable.has(command) {
            return Err(format!(
                "this server has no '{}' command under that name (rename-command?), which \
                 MSETEX needs: it {why}; restore the command's name or load the module elsewhere",
                command.name().to_string_lossy()
            ));
        }
    }
    Ok(())
}

/// The command's name, or `None` where the built-in serves its syntax under its name; never a
/// server command's name, renamed away or not (DESIGN.md, "Loading").
fn naming(
    server: &Server,
    profile: &Profile,
    options: &LoadOptions,
    environment: Environment,
) -> Result<Option<String>, String> {
    let name = options.command_name.clone();
    if profile.builtin != Builtin::None && options.default_name() {
        return match (options.syntax, profile.builtin) {
            (Syntax::Numkeys, Builtin::Serving) => Ok(None),
            (Syntax::Numkeys, _) => Err(format!(
                "{}'s own MSETEX is renamed away (rename-command), and a module cannot take the \
                 name of a renamed command: load the module under a name of its own \
                 (COMMAND-NAME msetex.nk) and call that name",
                server.describe()
            )),
            (Syntax::Ttl, _) => Err(format!(
                "{} has a built-in MSETEX that takes numkeys first, so this module cannot \
                 register its TTL-first 'msetex' there (typed clients send the numkeys form); \
                 load it under another name (COMMAND-NAME msetex.ttl), or with SYNTAX NUMKEYS",
                server.describe()
            )),
        };
    }
    match environment.name_in_use {
        _ if options.default_name() || name.contains('.') => Ok(Some(name)),
        Some(false) => Ok(Some(name)),
        Some(true) => Err(format!(
            "COMMAND-NAME '{name}' is the name of a server command (even renamed away, a \
             module cannot take it): choose another one, with a dot (app.{name})"
        )),
        None => Err(format!(
            "cannot tell whether COMMAND-NAME '{name}' names a server command renamed away \
             (ACL CAT, which lists them, is renamed away), which a module cannot take: \
             choose a name with a dot (app.{name})"
        )),
    }
}

#[cfg(test)]
mod tests;
