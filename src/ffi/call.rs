//! The server's commands run from the module (`RedisModule_Call`) or replicated by it.

use std::ffi::{CStr, CString};
use std::ptr::null_mut;

use libc::{c_char, c_int, c_longlong};
use redis_module::raw::{self, RedisModuleCallReply, RedisModuleString};

use super::api::{Api, RawCtx, OK};
use super::ctx::{slice, Arg, Ctx, OwnedString, Word};

/// A fresh pair of an MSET call: key, value bytes, length.
type FreshPair = (*mut RedisModuleString, *const c_char, usize);

/// `RedisModule_Call`'s format for `count` fresh pairs (`v`, `sb` per pair, `v`), `!` first where
/// the command replicates itself; `None` for a count no call takes.
fn fresh_format(bang: &str, count: usize) -> Option<&'static CStr> {
    const SB: &str = "sbsbsbsbsbsbsbsbsbsbsbsbsbsbsbsbsbsbsbsbsbsbsbsbsbsbsbsbsbsbsbsb\
                      sbsbsbsbsbsbsbsbsbsbsbsbsbsbsbsbsbsbsbsbsbsbsbsbsbsbsbsbsbsbsbsb";
    static FORMATS: std::sync::OnceLock<[[CString; 7]; 2]> = std::sync::OnceLock::new();
    let formats = FORMATS.get_or_init(|| {
        [false, true].map(|bang| {
            [1, 2, 4, 8, 16, 32, 64].map(|n: usize| {
                let bang = if bang { "!" } else { "" };
                let format = format!("{bang}v{}v", SB.get(..2 * n).unwrap_or_default());
                CString::new(format).unwrap_or_default()
            })
        })
    });
    let index = (count.is_power_of_two() && count <= 64).then(|| count.trailing_zeros())?;
    let row = formats.get(usize::from(bang == "!"))?;
    row.get(usize::try_from(index).ok()?).map(CString::as_c_str)
}

/// The most pairs of `pairs` one call with fresh values takes: `RedisModule_Call` is variadic, so
/// it is spelled out per size (64, 32, ... 1).
pub fn fresh_part(pairs: usize) -> usize {
    pairs.min(64).checked_ilog2().map_or(0, |log| 1 << log)
}

/// `call` of `$head`, `$chunk`'s pairs and `$tail`, spelled out per size.
macro_rules! call_fixed {
    ($ctx:expr, $command:expr, $format:expr, $head:expr, $chunk:expr, $tail:expr;
     $( $size:literal => [$($i:literal)+] ),+) => {
        $( if let Ok(c) = <&[FreshPair; $size]>::try_from($chunk) {
            ($ctx.api.call)(
                $ctx.raw,
                $command,
                $format,
                $head.as_mut_ptr(),
                $head.len(),
                $( c[$i].0, c[$i].1, c[$i].2, )+
                $tail.as_mut_ptr(),
                $tail.len(),
            )
        } else )+ {
            std::ptr::null_mut()
        }
    };
}

/// Whether the server command takes a pair count first (built-in MSETEX).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Head {
    None,
    Numkeys,
}

/// How values reach the server command: as they are, or fresh copies it may re-encode (integers).
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

/// The server's `command [numkeys] key value ... tail...`, as the write path runs it on pairs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerWrite {
    pub command: &'static CStr,
    pub head: Head,
    pub tail: Vec<Word>,
    pub values: Values,
    pub propagation: Propagation,
}

