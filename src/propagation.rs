//! Whether anything can receive what a command replicates right now.
//!
//! Every key MSETEX writes is replicated as its own `SET key value PXAT ms`.
//! `RedisModule_Replicate` pays for that (a command lookup and three
//! allocations) even when the server then drops the command because there
//! is no AOF, no replica and no replication backlog: on a standalone cache
//! that is half of MSETEX's time. So the command asks this module first.
//!
//! The server only keeps a propagated command when (see `shouldPropagate`
//! in Redis's server.c) the AOF is on, or it is a primary with a
//! replication backlog or a replica. The AOF state is read exactly on every
//! call (a context flag). The backlog and replica count are not visible to
//! modules, so they are read from `INFO replication` on every cron tick and
//! trusted only until something that can create a backlog happens: a fork
//! (every full sync forks before its replica is fed), a role change, or a
//! load from disk. Until the next probe after such an event, MSETEX
//! replicates every key in full. Any doubt (a missing field, an event the
//! server cannot deliver) means "replicate in full". docs/DESIGN.md has
//! the whole argument.

use std::ffi::CStr;
use std::sync::atomic::{AtomicBool, Ordering};

/// True only while the last probe proved that nobody (no replica, no
/// backlog) can receive replicated commands and nothing since could have
/// changed that.
static NOBODY_LISTENS: AtomicBool = AtomicBool::new(false);

/// True once every event that can create a backlog is subscribed; without
/// them a probe's answer could go stale unnoticed, so it is never trusted.
static EVENTS_SUBSCRIBED: AtomicBool = AtomicBool::new(false);

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

/// Records whether the module could subscribe to every event it relies on.
pub fn set_events_subscribed(ok: bool) {
    EVENTS_SUBSCRIBED.store(ok, Ordering::Relaxed);
    if !ok {
        NOBODY_LISTENS.store(false, Ordering::Relaxed);
    }
}

/// A fork, role change or load happened: a backlog may exist from now on.
pub fn on_backlog_may_change() {
    NOBODY_LISTENS.store(false, Ordering::Relaxed);
}

/// Cron tick: probe the state with `probe` (which reads `INFO replication`,
/// or returns `None` if a field is missing). Probing on every tick, not only
/// after events, also bounds how long a backlog created some way the events
/// do not announce could go unnoticed: one tick.
pub fn on_cron(probe: impl FnOnce() -> Option<ReplicationInfo>) {
    if !EVENTS_SUBSCRIBED.load(Ordering::Relaxed) {
        return;
    }
    let proven = probe().is_some_and(|info| info.proves_nobody_listens());
    NOBODY_LISTENS.store(proven, Ordering::Relaxed);
}

/// What the last probe found, for `INFO msetex`: `none` when it proved
/// that no replica or backlog can receive replicated commands.
pub fn listeners_label() -> &'static CStr {
    if NOBODY_LISTENS.load(Ordering::Relaxed) {
        c"none"
    } else {
        c"possible"
    }
}

/// Whether a command replicated now can reach the AOF or a replica.
/// `aof_on` is the exact per-call AOF state.
pub fn replication_is_fed(aof_on: bool) -> bool {
    aof_on || !NOBODY_LISTENS.load(Ordering::Relaxed)
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

    // The state is process-wide, so one test walks through every transition.
    #[test]
    fn state_transitions() {
        let quiet = ReplicationInfo {
            is_primary: true,
            connected_replicas: 0,
            backlog_active: false,
        };
        set_events_subscribed(false);
        on_cron(|| Some(quiet));
        assert!(replication_is_fed(false), "never trusted without events");

        set_events_subscribed(true);
        assert!(replication_is_fed(false), "unknown until probed");
        on_cron(|| None);
        assert!(replication_is_fed(false), "a failed probe proves nothing");
        on_cron(|| Some(quiet));
        assert!(!replication_is_fed(false));
        assert!(replication_is_fed(true), "the AOF always gets the commands");

        on_backlog_may_change();
        assert!(replication_is_fed(false), "a fork or role change resets");
        on_cron(|| {
            Some(ReplicationInfo {
                backlog_active: true,
                ..quiet
            })
        });
        assert!(replication_is_fed(false));
        on_cron(|| {
            Some(ReplicationInfo {
                connected_replicas: 1,
                ..quiet
            })
        });
        assert!(replication_is_fed(false));
        on_cron(|| {
            Some(ReplicationInfo {
                is_primary: false,
                ..quiet
            })
        });
        assert!(replication_is_fed(false));
        on_cron(|| Some(quiet));
        assert!(!replication_is_fed(false));
        on_cron(|| {
            Some(ReplicationInfo {
                backlog_active: true,
                ..quiet
            })
        });
        assert!(replication_is_fed(false), "every tick re-checks");

        set_events_subscribed(false);
        assert!(replication_is_fed(false));
    }
}
