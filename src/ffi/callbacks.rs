//! What the server calls: trampolines over the traits `crate::entry` implements, panics caught.

use std::ffi::{c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicPtr, Ordering};

use libc::{c_char, c_int, c_longlong};
use redis_module::raw::{self, RedisModuleString};

use super::api::{log, Api, LogLevel, RawCtx, API, ERR, OK};
use super::ctx::{Arg, Ctx, KeyPositions, LazyArg, OwnedString, Reply};
use super::held;

pub trait Command {
    fn run<'c>(ctx: &Ctx<'c>, args: &[Arg<'c>]) -> Reply;
    /// Answers the server's "where are the keys" call (`getkeys-api`).
    fn declare_keys(_positions: &KeyPositions<'_>, _args: &[LazyArg<'_>]) {}
}

/// A filter rewrite step: the `replaced` arguments from `at` on become `with`, after earlier steps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgsChange {
    pub at: usize,
    pub replaced: usize,
    pub with: Vec<Piece>,
}

/// Arguments a rewrite puts in place: new bytes, or the command's own (as sent), moved rather
/// than copied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    New(Vec<u8>),
    Sent(EverySecond),
}

/// `count` of the command's arguments as sent, from `first`, every second one: a call's keys, or
/// its values.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EverySecond {
    pub first: usize,
    pub count: usize,
}

impl EverySecond {
    pub fn positions(self) -> impl ExactSizeIterator<Item = usize> {
        (0..self.count).map(move |index| self.first + 2 * index)
    }
}

impl Piece {
    /// How many arguments it stands for.
    fn len(&self) -> usize {
        match self {
            Piece::New(_) => 1,
            Piece::Sent(sent) => sent.count,
        }
    }
}

impl ArgsChange {
    /// The same change on a plain argument list (`sent`: as sent), as the server makes it.
    pub fn apply(&self, args: &mut Vec<Vec<u8>>, sent: &[Vec<u8>]) {
        let at = self.at.min(args.len());
        let end = at.saturating_add(self.replaced).min(args.len());
        let mut with = Vec::new();
        for piece in &self.with {
            match piece {
                Piece::New(bytes) => with.push(bytes.clone()),
                Piece::Sent(every) => with.extend(
                    every
                        .positions()
                        .map(|index| sent.get(index).cloned().unwrap_or_default()),
                ),
            }
        }
        args.splice(at..end, with);
    }
}

/// A command's rewrite: its changes, and the arguments (as sent) held for the command by the
/// token the rewrite was given (`Ctx::take_held`).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Rewrite {
    pub changes: Vec<ArgsChange>,
    pub held: EverySecond,
}

impl From<Vec<ArgsChange>> for Rewrite {
    fn from(changes: Vec<ArgsChange>) -> Rewrite {
        Rewrite {
            changes,
            held: EverySecond::default(),
        }
    }
}

pub trait Hooks {
    /// Whether command `name` may need rewriting; runs before every command.
    fn filter_wants(name: &[u8]) -> bool;
    /// The rewrite of a command [`Hooks::filter_wants`] chose (no change: it runs as sent);
    /// `token` names the call whose values it holds.
    fn filter<A: AsRef<[u8]>>(args: &[A], token: u64) -> Rewrite;
    /// A role changed, or a data set is loading.
    fn on_replication_event();
    fn on_cron();
    /// The server shuts down (before Valkey 9.1+ unloads its modules).
    fn on_shutdown();
    fn on_event(event: u64, subevent: u64);
}

