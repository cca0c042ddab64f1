//! What MSETEX sends to replicas, the AOF and slot migrations. Two modes (load argument
//! `REPLICATE`, [`Replicate`]): `SET` sends each key as a native `SET key value PXAT ms` (or
//! `KEEPTTL`, or no TTL); `MSETEX` sends each call as one command with its absolute deadline. Where
//! the server runs MSETEX natively both send that ([`Replication`], decided at load). Per call, it
//! decides whether anything can receive at all: `RedisModule_Replicate` costs a command lookup and
//! allocations (about 350 ns) even when the server then drops the command.

use std::ffi::{CStr, CString};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use crate::deadline::{words, Form, Resolved, Word};
use crate::ffi::{Arg, Ctx, OwnedString, Reply};
use crate::outcome::Abort;
use crate::server::{Profile, ServerCommand};
use crate::write::{Sink, WrittenBy};

// --- The modes -------------------------------------------------------------------------------

/// What goes to replicas and the AOF for one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replicate {
    /// Each key as `SET key value PXAT ms` (default): native, replicas and AOF need nothing.
    Set,
    /// Each call as one command with its absolute deadline: replicas, AOF loading and slot
    /// migration targets need the module (or, for the NUMKEYS form as MSETEX, a native MSETEX).
    Msetex,
}

impl Replicate {
    /// `set` or `msetex` (`INFO msetex`; in upper case, the load argument).
    pub fn label(self) -> &'static CStr {
        match self {
            Replicate::Set => c"set",
            Replicate::Msetex => c"msetex",
        }
    }

    /// The mode a `REPLICATE` load argument names (any case).
    pub fn named(value: &str) -> Option<Replicate> {
        [Replicate::Set, Replicate::Msetex]
            .into_iter()
            .find(|mode| value.eq_ignore_ascii_case(&mode.label().to_string_lossy()))
    }
}

/// What each call sends, decided at load from the mode, the syntax and the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Replication {
    /// `SET key value <expiry>` per key (REPLICATE SET).
    PerKey,
    /// The whole call as one command after the last write.
    PerCall { command: CString, form: CallForm },
}

/// The shape of the one command a call is replicated as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallForm {
    /// `<name>.apply <deadline | KEEPTTL | PERSIST> key value ...`; its key spec locates its keys.
    Apply,
    /// `<command> numkeys key value ... [PXAT deadline | KEEPTTL]`: the built-in MSETEX's form.
    Numkeys,
}

impl Replication {
    /// Where the built-in runs natively and nothing drops it (`Profile::native_replication`), both
    /// modes send it (replicas and AOF loading need no module). Else REPLICATE SET: SET per key;
    /// REPLICATE MSETEX the NUMKEYS form as `msetex` outside cluster mode (Redis 8.4+ / Valkey 9.1+
    /// replicas run it natively), else `<name>.apply` (a slot migration's filter reads its keys).
    /// `numkeys_as_msetex`: the NUMKEYS form is registered as `msetex`.
    pub fn decide(
        mode: Replicate,
        numkeys_as_msetex: bool,
        profile: &Profile,
        cluster: bool,
        apply: &CStr,
    ) -> Replication {
        let call = |command: &CStr, form| Replication::PerCall {
            command: command.to_owned(),
            form,
        };
        if profile.native_replication {
            return call(c"MSETEX", CallForm::Numkeys);
        }
        match mode {
            Replicate::Set => Replication::PerKey,
            Replicate::Msetex if numkeys_as_msetex && !cluster => {
                call(c"msetex", CallForm::Numkeys)
            }
            Replicate::Msetex => call(apply, CallForm::Apply),
        }
    }

    /// The server command sent, which the load checks exists (or a call could write unreplicated).
    pub fn command(&self) -> Option<(ServerCommand, &'static str)> {
        match self {
            Replication::PerKey => Some((
                ServerCommand::Set,
                "is what REPLICATE SET sends to replicas and the AOF (REPLICATE MSETEX does not)",
            )),
            Replication::PerCall { command, .. } if command.as_c_str() == c"MSETEX" => Some((
                ServerCommand::Msetex,
                "is what replicas and the AOF get where the server runs MSETEX itself",
            )),
            Replication::PerCall { .. } => None,
        }
    }

