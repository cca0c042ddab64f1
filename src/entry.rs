//! Everything the server calls, and the only place `ffi` calls up into: the load (read the server,
//! let `plan` decide, do it) and `ffi`'s traits.

use std::ffi::CStr;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::acl::AclCheck;
use crate::ffi::{self, Arg, Ctx, InfoValue, KeyPositions, LazyArg, LogLevel, Reply, Rewrite};
use crate::loaded::{Loaded, LOADED};
use crate::plan::{Plan, Registration, Registrations, Role};
use crate::replication::{self, ReplicationInfo};
use crate::server::{Callable, Environment, Server, SlotExport};
use crate::syntax::ACL_CATEGORIES;
use crate::{command, config, plan, stats};

pub struct Entry;

impl ffi::Module for Entry {
    /// MODULE LOAD / `loadmodule`.
    fn load(raw: *mut ffi::RawCtx, args: &[&[u8]]) -> Result<(), String> {
        let given = config::parse_load_args(args)?;
        ffi::register_configs::<Entry>(raw, &config::begin(&given)?)?;
        let options = config::settle(&given)?;
        let fields = ffi::server_info_fields(
            c"server",
            &["redis_version", "server_name", "valkey_version"],
        );
        let unknown = "cannot tell which server this is (INFO server has no version the module \
                       can read); MSETEX writes keys as each server's SET does, so it loads only \
                       on a server it knows (Redis 6.2+, Valkey 7.2+)";
        let server = Server::identify(|name| {
            let field = fields.iter().find(|(field, _)| *field == name);
            field.map(|(_, value)| value.as_str())
        })
        .ok_or(unknown)?;
        if let Some(note) = server.untested_note() {
            ffi::log(raw, LogLevel::Notice, &note);
        }
        let allocator = ffi::server_info_fields(c"memory", &["mem_allocator"]);
        let jemalloc = allocator.iter().any(|(_, v)| v.starts_with("jemalloc"));
        let cluster = ffi::cluster_enabled(raw);
        let environment = Environment {
            cluster,
            io_threads: ffi::config_number(raw, c"io-threads").and_then(|n| u32::try_from(n).ok()),
            jemalloc,
            callable: Callable::probe(|command| ffi::command_callable(raw, command.name())),
            name_in_use: if options.default_name() || options.command_name.contains('.') {
                Some(false)
            } else {
                ffi::original_command_name(raw, &options.command_name)
            },
            builtin_listed: ffi::original_command_name(raw, "msetex"),
            keynum_step: ffi::command_keys(raw, &KEYNUM_PROBE).map(|keys| keys == [b"a", b"b"]),
            acl: AclCheck::offered(ffi::acl_categories_available(), ffi::acl_check_available()),
            key_specs: ffi::key_specs_available(),
            slot_migrations_at_load: cluster.then(|| ffi::slot_migrations_listed(raw)).flatten(),
        };
        match plan::plan(&options, &server, environment)? {
            Plan::BuiltinServes { line, profile } => {
                let (asm, on_close) = (profile.atomic_slot_migration, profile.signal_on_close);
                ffi::set_module_options(raw, asm, on_close, false)?;
                ffi::log(raw, LogLevel::Notice, &line);
                Ok(())
            }
            Plan::Register(registrations) => register(raw, *registrations),
        }
    }

    /// Whether MODULE UNLOAD may go ahead: only where nothing was registered or nothing can hold
    /// a command of the module ([`UNHELD`]): every server can crash once one is gone, and no API
    /// says whether a client or ACL rule holds it (DESIGN.md, "Loading").
    fn may_unload(ctx: &Ctx<'_>) -> bool {
        if LOADED.get().is_none() || UNHELD.load(Ordering::Relaxed) {
            return true;
        }
        ctx.log_warning(
            "MODULE UNLOAD refused: the server can crash once this module's commands are gone \
             (a client with MSETEX queued in MULTI, a client that last ran it, an ACL rule naming \
             it); restart the server without the loadmodule line to remove the module",
        );
        false
    }
}

/// Nothing can hold a command of the module: from the end of its load to the next command (the
/// filter sees each; a `MODULE LOADEX` naming a configuration the module lacks unloads it, Redis 8
/// asserting that it can), and once the server shuts down (Valkey 9.1+ unloads every module then).
static UNHELD: AtomicBool = AtomicBool::new(false);

/// A call of the built-in MSETEX: `COMMAND GETKEYS` answers only `a` where the step is not read.
const KEYNUM_PROBE: [&[u8]; 6] = [b"MSETEX", b"2", b"a", b"v", b"b", b"v"];

fn register(raw: *mut ffi::RawCtx, plan: Registrations) -> Result<(), String> {
    let profile = &plan.module.profile;
    let (asm, on_close) = (profile.atomic_slot_migration, profile.signal_on_close);
    ffi::set_module_options(raw, asm, on_close, profile.replicate_without_lookup)?;
    ffi::register_info::<Entry>(raw)?;
    let mut warnings: Vec<String> = Vec::new();
    for command in &plan.commands {
        create(raw, command, profile.acl, &mut warnings)?;
    }
    let export_event = match profile.slot_export {
        SlotExport::Announced { event, .. } => Some(event),
        SlotExport::None => None,
    };
    let watching = ffi::watch::<Entry>(raw, export_event);
    if !watching && plan.module.keys.filters() {
        let why = "this server offers no command filter or server events to this module, and its \
                   filter must rewrite calls before the server reads their keys here";
        return Err(why.to_owned());
    }
    replication::set_watching(watching && profile.shortcut_allowed());
    let acl_note = profile.acl.load_note(&plan.module.name);
    let unwatched = (!watching)
        .then_some("server events or command filters unavailable: every key is always replicated");
    LOADED.set(plan.module);
    // The getkeys callback reads LOADED: asked only now.
    if let Some(module) = LOADED.get() {
        let getkeys = |call: &[&[u8]]| ffi::command_keys(raw, call);
        module.keys.check(&module.name, getkeys)?;
    }
    ffi::log(raw, LogLevel::Notice, &plan.registered);
    let notes = plan.notes.iter().chain(&acl_note).map(String::as_str);
    for note in notes.chain(unwatched) {
        ffi::log(raw, LogLevel::Notice, note);
    }
    for warning in warnings {
        ffi::log(raw, LogLevel::Warning, &warning);
    }
    UNHELD.store(watching, Ordering::Relaxed);
    Ok(())
}

