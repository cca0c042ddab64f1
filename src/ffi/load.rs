//! Load-time registrations: the command, its documentation and key specs,
//! the changes counter, the INFO section, server events, the command
//! filter, and reading INFO fields and configs.

use std::ffi::{CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use libc::{c_int, c_longlong};
use redis_module::raw::{self, RedisModuleCtx};

use super::call::{
    apply_entry, changes_entry, config_get, msetex_entry, reply_text, unroutable_entry, Ctx,
};
use super::{Api, API, OK};
use crate::command_info::{self as info, ArgKind, Docs, KeySpec};

fn api() -> Result<&'static Api, String> {
    API.get()
        .ok_or_else(|| "module API not initialised".to_owned())
}

/// Module options: the implicit "modified" signal of RedisModule_CloseKey
/// off (MSETEX signals the keys it writes itself, and a NX/XX check that
/// writes nothing must not fail other clients' WATCH) unless keys are
/// signalled by closing them (`signal_on_close`: then keys only looked at
/// are opened for reading), and the events the
/// server asks modules to declare they handle: asynchronous replica loading
/// (`repl-diskless-load swapdb`) and, on Valkey 9, atomic slot migration.
/// MSETEX keeps no data of its own, so both are safe.
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
        // VALKEYMODULE_OPTIONS_HANDLE_ATOMIC_SLOT_MIGRATION, when the server
        // says it knows that option.
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

/// Which handler a registered command runs.
#[derive(Debug, Clone, Copy)]
pub enum Handler {
    Msetex,
    /// `<name>.apply`, the replicated form of REPLICATE MSETEX.
    Apply,
    /// `<name>.unroutable`, which refuses TTL-form options where they
    /// cannot be routed.
    Unroutable,
    /// The changes counter of REPLICATE MSETEX.
    Changes,
}

/// Registers `name` with the given flags and legacy key positions.
pub fn create_command(
    ctx: *mut RedisModuleCtx,
    name: &CStr,
    flags: &CStr,
    (first_key, last_key, key_step): (i32, i32, i32),
    handler: Handler,
) -> Result<(), String> {
    let api = api()?;
    let entry: raw::RedisModuleCmdFunc = match handler {
        Handler::Msetex => Some(msetex_entry),
        Handler::Apply => Some(apply_entry),
        Handler::Unroutable => Some(unroutable_entry),
        Handler::Changes => Some(changes_entry),
    };
    // SAFETY: ctx is the load context; name and flags are NUL-terminated and
    // copied by the server; the entries have the RedisModuleCmdFunc signature.
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

/// Subscribes to the server events that announce a new replication
/// listener (a role change, a load) and to the cron tick that probes it,
/// and filters every command for SYNC/PSYNC. Returns false if the server
/// cannot deliver one of them.
pub fn watch_replication(ctx: *mut RedisModuleCtx) -> bool {
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
        // SAFETY: ctx is the load context; server_event matches
        // RedisModuleEventCallback and lives as long as the module.
        unsafe { (api.subscribe_to_server_event)(ctx, event, Some(server_event)) == OK }
    });
    // SAFETY: ctx is the load context; command_filter matches
    // RedisModuleCommandFilterFunc and lives as long as the module.
    let filter = unsafe {
        (api.register_command_filter)(
            ctx,
            Some(command_filter),
            raw::REDISMODULE_CMDFILTER_NOSELF as c_int,
        )
    };
    events && !filter.is_null()
}

unsafe extern "C" fn server_event(
    ctx: *mut RedisModuleCtx,
    event: raw::RedisModuleEvent,
    _subevent: u64,
    _data: *mut std::ffi::c_void,
) {
    // A panic must not cross into the server; the state just stays unknown.
    let _ = catch_unwind(AssertUnwindSafe(|| {
        if event.id == raw::REDISMODULE_EVENT_CRON_LOOP {
            crate::propagation::on_cron(|| {
                let fields = server_info_fields(c"replication", &crate::propagation::PROBED_FIELDS);
                crate::propagation::ReplicationInfo::from_fields(&fields)
            });
            if let Some(ctx) = Ctx::of(ctx) {
                crate::command::on_cron(&ctx);
            }
        } else {
            crate::propagation::on_listener_may_appear();
        }
    }));
}

