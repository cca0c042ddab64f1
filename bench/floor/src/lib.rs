//! The module API's floor for MSETEX: bench tooling, not the product.
//!
//! `make bench` loads this library (target/release/libmsetex_floor.so) beside libmsetex.so and
//! measures, in the same rounds as MSETEX, what the bare job costs through the module API, so
//! that MSETEX's distance from that floor can be stated and targeted (docs/bench-targets.txt):
//!
//! - `floor.bare seconds key value [key value ...]`: one clock read per call; per pair
//!   `RedisModule_OpenKey` (read and write); the value copied in place with one
//!   `RedisModule_StringDMA` when the key holds a string of exactly the value's length, else
//!   `RedisModule_StringSet` of the argument; the deadline (`RedisModule_SetAbsExpire`, or
//!   `RedisModule_SetExpire` on a server without it); `RedisModule_CloseKey`. Replies `+OK`.
//! - `floor.events`, same arguments: the same, plus what correctness needs and nothing else:
//!   per key `RedisModule_SignalModifiedKey` (WATCH, client tracking) and the keyspace events
//!   `set` (string class) then `expire` (generic class); per call one nested
//!   `RedisModule_Call(ctx, "floor.count", "l", n)` without `!`, which counts the `n` changes for
//!   RDB save points the way MSETEX does on every server: `floor.count n` calls
//!   `RedisModule_ReplicateVerbatim` n times (each adds one to the server's change counter), and
//!   the server drops what it queues because the nested call was made without replication.
//!
//! Validation is minimal (arity, integer seconds above 0): no slot, ACL, type or size checks, no
//! encoding rules (an integer value is stored as the string it came as). Module option
//! `NO_IMPLICIT_SIGNAL_MODIFIED` is set at load (where the server knows it), so closing a key
//! does not signal it: `floor.events` signals each key once, `floor.bare` not at all.
//!
//! `unsafe` is allowed here: every module API call is one, each block says why it holds.

use std::ffi::CStr;
use std::sync::OnceLock;

use libc::{c_char, c_int, c_longlong};
use redis_module::raw::{
    self, mstime_t, RedisModuleCallReply, RedisModuleCtx, RedisModuleKey, RedisModuleString,
};

const OK: c_int = raw::REDISMODULE_OK as c_int;
const ERR: c_int = raw::REDISMODULE_ERR as c_int;

/// Declares [`Api`], the module API functions used here, and its resolver.
macro_rules! module_api {
    (
        required { $( $field:ident = $symbol:ident : fn($($arg:ty),*) $(-> $ret:ty)? ;)* }
        optional { $( $ofield:ident = $osymbol:ident : fn($($oarg:ty),*) $(-> $oret:ty)? ;)* }
    ) => {
        struct Api {
            $( $field: unsafe extern "C" fn($($arg),*) $(-> $ret)?, )*
            $( $ofield: Option<unsafe extern "C" fn($($oarg),*) $(-> $oret)?>, )*
            call: unsafe extern "C" fn(*mut RedisModuleCtx, *const c_char, *const c_char, ...) -> *mut RedisModuleCallReply,
        }

        impl Api {
            /// The functions, once RedisModule_Init has filled the table; the name of the first
            /// one missing otherwise.
            fn resolve() -> Result<Api, &'static str> {
                // SAFETY: the table is written by RedisModule_Init on the main thread before this
                // runs, and only read afterwards; each read copies an Option of a function pointer.
                let api = unsafe {
                    Api {
                        $( $field: raw::$symbol.ok_or(stringify!($symbol))?, )*
                        $( $ofield: raw::$osymbol, )*
                        call: raw::RedisModule_Call.ok_or("RedisModule_Call")?,
                    }
                };
                Ok(api)
            }
        }
    };
}

