//! Writing the keys of one call, each as `SET key value <expiry>` would
//! leave it: value and encoding, memory, deadline, keyspace events, WATCH
//! and client-side caching signals, LFU/LRU metadata, and what replicas and
//! the AOF receive (through [`Wire`]). An error here is an [`Abort`]: the
//! keys written before it stay written and replicated.
//!
//! Three paths, chosen per key (docs/DESIGN.md has the costs):
//!
//! - **in place**: the key holds a string of the same length whose
//!   allocation is no bigger than the one SET would give a fresh value
//!   (`sizing`: not one APPEND left spare capacity in), and which SET would
//!   not store embedded with its key either (`Profile::in_place`): the new
//!   bytes are copied into it. The key's dictionary and TTL entries stay; this is
//!   what makes refreshing sessions nearly as cheap as MSET.
//! - **new key**: the key does not exist: the argument object itself is
//!   stored, already in SET's encoding (the server's parser made it).
//! - **batch**: everything else (integers, other lengths and types, strings
//!   SET embeds): the server's own command writes a batch of such pairs in
//!   one call, with SET's encoding (`int`, shared integers, embedded
//!   strings), events and signals: the built-in MSETEX where it writes each
//!   key as SET does (Valkey 9.1+), MSET elsewhere, and the module then sets
//!   each key's expiry.
//!
//! Keys are written in argument order: batched keys wait, and the batch is
//! written before the next key-API write and before a key that waits in it
//! again, so keyspace events follow the arguments and a repeated key ends
//! with its last value, as with MSET.

use std::ffi::CStr;

use crate::ffi::{
    Arg, Contents, Ctx, EventClass, Head, Key, OwnedString, Propagation, Touch, Values,
};
use crate::outcome::Abort;
use crate::replication::{Wire, WrittenBy};
#[cfg(doc)]
use crate::server::PastDeadline;
use crate::server::Profile;
use crate::syntax::{parse_i64, Expiry, Resolved};
use crate::{sizing, stats};

/// Pairs per MSET call: enough to spread its cost, small enough for the
/// batch filter to stay sparse.
const BATCH_MAX: usize = 256;

/// Writes every pair; returns how many keys were written. `child_active`:
/// a fork runs, so lookups leave keys' LRU clocks alone.
pub fn write_all<'c>(
    ctx: &'c Ctx<'c>,
    profile: &Profile,
    pairs: &[Arg<'c>],
    expiry: Expiry,
    child_active: bool,
    wire: &mut Wire<'c>,
) -> Result<usize, Abort> {
    if let Some(resolved) = expiry.resolved() {
        wire.set_expiry(resolved)?;
    }
    let mut writer = Writer {
        ctx,
        profile,
        expiry,
        child_active,
        wire,
        batch: Batch::with_capacity(pairs.len() / 2),
        written: 0,
        in_place: 0,
    };
    let outcome = pairs.chunks_exact(2).try_for_each(|pair| match pair {
        [key, value] => writer.pair(*key, *value),
        _ => Ok(()),
    });
    let outcome = outcome.and_then(|()| writer.flush());
    stats::record_in_place(writer.in_place);
    outcome.map(|()| writer.written)
}

/// How [`write_with_set`] writes: on Redis 6.2 every key, replicated by the
/// module (so that a script's `redis.set_repl` reaches it as it reaches
/// the server's own self-replicating commands); for a deadline that may be
/// past on Valkey 8+, as SET decides (it may delete the key), replicated by
/// SET itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetWrite {
    /// The module replicates each key ([`Wire::written`]) or the call.
    EveryKey,
    /// SET stores the key or deletes it, and replicates that itself (the
    /// `DEL` or `UNLINK` of a deleted key included): `RedisModule_Call`'s
    /// `!`, as for a client.
    AsSetDecides,
}

