//! Writes the keys of one call as `SET key value <expiry>` would leave them, each reported to a
//! [`Sink`] (DESIGN.md, "Writing a key"); after an [`Abort`] the keys before stay replicated.

use crate::deadline::{self, Expiry, Resolved};
use crate::ffi::{
    fresh_part, Contents, EventClass, Head, Keyspace, OpenKey, Propagation, ServerWrite, Touch,
    Values, Word,
};
use crate::outcome::Abort;
use crate::server::{PastDeadline, Profile, ServerCommand};
use crate::syntax::{is_i64, Condition};
use crate::{sizing, stats};

/// Pairs per batch: enough to spread its cost, few enough to keep the batch filter sparse.
const BATCH_MAX: usize = 256;

/// How a key was written: what counted it for RDB saves (`server.dirty`), what is left to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WrittenBy {
    /// Nothing counted or sent it yet.
    KeyApi,
    /// A server command called without replication (MSET, built-in MSETEX): counted only.
    Command,
    /// A server command called with replication (SET, `!`): counted and sent.
    ReplicatedCommand,
}

/// The call's replication: told of every key the primary kept, with the expiry it holds.
pub trait Sink<A> {
    fn written(&mut self, key: A, by: WrittenBy, expiry: Resolved);
    /// A key a server command wrote was gone before the module could finish it: nothing to send.
    fn vanished(&mut self, key: A);
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Batching {
    Mset,
    /// The built-in MSETEX (Valkey 9.1+).
    Builtin,
    /// `SET key value <expiry> !` per key, where the deadline may be past on Valkey 8+.
    EveryKeyWithSet,
}

impl Batching {
    pub fn choose(profile: &Profile, expiry: Expiry, now_ms: i64) -> Batching {
        match expiry {
            Expiry::At(at)
                if profile.past_deadline == PastDeadline::DecidedBySet && at <= now_ms =>
            {
                Batching::EveryKeyWithSet
            }
            _ if profile.builtin_batch() => Batching::Builtin,
            _ => Batching::Mset,
        }
    }
}

/// NX / XX: checks every key before any write as a write command looks it up, without stats,
/// signals or (but where SET's check counts one) an access.
pub fn condition_holds<K: Keyspace>(
    keyspace: &K,
    profile: &Profile,
    pairs: &[K::Arg],
    condition: Condition,
) -> bool {
    let wanted = match condition {
        Condition::Always => return true,
        Condition::NoneExist => false,
        Condition::AllExist => true,
    };
    let touch = if profile.nx_check_counts_access {
        Touch::Yes
    } else {
        Touch::No
    };
    let exists = |key: K::Arg| holds_a_value(look_at(keyspace, profile, key, touch));
    pairs.iter().step_by(2).all(|key| exists(*key) == wanted)
}

fn holds_a_value<A>(handle: Option<impl OpenKey<A>>) -> bool {
    handle.is_some_and(|h| h.contents() != Contents::Nothing)
}

/// `key` opened to be looked at, with no signal and (but for `touch`) no effect: for reading
/// where closing a write-opened key signals it (Redis 8.6), else for writing.
fn look_at<K: Keyspace>(
    keyspace: &K,
    profile: &Profile,
    key: K::Arg,
    touch: Touch,
) -> Option<K::Key> {
    if profile.signal_on_close {
        keyspace.look(key)
    } else {
        keyspace.open(key, touch)
    }
}

/// Writes every pair; returns how many keys the call left written. `forking`: an RDB or AOF
/// rewrite child runs (key lookups then leave LRU clocks alone).
pub fn write_all<K: Keyspace, S: Sink<K::Arg>>(
    keyspace: &K,
    profile: &Profile,
    pairs: &[K::Arg],
    expiry: Expiry,
    batching: Batching,
    forking: bool,
    sink: &mut S,
) -> Result<usize, Abort> {
    let mut writer = Writer {
        keyspace,
        profile,
        expiry,
        batching,
        forking,
        sink,
        batch: Batch::new(pairs),
        written: 0,
        in_place: 0,
        new_keys_seen: false,
    };
    let outcome = (pairs.chunks_exact(2).enumerate()).try_for_each(|(at, pair)| match pair {
        [key, value] => writer.pair(at, *key, *value),
        _ => Ok(()),
    });
    let outcome = outcome.and_then(|()| writer.flush());
    stats::record_in_place(writer.in_place);
    outcome.map(|()| writer.written)
}

struct Writer<'w, K: Keyspace, S> {
    keyspace: &'w K,
    profile: &'w Profile,
    expiry: Expiry,
    batching: Batching,
    forking: bool,
    sink: &'w mut S,
    batch: Batch<'w, K::Arg>,
    written: usize,
    in_place: usize,
    /// A key of this call was new where new keys go to MSET.
    new_keys_seen: bool,
}

