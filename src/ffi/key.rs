//! An open key: what it holds, its value buffer, deadline and LFU/LRU metadata.

use std::marker::PhantomData;

use libc::{c_int, c_longlong};
use redis_module::raw::{self, RedisModuleKey};

use super::api::{Api, OK};
use super::ctx::{Arg, Ctx};
use super::sds;

/// What an open key holds: nothing, a string of this length, or another type.
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

impl<'call> Ctx<'call> {
    /// Opens `key` for writing as a write command does (no hit/miss stats, expired keys removed).
    pub fn open_key(&self, key: Arg<'call>, touch: Touch) -> Option<Key<'call>> {
        let mut mode = raw::REDISMODULE_READ as c_int | raw::REDISMODULE_WRITE as c_int;
        if touch == Touch::No {
            mode |= raw::REDISMODULE_OPEN_KEY_NOTOUCH as c_int;
        }
        // SAFETY: ctx and key are live for this call; the handle is closed by Key::drop.
        let handle = unsafe { (self.api.open_key)(self.raw, key.ptr, mode) };
        (!handle.is_null()).then(|| Key {
            raw: handle,
            api: self.api,
            buffer: None,
            _ctx: PhantomData,
        })
    }

    /// Opens `key` only to look at it, with no effect a client could see (no access counted, no
    /// keyspace hit or miss, no `keymiss` event); `None` if missing. Closing it signals nothing.
    pub fn open_key_to_read(&self, key: Arg<'call>) -> Option<Key<'call>> {
        let mode = raw::REDISMODULE_READ as c_int
            | raw::REDISMODULE_OPEN_KEY_NOTOUCH as c_int
            | raw::REDISMODULE_OPEN_KEY_NOSTATS as c_int
            | raw::REDISMODULE_OPEN_KEY_NONOTIFY as c_int;
        // SAFETY: ctx and key are live for this call; closed by Key::drop.
        let handle = unsafe { (self.api.open_key)(self.raw, key.ptr, mode) };
        (!handle.is_null()).then(|| Key {
            raw: handle,
            api: self.api,
            buffer: None,
            _ctx: PhantomData,
        })
    }
}

/// A key opened for writing, closed on drop, silently (writers call [`Ctx::signal_modified`]).
pub struct Key<'ctx> {
    pub(super) raw: *mut RedisModuleKey,
    pub(super) api: &'static Api,
    /// The private string buffer [`OpenKey::allocation`] got (`RedisModule_StringDMA`) and its
    /// length, for [`OpenKey::overwrite`]: valid while the key stays open and its value unchanged
    /// (nothing else writes the value meanwhile).
    buffer: Option<(*mut u8, usize)>,
    pub(super) _ctx: PhantomData<&'ctx ()>,
}

impl Key<'_> {
    /// True when the key does not exist (or has logically expired).
    pub fn is_empty(&self) -> bool {
        // SAFETY: raw is an open key handle.
        unsafe { (self.api.key_type)(self.raw) == raw::REDISMODULE_KEYTYPE_EMPTY as c_int }
    }
}

/// An open key as `crate::write` uses it: [`Key`], or the unit tests' store (`A`: an argument).
pub trait OpenKey<A> {
    /// What the key holds, with one type lookup.
    fn contents(&self) -> Contents;
    /// The buffer's allocation, once made private; `None` unless a non-empty string of `len` bytes.
    fn allocation(&mut self, len: usize) -> Option<sds::Allocation>;
    /// Writes `bytes` over the string value of the same length in place.
    fn overwrite(&mut self, bytes: &[u8]) -> bool;
    /// Stores `value` (the TTL is cleared).
    fn set(&mut self, value: A) -> bool;
    /// The absolute expiry, if the key exists and has one.
    fn deadline(&self) -> Option<i64>;
    /// Sets the TTL from the server's command time snapshot where it has one, as SET; the deadline.
    fn expire_in(&mut self, ms: i64) -> Option<i64>;
    fn expire_at(&mut self, at: i64) -> bool;
    /// Removes the TTL, as SET without an expiry option does.
    fn persist(&mut self) -> bool;
    /// The LFU counter, when the eviction policy is LFU.
    fn lfu(&self) -> Option<i64>;
    /// Sets the LFU counter (a no-op unless the policy is LFU).
    fn set_lfu(&mut self, lfu: i64);
    /// A fresh LRU clock (a no-op under LFU).
    fn mark_used_now(&mut self);
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
        let mut found = 0usize;
        // SAFETY: raw is an open key; DMA in write mode first makes the value a private raw string.
        let dst =
            unsafe { (self.api.string_dma)(self.raw, &mut found, raw::REDISMODULE_WRITE as c_int) };
        if dst.is_null() || found != len || len == 0 {
            return None;
        }
        self.buffer = Some((dst.cast::<u8>(), len));
        // SAFETY: dst is the DMA buffer of this live string value, len bytes.
        Some(unsafe { sds::allocation(dst, len) })
    }

    /// Keeps the key's dict and TTL entries; false (nothing written) unless the lengths are equal.
    /// Writes into the buffer [`OpenKey::allocation`] got, or gets it.
    fn overwrite(&mut self, bytes: &[u8]) -> bool {
        let (dst, len) = match self.buffer.take() {
            Some(buffer) => buffer,
            None => {
                let mut len = 0usize;
                // SAFETY: raw is an open key; DMA in write mode makes the value private.
                let dst = unsafe {
                    (self.api.string_dma)(self.raw, &mut len, raw::REDISMODULE_WRITE as c_int)
                };
                (dst.cast::<u8>(), len)
            }
        };
        if dst.is_null() || len != bytes.len() || len == 0 {
            return false;
        }
        // SAFETY: dst has len writable private bytes (the value is unchanged since DMA gave it),
        // bytes as many; copy (memmove) allows overlap.
        unsafe { std::ptr::copy(bytes.as_ptr(), dst, len) };
        true
    }

    /// The server keeps its own reference to `value`.
    fn set(&mut self, value: Arg<'c>) -> bool {
        // SAFETY: raw is an open write handle and value a live string.
        unsafe { (self.api.string_set)(self.raw, value.ptr) == OK }
    }

    fn expire_in(&mut self, ms: i64) -> Option<i64> {
        // SAFETY: raw is an open write handle on an existing key.
        if unsafe { (self.api.set_expire)(self.raw, ms) } != OK {
            return None;
        }
        self.deadline()
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
        if self.is_empty() {
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