    /// Whether calls go as one command, key-API writes counted via `<name>.changes`.
    pub fn counts_changes(&self) -> bool {
        matches!(self, Replication::PerCall { .. })
    }

    /// What the log says at load time.
    pub fn load_note(&self) -> Option<String> {
        match self {
            Replication::PerKey => None,
            Replication::PerCall { command, .. } if command.as_c_str() == c"MSETEX" => Some(
                "this server runs MSETEX itself: each call goes to replicas and the AOF as \
                     one native MSETEX command, which they run without this module"
                    .to_owned(),
            ),
            Replication::PerCall { command, form } => Some(format!(
                "REPLICATE MSETEX: each call goes to replicas, the AOF and slot migrations as \
                 one '{}' command; replicas, AOF loading and the nodes slots migrate to need \
                 this module loaded with the same arguments{}",
                command.to_string_lossy(),
                if *form == CallForm::Numkeys {
                    " (or be Redis 8.4+ / Valkey 9.1+, which run it natively)"
                } else {
                    ""
                }
            )),
        }
    }
}

// --- Who listens -----------------------------------------------------------------------------

/// Who may receive replicated commands. The server keeps a propagated command only if the AOF is
/// on or it is a primary with a backlog or replicas (`shouldPropagate` in server.c). The AOF is
/// read on every call; a backlog comes from a replica's SYNC/PSYNC (seen by the command filter), a
/// role change or a data set load (server events), so "nobody listens" ends at once; only an
/// `INFO replication` probe (each cron tick) makes it true again. Meanwhile nothing is replicated:
/// changes are counted with RedisModule_ReplicateVerbatim, which the server provably drops.
static LISTENERS: AtomicU8 = AtomicU8::new(NOT_WATCHED);

/// Not every signal that can announce a backlog (events, command filter) is in place: a probe's
/// answer could go stale unnoticed, so it is never trusted.
const NOT_WATCHED: u8 = 0;
/// Watched, but not proven that nobody listens.
const POSSIBLE: u8 = 1;
/// The last probe proved nobody (no replica, no backlog) can receive, and nothing since changed it.
const NOBODY: u8 = 2;

/// The fields of `INFO replication` that decide whether replication is fed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplicationInfo {
    /// `role:master` (a replica never feeds its own replication stream).
    pub is_primary: bool,
    /// `connected_slaves:<n>`
    pub connected_replicas: i64,
    /// `repl_backlog_active:<0|1>`
    pub backlog_active: bool,
}

/// The `INFO replication` fields [`ReplicationInfo::from_fields`] reads.
pub const PROBED_FIELDS: [&str; 3] = ["role", "connected_slaves", "repl_backlog_active"];

impl ReplicationInfo {
    /// From `INFO replication` (field, value) pairs; `None` if a field is missing or unreadable.
    pub fn from_fields(fields: &[(&str, String)]) -> Option<ReplicationInfo> {
        let field = |name: &str| {
            fields
                .iter()
                .find(|(field, _)| *field == name)
                .map(|(_, value)| value.trim())
        };
        Some(ReplicationInfo {
            is_primary: field("role")? == "master",
            connected_replicas: field("connected_slaves")?.parse().ok()?,
            backlog_active: field("repl_backlog_active")?.parse::<i64>().ok()? != 0,
        })
    }

    /// True when the server would drop every replicated command.
    pub fn proves_nobody_listens(&self) -> bool {
        self.is_primary && self.connected_replicas == 0 && !self.backlog_active
    }
}

/// Records whether every signal the state relies on is in place (and the profile allows it).
pub fn set_watching(ok: bool) {
    LISTENERS.store(if ok { POSSIBLE } else { NOT_WATCHED }, Ordering::Relaxed);
}

/// A SYNC/PSYNC is about to run, a role changed or a data set loads: a listener may appear.
pub fn on_listener_may_appear() {
    let _ = LISTENERS.compare_exchange(NOBODY, POSSIBLE, Ordering::Relaxed, Ordering::Relaxed);
}

