//! `SYNTAX NUMKEYS`, the built-in's grammar (Redis 8.6.3): `MSETEX numkeys key value ... [NX | XX]
//! [EX | PX | EXAT | PXAT time | KEEPTTL]`, options parsed like SET's (the last time wins).

use std::ffi::CStr;
use std::ops::Range;

use super::options::{
    expiry, parse_i64, Ack, Condition, Expiry, Keyword, ParseError, Request, TimeUnit, MIN_ARGC,
};
use super::options::{CONDITION, DATA};
use crate::docs::{one_of, plain, token, valued, Arg, ArgKind};

/// The built-in's COMMAND INFO tips (Redis 8.6.3).
pub(super) const TIPS: &CStr = c"request_policy:multi_shard response_policy:all_succeeded";

/// Checks in the built-in's order: numkeys, pair count, option syntax, then the time's value.
pub(super) fn parse<A: AsRef<[u8]>>(argv: &[A], now_ms: i64) -> Result<Request, ParseError> {
    let pairs = pairs(argv)?;
    let (condition, option) = options(argv, pairs.end)?;
    let expiry = match option {
        ExpiryOption::None => Expiry::Persist,
        ExpiryOption::Keep => Expiry::Keep,
        ExpiryOption::Unit(unit, index) => {
            let time = argv
                .get(index)
                .and_then(|arg| parse_i64(arg.as_ref()))
                .ok_or(ParseError::NotAnInteger)?;
            expiry(unit, time, now_ms)?
        }
    };
    Ok(Request {
        pairs,
        condition,
        expiry,
        ack: Ack::One,
    })
}

/// `numkeys` (1 to 2^31-1) and the pairs it announces, at least that many after it.
pub(super) fn pairs<A: AsRef<[u8]>>(argv: &[A]) -> Result<Range<usize>, ParseError> {
    if argv.len() < MIN_ARGC {
        return Err(ParseError::WrongArity);
    }
    let numkeys = argv
        .get(1)
        .and_then(|arg| parse_i64(arg.as_ref()))
        .filter(|n| (1..=i64::from(i32::MAX)).contains(n))
        .and_then(|n| usize::try_from(n).ok())
        .ok_or(ParseError::InvalidNumkeys)?;
    if numkeys > (argv.len() - 2) / 2 {
        return Err(ParseError::WrongPairCount);
    }
    Ok(2..2 + 2 * numkeys)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ExpiryOption {
    None,
    Keep,
    Unit(TimeUnit, usize),
}

/// The options after the pairs, by SET's rules: NX/XX exclude each other, as do the units and
/// KEEPTTL; a unit needs a following argument (its time, read later).
pub(super) fn options<A: AsRef<[u8]>>(
    argv: &[A],
    from: usize,
) -> Result<(Condition, ExpiryOption), ParseError> {
    let (mut condition, mut expiry) = (Condition::Always, ExpiryOption::None);
    let mut index = from;
    while let Some(arg) = argv.get(index) {
        match Keyword::parse(arg.as_ref()).ok_or(ParseError::Syntax)? {
            Keyword::Condition(new) => {
                if condition != Condition::Always && condition != new {
                    return Err(ParseError::Syntax);
                }
                condition = new;
            }
            Keyword::KeepTtl => {
                if matches!(expiry, ExpiryOption::Unit(..)) {
                    return Err(ParseError::Syntax);
                }
                expiry = ExpiryOption::Keep;
            }
            Keyword::Unit(unit) => {
                let conflicts = expiry == ExpiryOption::Keep
                    || matches!(expiry, ExpiryOption::Unit(other, _) if other != unit);
                if conflicts || index + 1 >= argv.len() {
                    return Err(ParseError::Syntax);
                }
                index += 1;
                expiry = ExpiryOption::Unit(unit, index);
            }
        }
        index += 1;
    }
    Ok((condition, expiry))
}

pub(super) const SUMMARY: &CStr = c"Sets multiple keys to multiple values, with an optional \
    shared expiration, atomically (the numkeys form of Redis 8.4 and Valkey 9.1).";

pub(super) const ARGS: &[Arg] = &[
    plain(c"numkeys", ArgKind::Integer),
    DATA,
    CONDITION,
    one_of(
        c"expiration",
        true,
        &[
            valued(c"seconds", ArgKind::Integer, c"EX"),
            valued(c"milliseconds", ArgKind::Integer, c"PX"),
            valued(c"unix-time-seconds", ArgKind::UnixTime, c"EXAT"),
            valued(c"unix-time-milliseconds", ArgKind::UnixTime, c"PXAT"),
            token(c"keepttl", c"KEEPTTL"),
        ],
    ),
];
