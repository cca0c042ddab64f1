//! What MSETEX puts on the wire to replicas, the AOF and slot migrations:
//! the replication modes, each in one place.
//!
//! Two modes (load argument `REPLICATE`, [`Replicate`]): `SET` sends each
//! key as its own native `SET key value PXAT ms` (`SET key value KEEPTTL`
//! for KEEPTTL, `SET key value` for a call without TTL); `MSETEX` sends each
//! call as one command with its absolute deadline. Where the server runs
//! MSETEX natively, both send the built-in's own command ([`Replication`],
//! decided once at load). Either way, this module decides per call
//! whether anything can receive what is replicated at all, because
//! `RedisModule_Replicate` costs a command lookup and allocations (about
//! 350 ns) even when the server then drops the command.
//!
//! The server keeps a propagated command only when (`shouldPropagate` in
//! server.c) the AOF is on, or it is a primary with a replication backlog
//! or replicas. The AOF state is read exactly on every call. The backlog is
//! created by a replica's SYNC or PSYNC, by a role change or by loading a
//! data set: a command filter sees every SYNC/PSYNC before it runs, and
//! server events announce the others, so the module knows at once when
//! "nobody listens" stops being true. Only a probe of `INFO replication`
//! (every cron tick) makes it true again. While it holds, no command is
//! replicated at all: changes are counted with RedisModule_ReplicateVerbatim,
//! which the server then drops, provably, before it reaches any stream.

use std::ffi::{CStr, CString};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use crate::deadline::{words, Form, Resolved, Word};
use crate::ffi::{Arg, Ctx, OwnedString, Reply};
use crate::outcome::Abort;
use crate::server::{Profile, ServerCommand};
use crate::write::{Sink, WrittenBy};

// ---------------------------------------------------------------------------
// The modes

/// What goes to replicas and the AOF for one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replicate {
    /// Each key as `SET key value PXAT ms` (the default): native commands,
    /// so replicas and AOF loading need nothing.
    Set,
    /// Each call as one command with its absolute deadline: replicas, AOF
    /// loading and the nodes slots migrate to need the module (or, for the
    /// NUMKEYS form under the built-in's name, a server with its own
    /// MSETEX).
    Msetex,
}

impl Replicate {
    /// Its name: `set` or `msetex` (`INFO msetex`, and in upper case the
    /// load argument).
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

/// What each call sends, decided once at load from the mode, the syntax
/// and the server.
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
    /// `<name>.apply <deadline | KEEPTTL | PERSIST> key value ...`: the
    /// module's own command, whose key spec says exactly where its keys are.
    Apply,
    /// `<command> numkeys key value ... [PXAT deadline | KEEPTTL]`: the
    /// built-in MSETEX's own form.
    Numkeys,
}

impl Replication {
    /// Where the server runs the built-in MSETEX natively and nothing drops
    /// it (`Profile::native_replication`), both modes send it: one native
    /// command per call, which replicas and AOF loading run without the
    /// module. Otherwise REPLICATE SET sends SET per key, and REPLICATE
    /// MSETEX the NUMKEYS form under the module's own name `msetex` outside
    /// cluster mode (replicas of Redis 8.4+ / Valkey 9.1+ run it natively),
    /// else `<name>.apply` (a slot migration's filter reads its keys).
    /// `numkeys_as_msetex`: the NUMKEYS form is registered as `msetex`
    /// (where the server has no MSETEX of its own); `apply`: the name of
    /// the module's replication command, `<name>.apply`.
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

    /// The server command this replication sends, which the load checks is
    /// there under its name (or a call could write without replicating).
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