/// Writes every pair with the server's own `SET key value <expiry>`: on
/// Redis 6.2 (SET's events in argument order, its encoding, its LFU), and
/// for a deadline that may be past (see [`PastDeadline::DecidedBySet`]):
/// SET stores the key, or deletes it at once, and fires its events. Each
/// key is signalled again as the caller. Returns how many keys are there
/// afterwards.
pub fn write_with_set<'c>(
    ctx: &'c Ctx<'c>,
    pairs: &[Arg<'c>],
    expiry: Resolved,
    how: SetWrite,
    wire: &mut Wire<'c>,
) -> Result<usize, Abort> {
    wire.set_expiry(expiry)?;
    let tail: Vec<OwnedString> = match expiry {
        Resolved::At(deadline) => vec![ctx.string(b"PXAT"), ctx.string_from_i64(deadline)],
        Resolved::Keep => vec![ctx.string(b"KEEPTTL")],
        Resolved::Persist => Vec::new(),
    }
    .into_iter()
    .collect::<Option<_>>()
    .ok_or(Abort("allocate the arguments"))?;
    let (propagation, by) = match how {
        SetWrite::EveryKey => (Propagation::ByModule, WrittenBy::Command),
        SetWrite::AsSetDecides => (Propagation::ByCommand, WrittenBy::ReplicatedCommand),
    };
    let mut written = 0;
    for pair in pairs.chunks_exact(2) {
        let [key, value] = pair else {
            continue;
        };
        if !ctx.call_with_pairs(c"SET", Head::None, pair, Values::Fresh, propagation, &tail) {
            return Err(Abort("write the key with SET"));
        }
        ctx.signal_modified(*key);
        // Looking at a key whose deadline passed would expire it: only
        // where SET may have deleted it.
        let there =
            how == SetWrite::EveryKey || ctx.open_key_to_read(*key).is_some_and(|h| !h.is_empty());
        if there {
            wire.written(*key, *value, by)?;
            written += 1;
        }
    }
    Ok(written)
}

struct Writer<'w, 'c> {
    ctx: &'c Ctx<'c>,
    profile: &'w Profile,
    /// The call's expiry as it is applied key after key: EX / PX stays
    /// relative until the first key gets it from the server's clock for
    /// commands (its time snapshot on Redis 7.2+, as SET's), and its
    /// absolute deadline then serves every other key and the replicated
    /// form.
    expiry: Expiry,
    child_active: bool,
    wire: &'w mut Wire<'c>,
    batch: Batch<'c>,
    written: usize,
    in_place: usize,
}

/// How the key API wrote a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Written {
    New,
    InPlace,
}

