//! Argument parsing for `MSETEX seconds key value [key value ...]`.
//!
//! Pure functions over byte slices: no Redis types, no allocation, so the
//! whole grammar is unit- and property-tested without a server. The command
//! layer turns a [`ParseError`] into the Redis error text.

/// Why a call was refused. Each variant maps to one Redis error reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseError {
    /// `ERR wrong number of arguments for '<cmd>' command`
    WrongArity,
    /// `ERR value is not an integer or out of range`
    NotAnInteger,
    /// `ERR invalid expire time in '<cmd>' command`
    InvalidExpireTime,
}

/// A validated call: everything the write step needs besides the key and
/// value arguments themselves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// Absolute unix time in milliseconds at which every key expires.
    pub deadline_ms: i64,
    /// Index in argv of the first key; keys and values alternate from here.
    pub first_key: usize,
}

/// Index of `seconds` in argv (argv[0] is the command name).
const TIME_INDEX: usize = 1;
/// Index of the first key in argv.
const FIRST_KEY_INDEX: usize = 2;

/// Validates a whole call. `argv` includes the command name at index 0,
/// `now_ms` is the server's clock (unix milliseconds).
///
/// Checks run in the order the server's own commands use: arity first, then
/// the integer, then its range. Nothing about keys or values can be invalid:
/// both are arbitrary bytes.
pub fn parse(argv: &[&[u8]], now_ms: i64) -> Result<Request, ParseError> {
    // MSETEX seconds k v [k v ...]: at least 4 and an even count.
    if argv.len() < 4 || !argv.len().is_multiple_of(2) {
        return Err(ParseError::WrongArity);
    }
    let seconds = argv
        .get(TIME_INDEX)
        .and_then(|arg| parse_i64(arg))
        .ok_or(ParseError::NotAnInteger)?;
    let deadline_ms = deadline_from_seconds(seconds, now_ms)?;
    Ok(Request {
        deadline_ms,
        first_key: FIRST_KEY_INDEX,
    })
}

/// Turns a relative TTL in seconds into an absolute deadline, with the range
/// rules of `SET ... EX`: zero, negative, or a deadline that overflows a
/// signed 64-bit millisecond clock is an invalid expire time.
pub fn deadline_from_seconds(seconds: i64, now_ms: i64) -> Result<i64, ParseError> {
    if seconds <= 0 {
        return Err(ParseError::InvalidExpireTime);
    }
    seconds
        .checked_mul(1000)
        .and_then(|ms| ms.checked_add(now_ms))
        .filter(|deadline| *deadline > 0)
        .ok_or(ParseError::InvalidExpireTime)
}

