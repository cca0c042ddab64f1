//! The keyspace of one call (opening keys, their signals and events), and an open key: what it
//! holds, its value buffer, deadline and LFU/LRU metadata.

use std::ffi::CStr;
use std::marker::PhantomData;

use libc::{c_int, c_longlong};
use redis_module::raw::{self, RedisModuleKey};

use super::api::{Api, OK};
use super::call::ServerWrite;
use super::ctx::{Arg, Ctx};
use super::sds;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Contents {
    Nothing,
    String(usize),
    Other,
}

/// Whether opening a key counts as an access (LRU/LFU), as a command's lookup does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Touch {
    Yes,
    No,
}

/// A key opened for writing, closed on drop, silently (writers call [`Keyspace::signal`]).
pub struct Key<'ctx> {
    raw: *mut RedisModuleKey,
    api: &'static Api,
    /// What [`OpenKey::allocation`] got by DMA, for `overwrite` (valid while open and unchanged).
    buffer: Option<(*mut u8, usize)>,
    _ctx: PhantomData<&'ctx ()>,
}

impl<'c> Key<'c> {
    pub(super) fn open(ctx: &Ctx<'c>, key: Arg<'c>, mode: u32) -> Option<Key<'c>> {
        // SAFETY: ctx and key are live for this call; the handle is closed by Key::drop.
        let raw = unsafe { (ctx.api.open_key)(ctx.raw, key.ptr, mode as c_int) };
        (!raw.is_null()).then(|| Key {
            raw,
            api: ctx.api,
            buffer: None,
            _ctx: PhantomData,
        })
    }

    fn dma(&self) -> (*mut u8, usize) {
        let mut len = 0usize;
        // SAFETY: raw is an open key; DMA in write mode first makes the value a private raw string.
        let dst =
            unsafe { (self.api.string_dma)(self.raw, &mut len, raw::REDISMODULE_WRITE as c_int) };
        (dst.cast::<u8>(), len)
    }
}

/// An open key as `crate::write` uses it: [`Key`], or the unit tests' store.
pub trait OpenKey<A> {
    fn contents(&self) -> Contents;
    /// The buffer's allocation, once made private; `None` unless a string of `len` (> 0) bytes.
    fn allocation(&mut self, len: usize) -> Option<sds::Allocation>;
    /// Writes `bytes` over the same-length string value in place.
    fn overwrite(&mut self, bytes: &[u8]) -> bool;
    fn set(&mut self, value: A) -> bool;
    fn deadline(&self) -> Option<i64>;
    /// Sets the TTL from the command's time snapshot where there is one, as SET; the deadline.
    fn expire_in(&mut self, ms: i64) -> Option<i64>;
    fn expire_at(&mut self, at: i64) -> bool;
    fn persist(&mut self) -> bool;
    /// The LFU counter, when the eviction policy is LFU.
    fn lfu(&self) -> Option<i64>;
    /// Sets the LFU counter (a no-op unless the policy is LFU).
    fn set_lfu(&mut self, lfu: i64);
    /// A fresh LRU clock (a no-op under LFU).
    fn mark_used_now(&mut self);
}

/// The keyspace of one call as `crate::write` uses it: [`Ctx`], or the unit tests' store.
pub trait Keyspace {
    type Arg: Copy + AsRef<[u8]>;
    type Key: OpenKey<Self::Arg>;
    /// Opens `key` for writing as a write command does (no hit/miss stats, expired keys removed).
    fn open(&self, key: Self::Arg, touch: Touch) -> Option<Self::Key>;
    /// Opens `key` to look at it unseen (no access, hit, miss or `keymiss`); `None` if missing.
    fn look(&self, key: Self::Arg) -> Option<Self::Key>;
    fn notify(&self, class: EventClass, event: &'static CStr, key: Self::Arg);
    /// Tells WATCH and client-side caching that `key` changed.
    fn signal(&self, key: Self::Arg);
    /// Runs the server's command on `pairs`; false if it failed.
    fn run(&self, call: &ServerWrite, pairs: &[Self::Arg]) -> bool;
}

/// Keyspace event classes (`notify-keyspace-events` `$`, `g`, and `o`: Redis 8.2+'s `overwritten`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventClass {
    String,
    Generic,
    Overwritten,
}

impl<'c> Keyspace for Ctx<'c> {
    type Arg = Arg<'c>;
    type Key = Key<'c>;