impl<'c> Writer<'_, 'c> {
    fn pair(&mut self, key: Arg<'c>, value: Arg<'c>) -> Result<(), Abort> {
        // A canonical integer is stored by SET as `int` or a shared integer,
        // which no module API can produce.
        if parse_i64(value.bytes()).is_some() || !self.profile.key_api_writes {
            return self.defer(key, value, None);
        }
        // Where the batch writes new keys too, a value SET would embed with
        // its key cannot take the key API either: no need to open the key
        // (the batch's own lookup is its one access, as SET's).
        if self.profile.builtin_batch && self.embedded_whatever_the_key(key, value) {
            return self.defer(key, value, None);
        }
        if self.batch.contains(key) {
            self.flush()?;
        }
        // One access, as SET's own lookup of the key.
        let mut handle = self.open(key, Touch::Yes)?;
        let Some(path) = self.key_api_path(&mut handle, key, value) else {
            // The batch will look the key up (an access) again: keep the
            // LFU counter as this one access left it.
            let lfu = handle.lfu();
            drop(handle);
            return self.defer(key, value, lfu);
        };
        if self.batch.len() > 0 {
            // The keys waiting come first, so that keyspace events follow
            // the arguments (this key is not among them).
            drop(handle);
            self.flush()?;
            handle = self.open(key, Touch::No)?;
        }
        let written = match path {
            Written::New => handle.set(value),
            Written::InPlace => handle.overwrite(value.bytes()),
        };
        if !written {
            return Err(Abort("write the value"));
        }
        self.key_api_done(handle, key, value, path)
    }

    fn open(&self, key: Arg<'c>, touch: Touch) -> Result<Key<'c>, Abort> {
        self.ctx.open_key(key, touch).ok_or(Abort("open the key"))
    }

    /// True when SET would store `value` embedded with `key` whatever the
    /// key holds now (the call decides the TTL the key ends with).
    fn embedded_whatever_the_key(&self, key: Arg<'c>, value: Arg<'c>) -> bool {
        let ttl_after = match self.expiry {
            Expiry::In(_) | Expiry::At(_) => true,
            Expiry::Persist => false,
            Expiry::Keep => return false,
        };
        self.profile.in_place.is_some_and(|embedding| {
            embedding.embeds(key.bytes().len(), value.bytes().len(), ttl_after)
        })
    }

    /// How the key API writes `key` as SET would, if it can: a new key
    /// stored from the argument (where the batch is not the built-in, which
    /// writes new keys as cheaply), or a string of the same length
    /// refreshed in place.
    fn key_api_path(&self, handle: &mut Key<'c>, key: Arg<'c>, value: Arg<'c>) -> Option<Written> {
        let len = value.bytes().len();
        match handle.contents() {
            Contents::Nothing if !self.profile.builtin_batch => Some(Written::New),
            Contents::String(found)
                if found == len
                    && self.may_write_in_place(handle, key, len)
                    && handle
                        .buffer(len)
                        .is_some_and(|allocation| sizing::as_compact_as_fresh(allocation, len)) =>
            {
                Some(Written::InPlace)
            }
            _ => None,
        }
    }

    /// True when SET would store a `len`-byte value of `key` as its own
    /// allocation, which writing in place keeps.
    fn may_write_in_place(&self, handle: &Key<'c>, key: Arg<'c>, len: usize) -> bool {
        let ttl_after = match self.expiry {
            Expiry::In(_) | Expiry::At(_) => true,
            Expiry::Keep => handle.deadline().is_some(),
            Expiry::Persist => false,
        };
        len > 0
            && self
                .profile
                .in_place
                .is_some_and(|embedding| !embedding.embeds(key.bytes().len(), len, ttl_after))
    }

    /// Events, expiry, signal and replication of a key the key API wrote.
    fn key_api_done(
        &mut self,
        mut handle: Key<'c>,
        key: Arg<'c>,
        value: Arg<'c>,
        path: Written,
    ) -> Result<(), Abort> {
        // SET's events: `new` (fired by the server for a new key),
        // `overwritten` where the server has it, `set`, then `expire`.
        if path == Written::InPlace && self.profile.fires_overwritten {
            self.ctx
                .notify(EventClass::Overwritten, c"overwritten", key);
        }
        self.ctx.notify(EventClass::String, c"set", key);
        self.apply_expiry(&mut handle, None, path == Written::InPlace)?;
        if path == Written::InPlace {
            // Where SET's new object starts a fresh LRU clock, so does this
            // one, even while a fork runs (lookups then leave keys alone).
            if self.child_active && self.profile.fresh_lru_on_overwrite {
                handle.mark_used_now();
            }
            self.in_place += 1;
        }
        self.signal(handle, key);
        if self.expiry.fires_expire() {
            self.ctx.notify(EventClass::Generic, c"expire", key);
        }
        self.wire.written(key, value, WrittenBy::KeyApi)?;
        self.written += 1;
        Ok(())
    }

    /// Tells WATCH and client-side caching that `key` changed, as the
    /// calling client: by closing its handle where that is how (Redis 8.6),
    /// explicitly elsewhere.
    fn signal(&self, handle: Key<'c>, key: Arg<'c>) {
        drop(handle);
        if !self.profile.signal_on_close {
            self.ctx.signal_modified(key);
        }
    }

    /// Sets the expiry of a just written key. `kept` is the deadline the key
    /// had before the batch cleared it (KEEPTTL); `in_place` is true when the
    /// key kept its old TTL entry.
    fn apply_expiry(
        &mut self,
        handle: &mut Key<'c>,
        kept: Option<i64>,
        in_place: bool,
    ) -> Result<(), Abort> {
        match self.expiry {
            Expiry::In(ms) => {
                let deadline = handle.expire_in(ms).ok_or(Abort("set the expiry"))?;
                self.resolved(deadline)?;
            }
            Expiry::At(deadline) => {
                if !handle.expire_at(deadline) {
                    return Err(Abort("set the expiry"));
                }
            }
            Expiry::Keep => {
                if let Some(deadline) = kept {
                    if !handle.expire_at(deadline) {
                        return Err(Abort("restore the expiry"));
                    }
                }
            }
            Expiry::Persist => {
                if in_place && !handle.persist() {
                    return Err(Abort("remove the expiry"));
                }
            }
        }
        Ok(())
    }

    /// A relative TTL took effect with this absolute deadline: it serves
    /// every other key and the replicated form.
    fn resolved(&mut self, deadline: i64) -> Result<(), Abort> {
        self.expiry = Expiry::At(deadline);
        self.wire.set_expiry(Resolved::At(deadline))
    }

    fn defer(&mut self, key: Arg<'c>, value: Arg<'c>, lfu: Option<i64>) -> Result<(), Abort> {
        if self.batch.contains(key) {
            self.flush()?;
        }
        self.batch.push(key, value, lfu);
        if self.batch.len() >= BATCH_MAX {
            self.flush()?;
        }
        Ok(())
    }

    /// Writes the waiting pairs: with the built-in MSETEX where it writes
    /// each key as SET does, else with MSET and then each key's expiry.
    fn flush(&mut self) -> Result<(), Abort> {
        if self.batch.len() == 0 {
            return Ok(());
        }
        let batch = std::mem::take(&mut self.batch);
        let outcome = if self.profile.builtin_batch {
            self.flush_to_builtin(&batch)
        } else {
            self.flush_to_mset(&batch)
        };
        self.batch = batch.cleared();
        outcome
    }

    /// MSET the batch, then give each key its expiry.
    fn flush_to_mset(&mut self, batch: &Batch<'c>) -> Result<(), Abort> {
        // KEEPTTL: MSET clears every TTL, so read them first.
        let kept: Vec<Option<i64>> = match self.expiry {
            Expiry::Keep => batch.keys().map(|key| self.deadline_of(key)).collect(),
            _ => Vec::new(),
        };
        self.call_in_runs(batch, c"MSET", Head::None, &[])?;
        for (index, (key, value, lfu)) in batch.entries().enumerate() {
            let mut handle = self
                .ctx
                .open_key(key, Touch::No)
                .ok_or(Abort("open the key"))?;
            let kept = kept.get(index).copied().flatten();
            self.apply_expiry(&mut handle, kept, false)?;
            if let Some(lfu) = lfu {
                handle.set_lfu(lfu);
            }
            // MSET signalled the key as a client of its own, which a client
            // tracking in BCAST NOLOOP mode is then told about: signal it
            // again as the caller.
            self.signal(handle, key);
            if self.expiry.fires_expire() {
                self.ctx.notify(EventClass::Generic, c"expire", key);
            }
            self.wire.written(key, value, WrittenBy::Command)?;
            self.written += 1;
        }
        Ok(())
    }

    /// The built-in MSETEX writes the batch, deadline and events included.
    fn flush_to_builtin(&mut self, batch: &Batch<'c>) -> Result<(), Abort> {
        let relative = match self.expiry {
            Expiry::In(ms) => Some(ms),
            _ => None,
        };
        let tail = match self.expiry {
            Expiry::In(ms) => vec![self.ctx.string(b"PX"), self.ctx.string_from_i64(ms)],
            Expiry::At(deadline) => {
                vec![self.ctx.string(b"PXAT"), self.ctx.string_from_i64(deadline)]
            }
            Expiry::Keep => vec![self.ctx.string(b"KEEPTTL")],
            Expiry::Persist => Vec::new(),
        };
        let tail: Vec<OwnedString> = tail
            .into_iter()
            .collect::<Option<_>>()
            .ok_or(Abort("allocate the arguments"))?;
        self.call_in_runs(batch, c"MSETEX", Head::Numkeys, &tail)?;
        if relative.is_some() {
            // The TTL ran from the command's clock, as SET's: read the
            // deadline it gave.
            let first = batch.keys().next().ok_or(Abort("read the deadline"))?;
            let deadline = self.deadline_of(first).ok_or(Abort("read the deadline"))?;
            self.resolved(deadline)?;
        }
        for (key, value, lfu) in batch.entries() {
            if let Some(lfu) = lfu {
                let mut handle = self
                    .ctx
                    .open_key(key, Touch::No)
                    .ok_or(Abort("open the key"))?;
                handle.set_lfu(lfu);
            }
            // As for MSET: signalled again as the caller.
            self.ctx.signal_modified(key);
            self.wire.written(key, value, WrittenBy::Command)?;
            self.written += 1;
        }
        Ok(())
    }

    /// Runs `command` on the batch in runs of integers and of other values,
    /// in argument order (integers need values the server re-encodes).
    fn call_in_runs(
        &self,
        batch: &Batch<'c>,
        command: &CStr,
        head: Head,
        tail: &[OwnedString],
    ) -> Result<(), Abort> {
        let flat = batch.flat();
        let integer = |at: usize| {
            flat.get(at + 1)
                .is_some_and(|value| parse_i64(value.bytes()).is_some())
        };
        let mut start = 0;
        while start < flat.len() {
            let run_is_integers = integer(start);
            let mut end = start;
            while end < flat.len() && integer(end) == run_is_integers {
                end += 2;
            }
            let run = flat.get(start..end).ok_or(Abort("split the batch"))?;
            let values = if run_is_integers {
                Values::Fresh
            } else {
                Values::AsTheyAre
            };
            if !self
                .ctx
                .call_with_pairs(command, head, run, values, Propagation::ByModule, tail)
            {
                return Err(Abort("write the keys with the server's command"));
            }
            start = end;
        }
        Ok(())
    }

    /// The deadline `key` has now, looked at without any effect.
    fn deadline_of(&self, key: Arg<'c>) -> Option<i64> {
        if self.profile.signal_on_close {
            self.ctx.open_key_to_read(key).and_then(|h| h.deadline())
        } else {
            self.ctx.open_key(key, Touch::No).and_then(|h| h.deadline())
        }
    }
}

