//! Load-time registrations: commands (docs, key specs, ACL categories), options, hooks, INFO.

use std::ffi::{CStr, CString};
use std::ptr::without_provenance_mut;

use libc::c_int;
use raw::RedisModuleCommandArg as CommandArg;
use raw::RedisModuleCommandKeySpec as RawKeySpec;
use raw::RedisModuleCommandKeySpec__bindgen_ty_1 as Bs;
use raw::RedisModuleCommandKeySpec__bindgen_ty_1__bindgen_ty_1 as BsIndex;
use raw::RedisModuleCommandKeySpec__bindgen_ty_1__bindgen_ty_2 as BsKeyword;
use raw::RedisModuleCommandKeySpec__bindgen_ty_2 as Fk;
use raw::RedisModuleCommandKeySpec__bindgen_ty_2__bindgen_ty_1 as FkRange;
use raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INDEX as BS_INDEX;
use raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_KEYWORD as BS_KEYWORD;
use raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_KEYNUM as FK_KEYNUM;
use raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_RANGE as FK_RANGE;
use redis_module::raw;

use super::api::{api, Api, RawCtx, API, OK};
use super::callbacks::{command_entry, command_filter, config_get, config_set, info_section};
use super::callbacks::{server_event, Command, Configs, Hooks, InfoSection};
use crate::docs::{self, ArgKind, Docs, KeySpec};

/// Module options: CloseKey's implicit "modified" signal off unless `signal_on_close`; declared
/// handled (safe, no data kept): `repl-diskless-load swapdb` and Valkey 9's atomic slot migration.
pub fn set_module_options(
    ctx: *mut RawCtx,
    atomic_slot_migration: bool,
    signal_on_close: bool,
    skip_command_validation: bool,
) -> Result<(), String> {
    let api = api()?;
    let mut options = raw::REDISMODULE_OPTIONS_HANDLE_REPL_ASYNC_LOAD as c_int;
    if !signal_on_close {
        options |= raw::REDISMODULE_OPTION_NO_IMPLICIT_SIGNAL_MODIFIED as c_int;
    }
    // SAFETY: no arguments; returns the option bits the server knows.
    let known = api.get_module_options_all.map_or(0, |all| unsafe { all() });
    // VALKEYMODULE_OPTIONS_HANDLE_ATOMIC_SLOT_MIGRATION, if the server knows it.
    const ATOMIC_SLOT_MIGRATION: c_int = 1 << 5;
    if atomic_slot_migration && known & ATOMIC_SLOT_MIGRATION != 0 {
        options |= ATOMIC_SLOT_MIGRATION;
    }
    // VALKEYMODULE_OPTIONS_SKIP_COMMAND_VALIDATION, if the server knows it (checked at load).
    const SKIP_COMMAND_VALIDATION: c_int = 1 << 4;
    if skip_command_validation && known & SKIP_COMMAND_VALIDATION != 0 {
        options |= SKIP_COMMAND_VALIDATION;
    }
    // SAFETY: ctx is the load context.
    unsafe { (api.set_module_options)(ctx, options) };
    Ok(())
}

pub fn create_command<C: Command>(
    ctx: *mut RawCtx,
    name: &CStr,
    flags: &CStr,
    (first, last, step): (i32, i32, i32),
) -> Result<(), String> {
    let api = api()?;
    let entry: raw::RedisModuleCmdFunc = Some(command_entry::<C>);
    // SAFETY: ctx is the load context; the server copies name and flags; entry is a CmdFunc.
    let status = unsafe {
        (api.create_command)(ctx, name.as_ptr(), entry, flags.as_ptr(), first, last, step)
    };
    checked(status, (), || {
        let name = name.to_string_lossy();
        format!("RedisModule_CreateCommand refused '{name}' (name taken or invalid flags)")
    })
}

fn checked<T>(status: c_int, done: T, why: impl FnOnce() -> String) -> Result<T, String> {
    (status == OK).then_some(done).ok_or_else(why)
}

/// Registers `configs` (name, default) as string configurations `msetex.<name>` through `C` by
/// index, then loads them; nothing where the server has none (Redis 6.2).
pub fn register_configs<C: Configs>(
    ctx: *mut RawCtx,
    configs: &[(CString, CString)],
) -> Result<(), String> {
    let api = api()?;
    let (Some(register), Some(load)) = (api.register_string_config, api.load_configs) else {
        return Ok(());
    };
    let (get, set) = (Some(config_get::<C> as _), Some(config_set::<C> as _));
    for (index, (name, value)) in configs.iter().enumerate() {
        let (name, value, index) = (name.as_ptr(), value.as_ptr(), without_provenance_mut(index));
        // SAFETY: ctx is the load context; the server copies name and value (the default); the
        // callbacks are static, and their private data the index, never dereferenced.
        let status = unsafe { register(ctx, name, value, 0, get, set, None, index) };
        checked(status, (), || {
            "RedisModule_RegisterStringConfig failed".into()
        })?;
    }
    // SAFETY: ctx is the load context, every configuration registered.
    let status = unsafe { load(ctx) };
    let why = "the server could not set the module's configurations (its line above says why)";
    checked(status, (), || why.into())
}

