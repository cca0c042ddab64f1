//! The only module with `unsafe`: raw calls into the Redis module API.
//!
//! The rest of the crate sees safe wrappers: [`Ctx`] for one command call,
//! [`Arg`] for one argv element, [`Key`] for an open key. Module API
//! functions are resolved once at load time into [`Api`]; a function the
//! server lacks makes the load fail with a log line instead of a crash later.

use std::ffi::{CStr, CString};

use libc::{c_char, c_int, c_longlong};
use std::marker::PhantomData;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

use redis_module::raw::{
    self, RedisModuleCallReply, RedisModuleCtx, RedisModuleKey, RedisModuleString,
};

const OK: c_int = raw::REDISMODULE_OK as c_int;
const ERR: c_int = raw::REDISMODULE_ERR as c_int;

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
    server_info_get_field_signed = RedisModule_ServerInfoGetFieldSigned: fn(*mut raw::RedisModuleServerInfoData, *const c_char, *mut c_int) -> c_longlong;
}

static API: OnceLock<Api> = OnceLock::new();

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

/// The server calls this for every MSETEX. It builds the safe views and
/// turns a panic (a bug) into an error reply instead of aborting the server.
unsafe extern "C" fn msetex_entry(
    ctx: *mut RedisModuleCtx,
    argv: *mut *mut RedisModuleString,
    argc: c_int,
) -> c_int {
    let Some(api) = API.get() else {
        return ERR;
    };
    let call = Ctx {
        raw: ctx,
        api,
        _call: PhantomData,
    };
    let argc = usize::try_from(argc).unwrap_or(0);
    let args = || -> Vec<Arg<'_>> {
        if argv.is_null() || argc == 0 {
            return Vec::new();
        }
        // SAFETY: the server passes argc valid, non-null argument strings
        // that live until this function returns; Arg borrows them for no
        // longer than this call.
        let raw_args = unsafe { std::slice::from_raw_parts(argv, argc) };
        raw_args.iter().map(|&ptr| call.arg(ptr)).collect()
    };
    // SAFETY: ctx is the context of this call.
    if unsafe { (api.is_keys_position_request)(ctx) } != 0 {
        // The server only wants to know where the keys are (cluster slot,
        // ACL and COMMAND GETKEYS checks): this context has no client.
        let _ = catch_unwind(AssertUnwindSafe(|| {
            crate::command::declare_keys(&KeyPositions { raw: ctx, api }, &args())
        }));
        return OK;
    }
    let outcome = catch_unwind(AssertUnwindSafe(|| crate::command::msetex(&call, &args())));
    match outcome {
        Ok(reply) => call.reply(reply),
        Err(_) => {
            log(
                ctx,
                LogLevel::Warning,
                "msetex: internal error (panic caught), see issue tracker",
            );
            call.reply(Reply::Error(c"ERR msetex internal error".to_owned()))
        }
    }
}

/// A "where are the keys" call (flag `getkeys-api`): collects positions.
pub struct KeyPositions {
    raw: *mut RedisModuleCtx,
    api: &'static Api,
}

impl KeyPositions {
    /// Declares argv[`index`] a key that the command overwrites.
    pub fn key_at(&self, index: usize) {
        let Ok(pos) = c_int::try_from(index) else {
            return;
        };
        let flags = raw::REDISMODULE_CMD_KEY_OW as c_int | raw::REDISMODULE_CMD_KEY_UPDATE as c_int;
        // SAFETY: raw is a key-positions context; pos is within argv.
        unsafe {
            match self.api.key_at_pos_with_flags {
                Some(with_flags) => with_flags(self.raw, pos, flags),
                // Before Redis 7.0: no flags; ACLs then require full access.
                None => (self.api.key_at_pos)(self.raw, pos),
            }
        }
    }
}

/// What a command sends back to its client.
#[derive(Debug)]
pub enum Reply {
    /// `+OK`
    Ok,
    /// `:n`
    Integer(i64),
    /// `-<text>`; the text starts with the error code, e.g. `ERR ...`.
    Error(CString),
}

/// The server context of one command call. Not `Send`: it must not leave
/// the call (and the thread) it was created for.
pub struct Ctx<'call> {
    raw: *mut RedisModuleCtx,
    api: &'static Api,
    _call: PhantomData<&'call mut RedisModuleCtx>,
}