module_api! {
    required {
        create_command = RedisModule_CreateCommand: fn(*mut RedisModuleCtx, *const c_char, raw::RedisModuleCmdFunc, *const c_char, c_int, c_int, c_int) -> c_int;
        set_module_options = RedisModule_SetModuleOptions: fn(*mut RedisModuleCtx, c_int);
        milliseconds = RedisModule_Milliseconds: fn() -> mstime_t;
        string_to_long_long = RedisModule_StringToLongLong: fn(*const RedisModuleString, *mut c_longlong) -> c_int;
        string_ptr_len = RedisModule_StringPtrLen: fn(*const RedisModuleString, *mut usize) -> *const c_char;
        open_key = RedisModule_OpenKey: fn(*mut RedisModuleCtx, *mut RedisModuleString, c_int) -> *mut RedisModuleKey;
        close_key = RedisModule_CloseKey: fn(*mut RedisModuleKey);
        key_type = RedisModule_KeyType: fn(*mut RedisModuleKey) -> c_int;
        value_length = RedisModule_ValueLength: fn(*mut RedisModuleKey) -> usize;
        string_dma = RedisModule_StringDMA: fn(*mut RedisModuleKey, *mut usize, c_int) -> *mut c_char;
        string_set = RedisModule_StringSet: fn(*mut RedisModuleKey, *mut RedisModuleString) -> c_int;
        set_expire = RedisModule_SetExpire: fn(*mut RedisModuleKey, mstime_t) -> c_int;
        signal_modified_key = RedisModule_SignalModifiedKey: fn(*mut RedisModuleCtx, *mut RedisModuleString) -> c_int;
        notify_keyspace_event = RedisModule_NotifyKeyspaceEvent: fn(*mut RedisModuleCtx, c_int, *const c_char, *mut RedisModuleString) -> c_int;
        replicate_verbatim = RedisModule_ReplicateVerbatim: fn(*mut RedisModuleCtx) -> c_int;
        call_reply_type = RedisModule_CallReplyType: fn(*mut RedisModuleCallReply) -> c_int;
        free_call_reply = RedisModule_FreeCallReply: fn(*mut RedisModuleCallReply);
        reply_with_simple_string = RedisModule_ReplyWithSimpleString: fn(*mut RedisModuleCtx, *const c_char) -> c_int;
        reply_with_error = RedisModule_ReplyWithError: fn(*mut RedisModuleCtx, *const c_char) -> c_int;
        wrong_arity = RedisModule_WrongArity: fn(*mut RedisModuleCtx) -> c_int;
    }
    optional {
        // Redis 6.2.2+ and every Valkey: an absolute deadline.
        set_abs_expire = RedisModule_SetAbsExpire: fn(*mut RedisModuleKey, mstime_t) -> c_int;
        // Redis 7.2+ and Valkey: the module options this server knows.
        get_module_options_all = RedisModule_GetModuleOptionsAll: fn() -> c_int;
    }
}

static API: OnceLock<Api> = OnceLock::new();

/// Loads the module: `floor.bare`, `floor.events` and `floor.count`.
///
/// # Safety
///
/// Called by the server only, with its load context.
#[no_mangle]
pub unsafe extern "C" fn RedisModule_OnLoad(
    ctx: *mut RedisModuleCtx,
    _argv: *mut *mut RedisModuleString,
    _argc: c_int,
) -> c_int {
    // SAFETY: ctx is the load context the server passed; the name is a static C string.
    let init = unsafe {
        raw::Export_RedisModule_Init(
            ctx,
            c"floor".as_ptr(),
            1,
            raw::REDISMODULE_APIVER_1 as c_int,
        )
    };
    if init != OK {
        return ERR;
    }
    let Ok(api) = Api::resolve() else {
        return ERR;
    };
    let api = API.get_or_init(|| api);
    // Closing a key opened for writing must not signal it: floor.events signals each key itself.
    let option = raw::REDISMODULE_OPTION_NO_IMPLICIT_SIGNAL_MODIFIED as c_int;
    // SAFETY: no arguments; returns the option bits this server knows (Redis 7.2+, Valkey).
    let known = api
        .get_module_options_all
        .map_or(option, |all| unsafe { all() });
    if known & option != 0 {
        // SAFETY: ctx is the load context; the option is one this server knows (Redis 6.2 and
        // 7.0, which cannot say, know it: it came with RedisModule_SignalModifiedKey in 6.0).
        unsafe { (api.set_module_options)(ctx, option) };
    }
    // Legacy key positions: from argument 2, every second one, to the last (the pairs' keys);
    // floor.count has no keys.
    let commands: [(&CStr, raw::RedisModuleCmdFunc, &CStr, [c_int; 3]); 3] = [
        (
            c"floor.bare",
            Some(floor_bare),
            c"write deny-oom",
            [2, -1, 2],
        ),
        (
            c"floor.events",
            Some(floor_events),
            c"write deny-oom",
            [2, -1, 2],
        ),
        (
            c"floor.count",
            Some(floor_count),
            c"readonly fast no-monitor no-slowlog allow-loading allow-stale",
            [0, 0, 0],
        ),
    ];
    for (name, function, flags, [first, last, step]) in commands {
        // SAFETY: ctx is the load context; name and flags are static C strings; the function
        // has the signature the server calls.
        let created = unsafe {
            (api.create_command)(
                ctx,
                name.as_ptr(),
                function,
                flags.as_ptr(),
                first,
                last,
                step,
            )
        };
        if created != OK {
            return ERR;
        }
    }
    OK
}