/// SYNC and PSYNC, any case: the commands that make a client a replica (and create the backlog).
pub fn is_replication_handshake(command: &[u8]) -> bool {
    command.eq_ignore_ascii_case(b"PSYNC") || command.eq_ignore_ascii_case(b"SYNC")
}

/// Cron tick: re-probe with `probe` (reads `INFO replication`; `None` if a field is missing).
pub fn on_cron(probe: impl FnOnce() -> Option<ReplicationInfo>) {
    if LISTENERS.load(Ordering::Relaxed) == NOT_WATCHED {
        return;
    }
    let proven = probe().is_some_and(|info| info.proves_nobody_listens());
    LISTENERS.store(if proven { NOBODY } else { POSSIBLE }, Ordering::Relaxed);
}

/// Nothing can receive a replicated command now: no AOF (`aof_on`, exact) nor replica or backlog.
pub fn nobody_listens(aof_on: bool) -> bool {
    !aof_on && LISTENERS.load(Ordering::Relaxed) == NOBODY
}

/// For `INFO msetex`: `none` (nothing can receive, so nothing is sent), `aof`, or `possible`.
pub fn listeners_label(aof_on: bool) -> &'static CStr {
    if aof_on {
        c"aof"
    } else if LISTENERS.load(Ordering::Relaxed) == NOBODY {
        c"none"
    } else {
        c"possible"
    }
}

// --- One call's replication ------------------------------------------------------------------

/// What one call's replication needs from the server: queue a command for replicas and the AOF,
/// count changes for RDB save points. The module API ([`CtxLink`]) or the unit tests' recorder.
pub trait Link<A> {
    /// Queues `command head... pairs... tail...`; false if the server refused it.
    fn replicate(&mut self, command: &CStr, head: &[Word], pairs: &[A], tail: &[Word]) -> bool;
    /// Counts one change where nothing receives it (`RedisModule_ReplicateVerbatim`).
    fn count_change(&mut self);
    /// Counts `n` changes with one call of the changes counter; false if it failed.
    fn count_changes(&mut self, n: usize) -> bool;
}

/// What this call sends, decided once when the call starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sends {
    /// Nobody listens: replicate nothing, count each key-API change (at the end, where counting
    /// one copies the whole call).
    CountOnly { at_end: bool },
    /// `REPLICATE SET`: each key as `SET key value <expiry>`, which counts it.
    PerKey,
    /// One command for the keys written, once the call ends.
    PerCall(CallForm),
}

/// One call's replication: made before the first write, told of each key written (in argument
/// order), ended by [`Wire::finish`]. Dropped without it (an abort anywhere, or a panic), it sends
/// what was written all the same, so replicas and the AOF never miss a key the primary kept.
pub struct Wire<'w, A: Copy, L: Link<A>> {
    link: L,
    sends: Sends,
    /// The per-call command's name.
    command: &'w CStr,
    /// The call's pairs: the first `written` of them are written.
    pairs: &'w [A],
    written: usize,
    /// Key-API writes no command counted yet.
    uncounted: usize,
    /// The deadline the written keys got (known once the first is written).
    expiry: Option<Resolved>,
    ended: bool,
}