/// One command argument, borrowed from the server for the length of the call.
#[derive(Clone, Copy)]
pub struct Arg<'call> {
    ptr: *mut RedisModuleString,
    bytes: &'call [u8],
}

impl<'call> Arg<'call> {
    /// The argument's bytes (binary-safe).
    pub fn bytes(&self) -> &'call [u8] {
        self.bytes
    }
}

/// Keyspace event classes we fire, as in `notify-keyspace-events`.
#[derive(Clone, Copy)]
pub enum EventClass {
    /// `$`: string commands (`set`).
    String,
    /// `g`: generic commands (`expire`).
    Generic,
}

impl<'call> Ctx<'call> {
    fn arg(&self, ptr: *mut RedisModuleString) -> Arg<'call> {
        let mut len = 0usize;
        // SAFETY: ptr is a live argv string; StringPtrLen only reads it and
        // returns a pointer valid while the string lives (the whole call,
        // since the server holds argv until we return).
        let data = unsafe { (self.api.string_ptr_len)(ptr, &mut len) };
        let bytes = if data.is_null() || len == 0 {
            &[][..]
        } else {
            // SAFETY: data points at len readable bytes owned by the string.
            unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) }
        };
        Arg { ptr, bytes }
    }

    /// The server's clock in unix milliseconds (what `SET ... EX` uses).
    pub fn now_ms(&self) -> i64 {
        // SAFETY: no arguments; reads the server clock.
        unsafe { (self.api.milliseconds)() }
    }

    /// Opens `key` for writing (a write command's lookup: no hit/miss
    /// statistics, expired keys removed). The handle closes on drop.
    pub fn open_key_for_write(&self, key: Arg<'call>) -> Option<Key<'_>> {
        let mode = raw::REDISMODULE_READ as c_int | raw::REDISMODULE_WRITE as c_int;
        // SAFETY: ctx and key are live for this call; the handle is closed by Key::drop.
        let handle = unsafe { (self.api.open_key)(self.raw, key.ptr, mode) };
        if handle.is_null() {
            None
        } else {
            Some(Key {
                raw: handle,
                api: self.api,
                _ctx: PhantomData,
            })
        }
    }

    /// Runs `SET key <integer> PXAT deadline` through the server so that the
    /// value gets the same compact integer encoding as a client's SET. SET
    /// fires its own `set` and `expire` events, counts the change, and (the
    /// `!` flag) replicates itself in order with the rest of the call.
    /// Returns false if the server refused the call.
    pub fn call_set_integer_pxat(&self, key: Arg<'call>, value: i64, deadline_ms: i64) -> bool {
        // SAFETY: format "!slcl" (the ! replicates) matches the arguments
        // that follow: a module string, a long long, a C string, a long
        // long; all live for the call.
        let reply = unsafe {
            (self.api.call)(
                self.raw,
                c"SET".as_ptr(),
                c"!slcl".as_ptr(),
                key.ptr,
                value as c_longlong,
                c"PXAT".as_ptr(),
                deadline_ms as c_longlong,
            )
        };
        if reply.is_null() {
            return false;
        }
        // SAFETY: reply is a live call reply owned by us until freed below.
        let kind = unsafe { (self.api.call_reply_type)(reply) };
        // SAFETY: freed exactly once, not used afterwards.
        unsafe { (self.api.free_call_reply)(reply) };
        kind != raw::REDISMODULE_REPLY_ERROR as c_int
    }

    /// Queues `SET key value PXAT deadline` for replicas and the AOF. The
    /// server wraps several of them from one call in MULTI/EXEC.
    pub fn replicate_set_pxat(
        &self,
        key: Arg<'call>,
        value: Arg<'call>,
        pxat: &OwnedString,
        deadline: &OwnedString,
    ) -> bool {
        // SAFETY: format "ssss" matches four live module strings; the server
        // takes its own references.
        let status = unsafe {
            (self.api.replicate)(
                self.raw,
                c"SET".as_ptr(),
                c"ssss".as_ptr(),
                key.ptr,
                value.ptr,
                pxat.ptr,
                deadline.ptr,
            )
        };
        status == OK
    }

    /// Tells WATCH and client-side caching that `key` changed. The module
    /// turns off the implicit signal on closing a key (see
    /// [`disable_implicit_signal`]) so that keys it only looks at stay quiet.
    pub fn signal_modified(&self, key: Arg<'call>) {
        // SAFETY: ctx and key are live for the call; always returns OK.
        unsafe { (self.api.signal_modified_key)(self.raw, key.ptr) };
    }

    /// True when the AOF is on (or being turned on): replicated commands are
    /// then always kept, whatever [`crate::propagation`] knows.
    pub fn aof_on(&self) -> bool {
        // SAFETY: ctx is the live command context; the call only reads flags.
        let flags = unsafe { (self.api.get_context_flags)(self.raw) };
        flags & raw::REDISMODULE_CTX_FLAGS_AOF as c_int != 0
    }

    /// Counts one change for RDB save points (`server.dirty`) without
    /// queueing anything. Only call it when [`crate::propagation`] says
    /// nothing is fed: the server then drops the verbatim command at once.
    pub fn count_change_without_propagating(&self) {
        // SAFETY: ctx is the live command context. Always returns OK.
        unsafe { (self.api.replicate_verbatim)(self.raw) };
    }

    /// Fires a keyspace notification for `key`, as the server's commands do.
    pub fn notify(&self, class: EventClass, event: &CStr, key: Arg<'call>) {
        let class = match class {
            EventClass::String => raw::REDISMODULE_NOTIFY_STRING,
            EventClass::Generic => raw::REDISMODULE_NOTIFY_GENERIC,
        };
        // SAFETY: ctx, event (NUL-terminated) and key are live for the call.
        // The return value only reports a missing client, which a command
        // context always has.
        unsafe { (self.api.notify_keyspace_event)(self.raw, class, event.as_ptr(), key.ptr) };
    }

    /// A new string owned by the module (not by the call), freed on drop.
    pub fn string(&self, bytes: &[u8]) -> Option<OwnedString> {
        // SAFETY: bytes is a valid slice; a NULL ctx makes the string ours to free.
        let ptr = unsafe {
            (self.api.create_string)(std::ptr::null_mut(), bytes.as_ptr().cast(), bytes.len())
        };
        OwnedString::new(ptr, self.api)
    }

    /// A new string holding the decimal form of `n`, freed on drop.
    pub fn string_from_i64(&self, n: i64) -> Option<OwnedString> {
        // SAFETY: a NULL ctx makes the string ours to free.
        let ptr = unsafe { (self.api.create_string_from_long_long)(std::ptr::null_mut(), n) };
        OwnedString::new(ptr, self.api)
    }

    /// Logs a warning line to the server log.
    pub fn log_warning(&self, message: &str) {
        log(self.raw, LogLevel::Warning, message);
    }

    fn reply(&self, reply: Reply) -> c_int {
        // SAFETY: ctx is the live command context; the texts are NUL-terminated
        // and copied by the server.
        unsafe {
            match reply {
                Reply::Ok => (self.api.reply_with_simple_string)(self.raw, c"OK".as_ptr()),
                Reply::Integer(n) => (self.api.reply_with_long_long)(self.raw, n),
                Reply::Error(text) => (self.api.reply_with_error)(self.raw, text.as_ptr()),
            }
        }
    }
}

