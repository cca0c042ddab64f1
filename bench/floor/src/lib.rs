//! The module API's floor for MSETEX: bench tooling, not the product.
//!
//! `make bench-instr` loads this library (target/release/libmsetex_floor.so) beside libmsetex.so
//! and counts, in the same server as MSETEX, what the job costs through the module API, so that
//! MSETEX's distance from that floor can be stated and targeted (docs/bench-targets.txt):
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
//! - `floor.mset`, same arguments: SET's encodings (an integer as `int`, a short value embedded as
//!   SET embeds it), which no key-API write gives: the server's MSET of the pairs through
//!   `RedisModule_Call` (see `mset`), which fires `set`, signals the keys and counts the changes;
//!   then per key `RedisModule_OpenKey`, the deadline, `RedisModule_CloseKey`, the `expire` event.
//!
//! - Load arguments `[set | apply <command> | native <command>]`: what the three commands
//!   replicate ([`propagate`], all of it), as the module does in the bench's regime: nothing (no
//!   argument; the module while nobody listens), per key `SET key value PXAT ms` (REPLICATE SET),
//!   per call `<command> ms key value ...` (REPLICATE MSETEX: `<name>.apply`) or the built-in's
//!   `<command> n key value ... PXAT ms` (native). Each command replicated counts one change, so
//!   `floor.events` counts only the changes none counted.
//!
//! Validation is minimal (arity, integer seconds above 0): no slot, ACL, type or size checks; no
//! encoding rules outside `floor.mset` (`floor.bare` and `floor.events` store an integer as the
//! string it came as, and write a same-length value in place even where SET would embed it).
//! Module option `NO_IMPLICIT_SIGNAL_MODIFIED` is set at load (where the server knows it), so
//! closing a key does not signal it: `floor.events` signals each key once, `floor.bare` never.
//!
//! `unsafe` is allowed here: every module API call is one, each block says why it holds.

use std::ffi::{CStr, CString};
use std::ptr::null_mut;
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
            replicate: unsafe extern "C" fn(*mut RedisModuleCtx, *const c_char, *const c_char, ...) -> c_int,
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
                        replicate: raw::RedisModule_Replicate.ok_or("RedisModule_Replicate")?,
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
        create_string = RedisModule_CreateString: fn(*mut RedisModuleCtx, *const c_char, usize) -> *mut RedisModuleString;
        create_number = RedisModule_CreateStringFromLongLong: fn(*mut RedisModuleCtx, c_longlong) -> *mut RedisModuleString;
        free_string = RedisModule_FreeString: fn(*mut RedisModuleCtx, *mut RedisModuleString);
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

/// One pair of a nested MSET: the key, and the value's bytes and length (copied by the server).
type Pair = (*mut RedisModuleString, *const c_char, usize);

/// `RedisModule_Call(ctx, "MSET", format, pairs...)` for a chunk of 64, 32, ... or 1 pairs.
macro_rules! mset_chunk {
    ($api:expr, $ctx:expr, $format:expr, $chunk:expr; $( $size:literal => [$($i:literal)+] ),+) => {
        $( if let Ok(c) = <&[Pair; $size]>::try_from($chunk) {
            ($api.call)($ctx, c"MSET".as_ptr(), $format, $( c[$i].0, c[$i].1, c[$i].2, )+)
        } else )+ {
            null_mut()
        }
    };
}

