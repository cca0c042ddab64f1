//! What both syntaxes share: [`Request`], the errors, keywords, time checks, integers, docs parts.

use std::ffi::CStr;
use std::ops::Range;

pub(super) use crate::deadline::Expiry;
use crate::docs::{one_of, plain, token, Arg, ArgKind};

/// ACL categories on Redis 7.2+ (older: rules by name; on 7.0 `acl` checks MSET, which has them).
pub const ACL_CATEGORIES: &CStr = c"write string slow";
pub const ARITY: i32 = -4;

pub(super) const CONDITION: Arg = one_of(
    c"condition",
    true,
    &[token(c"nx", c"NX"), token(c"xx", c"XX")],
);

/// `key value [key value ...]`
pub const DATA: Arg = Arg {
    multiple: true,
    subargs: &[
        plain(c"key", ArgKind::Key),
        plain(c"value", ArgKind::String),
    ],
    ..plain(c"data", ArgKind::Block)
};

/// Why a call was refused before any write (`outcome::parse_error_text`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseError {
    WrongArity,
    /// A repeated, conflicting or unknown option.
    Syntax,
    NotAnInteger,
    InvalidExpireTime,
    /// NUMKEYS: numkeys is not an integer from 1 to 2^31-1.
    InvalidNumkeys,
    /// NUMKEYS: fewer key/value pairs than numkeys says.
    WrongPairCount,
    /// TTL: exactly the NUMKEYS form with options (`MSETEX 2 k v k v EX 60`), which TTL misreads.
    NumkeysShape,
    /// TTL: `KEEPTTL` where the time goes (it is the NUMKEYS form's).
    KeepTtl,
    /// TTL: not whole pairs, an option among them (`MSETEX 60 k v NX`): options go first.
    OptionsFirst,
}

/// Which keys must exist for the call to write: any (no NX/XX), none (`NX`) or all (`XX`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Condition {
    Always,
    NoneExist,
    AllExist,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ack {
    /// `+OK`: the TTL form without NX/XX, like MSET and SET.
    Ok,
    /// `:1` (`:0` when NX/XX stopped the call): NX/XX, and the NUMKEYS form.
    One,
}

/// A validated call: all the write step needs besides the key and value arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// argv indexes of the pairs (or of the keys only, where the filter moved the values away).
    pub pairs: Range<usize>,
    pub condition: Condition,
    pub expiry: Expiry,
    pub ack: Ack,
}

/// The smallest valid call of either form: `MSETEX time|numkeys key value`.
pub(super) const MIN_ARGC: usize = 4;

/// What `time` counts: `EX` (the TTL form's default), `PX`, `EXAT`, `PXAT`, in that order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TimeUnit {
    Seconds,
    Milliseconds,
    UnixSeconds,
    UnixMilliseconds,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Keyword {
    Condition(Condition),
    Unit(TimeUnit),
    KeepTtl,
}

impl Keyword {
    pub(super) fn parse(arg: &[u8]) -> Option<Keyword> {
        const KEYWORDS: [(&[u8], Keyword); 7] = [
            (b"NX", Keyword::Condition(Condition::NoneExist)),
            (b"XX", Keyword::Condition(Condition::AllExist)),
            (b"EX", Keyword::Unit(TimeUnit::Seconds)),
            (b"PX", Keyword::Unit(TimeUnit::Milliseconds)),
            (b"EXAT", Keyword::Unit(TimeUnit::UnixSeconds)),
            (b"PXAT", Keyword::Unit(TimeUnit::UnixMilliseconds)),
            (b"KEEPTTL", Keyword::KeepTtl),
        ];
        KEYWORDS
            .iter()
            .find(|(word, _)| word.eq_ignore_ascii_case(arg))
            .map(|(_, keyword)| *keyword)
    }
}