/// Subscribes `H` to role changes, loading, cron, shutdown and `event` (if any), `held` to
/// clients' disconnection, and makes `H` the command filter; false if the server cannot deliver one of them.
pub fn watch<H: Hooks>(ctx: *mut RawCtx, event: Option<u64>) -> bool {
    API.get().is_some_and(|api| {
        let events = [
            raw::REDISMODULE_EVENT_REPLICATION_ROLE_CHANGED,
            raw::REDISMODULE_EVENT_LOADING,
            raw::REDISMODULE_EVENT_CRON_LOOP,
            raw::REDISMODULE_EVENT_SHUTDOWN,
            raw::REDISMODULE_EVENT_CLIENT_CHANGE,
        ]
        .into_iter()
        .chain(event)
        .all(|id| {
            let event = raw::RedisModuleEvent { id, dataver: 1 };
            // SAFETY: ctx is the load context; server_event is a static RedisModuleEventCallback.
            unsafe { (api.subscribe_to_server_event)(ctx, event, Some(server_event::<H>)) == OK }
        });
        let noself = raw::REDISMODULE_CMDFILTER_NOSELF as c_int;
        // SAFETY: ctx is the load context; command_filter is a static RedisModuleCommandFilterFunc.
        let filter =
            unsafe { (api.register_command_filter)(ctx, Some(command_filter::<H>), noself) };
        events && !filter.is_null()
    })
}

/// Registers `I` as the INFO section, replacing the redis-module crate's default (empty here).
pub fn register_info<I: InfoSection>(ctx: *mut RawCtx) -> Result<(), String> {
    let api = api()?;
    // SAFETY: ctx is the load context; info_section matches RedisModuleInfoFunc.
    let status = unsafe { (api.register_info_func)(ctx, Some(info_section::<I>)) };
    checked(status, (), || "RedisModule_RegisterInfoFunc failed".into())
}

pub fn key_specs_available() -> bool {
    API.get()
        .is_some_and(|api| api.set_command_info.is_some() && api.get_command.is_some())
}

/// Attaches COMMAND DOCS / INFO data to `name`; `Ok(false)` where the module API cannot.
pub fn set_command_info(ctx: *mut RawCtx, name: &CStr, docs: &Docs) -> Result<bool, String> {
    let api = api()?;
    let Some((command, set_info)) = command(ctx, name, api, api.set_command_info)? else {
        return Ok(false);
    };
    // The arrays the server reads live in `arena` until the call returns; it copies what it keeps.
    let mut arena: Vec<Vec<CommandArg>> = Vec::new();
    let args = command_args(docs.args, &mut arena);
    let written = raw::REDISMODULE_CMD_KEY_OW | raw::REDISMODULE_CMD_KEY_UPDATE;
    let mut key_specs = [
        key_spec(docs.keys.spec, docs.keys.notes, written),
        KEY_SPEC_END,
        KEY_SPEC_END,
    ];
    if docs.keys.ask_getkeys {
        // Not a key, and incomplete: the command is `movablekeys`, and clients ask COMMAND GETKEYS
        // (DESIGN.md, "What clients see"); a keynum spec leaves the legacy positions be.
        let spec = KeySpec::Keynum {
            index: 1,
            step: 1,
            incomplete: true,
        };
        let not_key = raw::REDISMODULE_CMD_KEY_RO | raw::REDISMODULE_CMD_KEY_NOT_KEY;
        let notes = c"Not a key: the first key specification describes the call after the \
                      module's command filter; ask COMMAND GETKEYS about a call as sent.";
        key_specs[1] = key_spec(spec, Some(notes), not_key);
    }
    let version = raw::RedisModuleCommandInfoVersion {
        version: 1,
        sizeof_historyentry: std::mem::size_of::<raw::RedisModuleCommandHistoryEntry>(),
        sizeof_keyspec: std::mem::size_of::<RawKeySpec>(),
        sizeof_arg: std::mem::size_of::<CommandArg>(),
    };
    let command_info = raw::RedisModuleCommandInfo {
        version: &version,
        summary: docs.summary.as_ptr(),
        complexity: docs.complexity.as_ptr(),
        since: docs.since.as_ptr(),
        history: std::ptr::null_mut(),
        tips: docs.tips.map_or(std::ptr::null(), CStr::as_ptr),
        arity: docs.arity,
        key_specs: key_specs.as_mut_ptr(),
        args,
    };
    // SAFETY: command is live; command_info and all it points to outlive this call.
    let status = unsafe { set_info(command, &command_info) };
    checked(status, true, || {
        "RedisModule_SetCommandInfo rejected the command info (see the log above)".to_owned()
    })
}