impl<'w, A: Copy, L: Link<A>> Wire<'w, A, L> {
    /// `nobody_listens`: replicate nothing (see [`nobody_listens`]); `counts_at_end`: the profile's.
    pub fn new(
        link: L,
        replication: &'w Replication,
        pairs: &'w [A],
        nobody_listens: bool,
        counts_at_end: bool,
    ) -> Wire<'w, A, L> {
        let (sends, command) = match replication {
            _ if nobody_listens => (
                Sends::CountOnly {
                    at_end: counts_at_end,
                },
                c"",
            ),
            Replication::PerKey => (Sends::PerKey, c""),
            Replication::PerCall { command, form } => (Sends::PerCall(*form), command.as_c_str()),
        };
        Wire {
            link,
            sends,
            command,
            pairs,
            written: 0,
            uncounted: 0,
            expiry: None,
            ended: false,
        }
    }

    /// Ends the call: sends the per-call command and counts what no command counted.
    pub fn finish(mut self) -> Result<(), Abort> {
        self.ended = true;
        self.send_written()
    }

    /// The written pairs as one command (per-call mode), and the changes left to count. A counter
    /// that fails leaves save points late, nothing else: the keys are written and replicated.
    fn send_written(&mut self) -> Result<(), Abort> {
        let sent = match (self.sends, self.expiry) {
            (Sends::PerCall(form), Some(expiry)) if self.written > 0 => {
                let pairs = self.pairs.get(..2 * self.written).unwrap_or(self.pairs);
                let (head, tail) = match form {
                    CallForm::Apply => (words(expiry.into(), Form::Apply), Some(Vec::new())),
                    CallForm::Numkeys => (
                        Some(vec![Word::Number(self.written as i64)]),
                        words(expiry.into(), Form::Options),
                    ),
                };
                let sent = head.zip(tail).is_some_and(|(head, tail)| {
                    self.link.replicate(self.command, &head, pairs, &tail)
                });
                // The command counts one change itself.
                self.uncounted = self.uncounted.saturating_sub(1);
                sent
            }
            _ => true,
        };
        let at_end = matches!(
            self.sends,
            Sends::PerCall(_) | Sends::CountOnly { at_end: true }
        );
        if at_end && self.uncounted > 0 {
            // A failure leaves RDB save points later, nothing else.
            let _ = self.link.count_changes(self.uncounted);
            self.uncounted = 0;
        }
        if sent {
            Ok(())
        } else {
            Err(Abort("replicate"))
        }
    }
}

impl<A: Copy, L: Link<A>> Drop for Wire<'_, A, L> {
    fn drop(&mut self) {
        if !self.ended {
            self.ended = true;
            // Best effort: the call already answers with its abort (or a panic's error).
            let _ = self.send_written();
        }
    }
}

impl<A: Copy, L: Link<A>> Sink<A> for Wire<'_, A, L> {
    fn written(&mut self, key: A, value: A, by: WrittenBy, expiry: Resolved) -> Result<(), Abort> {
        self.expiry = Some(expiry);
        match (self.sends, by) {
            (_, WrittenBy::ReplicatedCommand) => return Ok(()),
            (Sends::CountOnly { at_end: false }, WrittenBy::KeyApi) => self.link.count_change(),
            (Sends::CountOnly { .. } | Sends::PerCall(_), WrittenBy::KeyApi) => self.uncounted += 1,
            (Sends::CountOnly { .. } | Sends::PerCall(_), WrittenBy::Command) => {}
            (Sends::PerKey, _) => {
                let tail = words(expiry.into(), Form::Options).ok_or(Abort("replicate"))?;
                if !self.link.replicate(c"SET", &[], &[key, value], &tail) {
                    return Err(Abort("replicate"));
                }
            }
        }
        self.written += 1;
        Ok(())
    }
}

// --- The changes counter ---------------------------------------------------------------------

/// Set only while MSETEX itself calls its changes counter: a client calling it gets an error.
static COUNTER_ARMED: AtomicBool = AtomicBool::new(false);

