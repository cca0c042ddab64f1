//! One command call: context, arguments, reply, flags, keys, strings.

use std::ffi::CString;
use std::marker::PhantomData;
use std::ptr::null_mut;

use libc::c_int;
use redis_module::raw::{self, RedisModuleCtx, RedisModuleString};

use super::api::{log, Api, LogLevel, API};

pub struct KeyPositions<'call>(pub(super) Ctx<'call>);

impl KeyPositions<'_> {
    /// Declares argv at each of `indexes` a key that the command overwrites.
    pub fn keys_at(&self, indexes: impl Iterator<Item = usize>) {
        let flags = raw::REDISMODULE_CMD_KEY_OW as c_int | raw::REDISMODULE_CMD_KEY_UPDATE as c_int;
        let positions = indexes.map_while(|index| c_int::try_from(index).ok());
        let (raw, api) = (self.0.raw, self.0.api);
        match api.key_at_pos_with_flags {
            Some(with_flags) => positions.for_each(|pos| {
                // SAFETY: the context is a key-positions one; pos is within argv.
                unsafe { with_flags(raw, pos, flags) }
            }),
            // Before Redis 7.0: no flags; ACLs then require full access.
            None => positions.for_each(|pos| {
                // SAFETY: as above.
                unsafe { (api.key_at_pos)(raw, pos) }
            }),
        }
    }

    pub fn now_ms(&self) -> i64 {
        self.0.now_ms()
    }
}

/// What a command sends back: `+OK`, `:n` or `-<text>` (text starting with a code: `ERR ...`).
#[derive(Debug)]
pub enum Reply {
    Ok,
    Integer(i64),
    Error(CString),
}

/// The server context of one command call; not `Send`: it must not leave its call (and thread).
pub struct Ctx<'call> {
    pub(super) raw: *mut RedisModuleCtx,
    pub(super) api: &'static Api,
    _call: PhantomData<&'call mut RedisModuleCtx>,
}

/// One command argument, borrowed from the server for the call.
#[derive(Clone, Copy)]
pub struct Arg<'call> {
    pub(super) ptr: *mut RedisModuleString,
    pub(super) bytes: &'call [u8],
}

impl AsRef<[u8]> for Arg<'_> {
    fn as_ref(&self) -> &[u8] {
        self.bytes
    }
}

impl<'call> Arg<'call> {
    pub fn bytes(&self) -> &'call [u8] {
        self.bytes
    }

    /// A view of the live string `ptr`; the caller ties `'call` to the string's life.
    pub(super) fn of(api: &Api, ptr: *mut RedisModuleString) -> Arg<'call> {
        let mut len = 0usize;
        // SAFETY: ptr is a live string; the pointer StringPtrLen gives stays valid while it does.
        let bytes = unsafe { slice((api.string_ptr_len)(ptr, &mut len).cast(), len) };
        Arg { ptr, bytes }
    }
}

/// A command argument read only when looked at (where the server asks for a call's keys): the
/// server's own argument array, not copied.
#[derive(Clone, Copy)]
#[repr(transparent)]
pub struct LazyArg<'call>(*mut RedisModuleString, PhantomData<&'call ()>);

impl LazyArg<'_> {
    /// The `argc` arguments at `argv`. Safety: `argv` holds `argc` live strings for `'call`.
    pub(super) unsafe fn all<'call>(
        argv: *mut *mut RedisModuleString,
        argc: c_int,
    ) -> &'call [LazyArg<'call>] {
        let len = usize::try_from(argc).unwrap_or(0);
        // SAFETY: the caller's contract; LazyArg is a transparent pointer to a string.
        unsafe { slice(argv.cast::<LazyArg<'call>>(), len) }
    }
}

impl AsRef<[u8]> for LazyArg<'_> {
    fn as_ref(&self) -> &[u8] {
        // The API is resolved at load, before any command runs.
        API.get().map_or(&[], |api| Arg::of(api, self.0).bytes)
    }
}

/// The `len` items at `data`, none if NULL. Safety: a non-null `data` has `len` items for `'a`.
pub(super) unsafe fn slice<'a, T>(data: *const T, len: usize) -> &'a [T] {
    if data.is_null() || len == 0 {
        return &[];
    }
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts(data, len) }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextFlags {
    /// On, or being turned on.
    pub aof: bool,
    pub replicated: bool,
    /// The AOF replays this call.
    pub loading: bool,
    /// An RDB or AOF rewrite child runs: key lookups do not touch keys meanwhile.
    pub active_child: bool,
    pub cluster: bool,
}