/// Pairs waiting for one batch, with a filter that tells at once that most
/// keys are not waiting.
struct Batch<'c> {
    /// key, value, key, value... as MSET takes them.
    flat: Vec<Arg<'c>>,
    /// Per pair: the LFU counter to restore after the batch's own lookup.
    lfu: Vec<Option<i64>>,
    filter: [u64; 64],
}

impl Default for Batch<'_> {
    fn default() -> Self {
        Batch::with_capacity(0)
    }
}

impl<'c> Batch<'c> {
    fn with_capacity(pairs: usize) -> Batch<'c> {
        let pairs = pairs.min(BATCH_MAX);
        Batch {
            flat: Vec::with_capacity(2 * pairs),
            lfu: Vec::with_capacity(pairs),
            filter: [0; 64],
        }
    }

    fn len(&self) -> usize {
        self.lfu.len()
    }

    fn flat(&self) -> &[Arg<'c>] {
        &self.flat
    }

    /// One bit of 4096 per key, from an FNV-1a hash of its bytes.
    fn bit(key: Arg<'c>) -> (usize, u64) {
        let hash = key.bytes().iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
        });
        let bit = (hash % 4096) as usize;
        (bit / 64, 1 << (bit % 64))
    }

    /// True when `key` waits in the batch: the filter rules most keys out
    /// at once, a scan confirms the rest (a needless flush costs a call).
    fn contains(&self, key: Arg<'c>) -> bool {
        if self.len() == 0 {
            return false;
        }
        let (word, mask) = Batch::bit(key);
        self.filter.get(word).is_some_and(|w| w & mask != 0)
            && self.keys().any(|waiting| waiting.bytes() == key.bytes())
    }

    fn push(&mut self, key: Arg<'c>, value: Arg<'c>, lfu: Option<i64>) {
        let (word, mask) = Batch::bit(key);
        if let Some(w) = self.filter.get_mut(word) {
            *w |= mask;
        }
        self.flat.push(key);
        self.flat.push(value);
        self.lfu.push(lfu);
    }

    fn keys(&self) -> impl Iterator<Item = Arg<'c>> + '_ {
        self.flat.iter().step_by(2).copied()
    }

    fn entries(&self) -> impl Iterator<Item = (Arg<'c>, Arg<'c>, Option<i64>)> + '_ {
        self.flat
            .chunks_exact(2)
            .zip(&self.lfu)
            .filter_map(|(pair, lfu)| match pair {
                [key, value] => Some((*key, *value, *lfu)),
                _ => None,
            })
    }

    /// The same buffers, emptied, for the next batch.
    fn cleared(mut self) -> Batch<'c> {
        self.flat.clear();
        self.lfu.clear();
        self.filter = [0; 64];
        self
    }
}
