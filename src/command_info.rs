//! What `COMMAND DOCS` and `COMMAND INFO` say about MSETEX (Redis 7.0+), for
//! each syntax, as plain data; `ffi::set_command_info` hands it to the server.

use std::ffi::CStr;

use crate::parse::Syntax;

/// ACL categories on Redis 7.2+ (older servers: rules by command name).
pub const ACL_CATEGORIES: &CStr = c"write string slow";
/// Negative: at least this many arguments, counting the command name.
pub const ARITY: i32 = -4;

/// The kinds of argument COMMAND DOCS knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgKind {
    String,
    Integer,
    UnixTime,
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

/// Where the keys are, as a key specification describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeySpec {
    /// Keys from argv[`first`] to argv[argc + `last`], every `step`.
    /// `incomplete`: options can move them (the getkeys callback knows).
    Range {
        first: i32,
        last: i32,
        step: i32,
        incomplete: bool,
    },
    /// argv[`index`] holds the number of keys, which follow it every `step`.
    /// `incomplete`: servers before the built-in MSETEX (Redis 8.4, Valkey
    /// 9.1) read a keynum spec with a step of 2 as only half the keys, so
    /// they must ask the getkeys callback instead.
    Keynum {
        index: i32,
        step: i32,
        incomplete: bool,
    },
}

/// The documentation of one syntax.
#[derive(Debug)]
pub struct Docs {
    pub summary: &'static CStr,
    pub complexity: &'static CStr,
    /// The module version that introduced the form (not a Redis version).
    pub since: &'static CStr,
    pub args: &'static [Arg],
    pub key_spec: KeySpec,
    /// Legacy first key / last key / step for COMMAND INFO.
    pub legacy_keys: (i32, i32, i32),
}

/// The docs of `syntax`. `by_specs`: the key spec alone must describe the
/// keys (no getkeys callback); `keynum_steps`: the server reads a keynum
/// spec with a step (Redis 8.4+, Valkey 9.1+).
pub fn docs(syntax: Syntax, by_specs: bool, keynum_steps: bool) -> Docs {
    match syntax {
        Syntax::Ttl => Docs {
            summary: c"Sets multiple keys to multiple values with one time to live, atomically.",
            complexity: c"O(N) where N is the number of keys to set.",
            since: c"1.0.0",
            args: TTL_ARGS,
            key_spec: KeySpec::Range {
                first: 2,
                last: -1,
                step: 2,
                incomplete: !by_specs,
            },
            legacy_keys: (2, -1, 2),
        },
        Syntax::Numkeys => Docs {
            summary: c"Sets multiple keys to multiple values, with an optional shared \
                       expiration, atomically (the numkeys form of Redis 8.4 and Valkey 9.1).",
            complexity: c"O(N) where N is the number of keys to set.",
            since: c"2.0.0",
            args: NUMKEYS_ARGS,
            key_spec: KeySpec::Keynum {
                index: 1,
                step: 2,
                incomplete: !by_specs && !keynum_steps,
            },
            legacy_keys: (0, 0, 0),
        },
    }
}

