//! ACL: how each server decides whether a user may run MSETEX ([`AclCheck`]), and when MODULE
//! UNLOAD may go ahead. The module asks the server; it never changes a user's rules. MODULE UNLOAD
//! while ACL rules name a module command crashes Redis 6.2 - 8.6 and Valkey 7.2 - 8.1 (7.2+: the
//! server re-applies each rule and asserts on the missing command; 6.2, 7.0: the next `ACL LIST`
//! finds a permission bit no rule describes). Valkey 9.1 refuses it itself; elsewhere the module
//! does, from the rules `ACL LIST` shows ([`rule_naming`]).

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
/// besides MSET (which is asked with the call's keys), each with the arguments that follow the
/// call's first key (a shorter call crashes 7.0's key lookup). A rule that takes one of those
/// categories away takes at least one of them, unless it grants every one back by name, so the
/// user may run MSETEX where 7.2 would let it (`tests/it/acl.rs` checks the list against ACL CAT).
pub const SAME_CATEGORIES: [(&CStr, &[&str]); 5] = [
    (c"SET", &["v"]),
    (c"SETEX", &["1", "v"]),
    (c"PSETEX", &["1", "v"]),
    (c"MSETNX", &["v"]),
    (c"SETRANGE", &["0", "v"]),
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

/// The first rule in `acl_list` (`ACL LIST` lines) naming one of `names`, as (user, rule):
/// `+name`, `-name` or `±name|arg`, any case, at the top level or in a selector.
pub fn rule_naming(acl_list: &[Vec<u8>], names: &[&[u8]]) -> Option<(String, String)> {
    acl_list.iter().find_map(|line| {
        let mut words = line
            .split(u8::is_ascii_whitespace)
            .filter(|w| !w.is_empty());
        let user = words.nth(1)?;
        words
            .find(|word| names_one(word, names))
            .map(|rule| (lossy(user), lossy(rule)))
    })
}

/// Whether rule `word` (perhaps opening or closing a selector) grants or denies one of `names`.
fn names_one(word: &[u8], names: &[&[u8]]) -> bool {
    let word = word.strip_prefix(b"(").unwrap_or(word);
    let word = word.strip_suffix(b")").unwrap_or(word);
    let Some(command) = word
        .strip_prefix(b"+")
        .or_else(|| word.strip_prefix(b"-"))
        .filter(|rest| !rest.starts_with(b"@"))
    else {
        return false;
    };
    let command = command.split(|b| *b == b'|').next().unwrap_or_default();
    names.iter().any(|name| name.eq_ignore_ascii_case(command))
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &[&str]) -> Vec<Vec<u8>> {
        text.iter().map(|line| line.as_bytes().to_vec()).collect()
    }

    const NAMES: [&[u8]; 3] = [b"msetex", b"msetex.apply", b"msetex.changes"];

    #[test]
    fn finds_every_way_a_rule_names_a_command() {
        for (rules, rule) in [
            ("on nopass -@all +msetex.apply", "+msetex.apply"),
            ("on nopass ~* +@all -MSETEX", "-MSETEX"),
            ("on nopass -@all (~x:* +msetex.apply)", "+msetex.apply)"),
            ("on nopass -@all (+msetex ~x:*)", "(+msetex"),
            ("on nopass -@all +msetex|60", "+msetex|60"),
            ("on nopass -@all +msetex.changes", "+msetex.changes"),
        ] {
            let list = lines(&[
                "user default on nopass ~* &* +@all",
                &format!("user u1 {rules}"),
            ]);
            assert_eq!(
                rule_naming(&list, &NAMES),
                Some(("u1".to_owned(), rule.to_owned())),
                "{rules}"
            );
        }
    }

    #[test]
    fn categories_patterns_and_other_commands_name_nothing() {
        let list = lines(&[
            "user default on nopass ~* &* +@all",
            "user app on #5e88 ~+msetex &-msetex +@write -@string +set -msetexx +msetex.x",
            "user sel off (~x:* +@all -@write) resetchannels",
        ]);
        assert_eq!(rule_naming(&list, &NAMES), None);
        assert_eq!(rule_naming(&[], &NAMES), None);
    }
}