/// `<name>.changes n`: counts `n` changes for RDB save points. MSETEX calls it without
/// replication, so the server drops what `RedisModule_ReplicateVerbatim` queues.
pub fn count_changes(ctx: &Ctx<'_>, args: &[Arg<'_>]) -> Reply {
    let count = match args {
        [_, count] if COUNTER_ARMED.load(Ordering::Relaxed) => std::str::from_utf8(count.bytes())
            .ok()
            .and_then(|text| text.parse::<u64>().ok()),
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

/// Protocol words as strings the server takes; `None` if one could not be made.
pub fn strings(ctx: &Ctx<'_>, words: &[Word]) -> Option<Vec<OwnedString>> {
    words
        .iter()
        .map(|word| match *word {
            Word::Text(text) => ctx.string(text),
            Word::Number(n) => ctx.string_from_i64(n),
        })
        .collect()
}

/// The module API as a call's [`Link`]; keeps the strings of the last tail (one per call).
pub struct CtxLink<'c> {
    ctx: &'c Ctx<'c>,
    counter: Option<&'c CStr>,
    tail: Option<(Vec<Word>, Vec<OwnedString>)>,
}

impl<'c> CtxLink<'c> {
    /// `counter`: the changes counter's name, where it is registered.
    pub fn new(ctx: &'c Ctx<'c>, counter: Option<&'c CStr>) -> CtxLink<'c> {
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
            self.tail = strings(ctx, tail).map(|strings| (tail.to_vec(), strings));
        }
        let Some((_, tail)) = self.tail.as_ref() else {
            return false;
        };
        match (head, pairs) {
            ([], [key, value]) => ctx.replicate_pair(command, *key, *value, tail),
            _ => strings(ctx, head)
                .is_some_and(|head| ctx.replicate_command(command, &head, pairs, tail)),
        }
    }

    fn count_change(&mut self) {
        self.ctx.count_change();
    }

    fn count_changes(&mut self, n: usize) -> bool {
        let Some(counter) = self.counter else {
            return false;
        };
        COUNTER_ARMED.store(true, Ordering::Relaxed);
        let counted = self.ctx.call_without_replication(counter, n);
        COUNTER_ARMED.store(false, Ordering::Relaxed);
        counted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_probed_fields() {
        let fields = |role: &str, replicas: &str, backlog: &str| {
            vec![
                ("role", role.to_owned()),
                ("connected_slaves", replicas.to_owned()),
                ("repl_backlog_active", backlog.to_owned()),
            ]
        };
        assert_eq!(
            ReplicationInfo::from_fields(&fields("master", "0", "0")),
            Some(ReplicationInfo {
                is_primary: true,
                connected_replicas: 0,
                backlog_active: false
            })
        );
        assert_eq!(
            ReplicationInfo::from_fields(&fields("slave", "2", "1")),
            Some(ReplicationInfo {
                is_primary: false,
                connected_replicas: 2,
                backlog_active: true
            })
        );
        assert_eq!(
            ReplicationInfo::from_fields(&fields("master", "x", "0")),
            None
        );
        assert_eq!(
            ReplicationInfo::from_fields(&fields("master", "0", "0")[..2]),
            None
        );
    }

    #[test]
    fn replication_handshakes() {
        for command in ["SYNC", "sync", "PSYNC", "PsYnC"] {
            assert!(is_replication_handshake(command.as_bytes()), "{command}");
        }
        for command in ["SET", "REPLCONF", "SYNCX", ""] {
            assert!(!is_replication_handshake(command.as_bytes()), "{command}");
        }
    }

    // The state is process-wide, so one test walks through every transition.
    #[test]
    fn state_transitions() {
        let quiet = ReplicationInfo {
            is_primary: true,
            connected_replicas: 0,
            backlog_active: false,
        };
        set_watching(false);
        on_cron(|| Some(quiet));
        assert!(!nobody_listens(false), "never trusted without its signals");

        set_watching(true);
        assert!(!nobody_listens(false), "unknown until probed");
        on_cron(|| None);
        assert!(!nobody_listens(false), "a failed probe proves nothing");
        on_cron(|| Some(quiet));
        assert!(nobody_listens(false));
        assert!(!nobody_listens(true), "the AOF always listens");
        assert_eq!(listeners_label(false), c"none");
        assert_eq!(listeners_label(true), c"aof");

        on_listener_may_appear();
        assert!(!nobody_listens(false), "a SYNC, role change or load resets");
        assert_eq!(listeners_label(false), c"possible");
        for busy in [
            ReplicationInfo {
                backlog_active: true,
                ..quiet
            },
            ReplicationInfo {
                connected_replicas: 1,
                ..quiet
            },
            ReplicationInfo {
                is_primary: false,
                ..quiet
            },
        ] {
            on_cron(|| Some(quiet));
            assert!(nobody_listens(false));
            on_cron(|| Some(busy));
            assert!(!nobody_listens(false), "every tick re-checks: {busy:?}");
        }
        set_watching(false);
        assert!(!nobody_listens(false));
    }
}
