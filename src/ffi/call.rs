//! The server's commands from the module: run (`RedisModule_Call`, replies read back) or sent to
//! replicas and the AOF (`RedisModule_Replicate`); changes counted for RDB save points.

use std::ffi::{CStr, CString};

use libc::{c_char, c_int, c_longlong};
use redis_module::raw::{self, RedisModuleCallReply, RedisModuleCtx, RedisModuleString};

use super::api::{Api, OK};
use super::ctx::{Arg, Ctx, OwnedString};

/// One pair of an MSET call with fresh values: key, value bytes, length.
type FreshPair = (*mut RedisModuleString, *const c_char, usize);

/// Calls `$command` with `$head`, the pairs of `chunk` and `$tail` for each listed `chunk` size:
/// the format "v", "sb" per pair, "v" needs the variadic list spelled out per size.
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

/// Whether a server command the module runs takes a pair count first (built-in MSETEX) or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Head {
    None,
    Numkeys,
}

/// How values reach the server command: the argument objects (already in SET's encoding), or
/// fresh copies it may re-encode (integers: the server only converts an object it holds alone).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Values {
    AsTheyAre,
    Fresh,
}

/// Whether the called command replicates itself (`RedisModule_Call`'s `!`) or the module does it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Propagation {
    ByModule,
    ByCommand,
}

