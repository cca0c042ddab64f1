//! Whether anything can receive a replicated command now: where nobody can, a call replicates
//! nothing and only counts its changes (DESIGN.md, "Nobody listens").

use std::ffi::CStr;
use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};

/// Who may receive replicated commands besides the AOF: a SYNC/PSYNC, role change or load ends
/// "nobody" at once; only an `INFO replication` probe (cron) sets it again.
static LISTENERS: AtomicU8 = AtomicU8::new(NOT_WATCHED);

/// Not every signal that can announce a listener is in place: a probe is never trusted.
const NOT_WATCHED: u8 = 0;
/// Watched, but not proven that nobody listens.
const POSSIBLE: u8 = 1;
/// The last probe proved nobody can receive, and nothing since changed it.
const NOBODY: u8 = 2;

/// The fields of `INFO replication` that decide whether replication is fed (`shouldPropagate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplicationInfo {
    pub is_primary: bool,
    pub connected_replicas: i64,
    pub backlog_active: bool,
}

pub const PROBED_FIELDS: [&str; 3] = ["role", "connected_slaves", "repl_backlog_active"];

impl ReplicationInfo {
    /// `None` if a field is missing or unreadable.
    pub fn from_fields(fields: &[(&str, String)]) -> Option<ReplicationInfo> {
        let [role, replicas, backlog] = PROBED_FIELDS.map(|name| {
            let field = fields.iter().find(|(field, _)| *field == name);
            field.map(|(_, value)| value.trim())
        });
        Some(ReplicationInfo {
            is_primary: role? == "master",
            connected_replicas: replicas?.parse().ok()?,
            backlog_active: backlog?.parse::<i64>().ok()? != 0,
        })
    }
}

/// Slot exports under way (atomic slot migration): they stream what the module replicates.
static EXPORTS: AtomicU32 = AtomicU32::new(0);

pub fn on_slot_export(started: bool) {
    if started {
        EXPORTS.fetch_add(1, Ordering::Relaxed);
        on_listener_may_appear();
    } else {
        let _ = EXPORTS.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
    }
}

/// Records whether every signal the state relies on is in place (and the profile allows it).
pub fn set_watching(ok: bool) {
    LISTENERS.store(if ok { POSSIBLE } else { NOT_WATCHED }, Ordering::Relaxed);
}

/// A listener may appear (SYNC/PSYNC, role change, loading).
pub fn on_listener_may_appear() {
    let _ = LISTENERS.compare_exchange(NOBODY, POSSIBLE, Ordering::Relaxed, Ordering::Relaxed);
}

/// SYNC and PSYNC, any case: the commands that make a client a replica.
pub fn is_replication_handshake(command: &[u8]) -> bool {
    command.eq_ignore_ascii_case(b"PSYNC") || command.eq_ignore_ascii_case(b"SYNC")
}

/// Cron tick: re-probe with `probe` (`INFO replication`).
pub fn on_cron(probe: impl FnOnce() -> Option<ReplicationInfo>) {
    if LISTENERS.load(Ordering::Relaxed) == NOT_WATCHED {
        return;
    }
    let proven = probe().is_some_and(|info| {
        info.is_primary && info.connected_replicas == 0 && !info.backlog_active
    });
    LISTENERS.store(if proven { NOBODY } else { POSSIBLE }, Ordering::Relaxed);
}

/// Nothing can receive a replicated command now: no AOF (`aof_on`), replica, backlog or export.
pub fn nobody_listens(aof_on: bool) -> bool {
    !aof_on && LISTENERS.load(Ordering::Relaxed) == NOBODY && EXPORTS.load(Ordering::Relaxed) == 0
}

/// For `INFO msetex`: `none` (nothing is sent), `aof`, or `possible`.
pub fn listeners_label(aof_on: bool) -> &'static CStr {
    match (aof_on, nobody_listens(false)) {
        (true, _) => c"aof",
        (false, true) => c"none",
        (false, false) => c"possible",
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