/// Registers one command, with its docs and ACL categories (where it has docs); MSETEX itself
/// must be reached by ACL as `acl` says. What older servers cannot take is no warning.
fn create(
    raw: *mut ffi::RawCtx,
    command: &Registration,
    acl: AclCheck,
    warnings: &mut Vec<String>,
) -> Result<(), String> {
    let (name, flags, keys) = (&command.name, command.flags, command.legacy_keys);
    match command.role {
        Role::Msetex => ffi::create_command::<Msetex>(raw, name, flags, keys)?,
        Role::Apply => ffi::create_command::<Apply>(raw, name, flags, keys)?,
        Role::ChangesCounter => ffi::create_command::<Changes>(raw, name, flags, keys)?,
    }
    let Some(docs) = &command.docs else {
        return Ok(());
    };
    let info = ffi::set_command_info(raw, name, docs);
    let categories = ffi::set_acl_categories(raw, name, ACL_CATEGORIES);
    if command.role == Role::Msetex {
        acl.confirm(categories == Ok(true), ffi::acl_check_available())
            .map_err(|error| match &categories {
                Err(reason) => format!("{error}: {reason}"),
                Ok(_) => error,
            })?;
    }
    for (what, outcome) in [
        ("COMMAND DOCS information", info),
        ("ACL categories", categories),
    ] {
        let line = outcome.err().map(|reason| format!("{what}: {reason}"));
        if let Some(line) = line.filter(|line| !warnings.contains(line)) {
            warnings.push(line);
        }
    }
    Ok(())
}

struct Msetex;

impl ffi::Command for Msetex {
    fn run<'c>(ctx: &Ctx<'c>, args: &[Arg<'c>]) -> Reply {
        command::msetex(ctx, args)
    }

    /// The server's "where are the keys" call (`getkeys-api`).
    fn declare_keys(positions: &KeyPositions, args: &[LazyArg<'_>]) {
        if let Some(module) = LOADED.get() {
            module.keys.declare(positions, args);
        }
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

impl ffi::Hooks for Entry {
    fn filter_wants(name: &[u8]) -> bool {
        UNHELD.store(false, Ordering::Relaxed);
        if replication::is_replication_handshake(name) {
            replication::on_listener_may_appear();
            return false;
        }
        let wants = |module: &Loaded| module.keys.filter_wants(&module.name, name);
        LOADED.get().is_some_and(wants)
    }

    fn filter<A: AsRef<[u8]>>(args: &[A], token: u64) -> Rewrite {
        let rewrite = |module: &Loaded| module.keys.rewrite(&module.name, args, token);
        LOADED.get().map_or_else(Rewrite::default, rewrite)
    }

    fn on_replication_event() {
        replication::on_listener_may_appear();
    }

    fn on_event(event: u64, subevent: u64) {
        let Some(module) = LOADED.get() else { return };
        if let SlotExport::Announced {
            event: export,
            started,
            ended,
            ..
        } = module.profile.slot_export
        {
            if event == export && (subevent == started || ended.contains(&subevent)) {
                replication::on_slot_export(subevent == started);
            }
        }
    }

    fn on_cron() {
        replication::on_cron(|| {
            let fields = ffi::server_info_fields(c"replication", &replication::PROBED_FIELDS);
            ReplicationInfo::from_fields(&fields)
        });
    }

    fn on_shutdown() {
        UNHELD.store(true, Ordering::Relaxed);
    }
}

/// `msetex.syntax`, `msetex.replicate`, `msetex.command-name` (`config::CHOICES`).
impl ffi::Configs for Entry {
    fn get(index: usize) -> String {
        config::get(index)
    }

    fn set(index: usize, value: &str) -> Result<(), String> {
        config::set(index, value)
    }
}

/// `INFO msetex`.
impl ffi::InfoSection for Entry {
    fn fields(aof_on: bool) -> Vec<(&'static CStr, InfoValue)> {
        let numbers = stats::fields().map(|(name, value)| (name, InfoValue::Integer(value)));
        let mut fields = Vec::from(numbers);
        let held = u64::try_from(ffi::held_calls()).unwrap_or(u64::MAX);
        fields.push((c"held_calls", InfoValue::Integer(held)));
        let listeners = replication::listeners_label(aof_on);
        let mut text = |name, text| fields.push((name, InfoValue::Text(text)));
        text(c"replication_listeners", listeners);
        if let Some(module) = LOADED.get() {
            text(c"command_name", &module.c_name);
            text(c"syntax", module.syntax.label());
            text(c"replicate", module.replication.mode.label());
            text(c"acl", module.profile.acl.label());
            text(c"keys", module.keys.reading.label());
            text(c"keynum_step", module.keys.step.label());
        }
        fields
    }
}
