//! Safe views of one command call: its context, arguments and keys.

use std::ffi::{CStr, CString};
use std::marker::PhantomData;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};

use libc::{c_char, c_int, c_longlong};
use redis_module::raw::{
    self, RedisModuleCallReply, RedisModuleCtx, RedisModuleKey, RedisModuleString,
};

use super::{log, sds, Api, LogLevel, API, ERR, OK};

/// One pair of an MSET call with fresh values: key, value bytes, length.
type FreshPair = (*mut RedisModuleString, *const c_char, usize);

/// Calls `$command` with `$head` (a vector of module strings), the pairs of
/// `chunk` (a slice of [`FreshPair`]) and `$tail` (a vector) when its length
/// is one of the listed sizes, each with the argument indexes it passes: the
/// format is "v", "sb" per pair, "v", so the variadic list must be spelled
/// out per size.
macro_rules! call_fixed {
    ($ctx:expr, $command:expr, $format:expr, $head:expr, $chunk:expr, $tail:expr;
     $( $size:literal => [$($i:literal)+] ),+) => {
        match $chunk.len() {
            $( $size => match <&[FreshPair; $size]>::try_from($chunk) {
                Ok(c) => ($ctx.api.call)(
                    $ctx.raw,
                    $command,
                    $format,
                    $head.0,
                    $head.1,
                    $( c[$i].0, c[$i].1, c[$i].2, )+
                    $tail.0,
                    $tail.1,
                ),
                Err(_) => std::ptr::null_mut(),
            }, )+
            _ => std::ptr::null_mut(),
        }
    };
}

/// The server calls this for every MSETEX. It builds the safe views and
/// turns a panic (a bug) into an error reply instead of aborting the server.
pub(super) unsafe extern "C" fn msetex_entry(
    ctx: *mut RedisModuleCtx,
    argv: *mut *mut RedisModuleString,
    argc: c_int,
) -> c_int {
    let Some(call) = Ctx::of(ctx) else {
        return ERR;
    };
    // SAFETY: the server passes argc live argument strings for this call.
    let args = || unsafe { call.args(argv, argc) };
    // SAFETY: ctx is the context of this call.
    if unsafe { (call.api.is_keys_position_request)(ctx) } != 0 {
        // The server only wants to know where the keys are (cluster slot,
        // ACL and COMMAND GETKEYS checks): this context has no client.
        let _ = catch_unwind(AssertUnwindSafe(|| {
            crate::command::declare_keys(
                &KeyPositions {
                    raw: ctx,
                    api: call.api,
                },
                &args(),
            )
        }));
        return OK;
    }
    call.run(&args(), crate::command::msetex)
}

/// The server calls this for `<name>.apply`, the form in which REPLICATE
/// MSETEX replicates a call (no getkeys callback: its keys are where its key
/// specification says).
pub(super) unsafe extern "C" fn apply_entry(
    ctx: *mut RedisModuleCtx,
    argv: *mut *mut RedisModuleString,
    argc: c_int,
) -> c_int {
    let Some(call) = Ctx::of(ctx) else {
        return ERR;
    };
    // SAFETY: the server passes argc live argument strings for this call.
    let args = unsafe { call.args(argv, argc) };
    call.run(&args, crate::command::apply)
}

/// The server calls this for `<name>.unroutable` (no keys, never routed).
pub(super) unsafe extern "C" fn unroutable_entry(
    ctx: *mut RedisModuleCtx,
    _argv: *mut *mut RedisModuleString,
    _argc: c_int,
) -> c_int {
    let Some(call) = Ctx::of(ctx) else {
        return ERR;
    };
    call.run(&[], crate::command::unroutable)
}

/// True only while MSETEX itself calls its changes counter (see
/// [`Ctx::count_changes_silently`]); a client calling it gets an error.
static COUNTER_ARMED: AtomicBool = AtomicBool::new(false);

