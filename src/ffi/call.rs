//! Safe views of one command call: its context, arguments and keys.

use std::ffi::{CStr, CString};
use std::marker::PhantomData;
use std::panic::{catch_unwind, AssertUnwindSafe};

use libc::{c_int, c_longlong};
use redis_module::raw::{self, RedisModuleCtx, RedisModuleKey, RedisModuleString};

use super::{log, Api, LogLevel, API, ERR, OK};

/// The server calls this for every MSETEX. It builds the safe views and
/// turns a panic (a bug) into an error reply instead of aborting the server.
pub(super) unsafe extern "C" fn msetex_entry(
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

impl AsRef<[u8]> for Arg<'_> {
    fn as_ref(&self) -> &[u8] {
        self.bytes
    }
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