    fn open(&self, key: Arg<'c>, touch: Touch) -> Option<Key<'c>> {
        let write = raw::REDISMODULE_READ | raw::REDISMODULE_WRITE;
        match touch {
            Touch::Yes => Key::open(self, key, write),
            Touch::No => Key::open(self, key, write | raw::REDISMODULE_OPEN_KEY_NOTOUCH),
        }
    }

    fn look(&self, key: Arg<'c>) -> Option<Key<'c>> {
        let quiet = raw::REDISMODULE_OPEN_KEY_NOTOUCH
            | raw::REDISMODULE_OPEN_KEY_NOSTATS
            | raw::REDISMODULE_OPEN_KEY_NONOTIFY;
        Key::open(self, key, raw::REDISMODULE_READ | quiet)
    }

    fn notify(&self, class: EventClass, event: &'static CStr, key: Arg<'c>) {
        let class = match class {
            EventClass::String => raw::REDISMODULE_NOTIFY_STRING,
            EventClass::Generic => raw::REDISMODULE_NOTIFY_GENERIC,
            EventClass::Overwritten => raw::REDISMODULE_NOTIFY_OVERWRITTEN,
        };
        // SAFETY: ctx, event and key are live; the status only flags a missing client (never here).
        unsafe { (self.api.notify_keyspace_event)(self.raw, class, event.as_ptr(), key.ptr) };
    }

    fn signal(&self, key: Arg<'c>) {
        // SAFETY: ctx and key are live for the call; always returns OK.
        unsafe { (self.api.signal_modified_key)(self.raw, key.ptr) };
    }

    fn run(&self, call: &ServerWrite, pairs: &[Arg<'c>]) -> bool {
        self.call_with_pairs(call, pairs)
    }
}

impl<'c> OpenKey<Arg<'c>> for Key<'c> {
    fn contents(&self) -> Contents {
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

    /// From the sds header ([`sds`]); making the value private may copy it, which no client sees.
    fn allocation(&mut self, len: usize) -> Option<sds::Allocation> {
        let (dst, found) = self.dma();
        if dst.is_null() || found != len || len == 0 {
            return None;
        }
        self.buffer = Some((dst, len));
        // SAFETY: dst is the DMA buffer of this live string value, len bytes.
        Some(unsafe { sds::allocation(dst, len) })
    }

    /// Keeps the key's dict and TTL entries; writes into the buffer `allocation` got, or gets it.
    fn overwrite(&mut self, bytes: &[u8]) -> bool {
        let (dst, len) = self.buffer.take().unwrap_or_else(|| self.dma());
        if dst.is_null() || len != bytes.len() || len == 0 {
            return false;
        }
        // SAFETY: dst has len private writable bytes (value unchanged since DMA), bytes as many.
        unsafe { std::ptr::copy(bytes.as_ptr(), dst, len) };
        true
    }

    fn set(&mut self, value: Arg<'c>) -> bool {
        // SAFETY: raw is an open write handle and value a live string.
        unsafe { (self.api.string_set)(self.raw, value.ptr) == OK }
    }
    fn expire_in(&mut self, ms: i64) -> Option<i64> {
        // SAFETY: raw is an open write handle on an existing key.
        let set = unsafe { (self.api.set_expire)(self.raw, ms) } == OK;
        set.then(|| self.deadline()).flatten()
    }
    fn expire_at(&mut self, deadline_ms: i64) -> bool {
        // SAFETY: raw is an open write handle.
        unsafe { (self.api.set_abs_expire)(self.raw, deadline_ms) == OK }
    }
    fn persist(&mut self) -> bool {
        // SAFETY: raw is an open write handle on an existing key.
        unsafe { (self.api.set_expire)(self.raw, raw::REDISMODULE_NO_EXPIRE as i64) == OK }
    }
    fn deadline(&self) -> Option<i64> {
        // Redis 8.6 reads the value unchecked: asking about a missing key crashes the server.
        // SAFETY: raw is an open key handle.
        if unsafe { (self.api.key_type)(self.raw) } == raw::REDISMODULE_KEYTYPE_EMPTY as c_int {
            return None;
        }
        // SAFETY: raw is an open key handle on an existing key.
        let deadline = unsafe { (self.api.get_abs_expire)(self.raw) };
        (deadline != raw::REDISMODULE_NO_EXPIRE as i64).then_some(deadline)
    }
    fn mark_used_now(&mut self) {
        // SAFETY: raw is an open key handle; ERR under LFU changes nothing.
        unsafe { (self.api.set_lru)(self.raw, 0) };
    }
    fn lfu(&self) -> Option<i64> {
        let mut freq: c_longlong = 0;
        // SAFETY: raw is an open key handle; freq is a valid out pointer.
        (unsafe { (self.api.get_lfu)(self.raw, &mut freq) } == OK).then_some(freq)
    }
    fn set_lfu(&mut self, freq: i64) {
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
