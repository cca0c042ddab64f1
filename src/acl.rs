//! ACL: how each server decides whether a user may run MSETEX ([`AclCheck`]). The module asks the
//! server; it never changes a user's rules.

use std::ffi::CStr;

/// How a user's right to write is checked before MSETEX runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AclCheck {
    /// Redis 7.2+, Valkey: the server checks the categories (`@write @string @slow`) and key specs.
    ByServer,
    /// Redis 7.0 (no categories for module commands): the server's check by name (or `+@all`),
    /// then, before any write, `RedisModule_ACLCheckCommandPermissions` for MSET on exactly the
    /// call's keys (write access to every key, all in one selector, as 7.2 decides a multi-key
    /// command) and for every other command of MSETEX's 7.2 categories ([`SAME_CATEGORIES`]).
    AlsoMset,
    /// Redis 6.2 (no module API checks a permission): rules by command name only.
    ByName,
}

/// Redis 7.0's commands whose ACL categories are exactly MSETEX's on 7.2, `@write @string @slow`,
/// besides MSET (which is asked with the call's keys), each with how many arguments follow the
/// call's first key (a shorter call crashes 7.0's key lookup; the check reads only the name and the
/// key, so the call's own first value fills them). A rule that takes one of those categories away
/// takes at least one of them, unless it grants every one back by name, so the user may run MSETEX
/// where 7.2 would let it (`tests/it/acl.rs` checks the list against ACL CAT).
pub const SAME_CATEGORIES: [(&CStr, usize); 5] = [
    (c"SET", 1),
    (c"SETEX", 2),
    (c"PSETEX", 2),
    (c"MSETNX", 1),
    (c"SETRANGE", 2),
];

impl AclCheck {
    /// From whether the server took MSETEX's ACL categories and can check a module's permission.
    pub fn decide(categories_set: bool, permission_check: bool) -> AclCheck {
        match (categories_set, permission_check) {
            (true, _) => AclCheck::ByServer,
            (false, true) => AclCheck::AlsoMset,
            (false, false) => AclCheck::ByName,
        }
    }

    /// `INFO msetex` `msetex_acl`.
    pub fn label(self) -> &'static CStr {
        match self {
            AclCheck::ByServer => c"categories",
            AclCheck::AlsoMset => c"by-name-and-mset",
            AclCheck::ByName => c"by-name",
        }
    }

    /// What the log says at load where the server gives MSETEX no categories.
    pub fn load_note(self, name: &str) -> Option<String> {
        match self {
            AclCheck::ByServer => None,
            AclCheck::AlsoMset => Some(format!(
                "this server gives module commands no ACL categories: grant '{name}' by name \
                 (or +@all), and the user also needs MSET's permission on the keys (and SET's, \
                 SETEX's, PSETEX's, MSETNX's, SETRANGE's: the commands of MSETEX's categories)"
            )),
            AclCheck::ByName => Some(format!(
                "this server gives module commands no ACL categories and cannot check a \
                 permission for a module: ACL rules reach '{name}' by name only"
            )),
        }
    }
}