/// A module-owned string, released with `RedisModule_FreeString` on drop.
pub struct OwnedString {
    ptr: *mut RedisModuleString,
    free: unsafe extern "C" fn(*mut RedisModuleCtx, *mut RedisModuleString),
}

impl OwnedString {
    fn new(ptr: *mut RedisModuleString, api: &Api) -> Option<OwnedString> {
        (!ptr.is_null()).then_some(OwnedString {
            ptr,
            free: api.free_string,
        })
    }
}

impl Drop for OwnedString {
    fn drop(&mut self) {
        // SAFETY: created with a NULL ctx, so we hold the only reference we
        // must release, exactly once.
        unsafe { (self.free)(std::ptr::null_mut(), self.ptr) };
    }
}

/// A key opened for writing, closed on drop. Closing does not signal the
/// key as modified (see [`disable_implicit_signal`]): writers call
/// [`Ctx::signal_modified`].
pub struct Key<'ctx> {
    raw: *mut RedisModuleKey,
    api: &'static Api,
    _ctx: PhantomData<&'ctx ()>,
}

impl Key<'_> {
    /// True when the key does not exist (or has logically expired).
    pub fn is_empty(&self) -> bool {
        // SAFETY: raw is an open key handle.
        unsafe { (self.api.key_type)(self.raw) == raw::REDISMODULE_KEYTYPE_EMPTY as c_int }
    }

    /// The length of the string value, or `None` if the key is empty or
    /// holds another type.
    pub fn string_len(&self) -> Option<usize> {
        // SAFETY: raw is an open key handle.
        let kind = unsafe { (self.api.key_type)(self.raw) };
        if kind != raw::REDISMODULE_KEYTYPE_STRING as c_int {
            return None;
        }
        // SAFETY: raw is an open key handle holding a string.
        Some(unsafe { (self.api.value_length)(self.raw) })
    }

    /// Overwrites the string value in place with `bytes` of the same length,
    /// keeping the key's dictionary entry and TTL entry. Returns false (and
    /// writes nothing) unless the key holds a string of exactly that length.
    pub fn overwrite_same_length(&mut self, bytes: &[u8]) -> bool {
        let mut len = 0usize;
        // SAFETY: raw is an open key handle; DMA in write mode first makes the
        // value a private raw string (copying it if shared or encoded).
        let dst =
            unsafe { (self.api.string_dma)(self.raw, &mut len, raw::REDISMODULE_WRITE as c_int) };
        if dst.is_null() || len != bytes.len() {
            return false;
        }
        // SAFETY: dst points at len writable bytes of the key's private value;
        // bytes has the same length. copy (memmove) tolerates any overlap.
        unsafe { std::ptr::copy(bytes.as_ptr(), dst.cast::<u8>(), len) };
        true
    }

    /// Replaces whatever the key holds with the string `value` (the server
    /// keeps its own reference). The TTL is cleared.
    pub fn set(&mut self, value: Arg<'_>) -> bool {
        // SAFETY: raw is an open write handle and value a live string.
        unsafe { (self.api.string_set)(self.raw, value.ptr) == OK }
    }

    /// Sets the key's absolute expiry time in unix milliseconds.
    pub fn set_abs_expire(&mut self, deadline_ms: i64) -> bool {
        // SAFETY: raw is an open write handle.
        unsafe { (self.api.set_abs_expire)(self.raw, deadline_ms) == OK }
    }
}

