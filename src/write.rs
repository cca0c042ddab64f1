//! Writing the keys of one call, each as `SET key value <expiry>` would
//! leave it: value and encoding, memory, deadline, keyspace events, WATCH
//! and client-side caching signals, LFU/LRU metadata, and what replicas and
//! the AOF receive (through [`Wire`]).
//!
//! Three paths, chosen per key (docs/DESIGN.md has the costs):
//!
//! - **in place**: the key holds a string of the same length, exactly
//!   allocated (no spare capacity, e.g. from APPEND): the new bytes are
//!   copied into it. The key's dictionary and TTL entries stay; this is what
//!   makes refreshing sessions nearly as cheap as MSET.
//! - **new key**: the key does not exist: the argument object itself is
//!   stored, already in SET's encoding (the server's parser made it).
//! - **MSET**: everything else (integers, other lengths and types, servers
//!   where the key API differs from SET): the server's own MSET writes a
//!   batch of such pairs in one call, with SET's encoding (`int`, shared
//!   integers, embedded strings), events and signals; the module then sets
//!   each key's expiry.
//!
//! Keys are written in argument order, except that MSET-path keys wait in a
//! batch; a key already waiting flushes the batch first, so a repeated key
//! always ends with its last value, as with MSET.

use std::ffi::CStr;

use crate::ffi::{Arg, Contents, Ctx, EventClass, Key, Touch};
use crate::parse::{parse_i64, Expiry};
use crate::propagation::{Wire, WrittenBy};
use crate::server::{PastDeadline, Profile};
use crate::stats;