/// `<name>.changes n`, registered with REPLICATE MSETEX: counts `n` changes
/// for RDB save points. MSETEX calls it without replication, so the
/// server drops what RedisModule_ReplicateVerbatim would send.
pub(super) unsafe extern "C" fn changes_entry(
    ctx: *mut RedisModuleCtx,
    argv: *mut *mut RedisModuleString,
    argc: c_int,
) -> c_int {
    let Some(call) = Ctx::of(ctx) else {
        return ERR;
    };
    if !COUNTER_ARMED.load(Ordering::Relaxed) || argc != 2 || argv.is_null() {
        return call.reply(Reply::Error(
            c"ERR this command is internal to MSETEX".to_owned(),
        ));
    }
    // SAFETY: argc is 2, so argv holds two live argument strings.
    let count = call.arg(unsafe { *argv.add(1) });
    let count = crate::parse::parse_i64(count.bytes()).unwrap_or(0);
    for _ in 0..count {
        // SAFETY: ctx is this call's context; always returns OK.
        unsafe { (call.api.replicate_verbatim)(ctx) };
    }
    call.reply(Reply::Ok)
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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventClass {
    /// `$`: string commands (`set`).
    String,
    /// `g`: generic commands (`expire`, `del`).
    Generic,
    /// `o` (Redis 8.2+): a key's value was replaced (`overwritten`).
    Overwritten,
}

/// What an open key holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Contents {
    /// The key does not exist.
    Nothing,
    /// A string of this length.
    String(usize),
    /// Another type.
    Other,
}

/// Whether opening a key counts as an access (LRU/LFU), as a lookup by a
/// command does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Touch {
    Yes,
    No,
}

/// The server state a call depends on, read once per call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextFlags {
    /// The AOF is on (or being turned on).
    pub aof: bool,
    /// The call came over the replication link.
    pub replicated: bool,
    /// The server is loading (the AOF replays this call).
    pub loading: bool,
    /// The server is a replica.
    pub replica: bool,
    /// A child process (RDB or AOF rewrite) runs: key lookups do not touch
    /// keys meanwhile.
    pub active_child: bool,
}

