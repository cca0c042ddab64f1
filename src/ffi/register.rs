//! Load-time registrations: commands with their docs, key specs and ACL categories, module
//! options, the command filter and server events, the INFO section.

use std::ffi::CStr;

use libc::c_int;
use redis_module::raw::{self, RedisModuleCtx};

use super::api::{Api, API, OK};
use super::callbacks::{command_entry, command_filter, info_section, server_event};
use super::callbacks::{Command, Hooks, InfoSection};
use crate::docs::{self, ArgKind, Docs, KeySpec};

fn api() -> Result<&'static Api, String> {
    API.get()
        .ok_or_else(|| "module API not initialised".to_owned())
}

/// Module options: CloseKey's implicit "modified" signal off unless `signal_on_close` (MSETEX
/// signals what it writes; an NX/XX check writing nothing must not fail others' WATCH; with it,
/// keys only looked at open read-only); and, declared as handled, asynchronous replica loading
/// (`repl-diskless-load swapdb`) and, on Valkey 9, atomic slot migration: safe, no data kept.
pub fn set_module_options(
    ctx: *mut RedisModuleCtx,
    atomic_slot_migration: bool,
    signal_on_close: bool,
) -> Result<(), String> {
    let api = api()?;
    let mut options = raw::REDISMODULE_OPTIONS_HANDLE_REPL_ASYNC_LOAD as c_int;
    if !signal_on_close {
        options |= raw::REDISMODULE_OPTION_NO_IMPLICIT_SIGNAL_MODIFIED as c_int;
    }
    if atomic_slot_migration {
        // VALKEYMODULE_OPTIONS_HANDLE_ATOMIC_SLOT_MIGRATION, if the server knows that option.
        const ATOMIC_SLOT_MIGRATION: c_int = 1 << 5;
        // SAFETY: no arguments; returns the option bits the server knows.
        let known = api.get_module_options_all.map_or(0, |all| unsafe { all() });
        if known & ATOMIC_SLOT_MIGRATION != 0 {
            options |= ATOMIC_SLOT_MIGRATION;
        }
    }
    // SAFETY: ctx is the load context.
    unsafe { (api.set_module_options)(ctx, options) };
    Ok(())
}

/// Registers `name`, run by `C`, with the given flags and legacy key positions.
pub fn create_command<C: Command>(
    ctx: *mut RedisModuleCtx,
    name: &CStr,
    flags: &CStr,
    keys: (i32, i32, i32),
) -> Result<(), String> {
    register(ctx, name, flags, keys, Some(command_entry::<C>))
}

fn register(
    ctx: *mut RedisModuleCtx,
    name: &CStr,
    flags: &CStr,
    (first_key, last_key, key_step): (i32, i32, i32),
    entry: raw::RedisModuleCmdFunc,
) -> Result<(), String> {
    let api = api()?;
    // SAFETY: ctx is the load context; the server copies name and flags; entry is a CmdFunc.
    let status = unsafe {
        (api.create_command)(
            ctx,
            name.as_ptr(),
            entry,
            flags.as_ptr(),
            first_key,
            last_key,
            key_step,
        )
    };
    if status == OK {
        Ok(())
    } else {
        Err(format!(
            "RedisModule_CreateCommand refused '{}' (name taken or invalid flags)",
            name.to_string_lossy()
        ))
    }
}

/// Subscribes `H` to server events (role change, loading, cron) and makes it the command filter
/// (every command but the module's own calls); false if the server cannot deliver one of them.
pub fn watch<H: Hooks>(ctx: *mut RedisModuleCtx) -> bool {
    let Some(api) = API.get() else {
        return false;
    };
    let events = [
        raw::REDISMODULE_EVENT_REPLICATION_ROLE_CHANGED,
        raw::REDISMODULE_EVENT_LOADING,
        raw::REDISMODULE_EVENT_CRON_LOOP,
    ]
    .into_iter()
    .all(|id| {
        let event = raw::RedisModuleEvent { id, dataver: 1 };
        // SAFETY: ctx is the load context; server_event is a static RedisModuleEventCallback.
        unsafe { (api.subscribe_to_server_event)(ctx, event, Some(server_event::<H>)) == OK }
    });
    // SAFETY: ctx is the load context; command_filter is a static RedisModuleCommandFilterFunc.
    let filter = unsafe {
        (api.register_command_filter)(
            ctx,
            Some(command_filter::<H>),
            raw::REDISMODULE_CMDFILTER_NOSELF as c_int,
        )
    };
    events && !filter.is_null()
}

