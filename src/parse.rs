//! Argument parsing for
//!
//! ```text
//! MSETEX [NX | XX] [EX | PX | EXAT | PXAT] time key value [key value ...]
//! ```
//!
//! Pure functions over byte slices: no Redis types, no allocation, so the
//! whole grammar is unit- and property-tested without a server. The command
//! layer turns a [`ParseError`] into the Redis error text.
//!
//! Options come first, like ZADD's: `time` must be an integer, so a keyword
//! in its place is never ambiguous, and `MSETEX seconds key value ...` (the
//! original form) keeps its meaning.

/// Why a call was refused. Each variant maps to one Redis error reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseError {
    /// `ERR wrong number of arguments for '<cmd>' command`
    WrongArity,
    /// `ERR syntax error` (a repeated or conflicting option)
    Syntax,
    /// `ERR value is not an integer or out of range`
    NotAnInteger,
    /// `ERR invalid expire time in '<cmd>' command`
    InvalidExpireTime,
}

/// Which keys must exist for the call to write anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Condition {
    /// No option: always write, reply `+OK`.
    Always,
    /// `NX`: write only if none of the keys exists, reply 1 or 0.
    NoneExist,
    /// `XX`: write only if every key exists, reply 1 or 0.
    AllExist,
}

/// What `time` counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    /// `EX` (the default): seconds from now.
    Seconds,
    /// `PX`: milliseconds from now.
    Milliseconds,
    /// `EXAT`: a unix time in seconds.
    UnixSeconds,
    /// `PXAT`: a unix time in milliseconds.
    UnixMilliseconds,
}

/// Where things are in a call whose shape (options, arity) is valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub condition: Condition,
    pub unit: TimeUnit,
    /// Index in argv of `time`.
    pub time_index: usize,
    /// Index in argv of the first key; keys and values alternate from here
    /// to the end.
    pub first_key: usize,
}

impl Layout {
    /// argv indexes of every key, in order.
    pub fn key_indexes(&self, argc: usize) -> impl Iterator<Item = usize> {
        (self.first_key..argc).step_by(2)
    }
}

/// A validated call: everything the write step needs besides the key and
/// value arguments themselves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// Absolute unix time in milliseconds at which every key expires (it
    /// may already be past with EXAT or PXAT).
    pub deadline_ms: i64,
    pub condition: Condition,
    /// Index in argv of the first key; keys and values alternate from here.
    pub first_key: usize,
}

/// The smallest valid call: `MSETEX time key value`.
const MIN_ARGC: usize = 4;

/// Validates a whole call. `argv` (any byte strings: the module passes its
/// argument views, the tests byte slices) includes the command name at index 0,
/// `now_ms` is the server's clock (unix milliseconds).
///
/// Checks run in this order: arity, options, arity again once the options
/// are known, the integer, its range. Keys and values cannot be invalid:
/// both are arbitrary bytes.
pub fn parse<A: AsRef<[u8]>>(argv: &[A], now_ms: i64) -> Result<Request, ParseError> {
    let layout = parse_layout(argv)?;
    let time = argv
        .get(layout.time_index)
        .and_then(|arg| parse_i64(arg.as_ref()))
        .ok_or(ParseError::NotAnInteger)?;
    Ok(Request {
        deadline_ms: deadline(layout.unit, time, now_ms)?,
        condition: layout.condition,
        first_key: layout.first_key,
    })
}

/// Checks the options and the arity only, which is all the server needs to
/// learn where the keys are (cluster slots, ACLs, COMMAND GETKEYS).
pub fn parse_layout<A: AsRef<[u8]>>(argv: &[A]) -> Result<Layout, ParseError> {
    if argv.len() < MIN_ARGC {
        return Err(ParseError::WrongArity);
    }
    let mut condition = None;
    let mut unit = None;
    let mut index = 1;
    while let Some(keyword) = argv.get(index).and_then(|arg| Keyword::parse(arg.as_ref())) {
        // At most one of each group: a second one repeats or contradicts.
        let slot_taken = match keyword {
            Keyword::Condition(c) => condition.replace(c).is_some(),
            Keyword::Unit(u) => unit.replace(u).is_some(),
        };
        if slot_taken {
            return Err(ParseError::Syntax);
        }
        index += 1;
    }
    // What is left: time, then at least one key/value pair.
    let rest = argv.len() - index;
    if rest < 3 || !(rest - 1).is_multiple_of(2) {
        return Err(ParseError::WrongArity);
    }
    Ok(Layout {
        condition: condition.unwrap_or(Condition::Always),
        unit: unit.unwrap_or(TimeUnit::Seconds),
        time_index: index,
        first_key: index + 1,
    })
}

