//! What the server calls: trampolines generic over the traits `crate::entry` implements; they
//! build the safe views and never let a panic cross into the server.

use std::ffi::CStr;
use std::panic::{catch_unwind, AssertUnwindSafe};

use libc::{c_int, c_longlong};
use redis_module::raw::{self, RedisModuleCtx, RedisModuleString};

use super::api::{log, Api, LogLevel, API, ERR, OK};
use super::ctx::{Arg, Ctx, KeyPositions, Reply};

/// A command the module registers (see [`super::create_command`]).
pub trait Command {
    fn run<'c>(ctx: &Ctx<'c>, args: &[Arg<'c>]) -> Reply;

    /// Answers the server's "where are the keys" call (commands with the `getkeys-api` flag).
    fn declare_keys(_positions: &KeyPositions, _args: &[Arg<'_>]) {}
}

/// A filter rewrite step: the `replaced` arguments from `at` on become `with`, after earlier steps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgsChange {
    pub at: usize,
    pub replaced: usize,
    pub with: Vec<Vec<u8>>,
}

/// The command filter and the server events (see [`super::watch`]).
pub trait Hooks {
    /// Whether command `name` may need rewriting; runs before every command: a few comparisons.
    fn filter_wants(name: &[u8]) -> bool;
    /// The changes to a command [`Hooks::filter_wants`] chose (none: it runs as sent).
    fn filter(args: &[&[u8]]) -> Vec<ArgsChange>;
    /// A role changed, or a data set is loading.
    fn on_replication_event();
    /// Every cron tick (`hz` times a second).
    fn on_cron();
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InfoValue {
    Integer(u64),
    Text(&'static CStr),
}

/// The module's INFO section (see [`super::register_info`]).
pub trait InfoSection {
    /// Its fields, in order; `aof_on`: the AOF is on.
    fn fields(aof_on: bool) -> Vec<(&'static CStr, InfoValue)>;
}

/// Load and unload, through the exported symbols (see [`crate::export_module!`]).
pub trait Module {
    /// MODULE LOAD / `loadmodule` with its arguments; the error is the log line saying why not.
    fn load(ctx: *mut RedisModuleCtx, args: &[&[u8]]) -> Result<(), String>;
    /// MODULE UNLOAD: whether it may go ahead.
    fn may_unload(ctx: &Ctx<'_>) -> bool;
}

/// Registers the module first (no allocation before: the allocator is the server's), then loads it.
pub fn on_load<M: Module>(
    ctx: *mut RedisModuleCtx,
    argv: *mut *mut RedisModuleString,
    argc: c_int,
    name: &CStr,
    version: c_int,
) -> c_int {
    // SAFETY: ctx is the load context; name is NUL-terminated and static.
    let init = unsafe {
        raw::Export_RedisModule_Init(
            ctx,
            name.as_ptr(),
            version,
            raw::REDISMODULE_APIVER_1 as c_int,
        )
    };
    if init != OK {
        return ERR;
    }
    if let Err(reason) = super::api::init_api() {
        log(ctx, LogLevel::Warning, &format!("not loaded: {reason}"));
        return ERR;
    }
    let Some(load) = Ctx::of(ctx) else {
        return ERR;
    };
    // SAFETY: the server passes argc live load arguments.
    let args = unsafe { load.args(argv, argc) };
    let args: Vec<&[u8]> = args.iter().map(|arg| arg.bytes()).collect();
    match catch_unwind(AssertUnwindSafe(|| M::load(ctx, &args))) {
        Ok(Ok(())) => OK,
        Ok(Err(reason)) => {
            log(ctx, LogLevel::Warning, &format!("not loaded: {reason}"));
            ERR
        }
        Err(_) => {
            log(
                ctx,
                LogLevel::Warning,
                "not loaded: internal error (panic caught)",
            );
            ERR
        }
    }
}

/// `RedisModule_OnUnload`: an error cancels the unload (a panic too).
pub fn on_unload<M: Module>(ctx: *mut RedisModuleCtx) -> c_int {
    let Some(ctx) = Ctx::of(ctx) else {
        return OK;
    };
    match catch_unwind(AssertUnwindSafe(|| M::may_unload(&ctx))) {
        Ok(true) => OK,
        _ => ERR,
    }
}

/// Exports the two symbols the server looks up in the library, for `$module` (a [`Module`]).
#[macro_export]
macro_rules! export_module {
    ($module:ty, $name:expr, $version:expr) => {
        #[allow(unsafe_code)]
        #[no_mangle]
        pub extern "C" fn RedisModule_OnLoad(
            ctx: *mut redis_module::raw::RedisModuleCtx,
            argv: *mut *mut redis_module::raw::RedisModuleString,
            argc: std::os::raw::c_int,
        ) -> std::os::raw::c_int {
            $crate::ffi::on_load::<$module>(ctx, argv, argc, $name, $version)
        }

        #[allow(unsafe_code)]
        #[no_mangle]
        pub extern "C" fn RedisModule_OnUnload(
            ctx: *mut redis_module::raw::RedisModuleCtx,
        ) -> std::os::raw::c_int {
            $crate::ffi::on_unload::<$module>(ctx)
        }
    };
}

/// The server calls this for every call of a command registered for `C`.
pub(super) unsafe extern "C" fn command_entry<C: Command>(
    ctx: *mut RedisModuleCtx,
    argv: *mut *mut RedisModuleString,
    argc: c_int,
) -> c_int {
    let Some(call) = Ctx::of(ctx) else {
        return ERR;
    };
    // SAFETY: the server passes argc live argument strings for this call.
    let args = unsafe { call.args(argv, argc) };
    // SAFETY: ctx is the context of this call.
    if unsafe { (call.api.is_keys_position_request)(ctx) } != 0 {
        // Only where the keys are (cluster slot, ACL, COMMAND GETKEYS checks): no client here.
        let positions = KeyPositions {
            raw: ctx,
            api: call.api,
        };
        let _ = catch_unwind(AssertUnwindSafe(|| C::declare_keys(&positions, &args)));
        return OK;
    }
    match catch_unwind(AssertUnwindSafe(|| C::run(&call, &args))) {
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

/// Server events: role changes, loading, cron ticks.
pub(super) unsafe extern "C" fn server_event<H: Hooks>(
    _ctx: *mut RedisModuleCtx,
    event: raw::RedisModuleEvent,
    _subevent: u64,
    _data: *mut std::ffi::c_void,
) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        if event.id == raw::REDISMODULE_EVENT_CRON_LOOP {
            H::on_cron();
        } else {
            H::on_replication_event();
        }
    }));
}

/// Runs before every command any client sends (and the replication stream).
pub(super) unsafe extern "C" fn command_filter<H: Hooks>(
    filter: *mut raw::RedisModuleCommandFilterCtx,
) {
    let Some(api) = API.get() else {
        return;
    };
    // On a panic the command runs as sent.
    let _ = catch_unwind(|| {
        // SAFETY: filter is the live filter context of this command.
        let count = unsafe { (api.command_filter_args_count)(filter) };
        // SAFETY: as above; position 0 exists when count >= 1.
        let Some(name) = (count >= 1)
            .then(|| unsafe { filter_arg(api, filter, 0) })
            .flatten()
        else {
            return;
        };
        if !H::filter_wants(name) {
            return;
        }
        // SAFETY: every position below count exists.
        let args: Vec<&[u8]> = (0..count)
            .filter_map(|i| unsafe { filter_arg(api, filter, i) })
            .collect();
        if args.len() != usize::try_from(count).unwrap_or(0) {
            return;
        }
        let changes = H::filter(&args);
        let mut argc = args.len();
        for change in &changes {
            if change.at + change.replaced > argc {
                refuse_rewrite(api, filter);
                return;
            }
            // SAFETY: filter is live; the positions exist (tracked through each change).
            if !unsafe { replace_args(api, filter, change.at, change.replaced, &change.with) } {
                refuse_rewrite(api, filter);
                return;
            }
            argc = argc - change.replaced + change.with.len();
        }
    });
}

/// The bytes of argument `pos` of the filtered command.
///
/// # Safety
/// `filter` is live and `pos` one of its positions; the bytes last until that argument changes.
unsafe fn filter_arg<'a>(
    api: &Api,
    filter: *mut raw::RedisModuleCommandFilterCtx,
    pos: c_int,
) -> Option<&'a [u8]> {
    // SAFETY: the caller's contract; the string is owned by the command.
    let arg = unsafe { (api.command_filter_arg_get)(filter, pos) };
    if arg.is_null() {
        return None;
    }
    let mut len = 0usize;
    // SAFETY: arg is a live module string; the pointer is valid while it is.
    let ptr = unsafe { (api.string_ptr_len)(arg, &mut len) };
    if ptr.is_null() {
        return Some(&[]);
    }
    // SAFETY: ptr points at len readable bytes.
    Some(unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) })
}