/// `time` as an [`Expiry`] by SET's range rules: zero, negative, or a deadline overflowing an i64
/// millisecond clock is an invalid expire time.
pub(super) fn expiry(unit: TimeUnit, time: i64, now_ms: i64) -> Result<Expiry, ParseError> {
    if time <= 0 {
        return Err(ParseError::InvalidExpireTime);
    }
    let expiry = match unit {
        TimeUnit::Seconds => time.checked_mul(1000).map(Expiry::In),
        TimeUnit::Milliseconds => Some(Expiry::In(time)),
        TimeUnit::UnixSeconds => time.checked_mul(1000).map(Expiry::At),
        TimeUnit::UnixMilliseconds => Some(Expiry::At(time)),
    };
    match expiry {
        Some(Expiry::In(ms)) if ms.checked_add(now_ms).is_some_and(|d| d > 0) => Ok(Expiry::In(ms)),
        Some(Expiry::At(ms)) => Ok(Expiry::At(ms)),
        _ => Err(ParseError::InvalidExpireTime),
    }
}

/// Whether [`parse_i64`] takes `bytes`, eight digits at a time (the write path asks it of every
/// value); inlined, the first byte rules out most other values without a call.
#[inline]
pub fn is_i64(bytes: &[u8]) -> bool {
    match bytes.first() {
        Some(b'1'..=b'9' | b'-') => is_i64_from_first_byte(bytes),
        Some(b'0') => bytes.len() == 1,
        _ => false,
    }
}

/// [`is_i64`] of a value whose first byte is a sign or a digit other than 0.
#[inline(never)]
fn is_i64_from_first_byte(bytes: &[u8]) -> bool {
    let digits = bytes.strip_prefix(b"-").unwrap_or(bytes);
    match digits.first() {
        // 18 digits never overflow an i64; longer ones need the range check.
        Some(b'1'..=b'9') if digits.len() <= 18 => all_digits(digits),
        Some(b'1'..=b'9') => parse_i64(bytes).is_some(),
        // "-", "-0..." and a sign before anything else.
        _ => false,
    }
}

fn all_digits(bytes: &[u8]) -> bool {
    // Each byte 0x30..=0x39: its high nibble is 3, and adding 6 leaves it 3 (0x3a.. become 0x4_;
    // no byte carries into the next once every high nibble is 3).
    const HIGH: u64 = 0xf0f0_f0f0_f0f0_f0f0;
    const THREES: u64 = 0x3030_3030_3030_3030;
    let digits_at = |at: usize| {
        let word = bytes
            .get(at..at + 8)
            .and_then(|chunk| <[u8; 8]>::try_from(chunk).ok());
        word.map(u64::from_le_bytes).is_some_and(|word| {
            word & HIGH == THREES && word.wrapping_add(0x0606_0606_0606_0606) & HIGH == THREES
        })
    };
    let Some(last) = bytes.len().checked_sub(8) else {
        return bytes.iter().all(u8::is_ascii_digit);
    };
    // Whole words, then the last eight bytes (which may overlap the word before).
    let mut at = 0;
    while at < last {
        if !digits_at(at) {
            return false;
        }
        at += 8;
    }
    digits_at(last)
}

/// Parses a base-10 i64 exactly as Redis's `string2ll` (which also decides which values Redis
/// stores as `int`): optional `-`, no `+`, spaces or leading zeros, at most 20 bytes.
pub fn parse_i64(bytes: &[u8]) -> Option<i64> {
    let digits = bytes.strip_prefix(b"-").unwrap_or(bytes);
    // Only "0" may start with 0: this rejects "", "-", "-0", "01", "+1" (which `parse` takes).
    let canonical = bytes == b"0" || matches!(digits.first(), Some(b'1'..=b'9'));
    if bytes.len() > 20 || !canonical {
        return None;
    }
    // One pass; 19 digits fit a u64 without overflow.
    let mut magnitude: u64 = 0;
    for digit in digits {
        let value = digit.wrapping_sub(b'0');
        if value > 9 {
            return None;
        }
        magnitude = magnitude.checked_mul(10)?.checked_add(u64::from(value))?;
    }
    if digits.len() < bytes.len() {
        0i64.checked_sub_unsigned(magnitude)
    } else {
        i64::try_from(magnitude).ok()
    }
}