/// Loads the module: `floor.bare`, `floor.events`, `floor.mset` and `floor.count`.
///
/// # Safety
///
/// Called by the server only, with its load context.
#[no_mangle]
pub unsafe extern "C" fn RedisModule_OnLoad(
    ctx: *mut RedisModuleCtx,
    argv: *mut *mut RedisModuleString,
    argc: c_int,
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
    let argc = usize::try_from(argc).unwrap_or(0);
    let arg = |i: usize| {
        let mut length = 0usize;
        // SAFETY: i < argc, a live argument of the load; its bytes live as long as it does.
        let bytes = unsafe { (api.string_ptr_len)(*argv.add(i), &mut length) };
        // SAFETY: StringPtrLen gives `length` readable bytes.
        unsafe { std::slice::from_raw_parts(bytes.cast::<u8>(), length) }.to_vec()
    };
    let form = match (argc > 0).then(|| arg(0)).as_deref() {
        None => None,
        Some(b"set") => Some(Propagate::Set),
        Some(b"apply") if argc == 2 => Some(Propagate::Apply),
        Some(b"native") if argc == 2 => Some(Propagate::Native),
        _ => return ERR,
    };
    let command = CString::new(if argc == 2 { arg(1) } else { Vec::new() });
    let _ = PROPAGATE.set(form.zip(command.ok()));
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
    let write = c"write deny-oom";
    let internal = c"readonly fast no-monitor no-slowlog allow-loading allow-stale";
    let commands: [(&CStr, raw::RedisModuleCmdFunc, &CStr, [c_int; 3]); 4] = [
        (c"floor.bare", Some(floor_bare), write, [2, -1, 2]),
        (c"floor.events", Some(floor_events), write, [2, -1, 2]),
        (c"floor.mset", Some(floor_mset), write, [2, -1, 2]),
        (c"floor.count", Some(floor_count), internal, [0, 0, 0]),
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

/// What a command of this module does per key beyond opening it and setting its deadline.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Floor {
    /// `floor.bare`: the value in place or set, nothing else.
    Bare,
    /// `floor.events`: the same, the signal, the events and the change count.
    Events,
    /// `floor.mset`: the value (and the signal, `set` and the count) by MSET first; `expire`.
    Mset,
}

/// The commands' entry points, each `name seconds key value [key value ...]`.
macro_rules! entry {
    ($($function:ident => $floor:expr),*) => {$(
        unsafe extern "C" fn $function(
            ctx: *mut RedisModuleCtx,
            argv: *mut *mut RedisModuleString,
            argc: c_int,
        ) -> c_int {
            // SAFETY: the server passes its context and argc live arguments.
            unsafe { write_pairs(ctx, argv, argc, $floor) }
        }
    )*};
}
entry!(floor_bare => Floor::Bare, floor_events => Floor::Events, floor_mset => Floor::Mset);

/// Every command: the pairs written as `floor` says, then each key's deadline.
///
/// # Safety
///
/// `ctx` is a command context and `argv` holds `argc` live strings.
unsafe fn write_pairs(
    ctx: *mut RedisModuleCtx,
    argv: *mut *mut RedisModuleString,
    argc: c_int,
    floor: Floor,
) -> c_int {
    let Some(api) = API.get() else {
        return ERR;
    };
    // SAFETY: as this function's.
    let (args, ttl_ms, at_ms) = match unsafe { parse(api, ctx, argv, argc) } {
        Ok(parsed) => parsed,
        Err(replied) => return replied,
    };
    // SAFETY: as this function's; args are argv's.
    if floor == Floor::Mset && !unsafe { mset(api, ctx, args) } {
        // SAFETY: ctx is the command's context; the message is a static C string.
        return unsafe { (api.reply_with_error)(ctx, c"ERR MSET failed".as_ptr()) };
    }
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
        if floor != Floor::Mset {
            // SAFETY: key is the handle just opened; value is a live argument.
            unsafe { write_value(api, key, value) };
        }
        // SAFETY: key is open for writing and holds a value; it is closed once, here.
        unsafe {
            match api.set_abs_expire {
                Some(set_abs_expire) => set_abs_expire(key, at_ms),
                None => (api.set_expire)(key, ttl_ms),
            };
            (api.close_key)(key);
        }
        let events: &[(c_int, &CStr)] = match floor {
            Floor::Bare => &[],
            Floor::Events => &[(STRING, c"set"), (GENERIC, c"expire")],
            Floor::Mset => &[(GENERIC, c"expire")],
        };
        if floor == Floor::Events {
            // SAFETY: ctx is the command's context; name is a live argument.
            unsafe { (api.signal_modified_key)(ctx, name) };
        }
        for (class, event) in events {
            // SAFETY: ctx is the command's context; name is a live argument; the event names
            // are static C strings.
            unsafe { (api.notify_keyspace_event)(ctx, *class, event.as_ptr(), name) };
        }
    }
    // SAFETY: as this function's; args are argv's.
    let counted = unsafe { propagate(api, ctx, &args[2..], at_ms) };
    if floor == Floor::Events && (args.len() - 2) / 2 > counted {
        let pairs = ((args.len() - 2) / 2 - counted) as c_longlong;
        // SAFETY: ctx is the command's context; "l" takes one long long, passed as c_longlong.
        let reply = unsafe { (api.call)(ctx, c"floor.count".as_ptr(), c"l".as_ptr(), pairs) };
        // SAFETY: reply is a live reply of the call above, or null.
        if !unsafe { succeeded(api, reply) } {
            // SAFETY: ctx is the command's context; the message is a static C string.
            return unsafe { (api.reply_with_error)(ctx, c"ERR floor.count failed".as_ptr()) };
        }
    }
    // SAFETY: ctx is the command's context; "OK" is a static C string.
    unsafe { (api.reply_with_simple_string)(ctx, c"OK".as_ptr()) }
}

