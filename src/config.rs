//! What the module decided when it loaded (`plan`), read by every call.

use std::ffi::CString;

use crate::ffi::Slot;
use crate::keys::Keys;
use crate::replication::{Replicate, Replication};
use crate::server::Profile;
use crate::syntax::Syntax;

/// The loaded module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Module {
    /// The registered command name, in lower case.
    pub name: String,
    pub name_c: CString,
    pub syntax: Syntax,
    /// The load argument `REPLICATE`.
    pub replicate: Replicate,
    pub replication: Replication,
    pub profile: Profile,
    pub keys: Keys,
    /// The changes counter (`<name>.changes`), where a call counts its changes at the end.
    pub counter_c: Option<CString>,
}

static MODULE: Slot<Module> = Slot::new();

/// Records the loaded module, for every call to read.
pub fn set(module: Module) {
    MODULE.set(module);
}

/// The loaded module, if the load got that far.
pub fn get() -> Option<&'static Module> {
    MODULE.get()
}
