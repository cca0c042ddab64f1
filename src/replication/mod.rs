//! What MSETEX sends to replicas, the AOF and slot migrations. Two modes (load argument
//! `REPLICATE`, [`Replicate`]): `SET` sends each key as a native `SET key value PXAT ms` (or
//! `KEEPTTL`, or no TTL); `MSETEX` sends each call as one command with its absolute deadline. Where
//! the server runs MSETEX natively both send that ([`Replication`], decided at load). One call's
//! sending is `wire.rs`; whether anyone receives, `listeners.rs`; the module's own replicated
//! command, `apply.rs`.

use std::ffi::{CStr, CString};

use crate::server::{Profile, ServerCommand};

pub mod apply;
mod listeners;
mod wire;

pub use listeners::{
    is_replication_handshake, listeners_label, nobody_listens, on_cron, on_listener_may_appear,
    set_watching, ReplicationInfo, PROBED_FIELDS,
};
#[cfg(test)]
pub use wire::Link;
pub use wire::{count_changes, CtxLink, Wire};

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