impl<'call> Ctx<'call> {
    /// Runs `call` on the pairs `flat`; false if it failed.
    pub fn call_with_pairs(&self, call: &ServerWrite, flat: &[Arg<'call>]) -> bool {
        let Some(tail) = self.words(&call.tail) else {
            return false;
        };
        let (command, tail) = (call.command, tail.as_slice());
        let (bang, format) = match call.propagation {
            Propagation::ByModule => ("", c"v"),
            Propagation::ByCommand => ("!", c"!v"),
        };
        let head = |pairs: usize| match call.head {
            Head::Numkeys => self.words(&[Word::Number(pairs as i64)]),
            Head::None => Some(Vec::new()),
        };
        if call.values == Values::Fresh {
            return self.call_fresh(command, bang, &head, flat, tail);
        }
        let Some(head) = head(flat.len() / 2) else {
            return false;
        };
        let call = self.api.call;
        // SAFETY: head's strings, the call's arguments and tail's are live.
        let reply = unsafe { self.with_argv(call, command, format, &mut argv(&head, flat, tail)) };
        succeeded(CallReply::new(reply, self.api))
    }

    /// One call of `n` pairs (`fresh_part(n) == n`) whose values the server copies (`b`).
    fn call_fresh(
        &self,
        command: &CStr,
        bang: &str,
        head: &dyn Fn(usize) -> Option<Vec<OwnedString>>,
        flat: &[Arg<'call>],
        tail: &[OwnedString],
    ) -> bool {
        let count = flat.len() / 2;
        let (Some(format), Some(head)) = (fresh_format(bang, count), head(count)) else {
            return false;
        };
        let mut pairs: [FreshPair; 64] = [(null_mut(), std::ptr::null(), 0); 64];
        for (slot, pair) in pairs.iter_mut().zip(flat.chunks_exact(2)) {
            if let [key, value] = pair {
                *slot = (key.ptr, value.bytes.as_ptr().cast(), value.bytes.len());
            }
        }
        let chunk = pairs.get(..count).unwrap_or_default();
        let mut tail = argv(tail, &[], &[]);
        let mut head_ptrs = argv(&head, &[], &[]);
        // SAFETY: per arm "v" (live strings, len), "sb" per pair (live string, buf, len), "v".
        let reply = unsafe {
            call_fixed!(self, command.as_ptr(), format.as_ptr(), head_ptrs, chunk, tail;
                64 => [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
                       32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63],
                32 => [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31],
                16 => [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15],
                8 => [0 1 2 3 4 5 6 7],
                4 => [0 1 2 3],
                2 => [0 1],
                1 => [0])
        };
        succeeded(CallReply::new(reply, self.api))
    }

    /// `RedisModule_Call` or `_Replicate` of `command` with `argv`, a "v" argument (after any
    /// flags in `format`). Safety: `argv` holds live module strings.
    unsafe fn with_argv<R>(
        &self,
        function: unsafe extern "C" fn(*mut RawCtx, *const c_char, *const c_char, ...) -> R,
        command: &CStr,
        format: &CStr,
        argv: &mut [*mut RedisModuleString],
    ) -> R {
        let (command, format, len) = (command.as_ptr(), format.as_ptr(), argv.len());
        // SAFETY: "v" takes an array of live module strings and its length.
        unsafe { function(self.raw, command, format, argv.as_mut_ptr(), len) }
    }

    /// Runs a server command as the module (no user: no ACL check): its array reply's strings.
    pub fn call(&self, command: &CStr, args: &[&[u8]]) -> Option<Vec<Option<Vec<u8>>>> {
        let strings: Vec<OwnedString> =
            args.iter().map(|a| self.string(a)).collect::<Option<_>>()?;
        let mut argv = argv(&strings, &[], &[]);
        // SAFETY: the strings are live.
        let reply = unsafe { self.with_argv(self.api.call, command, c"v", &mut argv) };
        let reply = CallReply::new(reply, self.api)?;
        let (api, array) = (self.api, reply.ptr);
        // SAFETY: the reply is live until dropped, after this, and so are its items (or NULL).
        unsafe {
            if (api.call_reply_type)(array) != raw::REDISMODULE_REPLY_ARRAY as c_int {
                return None;
            }
            let item = |i| text(api, (api.call_reply_array_element)(array, i));
            Some((0..(api.call_reply_length)(array)).map(item).collect())
        }
    }

    /// Queues `command key value tail...` (`tail`: at most two strings), without allocating.
    pub fn replicate_pair(
        &self,
        command: &CStr,
        key: Arg<'call>,
        value: Arg<'call>,
        tail: &[OwnedString],
    ) -> bool {
        // One `s` per argument: the server sizes its vector from the format once ("v" grows it).
        let (format, [first, second]) = match tail {
            [] => (c"ss", [null_mut(); 2]),
            [one] => (c"sss", [one.ptr, null_mut()]),
            [one, two] => (c"ssss", [one.ptr, two.ptr]),
            _ => return false, // never cut a command short on the wire
        };
        // SAFETY: as many live strings as the format has `s`; the server refs them.
        unsafe {
            (self.api.replicate)(
                self.raw,
                command.as_ptr(),
                format.as_ptr(),
                key.ptr,
                value.ptr,
                first,
                second,
            ) == OK
        }
    }

    /// Queues `name head... pairs... tail...` for replicas, the AOF and a running slot migration.
    pub fn replicate_command(
        &self,
        name: &CStr,
        head: &[OwnedString],
        pairs: &[Arg<'call>],
        tail: &[OwnedString],
    ) -> bool {
        let mut argv = argv(head, pairs, tail);
        // SAFETY: the strings are live; the server refs them.
        unsafe { self.with_argv(self.api.replicate, name, c"v", &mut argv) == OK }
    }

    /// Counts a change for RDB saves where the server drops what is replicated.
    pub fn count_change(&self) {
        // SAFETY: ctx is the live command context. Always returns OK.
        unsafe { (self.api.replicate_verbatim)(self.raw) };
    }

    /// Runs the module's `counter` command with `n`, unreplicated: changes counted for RDB saves.
    pub fn call_without_replication(&self, counter: &CStr, n: usize) -> bool {
        // SAFETY: format "l" matches one long long; counter is a C string.
        let reply =
            unsafe { (self.api.call)(self.raw, counter.as_ptr(), c"l".as_ptr(), n as c_longlong) };
        succeeded(CallReply::new(reply, self.api))
    }
}

pub(super) struct CallReply {
    ptr: *mut RedisModuleCallReply,
    api: &'static Api,
}

impl CallReply {
    /// `None` for NULL: the call did not run (see errno).
    pub(super) fn new(ptr: *mut RedisModuleCallReply, api: &'static Api) -> Option<CallReply> {
        (!ptr.is_null()).then(|| CallReply { ptr, api })
    }
}

impl Drop for CallReply {
    fn drop(&mut self) {
        // SAFETY: a live reply of ours, freed exactly once, not used afterwards.
        unsafe { (self.api.free_call_reply)(self.ptr) };
    }
}

/// Frees a call reply; true if there was one and not an error.
fn succeeded(reply: Option<CallReply>) -> bool {
    reply.is_some_and(|reply| {
        // SAFETY: reply is live until dropped, after this.
        let kind = unsafe { (reply.api.call_reply_type)(reply.ptr) };
        kind != raw::REDISMODULE_REPLY_ERROR as c_int
    })
}

/// A copy of a string reply; `None` for NULL or another type. Safety: `reply` is NULL or live.
unsafe fn text(api: &Api, reply: *mut RedisModuleCallReply) -> Option<Vec<u8>> {
    let mut len = 0usize;
    // SAFETY: the caller's contract; a string's pointer is valid while the reply is.
    unsafe {
        let string = raw::REDISMODULE_REPLY_STRING as c_int;
        if reply.is_null() || (api.call_reply_type)(reply) != string {
            return None;
        }
        Some(slice((api.call_reply_string_ptr)(reply, &mut len).cast(), len).to_vec())
    }
}

/// The pointers of `head`, `pairs` and `tail`: a "v" argument.
fn argv(
    head: &[OwnedString],
    pairs: &[Arg<'_>],
    tail: &[OwnedString],
) -> Vec<*mut RedisModuleString> {
    let mut argv = Vec::with_capacity(head.len() + pairs.len() + tail.len());
    argv.extend(head.iter().map(|s| s.ptr));
    argv.extend(pairs.iter().map(|arg| arg.ptr));
    argv.extend(tail.iter().map(|s| s.ptr));
    argv
}

pub(super) fn clear_errno() {
    // SAFETY: errno is this thread's; writing it has no other effect.
    unsafe { *libc::__errno_location() = 0 };
}
pub(super) fn errno() -> Option<i32> {
    std::io::Error::last_os_error()
        .raw_os_error()
        .filter(|n| *n != 0)
}
