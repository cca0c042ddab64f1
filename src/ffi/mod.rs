//! The only module with `unsafe`: raw calls into the Redis module API.
//!
//! The rest of the crate sees safe wrappers: [`Ctx`] for one command call,
//! [`Arg`] for one argv element, [`Key`] for an open key (in `call`), and
//! the load-time registrations (in `load`). Module API functions are
//! resolved once at load time into [`Api`]; a required function the server
//! lacks makes the load fail with a log line instead of a crash later, and
//! newer optional ones are `Option`s checked before use.

use std::ffi::CString;

use libc::{c_char, c_int, c_longlong};
use std::sync::OnceLock;

use redis_module::raw::{
    self, RedisModuleCallReply, RedisModuleCtx, RedisModuleKey, RedisModuleString,
};

pub(crate) const OK: c_int = raw::REDISMODULE_OK as c_int;
pub(crate) const ERR: c_int = raw::REDISMODULE_ERR as c_int;

/// Declares [`Api`] with one field per required module API function and the
/// resolver that copies each pointer out of the crate's bindings.
macro_rules! module_api {
    ($( $field:ident = $symbol:ident : fn($($arg:ty),*) $(-> $ret:ty)? ;)*) => {
        /// Module API entry points this crate needs, resolved at load time.
        pub struct Api {
            $( $field: unsafe extern "C" fn($($arg),*) $(-> $ret)?, )*
            replicate: unsafe extern "C" fn(*mut RedisModuleCtx, *const c_char, *const c_char, ...) -> c_int,
            /// Redis 7.0+: declares a key with its access flags (for ACLs).
            key_at_pos_with_flags: Option<unsafe extern "C" fn(*mut RedisModuleCtx, c_int, c_int)>,
            /// Redis 7.0+: the command handle that COMMAND DOCS data attaches to.
            get_command: Option<unsafe extern "C" fn(*mut RedisModuleCtx, *const c_char) -> *mut raw::RedisModuleCommand>,
            /// Redis 7.0+: COMMAND DOCS / COMMAND INFO data.
            set_command_info: Option<unsafe extern "C" fn(*mut raw::RedisModuleCommand, *const raw::RedisModuleCommandInfo) -> c_int>,
            /// Redis 7.2+: ACL categories of a module command.
            set_command_acl_categories: Option<unsafe extern "C" fn(*mut raw::RedisModuleCommand, *const c_char) -> c_int>,
            call: unsafe extern "C" fn(*mut RedisModuleCtx, *const c_char, *const c_char, ...) -> *mut RedisModuleCallReply,
        }

        impl Api {
            /// Copies the function pointers that `RedisModule_Init` filled in.
            /// Returns the name of the first one the server does not export.
            fn resolve() -> Result<Api, &'static str> {
                // SAFETY: these statics are written once by RedisModule_Init
                // (run by redis_module! before our init) and only read after,
                // on the server's main thread; copying an Option<fn> is a plain load.
                let api = unsafe {
                    Api {
                        $( $field: raw::$symbol.ok_or(stringify!($symbol))?, )*
                        replicate: raw::RedisModule_Replicate.ok_or("RedisModule_Replicate")?,
                        key_at_pos_with_flags: raw::RedisModule_KeyAtPosWithFlags,
                        get_command: raw::RedisModule_GetCommand,
                        set_command_info: raw::RedisModule_SetCommandInfo,
                        set_command_acl_categories: raw::RedisModule_SetCommandACLCategories,
                        call: raw::RedisModule_Call.ok_or("RedisModule_Call")?,
                    }
                };
                Ok(api)
            }
        }
    };
}