impl<K: Keyspace, S: Sink<K::Arg>> Writer<'_, K, S> {
    fn pair(&mut self, at: usize, key: K::Arg, value: K::Arg) -> Result<(), Abort> {
        // Integers and values SET embeds go to the batch unopened (its lookup is the one access;
        // KEEPTTL: the key's TTL decides), and so does every key after a new one where new keys
        // go to MSET (DESIGN.md, "Writing a key").
        let integer = is_i64(value.as_ref());
        let batch_only = self.batching == Batching::EveryKeyWithSet
            || integer
            || (self.expiry != Expiry::Keep
                && (self.new_keys_seen || self.embeds(key, value, false)));
        if batch_only {
            return self.defer(at, key, integer, None);
        }
        if self.batch.len() > 0 && self.batch.holds(Batch::bit(key), key) {
            self.flush()?;
        }
        // One access, as SET's own lookup of the key.
        let mut handle = self.open(key, Touch::Yes)?;
        let Some(in_place) = self.key_api_path(&mut handle, key, value) else {
            // The batch's lookup is a second access: keep the LFU counter this one left.
            let lfu = handle.lfu();
            self.new_keys_seen |=
                self.profile.new_keys_by_mset() && handle.contents() == Contents::Nothing;
            drop(handle);
            return self.defer(at, key, false, lfu);
        };
        if self.batch.len() > 0 {
            // Waiting keys go first so events follow the arguments (this key is not among them).
            drop(handle);
            self.flush()?;
            handle = self.open(key, Touch::No)?;
        }
        let stored = if in_place {
            handle.overwrite(value.as_ref())
        } else {
            handle.set(value)
        };
        if !stored {
            return Err(Abort("write the value"));
        }
        self.key_api_done(handle, key, in_place)
    }

    fn open(&self, key: K::Arg, touch: Touch) -> Result<K::Key, Abort> {
        self.keyspace.open(key, touch).ok_or(Abort("open the key"))
    }

    /// Whether SET would embed `value` with `key` (`kept_ttl`: KEEPTTL keeps the key's TTL).
    fn embeds(&self, key: K::Arg, value: K::Arg, kept_ttl: bool) -> bool {
        let ttl_after = kept_ttl || matches!(self.expiry, Expiry::In(_) | Expiry::At(_));
        self.profile.in_place.is_some_and(|embedding| {
            embedding.embeds(key.as_ref().len(), value.as_ref().len(), ttl_after)
        })
    }

    /// Whether the key API writes `key` as SET would in place (a same-length string SET would not
    /// embed, in a buffer as compact as a fresh one) or as a new key; `None` if it cannot.
    fn key_api_path(&self, handle: &mut K::Key, key: K::Arg, value: K::Arg) -> Option<bool> {
        let len = value.as_ref().len();
        let kept_ttl = |handle: &K::Key| self.expiry == Expiry::Keep && handle.deadline().is_some();
        match handle.contents() {
            Contents::Nothing
                if !self.profile.new_keys_by_mset()
                    && (self.batching != Batching::Builtin || !self.embeds(key, value, false)) =>
            {
                Some(false)
            }
            Contents::String(found)
                if found == len
                    && len > 0
                    && self.profile.in_place.is_some()
                    && !self.embeds(key, value, kept_ttl(handle))
                    && handle
                        .allocation(len)
                        .is_some_and(|allocation| sizing::as_compact_as_fresh(allocation, len)) =>
            {
                Some(true)
            }
            _ => None,
        }
    }

    fn key_api_done(
        &mut self,
        mut handle: K::Key,
        key: K::Arg,
        in_place: bool,
    ) -> Result<(), Abort> {
        if in_place && self.profile.fires_overwritten {
            self.keyspace
                .notify(EventClass::Overwritten, c"overwritten", key);
        }
        self.keyspace.notify(EventClass::String, c"set", key);
        let set = self.apply_expiry(&mut handle, None, in_place);
        if in_place {
            // Where SET's new object gets a fresh LRU clock, so does this, even during a fork.
            if self.forking && self.profile.fresh_lru_on_overwrite {
                handle.mark_used_now();
            }
            self.in_place += 1;
        }
        // A failed deadline leaves the key its old TTL in place, none as a new key.
        self.finish(Some(handle), key, WrittenBy::KeyApi, set, Resolved::Keep)
    }

    /// Finishes a written key whose expiry `set` tried to set. Where that (or opening the key)
    /// failed, it is still signalled and reported as it stands (`held`: the expiry it kept) or as
    /// gone, then the failure returned: a replica must hold what the primary holds.
    #[inline(always)]
    fn finish(
        &mut self,
        handle: Option<K::Key>,
        key: K::Arg,
        by: WrittenBy,
        set: Result<Resolved, Abort>,
        held: Resolved,
    ) -> Result<(), Abort> {
        let expiry = match (handle, set) {
            (Some(handle), Ok(expiry)) => {
                drop(handle); // which signals the key on Redis 8.6
                expiry
            }
            (handle, set) => {
                drop(handle);
                return self.unfinished(key, by, set.err(), held);
            }
        };
        if !self.profile.signal_on_close {
            self.keyspace.signal(key);
        }
        if let Resolved::At(_) = expiry {
            self.keyspace.notify(EventClass::Generic, c"expire", key);
        }
        self.sink.written(key, by, expiry);
        self.written += 1;
        Ok(())
    }

    /// `finish` where the key could not be opened or its expiry set (`failed`; none: the open).
    #[cold]
    #[inline(never)]
    fn unfinished(
        &mut self,
        key: K::Arg,
        by: WrittenBy,
        failed: Option<Abort>,
        held: Resolved,
    ) -> Result<(), Abort> {
        self.keyspace.signal(key);
        if holds_a_value(self.keyspace.look(key)) {
            self.sink.written(key, by, held);
            self.written += 1;
        } else {
            self.sink.vanished(key);
        }
        Err(failed.unwrap_or(Abort("open the key")))
    }

    fn done(&mut self, key: K::Arg, by: WrittenBy) -> Result<(), Abort> {
        let expiry = self
            .expiry
            .resolved()
            .ok_or(Abort("resolve the deadline"))?;
        self.sink.written(key, by, expiry);
        self.written += 1;
        Ok(())
    }

    /// Sets a just written key's expiry (`kept`: its deadline before MSET cleared it; `in_place`:
    /// it kept its TTL entry); the call's expiry, resolved.
    fn apply_expiry(
        &mut self,
        handle: &mut K::Key,
        kept: Option<i64>,
        in_place: bool,
    ) -> Result<Resolved, Abort> {
        let (set, expiry, what) = match self.expiry {
            Expiry::In(ms) => {
                let at = handle.expire_in(ms).ok_or(Abort("set the expiry"))?;
                self.expiry.took_effect(at);
                return Ok(Resolved::At(at));
            }
            Expiry::At(at) => (handle.expire_at(at), Resolved::At(at), "set the expiry"),
            Expiry::Keep => (
                kept.is_none_or(|at| handle.expire_at(at)),
                Resolved::Keep,
                "restore the expiry",
            ),
            Expiry::Persist => (
                !in_place || handle.persist(),
                Resolved::Persist,
                "remove the expiry",
            ),
        };
        set.then_some(expiry).ok_or(Abort(what))
    }

    /// Puts the pair `at` in the batch, flushed first where it holds the other kind of value, this
    /// key, or is no run ending before `at`.
    #[inline(always)]
    fn defer(
        &mut self,
        at: usize,
        key: K::Arg,
        integer: bool,
        lfu: Option<i64>,
    ) -> Result<(), Abort> {
        let bit = Batch::<K::Arg>::bit(key);
        if self.batch.len() > 0
            && (self.batch.run.integers != integer
                || self.batch.run.first + self.batch.run.len != at
                || self.batch.holds(bit, key))
        {
            self.flush()?;
        }
        self.batch.run.integers = integer;
        self.batch.push(at, bit, lfu);
        if self.batch.len() >= BATCH_MAX {
            return self.flush();
        }
        Ok(())
    }

    /// Writes the waiting pairs with the server's own command: in one call, or integers in parts
    /// of [`fresh_part`] pairs, each finished before the next is written.
    #[inline(never)]
    fn flush(&mut self) -> Result<(), Abort> {
        if self.batch.len() == 0 {
            return Ok(());
        }
        let run = self.batch.take();
        let mut outcome = Ok(());
        let mut start = 0;
        while outcome.is_ok() && start < run.len {
            let left = run.len - start;
            let size = if run.integers { fresh_part(left) } else { left };
            outcome = match run.part(start, size) {
                Some(part) => match self.batching {
                    Batching::Mset => self.flush_to_mset(part),
                    Batching::Builtin => self.flush_to_builtin(part),
                    Batching::EveryKeyWithSet => self.flush_with_set(&part),
                },
                None => Err(Abort("split the batch")),
            };
            start += size;
        }
        let mut lfu = run.lfu;
        lfu.clear();
        self.batch.run.lfu = lfu;
        outcome
    }

    fn flush_to_mset(&mut self, mut part: Part<'_, K::Arg>) -> Result<(), Abort> {
        // KEEPTTL: MSET clears every TTL, so read them first.
        let kept: Vec<Option<i64>> = match self.expiry {
            Expiry::Keep => part.keys().map(|key| self.deadline_of(key)).collect(),
            _ => Vec::new(),
        };
        self.call_on(&part, ServerCommand::Mset, Head::None, Vec::new())?;
        // Every key MSET wrote is finished and reported, whatever failed: a replica must know.
        let mut outcome = Ok(());
        for (index, key) in part.keys().enumerate() {
            // Once every key left takes one deadline and nothing else, they go the short way.
            if let (Some(Resolved::At(at)), true, true) =
                (self.expiry.resolved(), kept.is_empty(), part.lfu.is_empty())
            {
                let rest = part.flat.get(2 * index..).unwrap_or_default();
                return outcome.and(self.expire_each(rest, at));
            }
            let mut handle = self.keyspace.open(key, Touch::No);
            let set = match handle.as_mut() {
                Some(handle) => {
                    let kept = kept.get(index).copied().flatten();
                    self.apply_expiry(handle, kept, false)
                }
                None => Err(Abort("open the key")),
            };
            if let (Some(lfu), Some(handle)) = (part.lfu_of(index), handle.as_mut()) {
                handle.set_lfu(lfu);
            }
            // MSET signalled the key as a client of its own: signalled again as the caller.
            let done = self.finish(handle, key, WrittenBy::Command, set, Resolved::Persist);
            outcome = outcome.and(done);
        }
        outcome
    }

    /// [`Self::flush_to_mset`]'s common case, in a loop of its own: deadline `at` on every key.
    fn expire_each(&mut self, pairs: &[K::Arg], at: i64) -> Result<(), Abort> {
        let mut outcome = Ok(());
        for &key in pairs.iter().step_by(2) {
            let mut handle = self.keyspace.open(key, Touch::No);
            let set = match handle.as_mut().map(|handle| handle.expire_at(at)) {
                Some(true) => Ok(Resolved::At(at)),
                _ => Err(Abort("set the expiry")),
            };
            let done = self.finish(handle, key, WrittenBy::Command, set, Resolved::Persist);
            outcome = outcome.and(done);
        }
        outcome
    }

    /// Built-in MSETEX with deadline and events; a relative TTL runs from its clock (read back).
    fn flush_to_builtin(&mut self, mut part: Part<'_, K::Arg>) -> Result<(), Abort> {
        let tail = deadline::options(self.expiry);
        self.call_on(&part, ServerCommand::Msetex, Head::Numkeys, tail)?;
        if let Expiry::In(_) = self.expiry {
            // One deadline for every key, from the built-in's clock: any key's tells it.
            let at = part.keys().find_map(|key| self.deadline_of(key));
            let at = at.ok_or(Abort("read the deadline"))?;
            self.expiry.took_effect(at);
        }
        for (index, key) in part.keys().enumerate() {
            // An access counter that cannot be put back is no reason to leave a key unsent.
            if let Some(lfu) = part.lfu_of(index) {
                if let Some(mut handle) = self.keyspace.open(key, Touch::No) {
                    handle.set_lfu(lfu);
                }
            }
            // As for MSET: signalled again as the caller.
            self.keyspace.signal(key);
            self.done(key, WrittenBy::Command)?;
        }
        Ok(())
    }

    /// `SET key value PXAT <deadline> !` per key, signalled again as the caller; only the keys
    /// SET left (it may delete one whose deadline is past) count.
    fn flush_with_set(&mut self, part: &Part<'_, K::Arg>) -> Result<(), Abort> {
        let call = ServerWrite {
            command: ServerCommand::Set.name(),
            head: Head::None,
            tail: deadline::options(self.expiry),
            values: Values::Fresh,
            propagation: Propagation::ByCommand,
        };
        for pair in part.flat.chunks_exact(2) {
            let Some(&key) = pair.first() else { continue };
            if !self.keyspace.run(&call, pair) {
                return Err(Abort("write the key with SET"));
            }
            self.keyspace.signal(key);
            // Looking at a key past its deadline expires it, as SET may have deleted it.
            if holds_a_value(self.keyspace.look(key)) {
                self.done(key, WrittenBy::ReplicatedCommand)?;
            }
        }
        Ok(())
    }

    /// Runs the server's `command` on a part of the batch (integers as fresh copies it may encode).
    fn call_on(
        &self,
        part: &Part<'_, K::Arg>,
        command: ServerCommand,
        head: Head,
        tail: Vec<Word>,
    ) -> Result<(), Abort> {
        let call = ServerWrite {
            command: command.name(),
            head,
            tail,
            values: if part.integers {
                Values::Fresh
            } else {
                Values::AsTheyAre
            },
            propagation: Propagation::ByModule,
        };
        let ran = self.keyspace.run(&call, part.flat);
        ran.then_some(())
            .ok_or(Abort("write the keys with the server's command"))
    }

    fn deadline_of(&self, key: K::Arg) -> Option<i64> {
        look_at(self.keyspace, self.profile, key, Touch::No).and_then(|h| h.deadline())
    }
}