/// Replaces the `count` arguments from `at` on with `with`; false if the server refused a step (it
/// cannot: the positions exist), so that the caller keeps the command from running half rewritten.
///
/// # Safety
/// `filter` is the live filter context of a command with at least `at + count` arguments.
unsafe fn replace_args(
    api: &Api,
    filter: *mut raw::RedisModuleCommandFilterCtx,
    at: usize,
    count: usize,
    with: &[Vec<u8>],
) -> bool {
    let step = |index: usize, arg: Option<&Vec<u8>>, replace: bool| -> bool {
        let Ok(pos) = c_int::try_from(at + index) else {
            return false;
        };
        let Some(arg) = arg else {
            // SAFETY: the position exists (the caller's contract).
            return unsafe { (api.command_filter_arg_delete)(filter, pos) } == OK;
        };
        let string = new_string(api, arg);
        if string.is_null() {
            return false;
        }
        // SAFETY: the position exists; on success the command owns string.
        let status = unsafe {
            if replace {
                (api.command_filter_arg_replace)(filter, pos, string)
            } else {
                (api.command_filter_arg_insert)(filter, pos, string)
            }
        };
        if status != OK {
            // SAFETY: not handed over, so still ours; freed once.
            unsafe { (api.free_string)(std::ptr::null_mut(), string) };
        }
        status == OK
    };
    let kept = count.min(with.len());
    (0..kept).all(|i| step(i, with.get(i), true))
        && (kept..with.len()).all(|i| step(i, with.get(i), false))
        && (with.len()..count).all(|_| step(with.len(), None, true))
}