impl<'call> Ctx<'call> {
    /// Runs the server's own `command [numkeys] key value ... tail...` on `flat` (keys and values
    /// alternating): MSET, built-in MSETEX, or SET with one pair, storing each value as SET would
    /// (`int`, shared integers, embedded strings), firing SET's events, signalling each key. False
    /// if it failed. [`Values::Fresh`]: the server copies the values (`b`, up to 64 pairs a call).
    pub fn call_with_pairs(
        &self,
        command: &CStr,
        head: Head,
        flat: &[Arg<'call>],
        values: Values,
        propagation: Propagation,
        tail: &[OwnedString],
    ) -> bool {
        let bang = match propagation {
            Propagation::ByModule => "",
            Propagation::ByCommand => "!",
        };
        let tail: Vec<*mut RedisModuleString> = tail.iter().map(|s| s.ptr).collect();
        match values {
            Values::AsTheyAre => self.call_vector(command, bang, head, flat, tail),
            Values::Fresh => self.call_fresh(command, bang, head, flat, tail),
        }
    }

    fn head(&self, head: Head, pairs: usize) -> Option<Vec<OwnedString>> {
        match head {
            Head::Numkeys => Some(vec![self.string_from_i64(pairs as i64)?]),
            Head::None => Some(Vec::new()),
        }
    }

    /// One call with the argument objects as they are (`v` format).
    fn call_vector(
        &self,
        command: &CStr,
        bang: &str,
        head: Head,
        flat: &[Arg<'call>],
        tail: Vec<*mut RedisModuleString>,
    ) -> bool {
        let (Some(head), Ok(format)) = (
            self.head(head, flat.len() / 2),
            CString::new(format!("{bang}v")),
        ) else {
            return false;
        };
        let mut argv: Vec<*mut RedisModuleString> = head.iter().map(|s| s.ptr).collect();
        argv.extend(flat.iter().map(|arg| arg.ptr));
        argv.extend_from_slice(&tail);
        // SAFETY: "v" (after an optional "!") takes an array of live module strings and its length.
        let reply = unsafe {
            (self.api.call)(
                self.raw,
                command.as_ptr(),
                format.as_ptr(),
                argv.as_mut_ptr(),
                argv.len(),
            )
        };
        self.reply_is_ok(reply)
    }

    /// Calls of 64, 32, ... 1 pairs whose values the server copies (`b`: format fixed per size).
    fn call_fresh(
        &self,
        command: &CStr,
        bang: &str,
        head: Head,
        flat: &[Arg<'call>],
        mut tail: Vec<*mut RedisModuleString>,
    ) -> bool {
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
            let format = CString::new(format!("{bang}v{}v", "sb".repeat(chunk.len())));
            let (Some(head), Ok(format)) = (self.head(head, chunk.len()), format) else {
                return false;
            };
            let mut head_ptrs: Vec<*mut RedisModuleString> = head.iter().map(|s| s.ptr).collect();
            let head_vector = (head_ptrs.as_mut_ptr(), head_ptrs.len());
            let tail_vector = (tail.as_mut_ptr(), tail.len());
            // SAFETY: per arm "v" (live strings, len), "sb" per pair (live string, buf, len), "v".
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

    /// Frees a call reply; true when there was one and it is not an error.
    pub(super) fn reply_is_ok(&self, reply: *mut RedisModuleCallReply) -> bool {
        if reply.is_null() {
            return false;
        }
        // SAFETY: reply is a live call reply owned by us until freed below.
        let kind = unsafe { (self.api.call_reply_type)(reply) };
        // SAFETY: freed exactly once, not used afterwards.
        unsafe { (self.api.free_call_reply)(reply) };
        kind != raw::REDISMODULE_REPLY_ERROR as c_int
    }

    /// Runs a server command as the module (no user: no ACL check) and returns its reply.
    pub fn call(&self, command: &CStr, args: &[&[u8]]) -> Option<CallValue> {
        let strings: Vec<OwnedString> =
            args.iter().map(|a| self.string(a)).collect::<Option<_>>()?;
        let mut ptrs: Vec<*mut RedisModuleString> = strings.iter().map(|s| s.ptr).collect();
        // SAFETY: "v" matches an array of live module strings and its length; the reply is ours.
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

/// Copies a call reply (arrays at most 8 deep, as the replies the module reads are).
///
/// # Safety
/// `reply` is a live call reply.
pub(super) unsafe fn call_value(
    api: &Api,
    reply: *mut RedisModuleCallReply,
    depth: usize,
) -> CallValue {
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
        raw::REDISMODULE_REPLY_INTEGER => {
            // SAFETY: as above, an integer reply.
            let n = unsafe { (api.call_reply_integer)(reply) };
            CallValue::Integer(n)
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
/// `reply` is NULL or a live call reply.
pub(super) unsafe fn reply_text(api: &Api, reply: *mut RedisModuleCallReply) -> Option<String> {
    if reply.is_null() {
        return None;
    }
    let mut len = 0usize;
    // SAFETY: reply is live (caller's contract) and owns the pointer, which outlives this copy.
    let ptr: *const c_char = unsafe { (api.call_reply_string_ptr)(reply, &mut len) };
    if ptr.is_null() {
        return None;
    }
    // SAFETY: ptr points at len readable bytes owned by the reply.
    let bytes = unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) };
    Some(String::from_utf8_lossy(bytes).into_owned())
}

impl<'call> Ctx<'call> {
    /// Queues `command key value <tail...>` for replicas and the AOF (several per call:
    /// MULTI/EXEC); `tail` (`PXAT ms`, `KEEPTTL` or nothing) is at most two strings, passed without
    /// allocating.
    pub fn replicate_pair(
        &self,
        command: &CStr,
        key: Arg<'call>,
        value: Arg<'call>,
        tail: &[OwnedString],
    ) -> bool {
        let mut ptrs = [std::ptr::null_mut::<RedisModuleString>(); 2];
        if tail.len() > ptrs.len() {
            return false; // never cut a command short on the wire
        }
        for (slot, string) in ptrs.iter_mut().zip(tail) {
            *slot = string.ptr;
        }
        let len = tail.len();
        // SAFETY: "ssv": two live strings, an array of them and its length; the server refs them.
        let status = unsafe {
            (self.api.replicate)(
                self.raw,
                command.as_ptr(),
                c"ssv".as_ptr(),
                key.ptr,
                value.ptr,
                ptrs.as_mut_ptr(),
                len,
            )
        };
        status == OK
    }

    /// Queues `name head... pairs... tail...` for replicas, the AOF and a running slot migration.
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
        // SAFETY: "v": an array of live module strings and its length; the server refs them.
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

    /// Counts a change for RDB saves (`server.dirty`) via `RedisModule_ReplicateVerbatim` where
    /// nothing receives it (no listener, or a call without replication), so the server drops it.
    pub fn count_change(&self) {
        // SAFETY: ctx is the live command context. Always returns OK.
        unsafe { (self.api.replicate_verbatim)(self.raw) };
    }

    /// Runs the module's own command `counter` with argument `n`, without replication (the server
    /// drops what it queues): how changes are counted for RDB save points whoever listens.
    pub fn call_without_replication(&self, counter: &CStr, n: usize) -> bool {
        // SAFETY: format "l" matches one long long; counter is a C string.
        let reply =
            unsafe { (self.api.call)(self.raw, counter.as_ptr(), c"l".as_ptr(), n as c_longlong) };
        self.reply_is_ok(reply)
    }
}