/// MODULE UNLOAD asks first: false refuses it (see `command::on_unload`).
pub fn may_unload(ctx: *mut RedisModuleCtx) -> bool {
    let Some(ctx) = Ctx::of(ctx) else {
        return true;
    };
    catch_unwind(AssertUnwindSafe(|| crate::command::on_unload(&ctx))).unwrap_or(false)
}

/// Runs before every command any client sends (and the replication stream):
/// a SYNC or PSYNC is about to make a replica (and a replication backlog);
/// an MSETEX call may need its options packed (see `command::packed`).
unsafe extern "C" fn command_filter(filter: *mut raw::RedisModuleCommandFilterCtx) {
    let Some(api) = API.get() else {
        return;
    };
    // A panic must not cross into the server; the command then runs as sent.
    let _ = catch_unwind(|| {
        // SAFETY: filter is the live filter context of this command.
        let count = unsafe { (api.command_filter_args_count)(filter) };
        // SAFETY: as above; position 0 exists when count >= 1.
        let Some(name) = (count >= 1)
            .then(|| unsafe { filter_arg(api, filter, 0) })
            .flatten()
        else {
            return;
        };
        match crate::command::seen(name) {
            crate::command::Seen::Other => {}
            crate::command::Seen::ReplicationHandshake => {
                crate::propagation::on_listener_may_appear()
            }
            crate::command::Seen::Rewrite => {
                // SAFETY: every position below count exists.
                let args: Vec<&[u8]> = (0..count)
                    .filter_map(|i| unsafe { filter_arg(api, filter, i) })
                    .collect();
                if args.len() != usize::try_from(count).unwrap_or(0) {
                    return;
                }
                if let Some(change) = crate::command::rewrite(&args) {
                    // SAFETY: filter is live; the positions exist (counted above).
                    unsafe { replace_args(api, filter, change.at, change.replaced, &change.with) };
                }
            }
        }
    });
}

/// The bytes of argument `pos` of the filtered command.
///
/// # Safety
///
/// `filter` is the live filter context and `pos` one of its positions; the
/// bytes are valid until the filter changes that argument.
unsafe fn filter_arg<'a>(
    api: &Api,
    filter: *mut raw::RedisModuleCommandFilterCtx,
    pos: c_int,
) -> Option<&'a [u8]> {
    // SAFETY: the caller's contract; the string is owned by the command.
    let arg = unsafe { (api.command_filter_arg_get)(filter, pos) };
    if arg.is_null() {
        return None;
    }
    let mut len = 0usize;
    // SAFETY: arg is a live module string; the pointer is valid while it is.
    let ptr = unsafe { (api.string_ptr_len)(arg, &mut len) };
    if ptr.is_null() {
        return Some(&[]);
    }
    // SAFETY: ptr points at len readable bytes.
    Some(unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) })
}

/// Replaces the `count` arguments from position `at` on with `with`. If the
/// server refuses a step (it cannot: the positions exist), the command
/// becomes an unknown one, refused with nothing done, rather than run with
/// some of its arguments changed.
///
/// # Safety
///
/// `filter` is the live filter context of a command with at least
/// `at + count` arguments.
unsafe fn replace_args(
    api: &Api,
    filter: *mut raw::RedisModuleCommandFilterCtx,
    at: usize,
    count: usize,
    with: &[Vec<u8>],
) {
    let new_string = |bytes: &[u8]| {
        // SAFETY: a NULL ctx makes the string the filter's to hand over.
        unsafe { (api.create_string)(std::ptr::null_mut(), bytes.as_ptr().cast(), bytes.len()) }
    };
    let step = |index: usize, arg: Option<&Vec<u8>>, replace: bool| -> bool {
        let Ok(pos) = c_int::try_from(at + index) else {
            return false;
        };
        let Some(arg) = arg else {
            // SAFETY: the position exists (the caller's contract).
            return unsafe { (api.command_filter_arg_delete)(filter, pos) } == OK;
        };
        let string = new_string(arg);
        if string.is_null() {
            return false;
        }
        // SAFETY: the position exists; on success the command owns string.
        let status = unsafe {
            if replace {
                (api.command_filter_arg_replace)(filter, pos, string)
            } else {
                (api.command_filter_arg_insert)(filter, pos, string)
            }
        };
        if status != OK {
            // SAFETY: not handed over, so still ours; freed once.
            unsafe { (api.free_string)(std::ptr::null_mut(), string) };
        }
        status == OK
    };
    let kept = count.min(with.len());
    let done = (0..kept).all(|i| step(i, with.get(i), true))
        && (kept..with.len()).all(|i| step(i, with.get(i), false))
        && (with.len()..count).all(|_| step(with.len(), None, true));
    if !done && at + kept > 0 {
        let refused = new_string(b"msetex: the command could not be rewritten");
        // SAFETY: position 0 exists; on success the command owns the string.
        if !refused.is_null()
            && unsafe { (api.command_filter_arg_replace)(filter, 0, refused) } != OK
        {
            // SAFETY: not handed over; freed once.
            unsafe { (api.free_string)(std::ptr::null_mut(), refused) };
        }
    }
}

