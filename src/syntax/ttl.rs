//! `SYNTAX TTL`, the default: `MSETEX [NX | XX] [EX | PX | EXAT | PXAT] time key value ...`.

use std::ffi::CStr;

use super::numkeys;
use super::options::{
    expiry, parse_i64, Ack, Condition, Keyword, ParseError, Request, TimeUnit, MIN_ARGC,
};
use super::options::{CONDITION, DATA};
use crate::docs::{one_of, plain, token, Arg, ArgKind};

/// Options (at most one of each group, any order), then time, then at least one whole pair.
/// Checks in order: the NUMKEYS shape, arity, options, arity again, the integer, its range.
pub(super) fn parse<A: AsRef<[u8]>>(argv: &[A], now_ms: i64) -> Result<Request, ParseError> {
    if has_numkeys_shape(argv) {
        return Err(ParseError::NumkeysShape);
    }
    if argv.len() < MIN_ARGC {
        return Err(ParseError::WrongArity);
    }
    // The options end at the first argument that is none (KEEPTTL is none here).
    let is_option = |arg: &&A| {
        let keyword = Keyword::parse(arg.as_ref());
        matches!(keyword, Some(Keyword::Condition(_) | Keyword::Unit(_)))
    };
    let count = argv.iter().skip(1).take_while(is_option).count();
    let (condition, unit) = read_options(argv.get(1..1 + count).unwrap_or_default())?;
    let time = argv.get(1 + count).map(AsRef::as_ref);
    let first_key = 2 + count;
    // KEEPTTL is the numkeys form's: where the time goes, say so.
    if time.is_some_and(|time| Keyword::parse(time) == Some(Keyword::KeepTtl)) {
        return Err(ParseError::KeepTtl);
    }
    let pairs = argv.len().saturating_sub(first_key);
    let Some(time) = time.filter(|_| pairs >= 2 && pairs.is_multiple_of(2)) else {
        // An option after the time keeps the pairs from being whole: say where options go.
        let option_after = argv
            .iter()
            .skip(first_key)
            .any(|arg| Keyword::parse(arg.as_ref()).is_some());
        return Err(if option_after {
            ParseError::OptionsFirst
        } else {
            ParseError::WrongArity
        });
    };
    let time = parse_i64(time).ok_or(ParseError::NotAnInteger)?;
    Ok(Request {
        pairs: first_key..argv.len(),
        condition,
        expiry: expiry(unit, time, now_ms)?,
        ack: if condition == Condition::Always {
            Ack::Ok
        } else {
            Ack::One
        },
    })
}

/// At most one condition and one unit; a repeated group or a non-option is a syntax error.
fn read_options<A: AsRef<[u8]>>(options: &[A]) -> Result<(Condition, TimeUnit), ParseError> {
    let (mut condition, mut unit) = (None, None);
    for option in options {
        let slot_taken = match Keyword::parse(option.as_ref()) {
            Some(Keyword::Condition(c)) => condition.replace(c).is_some(),
            Some(Keyword::Unit(u)) => unit.replace(u).is_some(),
            Some(Keyword::KeepTtl) | None => true,
        };
        if slot_taken {
            return Err(ParseError::Syntax);
        }
    }
    Ok((
        condition.unwrap_or(Condition::Always),
        unit.unwrap_or(TimeUnit::Seconds),
    ))
}

/// Whether the call reads as the NUMKEYS form *with at least one option*, as typed Redis 8.4+
/// clients send (`MSETEX 2 k v k v EX 60`): the TTL form would store the options as keys.
fn has_numkeys_shape<A: AsRef<[u8]>>(argv: &[A]) -> bool {
    numkeys::pairs(argv)
        .is_ok_and(|pairs| pairs.end < argv.len() && numkeys::options(argv, pairs.end).is_ok())
}

pub(super) const SUMMARY: &CStr =
    c"Sets multiple keys to multiple values with one time to live, atomically.";

/// `[NX | XX] [EX | PX | EXAT | PXAT] time key value [key value ...]`
pub(super) const ARGS: &[Arg] = &[
    CONDITION,
    one_of(
        c"unit",
        true,
        &[
            token(c"ex", c"EX"),
            token(c"px", c"PX"),
            token(c"exat", c"EXAT"),
            token(c"pxat", c"PXAT"),
        ],
    ),
    plain(c"time", ArgKind::Integer),
    DATA,
];
