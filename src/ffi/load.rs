//! Load-time registrations: the command, its documentation, the INFO
//! section, server events, and reading INFO fields.

use std::ffi::{CStr, CString};
use std::panic::catch_unwind;

use libc::{c_int, c_longlong};
use redis_module::raw::{self, RedisModuleCtx};

use super::call::msetex_entry;
use super::{API, OK};

/// Stops `RedisModule_CloseKey` from signalling every key opened for
/// writing as modified: MSETEX signals the keys it writes itself, and a
/// NX/XX check that writes nothing must not fail other clients' WATCH.
pub fn disable_implicit_signal(ctx: *mut RedisModuleCtx) -> Result<(), String> {
    let api = API.get().ok_or("module API not initialised")?;
    let option = raw::REDISMODULE_OPTION_NO_IMPLICIT_SIGNAL_MODIFIED as c_int;
    // SAFETY: ctx is the load context.
    unsafe { (api.set_module_options)(ctx, option) };
    Ok(())
}

/// Registers `name` with the given flags and legacy key positions, routing
/// calls to [`crate::command::msetex`].
pub fn create_command(
    ctx: *mut RedisModuleCtx,
    name: &CStr,
    flags: &CStr,
    first_key: c_int,
    last_key: c_int,
    key_step: c_int,
) -> Result<(), String> {
    let api = API.get().ok_or("module API not initialised")?;
    // SAFETY: ctx is the load context; name and flags are NUL-terminated and
    // copied by the server; msetex_entry has the RedisModuleCmdFunc signature.
    let status = unsafe {
        (api.create_command)(
            ctx,
            name.as_ptr(),
            Some(msetex_entry),
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

/// Subscribes to the server events that [`crate::propagation`] needs.
/// Returns false if the server cannot deliver one of them.
pub fn subscribe_propagation_events(ctx: *mut RedisModuleCtx) -> bool {
    let Some(api) = API.get() else {
        return false;
    };
    [
        raw::REDISMODULE_EVENT_FORK_CHILD,
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
    })
}

unsafe extern "C" fn server_event(
    _ctx: *mut RedisModuleCtx,
    event: raw::RedisModuleEvent,
    _subevent: u64,
    _data: *mut std::ffi::c_void,
) {
    // A panic must not cross into the server; the state just stays unknown.
    let _ = catch_unwind(|| {
        if event.id == raw::REDISMODULE_EVENT_CRON_LOOP {
            crate::propagation::on_cron(|| {
                let fields = server_info_fields(c"replication", &crate::propagation::PROBED_FIELDS);
                crate::propagation::ReplicationInfo::from_fields(&fields)
            });
        } else {
            crate::propagation::on_backlog_may_change();
        }
    });
}

/// Registers the `INFO msetex` section (replacing the redis-module crate's
/// default handler, which has nothing to report for this module).
pub fn register_info(ctx: *mut RedisModuleCtx) -> Result<(), String> {
    let api = API.get().ok_or("module API not initialised")?;
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
        let listeners = crate::propagation::listeners_label();
        // SAFETY: as above; both strings are NUL-terminated and copied.
        unsafe {
            (api.info_add_field_c_string)(
                ctx,
                c"replication_listeners".as_ptr(),
                listeners.as_ptr(),
            )
        };
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

/// What happened to an optional registration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Optional {
    Done,
    /// The server is too old for it (the API function is missing).
    Unsupported,
}

/// Attaches COMMAND DOCS / COMMAND INFO data (summary, complexity, since,
/// arity, key specification, argument tree) to the command `name`.
pub fn set_command_info(ctx: *mut RedisModuleCtx, name: &CStr) -> Result<Optional, String> {
    use crate::command_info as info;
    let api = API.get().ok_or("module API not initialised")?;
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
    let args = command_args(info::ARGS, &mut arena);
    let mut key_specs = [key_spec_range(), key_spec_end()];
    let version = raw::RedisModuleCommandInfoVersion {
        version: 1,
        sizeof_historyentry: std::mem::size_of::<raw::RedisModuleCommandHistoryEntry>(),
        sizeof_keyspec: std::mem::size_of::<raw::RedisModuleCommandKeySpec>(),
        sizeof_arg: std::mem::size_of::<raw::RedisModuleCommandArg>(),
    };
    let command_info = raw::RedisModuleCommandInfo {
        version: &version,
        summary: info::SUMMARY.as_ptr(),
        complexity: info::COMPLEXITY.as_ptr(),
        since: info::SINCE.as_ptr(),
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
    args: &[crate::command_info::Arg],
    arena: &mut Vec<Vec<raw::RedisModuleCommandArg>>,
) -> *mut raw::RedisModuleCommandArg {
    use crate::command_info::ArgKind;
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

fn key_spec_range() -> raw::RedisModuleCommandKeySpec {
    use crate::command_info as info;
    raw::RedisModuleCommandKeySpec {
        notes: c"Keys follow the options and the time; options move them.".as_ptr(),
        flags: u64::from(
            raw::REDISMODULE_CMD_KEY_OW
                | raw::REDISMODULE_CMD_KEY_UPDATE
                | raw::REDISMODULE_CMD_KEY_INCOMPLETE,
        ),
        begin_search_type: raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INDEX,
        bs: raw::RedisModuleCommandKeySpec__bindgen_ty_1 {
            index: raw::RedisModuleCommandKeySpec__bindgen_ty_1__bindgen_ty_1 {
                pos: info::KEY_SPEC_FIRST,
            },
        },
        find_keys_type: raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_RANGE,
        fk: raw::RedisModuleCommandKeySpec__bindgen_ty_2 {
            range: raw::RedisModuleCommandKeySpec__bindgen_ty_2__bindgen_ty_1 {
                lastkey: info::KEY_SPEC_LAST,
                keystep: info::KEY_SPEC_STEP,
                limit: 0,
            },
        },
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
    let api = API.get().ok_or("module API not initialised")?;
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
