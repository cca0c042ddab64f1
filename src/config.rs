//! What the module decided when it loaded (`plan`), read by every call.

use std::ffi::{CStr, CString};
use std::sync::RwLock;

use crate::replication::Replicate;
use crate::server::{Profile, TtlOptions};
use crate::syntax::{ReplicatedForm, Syntax};

/// How a user's right to write is checked before MSETEX runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AclCheck {
    /// The server checks ACL categories (Redis 7.2+, Valkey): nothing to do.
    ByServer,
    /// No categories for module commands (Redis 7.0): the command filter
    /// gives MSETEX its 7.2 permission in every rule set (see `acl`).
    Translated,
    /// Redis 6.2: no module API can check a command permission.
    Unavailable,
}

/// The loaded module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Module {
    /// The registered command name, in lower case.
    pub name: String,
    pub name_c: CString,
    pub syntax: Syntax,
    pub replicate: Replicate,
    pub profile: Profile,
    pub acl: AclCheck,
    /// `cluster-enabled yes`.
    pub cluster: bool,
    /// The changes counter (`<name>.changes`), where
    /// [`Replicate::counts_changes`].
    pub counter_c: Option<CString>,
    /// `<name>.apply`: how REPLICATE MSETEX replicates a call (registered
    /// whatever the mode, so that replicas and AOF loading apply it).
    pub apply_c: CString,
    /// The form REPLICATE MSETEX sends.
    pub replicated_form: ReplicatedForm,
    /// `<name>.unroutable`, where the filter refuses TTL-form options
    /// (`TtlOptions::Refused`).
    pub unroutable_c: Option<CString>,
}

static MODULE: RwLock<Option<&'static Module>> = RwLock::new(None);

/// Records the loaded module (leaked: a handful of bytes per MODULE LOAD,
/// so that every call can hold a plain reference).
pub fn set(module: Module) {
    let module: &'static Module = Box::leak(Box::new(module));
    if let Ok(mut slot) = MODULE.write() {
        *slot = Some(module);
    }
}

/// The loaded module, if the load got that far.
pub fn get() -> Option<&'static Module> {
    MODULE.read().ok().and_then(|slot| *slot)
}

impl Module {
    /// True where the command filter rewrites TTL-form calls with options
    /// (see `command::rewrite`).
    pub fn packs_options(&self) -> bool {
        self.profile.ttl_options != TtlOptions::Declared && self.syntax.has_leading_options()
    }

    /// The command REPLICATE MSETEX sends.
    pub fn replicated_name(&self) -> &CStr {
        match self.replicated_form {
            ReplicatedForm::Apply => &self.apply_c,
            ReplicatedForm::Builtin => &self.name_c,
        }
    }

    /// `INFO msetex` `msetex_acl`: how ACL rules reach MSETEX.
    pub fn acl_label(&self) -> &'static CStr {
        match self.acl {
            AclCheck::ByServer => c"categories",
            AclCheck::Translated if crate::acl::unreadable() => c"by-name",
            AclCheck::Translated if crate::acl::pending() => c"correcting",
            AclCheck::Translated => c"translated",
            AclCheck::Unavailable => c"by-name",
        }
    }
}