/// Parses a base-10 signed 64-bit integer exactly as Redis's `string2ll`:
/// optional `-`, no `+`, no spaces, no leading zeros, at most 20 bytes.
/// Returns `None` for anything else, including overflow.
///
/// The same rule decides which values Redis stores with the compact `int`
/// encoding, so the command layer reuses it for that too.
pub fn parse_i64(bytes: &[u8]) -> Option<i64> {
    // 20 bytes hold "-9223372036854775808"; anything longer cannot fit.
    if bytes.is_empty() || bytes.len() > 20 {
        return None;
    }
    if bytes == b"0" {
        return Some(0);
    }
    let (negative, digits) = match bytes.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, bytes),
    };
    // The first digit must be 1-9: this rejects "", "-", "-0", "01", "+1".
    match digits.first() {
        Some(b'1'..=b'9') => {}
        _ => return None,
    }
    let mut magnitude: u64 = 0;
    for &byte in digits {
        if !byte.is_ascii_digit() {
            return None;
        }
        magnitude = magnitude
            .checked_mul(10)?
            .checked_add(u64::from(byte - b'0'))?;
    }
    if negative {
        // i64::MIN has no positive counterpart, so go through i128.
        i64::try_from(-i128::from(magnitude)).ok()
    } else {
        i64::try_from(magnitude).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const NOW: i64 = 1_700_000_000_000;

    fn args<'a>(items: &'a [&'a str]) -> Vec<&'a [u8]> {
        items.iter().map(|s| s.as_bytes()).collect()
    }

    #[test]
    fn accepts_the_card_form() {
        let argv = args(&["MSETEX", "60", "a", "1", "b", "2"]);
        assert_eq!(
            parse(&argv, NOW),
            Ok(Request {
                deadline_ms: NOW + 60_000,
                first_key: 2
            })
        );
    }

    #[test]
    fn arity_needs_at_least_one_pair_and_an_even_count() {
        for bad in [
            &["MSETEX"][..],
            &["MSETEX", "60"],
            &["MSETEX", "60", "a"],
            &["MSETEX", "60", "a", "1", "b"],
            &["MSETEX", "x", "a"],
        ] {
            assert_eq!(
                parse(&args(bad), NOW),
                Err(ParseError::WrongArity),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn arity_is_checked_before_the_integer() {
        assert_eq!(
            parse(&args(&["MSETEX", "abc", "k"]), NOW),
            Err(ParseError::WrongArity)
        );
    }

    #[test]
    fn seconds_must_be_a_redis_integer() {
        for bad in [
            "",
            " 1",
            "1 ",
            "+1",
            "1e3",
            "0x10",
            "1.5",
            "01",
            "-0",
            "abc",
            "--1",
            "9223372036854775808",
        ] {
            assert_eq!(
                parse(&args(&["MSETEX", bad, "k", "v"]), NOW),
                Err(ParseError::NotAnInteger),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn seconds_must_be_positive_and_not_overflow() {
        for bad in [
            "0",
            "-1",
            "-9223372036854775808",
            "9223372036854775807",
            "9223372036854776",
        ] {
            assert_eq!(
                parse(&args(&["MSETEX", bad, "k", "v"]), NOW),
                Err(ParseError::InvalidExpireTime),
                "{bad:?}"
            );
        }
        // The largest TTL that still fits once `now` is added.
        let max = (i64::MAX - NOW) / 1000;
        let ok = max.to_string();
        assert!(parse(&args(&["MSETEX", &ok, "k", "v"]), NOW).is_ok());
        let too_big = (max + 1).to_string();
        assert_eq!(
            parse(&args(&["MSETEX", &too_big, "k", "v"]), NOW),
            Err(ParseError::InvalidExpireTime)
        );
    }

    #[test]
    fn keys_and_values_are_arbitrary_bytes() {
        let argv: Vec<&[u8]> = vec![b"MSETEX", b"1", b"\0\xff", b"", b"", b"\r\n"];
        assert!(parse(&argv, NOW).is_ok());
    }

    #[test]
    fn parse_i64_edges() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-1"), Some(-1));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_i64(b"-9223372036854775809"), None);
        assert_eq!(parse_i64(b"18446744073709551616"), None);
        assert_eq!(parse_i64(b"00"), None);
        assert_eq!(parse_i64(b"-"), None);
    }

    /// The reference model: a Redis integer is exactly a string that Rust
    /// parses as i64 and that prints back byte for byte (canonical form).
    fn model_i64(bytes: &[u8]) -> Option<i64> {
        let text = std::str::from_utf8(bytes).ok()?;
        let value: i64 = text.parse().ok()?;
        (value.to_string() == text).then_some(value)
    }

    /// Arguments that mix random bytes, integer-looking text and real integers.
    fn arg_strategy() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..24),
            "[-+ 0-9]{0,22}".prop_map(String::into_bytes),
            any::<i64>().prop_map(|n| n.to_string().into_bytes()),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        #[test]
        fn parse_i64_agrees_with_model(bytes in arg_strategy()) {
            prop_assert_eq!(parse_i64(&bytes), model_i64(&bytes));
        }

        #[test]
        fn parse_i64_round_trips(n in any::<i64>()) {
            prop_assert_eq!(parse_i64(n.to_string().as_bytes()), Some(n));
        }

        #[test]
        fn parse_never_panics_and_agrees_with_model(
            argv in proptest::collection::vec(arg_strategy(), 0..9),
            now in 0i64..=i64::MAX,
        ) {
            let mut full: Vec<&[u8]> = vec![b"MSETEX"];
            full.extend(argv.iter().map(Vec::as_slice));
            let expected = if full.len() < 4 || !full.len().is_multiple_of(2) {
                Err(ParseError::WrongArity)
            } else {
                match model_i64(full[1]) {
                    None => Err(ParseError::NotAnInteger),
                    Some(s) if s <= 0 => Err(ParseError::InvalidExpireTime),
                    Some(s) => match i128::from(s) * 1000 + i128::from(now) {
                        d if d > i128::from(i64::MAX) => Err(ParseError::InvalidExpireTime),
                        d => Ok(Request { deadline_ms: d as i64, first_key: 2 }),
                    },
                }
            };
            prop_assert_eq!(parse(&full, now), expected);
        }
    }
}
