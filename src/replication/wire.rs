//! One call's replication ([`Wire`], over a [`Link`]) and the changes counter.

use std::ffi::CStr;
use std::sync::atomic::{AtomicBool, Ordering};

use super::apply;
use super::modes::{CallForm, Replication, Sent};
use crate::deadline::{self, Resolved};
use crate::ffi::{Arg, Ctx, OwnedString, Reply, Word};
use crate::outcome::Abort;
use crate::syntax::parse_i64;
use crate::write::{Sink, WrittenBy};

/// What a [`Wire`] needs from the server: the module API ([`CtxLink`]) or the tests' recorder.
pub trait Link<A> {
    /// Queues `command head... pairs... tail...`; false if the server refused it.
    fn replicate(&mut self, command: &CStr, head: &[Word], pairs: &[A], tail: &[Word]) -> bool;
    /// Counts one change where nothing receives it (`RedisModule_ReplicateVerbatim`).
    fn count_change(&mut self);
    /// Counts `n` changes with one call of the changes counter; false if it failed.
    fn count_changes(&mut self, n: usize) -> bool;
}

/// From how many pairs a call counts its changes with one call of the counter rather than one
/// `RedisModule_ReplicateVerbatim` per key (DESIGN.md, "Changes for RDB save points").
const COUNT_AT_END_FROM: usize = 256;

/// What this call sends, decided once when the call starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sends<'w> {
    /// Nobody listens: count each key-API change, or all at the end (`at_end`).
    CountOnly { at_end: bool },
    /// Each key as `SET key value <expiry>`, which counts it.
    PerKey,
    /// One command for the keys written, once the call ends.
    PerCall(&'w CStr, CallForm),
}

/// One call's replication, told of each key written (in argument order). Dropped unfinished (an
/// abort, or a panic), it sends what was written all the same.
pub struct Wire<'w, A: Copy, L: Link<A>> {
    link: L,
    sends: Sends<'w>,
    /// The call's pairs: the first `written` are written, the first `sent` replicated.
    pairs: &'w [A],
    written: usize,
    sent: usize,
    uncounted: usize,
    expiry: Option<Resolved>,
    /// The deadline the written keys got, as SET's options, made once.
    set_options: Vec<Word>,
    ended: bool,
}

impl<'w, A: Copy, L: Link<A>> Wire<'w, A, L> {
    pub fn new(
        link: L,
        replication: &'w Replication,
        pairs: &'w [A],
        nobody_listens: bool,
    ) -> Wire<'w, A, L> {
        let at_end = replication.counts_at_end || pairs.len() / 2 >= COUNT_AT_END_FROM;
        let sends = match &replication.sent {
            _ if nobody_listens => Sends::CountOnly { at_end },
            Sent::PerKey => Sends::PerKey,
            Sent::PerCall { command, form } => Sends::PerCall(command, *form),
        };
        Wire {
            link,
            sends,
            pairs,
            written: 0,
            sent: 0,
            uncounted: 0,
            expiry: None,
            set_options: Vec::new(),
            ended: false,
        }
    }

    pub fn finish(mut self) -> Result<(), Abort> {
        self.ended = true;
        self.send_written()
    }

    /// A key with another expiry than the keys waiting (the first key, or after a failed
    /// deadline): those go first, with theirs.
    #[cold]
    fn expiry_changes(&mut self, expiry: Resolved) {
        if self.expiry.is_some() {
            let _ = self.send_written();
        }
        self.expiry = Some(expiry);
        self.set_options.clear();
    }

    /// Sends the written pairs not sent yet (as the call's one command where calls go as one, else
    /// or on failure as `SET` each), then counts the changes left (a failing counter only delays
    /// save points).
    fn send_written(&mut self) -> Result<(), Abort> {
        if let (Sends::PerCall(command, form), Some(expiry)) = (self.sends, self.expiry) {
            if self.sent < self.written && self.send_call(command, form, expiry) {
                // The command counts one change itself.
                self.uncounted = self.uncounted.saturating_sub(1);
            }
        }
        let replicates = !matches!(self.sends, Sends::CountOnly { .. });
        while replicates && self.sent < self.written && self.send_set() {}
        if self.uncounted > 0 {
            let _ = self.link.count_changes(self.uncounted);
            self.uncounted = 0;
        }
        if replicates && self.sent < self.written {
            return Err(Abort("replicate"));
        }
        Ok(())
    }

    fn send_call(&mut self, command: &CStr, form: CallForm, expiry: Resolved) -> bool {
        let pairs = self
            .pairs
            .get(2 * self.sent..2 * self.written)
            .unwrap_or_default();
        let (head, tail) = match form {
            CallForm::Apply => (apply::words(expiry), Vec::new()),
            CallForm::Numkeys => (
                vec![Word::Number((pairs.len() / 2) as i64)],
                deadline::options(expiry.into()),
            ),
        };
        let sent = self.link.replicate(command, &head, pairs, &tail);
        self.sent = if sent { self.written } else { self.sent };
        sent
    }

    fn send_set(&mut self) -> bool {
        let pair = self.pairs.get(2 * self.sent..2 * self.sent + 2);
        let (Some(pair), Some(expiry)) = (pair, self.expiry) else {
            return false;
        };
        if self.set_options.is_empty() {
            self.set_options = deadline::options(expiry.into());
        }
        let sent = self.link.replicate(c"SET", &[], pair, &self.set_options);
        self.sent += usize::from(sent);
        sent
    }
}