    /// True when calls are replicated as one command, whose key-API writes
    /// are counted through the changes counter (`<name>.changes`).
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

// ---------------------------------------------------------------------------
// Who listens

/// Who may receive replicated commands, as far as the module knows.
static LISTENERS: AtomicU8 = AtomicU8::new(NOT_WATCHED);

/// Not every signal that can announce a backlog is in place (events and
/// the command filter): a probe's answer could go stale unnoticed, so it is
/// never trusted.
const NOT_WATCHED: u8 = 0;
/// Watched, but not proven that nobody listens.
const POSSIBLE: u8 = 1;
/// The last probe proved that nobody (no replica, no backlog) can receive
/// replicated commands, and nothing since could have changed that.
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
    /// Builds the probe's answer from (field, value) pairs of `INFO
    /// replication`; `None` if a field is missing or unreadable.
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

/// Records whether every signal the state relies on is in place (and the
/// server profile allows the shortcut at all).
pub fn set_watching(ok: bool) {
    LISTENERS.store(if ok { POSSIBLE } else { NOT_WATCHED }, Ordering::Relaxed);
}

/// A replica's SYNC or PSYNC is about to run, a role changed or a data set
/// is loading: a backlog or a replica may exist from now on.
pub fn on_listener_may_appear() {
    let _ = LISTENERS.compare_exchange(NOBODY, POSSIBLE, Ordering::Relaxed, Ordering::Relaxed);
}

/// True for the commands that turn a client into a replica (and create the
/// replication backlog): SYNC and PSYNC, in any case.
pub fn is_replication_handshake(command: &[u8]) -> bool {
    command.eq_ignore_ascii_case(b"PSYNC") || command.eq_ignore_ascii_case(b"SYNC")
}

/// Cron tick: probe the state with `probe` (which reads `INFO replication`,
/// or returns `None` if a field is missing).
pub fn on_cron(probe: impl FnOnce() -> Option<ReplicationInfo>) {
    if LISTENERS.load(Ordering::Relaxed) == NOT_WATCHED {
        return;
    }
    let proven = probe().is_some_and(|info| info.proves_nobody_listens());
    LISTENERS.store(if proven { NOBODY } else { POSSIBLE }, Ordering::Relaxed);
}

/// True when nothing can receive a replicated command right now: no AOF
/// (`aof_on` is the exact per-call state) and no replica or backlog.
pub fn nobody_listens(aof_on: bool) -> bool {
    !aof_on && LISTENERS.load(Ordering::Relaxed) == NOBODY
}

/// For `INFO msetex`: `none` when MSETEX replicates nothing because nothing
/// can receive it, `aof` when the AOF is on, `possible` otherwise.
pub fn listeners_label(aof_on: bool) -> &'static CStr {
    if aof_on {
        c"aof"
    } else if LISTENERS.load(Ordering::Relaxed) == NOBODY {
        c"none"
    } else {
        c"possible"
    }
}

// ---------------------------------------------------------------------------
// One call's replication

/// What this call sends, decided once when the call starts.
enum Sends {
    /// Nobody listens: replicate nothing, count each key-API change.
    CountOnly,
    /// `REPLICATE SET`: each key as `SET key value <tail>`.
    PerKey,
    /// The whole call as one command at the end, once some write needs it
    /// (`pending`); the key-API writes are counted then.
    PerCall { uncounted: usize, pending: bool },
}

/// The replication of one call: created before the first write, fed every
/// write, finished after the last.
pub struct Wire<'call> {
    ctx: &'call Ctx<'call>,
    sends: Sends,
    /// `SET key value <tail>` for [`Sends::PerKey`]: the strings after the
    /// value, created with the first key.
    set_tail: Option<Vec<OwnedString>>,
    /// The changes counter (`<name>.changes`), where each call is
    /// replicated as one command.
    counter: Option<&'call CStr>,
}

