//! `COMMAND DOCS` and `COMMAND INFO` data (Redis 7.0+) as plain values. Imports nothing.

use std::ffi::CStr;

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
    /// Keys from argv[`first`] to argv[argc + `last`], every `step`; `incomplete`: options can move
    /// them.
    Range {
        first: i32,
        last: i32,
        step: i32,
        incomplete: bool,
    },
    /// argv[`index`] holds the key count, keys follow every `step`; `incomplete`: ask the callback.
    Keynum {
        index: i32,
        step: i32,
        incomplete: bool,
    },
    /// Keys from the argument after the first `keyword` (from argv[1] on) to argv[argc + `last`],
    /// every `step`.
    AfterKeyword {
        keyword: &'static CStr,
        last: i32,
        step: i32,
    },
}

#[derive(Debug)]
pub struct Docs {
    pub summary: &'static CStr,
    pub complexity: &'static CStr,
    /// The module version that introduced the form (not a Redis version).
    pub since: &'static CStr,
    pub args: &'static [Arg],
    pub keys: KeyDocs,
    /// Negative: at least this many arguments, counting the command name.
    pub arity: i32,
    /// COMMAND INFO's tips, space-separated.
    pub tips: Option<&'static CStr>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyDocs {
    pub spec: KeySpec,
    pub notes: Option<&'static CStr>,
    /// Legacy first key / last key / step for COMMAND INFO.
    pub legacy: (i32, i32, i32),
    /// A second spec tells clients to ask COMMAND GETKEYS (`keys::Keys::docs`).
    pub ask_getkeys: bool,
}

/// An argument without token (`time`).
pub const fn plain(name: &'static CStr, kind: ArgKind) -> Arg {
    Arg {
        name,
        kind,
        token: None,
        optional: false,
        multiple: false,
        subargs: &[],
    }
}

/// A token followed by its value (`EX seconds`).
pub const fn valued(name: &'static CStr, kind: ArgKind, token: &'static CStr) -> Arg {
    Arg {
        token: Some(token),
        ..plain(name, kind)
    }
}

/// A pure token (`NX`).
pub const fn token(name: &'static CStr, token: &'static CStr) -> Arg {
    valued(name, ArgKind::PureToken, token)
}

/// One of `subargs` (`[NX | XX]`).
pub const fn one_of(name: &'static CStr, optional: bool, subargs: &'static [Arg]) -> Arg {
    Arg {
        optional,
        subargs,
        ..plain(name, ArgKind::OneOf)
    }
}

/// Keys at 2, 4, ... to the end (legacy positions 2, -1, 2).
pub const fn pairs_from_2(incomplete: bool, ask_getkeys: bool, notes: &'static CStr) -> KeyDocs {
    KeyDocs {
        spec: KeySpec::Range {
            first: 2,
            last: -1,
            step: 2,
            incomplete,
        },
        notes: Some(notes),
        legacy: (2, -1, 2),
        ask_getkeys,
    }
}
