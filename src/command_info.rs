//! What `COMMAND DOCS` and `COMMAND INFO` say about MSETEX (Redis 7.0+),
//! as plain data; `ffi::set_command_info` hands it to the server.

use std::ffi::CStr;

pub const SUMMARY: &CStr =
    c"Sets multiple keys to multiple values with one time to live, atomically.";
pub const COMPLEXITY: &CStr = c"O(N) where N is the number of keys to set.";
/// The module version that introduced the command (not a Redis version).
pub const SINCE: &CStr = c"1.0.0";
/// Negative: at least this many arguments, counting the command name.
pub const ARITY: i32 = -4;

/// ACL categories on Redis 7.2+ (older servers: rules by command name).
pub const ACL_CATEGORIES: &CStr = c"write string slow";

/// The kinds of argument COMMAND DOCS knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgKind {
    String,
    Integer,
    Key,
    PureToken,
    OneOf,
    Block,
}

/// One node of the argument tree.
#[derive(Debug)]
pub struct Arg {
    pub name: &'static CStr,
    pub kind: ArgKind,
    pub token: Option<&'static CStr>,
    pub optional: bool,
    pub multiple: bool,
    pub subargs: &'static [Arg],
}

const fn token(name: &'static CStr, token: &'static CStr) -> Arg {
    Arg {
        name,
        kind: ArgKind::PureToken,
        token: Some(token),
        optional: false,
        multiple: false,
        subargs: &[],
    }
}

const fn plain(name: &'static CStr, kind: ArgKind) -> Arg {
    Arg {
        name,
        kind,
        token: None,
        optional: false,
        multiple: false,
        subargs: &[],
    }
}

/// `[NX | XX] [EX | PX | EXAT | PXAT] time key value [key value ...]`
pub const ARGS: &[Arg] = &[
    Arg {
        name: c"condition",
        kind: ArgKind::OneOf,
        token: None,
        optional: true,
        multiple: false,
        subargs: &[token(c"nx", c"NX"), token(c"xx", c"XX")],
    },
    Arg {
        name: c"unit",
        kind: ArgKind::OneOf,
        token: None,
        optional: true,
        multiple: false,
        subargs: &[
            token(c"ex", c"EX"),
            token(c"px", c"PX"),
            token(c"exat", c"EXAT"),
            token(c"pxat", c"PXAT"),
        ],
    },
    plain(c"time", ArgKind::Integer),
    Arg {
        name: c"data",
        kind: ArgKind::Block,
        token: None,
        optional: false,
        multiple: true,
        subargs: &[
            plain(c"key", ArgKind::Key),
            plain(c"value", ArgKind::String),
        ],
    },
];

/// The key specification COMMAND INFO shows: keys from argv[2] on, every
/// second argument, overwritten. Marked incomplete because options move
/// the keys, so the server asks the module (`getkeys-api`) instead.
pub const KEY_SPEC_FIRST: i32 = 2;
pub const KEY_SPEC_LAST: i32 = -1;
pub const KEY_SPEC_STEP: i32 = 2;

#[cfg(test)]
mod tests {
    use super::*;

    /// The docs must describe the grammar parse.rs accepts.
    #[test]
    fn argument_tree_matches_the_grammar() {
        let names: Vec<&str> = ARGS.iter().map(|a| a.name.to_str().unwrap()).collect();
        assert_eq!(names, ["condition", "unit", "time", "data"]);
        let tokens = |arg: &Arg| -> Vec<&str> {
            arg.subargs
                .iter()
                .filter_map(|s| s.token)
                .map(|t| t.to_str().unwrap())
                .collect()
        };
        assert_eq!(tokens(&ARGS[0]), ["NX", "XX"]);
        assert_eq!(tokens(&ARGS[1]), ["EX", "PX", "EXAT", "PXAT"]);
        assert!(ARGS[0].optional && ARGS[1].optional && !ARGS[2].optional);
        assert!(ARGS[3].multiple && ARGS[3].subargs[0].kind == ArgKind::Key);
    }
}