impl<'call> Wire<'call> {
    /// `counter`: the changes counter, registered where
    /// [`Replication::counts_changes`].
    pub fn new(
        ctx: &'call Ctx<'call>,
        replication: &Replication,
        counter: Option<&'call CStr>,
        aof_on: bool,
    ) -> Wire<'call> {
        let sends = match replication {
            _ if nobody_listens(aof_on) => Sends::CountOnly,
            Replication::PerKey => Sends::PerKey,
            Replication::PerCall { .. } => Sends::PerCall {
                uncounted: 0,
                pending: false,
            },
        };
        Wire {
            ctx,
            sends,
            set_tail: None,
            counter,
        }
    }

    /// Ends the call: where each call is replicated as one command and a
    /// write needs it, replicates the call (its `pairs`, with `expiry`) and
    /// counts the key-API writes. The command replicated counts one change
    /// itself.
    pub fn finish(
        self,
        replication: &Replication,
        pairs: &[Arg],
        expiry: Option<Resolved>,
    ) -> Result<(), Abort> {
        let (
            Sends::PerCall {
                uncounted,
                pending: true,
            },
            Replication::PerCall { command, form },
        ) = (self.sends, replication)
        else {
            return Ok(());
        };
        // Known once the first key was written, which `pending` says.
        let expiry = expiry.ok_or(Abort("resolve the deadline"))?;
        let (head, tail) = match form {
            CallForm::Apply => (words(expiry.into(), Form::Apply), Some(Vec::new())),
            CallForm::Numkeys => (
                Some(vec![Word::Number(pairs.len() as i64 / 2)]),
                words(expiry.into(), Form::Options),
            ),
        };
        let strings = |words: Option<Vec<Word>>| -> Option<Vec<OwnedString>> {
            words?
                .into_iter()
                .map(|word| string(self.ctx, word))
                .collect()
        };
        let (head, tail) = strings(head)
            .zip(strings(tail))
            .ok_or(Abort("allocate the replicated command"))?;
        if !self.ctx.replicate_command(command, &head, pairs, &tail) {
            return Err(Abort("replicate"));
        }
        if uncounted > 1 {
            let counted = self.counter.is_some_and(|counter| {
                COUNTER_ARMED.store(true, Ordering::Relaxed);
                let counted = self.ctx.call_without_replication(counter, uncounted - 1);
                COUNTER_ARMED.store(false, Ordering::Relaxed);
                counted
            });
            if !counted {
                return Err(Abort("count the changes"));
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// The changes counter

/// True only while MSETEX itself calls its changes counter: a client
/// calling it gets an error.
static COUNTER_ARMED: AtomicBool = AtomicBool::new(false);

/// `<name>.changes n`, where each call is replicated as one command: counts
/// `n` changes for RDB save points. MSETEX calls it without replication,
/// so the server drops what `RedisModule_ReplicateVerbatim` queues.
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

/// A protocol word as a string the server takes.
fn string(ctx: &Ctx<'_>, word: Word) -> Option<OwnedString> {
    match word {
        Word::Text(text) => ctx.string(text),
        Word::Number(n) => ctx.string_from_i64(n),
    }
}

impl<'call> Sink<Arg<'call>> for Wire<'call> {
    fn written(
        &mut self,
        key: Arg<'call>,
        value: Arg<'call>,
        by: WrittenBy,
        expiry: Resolved,
    ) -> Result<(), Abort> {
        let ctx = self.ctx;
        match (&mut self.sends, by) {
            (_, WrittenBy::ReplicatedCommand) => {}
            (Sends::CountOnly, WrittenBy::KeyApi) => ctx.count_change(),
            (Sends::CountOnly, WrittenBy::Command) => {}
            (Sends::PerKey, _) => {
                if self.set_tail.is_none() {
                    // `SET key value <tail>`: SET's own form of the expiry.
                    let tail = words(expiry.into(), Form::Options)
                        .and_then(|words| words.into_iter().map(|w| string(ctx, w)).collect())
                        .ok_or(Abort("allocate the replicated command"))?;
                    self.set_tail = Some(tail);
                }
                let tail = self.set_tail.as_deref().unwrap_or_default();
                if !ctx.replicate_set(key, value, tail) {
                    return Err(Abort("replicate"));
                }
            }
            (Sends::PerCall { uncounted, pending }, WrittenBy::KeyApi) => {
                *uncounted += 1;
                *pending = true;
            }
            (Sends::PerCall { pending, .. }, WrittenBy::Command) => *pending = true,
        }
        Ok(())
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