/// The module's configurations, by index.
pub trait Configs {
    fn get(index: usize) -> String;
    fn set(index: usize, value: &str) -> Result<(), String>;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InfoValue {
    Integer(u64),
    Text(&'static CStr),
}

/// The module's INFO section, its fields in order.
pub trait InfoSection {
    fn fields(aof_on: bool) -> Vec<(&'static CStr, InfoValue)>;
}

/// Load and unload, through the exported symbols ([`crate::export_module!`]).
pub trait Module {
    /// MODULE LOAD / `loadmodule` with its arguments; the error is the log line saying why not.
    fn load(ctx: *mut RawCtx, args: &[&[u8]]) -> Result<(), String>;
    fn may_unload(ctx: &Ctx<'_>) -> bool;
}

/// Registers the module first (no allocation before: the allocator is the server's), then loads it.
pub fn on_load<M: Module>(
    ctx: *mut RawCtx,
    argv: *mut *mut RedisModuleString,
    argc: c_int,
    name: &CStr,
    version: c_int,
) -> c_int {
    let api_version = raw::REDISMODULE_APIVER_1 as c_int;
    // SAFETY: ctx is the load context; name is NUL-terminated and static.
    if unsafe { raw::Export_RedisModule_Init(ctx, name.as_ptr(), version, api_version) } != OK {
        return ERR;
    }
    let loaded = super::api::init_api().and_then(|_| {
        let load = Ctx::of(ctx).ok_or("module API not initialised")?;
        // SAFETY: the server passes argc live load arguments.
        let args = unsafe { load.args(argv, argc, Arg::of) };
        let args: Vec<&[u8]> = args.iter().map(|arg| arg.bytes()).collect();
        caught(AssertUnwindSafe(|| M::load(ctx, &args)))
    });
    let Err(reason) = loaded else { return OK };
    log(ctx, LogLevel::Warning, &format!("not loaded: {reason}"));
    ERR
}

/// `f`'s result, a panic caught as an error.
fn caught(f: impl FnOnce() -> Result<(), String> + std::panic::UnwindSafe) -> Result<(), String> {
    catch_unwind(f).unwrap_or_else(|_| Err("internal error (panic caught)".to_owned()))
}

/// `RedisModule_OnUnload`: an error cancels the unload (a panic too).
pub fn on_unload<M: Module>(ctx: *mut RawCtx) -> c_int {
    let Some(ctx) = Ctx::of(ctx) else { return OK };
    match catch_unwind(AssertUnwindSafe(|| M::may_unload(&ctx))) {
        Ok(true) => OK,
        _ => ERR,
    }
}

/// Exports the two symbols the server looks up, for `$module` (a [`Module`]).
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

pub(super) unsafe extern "C" fn command_entry<C: Command>(
    ctx: *mut RawCtx,
    argv: *mut *mut RedisModuleString,
    argc: c_int,
) -> c_int {
    let Some(call) = Ctx::of(ctx) else { return ERR };
    // SAFETY: ctx is the context of this call.
    if unsafe { (call.api.is_keys_position_request)(ctx) } != 0 {
        // Only where the keys are (cluster slot, ACL, COMMAND GETKEYS): no client here.
        // SAFETY: the server passes argc live argument strings for this call.
        let args = unsafe { LazyArg::all(argv, argc) };
        let positions = KeyPositions(call);
        let _ = catch_unwind(AssertUnwindSafe(|| C::declare_keys(&positions, args)));
        return OK;
    }
    // SAFETY: the server passes argc live argument strings for this call.
    let args = unsafe { call.args(argv, argc, Arg::of) };
    let reply = catch_unwind(AssertUnwindSafe(|| C::run(&call, &args))).unwrap_or_else(|_| {
        call.log_warning("msetex: internal error (panic caught), see issue tracker");
        Reply::Error(c"ERR msetex internal error".to_owned())
    });
    call.reply(reply)
}

pub(super) unsafe extern "C" fn server_event<H: Hooks>(
    _ctx: *mut RawCtx,
    event: raw::RedisModuleEvent,
    subevent: u64,
    data: *mut std::ffi::c_void,
) {
    let _ = catch_unwind(AssertUnwindSafe(|| match event.id {
        raw::REDISMODULE_EVENT_CLIENT_CHANGE => {
            let gone = raw::REDISMODULE_SUBEVENT_CLIENT_CHANGE_DISCONNECTED;
            let info = data.cast::<raw::RedisModuleClientInfo>();
            if subevent == gone && !info.is_null() {
                // SAFETY: the event's data is the disconnecting client's info, live for the call.
                held::forget(unsafe { (*info).id });
            }
        }
        raw::REDISMODULE_EVENT_CRON_LOOP => H::on_cron(),
        raw::REDISMODULE_EVENT_SHUTDOWN => H::on_shutdown(),
        raw::REDISMODULE_EVENT_REPLICATION_ROLE_CHANGED | raw::REDISMODULE_EVENT_LOADING => {
            H::on_replication_event()
        }
        id => H::on_event(id, subevent),
    }));
}

/// Runs before every command any client sends (and the replication stream).
pub(super) unsafe extern "C" fn command_filter<H: Hooks>(
    filter: *mut raw::RedisModuleCommandFilterCtx,
) {
    let Some(api) = API.get() else { return };
    let filter = Filter { raw: filter, api };
    // On a panic the command runs as sent.
    let _ = catch_unwind(|| {
        // SAFETY: filter is the live filter context of this command.
        let count = unsafe { (filter.api.command_filter_args_count)(filter.raw) };
        // SAFETY: as above; position 0 exists when count >= 1.
        if count < 1 || !unsafe { filter.arg(0) }.is_some_and(|name| H::filter_wants(name)) {
            return;
        }
        // Read on demand: a call without options needs only its first few.
        let args: Vec<FilterArg<'_>> = (0..count).map(|pos| FilterArg(&filter, pos)).collect();
        let token = held::next_token();
        let Rewrite {
            changes,
            held: to_hold,
        } = H::filter(&args, token);
        // A failed rewrite makes the command an unknown one, refused, not half rewritten.
        let refuse = || {
            let refused = b"msetex: the command could not be rewritten";
            if let Some(refused) = OwnedString::from_bytes(filter.api, refused) {
                // SAFETY: position 0 always exists.
                unsafe { filter.put(0, refused, true) };
            }
        };
        // Every argument in place before any change: new ones made, the command's own retained.
        let prepared: Option<Vec<Vec<OwnedString>>> = changes
            .iter()
            .map(|change| filter.prepare(&change.with))
            .collect();
        let kept = filter.prepare(&[Piece::Sent(to_hold)]);
        let (Some(prepared), Some(kept)) = (prepared, kept) else {
            return refuse();
        };
        let mut argc = args.len();
        for (change, with) in changes.iter().zip(prepared) {
            let added = with.len();
            // SAFETY: the positions exist (checked, and tracked through each change).
            if change.at + change.replaced > argc || !unsafe { filter.change(change, with) } {
                return refuse();
            }
            argc = argc - change.replaced + added;
        }
        if !kept.is_empty() && !held::hold(filter.api, filter.raw, token, kept) {
            refuse();
        }
    });
}

/// Argument `.1` of the command being filtered, read when asked for (before any change).
struct FilterArg<'f>(&'f Filter, c_int);

impl AsRef<[u8]> for FilterArg<'_> {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: .1 is below the command's argument count, read before any change is made.
        unsafe { self.0.arg(self.1) }.unwrap_or_default()
    }
}

struct Filter {
    raw: *mut raw::RedisModuleCommandFilterCtx,
    api: &'static Api,
}

impl Filter {
    /// The bytes of argument `pos`, valid until that argument changes.
    unsafe fn arg<'a>(&self, pos: c_int) -> Option<&'a [u8]> {
        // SAFETY: the caller's contract; the string is owned by the command.
        let arg = unsafe { (self.api.command_filter_arg_get)(self.raw, pos) };
        (!arg.is_null()).then(|| Arg::of(self.api, arg).bytes())
    }

