//! What the module decided when it loaded (`plan`), read by every call.

use std::ffi::CString;

use crate::ffi::Slot;
use crate::replication::{Replicate, Replication};
use crate::server::{KeysDeclared, MovedKeys, Profile};
use crate::syntax::{Packed, Syntax};

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
    /// `cluster-enabled yes`.
    pub cluster: bool,
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

impl Module {
    /// Where the filter must move this syntax's options out of the keys' way (or refuse the call):
    /// key specs only, and a spec that does not describe calls with options.
    pub fn packs_for(&self) -> Option<MovedKeys> {
        let moved = self.profile.moves_keys()?;
        match (self.syntax, self.profile.keys) {
            (
                Syntax::Numkeys,
                KeysDeclared::BySpecs {
                    keynum_exact: true, ..
                },
            ) => None,
            _ => Some(moved),
        }
    }

    /// Whether calls may carry the filter's packed argument.
    pub fn packed(&self) -> Packed {
        if self.filter_packs() {
            Packed::Read
        } else {
            Packed::Plain
        }
    }

    /// True where [`Module::packs_for`] says the filter has work.
    pub fn filter_packs(&self) -> bool {
        self.packs_for().is_some()
    }
}