/// The docs of `<name>.apply`, the form in which REPLICATE MSETEX replicates
/// a call: its keys at 2, 4, ..., exactly, without a getkeys callback.
pub fn apply_docs() -> Docs {
    Docs {
        summary: c"Applies an MSETEX call as REPLICATE MSETEX replicated it (replicas, the AOF, \
                   slot migration); not for clients.",
        complexity: c"O(N) where N is the number of keys to set.",
        since: c"2.1.0",
        args: APPLY_ARGS,
        key_spec: KeySpec::Range {
            first: 2,
            last: -1,
            step: 2,
            incomplete: false,
        },
        legacy_keys: (2, -1, 2),
    }
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

const fn valued(name: &'static CStr, kind: ArgKind, token: &'static CStr) -> Arg {
    Arg {
        name,
        kind,
        token: Some(token),
        optional: false,
        multiple: false,
        subargs: &[],
    }
}

const CONDITION: Arg = Arg {
    name: c"condition",
    kind: ArgKind::OneOf,
    token: None,
    optional: true,
    multiple: false,
    subargs: &[token(c"nx", c"NX"), token(c"xx", c"XX")],
};

const DATA: Arg = Arg {
    name: c"data",
    kind: ArgKind::Block,
    token: None,
    optional: false,
    multiple: true,
    subargs: &[
        plain(c"key", ArgKind::Key),
        plain(c"value", ArgKind::String),
    ],
};

/// `[NX | XX] [EX | PX | EXAT | PXAT] time key value [key value ...]`
const TTL_ARGS: &[Arg] = &[
    CONDITION,
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
    DATA,
];

/// `<unix-time-milliseconds | KEEPTTL | PERSIST> key value [key value ...]`
const APPLY_ARGS: &[Arg] = &[
    Arg {
        name: c"expiration",
        kind: ArgKind::OneOf,
        token: None,
        optional: false,
        multiple: false,
        subargs: &[
            plain(c"unix-time-milliseconds", ArgKind::UnixTime),
            token(c"keepttl", c"KEEPTTL"),
            token(c"persist", c"PERSIST"),
        ],
    },
    DATA,
];

/// `numkeys key value [key value ...] [NX | XX] [EX seconds | PX
/// milliseconds | EXAT unix-time-seconds | PXAT unix-time-milliseconds |
/// KEEPTTL]`
const NUMKEYS_ARGS: &[Arg] = &[
    plain(c"numkeys", ArgKind::Integer),
    DATA,
    CONDITION,
    Arg {
        name: c"expiration",
        kind: ArgKind::OneOf,
        token: None,
        optional: true,
        multiple: false,
        subargs: &[
            valued(c"seconds", ArgKind::Integer, c"EX"),
            valued(c"milliseconds", ArgKind::Integer, c"PX"),
            valued(c"unix-time-seconds", ArgKind::UnixTime, c"EXAT"),
            valued(c"unix-time-milliseconds", ArgKind::UnixTime, c"PXAT"),
            token(c"keepttl", c"KEEPTTL"),
        ],
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    fn names(args: &[Arg]) -> Vec<&str> {
        args.iter().map(|a| a.name.to_str().unwrap()).collect()
    }

    fn tokens(arg: &Arg) -> Vec<&str> {
        arg.subargs
            .iter()
            .filter_map(|s| s.token)
            .map(|t| t.to_str().unwrap())
            .collect()
    }

    /// The docs must describe the grammar parse.rs accepts.
    #[test]
    fn ttl_tree_matches_the_grammar() {
        let docs = docs(Syntax::Ttl, false, false);
        assert_eq!(names(docs.args), ["condition", "unit", "time", "data"]);
        assert_eq!(tokens(&docs.args[0]), ["NX", "XX"]);
        assert_eq!(tokens(&docs.args[1]), ["EX", "PX", "EXAT", "PXAT"]);
        assert!(docs.args[3].multiple && docs.args[3].subargs[0].kind == ArgKind::Key);
        assert_eq!(
            docs.key_spec,
            KeySpec::Range {
                first: 2,
                last: -1,
                step: 2,
                incomplete: true
            }
        );
    }

    #[test]
    fn numkeys_tree_matches_the_builtin() {
        let docs = docs(Syntax::Numkeys, false, true);
        assert_eq!(
            names(docs.args),
            ["numkeys", "data", "condition", "expiration"]
        );
        assert_eq!(
            tokens(&docs.args[3]),
            ["EX", "PX", "EXAT", "PXAT", "KEEPTTL"]
        );
        assert_eq!(
            docs.key_spec,
            KeySpec::Keynum {
                index: 1,
                step: 2,
                incomplete: false
            }
        );
        let older = super::docs(Syntax::Numkeys, false, false);
        assert!(matches!(
            older.key_spec,
            KeySpec::Keynum {
                incomplete: true,
                ..
            }
        ));
        assert_eq!(docs.legacy_keys, (0, 0, 0));
    }
}