/// The command `name` and the Redis 7.0+ setter `set`; `None` if the server lacks either.
fn command<F>(
    ctx: *mut RawCtx,
    name: &CStr,
    api: &Api,
    set: Option<F>,
) -> Result<Option<(*mut raw::RedisModuleCommand, F)>, String> {
    let (Some(get_command), Some(set)) = (api.get_command, set) else {
        return Ok(None);
    };
    // SAFETY: ctx is the load context and name a registered command.
    let command = unsafe { get_command(ctx, name.as_ptr()) };
    if command.is_null() {
        return Err("RedisModule_GetCommand found no such command".to_owned());
    }
    Ok(Some((command, set)))
}

/// The terminator of an argument array (all zero), and every argument's unset fields.
// SAFETY: every field is a pointer (NULL) or an integer.
const ARG_END: CommandArg = unsafe { std::mem::zeroed() };

/// The NULL-terminated C array of `args` (recursively), built in `arena`.
fn command_args(args: &[docs::Arg], arena: &mut Vec<Vec<CommandArg>>) -> *mut CommandArg {
    let mut level: Vec<CommandArg> = args
        .iter()
        .map(|arg| {
            let subargs = match arg.subargs {
                [] => std::ptr::null_mut(),
                subargs => command_args(subargs, arena),
            };
            let flag = |on: bool, flag: u32| if on { flag as c_int } else { 0 };
            CommandArg {
                name: arg.name.as_ptr(),
                type_: arg_type(arg.kind),
                // The only key argument refers to key spec 0.
                key_spec_index: if arg.kind == ArgKind::Key { 0 } else { -1 },
                token: arg.token.map_or(std::ptr::null(), CStr::as_ptr),
                flags: flag(arg.optional, raw::REDISMODULE_CMD_ARG_OPTIONAL)
                    | flag(arg.multiple, raw::REDISMODULE_CMD_ARG_MULTIPLE),
                subargs,
                ..ARG_END
            }
        })
        .collect();
    level.push(ARG_END);
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

fn key_spec(spec: KeySpec, notes: Option<&'static CStr>, mut flags: u32) -> RawKeySpec {
    let range = |lastkey, keystep| Fk {
        range: FkRange {
            lastkey,
            keystep,
            limit: 0,
        },
    };
    let index = |pos| {
        let index = BsIndex { pos };
        (BS_INDEX, Bs { index })
    };
    let (begin, incomplete, find_keys_type, fk) = match spec {
        KeySpec::Range {
            first,
            last,
            step,
            incomplete,
        } => (index(first), incomplete, FK_RANGE, range(last, step)),
        KeySpec::Keynum {
            index: at,
            step,
            incomplete,
        } => {
            let keynum = raw::RedisModuleCommandKeySpec__bindgen_ty_2__bindgen_ty_2 {
                keynumidx: 0,
                firstkey: 1,
                keystep: step,
            };
            (index(at), incomplete, FK_KEYNUM, Fk { keynum })
        }
        KeySpec::AfterKeyword {
            keyword,
            last,
            step,
        } => {
            let keyword = BsKeyword {
                keyword: keyword.as_ptr(),
                startfrom: 1,
            };
            let begin = (BS_KEYWORD, Bs { keyword });
            (begin, false, FK_RANGE, range(last, step))
        }
    };
    if incomplete {
        flags |= raw::REDISMODULE_CMD_KEY_INCOMPLETE;
    }
    let (begin_search_type, bs) = begin;
    RawKeySpec {
        notes: notes.map_or(std::ptr::null(), CStr::as_ptr),
        flags: u64::from(flags),
        begin_search_type,
        bs,
        find_keys_type,
        fk,
    }
}

/// The terminator of a key spec array: all zero (`KSPEC_BS_INVALID`, `KSPEC_FK_OMITTED`).
// SAFETY: every field is a pointer (NULL), an integer or a union of integers.
const KEY_SPEC_END: RawKeySpec = unsafe { std::mem::zeroed() };

/// Puts the command in ACL categories (Redis 7.2+); `Ok(false)` where the module API cannot.
pub fn set_acl_categories(
    ctx: *mut RawCtx,
    name: &CStr,
    categories: &CStr,
) -> Result<bool, String> {
    let api = api()?;
    let Some((command, set)) = command(ctx, name, api, api.set_command_acl_categories)? else {
        return Ok(false);
    };
    // SAFETY: command is live; categories is NUL-terminated and parsed at once.
    let status = unsafe { set(command, categories.as_ptr()) };
    checked(status, true, || {
        let categories = categories.to_string_lossy();
        format!("RedisModule_SetCommandACLCategories refused '{categories}'")
    })
}
