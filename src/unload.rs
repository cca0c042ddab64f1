//! MODULE UNLOAD while ACL rules name one of the module's commands crashes
//! Redis 6.2 to 8.6 and Valkey 7.2 to 8.1 (7.2+: the server re-applies
//! each rule and asserts on the missing command; 6.2 and 7.0: the next
//! `ACL LIST` finds a permission bit no rule describes). Valkey 9.1 refuses
//! such an unload itself. Elsewhere the module refuses it, from the rules
//! the server describes (`ACL LIST`): a pure check over its lines.

/// The first rule of `acl_list` (the lines of `ACL LIST`) that names one of
/// `names` (the module's commands), as (user, rule): `+name`, `-name` or
/// `±name|arg`, in any case, at the top level or in a selector.
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

/// True when the rule `word` (perhaps opening or closing a selector) grants
/// or denies one of `names`.
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
