//! What the module decided when it loaded (`plan`), read by every call without a lock.

use std::ffi::CString;

use crate::ffi::Slot;
use crate::keys::Keys;
use crate::replication::Replication;
use crate::server::Profile;
use crate::syntax::Syntax;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loaded {
    /// The registered command name, in lower case.
    pub name: String,
    pub c_name: CString,
    pub syntax: Syntax,
    pub replication: Replication,
    pub profile: Profile,
    pub keys: Keys,
}

/// The loaded module, once the load got that far.
pub static LOADED: Slot<Loaded> = Slot::new();