/// Registers `I` as the INFO section, replacing the redis-module crate's default (empty here).
pub fn register_info<I: InfoSection>(ctx: *mut RedisModuleCtx) -> Result<(), String> {
    let api = api()?;
    // SAFETY: ctx is the load context; info_section matches RedisModuleInfoFunc.
    let status = unsafe { (api.register_info_func)(ctx, Some(info_section::<I>)) };
    if status == OK {
        Ok(())
    } else {
        Err("RedisModule_RegisterInfoFunc failed".to_owned())
    }
}

/// What happened to an optional registration: `Unsupported` when the API function is missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Optional {
    Done,
    Unsupported,
}

/// Attaches COMMAND DOCS / INFO data (summary, complexity, since, arity, key spec, args) to `name`.
pub fn set_command_info(
    ctx: *mut RedisModuleCtx,
    name: &CStr,
    docs: &Docs,
) -> Result<Optional, String> {
    let api = api()?;
    let (Some(get_command), Some(set_info)) = (api.get_command, api.set_command_info) else {
        return Ok(Optional::Unsupported);
    };
    // SAFETY: ctx is the load context and name a registered command.
    let command = unsafe { get_command(ctx, name.as_ptr()) };
    if command.is_null() {
        return Err("RedisModule_GetCommand found no such command".to_owned());
    }
    // The arrays the server reads live in `arena` until the call returns; it copies what it keeps.
    let mut arena: Vec<Vec<raw::RedisModuleCommandArg>> = Vec::new();
    let args = command_args(docs.args, &mut arena);
    let mut key_specs = [key_spec(docs.keys.spec, docs.keys.notes), key_spec_end()];
    let version = raw::RedisModuleCommandInfoVersion {
        version: 1,
        sizeof_historyentry: std::mem::size_of::<raw::RedisModuleCommandHistoryEntry>(),
        sizeof_keyspec: std::mem::size_of::<raw::RedisModuleCommandKeySpec>(),
        sizeof_arg: std::mem::size_of::<raw::RedisModuleCommandArg>(),
    };
    let command_info = raw::RedisModuleCommandInfo {
        version: &version,
        summary: docs.summary.as_ptr(),
        complexity: docs.complexity.as_ptr(),
        since: docs.since.as_ptr(),
        history: std::ptr::null_mut(),
        tips: std::ptr::null(),
        arity: docs.arity,
        key_specs: key_specs.as_mut_ptr(),
        args,
    };
    // SAFETY: command is live; command_info and all it points to outlive this call.
    let status = unsafe { set_info(command, &command_info) };
    if status == OK {
        Ok(Optional::Done)
    } else {
        Err("RedisModule_SetCommandInfo rejected the command info (see the log above)".to_owned())
    }
}

/// Builds the NULL-terminated C array of `args` (recursively) in `arena`; returns a pointer to it.
fn command_args(
    args: &[docs::Arg],
    arena: &mut Vec<Vec<raw::RedisModuleCommandArg>>,
) -> *mut raw::RedisModuleCommandArg {
    let mut level: Vec<raw::RedisModuleCommandArg> = args
        .iter()
        .map(|arg| {
            let subargs = if arg.subargs.is_empty() {
                std::ptr::null_mut()
            } else {
                command_args(arg.subargs, arena)
            };
            let mut flags = 0;
            if arg.optional {
                flags |= raw::REDISMODULE_CMD_ARG_OPTIONAL as c_int;
            }
            if arg.multiple {
                flags |= raw::REDISMODULE_CMD_ARG_MULTIPLE as c_int;
            }
            raw::RedisModuleCommandArg {
                name: arg.name.as_ptr(),
                type_: arg_type(arg.kind),
                // The only key argument refers to key spec 0.
                key_spec_index: if arg.kind == ArgKind::Key { 0 } else { -1 },
                token: arg.token.map_or(std::ptr::null(), CStr::as_ptr),
                summary: std::ptr::null(),
                since: std::ptr::null(),
                flags,
                deprecated_since: std::ptr::null(),
                subargs,
                display_text: std::ptr::null(),
            }
        })
        .collect();
    level.push(raw::RedisModuleCommandArg {
        name: std::ptr::null(),
        type_: 0,
        key_spec_index: 0,
        token: std::ptr::null(),
        summary: std::ptr::null(),
        since: std::ptr::null(),
        flags: 0,
        deprecated_since: std::ptr::null(),
        subargs: std::ptr::null_mut(),
        display_text: std::ptr::null(),
    });
    let ptr = level.as_mut_ptr();
    arena.push(level); // moving the Vec does not move its buffer
    ptr
}

