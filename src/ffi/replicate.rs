//! What goes to replicas and the AOF (`RedisModule_Replicate`); changes counted for RDB saves.

use std::ffi::CStr;

use libc::c_longlong;
use redis_module::raw::RedisModuleString;

use super::ctx::{Arg, Ctx, OwnedString};
use super::OK;

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