/// Registers the `INFO msetex` section (replacing the redis-module crate's
/// default handler, which has nothing to report for this module).
pub fn register_info(ctx: *mut RedisModuleCtx) -> Result<(), String> {
    let api = api()?;
    // SAFETY: ctx is the load context; info_section matches RedisModuleInfoFunc.
    let status = unsafe { (api.register_info_func)(ctx, Some(info_section)) };
    if status == OK {
        Ok(())
    } else {
        Err("RedisModule_RegisterInfoFunc failed".to_owned())
    }
}

unsafe extern "C" fn info_section(ctx: *mut raw::RedisModuleInfoCtx, _for_crash_report: c_int) {
    let Some(api) = API.get() else {
        return;
    };
    let _ = catch_unwind(|| {
        // SAFETY: ctx is the INFO context the server passed in; a NULL name
        // makes the section the module's own ("msetex").
        unsafe { (api.info_add_section)(ctx, std::ptr::null()) };
        for (name, value) in crate::stats::fields() {
            let value = c_longlong::try_from(value).unwrap_or(c_longlong::MAX);
            // SAFETY: as above; name is NUL-terminated and copied.
            unsafe { (api.info_add_field_long_long)(ctx, name.as_ptr(), value) };
        }
        // SAFETY: a NULL context reads only server-wide flags.
        let flags = unsafe { (api.get_context_flags)(std::ptr::null_mut()) };
        let aof = flags & raw::REDISMODULE_CTX_FLAGS_AOF as c_int != 0;
        let mut labels = vec![(
            c"replication_listeners",
            crate::propagation::listeners_label(aof),
        )];
        if let Some(module) = crate::config::get() {
            labels.push((c"syntax", module.syntax_label()));
            labels.push((c"replicate", module.replicate_label()));
            labels.push((c"acl", module.acl_label()));
        }
        for (name, value) in labels {
            // SAFETY: as above; both strings are NUL-terminated and copied.
            unsafe { (api.info_add_field_c_string)(ctx, name.as_ptr(), value.as_ptr()) };
        }
    });
}