/// `floor.bare seconds key value [key value ...]`
unsafe extern "C" fn floor_bare(
    ctx: *mut RedisModuleCtx,
    argv: *mut *mut RedisModuleString,
    argc: c_int,
) -> c_int {
    // SAFETY: the server passes its context and argc live arguments.
    unsafe { write_pairs(ctx, argv, argc, false) }
}

/// `floor.events seconds key value [key value ...]`
unsafe extern "C" fn floor_events(
    ctx: *mut RedisModuleCtx,
    argv: *mut *mut RedisModuleString,
    argc: c_int,
) -> c_int {
    // SAFETY: the server passes its context and argc live arguments.
    unsafe { write_pairs(ctx, argv, argc, true) }
}

/// Both commands; with `events`, the signals, the keyspace events and the change count.
///
/// # Safety
///
/// `ctx` is a command context and `argv` holds `argc` live strings.
unsafe fn write_pairs(
    ctx: *mut RedisModuleCtx,
    argv: *mut *mut RedisModuleString,
    argc: c_int,
    events: bool,
) -> c_int {
    let Some(api) = API.get() else {
        return ERR;
    };
    let argc = usize::try_from(argc).unwrap_or(0);
    if argc < 4 || argc % 2 != 0 {
        // SAFETY: ctx is the command's context.
        return unsafe { (api.wrong_arity)(ctx) };
    }
    // SAFETY: the server passes argc valid pointers, alive for the whole call.
    let args = unsafe { std::slice::from_raw_parts(argv, argc) };
    let mut seconds: c_longlong = 0;
    // SAFETY: args[1] is a live argument; seconds is a local.
    let parsed = unsafe { (api.string_to_long_long)(args[1], &mut seconds) };
    // SAFETY: no arguments: the clock in milliseconds, read once per call.
    let now = unsafe { (api.milliseconds)() };
    let deadline = seconds
        .checked_mul(1000)
        .filter(|_| parsed == OK && seconds > 0)
        .and_then(|ms| now.checked_add(ms).map(|at| (ms, at)));
    let Some((ttl_ms, at_ms)) = deadline else {
        // SAFETY: ctx is the command's context; the message is a static C string.
        return unsafe { (api.reply_with_error)(ctx, c"ERR invalid expire time".as_ptr()) };
    };
    let mode = (raw::REDISMODULE_READ | raw::REDISMODULE_WRITE) as c_int;
    for pair in args[2..].chunks_exact(2) {
        let (name, value) = (pair[0], pair[1]);
        // SAFETY: ctx is the command's context and name a live argument; with WRITE the server
        // returns a handle even for a missing key.
        let key = unsafe { (api.open_key)(ctx, name, mode) };
        if key.is_null() {
            // SAFETY: as above.
            return unsafe { (api.reply_with_error)(ctx, c"ERR cannot open the key".as_ptr()) };
        }
        // SAFETY: key is the handle just opened; value is a live argument.
        unsafe { write_one(api, key, value, ttl_ms, at_ms) };
        // SAFETY: key is open and closed once, here.
        unsafe { (api.close_key)(key) };
        if events {
            // SAFETY: ctx is the command's context; name is a live argument; the event names
            // are static C strings.
            unsafe {
                (api.signal_modified_key)(ctx, name);
                (api.notify_keyspace_event)(
                    ctx,
                    raw::REDISMODULE_NOTIFY_STRING,
                    c"set".as_ptr(),
                    name,
                );
                (api.notify_keyspace_event)(
                    ctx,
                    raw::REDISMODULE_NOTIFY_GENERIC,
                    c"expire".as_ptr(),
                    name,
                );
            }
        }
    }
    if events {
        let pairs = ((argc - 2) / 2) as c_longlong;
        // SAFETY: ctx is the command's context; "l" takes one long long, passed as c_longlong.
        let reply = unsafe { (api.call)(ctx, c"floor.count".as_ptr(), c"l".as_ptr(), pairs) };
        let failed = reply.is_null()
            // SAFETY: reply is a live reply of the call above.
            || unsafe { (api.call_reply_type)(reply) } == raw::REDISMODULE_REPLY_ERROR as c_int;
        if !reply.is_null() {
            // SAFETY: reply is freed once, here, and not used after.
            unsafe { (api.free_call_reply)(reply) };
        }
        if failed {
            // SAFETY: ctx is the command's context; the message is a static C string.
            return unsafe { (api.reply_with_error)(ctx, c"ERR floor.count failed".as_ptr()) };
        }
    }
    // SAFETY: ctx is the command's context; "OK" is a static C string.
    unsafe { (api.reply_with_simple_string)(ctx, c"OK".as_ptr()) }
}