impl<'call> Ctx<'call> {
    /// A called-back context; `None` before the module API lookup (never once loaded).
    pub(super) fn of(raw: *mut RedisModuleCtx) -> Option<Ctx<'call>> {
        API.get().map(|api| Ctx {
            raw,
            api,
            _call: PhantomData,
        })
    }

    /// The call's arguments, each as `arg` makes it ([`Arg::of`], a [`LazyArg`]). Safety: `argv`
    /// is NULL or holds `argc` live strings that outlive the call (the server's).
    pub(super) unsafe fn args<T>(
        &self,
        argv: *mut *mut RedisModuleString,
        argc: c_int,
        arg: impl Fn(&'static Api, *mut RedisModuleString) -> T,
    ) -> Vec<T> {
        // SAFETY: the caller's contract.
        let argv = unsafe { slice(argv, usize::try_from(argc).unwrap_or(0)) };
        argv.iter().map(|&ptr| arg(self.api, ptr)).collect()
    }

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

    pub fn now_ms(&self) -> i64 {
        // SAFETY: no arguments; reads the server clock.
        unsafe { (self.api.milliseconds)() }
    }

    pub fn flags(&self) -> ContextFlags {
        // SAFETY: ctx is live (a command's or the load's); the call only reads state.
        let flags = unsafe { (self.api.get_context_flags)(self.raw) };
        let has = |flag: u32| flags & flag as c_int != 0;
        ContextFlags {
            aof: has(raw::REDISMODULE_CTX_FLAGS_AOF),
            replicated: has(raw::REDISMODULE_CTX_FLAGS_REPLICATED),
            loading: has(raw::REDISMODULE_CTX_FLAGS_LOADING)
                || has(raw::REDISMODULE_CTX_FLAGS_ASYNC_LOADING),
            active_child: has(raw::REDISMODULE_CTX_FLAGS_ACTIVE_CHILD),
            cluster: has(raw::REDISMODULE_CTX_FLAGS_CLUSTER),
        }
    }

    pub fn string(&self, bytes: &[u8]) -> Option<OwnedString> {
        OwnedString::from_bytes(self.api, bytes)
    }

    pub fn words(&self, words: &[Word]) -> Option<Vec<OwnedString>> {
        let string = |word: &Word| match *word {
            Word::Text(text) => self.string(text),
            Word::Number(n) => self.string(n.to_string().as_bytes()),
        };
        words.iter().map(string).collect()
    }

    pub fn log_warning(&self, message: &str) {
        log(self.raw, LogLevel::Warning, message);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Word {
    Text(&'static [u8]),
    Number(i64),
}

/// A module-owned string, released with `RedisModule_FreeString` on drop.
pub struct OwnedString {
    pub(super) ptr: *mut RedisModuleString,
    api: &'static Api,
}

impl OwnedString {
    pub(super) fn new(ptr: *mut RedisModuleString, api: &'static Api) -> Option<OwnedString> {
        // `then`, not `then_some`: an eagerly built value would be dropped, freeing the pointer.
        (!ptr.is_null()).then(|| OwnedString { ptr, api })
    }

    /// A copy of `bytes`: ours to free, or to hand over (then forgotten).
    pub(super) fn from_bytes(api: &'static Api, bytes: &[u8]) -> Option<OwnedString> {
        // SAFETY: bytes is a valid slice; a NULL ctx makes the string ours to free.
        let ptr = unsafe { (api.create_string)(null_mut(), bytes.as_ptr().cast(), bytes.len()) };
        OwnedString::new(ptr, api)
    }

    /// Another reference to the string `ptr`, ours to free or hand over. Safety: `ptr` is live.
    pub(super) unsafe fn retained(api: &'static Api, ptr: *mut RedisModuleString) -> OwnedString {
        // SAFETY: the caller's contract; a NULL ctx increments its reference count.
        unsafe { (api.retain_string)(null_mut(), ptr) };
        OwnedString { ptr, api }
    }

    pub fn arg(&self) -> Arg<'_> {
        Arg::of(self.api, self.ptr)
    }
}

impl Drop for OwnedString {
    fn drop(&mut self) {
        // SAFETY: created with a NULL ctx (or handed over to free): ours to release, exactly once.
        unsafe { (self.api.free_string)(null_mut(), self.ptr) };
    }
}