/// Reads `fields` of the INFO section `section`; missing fields are absent
/// from the result.
pub fn server_info_fields(section: &CStr, fields: &[&'static str]) -> Vec<(&'static str, String)> {
    let Some(api) = API.get() else {
        return Vec::new();
    };
    // SAFETY: a NULL ctx makes the data ours to free; section is NUL-terminated.
    let data = unsafe { (api.get_server_info)(std::ptr::null_mut(), section.as_ptr()) };
    if data.is_null() {
        return Vec::new();
    }
    let found = fields
        .iter()
        .filter_map(|field| {
            let name = CString::new(*field).ok()?;
            // SAFETY: data is live until freed below; the returned C string
            // is owned by data and copied before that.
            let value = unsafe { (api.server_info_get_field_c)(data, name.as_ptr()) };
            // SAFETY: non-null, NUL-terminated, owned by data (still live).
            (!value.is_null()).then(|| {
                (
                    *field,
                    unsafe { CStr::from_ptr(value) }
                        .to_string_lossy()
                        .into_owned(),
                )
            })
        })
        .collect();
    // SAFETY: data came from GetServerInfo with a NULL ctx and is freed once.
    unsafe { (api.free_server_info)(std::ptr::null_mut(), data) };
    found
}

/// `CONFIG GET name` at load time.
pub fn load_config(ctx: *mut RedisModuleCtx, name: &CStr) -> Option<String> {
    let api = API.get()?;
    config_get(ctx, api, name)
}

/// True when the context flags say the server runs in cluster mode.
pub fn cluster_enabled(ctx: *mut RedisModuleCtx) -> bool {
    let Some(api) = API.get() else {
        return false;
    };
    // SAFETY: ctx is the load context; the call only reads flags.
    let flags = unsafe { (api.get_context_flags)(ctx) };
    flags & raw::REDISMODULE_CTX_FLAGS_CLUSTER as c_int != 0
}

/// True when `name` resolves to a command (COMMAND INFO knows it): the
/// module checks at load time that the commands it calls or replicates
/// were not renamed away by `rename-command`.
pub fn command_exists(ctx: *mut RedisModuleCtx, name: &CStr) -> bool {
    let Some(api) = API.get() else {
        return false;
    };
    // SAFETY: format "cc" matches two C strings; ctx is the load context.
    let reply = unsafe {
        (api.call)(
            ctx,
            c"COMMAND".as_ptr(),
            c"cc".as_ptr(),
            c"INFO".as_ptr(),
            name.as_ptr(),
        )
    };
    if reply.is_null() {
        return false;
    }
    // SAFETY: reply is live until freed below; elements belong to it.
    let exists = unsafe {
        (api.call_reply_length)(reply) == 1 && {
            let entry = (api.call_reply_array_element)(reply, 0);
            !entry.is_null()
                && (api.call_reply_type)(entry) == raw::REDISMODULE_REPLY_ARRAY as c_int
                && reply_text(api, (api.call_reply_array_element)(entry, 0))
                    .is_some_and(|found| found.eq_ignore_ascii_case(&name.to_string_lossy()))
        }
    };
    // SAFETY: freed exactly once, not used afterwards.
    unsafe { (api.free_call_reply)(reply) };
    exists
}

/// What happened to an optional registration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Optional {
    Done,
    /// The server is too old for it (the API function is missing).
    Unsupported,
}

/// Attaches COMMAND DOCS / COMMAND INFO data (summary, complexity, since,
/// arity, key specification, argument tree) to the command `name`.
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
    // Every array the server reads lives in `arena` until the call returns;
    // the server copies what it keeps.
    let mut arena: Vec<Vec<raw::RedisModuleCommandArg>> = Vec::new();
    let args = command_args(docs.args, &mut arena);
    let mut key_specs = [key_spec(docs.key_spec), key_spec_end()];
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
        arity: info::ARITY,
        key_specs: key_specs.as_mut_ptr(),
        args,
    };
    // SAFETY: command is live; command_info and everything it points to
    // (arena, key_specs, version, static strings) outlive this call.
    let status = unsafe { set_info(command, &command_info) };
    if status == OK {
        Ok(Optional::Done)
    } else {
        Err("RedisModule_SetCommandInfo rejected the command info (see the log above)".to_owned())
    }
}

/// Builds a NULL-terminated C array of `args` (recursively), stored in
/// `arena`, and returns a pointer to it.
fn command_args(
    args: &[info::Arg],
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
            let type_ = match arg.kind {
                ArgKind::String => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_STRING,
                ArgKind::Integer => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_INTEGER,
                ArgKind::UnixTime => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_UNIX_TIME,
                ArgKind::Key => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_KEY,
                ArgKind::PureToken => {
                    raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_PURE_TOKEN
                }
                ArgKind::OneOf => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_ONEOF,
                ArgKind::Block => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_BLOCK,
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
                type_,
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

fn key_spec(spec: KeySpec) -> raw::RedisModuleCommandKeySpec {
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
    let (notes, find_keys_type, fk) = match spec {
        KeySpec::Range {
            last,
            step,
            incomplete,
            ..
        } => (
            if incomplete {
                c"Keys follow the options and the time; options move them.".as_ptr()
            } else {
                c"Keys follow the time.".as_ptr()
            },
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
            std::ptr::null(),
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

/// What the server's module API offers for checking a user's permission
/// to run a command (Redis 7.0+).
pub fn acl_check_available() -> bool {
    API.get().is_some_and(|api| {
        api.get_current_user_name.is_some()
            && api.get_module_user_from_user_name.is_some()
            && api.acl_check_command_permissions.is_some()
            && api.free_module_user.is_some()
    })
}