impl Drop for Key<'_> {
    fn drop(&mut self) {
        // SAFETY: raw was returned by OpenKey and is closed exactly once here.
        unsafe { (self.api.close_key)(self.raw) };
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
    let Some(api) = API.get() else {
        return;
    };
    // A panic must not cross into the server; the state just stays unknown.
    let _ = catch_unwind(|| {
        if event.id == raw::REDISMODULE_EVENT_CRON_LOOP {
            crate::propagation::on_cron(|| probe_replication(api));
        } else {
            crate::propagation::on_backlog_may_change();
        }
    });
}

/// Reads the fields of `INFO replication` that decide whether replicated
/// commands are kept. `None` if any is missing.
fn probe_replication(api: &Api) -> Option<crate::propagation::ReplicationInfo> {
    // SAFETY: a NULL ctx makes the data ours to free; the section name is
    // NUL-terminated.
    let data = unsafe { (api.get_server_info)(std::ptr::null_mut(), c"replication".as_ptr()) };
    if data.is_null() {
        return None;
    }
    let signed = |field: &CStr| {
        let mut err: c_int = 0;
        // SAFETY: data is live until freed below; field is NUL-terminated.
        let value = unsafe { (api.server_info_get_field_signed)(data, field.as_ptr(), &mut err) };
        (err == 0).then_some(value)
    };
    // SAFETY: as above; the returned C string lives as long as data.
    let role = unsafe { (api.server_info_get_field_c)(data, c"role".as_ptr()) };
    let is_primary = (!role.is_null())
        // SAFETY: non-null, NUL-terminated, owned by data (still live).
        .then(|| unsafe { CStr::from_ptr(role) }.to_bytes() == b"master");
    let info = match (
        is_primary,
        signed(c"connected_slaves"),
        signed(c"repl_backlog_active"),
    ) {
        (Some(is_primary), Some(connected_replicas), Some(backlog)) => {
            Some(crate::propagation::ReplicationInfo {
                is_primary,
                connected_replicas,
                backlog_active: backlog != 0,
            })
        }
        _ => None,
    };
    // SAFETY: data came from GetServerInfo with a NULL ctx and is freed once.
    unsafe { (api.free_server_info)(std::ptr::null_mut(), data) };
    info
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
