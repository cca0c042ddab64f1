//! What goes to replicas and the AOF: commands queued with
//! `RedisModule_Replicate`, and changes counted for RDB save points.

use std::ffi::CStr;

use libc::c_longlong;
use redis_module::raw::RedisModuleString;

use super::ctx::{Arg, Ctx, OwnedString};
use super::OK;

impl<'call> Ctx<'call> {
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

    /// Counts one change for RDB save points (`server.dirty`) by queueing
    /// the call itself (`RedisModule_ReplicateVerbatim`): only where nothing
    /// receives it (nobody listens, or a command run without replication),
    /// so that the server drops it before it reaches any stream.
    pub fn count_change(&self) {
        // SAFETY: ctx is the live command context. Always returns OK.
        unsafe { (self.api.replicate_verbatim)(self.raw) };
    }

    /// Runs the module's own command `counter` with the one argument `n`,
    /// without replication (the server drops what it queues): how changes
    /// are counted for RDB save points whoever listens.
    pub fn call_without_replication(&self, counter: &CStr, n: usize) -> bool {
        // SAFETY: format "l" matches one long long; counter is a C string.
        let reply =
            unsafe { (self.api.call)(self.raw, counter.as_ptr(), c"l".as_ptr(), n as c_longlong) };
        self.reply_is_ok(reply)
    }
}
