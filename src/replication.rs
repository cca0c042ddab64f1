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

/// What this call sends, decided once when the call starts.
enum Sends {
    /// Nobody listens: replicate nothing, count each key-API change.
    CountOnly,
    /// `REPLICATE SET`: each key as `SET key value <tail>`.
    PerKey,
    /// One command at the end once a key was written (`written`, the first pairs of the call: the
    /// writer reports keys in argument order), counting the key-API writes.
    PerCall { uncounted: usize, written: usize },
}

/// One call's replication: created before the first write, fed each, finished after the last.
pub struct Wire<'call> {
    ctx: &'call Ctx<'call>,
    sends: Sends,
    /// For [`Sends::PerKey`]: the `<tail>` of `SET key value <tail>`, made with the first key.
    set_tail: Option<Vec<OwnedString>>,
    /// The changes counter (`<name>.changes`) where each call goes as one command.
    counter: Option<&'call CStr>,
}

impl<'call> Wire<'call> {
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
                written: 0,
            },
        };
        Wire {
            ctx,
            sends,
            set_tail: None,
            counter,
        }
    }

    /// After an [`Abort`] where the call goes as one command: the keys it wrote stay written, so
    /// replicas and the AOF get each as `SET key value <expiry>` (they never diverge).
    pub fn abandon(mut self, pairs: &[Arg<'call>], expiry: Option<Resolved>) {
        let (Sends::PerCall { written, .. }, Some(expiry)) = (&self.sends, expiry) else {
            return;
        };
        let written = *written;
        for pair in pairs.chunks_exact(2).take(written) {
            if let &[key, value] = pair {
                // Best effort: the call already answers with its abort.
                let _ = self.replicate_set(key, value, expiry);
            }
        }
    }

    fn replicate_set(
        &mut self,
        key: Arg<'call>,
        value: Arg<'call>,
        expiry: Resolved,
    ) -> Result<(), Abort> {
        let ctx = self.ctx;
        if self.set_tail.is_none() {
            let tail = words(expiry.into(), Form::Options)
                .and_then(|words| strings(ctx, &words))
                .ok_or(Abort("allocate the replicated command"))?;
            self.set_tail = Some(tail);
        }
        let tail = self.set_tail.as_deref().unwrap_or_default();
        if !ctx.replicate_set(key, value, tail) {
            return Err(Abort("replicate"));
        }
        Ok(())
    }

    /// Ends the call: if it goes as one command and a write needs it, replicates it (`pairs`,
    /// `expiry`) and counts the key-API writes, less the one the replicated command counts.
    pub fn finish(
        self,
        replication: &Replication,
        pairs: &[Arg],
        expiry: Option<Resolved>,
    ) -> Result<(), Abort> {
        let (
            Sends::PerCall {
                uncounted,
                written: 1..,
            },
            Replication::PerCall { command, form },
        ) = (self.sends, replication)
        else {
            return Ok(());
        };
        // Known once the first key was written.
        let expiry = expiry.ok_or(Abort("resolve the deadline"))?;
        let (head, tail) = match form {
            CallForm::Apply => (words(expiry.into(), Form::Apply), Some(Vec::new())),
            CallForm::Numkeys => (
                Some(vec![Word::Number(pairs.len() as i64 / 2)]),
                words(expiry.into(), Form::Options),
            ),
        };
        let to_strings = |words: Option<Vec<Word>>| strings(self.ctx, &words?);
        let (head, tail) = to_strings(head)
            .zip(to_strings(tail))
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
            (Sends::PerKey, _) => self.replicate_set(key, value, expiry)?,
            (Sends::PerCall { uncounted, written }, by) => {
                if by == WrittenBy::KeyApi {
                    *uncounted += 1;
                }
                *written += 1;
            }
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