fn arg_type(kind: ArgKind) -> raw::RedisModuleCommandArgType {
    match kind {
        ArgKind::String => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_STRING,
        ArgKind::Integer => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_INTEGER,
        ArgKind::UnixTime => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_UNIX_TIME,
        ArgKind::Key => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_KEY,
        ArgKind::PureToken => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_PURE_TOKEN,
        ArgKind::OneOf => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_ONEOF,
        ArgKind::Block => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_BLOCK,
    }
}

fn key_spec(spec: KeySpec, notes: Option<&'static CStr>) -> raw::RedisModuleCommandKeySpec {
    let (begin, incomplete) = match spec {
        KeySpec::Range {
            first, incomplete, ..
        } => (first, incomplete),
        KeySpec::Keynum {
            index, incomplete, ..
        } => (index, incomplete),
    };
    let mut flags = raw::REDISMODULE_CMD_KEY_OW | raw::REDISMODULE_CMD_KEY_UPDATE;
    if incomplete {
        flags |= raw::REDISMODULE_CMD_KEY_INCOMPLETE;
    }
    let notes = notes.map_or(std::ptr::null(), CStr::as_ptr);
    let (find_keys_type, fk) = match spec {
        KeySpec::Range { last, step, .. } => (
            raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_RANGE,
            raw::RedisModuleCommandKeySpec__bindgen_ty_2 {
                range: raw::RedisModuleCommandKeySpec__bindgen_ty_2__bindgen_ty_1 {
                    lastkey: last,
                    keystep: step,
                    limit: 0,
                },
            },
        ),
        KeySpec::Keynum { step, .. } => (
            raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_KEYNUM,
            raw::RedisModuleCommandKeySpec__bindgen_ty_2 {
                keynum: raw::RedisModuleCommandKeySpec__bindgen_ty_2__bindgen_ty_2 {
                    keynumidx: 0,
                    firstkey: 1,
                    keystep: step,
                },
            },
        ),
    };
    raw::RedisModuleCommandKeySpec {
        notes,
        flags: u64::from(flags),
        begin_search_type: raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INDEX,
        bs: raw::RedisModuleCommandKeySpec__bindgen_ty_1 {
            index: raw::RedisModuleCommandKeySpec__bindgen_ty_1__bindgen_ty_1 { pos: begin },
        },
        find_keys_type,
        fk,
    }
}

/// The terminator of a key spec array (begin_search_type 0, "invalid").
fn key_spec_end() -> raw::RedisModuleCommandKeySpec {
    raw::RedisModuleCommandKeySpec {
        notes: std::ptr::null(),
        flags: 0,
        begin_search_type: raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INVALID,
        bs: raw::RedisModuleCommandKeySpec__bindgen_ty_1 {
            index: raw::RedisModuleCommandKeySpec__bindgen_ty_1__bindgen_ty_1 { pos: 0 },
        },
        find_keys_type: raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_OMITTED,
        fk: raw::RedisModuleCommandKeySpec__bindgen_ty_2 {
            range: raw::RedisModuleCommandKeySpec__bindgen_ty_2__bindgen_ty_1 {
                lastkey: 0,
                keystep: 0,
                limit: 0,
            },
        },
    }
}

/// Puts the command in ACL categories (Redis 7.2+).
pub fn set_acl_categories(
    ctx: *mut RedisModuleCtx,
    name: &CStr,
    categories: &CStr,
) -> Result<Optional, String> {
    let api = api()?;
    let (Some(get_command), Some(set_categories)) =
        (api.get_command, api.set_command_acl_categories)
    else {
        return Ok(Optional::Unsupported);
    };
    // SAFETY: ctx is the load context and name a registered command.
    let command = unsafe { get_command(ctx, name.as_ptr()) };
    if command.is_null() {
        return Err("RedisModule_GetCommand found no such command".to_owned());
    }
    // SAFETY: command is live; categories is NUL-terminated and parsed at once.
    if unsafe { set_categories(command, categories.as_ptr()) } == OK {
        Ok(Optional::Done)
    } else {
        Err(format!(
            "RedisModule_SetCommandACLCategories refused '{}'",
            categories.to_string_lossy()
        ))
    }
}