impl<A: Copy, L: Link<A>> Drop for Wire<'_, A, L> {
    fn drop(&mut self) {
        if !self.ended {
            // Best effort: the call already answers with its abort (or a panic's error).
            let _ = self.send_written();
        }
    }
}

impl<A: Copy, L: Link<A>> Sink<A> for Wire<'_, A, L> {
    fn written(&mut self, _key: A, by: WrittenBy, expiry: Resolved) {
        // SET with `!` replicated itself (and every key of its call).
        if by == WrittenBy::ReplicatedCommand {
            return;
        }
        if self.expiry != Some(expiry) {
            self.expiry_changes(expiry);
        }
        match (self.sends, by) {
            (Sends::PerKey, _) | (_, WrittenBy::Command) => {}
            (Sends::CountOnly { at_end: false }, _) => self.link.count_change(),
            _ => self.uncounted += 1,
        }
        self.written += 1;
        // REPLICATE SET: each key as it is written, unless one failed before (then they wait for
        // the end, where `finish` or the drop sends them, or reports the failure).
        if self.sends == Sends::PerKey && self.sent + 1 == self.written {
            self.send_set();
        }
    }

    fn vanished(&mut self, _key: A) {
        // What waits goes first; this pair is skipped (if what waits could not be sent, it keeps
        // waiting, and the call reports the failure).
        let _ = self.send_written();
        if self.sent == self.written {
            self.sent += 1;
        }
        self.written += 1;
    }
}

/// Set only while MSETEX itself calls its changes counter: a client calling it gets an error.
static COUNTER_ARMED: AtomicBool = AtomicBool::new(false);

/// `<name>.changes n`: counts `n` changes for RDB save points (called without replication, so
/// the server drops what `RedisModule_ReplicateVerbatim` queues).
pub fn count_changes(ctx: &Ctx<'_>, args: &[Arg<'_>]) -> Reply {
    let count = match args {
        [_, count] if COUNTER_ARMED.load(Ordering::Relaxed) => parse_i64(count.bytes()),
        _ => None,
    };
    let Some(count) = count else {
        return Reply::Error(c"ERR this command is internal to MSETEX".to_owned());
    };
    for _ in 0..count {
        ctx.count_change();
    }
    Reply::Ok
}

/// The module API as a call's [`Link`]; keeps the strings of the last tail (one per call).
pub struct CtxLink<'c> {
    ctx: &'c Ctx<'c>,
    counter: &'c CStr,
    tail: Option<(Vec<Word>, Vec<OwnedString>)>,
}

impl<'c> CtxLink<'c> {
    pub fn new(ctx: &'c Ctx<'c>, counter: &'c CStr) -> CtxLink<'c> {
        CtxLink {
            ctx,
            counter,
            tail: None,
        }
    }
}

impl<'c> Link<Arg<'c>> for CtxLink<'c> {
    fn replicate(
        &mut self,
        command: &CStr,
        head: &[Word],
        pairs: &[Arg<'c>],
        tail: &[Word],
    ) -> bool {
        let ctx = self.ctx;
        if self.tail.as_ref().is_none_or(|(words, _)| words != tail) {
            self.tail = ctx.words(tail).map(|strings| (tail.to_vec(), strings));
        }
        let Some((_, tail)) = self.tail.as_ref() else {
            return false;
        };
        match (head, pairs) {
            ([], [key, value]) => ctx.replicate_pair(command, *key, *value, tail),
            _ => ctx
                .words(head)
                .is_some_and(|head| ctx.replicate_command(command, &head, pairs, tail)),
        }
    }

    fn count_change(&mut self) {
        self.ctx.count_change();
    }

    fn count_changes(&mut self, n: usize) -> bool {
        COUNTER_ARMED.store(true, Ordering::Relaxed);
        let counted = self.ctx.call_without_replication(self.counter, n);
        COUNTER_ARMED.store(false, Ordering::Relaxed);
        counted
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replication::Replicate;
    use std::ffi::CString;

    /// Counts what reaches the server's change counter, and how.
    #[derive(Default)]
    struct Counts {
        one_by_one: usize,
        in_one_call: Vec<usize>,
    }

    impl Link<usize> for &mut Counts {
        fn replicate(&mut self, _: &CStr, _: &[Word], _: &[usize], _: &[Word]) -> bool {
            true
        }
        fn count_change(&mut self) {
            self.one_by_one += 1;
        }
        fn count_changes(&mut self, n: usize) -> bool {
            self.in_one_call.push(n);
            true
        }
    }

    #[test]
    fn nobody_listening_a_call_of_many_pairs_counts_its_changes_in_one_go() {
        for (redis_6, pairs, one_by_one, in_one_call) in [
            (false, COUNT_AT_END_FROM - 1, COUNT_AT_END_FROM - 1, vec![]),
            (false, COUNT_AT_END_FROM, 0, vec![COUNT_AT_END_FROM]),
            (true, 3, 0, vec![3]),
        ] {
            let replication = Replication {
                mode: Replicate::Set,
                sent: Sent::PerKey,
                counter: CString::from(c"m.changes"),
                counts_at_end: redis_6,
            };
            let flat: Vec<usize> = (0..2 * pairs).collect();
            let mut counts = Counts::default();
            let mut wire = Wire::new(&mut counts, &replication, &flat, true);
            for key in flat.iter().step_by(2) {
                wire.written(*key, WrittenBy::KeyApi, Resolved::At(1));
            }
            assert_eq!(wire.finish(), Ok(()));
            assert_eq!(counts.one_by_one, one_by_one, "{pairs} pairs");
            assert_eq!(counts.in_one_call, in_one_call, "{pairs} pairs");
        }
    }
}
