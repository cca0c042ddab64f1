//! `<name>.apply`, the module's replication command (REPLICATE MSETEX) for either syntax: its
//! grammar and COMMAND DOCS.

use super::options::{parse_i64, Ack, Condition, Expiry, ParseError, Request, MIN_ARGC};
use super::options::{ARITY, DATA};
use crate::deadline::{APPLY_KEEP, APPLY_PERSIST};
use crate::docs::{plain, token, Arg, ArgKind, Docs, KeySpec};

/// `<name>.apply <deadline | KEEPTTL | PERSIST> key value [key value ...]`: a call as REPLICATE
/// MSETEX sends it (replicas, AOF, slot migration), already decided (no NX/XX), its deadline in
/// absolute unix ms. Keys at 2, 4, ..., as its key spec says, so every server finds them exactly.
pub fn parse<A: AsRef<[u8]>>(argv: &[A]) -> Result<Request, ParseError> {
    if argv.len() < MIN_ARGC || !argv.len().is_multiple_of(2) {
        return Err(ParseError::WrongArity);
    }
    let expiry = match argv.get(1).map(AsRef::as_ref) {
        Some(word) if word.eq_ignore_ascii_case(APPLY_KEEP) => Expiry::Keep,
        Some(word) if word.eq_ignore_ascii_case(APPLY_PERSIST) => Expiry::Persist,
        Some(time) => match parse_i64(time) {
            Some(deadline) if deadline > 0 => Expiry::At(deadline),
            Some(_) => return Err(ParseError::InvalidExpireTime),
            None => return Err(ParseError::NotAnInteger),
        },
        None => return Err(ParseError::WrongArity),
    };
    Ok(Request {
        pairs: 2..argv.len(),
        condition: Condition::Always,
        expiry,
        ack: Ack::Ok,
    })
}

/// The docs of `<name>.apply`: keys exactly at 2, 4, ..., without a getkeys callback.
pub fn docs() -> Docs {
    Docs {
        summary: c"Applies an MSETEX call as REPLICATE MSETEX replicated it (replicas, the AOF, \
                   slot migration); not for clients.",
        complexity: c"O(N) where N is the number of keys to set.",
        since: c"2.1.0",
        args: ARGS,
        key_spec: KeySpec::Range {
            first: 2,
            last: -1,
            step: 2,
            incomplete: false,
        },
        key_notes: Some(c"Keys follow the time."),
        legacy_keys: (2, -1, 2),
        arity: ARITY,
    }
}

/// `<unix-time-milliseconds | KEEPTTL | PERSIST> key value [key value ...]`
const ARGS: &[Arg] = &[
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