    /// The strings `pieces` stand for, ours to hand over: made, or the command's own retained;
    /// `None` if one could not be had (those had are released).
    fn prepare(&self, pieces: &[Piece]) -> Option<Vec<OwnedString>> {
        let mut strings = Vec::with_capacity(pieces.iter().map(Piece::len).sum());
        for piece in pieces {
            match piece {
                Piece::New(bytes) => strings.push(OwnedString::from_bytes(self.api, bytes)?),
                Piece::Sent(sent) => self.retain(*sent, &mut strings)?,
            }
        }
        Some(strings)
    }

    /// Retains the command's arguments `sent` into `strings`; `None` past its end.
    fn retain(&self, sent: EverySecond, strings: &mut Vec<OwnedString>) -> Option<()> {
        let (first, count) = (
            c_int::try_from(sent.first).ok()?,
            c_int::try_from(sent.count).ok()?,
        );
        // The position after the last fits too: every one does.
        first.checked_add(count.checked_mul(2)?)?;
        for index in 0..count {
            // SAFETY: the filter context is live; a position past the end answers NULL.
            let arg = unsafe { (self.api.command_filter_arg_get)(self.raw, first + 2 * index) };
            if arg.is_null() {
                return None;
            }
            // SAFETY: a non-null argument is a live string of the command.
            strings.push(unsafe { OwnedString::retained(self.api, arg) });
        }
        Some(())
    }

