//! ACL: how each server decides whether a user may run MSETEX ([`AclCheck`]), and Redis 7.0's
//! capability check (DESIGN.md, "One call, step by step"). It never changes a user's rules.

use std::ffi::CStr;

use crate::ffi::{AclUser, Arg};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AclCheck {
    /// Redis 7.2+, Valkey: the server checks the categories (`@write @string @slow`) and key specs.
    Categories,
    /// Redis 7.0: the server's own check by name and key patterns, then [`check_capability`].
    Capability,
    /// Redis 6.2 (no module API checks a permission): rules by command name only.
    CommandName,
}

impl AclCheck {
    /// The check the module API makes possible (categories, else a permission check, else none).
    pub fn offered(categories: bool, permission_check: bool) -> AclCheck {
        match (categories, permission_check) {
            (true, _) => AclCheck::Categories,
            (false, true) => AclCheck::Capability,
            (false, false) => AclCheck::CommandName,
        }
    }

    /// Checks at load that the server does what this check needs; the error is the log line.
    pub fn confirm(self, categories_set: bool, permission_check: bool) -> Result<(), String> {
        match self {
            AclCheck::Categories if !categories_set => Err(
                "the server did not put MSETEX in its ACL categories (@write @string @slow), so \
                 rules by category would not reach it"
                    .to_owned(),
            ),
            AclCheck::Capability if !permission_check => Err(
                "this server gives module commands no ACL categories and cannot check a \
                 permission for a module (RedisModule_ACLCheckCommandPermissions)"
                    .to_owned(),
            ),
            _ => Ok(()),
        }
    }

    pub fn label(self) -> &'static CStr {
        match self {
            AclCheck::Categories => c"categories",
            AclCheck::Capability => c"by-name-and-capability",
            AclCheck::CommandName => c"by-name",
        }
    }

    pub fn load_note(self, name: &str) -> Option<String> {
        match self {
            AclCheck::Categories => None,
            AclCheck::Capability => Some(format!(
                "this server gives module commands no ACL categories: grant '{name}' by name (or \
                 +@all); a call also needs MSET on its keys and SET on each, which the module \
                 asks the server before it writes"
            )),
            AclCheck::CommandName => Some(format!(
                "this server gives module commands no ACL categories and cannot check a \
                 permission for a module: ACL rules reach '{name}' by name only"
            )),
        }
    }
}

/// The server's permission check for one user (`ffi::AclUser`, or the unit tests' rules).
pub trait Permissions<A: Copy> {
    /// Whether the user may run the command whose arguments are `parts`, concatenated.
    fn allows(&mut self, parts: &[&[A]]) -> bool;

    /// Whether the user may run `command key value tail...` for every pair; else the first key
    /// refused (asking no further).
    fn allows_each_pair(&mut self, command: A, pairs: &[A], tail: &[A]) -> Result<(), A> {
        for pair in pairs.chunks_exact(2) {
            if !self.allows(&[&[command], pair, tail]) {
                return Err(pair.first().copied().unwrap_or(command));
            }
        }
        Ok(())
    }
}

/// What a refused call lacked, for the ACL log: MSET itself, or MSET or SET on this key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lacks<A> {
    Mset,
    Key(A),
}

/// Redis 7.0: whether the user may write `pairs` with `mset` (all keys in one selector) and each
/// key with `set key value <set_options>` (the call's expiry); stops at the first refusal.
pub fn check_capability<A: Copy, P: Permissions<A>>(
    user: &mut P,
    [mset, set]: [A; 2],
    set_options: &[A],
    pairs: &[A],
) -> Result<(), Lacks<A>> {
    if user.allows(&[&[mset], pairs]) {
        return user
            .allows_each_pair(set, pairs, set_options)
            .map_err(Lacks::Key);
    }
    // Why: MSET itself, else the first key MSET alone cannot write (else the first key: the keys
    // are writable one by one, not in one selector).
    if !user.allows(&[&[mset]]) {
        return Err(Lacks::Mset);
    }
    let lacking = pairs.chunks_exact(2).find(|p| !user.allows(&[&[mset], p]));
    let key = lacking.unwrap_or(pairs).first();
    Err(key.map_or(Lacks::Mset, |key| Lacks::Key(*key)))
}