const STRING: c_int = raw::REDISMODULE_NOTIFY_STRING as c_int;
const GENERIC: c_int = raw::REDISMODULE_NOTIFY_GENERIC as c_int;

/// Whether a nested call's reply is there and no error; frees it.
///
/// # Safety
///
/// `reply` is a live reply, or null.
unsafe fn succeeded(api: &Api, reply: *mut RedisModuleCallReply) -> bool {
    if reply.is_null() {
        return false;
    }
    // SAFETY: reply is live; it is freed once, here, and not used after.
    unsafe {
        let error = (api.call_reply_type)(reply) == raw::REDISMODULE_REPLY_ERROR as c_int;
        (api.free_call_reply)(reply);
        !error
    }
}

/// The arguments, the TTL and the deadline (ms) of a call, or the reply to a malformed one.
///
/// # Safety
///
/// `ctx` is a command context and `argv` holds `argc` live strings.
unsafe fn parse<'a>(
    api: &Api,
    ctx: *mut RedisModuleCtx,
    argv: *mut *mut RedisModuleString,
    argc: c_int,
) -> Result<(&'a [*mut RedisModuleString], mstime_t, mstime_t), c_int> {
    let argc = usize::try_from(argc).unwrap_or(0);
    if argc < 4 || argc % 2 != 0 {
        // SAFETY: ctx is the command's context.
        return Err(unsafe { (api.wrong_arity)(ctx) });
    }
    // SAFETY: the server passes argc valid pointers, alive for the whole call.
    let args = unsafe { std::slice::from_raw_parts(argv, argc) };
    let mut seconds: c_longlong = 0;
    // SAFETY: args[1] is a live argument; seconds is a local.
    let parsed = unsafe { (api.string_to_long_long)(args[1], &mut seconds) };
    // SAFETY: no arguments: the clock in milliseconds, read once per call.
    let now = unsafe { (api.milliseconds)() };
    seconds
        .checked_mul(1000)
        .filter(|_| parsed == OK && seconds > 0)
        .and_then(|ms| now.checked_add(ms).map(|at| (args, ms, at)))
        // SAFETY: ctx is the command's context; the message is a static C string.
        .ok_or_else(|| unsafe { (api.reply_with_error)(ctx, c"ERR invalid expire time".as_ptr()) })
}