    /// Makes `change` with its arguments `with`, whose positions exist; false if a step failed.
    unsafe fn change(&self, change: &ArgsChange, with: Vec<OwnedString>) -> bool {
        let (at, count, added) = (change.at, change.replaced, with.len());
        let pos = |index: usize| c_int::try_from(at + index).ok();
        // Replace, then insert what is left, or delete what is left from its end (moving nothing).
        let placed = with.into_iter().enumerate().all(|(index, arg)| {
            // SAFETY: the position exists (the caller's contract).
            pos(index).is_some_and(|pos| unsafe { self.put(pos, arg, index < count) })
        });
        placed
            && (added..count).rev().all(|index| {
                // SAFETY: as above.
                pos(index).is_some_and(|pos| unsafe {
                    (self.api.command_filter_arg_delete)(self.raw, pos) == OK
                })
            })
    }

    /// Replaces argument `pos` with `string`, or inserts it; false if not.
    unsafe fn put(&self, pos: c_int, string: OwnedString, replace: bool) -> bool {
        let put = if replace {
            self.api.command_filter_arg_replace
        } else {
            self.api.command_filter_arg_insert
        };
        // SAFETY: the caller's contract; on success the command owns the string.
        let status = unsafe { put(self.raw, pos, string.ptr) };
        if status == OK {
            std::mem::forget(string); // handed over; else freed on drop
        }
        status == OK
    }
}

/// The string last shown of each configuration (room for four): the server copies it at once, so
/// it is freed when the next replaces it.
static SHOWN: [AtomicPtr<RedisModuleString>; 4] = [const { AtomicPtr::new(null_mut()) }; 4];

pub(super) unsafe extern "C" fn config_get<C: Configs>(
    _name: *const c_char,
    index: *mut c_void,
) -> *mut RedisModuleString {
    let value = catch_unwind(|| C::get(index.addr())).unwrap_or_default();
    let (Some(api), Some(shown)) = (API.get(), SHOWN.get(index.addr())) else {
        return null_mut();
    };
    let Some(string) = OwnedString::from_bytes(api, value.as_bytes()) else {
        return null_mut();
    };
    let shown_before = shown.swap(string.ptr, Ordering::Relaxed);
    drop(OwnedString::new(shown_before, api));
    std::mem::ManuallyDrop::new(string).ptr
}

pub(super) unsafe extern "C" fn config_set<C: Configs>(
    _name: *const c_char,
    value: *mut RedisModuleString,
    index: *mut c_void,
    err: *mut *mut RedisModuleString,
) -> c_int {
    let Some(api) = API.get() else { return ERR };
    let value = String::from_utf8_lossy(Arg::of(api, value).bytes());
    let error = match caught(|| C::set(index.addr(), &value)) {
        Ok(()) => return OK,
        Err(error) => OwnedString::from_bytes(api, error.as_bytes()),
    };
    if let (false, Some(error)) = (err.is_null(), error) {
        // SAFETY: err is the server's out-parameter; the server frees the string.
        unsafe { *err = std::mem::ManuallyDrop::new(error).ptr };
    }
    ERR
}

pub(super) unsafe extern "C" fn info_section<I: InfoSection>(
    ctx: *mut raw::RedisModuleInfoCtx,
    _for_crash_report: c_int,
) {
    let Some(api) = API.get() else { return };
    let _ = catch_unwind(|| {
        // SAFETY: a NULL context reads only server-wide flags.
        let flags = unsafe { (api.get_context_flags)(std::ptr::null_mut()) };
        let aof = flags & raw::REDISMODULE_CTX_FLAGS_AOF as c_int != 0;
        // SAFETY: ctx is the server's INFO context; a NULL name makes the section the module's own.
        unsafe { (api.info_add_section)(ctx, std::ptr::null()) };
        // The add calls fail only outside an INFO callback or for a field of no section: ignored.
        let clamp = |n: u64| c_longlong::try_from(n).unwrap_or(c_longlong::MAX);
        for (name, value) in I::fields(aof) {
            let name = name.as_ptr();
            // SAFETY: as above; the strings are NUL-terminated and copied.
            unsafe {
                match value {
                    InfoValue::Integer(n) => (api.info_add_field_long_long)(ctx, name, clamp(n)),
                    InfoValue::Text(text) => {
                        (api.info_add_field_c_string)(ctx, name, text.as_ptr())
                    }
                }
            };
        }
    });
}