/// One key: the value in place when the key holds a string of its exact length, else set; then
/// the deadline.
///
/// # Safety
///
/// `key` is open for reading and writing; `value` is a live string.
unsafe fn write_one(
    api: &Api,
    key: *mut RedisModuleKey,
    value: *mut RedisModuleString,
    ttl_ms: mstime_t,
    at_ms: mstime_t,
) {
    let mut length = 0usize;
    // SAFETY: value is live; the pointer stays valid while the argument does (the whole call).
    let bytes = unsafe { (api.string_ptr_len)(value, &mut length) };
    // SAFETY: key is open (both calls only read it).
    let same_length = length > 0
        && unsafe { (api.key_type)(key) } == raw::REDISMODULE_KEYTYPE_STRING as c_int
        && unsafe { (api.value_length)(key) } == length;
    let mut in_place = false;
    if same_length {
        let mut room = 0usize;
        // SAFETY: key is open for writing and holds a string; room is a local.
        let target = unsafe { (api.string_dma)(key, &mut room, raw::REDISMODULE_WRITE as c_int) };
        if !target.is_null() && room == length {
            // SAFETY: target points at `room` (= length) writable bytes of the key's value,
            // bytes at `length` readable bytes of the argument; they do not overlap (for
            // writing, StringDMA unshares a value the key shares with an argument).
            unsafe { std::ptr::copy_nonoverlapping(bytes, target, length) };
            in_place = true;
        }
    }
    if !in_place {
        // SAFETY: key is open for writing; value is live (the server takes its own reference).
        unsafe { (api.string_set)(key, value) };
    }
    match api.set_abs_expire {
        // SAFETY: key is open for writing and now holds a value.
        Some(set_abs_expire) => unsafe { set_abs_expire(key, at_ms) },
        // SAFETY: as above.
        None => unsafe { (api.set_expire)(key, ttl_ms) },
    };
}

/// `floor.count n`: n changes for RDB save points, as MSETEX counts them.
unsafe extern "C" fn floor_count(
    ctx: *mut RedisModuleCtx,
    argv: *mut *mut RedisModuleString,
    argc: c_int,
) -> c_int {
    let Some(api) = API.get() else {
        return ERR;
    };
    if argc != 2 {
        // SAFETY: ctx is the command's context.
        return unsafe { (api.wrong_arity)(ctx) };
    }
    let mut count: c_longlong = 0;
    // SAFETY: the server passes argc (2) live arguments; count is a local.
    let parsed = unsafe { (api.string_to_long_long)(*argv.add(1), &mut count) };
    if parsed != OK || count < 0 {
        // SAFETY: ctx is the command's context; the message is a static C string.
        return unsafe {
            (api.reply_with_error)(ctx, c"ERR count must be an integer >= 0".as_ptr())
        };
    }
    for _ in 0..count {
        // SAFETY: ctx is the command's context. Each call adds one change; what it queues is
        // dropped because floor.events calls this command without replication.
        unsafe { (api.replicate_verbatim)(ctx) };
    }
    // SAFETY: ctx is the command's context; "OK" is a static C string.
    unsafe { (api.reply_with_simple_string)(ctx, c"OK".as_ptr()) }
}