/// A module API call that its preconditions say cannot fail, failed; the
/// step that failed. Keys written before it stay written and replicated.
pub type Failed = &'static str;

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
) -> Result<usize, Failed> {
    if !matches!(expiry, Expiry::In(_)) {
        wire.set_expiry(expiry)?;
    }
    let mut writer = Writer {
        ctx,
        profile,
        expiry: ExpiryState::from(expiry),
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

/// SET with a deadline already past deletes the key on this server
/// (Valkey 8+): returns the event to fire, or `None` to store the keys.
/// Replicas and AOF loading store them, as SET does there.
pub fn deletes_past_keys(
    profile: &Profile,
    expiry: Expiry,
    now_ms: i64,
    applying: bool,
) -> Option<(&'static CStr, EventClass)> {
    match (profile.past_deadline, expiry) {
        (
            PastDeadline::Delete {
                event,
                expired_class,
            },
            Expiry::At(deadline),
        ) if deadline <= now_ms && !applying => {
            let class = if expired_class {
                EventClass::Expired
            } else {
                EventClass::Generic
            };
            Some((event, class))
        }
        _ => None,
    }
}

/// Deletes every key that exists, as SET with a past deadline does on
/// Valkey 8+: the change counted, signalled, notified and replicated as a
/// DEL (or UNLINK, per `lazyfree-lazy-server-del`). Absent keys: nothing.
pub fn delete_all<'c>(
    ctx: &'c Ctx<'c>,
    pairs: &[Arg<'c>],
    (event, class): (&'static CStr, EventClass),
    wire: &mut Wire<'c>,
) -> Result<(), Failed> {
    let unlink = ctx.config_is_yes(c"lazyfree-lazy-server-del");
    for key in pairs.iter().step_by(2) {
        let mut handle = ctx.open_key(*key, Touch::Yes).ok_or("open the key")?;
        if handle.is_empty() {
            continue;
        }
        if !handle.delete() {
            return Err("delete the key");
        }
        drop(handle);
        ctx.signal_modified(*key);
        ctx.notify(class, event, *key);
        wire.deleted(*key, unlink)?;
    }
    Ok(())
}

/// The call's expiry as it is applied key after key.
#[derive(Debug, Clone, Copy)]
enum ExpiryState {
    /// EX / PX, not applied yet: the first key gets it from the server's
    /// clock for commands (its time snapshot on Redis 7.2+, as SET), and
    /// its absolute deadline then serves every other key.
    Relative(i64),
    Deadline(i64),
    Keep,
    Persist,
}

impl From<Expiry> for ExpiryState {
    fn from(expiry: Expiry) -> ExpiryState {
        match expiry {
            Expiry::In(ms) => ExpiryState::Relative(ms),
            Expiry::At(deadline) => ExpiryState::Deadline(deadline),
            Expiry::Keep => ExpiryState::Keep,
            Expiry::Persist => ExpiryState::Persist,
        }
    }
}

impl ExpiryState {
    /// True when SET would fire `expire` for this call's keys.
    fn fires_expire(self) -> bool {
        matches!(self, ExpiryState::Relative(_) | ExpiryState::Deadline(_))
    }
}

struct Writer<'w, 'c> {
    ctx: &'c Ctx<'c>,
    profile: &'w Profile,
    expiry: ExpiryState,
    child_active: bool,
    wire: &'w mut Wire<'c>,
    batch: Batch<'c>,
    written: usize,
    in_place: usize,
}

impl<'c> Writer<'_, 'c> {
    fn pair(&mut self, key: Arg<'c>, value: Arg<'c>) -> Result<(), Failed> {
        if self.batch.len() > 0 && self.batch.contains(key) {
            self.flush()?;
        }
        // A canonical integer is stored by SET as `int` or a shared integer,
        // which no module API can produce.
        if parse_i64(value.bytes()).is_some() || !self.profile.key_api_writes {
            return self.defer(key, value, None);
        }
        // One access, as SET's own lookup of the key.
        let mut handle = self.ctx.open_key(key, Touch::Yes).ok_or("open the key")?;
        let contents = handle.contents();
        if contents == Contents::Nothing {
            if !handle.set(value) {
                return Err("store the value");
            }
            return self.key_api_done(handle, key, value, false);
        }
        let len = value.bytes().len();
        let in_place = self.profile.in_place_min_len.is_some_and(|min| len >= min)
            && contents == Contents::String(len)
            && handle.overwrite_exactly_sized(value.bytes());
        if in_place {
            return self.key_api_done(handle, key, value, true);
        }
        // MSET will look the key up (an access) again: keep the LFU counter
        // as this one access left it.
        let lfu = handle.lfu();
        drop(handle);
        self.defer(key, value, lfu)
    }

    /// Expiry, signal, events and replication of a key the key API wrote.
    fn key_api_done(
        &mut self,
        mut handle: Key<'c>,
        key: Arg<'c>,
        value: Arg<'c>,
        in_place: bool,
    ) -> Result<(), Failed> {
        self.ctx.signal_modified(key);
        self.ctx.notify(EventClass::String, c"set", key);
        self.apply_expiry(&mut handle, None, in_place)?;
        if in_place {
            // SET's new object is fresh for LRU even while a fork runs,
            // when lookups do not touch keys (a no-op under LFU).
            if self.child_active {
                handle.mark_used_now();
            }
            self.in_place += 1;
        }
        drop(handle);
        if self.expiry.fires_expire() {
            self.ctx.notify(EventClass::Generic, c"expire", key);
        }
        self.wire.written(key, value, WrittenBy::KeyApi)?;
        self.written += 1;
        Ok(())
    }

    /// Sets the expiry of a just written key. `kept` is the deadline the key
    /// had before MSET cleared it (KEEPTTL); `replaced` is false for a new
    /// key or an MSET write, whose TTL is already gone.
    fn apply_expiry(
        &mut self,
        handle: &mut Key<'c>,
        kept: Option<i64>,
        replaced_in_place: bool,
    ) -> Result<(), Failed> {
        match self.expiry {
            ExpiryState::Relative(ms) => {
                let deadline = handle.expire_in(ms).ok_or("set the expiry")?;
                self.expiry = ExpiryState::Deadline(deadline);
                self.wire.set_expiry(Expiry::At(deadline))?;
            }
            ExpiryState::Deadline(deadline) => {
                if !handle.expire_at(deadline) {
                    return Err("set the expiry");
                }
            }
            ExpiryState::Keep => {
                if let Some(deadline) = kept {
                    if !handle.expire_at(deadline) {
                        return Err("restore the expiry");
                    }
                }
            }
            ExpiryState::Persist => {
                if replaced_in_place && !handle.persist() {
                    return Err("remove the expiry");
                }
            }
        }
        Ok(())
    }

    fn defer(&mut self, key: Arg<'c>, value: Arg<'c>, lfu: Option<i64>) -> Result<(), Failed> {
        self.batch.push(key, value, lfu);
        if self.batch.len() >= BATCH_MAX {
            self.flush()?;
        }
        Ok(())
    }

    /// Writes the waiting pairs with one MSET, then each key's expiry.
    fn flush(&mut self) -> Result<(), Failed> {
        if self.batch.len() == 0 {
            return Ok(());
        }
        // KEEPTTL: MSET clears every TTL, so read them first.
        let kept: Vec<Option<i64>> = match self.expiry {
            ExpiryState::Keep => self
                .batch
                .keys()
                .map(|key| self.ctx.open_key(key, Touch::No).map(|h| h.deadline()))
                .collect::<Option<Vec<_>>>()
                .ok_or("read the expiry")?,
            _ => Vec::new(),
        };
        // Integers need a value object MSET holds alone to encode them as
        // SET would; other values are already in SET's encoding.
        let (mut integers, mut others) = (Vec::new(), Vec::new());
        for (key, value, _) in self.batch.entries() {
            let list = if parse_i64(value.bytes()).is_some() {
                &mut integers
            } else {
                &mut others
            };
            list.extend([key, value]);
        }
        for (flat, fresh_values) in [(integers, true), (others, false)] {
            if !flat.is_empty() && !self.ctx.mset(&flat, fresh_values) {
                return Err("write the keys with MSET");
            }
        }
        let batch = std::mem::take(&mut self.batch);
        for (index, (key, value, lfu)) in batch.entries().enumerate() {
            let mut handle = self.ctx.open_key(key, Touch::No).ok_or("open the key")?;
            let kept = kept.get(index).copied().flatten();
            self.apply_expiry(&mut handle, kept, false)?;
            if let Some(lfu) = lfu {
                handle.set_lfu(lfu);
            }
            drop(handle);
            if self.expiry.fires_expire() {
                self.ctx.notify(EventClass::Generic, c"expire", key);
            }
            self.wire.written(key, value, WrittenBy::Mset)?;
            self.written += 1;
        }
        self.batch = batch.cleared();
        Ok(())
    }
}

/// Pairs waiting for one MSET, with a filter that tells at once that most
/// keys are not waiting.
struct Batch<'c> {
    /// key, value, key, value... as MSET takes them.
    flat: Vec<Arg<'c>>,
    /// Per pair: the LFU counter to restore after MSET's own lookup.
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

    /// One bit of 4096 per key, from an FNV-1a hash of its bytes.
    fn bit(key: Arg<'c>) -> (usize, u64) {
        let hash = key.bytes().iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
        });
        let bit = (hash % 4096) as usize;
        (bit / 64, 1 << (bit % 64))
    }

    /// True when `key` waits in the batch: the filter rules most keys out
    /// at once, a scan confirms the rest (a needless flush costs an MSET).
    fn contains(&self, key: Arg<'c>) -> bool {
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
