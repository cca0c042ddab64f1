//! `<name>.apply`, what REPLICATE MSETEX sends for either syntax: its words, grammar and docs.

use crate::deadline::{Expiry, Resolved};
use crate::docs::{one_of, pairs_from_2, plain, token, Arg, ArgKind, Docs};
use crate::ffi::Word;
use crate::syntax::{parse_i64, Ack, Condition, ParseError, Request, ARITY, DATA};

const KEEP: &[u8] = b"KEEPTTL";
const PERSIST: &[u8] = b"PERSIST";

/// The first argument of `<name>.apply` for `expiry`: `<unix ms>`, `KEEPTTL` or `PERSIST`.
pub fn words(expiry: Resolved) -> Vec<Word> {
    vec![match expiry {
        Resolved::At(at) => Word::Number(at),
        Resolved::Keep => Word::Text(KEEP),
        Resolved::Persist => Word::Text(PERSIST),
    }]
}

/// `<name>.apply <deadline | KEEPTTL | PERSIST> key value [key value ...]`: a call already decided
/// (no NX/XX).
pub fn parse<A: AsRef<[u8]>>(argv: &[A]) -> Result<Request, ParseError> {
    if argv.len() < 4 || !argv.len().is_multiple_of(2) {
        return Err(ParseError::WrongArity);
    }
    let expiry = match argv.get(1).map(AsRef::as_ref) {
        Some(word) if word.eq_ignore_ascii_case(KEEP) => Expiry::Keep,
        Some(word) if word.eq_ignore_ascii_case(PERSIST) => Expiry::Persist,
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

/// The docs of `<name>.apply`: keys exactly at 2, 4, ... (no getkeys callback).
pub fn docs() -> Docs {
    Docs {
        summary: c"Applies an MSETEX call as REPLICATE MSETEX replicated it (replicas, the AOF, \
                   slot migration); not for clients.",
        complexity: c"O(N) where N is the number of keys to set.",
        since: c"2.1.0",
        args: ARGS,
        keys: pairs_from_2(false, false, c"Keys follow the time."),
        arity: ARITY,
        tips: None,
    }
}

const ARGS: &[Arg] = &[
    one_of(
        c"expiration",
        false,
        &[
            plain(c"unix-time-milliseconds", ArgKind::UnixTime),
            token(c"keepttl", c"KEEPTTL"),
            token(c"persist", c"PERSIST"),
        ],
    ),
    DATA,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apply_takes_a_deadline_keepttl_or_persist() {
        let apply = |items: &[&str]| parse(items);
        let request = |pairs, expiry| Request {
            pairs,
            condition: Condition::Always,
            expiry,
            ack: Ack::Ok,
        };
        let at = |deadline| Ok(request(2..6, Expiry::At(deadline)));
        assert_eq!(
            apply(&["m.apply", "1800000000123", "a", "1", "b", "2"]),
            at(1_800_000_000_123)
        );
        for (word, expiry) in [("KEEPTTL", Expiry::Keep), ("persist", Expiry::Persist)] {
            assert_eq!(
                apply(&["m.apply", word, "a", "1"]),
                Ok(request(2..4, expiry))
            );
        }
        assert_eq!(
            apply(&["m.apply", "0", "a", "1"]),
            Err(ParseError::InvalidExpireTime)
        );
        assert_eq!(
            apply(&["m.apply", "x", "a", "1"]),
            Err(ParseError::NotAnInteger)
        );
        for short in [
            &["m.apply"][..],
            &["m.apply", "5"],
            &["m.apply", "5", "a"],
            &["m.apply", "5", "a", "1", "b"],
        ] {
            assert_eq!(apply(short), Err(ParseError::WrongArity), "{short:?}");
        }
    }
}