fn new_string(api: &Api, bytes: &[u8]) -> *mut RedisModuleString {
    // SAFETY: a NULL ctx makes the string the filter's to hand over.
    unsafe { (api.create_string)(std::ptr::null_mut(), bytes.as_ptr().cast(), bytes.len()) }
}

/// After a failed rewrite the command becomes an unknown one, refused, rather than half rewritten.
fn refuse_rewrite(api: &Api, filter: *mut raw::RedisModuleCommandFilterCtx) {
    let refused = new_string(api, b"msetex: the command could not be rewritten");
    if refused.is_null() {
        return;
    }
    // SAFETY: position 0 always exists; on success the command owns the string.
    let replaced = unsafe { (api.command_filter_arg_replace)(filter, 0, refused) == OK };
    if !replaced {
        // SAFETY: not handed over; freed once.
        unsafe { (api.free_string)(std::ptr::null_mut(), refused) };
    }
}

/// The module's INFO section (`INFO msetex`).
pub(super) unsafe extern "C" fn info_section<I: InfoSection>(
    ctx: *mut raw::RedisModuleInfoCtx,
    _for_crash_report: c_int,
) {
    let Some(api) = API.get() else {
        return;
    };
    let _ = catch_unwind(|| {
        // SAFETY: a NULL context reads only server-wide flags.
        let flags = unsafe { (api.get_context_flags)(std::ptr::null_mut()) };
        let aof = flags & raw::REDISMODULE_CTX_FLAGS_AOF as c_int != 0;
        // SAFETY: ctx is the server's INFO context; a NULL name makes the section the module's own.
        unsafe { (api.info_add_section)(ctx, std::ptr::null()) };
        // The add calls fail only outside an INFO callback or for a field of no section: ignored.
        for (name, value) in I::fields(aof) {
            // SAFETY: as above; the strings are NUL-terminated and copied.
            unsafe {
                match value {
                    InfoValue::Integer(n) => {
                        let n = c_longlong::try_from(n).unwrap_or(c_longlong::MAX);
                        (api.info_add_field_long_long)(ctx, name.as_ptr(), n)
                    }
                    InfoValue::Text(text) => {
                        (api.info_add_field_c_string)(ctx, name.as_ptr(), text.as_ptr())
                    }
                }
            };
        }
    });
}

impl<'call> Ctx<'call> {
    pub(super) fn reply(&self, reply: Reply) -> c_int {
        // SAFETY: ctx is the live command context; the server copies the NUL-terminated texts.
        unsafe {
            match reply {
                Reply::Ok => (self.api.reply_with_simple_string)(self.raw, c"OK".as_ptr()),
                Reply::Integer(n) => (self.api.reply_with_long_long)(self.raw, n),
                Reply::Error(text) => (self.api.reply_with_error)(self.raw, text.as_ptr()),
            }
        }
    }
}
