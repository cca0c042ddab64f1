//! What goes to replicas and the AOF: commands queued with
//! `RedisModule_Replicate`, changes counted for RDB save points, and the
//! changes counter command that counts them without replicating anything.

use std::ffi::CStr;
use std::sync::atomic::{AtomicBool, Ordering};

use libc::{c_int, c_longlong};
use redis_module::raw::{RedisModuleCtx, RedisModuleString};

use super::ctx::{Arg, Ctx, OwnedString, Reply};
use super::{ERR, OK};

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
    let count = std::str::from_utf8(count.bytes())
        .ok()
        .and_then(|text| text.parse::<u64>().ok())
        .unwrap_or(0);
    for _ in 0..count {
        // SAFETY: ctx is this call's context; always returns OK.
        unsafe { (call.api.replicate_verbatim)(ctx) };
    }
    call.reply(Reply::Ok)
}

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

    /// Counts one change for RDB save points (`server.dirty`) without
    /// queueing anything. Only call it when the caller proved
    /// that nothing receives replicated commands: the server then drops the
    /// verbatim command before it reaches any stream.
    pub fn count_change(&self) {
        // SAFETY: ctx is the live command context. Always returns OK.
        unsafe { (self.api.replicate_verbatim)(self.raw) };
    }

    /// Counts `n` changes for RDB save points without replicating anything,
    /// whoever listens: through the module's `<name>.changes` command, run
    /// without replication (the server drops what it queues).
    /// `counter` is the command [`super::create_changes_counter`] registered.
    pub fn count_changes_silently(&self, counter: &CStr, n: usize) -> bool {
        COUNTER_ARMED.store(true, Ordering::Relaxed);
        // SAFETY: format "l" matches one long long; counter is a C string.
        let reply =
            unsafe { (self.api.call)(self.raw, counter.as_ptr(), c"l".as_ptr(), n as c_longlong) };
        COUNTER_ARMED.store(false, Ordering::Relaxed);
        self.reply_is_ok(reply)
    }
}