/// One option keyword.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keyword {
    Condition(Condition),
    Unit(TimeUnit),
}

impl Keyword {
    /// Recognises a keyword, ignoring ASCII case.
    fn parse(arg: &[u8]) -> Option<Keyword> {
        const KEYWORDS: [(&[u8], Keyword); 6] = [
            (b"NX", Keyword::Condition(Condition::NoneExist)),
            (b"XX", Keyword::Condition(Condition::AllExist)),
            (b"EX", Keyword::Unit(TimeUnit::Seconds)),
            (b"PX", Keyword::Unit(TimeUnit::Milliseconds)),
            (b"EXAT", Keyword::Unit(TimeUnit::UnixSeconds)),
            (b"PXAT", Keyword::Unit(TimeUnit::UnixMilliseconds)),
        ];
        KEYWORDS
            .iter()
            .find(|(word, _)| word.eq_ignore_ascii_case(arg))
            .map(|(_, keyword)| *keyword)
    }
}

/// Turns `time` into an absolute deadline with the range rules of
/// `SET ... EX/PX/EXAT/PXAT`: zero, negative, or a deadline that overflows
/// a signed 64-bit millisecond clock is an invalid expire time.
pub fn deadline(unit: TimeUnit, time: i64, now_ms: i64) -> Result<i64, ParseError> {
    if time <= 0 {
        return Err(ParseError::InvalidExpireTime);
    }
    let deadline = match unit {
        TimeUnit::Seconds => time.checked_mul(1000).and_then(|ms| ms.checked_add(now_ms)),
        TimeUnit::Milliseconds => time.checked_add(now_ms),
        TimeUnit::UnixSeconds => time.checked_mul(1000),
        TimeUnit::UnixMilliseconds => Some(time),
    };
    deadline
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

    fn parse_str(items: &[&str]) -> Result<Request, ParseError> {
        parse(&args(items), NOW)
    }

    fn request(deadline_ms: i64, condition: Condition, first_key: usize) -> Request {
        Request {
            deadline_ms,
            condition,
            first_key,
        }
    }

    #[test]
    fn accepts_the_original_form() {
        assert_eq!(
            parse_str(&["MSETEX", "60", "a", "1", "b", "2"]),
            Ok(request(NOW + 60_000, Condition::Always, 2))
        );
    }

    #[test]
    fn every_option_and_combination() {
        let cases: [(&[&str], i64, Condition); 9] = [
            (&["EX", "60"], NOW + 60_000, Condition::Always),
            (&["PX", "1500"], NOW + 1500, Condition::Always),
            (
                &["EXAT", "1800000000"],
                1_800_000_000_000,
                Condition::Always,
            ),
            (
                &["PXAT", "1800000000123"],
                1_800_000_000_123,
                Condition::Always,
            ),
            (&["NX", "60"], NOW + 60_000, Condition::NoneExist),
            (&["XX", "60"], NOW + 60_000, Condition::AllExist),
            (&["nx", "px", "10"], NOW + 10, Condition::NoneExist),
            (&["PxAt", "Xx", "5"], 5, Condition::AllExist),
            (&["exat", "NX", "2"], 2000, Condition::NoneExist),
        ];
        for (options, deadline, condition) in cases {
            let mut argv = vec!["MSETEX"];
            argv.extend_from_slice(options);
            argv.extend(["k", "v"]);
            let first_key = options.len() + 1;
            assert_eq!(
                parse_str(&argv),
                Ok(request(deadline, condition, first_key)),
                "{argv:?}"
            );
        }
    }

    #[test]
    fn repeated_or_conflicting_options_are_a_syntax_error() {
        for options in [
            &["NX", "NX"][..],
            &["NX", "XX"],
            &["XX", "nx"],
            &["EX", "EX"],
            &["EX", "PX"],
            &["PXAT", "EXAT"],
            &["NX", "EX", "XX"],
            &["EX", "NX", "px"],
            &["PX", "EXAT"],
        ] {
            let mut argv = vec!["MSETEX"];
            argv.extend_from_slice(options);
            argv.extend(["10", "k", "v"]);
            assert_eq!(parse_str(&argv), Err(ParseError::Syntax), "{argv:?}");
        }
    }

    #[test]
    fn arity_needs_a_time_and_whole_pairs_after_the_options() {
        for bad in [
            &["MSETEX"][..],
            &["MSETEX", "60"],
            &["MSETEX", "60", "a"],
            &["MSETEX", "60", "a", "1", "b"],
            &["MSETEX", "x", "a"],
            &["MSETEX", "NX", "60", "a"],
            &["MSETEX", "NX", "PX", "60", "a", "1", "b"],
            &["MSETEX", "NX", "EX", "k", "v"],
            &["MSETEX", "NX", "PX", "10"],
        ] {
            assert_eq!(parse_str(bad), Err(ParseError::WrongArity), "{bad:?}");
        }
    }

    #[test]
    fn arity_is_checked_before_the_integer() {
        assert_eq!(
            parse_str(&["MSETEX", "abc", "k"]),
            Err(ParseError::WrongArity)
        );
        assert_eq!(
            parse_str(&["MSETEX", "abc", "k", "v", "k2"]),
            Err(ParseError::WrongArity)
        );
    }

    #[test]
    fn time_must_be_a_redis_integer() {
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
            "KEEPTTL",
            "EXA",
        ] {
            for unit in [&[][..], &["PX"], &["EXAT"]] {
                let mut argv = vec!["MSETEX"];
                argv.extend_from_slice(unit);
                argv.extend([bad, "k", "v"]);
                assert_eq!(parse_str(&argv), Err(ParseError::NotAnInteger), "{argv:?}");
            }
        }
    }

    #[test]
    fn time_must_be_positive_and_not_overflow() {
        let cases: [(&str, &str); 10] = [
            ("EX", "0"),
            ("EX", "-1"),
            ("EX", "9223372036854775807"),
            ("EX", "9223372036854775"), // fits once multiplied, not once now is added
            ("PX", "0"),
            ("PX", "-5"),
            ("PX", "9223372036854775807"),
            ("EXAT", "0"),
            ("EXAT", "9223372036854776"),
            ("PXAT", "-1"),
        ];
        for (unit, time) in cases {
            assert_eq!(
                parse_str(&["MSETEX", unit, time, "k", "v"]),
                Err(ParseError::InvalidExpireTime),
                "{unit} {time}"
            );
        }
        // The largest deadlines that still fit.
        let max = i64::MAX.to_string();
        assert!(parse_str(&["MSETEX", "PXAT", &max, "k", "v"]).is_ok());
        let max_seconds = (i64::MAX / 1000).to_string();
        assert!(parse_str(&["MSETEX", "EXAT", &max_seconds, "k", "v"]).is_ok());
        let max_ex = ((i64::MAX - NOW) / 1000).to_string();
        assert!(parse_str(&["MSETEX", &max_ex, "k", "v"]).is_ok());
        let too_big = ((i64::MAX - NOW) / 1000 + 1).to_string();
        assert_eq!(
            parse_str(&["MSETEX", &too_big, "k", "v"]),
            Err(ParseError::InvalidExpireTime)
        );
    }

    #[test]
    fn absolute_deadlines_may_be_in_the_past() {
        assert_eq!(
            parse_str(&["MSETEX", "PXAT", "1", "k", "v"]),
            Ok(request(1, Condition::Always, 3))
        );
    }

    #[test]
    fn keys_and_values_are_arbitrary_bytes() {
        let argv: Vec<&[u8]> = vec![b"MSETEX", b"1", b"\0\xff", b"", b"NX", b"\r\n"];
        assert_eq!(parse(&argv, NOW).map(|r| r.first_key), Ok(2));
    }

    #[test]
    fn key_indexes_follow_the_options() {
        let argv = args(&["MSETEX", "NX", "PX", "10", "a", "1", "b", "2", "c", "3"]);
        let layout = parse_layout(&argv).unwrap();
        assert_eq!(
            layout.key_indexes(argv.len()).collect::<Vec<_>>(),
            [4, 6, 8]
        );
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

    /// The reference model of a Redis integer: a string that Rust parses as
    /// i64 and that prints back byte for byte (canonical form).
    fn model_i64(bytes: &[u8]) -> Option<i64> {
        let text = std::str::from_utf8(bytes).ok()?;
        let value: i64 = text.parse().ok()?;
        (value.to_string() == text).then_some(value)
    }

    /// The reference model of the grammar, written from the issue's text
    /// with strings and 128-bit arithmetic rather than from parse().
    fn model(argv: &[Vec<u8>], now: i64) -> Result<Request, ParseError> {
        if argv.len() < 4 {
            return Err(ParseError::WrongArity);
        }
        let upper: Vec<String> = argv
            .iter()
            .map(|a| String::from_utf8_lossy(a).to_ascii_uppercase())
            .collect();
        let is_condition = |w: &str| w == "NX" || w == "XX";
        let is_unit = |w: &str| ["EX", "PX", "EXAT", "PXAT"].contains(&w);
        let options: Vec<&str> = upper[1..]
            .iter()
            .map(String::as_str)
            .take_while(|w| is_condition(w) || is_unit(w))
            .collect();
        let conditions: Vec<&&str> = options.iter().filter(|w| is_condition(w)).collect();
        let units: Vec<&&str> = options.iter().filter(|w| is_unit(w)).collect();
        if conditions.len() > 1 || units.len() > 1 {
            return Err(ParseError::Syntax);
        }
        let time_index = 1 + options.len();
        let pairs = argv.len() as i64 - time_index as i64 - 1;
        if pairs < 2 || pairs % 2 != 0 {
            return Err(ParseError::WrongArity);
        }
        let time = model_i64(&argv[time_index]).ok_or(ParseError::NotAnInteger)?;
        if time <= 0 {
            return Err(ParseError::InvalidExpireTime);
        }
        let (time, now) = (i128::from(time), i128::from(now));
        let deadline = match units.first().map(|w| **w) {
            None | Some("EX") => time * 1000 + now,
            Some("PX") => time + now,
            Some("EXAT") => time * 1000,
            _ => time,
        };
        let deadline = i64::try_from(deadline).map_err(|_| ParseError::InvalidExpireTime)?;
        let condition = match conditions.first().map(|w| **w) {
            Some("NX") => Condition::NoneExist,
            Some("XX") => Condition::AllExist,
            _ => Condition::Always,
        };
        Ok(request(deadline, condition, time_index + 1))
    }

    /// Arguments that mix random bytes, integer-looking text, real
    /// integers and option keywords in any case.
    fn arg_strategy() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..24),
            "[-+ 0-9]{0,22}".prop_map(String::into_bytes),
            any::<i64>().prop_map(|n| n.to_string().into_bytes()),
            (1i64..=4_000_000_000_000).prop_map(|n| n.to_string().into_bytes()),
            "(?i)(nx|xx|ex|px|exat|pxat)".prop_map(String::into_bytes),
        ]
    }

    /// Cases per property: 4096 in the test suite, more under `make fuzz`.
    fn cases() -> u32 {
        std::env::var("MSETEX_FUZZ_CASES")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(4096)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(cases()))]

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
            tail in proptest::collection::vec(arg_strategy(), 0..10),
            now in 0i64..=i64::MAX,
        ) {
            let mut argv = vec![b"MSETEX".to_vec()];
            argv.extend(tail);
            let views: Vec<&[u8]> = argv.iter().map(Vec::as_slice).collect();
            prop_assert_eq!(parse(&views, now), model(&argv, now));
        }

        #[test]
        fn option_order_does_not_matter(
            condition in prop::sample::select(vec!["", "NX", "XX"]),
            unit in prop::sample::select(vec!["", "EX", "PX", "EXAT", "PXAT"]),
            time in 1i64..1_000_000,
        ) {
            let time = time.to_string();
            let build = |first: &str, second: &str| {
                let mut argv: Vec<&str> = vec!["MSETEX"];
                argv.extend([first, second].into_iter().filter(|w| !w.is_empty()));
                argv.extend([time.as_str(), "k", "v"]);
                parse_str(&argv)
            };
            prop_assert_eq!(build(condition, unit), build(unit, condition));
        }

        #[test]
        fn original_form_is_unchanged(seconds in 1i64..=1_000_000_000, pairs in 1usize..5) {
            let seconds = seconds.to_string();
            let mut argv = vec!["MSETEX", seconds.as_str()];
            for _ in 0..pairs {
                argv.extend(["k", "v"]);
            }
            let expected = NOW + seconds.parse::<i64>().unwrap() * 1000;
            prop_assert_eq!(parse_str(&argv), Ok(request(expected, Condition::Always, 2)));
        }
    }
}