/// Pairs waiting for one batch: a run of the call's pairs, and a filter of their keys.
struct Batch<'w, A> {
    run: Run<'w, A>,
    filter: [u64; 64],
}

/// A run of the call's pairs, until it is taken to be written.
struct Run<'w, A> {
    /// The call's pairs, flat as MSET takes them.
    call: &'w [A],
    first: usize,
    len: usize,
    /// The LFU counters to restore after the batch's own lookup, by pair.
    lfu: Vec<(usize, i64)>,
    integers: bool,
}

impl<'w, A: Copy> Run<'w, A> {
    fn empty(call: &'w [A]) -> Run<'w, A> {
        Run {
            call,
            first: 0,
            len: 0,
            lfu: Vec::new(),
            integers: false,
        }
    }

    fn flat(&self, start: usize, size: usize) -> Option<&'w [A]> {
        let from = self.first.checked_add(start)?.checked_mul(2)?;
        self.call.get(from..from.checked_add(size.checked_mul(2)?)?)
    }

    fn part(&self, start: usize, size: usize) -> Option<Part<'_, A>> {
        let end = start.checked_add(size)?;
        let lfu_from = self.lfu.partition_point(|(pair, _)| *pair < start);
        let lfu_to = self.lfu.partition_point(|(pair, _)| *pair < end);
        Some(Part {
            flat: self.flat(start, size)?,
            first: start,
            lfu: self.lfu.get(lfu_from..lfu_to)?,
            integers: self.integers,
        })
    }
}

