//! The module API's function table, resolved once at load; [`Slot`]; the server log.

use std::ffi::CString;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::OnceLock;

use libc::{c_char, c_int, c_longlong};
use redis_module::raw::{
    self, RedisModuleCallReply, RedisModuleCtx, RedisModuleKey, RedisModuleString, RedisModuleUser,
};

pub type RawCtx = RedisModuleCtx;

pub(super) const OK: c_int = raw::REDISMODULE_OK as c_int;
pub(super) const ERR: c_int = raw::REDISMODULE_ERR as c_int;

/// Declares [`Api`] and its resolver; `optional` functions (newer servers) are `Option`s.
macro_rules! module_api {
    (
        required { $( $field:ident = $symbol:ident : fn($($arg:ty),* $(; $va:tt)?) $(-> $ret:ty)? ;)* }
        optional { $( $ofield:ident = $osymbol:ident : fn($($oarg:ty),*) $(-> $oret:ty)? ;)* }
    ) => {
        pub struct Api {
            $( pub(super) $field: unsafe extern "C" fn($($arg,)* $($va)?) $(-> $ret)?, )*
            $( pub(super) $ofield: Option<unsafe extern "C" fn($($oarg),*) $(-> $oret)?>, )*
        }

        impl Api {
            fn resolve() -> Result<Api, &'static str> {
                // SAFETY: set once by RedisModule_Init earlier, then only read (main thread).
                unsafe { Ok(Api {
                    $( $field: raw::$symbol.ok_or(stringify!($symbol))?, )*
                    $( $ofield: raw::$osymbol, )*
                }) }
            }
        }
    };
}

// Every required function is exported since Redis 6.2.8 and 7.0.5 (SetAbsExpire, GetAbsExpire:
// declared in 6.2.2, registered by redis/redis#11025).
module_api! {
    required {
        call = RedisModule_Call: fn(*mut RedisModuleCtx, *const c_char, *const c_char; ...) -> *mut RedisModuleCallReply;
        replicate = RedisModule_Replicate: fn(*mut RedisModuleCtx, *const c_char, *const c_char; ...) -> c_int;
        create_command = RedisModule_CreateCommand: fn(*mut RedisModuleCtx, *const c_char, raw::RedisModuleCmdFunc, *const c_char, c_int, c_int, c_int) -> c_int;
        open_key = RedisModule_OpenKey: fn(*mut RedisModuleCtx, *mut RedisModuleString, c_int) -> *mut RedisModuleKey;
        close_key = RedisModule_CloseKey: fn(*mut RedisModuleKey);
        key_type = RedisModule_KeyType: fn(*mut RedisModuleKey) -> c_int;
        value_length = RedisModule_ValueLength: fn(*mut RedisModuleKey) -> usize;
        string_dma = RedisModule_StringDMA: fn(*mut RedisModuleKey, *mut usize, c_int) -> *mut c_char;
        string_set = RedisModule_StringSet: fn(*mut RedisModuleKey, *mut RedisModuleString) -> c_int;
        set_expire = RedisModule_SetExpire: fn(*mut RedisModuleKey, raw::mstime_t) -> c_int;
        set_abs_expire = RedisModule_SetAbsExpire: fn(*mut RedisModuleKey, raw::mstime_t) -> c_int;
        get_abs_expire = RedisModule_GetAbsExpire: fn(*mut RedisModuleKey) -> raw::mstime_t;
        set_lru = RedisModule_SetLRU: fn(*mut RedisModuleKey, raw::mstime_t) -> c_int;
        get_lfu = RedisModule_GetLFU: fn(*mut RedisModuleKey, *mut c_longlong) -> c_int;
        set_lfu = RedisModule_SetLFU: fn(*mut RedisModuleKey, c_longlong) -> c_int;
        string_ptr_len = RedisModule_StringPtrLen: fn(*const RedisModuleString, *mut usize) -> *const c_char;
        create_string = RedisModule_CreateString: fn(*mut RedisModuleCtx, *const c_char, usize) -> *mut RedisModuleString;
        free_string = RedisModule_FreeString: fn(*mut RedisModuleCtx, *mut RedisModuleString);
        retain_string = RedisModule_RetainString: fn(*mut RedisModuleCtx, *mut RedisModuleString);
        notify_keyspace_event = RedisModule_NotifyKeyspaceEvent: fn(*mut RedisModuleCtx, c_int, *const c_char, *mut RedisModuleString) -> c_int;
        call_reply_type = RedisModule_CallReplyType: fn(*mut RedisModuleCallReply) -> c_int;
        call_reply_length = RedisModule_CallReplyLength: fn(*mut RedisModuleCallReply) -> usize;
        call_reply_array_element = RedisModule_CallReplyArrayElement: fn(*mut RedisModuleCallReply, usize) -> *mut RedisModuleCallReply;
        call_reply_string_ptr = RedisModule_CallReplyStringPtr: fn(*mut RedisModuleCallReply, *mut usize) -> *const c_char;
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
        register_command_filter = RedisModule_RegisterCommandFilter: fn(*mut RedisModuleCtx, raw::RedisModuleCommandFilterFunc, c_int) -> *mut raw::RedisModuleCommandFilter;
        command_filter_args_count = RedisModule_CommandFilterArgsCount: fn(*mut raw::RedisModuleCommandFilterCtx) -> c_int;
        command_filter_arg_get = RedisModule_CommandFilterArgGet: fn(*mut raw::RedisModuleCommandFilterCtx, c_int) -> *mut RedisModuleString;
        command_filter_arg_replace = RedisModule_CommandFilterArgReplace: fn(*mut raw::RedisModuleCommandFilterCtx, c_int, *mut RedisModuleString) -> c_int;
        command_filter_arg_delete = RedisModule_CommandFilterArgDelete: fn(*mut raw::RedisModuleCommandFilterCtx, c_int) -> c_int;
        command_filter_arg_insert = RedisModule_CommandFilterArgInsert: fn(*mut raw::RedisModuleCommandFilterCtx, c_int, *mut RedisModuleString) -> c_int;
        get_client_id = RedisModule_GetClientId: fn(*mut RedisModuleCtx) -> libc::c_ulonglong;
    }
    optional {
        // Redis 7.0+: key access flags (ACLs); COMMAND DOCS / INFO data and key specs.
        key_at_pos_with_flags = RedisModule_KeyAtPosWithFlags: fn(*mut RedisModuleCtx, c_int, c_int);
        get_command = RedisModule_GetCommand: fn(*mut RedisModuleCtx, *const c_char) -> *mut raw::RedisModuleCommand;
        set_command_info = RedisModule_SetCommandInfo: fn(*mut raw::RedisModuleCommand, *const raw::RedisModuleCommandInfo) -> c_int;
        // Redis 7.2+: ACL categories of a module command.
        set_command_acl_categories = RedisModule_SetCommandACLCategories: fn(*mut raw::RedisModuleCommand, *const c_char) -> c_int;
        // Redis 7.0+: ACL checks of a user, the ACL log, a client's user by id (NULL if none).
        get_current_user_name = RedisModule_GetCurrentUserName: fn(*mut RedisModuleCtx) -> *mut RedisModuleString;
        get_module_user_from_user_name = RedisModule_GetModuleUserFromUserName: fn(*mut RedisModuleString) -> *mut RedisModuleUser;
        acl_check_command_permissions = RedisModule_ACLCheckCommandPermissions: fn(*mut RedisModuleUser, *mut *mut RedisModuleString, c_int) -> c_int;
        free_module_user = RedisModule_FreeModuleUser: fn(*mut RedisModuleUser);
        acl_add_log_entry = RedisModule_ACLAddLogEntry: fn(*mut RedisModuleCtx, *mut RedisModuleUser, *mut RedisModuleString, raw::RedisModuleACLLogEntryReason);
        get_client_user_name_by_id = RedisModule_GetClientUserNameById: fn(*mut RedisModuleCtx, u64) -> *mut RedisModuleString;
        // Redis 7.2+ / Valkey: which module options this server knows.
        get_module_options_all = RedisModule_GetModuleOptionsAll: fn() -> c_int;
        // Redis 8.6.3 (not 8.0.6, Valkey 9.1.2): a config read directly, whatever rename-command did.
        config_get_numeric = RedisModule_ConfigGetNumeric: fn(*mut RedisModuleCtx, *const c_char, *mut c_longlong) -> c_int;
        // Redis 7.0+ / Valkey: module configurations.
        register_string_config = RedisModule_RegisterStringConfig: fn(*mut RedisModuleCtx, *const c_char, *const c_char, libc::c_uint, raw::RedisModuleConfigGetStringFunc, raw::RedisModuleConfigSetStringFunc, raw::RedisModuleConfigApplyFunc, *mut libc::c_void) -> c_int;
        load_configs = RedisModule_LoadConfigs: fn(*mut RedisModuleCtx) -> c_int;
        // Redis 7.2+ / Valkey: who sent a filtered command (values held for it, `held`).
        command_filter_get_client_id = RedisModule_CommandFilterGetClientId: fn(*mut raw::RedisModuleCommandFilterCtx) -> libc::c_ulonglong;
        get_client_info_by_id = RedisModule_GetClientInfoById: fn(*mut libc::c_void, u64) -> c_int;
    }
}