impl<'a> Permissions<Arg<'a>> for AclUser<'_> {
    fn allows(&mut self, parts: &[&[Arg<'a>]]) -> bool {
        AclUser::allows(self, parts)
    }

    fn allows_each_pair(
        &mut self,
        command: Arg<'a>,
        pairs: &[Arg<'a>],
        tail: &[Arg<'a>],
    ) -> Result<(), Arg<'a>> {
        AclUser::allows_each_pair(self, command, pairs, tail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acl_reaches_msetex_as_the_module_api_allows() {
        assert_eq!(AclCheck::offered(true, true), AclCheck::Categories);
        assert_eq!(AclCheck::offered(false, true), AclCheck::Capability);
        assert_eq!(AclCheck::offered(false, false), AclCheck::CommandName);
    }

    /// A user as Redis 7.0 sees one: selectors, each with the commands it allows and the key
    /// prefixes it may write; a check passes where one selector allows the command and every key.
    struct Rules {
        selectors: Vec<(Vec<&'static str>, Vec<&'static str>)>,
        asked: Vec<Vec<&'static str>>,
    }

    impl Permissions<&'static str> for Rules {
        fn allows(&mut self, parts: &[&[&'static str]]) -> bool {
            let argv = parts.concat();
            self.asked.push(argv.clone());
            let (command, keys): (&str, Vec<&str>) = match argv.as_slice() {
                ["MSET", rest @ ..] => ("MSET", rest.iter().step_by(2).copied().collect()),
                ["SET", key, ..] => ("SET", vec![*key]),
                _ => return false,
            };
            self.selectors.iter().any(|(commands, prefixes)| {
                commands.contains(&command)
                    && keys
                        .iter()
                        .all(|key| prefixes.iter().any(|prefix| key.starts_with(prefix)))
            })
        }
    }

    fn user(selectors: &[(&[&'static str], &[&'static str])]) -> Rules {
        Rules {
            selectors: selectors
                .iter()
                .map(|(commands, keys)| (commands.to_vec(), keys.to_vec()))
                .collect(),
            asked: Vec::new(),
        }
    }

    fn check(user: &mut Rules, pairs: &[&'static str]) -> Result<(), Lacks<&'static str>> {
        check_capability(user, ["MSET", "SET"], &["PX", "60000"], pairs)
    }

    #[test]
    fn asks_mset_on_every_key_then_set_on_each_with_the_expiry() {
        let mut all = user(&[(&["MSET", "SET"], &[""])]);
        assert_eq!(check(&mut all, &["a", "1", "b", "2"]), Ok(()));
        assert_eq!(
            all.asked,
            [
                vec!["MSET", "a", "1", "b", "2"],
                vec!["SET", "a", "1", "PX", "60000"],
                vec!["SET", "b", "2", "PX", "60000"],
            ]
        );
    }

    #[test]
    fn a_selector_cannot_widen_a_call() {
        // Issue 30's user: MSET on every key in one selector, SET only on `first*` in another.
        let mut widened = user(&[(&["MSET"], &[""]), (&["SET"], &["first"])]);
        assert_eq!(
            check(&mut widened, &["first1", "x", "other", "y"]),
            Err(Lacks::Key("other"))
        );
        assert_eq!(check(&mut widened, &["first1", "x", "first2", "y"]), Ok(()));
    }

    #[test]
    fn says_what_is_lacking() {
        let mut no_mset = user(&[(&["SET"], &[""])]);
        assert_eq!(check(&mut no_mset, &["a", "1"]), Err(Lacks::Mset));
        let mut some_keys = user(&[(&["MSET", "SET"], &["app:"])]);
        assert_eq!(
            check(&mut some_keys, &["app:1", "1", "other", "2"]),
            Err(Lacks::Key("other"))
        );
        // Every key writable alone, never together: the first key is logged.
        let mut apart = user(&[(&["MSET", "SET"], &["a"]), (&["MSET", "SET"], &["b"])]);
        assert_eq!(
            check(&mut apart, &["a", "1", "b", "2"]),
            Err(Lacks::Key("a"))
        );
        let mut no_set = user(&[(&["MSET"], &[""])]);
        assert_eq!(check(&mut no_set, &["a", "1"]), Err(Lacks::Key("a")));
    }
}