impl<'call> Ctx<'call> {
    /// The context of a command the server is calling back; `None` before
    /// the module API was looked up (never, once loaded).
    pub(super) fn of(raw: *mut RedisModuleCtx) -> Option<Ctx<'call>> {
        API.get().map(|api| Ctx {
            raw,
            api,
            _call: PhantomData,
        })
    }

    /// The arguments of a command call.
    ///
    /// # Safety
    ///
    /// `argv` holds `argc` live argument strings that outlive the call (the
    /// server's argv while the command runs), or is NULL.
    unsafe fn args(&self, argv: *mut *mut RedisModuleString, argc: c_int) -> Vec<Arg<'call>> {
        let argc = usize::try_from(argc).unwrap_or(0);
        if argv.is_null() || argc == 0 {
            return Vec::new();
        }
        // SAFETY: the caller's contract; Arg borrows them for no longer
        // than the call.
        let raw_args = unsafe { std::slice::from_raw_parts(argv, argc) };
        raw_args.iter().map(|&ptr| self.arg(ptr)).collect()
    }

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

    /// The server's clock in unix milliseconds.
    pub fn now_ms(&self) -> i64 {
        // SAFETY: no arguments; reads the server clock.
        unsafe { (self.api.milliseconds)() }
    }

    fn flags_raw(&self) -> c_int {
        // SAFETY: ctx is the live command context; the call only reads state.
        unsafe { (self.api.get_context_flags)(self.raw) }
    }

    pub fn flags(&self) -> ContextFlags {
        let flags = self.flags_raw();
        let has = |flag: u32| flags & flag as c_int != 0;
        ContextFlags {
            aof: has(raw::REDISMODULE_CTX_FLAGS_AOF),
            replicated: has(raw::REDISMODULE_CTX_FLAGS_REPLICATED),
            loading: has(raw::REDISMODULE_CTX_FLAGS_LOADING)
                || has(raw::REDISMODULE_CTX_FLAGS_ASYNC_LOADING),
            replica: has(raw::REDISMODULE_CTX_FLAGS_SLAVE),
            active_child: has(raw::REDISMODULE_CTX_FLAGS_ACTIVE_CHILD),
        }
    }

    /// Opens `key` for writing (a write command's lookup: no hit/miss
    /// statistics, logically expired keys removed). The handle closes on drop.
    pub fn open_key(&self, key: Arg<'call>, touch: Touch) -> Option<Key<'call>> {
        let mut mode = raw::REDISMODULE_READ as c_int | raw::REDISMODULE_WRITE as c_int;
        if touch == Touch::No {
            mode |= raw::REDISMODULE_OPEN_KEY_NOTOUCH as c_int;
        }
        // SAFETY: ctx and key are live for this call; the handle is closed by Key::drop.
        let handle = unsafe { (self.api.open_key)(self.raw, key.ptr, mode) };
        (!handle.is_null()).then_some(Key {
            raw: handle,
            api: self.api,
            _ctx: PhantomData,
        })
    }

    /// Runs the server's own `command [numkeys] key value ... tail...` on
    /// `flat` (keys and values alternating), without replicating it: MSET,
    /// or the built-in MSETEX (`numkeys`: the pair count goes first). It
    /// stores each value as SET would (`int`, shared integers, embedded
    /// strings), fires SET's events and signals each key. False if it failed.
    ///
    /// The server can only re-encode a value (into `int`) when it holds the
    /// value object alone, so `fresh_values` passes copies of the values,
    /// made by the server for the call (`b` format, in calls of fixed size);
    /// otherwise the argument objects themselves are passed, already in
    /// SET's encoding.
    pub fn call_with_pairs(
        &self,
        command: &CStr,
        numkeys: bool,
        flat: &[Arg<'call>],
        fresh_values: bool,
        tail: &[OwnedString],
    ) -> bool {
        let mut tail_ptrs: Vec<*mut RedisModuleString> = tail.iter().map(|s| s.ptr).collect();
        let head = |pairs: usize| -> Option<Vec<OwnedString>> {
            if numkeys {
                Some(vec![self.string_from_i64(pairs as i64)?])
            } else {
                Some(Vec::new())
            }
        };
        if !fresh_values {
            let Some(head) = head(flat.len() / 2) else {
                return false;
            };
            let mut argv: Vec<*mut RedisModuleString> = head.iter().map(|s| s.ptr).collect();
            argv.extend(flat.iter().map(|arg| arg.ptr));
            argv.extend_from_slice(&tail_ptrs);
            // SAFETY: format "v" takes an array of module strings and its
            // length; every string is live for the call.
            let reply = unsafe {
                (self.api.call)(
                    self.raw,
                    command.as_ptr(),
                    c"v".as_ptr(),
                    argv.as_mut_ptr(),
                    argv.len(),
                )
            };
            return self.reply_is_ok(reply);
        }
        let pairs: Vec<FreshPair> = flat
            .chunks_exact(2)
            .filter_map(|pair| match pair {
                [key, value] => Some((key.ptr, value.bytes.as_ptr().cast(), value.bytes.len())),
                _ => None,
            })
            .collect();
        let mut rest = pairs.as_slice();
        while !rest.is_empty() {
            let size = [64, 32, 16, 8, 4, 2, 1]
                .into_iter()
                .find(|size| *size <= rest.len())
                .unwrap_or(1);
            let (chunk, more) = rest.split_at(size.min(rest.len()));
            rest = more;
            let Ok(format) = CString::new(format!("v{}v", "sb".repeat(chunk.len()))) else {
                return false;
            };
            let Some(head) = head(chunk.len()) else {
                return false;
            };
            let mut head_ptrs: Vec<*mut RedisModuleString> = head.iter().map(|s| s.ptr).collect();
            let head_vector = (head_ptrs.as_mut_ptr(), head_ptrs.len());
            let tail_vector = (tail_ptrs.as_mut_ptr(), tail_ptrs.len());
            // SAFETY: every arm passes a vector of live module strings with
            // its length, then per pair a live module string and a buffer
            // with its length, then another vector: "v", "sb" per pair, "v".
            let reply = unsafe {
                call_fixed!(self, command.as_ptr(), format.as_ptr(), head_vector, chunk, tail_vector;
                    64 => [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
                           32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63],
                    32 => [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31],
                    16 => [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15],
                    8 => [0 1 2 3 4 5 6 7],
                    4 => [0 1 2 3],
                    2 => [0 1],
                    1 => [0])
            };
            if !self.reply_is_ok(reply) {
                return false;
            }
        }
        true
    }

    /// Opens `key` only to look at it, with no effect a client could see
    /// (no access counted, no keyspace hit or miss, no `keymiss` event);
    /// `None` when it does not exist. Closing it signals nothing.
    pub fn open_key_to_read(&self, key: Arg<'call>) -> Option<Key<'call>> {
        let mode = raw::REDISMODULE_READ as c_int
            | raw::REDISMODULE_OPEN_KEY_NOTOUCH as c_int
            | raw::REDISMODULE_OPEN_KEY_NOSTATS as c_int
            | raw::REDISMODULE_OPEN_KEY_NONOTIFY as c_int;
        // SAFETY: ctx and key are live for this call; closed by Key::drop.
        let handle = unsafe { (self.api.open_key)(self.raw, key.ptr, mode) };
        (!handle.is_null()).then_some(Key {
            raw: handle,
            api: self.api,
            _ctx: PhantomData,
        })
    }

    /// Frees a call reply; true when there was one and it is not an error.
    fn reply_is_ok(&self, reply: *mut RedisModuleCallReply) -> bool {
        if reply.is_null() {
            return false;
        }
        // SAFETY: reply is a live call reply owned by us until freed below.
        let kind = unsafe { (self.api.call_reply_type)(reply) };
        // SAFETY: freed exactly once, not used afterwards.
        unsafe { (self.api.free_call_reply)(reply) };
        kind != raw::REDISMODULE_REPLY_ERROR as c_int
    }

    /// Queues `SET key value <tail...>` for replicas and the AOF. The server
    /// wraps several of them from one call in MULTI/EXEC.
    /// `tail` is what follows the value (`PXAT ms`, `KEEPTTL` or nothing):
    /// at most two strings, passed without allocating (once per key).
    pub fn replicate_set(&self, key: Arg<'call>, value: Arg<'call>, tail: &[OwnedString]) -> bool {
        let mut ptrs = [std::ptr::null_mut::<RedisModuleString>(); 2];
        if tail.len() > ptrs.len() {
            return false; // never cut a command short on the wire
        }
        for (slot, string) in ptrs.iter_mut().zip(tail) {
            *slot = string.ptr;
        }
        let len = tail.len();
        // SAFETY: format "ssv" matches two live module strings and an array
        // of live module strings with its length; the server takes its own
        // references.
        let status = unsafe {
            (self.api.replicate)(
                self.raw,
                c"SET".as_ptr(),
                c"ssv".as_ptr(),
                key.ptr,
                value.ptr,
                ptrs.as_mut_ptr(),
                len,
            )
        };
        status == OK
    }

    /// Queues `DEL key` (or `UNLINK key`) for replicas and the AOF.
    pub fn replicate_delete(&self, key: Arg<'call>, unlink: bool) -> bool {
        let command = if unlink { c"UNLINK" } else { c"DEL" };
        // SAFETY: format "s" matches one live module string.
        let status =
            unsafe { (self.api.replicate)(self.raw, command.as_ptr(), c"s".as_ptr(), key.ptr) };
        status == OK
    }

    /// Queues `name head... pairs... tail...` for replicas and the AOF (and a
    /// running slot migration): one command, the arguments passed as they are.
    pub fn replicate_command(
        &self,
        name: &CStr,
        head: &[OwnedString],
        pairs: &[Arg<'call>],
        tail: &[OwnedString],
    ) -> bool {
        let mut argv: Vec<*mut RedisModuleString> =
            Vec::with_capacity(head.len() + pairs.len() + tail.len());
        argv.extend(head.iter().map(|s| s.ptr));
        argv.extend(pairs.iter().map(|a| a.ptr));
        argv.extend(tail.iter().map(|s| s.ptr));
        // SAFETY: format "v" matches an array of live module strings and its
        // length; the server takes its own references.
        let status = unsafe {
            (self.api.replicate)(
                self.raw,
                name.as_ptr(),
                c"v".as_ptr(),
                argv.as_mut_ptr(),
                argv.len(),
            )
        };
        status == OK
    }

    /// Counts one change for RDB save points (`server.dirty`) without
    /// queueing anything. Only call it when [`crate::propagation`] proved
    /// that nothing receives replicated commands: the server then drops the
    /// verbatim command before it reaches any stream.
    pub fn count_change(&self) {
        // SAFETY: ctx is the live command context. Always returns OK.
        unsafe { (self.api.replicate_verbatim)(self.raw) };
    }

    /// Counts `n` changes for RDB save points without replicating anything,
    /// whoever listens: through the module's `<name>.changes` command, run
    /// without replication (the server drops what it queues).
    pub fn count_changes_silently(&self, n: usize) -> bool {
        let Some(module) = crate::config::get() else {
            return false;
        };
        let Some(counter) = module.counter_c.as_ref() else {
            return false;
        };
        COUNTER_ARMED.store(true, Ordering::Relaxed);
        // SAFETY: format "l" matches one long long; counter is a C string.
        let reply =
            unsafe { (self.api.call)(self.raw, counter.as_ptr(), c"l".as_ptr(), n as c_longlong) };
        COUNTER_ARMED.store(false, Ordering::Relaxed);
        self.reply_is_ok(reply)
    }

    /// Tells WATCH and client-side caching that `key` changed. The module
    /// turns off the implicit signal on closing a key (see
    /// [`super::set_module_options`]) so that keys it only looks at stay quiet.
    pub fn signal_modified(&self, key: Arg<'call>) {
        // SAFETY: ctx and key are live for the call; always returns OK.
        unsafe { (self.api.signal_modified_key)(self.raw, key.ptr) };
    }

    /// Fires a keyspace notification for `key`, as the server's commands do.
    pub fn notify(&self, class: EventClass, event: &CStr, key: Arg<'call>) {
        let class = match class {
            EventClass::String => raw::REDISMODULE_NOTIFY_STRING,
            EventClass::Generic => raw::REDISMODULE_NOTIFY_GENERIC,
            EventClass::Overwritten => raw::REDISMODULE_NOTIFY_OVERWRITTEN,
        };
        // SAFETY: ctx, event (NUL-terminated) and key are live for the call.
        // The return value only reports a missing client, which a command
        // context always has.
        unsafe { (self.api.notify_keyspace_event)(self.raw, class, event.as_ptr(), key.ptr) };
    }

    /// Whether the calling client's user may run the command `args` (all of
    /// it: the command and every key, in one selector, as the server checks
    /// it), through the module ACL API (Redis 7.0+). A refusal is written to
    /// the ACL log (reason `command`, or `key` with the first key in `keys`
    /// that no selector lets the user write), as the server's own. Clients
    /// without a user (the replication link, another module's RM_Call) may
    /// run anything, as for the server; so does every client where the API
    /// is missing (the caller only asks where it exists).
    pub fn acl_verdict(
        &self,
        command: &CStr,
        args: &[Arg<'call>],
        keys: &[Arg<'call>],
    ) -> AclVerdict {
        let api = self.api;
        let (Some(by_id), Some(from_name), Some(check), Some(free_user)) = (
            api.get_client_user_name_by_id,
            api.get_module_user_from_user_name,
            api.acl_check_command_permissions,
            api.free_module_user,
        ) else {
            return AclVerdict::Allowed;
        };
        // SAFETY: ctx is the live command context.
        let id = unsafe { (api.get_client_id)(self.raw) };
        // SAFETY: the returned string (or NULL) is ours to free.
        let mut name = OwnedString::new(unsafe { by_id(self.raw, id) }, api);
        if name.is_none() {
            let no_user = std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOTSUP);
            let script = self.flags_raw() & raw::REDISMODULE_CTX_FLAGS_LUA as c_int != 0;
            // A script's client is not in the client index, but it has the
            // user of the client that runs the script; an RM_Call client
            // has none (asking for its user's name would crash 7.0).
            if no_user || !script {
                return AclVerdict::Allowed;
            }
            if let Some(current) = api.get_current_user_name {
                // SAFETY: a script client has a user; the string is ours.
                name = OwnedString::new(unsafe { current(self.raw) }, api);
            }
        }
        let Some(name) = name else {
            return AclVerdict::Allowed;
        };
        // SAFETY: name is a live string; the user (or NULL) is ours to free.
        let user = unsafe { from_name(name.ptr) };
        if user.is_null() {
            return AclVerdict::DeniedCommand; // the user was deleted meanwhile
        }
        let run = |argv: &[Arg<'call>]| {
            let mut ptrs: Vec<*mut RedisModuleString> = argv.iter().map(|a| a.ptr).collect();
            let argc = c_int::try_from(ptrs.len()).unwrap_or(0);
            // SAFETY: user is live; ptrs holds argc live strings.
            unsafe { check(user, ptrs.as_mut_ptr(), argc) == OK }
        };
        let verdict = if run(args) {
            AclVerdict::Allowed
        } else if !run(args.get(..1).unwrap_or_default()) {
            AclVerdict::DeniedCommand
        } else {
            let writable = |key: &Arg<'call>| {
                api.acl_check_key_permissions.is_none_or(|check_key| {
                    // SAFETY: user and key are live.
                    unsafe {
                        check_key(user, key.ptr, raw::REDISMODULE_CMD_KEY_UPDATE as c_int) == OK
                    }
                })
            };
            let index = keys.iter().position(|k| !writable(k)).unwrap_or(0);
            AclVerdict::DeniedKey(index)
        };
        // The command as the server names it (not as the client typed it).
        let name = self.string(command.to_bytes());
        let object = match verdict {
            AclVerdict::Allowed => None,
            AclVerdict::DeniedCommand => name.as_ref().map(|n| {
                (
                    n.ptr,
                    raw::RedisModuleACLLogEntryReason_REDISMODULE_ACL_LOG_CMD,
                )
            }),
            AclVerdict::DeniedKey(index) => keys.get(index).map(|k| {
                (
                    k.ptr,
                    raw::RedisModuleACLLogEntryReason_REDISMODULE_ACL_LOG_KEY,
                )
            }),
        };
        if let (Some(add_entry), Some((object, reason))) = (api.acl_add_log_entry, object) {
            // SAFETY: ctx, user and object are live; the server copies them.
            unsafe { add_entry(self.raw, user, object, reason) };
        }
        // SAFETY: freed exactly once, not used afterwards.
        unsafe { free_user(user) };
        verdict
    }

    /// Runs a server command through the module API (as the module, with no
    /// user: nothing is checked against ACLs) and returns its reply.
    pub fn call(&self, command: &CStr, args: &[&[u8]]) -> Option<CallValue> {
        let strings: Vec<OwnedString> =
            args.iter().map(|a| self.string(a)).collect::<Option<_>>()?;
        let mut ptrs: Vec<*mut RedisModuleString> = strings.iter().map(|s| s.ptr).collect();
        // SAFETY: format "v" matches an array of live module strings and its
        // length; the reply is ours until freed below.
        let reply = unsafe {
            (self.api.call)(
                self.raw,
                command.as_ptr(),
                c"v".as_ptr(),
                ptrs.as_mut_ptr(),
                ptrs.len(),
            )
        };
        if reply.is_null() {
            return None;
        }
        // SAFETY: reply is live until freed just below.
        let value = unsafe { call_value(self.api, reply, 0) };
        // SAFETY: freed exactly once, not used afterwards.
        unsafe { (self.api.free_call_reply)(reply) };
        Some(value)
    }

    /// True when the config `name` is `yes` (CONFIG GET through the server).
    pub fn config_is_yes(&self, name: &CStr) -> bool {
        self.config(name).is_some_and(|value| value == "yes")
    }

    /// The value of the config `name` (CONFIG GET through the server).
    pub fn config(&self, name: &CStr) -> Option<String> {
        config_get(self.raw, self.api, name)
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

    /// Runs a command handler, turning a panic (a bug) into an error reply
    /// instead of aborting the server.
    fn run(&self, args: &[Arg<'call>], handler: fn(&Ctx<'call>, &[Arg<'call>]) -> Reply) -> c_int {
        match catch_unwind(AssertUnwindSafe(|| handler(self, args))) {
            Ok(reply) => self.reply(reply),
            Err(_) => {
                log(
                    self.raw,
                    LogLevel::Warning,
                    "msetex: internal error (panic caught), see issue tracker",
                );
                self.reply(Reply::Error(c"ERR msetex internal error".to_owned()))
            }
        }
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

/// What the module ACL API says about the calling user and one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AclVerdict {
    Allowed,
    /// No selector allows the command itself.
    DeniedCommand,
    /// A selector allows the command, none the keys: the index of the key
    /// reported (the first one no selector lets the user write).
    DeniedKey(usize),
}

/// A reply of [`Ctx::call`], copied out of the server's reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallValue {
    Text(Vec<u8>),
    Integer(i64),
    Array(Vec<CallValue>),
    Error(String),
    Nil,
}

/// Copies a call reply (nested arrays at most 8 deep, as the replies the
/// module reads are).
///
/// # Safety
///
/// `reply` is a live call reply.
unsafe fn call_value(api: &Api, reply: *mut RedisModuleCallReply, depth: usize) -> CallValue {
    // SAFETY: reply is live (the caller's contract).
    let kind = unsafe { (api.call_reply_type)(reply) };
    let text = || {
        // SAFETY: as above.
        let text = unsafe { reply_text(api, reply) };
        text.unwrap_or_default()
    };
    match kind as isize {
        raw::REDISMODULE_REPLY_STRING => CallValue::Text(text().into_bytes()),
        raw::REDISMODULE_REPLY_ERROR => CallValue::Error(text()),
        // SAFETY: as above, an integer reply.
        raw::REDISMODULE_REPLY_INTEGER => {
            CallValue::Integer(unsafe { (api.call_reply_integer)(reply) })
        }
        raw::REDISMODULE_REPLY_ARRAY if depth < 8 => {
            // SAFETY: as above; the elements belong to the reply.
            let len = unsafe { (api.call_reply_length)(reply) };
            let items = (0..len)
                .map(|i| {
                    // SAFETY: i < len; the element is live while reply is.
                    let item = unsafe { (api.call_reply_array_element)(reply, i) };
                    if item.is_null() {
                        CallValue::Nil
                    } else {
                        // SAFETY: item is live.
                        unsafe { call_value(api, item, depth + 1) }
                    }
                })
                .collect();
            CallValue::Array(items)
        }
        _ => CallValue::Nil,
    }
}

/// `CONFIG GET name` through the server: the value, if it has one.
pub(super) fn config_get(ctx: *mut RedisModuleCtx, api: &Api, name: &CStr) -> Option<String> {
    // SAFETY: format "cc" matches two C strings; ctx is a live context.
    let reply = unsafe {
        (api.call)(
            ctx,
            c"CONFIG".as_ptr(),
            c"cc".as_ptr(),
            c"GET".as_ptr(),
            name.as_ptr(),
        )
    };
    if reply.is_null() {
        return None;
    }
    // The reply is [name, value] (a map of one entry in RESP3).
    // SAFETY: reply is live until freed below; elements belong to it.
    let value = unsafe {
        let value = if (api.call_reply_length)(reply) >= 2 {
            (api.call_reply_array_element)(reply, 1)
        } else {
            std::ptr::null_mut()
        };
        reply_text(api, value)
    };
    // SAFETY: freed exactly once, not used afterwards.
    unsafe { (api.free_call_reply)(reply) };
    value
}

/// The text of a string call reply, copied.
///
/// # Safety
///
/// `reply` is NULL or a live call reply.
pub(super) unsafe fn reply_text(api: &Api, reply: *mut RedisModuleCallReply) -> Option<String> {
    if reply.is_null() {
        return None;
    }
    let mut len = 0usize;
    // SAFETY: reply is live (caller's contract); the pointer it returns is
    // owned by the reply, which outlives this copy.
    let ptr: *const c_char = unsafe { (api.call_reply_string_ptr)(reply, &mut len) };
    if ptr.is_null() {
        return None;
    }
    // SAFETY: ptr points at len readable bytes owned by the reply.
    let bytes = unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) };
    Some(String::from_utf8_lossy(bytes).into_owned())
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
        // SAFETY: created with a NULL ctx (or handed to us by the server to
        // free), so we hold the only reference we must release, exactly once.
        unsafe { (self.free)(std::ptr::null_mut(), self.ptr) };
    }
}

/// A key opened for writing, closed on drop. Closing does not signal the
/// key as modified: writers call [`Ctx::signal_modified`].
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

    /// What the key holds, with one type lookup.
    pub fn contents(&self) -> Contents {
        // SAFETY: raw is an open key handle.
        let kind = unsafe { (self.api.key_type)(self.raw) };
        if kind == raw::REDISMODULE_KEYTYPE_EMPTY as c_int {
            Contents::Nothing
        } else if kind == raw::REDISMODULE_KEYTYPE_STRING as c_int {
            // SAFETY: raw is an open key handle holding a string.
            Contents::String(unsafe { (self.api.value_length)(self.raw) })
        } else {
            Contents::Other
        }
    }

    /// How the string value's buffer is allocated, read from its header
    /// (see [`sds`]), after making the value a private raw string (copying
    /// it if shared or encoded, which changes nothing a client sees); `None`
    /// when it is not a non-empty string of `len` bytes.
    pub fn buffer(&mut self, len: usize) -> Option<sds::Allocation> {
        let mut found = 0usize;
        // SAFETY: raw is an open key handle; DMA in write mode first makes the
        // value a private raw string.
        let dst =
            unsafe { (self.api.string_dma)(self.raw, &mut found, raw::REDISMODULE_WRITE as c_int) };
        if dst.is_null() || found != len || len == 0 {
            return None;
        }
        // SAFETY: dst is the DMA buffer of this live string value, len bytes.
        Some(unsafe { sds::allocation(dst, len) })
    }

    /// Writes `bytes` over the string value in place, keeping the key's
    /// dictionary entry and TTL entry; false (nothing written) unless the
    /// value holds exactly as many bytes.
    pub fn overwrite(&mut self, bytes: &[u8]) -> bool {
        let mut len = 0usize;
        // SAFETY: raw is an open key handle; DMA in write mode makes the
        // value private (it already is, after `buffer`).
        let dst =
            unsafe { (self.api.string_dma)(self.raw, &mut len, raw::REDISMODULE_WRITE as c_int) };
        if dst.is_null() || len != bytes.len() || len == 0 {
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

    /// Sets the TTL to `ms` from the server's clock for commands (its command
    /// time snapshot where it has one, as SET uses) and returns the absolute
    /// deadline that gives.
    pub fn expire_in(&mut self, ms: i64) -> Option<i64> {
        // SAFETY: raw is an open write handle on an existing key.
        if unsafe { (self.api.set_expire)(self.raw, ms) } != OK {
            return None;
        }
        self.deadline()
    }

    /// Sets the key's absolute expiry time in unix milliseconds.
    pub fn expire_at(&mut self, deadline_ms: i64) -> bool {
        // SAFETY: raw is an open write handle.
        unsafe { (self.api.set_abs_expire)(self.raw, deadline_ms) == OK }
    }

    /// Removes the key's TTL, as SET without an expiry option does.
    pub fn persist(&mut self) -> bool {
        // SAFETY: raw is an open write handle on an existing key.
        unsafe { (self.api.set_expire)(self.raw, raw::REDISMODULE_NO_EXPIRE as i64) == OK }
    }

    /// The key's absolute expiry, if it exists and has one.
    pub fn deadline(&self) -> Option<i64> {
        // Redis 8.6 reads the value without checking that there is one:
        // asking about a missing key crashes the server.
        if self.is_empty() {
            return None;
        }
        // SAFETY: raw is an open key handle on an existing key.
        let deadline = unsafe { (self.api.get_abs_expire)(self.raw) };
        (deadline != raw::REDISMODULE_NO_EXPIRE as i64).then_some(deadline)
    }

    /// Marks the value as just used for LRU eviction (a no-op under LFU).
    pub fn mark_used_now(&mut self) {
        // SAFETY: raw is an open key handle; ERR under LFU changes nothing.
        unsafe { (self.api.set_lru)(self.raw, 0) };
    }

    /// The LFU counter, when the eviction policy is LFU.
    pub fn lfu(&self) -> Option<i64> {
        let mut freq: c_longlong = 0;
        // SAFETY: raw is an open key handle; freq is a valid out pointer.
        (unsafe { (self.api.get_lfu)(self.raw, &mut freq) } == OK).then_some(freq)
    }

    /// Sets the LFU counter (a no-op unless the policy is LFU).
    pub fn set_lfu(&mut self, freq: i64) {
        // SAFETY: raw is an open key handle.
        unsafe { (self.api.set_lfu)(self.raw, freq) };
    }
}

impl Drop for Key<'_> {
    fn drop(&mut self) {
        // SAFETY: raw was returned by OpenKey and is closed exactly once here.
        unsafe { (self.api.close_key)(self.raw) };
    }
}