pub(super) static API: OnceLock<Api> = OnceLock::new();

pub(super) fn api() -> Result<&'static Api, String> {
    API.get().ok_or_else(|| "module API not initialised".into())
}

/// Resolves the module API (loading is single-threaded: a value already stored is as valid).
pub(super) fn init_api() -> Result<&'static Api, String> {
    let api = Api::resolve()
        .map_err(|missing| format!("this server does not export {missing}, which msetex needs"))?;
    Ok(API.get_or_init(|| api))
}

/// A value published once per load and read lock-free by every call and the command filter (the
/// server passes no pointer of ours); each value is leaked (a few hundred bytes per load).
pub struct Slot<T: 'static>(AtomicPtr<T>);

impl<T: 'static> Slot<T> {
    pub const fn new() -> Slot<T> {
        Slot(AtomicPtr::new(std::ptr::null_mut()))
    }
    pub fn set(&self, value: T) {
        self.0
            .store(Box::into_raw(Box::new(value)), Ordering::Release);
    }
    pub fn get(&self) -> Option<&'static T> {
        // SAFETY: a non-null pointer came from Box::into_raw in `set` and is never freed.
        unsafe { self.0.load(Ordering::Acquire).as_ref() }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogLevel {
    Notice,
    Warning,
}

/// Writes one line to the server log; works before [`init_api`], so a failed load can say why.
pub fn log(ctx: *mut RedisModuleCtx, level: LogLevel, message: &str) {
    let level = match level {
        LogLevel::Notice => c"notice",
        LogLevel::Warning => c"warning",
    };
    // NUL bytes cannot appear in a C string: replace them rather than drop the line.
    let text = CString::new(message.replace('\0', "\\0"));
    // SAFETY: written once by RedisModule_Init before any of our code runs.
    let (Ok(text), Some(log_fn)) = (text, unsafe { raw::RedisModule_Log }) else {
        return;
    };
    // SAFETY: ctx is the server's; "%s" with one NUL-terminated string fits the printf contract.
    unsafe { log_fn(ctx, level.as_ptr(), c"%s".as_ptr(), text.as_ptr()) };
}