// Every function here exists since Redis 6.2 (SetAbsExpire since 6.2.2);
// newer ones are optional fields above and checked before use.
module_api! {
    create_command = RedisModule_CreateCommand: fn(*mut RedisModuleCtx, *const c_char, raw::RedisModuleCmdFunc, *const c_char, c_int, c_int, c_int) -> c_int;
    open_key = RedisModule_OpenKey: fn(*mut RedisModuleCtx, *mut RedisModuleString, c_int) -> *mut RedisModuleKey;
    close_key = RedisModule_CloseKey: fn(*mut RedisModuleKey);
    key_type = RedisModule_KeyType: fn(*mut RedisModuleKey) -> c_int;
    value_length = RedisModule_ValueLength: fn(*mut RedisModuleKey) -> usize;
    string_dma = RedisModule_StringDMA: fn(*mut RedisModuleKey, *mut usize, c_int) -> *mut c_char;
    string_set = RedisModule_StringSet: fn(*mut RedisModuleKey, *mut RedisModuleString) -> c_int;
    set_abs_expire = RedisModule_SetAbsExpire: fn(*mut RedisModuleKey, raw::mstime_t) -> c_int;
    string_ptr_len = RedisModule_StringPtrLen: fn(*const RedisModuleString, *mut usize) -> *const c_char;
    create_string = RedisModule_CreateString: fn(*mut RedisModuleCtx, *const c_char, usize) -> *mut RedisModuleString;
    create_string_from_long_long = RedisModule_CreateStringFromLongLong: fn(*mut RedisModuleCtx, c_longlong) -> *mut RedisModuleString;
    free_string = RedisModule_FreeString: fn(*mut RedisModuleCtx, *mut RedisModuleString);
    notify_keyspace_event = RedisModule_NotifyKeyspaceEvent: fn(*mut RedisModuleCtx, c_int, *const c_char, *mut RedisModuleString) -> c_int;
    call_reply_type = RedisModule_CallReplyType: fn(*mut RedisModuleCallReply) -> c_int;
    free_call_reply = RedisModule_FreeCallReply: fn(*mut RedisModuleCallReply);
    reply_with_simple_string = RedisModule_ReplyWithSimpleString: fn(*mut RedisModuleCtx, *const c_char) -> c_int;
    reply_with_long_long = RedisModule_ReplyWithLongLong: fn(*mut RedisModuleCtx, c_longlong) -> c_int;
    reply_with_error = RedisModule_ReplyWithError: fn(*mut RedisModuleCtx, *const c_char) -> c_int;
    milliseconds = RedisModule_Milliseconds: fn() -> raw::mstime_t;
    register_info_func = RedisModule_RegisterInfoFunc: fn(*mut RedisModuleCtx, raw::RedisModuleInfoFunc) -> c_int;
    info_add_section = RedisModule_InfoAddSection: fn(*mut raw::RedisModuleInfoCtx, *const c_char) -> c_int;
    info_add_field_long_long = RedisModule_InfoAddFieldLongLong: fn(*mut raw::RedisModuleInfoCtx, *const c_char, c_longlong) -> c_int;
    info_add_field_c_string = RedisModule_InfoAddFieldCString: fn(*mut raw::RedisModuleInfoCtx, *const c_char, *const c_char) -> c_int;
    set_module_options = RedisModule_SetModuleOptions: fn(*mut RedisModuleCtx, c_int);
    signal_modified_key = RedisModule_SignalModifiedKey: fn(*mut RedisModuleCtx, *mut RedisModuleString) -> c_int;
    is_keys_position_request = RedisModule_IsKeysPositionRequest: fn(*mut RedisModuleCtx) -> c_int;
    key_at_pos = RedisModule_KeyAtPos: fn(*mut RedisModuleCtx, c_int);
    get_context_flags = RedisModule_GetContextFlags: fn(*mut RedisModuleCtx) -> c_int;
    replicate_verbatim = RedisModule_ReplicateVerbatim: fn(*mut RedisModuleCtx) -> c_int;
    subscribe_to_server_event = RedisModule_SubscribeToServerEvent: fn(*mut RedisModuleCtx, raw::RedisModuleEvent, raw::RedisModuleEventCallback) -> c_int;
    get_server_info = RedisModule_GetServerInfo: fn(*mut RedisModuleCtx, *const c_char) -> *mut raw::RedisModuleServerInfoData;
    free_server_info = RedisModule_FreeServerInfo: fn(*mut RedisModuleCtx, *mut raw::RedisModuleServerInfoData);
    server_info_get_field_c = RedisModule_ServerInfoGetFieldC: fn(*mut raw::RedisModuleServerInfoData, *const c_char) -> *const c_char;
}

pub(crate) static API: OnceLock<Api> = OnceLock::new();

/// Resolves the module API. Call once from the module's init function.
pub fn init_api() -> Result<(), String> {
    if API.get().is_some() {
        return Ok(());
    }
    let api = Api::resolve()
        .map_err(|missing| format!("this server does not export {missing}, which msetex needs"))?;
    // A concurrent set cannot happen (module loading is single-threaded);
    // if it did, the value already stored is equally valid.
    let _ = API.set(api);
    Ok(())
}

/// Log levels of `RedisModule_Log`.
#[derive(Clone, Copy)]
pub enum LogLevel {
    Notice,
    Warning,
}

/// Writes one line to the server log. Works at load time, before [`init_api`]
/// has resolved anything, because logging is how a failed load explains itself.
pub fn log(ctx: *mut RedisModuleCtx, level: LogLevel, message: &str) {
    let level = match level {
        LogLevel::Notice => c"notice",
        LogLevel::Warning => c"warning",
    };
    // NUL bytes cannot appear in a C string: replace them rather than drop the line.
    let Ok(text) = CString::new(message.replace('\0', "\\0")) else {
        return;
    };
    // SAFETY: written once by RedisModule_Init before any of our code runs.
    let Some(log_fn) = (unsafe { raw::RedisModule_Log }) else {
        return;
    };
    // SAFETY: ctx comes from the server for this load or call; "%s" with one
    // NUL-terminated string argument matches the printf-style contract.
    unsafe { log_fn(ctx, level.as_ptr(), c"%s".as_ptr(), text.as_ptr()) };
}

mod call;
mod load;

pub use call::{Arg, Ctx, EventClass, Key, KeyPositions, OwnedString, Reply};
pub use load::*;