impl<'w, A: Copy + AsRef<[u8]>> Batch<'w, A> {
    fn new(call: &'w [A]) -> Batch<'w, A> {
        Batch {
            run: Run::empty(call),
            filter: [0; 64],
        }
    }

    fn len(&self) -> usize {
        self.run.len
    }

    /// One bit of 4096 per key, from a hash of its bytes read eight at a time where they are (a
    /// byte at a time cost as much as the rest of the batch's bookkeeping).
    #[inline]
    fn bit(key: A) -> (usize, u64) {
        const MIX: u64 = 0x9e37_79b9_7f4a_7c15;
        let bytes = key.as_ref();
        let len = bytes.len();
        let word = |at: usize| {
            let chunk = bytes
                .get(at..at + 8)
                .and_then(|b| <[u8; 8]>::try_from(b).ok());
            u64::from_le_bytes(chunk.unwrap_or_default())
        };
        let half = |at: usize| {
            let chunk = bytes
                .get(at..at + 4)
                .and_then(|b| <[u8; 4]>::try_from(b).ok());
            u64::from(u32::from_le_bytes(chunk.unwrap_or_default()))
        };
        let byte = |at: usize| u64::from(bytes.get(at).copied().unwrap_or_default());
        let mut hash = 0xcbf2_9ce4_8422_2325_u64 ^ len as u64;
        let last = if len >= 8 {
            for at in (0..len - 8).step_by(8) {
                hash = (hash ^ word(at)).wrapping_mul(MIX);
            }
            word(len - 8)
        } else if len >= 4 {
            half(0) | half(len - 4) << 32
        } else if len > 0 {
            byte(0) | byte(len / 2) << 8 | byte(len - 1) << 16
        } else {
            0
        };
        hash = (hash ^ last).wrapping_mul(MIX);
        let bit = ((hash >> 52) % 4096) as usize;
        (bit / 64, 1 << (bit % 64))
    }

    /// Whether `key`, whose filter bit this is, waits: the filter rules most keys out, a scan
    /// confirms the rest (a needless flush costs).
    fn holds(&self, (word, mask): (usize, u64), key: A) -> bool {
        self.filter.get(word).is_some_and(|w| w & mask != 0)
            && self.run.flat(0, self.run.len).is_some_and(|flat| {
                flat.iter()
                    .step_by(2)
                    .any(|waiting| waiting.as_ref() == key.as_ref())
            })
    }

    /// Adds the pair `at`, which extends the run (or starts it); `(word, mask)`: its key's bit.
    fn push(&mut self, at: usize, (word, mask): (usize, u64), lfu: Option<i64>) {
        let run = &mut self.run;
        if run.len == 0 {
            run.first = at;
        }
        if let Some(w) = self.filter.get_mut(word) {
            *w |= mask;
        }
        if let Some(lfu) = lfu {
            run.lfu.push((run.len, lfu));
        }
        run.len += 1;
    }

    fn take(&mut self) -> Run<'w, A> {
        self.filter = [0; 64];
        let call = self.run.call;
        std::mem::replace(&mut self.run, Run::empty(call))
    }
}

struct Part<'b, A> {
    flat: &'b [A],
    /// The batch's index of the first pair.
    first: usize,
    /// The LFU counters of these pairs left to restore, by the batch's index.
    lfu: &'b [(usize, i64)],
    integers: bool,
}

impl<'b, A: Copy> Part<'b, A> {
    fn keys(&self) -> impl Iterator<Item = A> + 'b {
        self.flat.iter().step_by(2).copied()
    }

    /// The LFU counter to restore of the part's key `index`, asked for in order.
    fn lfu_of(&mut self, index: usize) -> Option<i64> {
        match self.lfu {
            [(pair, counter), rest @ ..] if *pair == self.first + index => {
                self.lfu = rest;
                Some(*counter)
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests;
