//! The replication modes (load argument `REPLICATE`) and what a load decides each call sends.

use std::ffi::{CStr, CString};

use crate::server::Profile;

/// What goes to replicas and the AOF for one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replicate {
    /// Each key as `SET key value PXAT ms` (default).
    Set,
    /// Each call as one command with its absolute deadline.
    Msetex,
}

impl Replicate {
    /// `INFO msetex`'s `replicate` (upper case: the load argument).
    pub fn label(self) -> &'static CStr {
        match self {
            Replicate::Set => c"set",
            Replicate::Msetex => c"msetex",
        }
    }
}

/// What each call sends, decided at load from the mode, the syntax and the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replication {
    pub mode: Replicate,
    pub sent: Sent,
    /// `<name>.changes`, with which a call counts its key-API writes in one go.
    pub counter: CString,
    /// Redis 6.2: changes are counted at the end of a call even where nobody listens.
    pub counts_at_end: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sent {
    /// `SET key value <expiry>` per key (REPLICATE SET).
    PerKey,
    /// The whole call as one command after the last write.
    PerCall { command: CString, form: CallForm },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallForm {
    /// `<name>.apply <deadline | KEEPTTL | PERSIST> key value ...`; its key spec locates its keys.
    Apply,
    /// `<command> numkeys key value ... [PXAT deadline | KEEPTTL]`: the built-in MSETEX's form.
    Numkeys,
}

impl Replication {
    pub fn decide(
        mode: Replicate,
        numkeys_as_msetex: bool,
        profile: &Profile,
        name: &str,
    ) -> Result<Replication, String> {
        let named =
            |suffix: &str| CString::new(format!("{name}{suffix}")).map_err(|e| e.to_string());
        let call = |command: CString, form| Sent::PerCall { command, form };
        let sent = match mode {
            _ if profile.native_replication() => call(c"MSETEX".to_owned(), CallForm::Numkeys),
            Replicate::Set => Sent::PerKey,
            Replicate::Msetex if numkeys_as_msetex && !profile.cluster => {
                call(c"msetex".to_owned(), CallForm::Numkeys)
            }
            Replicate::Msetex => call(named(".apply")?, CallForm::Apply),
        };
        Ok(Replication {
            mode,
            sent,
            counter: named(".changes")?,
            counts_at_end: profile.verbatim_copies_call,
        })
    }

    /// `<name>.apply`, where calls are sent as it.
    pub fn apply(&self) -> Option<&CStr> {
        match &self.sent {
            Sent::PerCall { command, form } if *form == CallForm::Apply => Some(command),
            _ => None,
        }
    }

    pub fn load_note(&self) -> Option<String> {
        match &self.sent {
            Sent::PerKey => None,
            Sent::PerCall { command, .. } if command.as_c_str() == c"MSETEX" => Some(
                "this server runs MSETEX itself: each call goes to replicas and the AOF as \
                     one native MSETEX command, which they run without this module"
                    .to_owned(),
            ),
            Sent::PerCall { command, form } => Some(format!(
                "REPLICATE MSETEX: each call goes to replicas, the AOF and slot migrations as \
                 one '{}' command; replicas, AOF loading and the nodes slots migrate to need \
                 this module loaded with the same arguments{}",
                command.to_string_lossy(),
                match form {
                    CallForm::Numkeys => " (or be Redis 8.4+ / Valkey 9.1+, which run it natively)",
                    CallForm::Apply => "",
                }
            )),
        }
    }
}