/// The server's MSET of the pairs: one nested call sharing the arguments, or, when a value is an
/// integer, calls of 64, 32, ... 1 pairs whose values MSET copies (only a value the call does
/// not share is one MSET re-encodes, as SET does).
///
/// # Safety
///
/// `ctx` is a command context; `args` are its live arguments (pairs from the third).
unsafe fn mset(api: &Api, ctx: *mut RedisModuleCtx, args: &[*mut RedisModuleString]) -> bool {
    let integer = |value: &*mut RedisModuleString| {
        let mut number: c_longlong = 0;
        // SAFETY: the value is live; number is a local.
        unsafe { (api.string_to_long_long)(*value, &mut number) == OK }
    };
    let pairs = &args[2..];
    if !pairs.iter().skip(1).step_by(2).any(integer) {
        let argv = pairs.as_ptr().cast_mut();
        // SAFETY: "v" takes an array of live strings (read only) and its length.
        return unsafe {
            succeeded(
                api,
                (api.call)(ctx, c"MSET".as_ptr(), c"v".as_ptr(), argv, pairs.len()),
            )
        };
    }
    let copied: Vec<Pair> = pairs
        .chunks_exact(2)
        .map(|pair| {
            let mut length = 0usize;
            // SAFETY: the value is live for the whole call, and so is the pointer.
            let bytes = unsafe { (api.string_ptr_len)(pair[1], &mut length) };
            (pair[0], bytes, length)
        })
        .collect();
    let mut rest = copied.as_slice();
    while !rest.is_empty() {
        let (chunk, more) = rest.split_at(1 << rest.len().min(64).ilog2());
        rest = more;
        let Ok(format) = CString::new("sb".repeat(chunk.len())) else {
            return false;
        };
        // SAFETY: per pair "s" (a live key) and "b" (live bytes, their length), as the format says.
        let reply = unsafe {
            mset_chunk!(api, ctx, format.as_ptr(), chunk;
                64 => [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
                       32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63],
                32 => [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31],
                16 => [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15],
                8 => [0 1 2 3 4 5 6 7],
                4 => [0 1 2 3],
                2 => [0 1],
                1 => [0])
        };
        // SAFETY: reply is the live reply of the call above, or null.
        if !unsafe { succeeded(api, reply) } {
            return false;
        }
    }
    true
}

/// One key's value: in place when the key holds a string of its exact length, else set.
///
/// # Safety
///
/// `key` is open for reading and writing; `value` is a live string.
unsafe fn write_value(api: &Api, key: *mut RedisModuleKey, value: *mut RedisModuleString) {
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
}

/// What the commands replicate (the load arguments): (form, the command of a call's form).
static PROPAGATE: OnceLock<Option<(Propagate, CString)>> = OnceLock::new();

#[derive(Clone, Copy, PartialEq, Eq)]
enum Propagate {
    Set,
    Apply,
    Native,
}

/// Replicates a call's `pairs` (deadline `at_ms`) as the load arguments say; returns how many
/// changes that counted (one per command).
///
/// # Safety
///
/// `ctx` is a command context; `pairs` are its live arguments.
unsafe fn propagate(
    api: &Api,
    ctx: *mut RedisModuleCtx,
    pairs: &[*mut RedisModuleString],
    at_ms: mstime_t,
) -> usize {
    let Some(Some((form, command))) = PROPAGATE.get() else {
        return 0;
    };
    let (vector, n, at) = (pairs.as_ptr().cast_mut(), pairs.len(), at_ms as c_longlong);
    let (pxat, keys) = (c"PXAT".as_ptr(), (n / 2) as c_longlong);
    // SAFETY: ctx is the command's context; the formats match their arguments ("s" live strings,
    // "v" an array of n live strings and its length, "l" a long long, "c" a static C string;
    // what follows a format's last is not read); the tail strings are made here and freed once,
    // after their last use.
    unsafe {
        let (format, first) = match form {
            Propagate::Apply => (c"lv", at),
            Propagate::Native => (c"lvcl", keys),
            Propagate::Set => {
                let tail = [
                    (api.create_string)(ctx, pxat, 4),
                    (api.create_number)(ctx, at),
                ];
                let (set, ssv, rest) = (c"SET".as_ptr(), c"ssv".as_ptr(), tail.as_ptr().cast_mut());
                for pair in pairs.chunks_exact(2) {
                    (api.replicate)(ctx, set, ssv, pair[0], pair[1], rest, 2usize);
                }
                let _ = tail.map(|string| (api.free_string)(ctx, string));
                return n / 2;
            }
        };
        (api.replicate)(
            ctx,
            command.as_ptr(),
            format.as_ptr(),
            first,
            vector,
            n,
            pxat,
            at,
        );
    }
    1
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
