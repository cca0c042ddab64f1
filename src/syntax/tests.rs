//! The grammar of both forms: hand-picked cases (the NUMKEYS ones are what
//! the built-in MSETEX of Redis 8.6.3 answered), then properties against
//! reference models written with strings and 128-bit arithmetic.

use super::*;
use crate::deadline::Expiry;
use proptest::prelude::*;
use std::ops::Range;

const NOW: i64 = 1_700_000_000_000;

fn ttl(items: &[&str]) -> Result<Request, ParseError> {
    Syntax::Ttl.parse(items, NOW)
}

fn numkeys(items: &[&str]) -> Result<Request, ParseError> {
    Syntax::Numkeys.parse(items, NOW)
}

fn request(pairs: Range<usize>, condition: Condition, expiry: Expiry, ack: Ack) -> Request {
    Request {
        pairs,
        condition,
        expiry,
        ack,
    }
}

// --- SYNTAX TTL ------------------------------------------------------------

#[test]
fn ttl_accepts_the_original_form() {
    assert_eq!(
        ttl(&["MSETEX", "60", "a", "1", "b", "2"]),
        Ok(request(
            2..6,
            Condition::Always,
            Expiry::In(60_000),
            Ack::Ok
        ))
    );
}

#[test]
fn ttl_every_option_and_combination() {
    let cases: [(&[&str], Expiry, Condition); 9] = [
        (&["EX", "60"], Expiry::In(60_000), Condition::Always),
        (&["PX", "1500"], Expiry::In(1500), Condition::Always),
        (
            &["EXAT", "1800000000"],
            Expiry::At(1_800_000_000_000),
            Condition::Always,
        ),
        (
            &["PXAT", "1800000000123"],
            Expiry::At(1_800_000_000_123),
            Condition::Always,
        ),
        (&["NX", "60"], Expiry::In(60_000), Condition::NoneExist),
        (&["XX", "60"], Expiry::In(60_000), Condition::AllExist),
        (&["nx", "px", "10"], Expiry::In(10), Condition::NoneExist),
        (&["PxAt", "Xx", "5"], Expiry::At(5), Condition::AllExist),
        (&["exat", "NX", "2"], Expiry::At(2000), Condition::NoneExist),
    ];
    for (options, expiry, condition) in cases {
        let mut argv = vec!["MSETEX"];
        argv.extend_from_slice(options);
        argv.extend(["k", "v"]);
        let first_key = options.len() + 1;
        let ack = if condition == Condition::Always {
            Ack::Ok
        } else {
            Ack::One
        };
        assert_eq!(
            ttl(&argv),
            Ok(request(first_key..first_key + 2, condition, expiry, ack)),
            "{argv:?}"
        );
    }
}

#[test]
fn ttl_repeated_or_conflicting_options_are_a_syntax_error() {
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
        assert_eq!(ttl(&argv), Err(ParseError::Syntax), "{argv:?}");
    }
}

#[test]
fn ttl_arity_needs_a_time_and_whole_pairs_after_the_options() {
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
        &["MSETEX", "abc", "k"],
        &["MSETEX", "abc", "k", "v", "k2"],
    ] {
        assert_eq!(ttl(bad), Err(ParseError::WrongArity), "{bad:?}");
    }
    // Where an option stands among the pairs, or KEEPTTL where the time
    // goes, the error says what to do.
    for misplaced in [
        &["MSETEX", "60", "a", "1", "NX"][..],
        &["MSETEX", "60", "a", "1", "b", "2", "EX"],
        &["MSETEX", "NX", "EX", "60", "k", "v", "PX"],
    ] {
        assert_eq!(
            ttl(misplaced),
            Err(ParseError::OptionsFirst),
            "{misplaced:?}"
        );
    }
    assert_eq!(
        ttl(&["MSETEX", "KEEPTTL", "60", "a", "1"]),
        Err(ParseError::KeepTtl)
    );
    assert_eq!(
        ttl(&["MSETEX", "NX", "keepttl", "a", "1"]),
        Err(ParseError::KeepTtl)
    );
    // A value may be called NX.
    assert!(ttl(&["MSETEX", "60", "a", "NX"]).is_ok());
}

#[test]
fn ttl_time_must_be_a_redis_integer() {
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
        "EXA",
    ] {
        for unit in [&[][..], &["PX"], &["EXAT"]] {
            let mut argv = vec!["MSETEX"];
            argv.extend_from_slice(unit);
            argv.extend([bad, "k", "v"]);
            assert_eq!(ttl(&argv), Err(ParseError::NotAnInteger), "{argv:?}");
        }
    }
}

#[test]
fn ttl_time_must_be_positive_and_not_overflow() {
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
            ttl(&["MSETEX", unit, time, "k", "v"]),
            Err(ParseError::InvalidExpireTime),
            "{unit} {time}"
        );
    }
    let max = i64::MAX.to_string();
    assert!(ttl(&["MSETEX", "PXAT", &max, "k", "v"]).is_ok());
    let max_seconds = (i64::MAX / 1000).to_string();
    assert!(ttl(&["MSETEX", "EXAT", &max_seconds, "k", "v"]).is_ok());
    let max_ex = ((i64::MAX - NOW) / 1000).to_string();
    assert!(ttl(&["MSETEX", &max_ex, "k", "v"]).is_ok());
    let too_big = ((i64::MAX - NOW) / 1000 + 1).to_string();
    assert_eq!(
        ttl(&["MSETEX", &too_big, "k", "v"]),
        Err(ParseError::InvalidExpireTime)
    );
}

#[test]
fn ttl_absolute_deadlines_may_be_in_the_past() {
    assert_eq!(
        ttl(&["MSETEX", "PXAT", "1", "k", "v"]),
        Ok(request(3..5, Condition::Always, Expiry::At(1), Ack::Ok))
    );
}

#[test]
fn ttl_keys_and_values_are_arbitrary_bytes() {
    let argv: Vec<&[u8]> = vec![b"MSETEX", b"1", b"\0\xff", b"", b"NX", b"\r\n"];
    assert_eq!(Syntax::Ttl.parse(&argv, NOW).map(|r| r.pairs), Ok(2..6));
}

#[test]
fn ttl_refuses_what_a_numkeys_client_sends() {
    // redis-py 8.1: r.msetex({"session:1": "data", "csrf:1": "tok"}, ex=1800)
    for call in [
        &[
            "MSETEX",
            "2",
            "session:1",
            "data",
            "csrf:1",
            "tok",
            "EX",
            "1800",
        ][..],
        &["MSETEX", "1", "k", "v", "px", "5000"],
        &["MSETEX", "1", "k", "v", "EXAT", "1800000000"],
        &["MSETEX", "1", "k", "v", "PXAT", "abc"],
        &["MSETEX", "2", "a", "1", "b", "2", "XX", "KEEPTTL"],
        &["MSETEX", "2", "a", "1", "b", "2", "NX", "EX", "60"],
        &["MSETEX", "1", "k", "v", "NX"],
        &["MSETEX", "1", "k", "v", "KEEPTTL"],
    ] {
        assert_eq!(ttl(call), Err(ParseError::NumkeysShape), "{call:?}");
    }
}

#[test]
fn ttl_keeps_reading_what_is_not_the_numkeys_shape() {
    // No option after the pairs: the shapes cannot be told apart, and the
    // TTL form reads its own (documented).
    assert_eq!(
        ttl(&["MSETEX", "2", "a", "1", "b", "2"]).map(|r| r.expiry),
        Ok(Expiry::In(2000))
    );
    for call in [
        // A key named like an option, not followed by a valid option list.
        &["MSETEX", "1", "a", "1", "NX", "2"][..],
        &["MSETEX", "60", "EX", "1", "PX", "2"],
        &["MSETEX", "1", "a", "1", "b", "2"],
        // Options first: never a numkeys.
        &["MSETEX", "NX", "PX", "10", "k", "v"],
    ] {
        assert!(ttl(call).is_ok(), "{call:?}");
    }
}

#[test]
fn ttl_pairs_follow_the_options() {
    let argv = ["MSETEX", "NX", "PX", "10", "a", "1", "b", "2", "c", "3"];
    let request = ttl(&argv).unwrap();
    assert_eq!(request.pairs.step_by(2).collect::<Vec<_>>(), [4, 6, 8]);
}

// --- SYNTAX NUMKEYS ---------------------------------------------------------

#[test]
fn numkeys_accepts_every_option_in_any_order_and_case() {
    let cases: [(&[&str], Condition, Expiry); 12] = [
        (&[], Condition::Always, Expiry::Persist),
        (&["EX", "10"], Condition::Always, Expiry::In(10_000)),
        (&["px", "1500"], Condition::Always, Expiry::In(1500)),
        (
            &["ExAt", "1800000000"],
            Condition::Always,
            Expiry::At(1_800_000_000_000),
        ),
        (&["PXAT", "1"], Condition::Always, Expiry::At(1)),
        (&["KEEPTTL"], Condition::Always, Expiry::Keep),
        (&["NX"], Condition::NoneExist, Expiry::Persist),
        (&["xx", "keepttl"], Condition::AllExist, Expiry::Keep),
        (&["EX", "5", "NX"], Condition::NoneExist, Expiry::In(5000)),
        (&["nx", "ex", "5"], Condition::NoneExist, Expiry::In(5000)),
        // Repeating an option is allowed; the last time counts, and an
        // earlier one is never read (the built-in: "EX abc EX 5" is fine).
        (
            &["EX", "abc", "EX", "5"],
            Condition::Always,
            Expiry::In(5000),
        ),
        (
            &["NX", "NX", "KEEPTTL", "KEEPTTL"],
            Condition::NoneExist,
            Expiry::Keep,
        ),
    ];
    for (options, condition, expiry) in cases {
        let mut argv = vec!["MSETEX", "2", "a", "1", "b", "2"];
        argv.extend_from_slice(options);
        assert_eq!(
            numkeys(&argv),
            Ok(request(2..6, condition, expiry, Ack::One)),
            "{argv:?}"
        );
    }
}

#[test]
fn numkeys_errors_as_the_builtin() {
    use ParseError::*;
    let cases: [(&[&str], ParseError); 34] = [
        (&["MSETEX"], WrongArity),
        (&["MSETEX", "1", "k"], WrongArity),
        (&["MSETEX", "0", "k", "v"], InvalidNumkeys),
        (&["MSETEX", "-1", "k", "v"], InvalidNumkeys),
        (&["MSETEX", "abc", "k", "v"], InvalidNumkeys),
        (&["MSETEX", "01", "k", "v"], InvalidNumkeys),
        (&["MSETEX", "+1", "k", "v"], InvalidNumkeys),
        (&["MSETEX", "-0", "k", "v"], InvalidNumkeys),
        (&["MSETEX", "1.0", "k", "v"], InvalidNumkeys),
        (&["MSETEX", "2147483648", "k", "v"], InvalidNumkeys),
        (&["MSETEX", "0", "k", "v", "FOO"], InvalidNumkeys),
        (&["MSETEX", "abc", "k", "v", "EX", "0"], InvalidNumkeys),
        (&["MSETEX", "2", "k", "v"], WrongPairCount),
        (&["MSETEX", "2", "k", "v", "k2"], WrongPairCount),
        (&["MSETEX", "2147483647", "k", "v"], WrongPairCount),
        (&["MSETEX", "1", "k", "v", "k2"], Syntax),
        (&["MSETEX", "1", "k", "v", "k2", "v2"], Syntax),
        (&["MSETEX", "1", "k", "v", "EX"], Syntax),
        (&["MSETEX", "1", "k", "v", "NX", "EX"], Syntax),
        (&["MSETEX", "1", "k", "v", "EX", "10", "PX", "10"], Syntax),
        (&["MSETEX", "1", "k", "v", "NX", "XX"], Syntax),
        (&["MSETEX", "1", "k", "v", "KEEPTTL", "EX", "10"], Syntax),
        (&["MSETEX", "1", "k", "v", "EX", "10", "KEEPTTL"], Syntax),
        (&["MSETEX", "1", "k", "v", "GET"], Syntax),
        (&["MSETEX", "1", "k", "v", "PERSIST"], Syntax),
        (&["MSETEX", "1", "k", "v", "EX", "abc", "FOO"], Syntax),
        (&["MSETEX", "1", "k", "v", "EX", "0", "PX", "5"], Syntax),
        (&["MSETEX", "1", "k", "v", "EX", "abc"], NotAnInteger),
        (&["MSETEX", "1", "k", "v", "EX", "NX"], NotAnInteger),
        (
            &["MSETEX", "1", "k", "v", "EX", "5", "EX", "abc"],
            NotAnInteger,
        ),
        (
            &["MSETEX", "1", "k", "v", "EX", "9223372036854775808"],
            NotAnInteger,
        ),
        (&["MSETEX", "1", "k", "v", "EX", "0"], InvalidExpireTime),
        (
            &["MSETEX", "1", "k", "v", "EX", "9223372036854775"],
            InvalidExpireTime,
        ),
        (
            &["MSETEX", "1", "k", "v", "EXAT", "9223372036854776"],
            InvalidExpireTime,
        ),
    ];
    for (argv, error) in cases {
        assert_eq!(numkeys(argv), Err(error), "{argv:?}");
    }
    assert_eq!(
        numkeys(&["MSETEX", "1", "k", "v", "PXAT", "9223372036854775807"]).map(|r| r.expiry),
        Ok(Expiry::At(i64::MAX))
    );
    assert_eq!(
        numkeys(&["MSETEX", "1", "k", "v", "EXAT", "9223372036854775"]).map(|r| r.expiry),
        Ok(Expiry::At(9_223_372_036_854_775_000))
    );
}

#[test]
fn is_i64_takes_what_parse_i64_takes_byte_by_byte() {
    // Every byte value at every position of numbers from 1 to 20 digits, signed or not: the
    // eight-at-a-time check must reject exactly what the digit loop rejects.
    for len in 1..=20 {
        let number: Vec<u8> = (0..len).map(|i| b"123456789"[i % 9]).collect();
        for sign in [&b""[..], b"-"] {
            let base = [sign, &number[..]].concat();
            for at in 0..base.len() {
                for byte in 0..=u8::MAX {
                    let mut bytes = base.clone();
                    bytes[at] = byte;
                    assert_eq!(is_i64(&bytes), model_i64(&bytes).is_some(), "{bytes:?}");
                }
            }
        }
    }
    for bytes in [
        &b"9223372036854775807"[..],
        b"9223372036854775808",
        b"-9223372036854775808",
    ] {
        assert_eq!(is_i64(bytes), model_i64(bytes).is_some(), "{bytes:?}");
    }
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

// --- Reference models -------------------------------------------------------

/// A Redis integer: a string that Rust parses as i64 and that prints back
/// byte for byte (canonical form).
fn model_i64(bytes: &[u8]) -> Option<i64> {
    let text = std::str::from_utf8(bytes).ok()?;
    let value: i64 = text.parse().ok()?;
    (value.to_string() == text).then_some(value)
}

fn upper(argv: &[Vec<u8>]) -> Vec<String> {
    argv.iter()
        .map(|a| String::from_utf8_lossy(a).to_ascii_uppercase())
        .collect()
}

/// The deadline rule of SET, in 128-bit arithmetic.
fn model_expiry(unit: &str, time: &[u8], now: i64) -> Result<Expiry, ParseError> {
    let time = model_i64(time).ok_or(ParseError::NotAnInteger)?;
    if time <= 0 {
        return Err(ParseError::InvalidExpireTime);
    }
    let (t, n) = (i128::from(time), i128::from(now));
    let fits = |ms: i128| i64::try_from(ms).map_err(|_| ParseError::InvalidExpireTime);
    match unit {
        "EX" => {
            fits(t * 1000 + n)?;
            Ok(Expiry::In(fits(t * 1000)?))
        }
        "PX" => {
            fits(t + n)?;
            Ok(Expiry::In(time))
        }
        "EXAT" => Ok(Expiry::At(fits(t * 1000)?)),
        _ => Ok(Expiry::At(time)),
    }
}

/// The NUMKEYS grammar as the built-in's documentation and replies state it.
fn model_numkeys(argv: &[Vec<u8>], now: i64) -> Result<Request, ParseError> {
    if argv.len() < 4 {
        return Err(ParseError::WrongArity);
    }
    let words = upper(argv);
    let n = model_i64(&argv[1])
        .filter(|n| *n >= 1 && *n <= i64::from(i32::MAX))
        .ok_or(ParseError::InvalidNumkeys)? as usize;
    if 2 + 2 * n > argv.len() {
        return Err(ParseError::WrongPairCount);
    }
    let (mut nx, mut xx, mut keep) = (false, false, false);
    let mut unit: Option<(String, usize)> = None;
    let mut i = 2 + 2 * n;
    while i < argv.len() {
        let w = words[i].as_str();
        match w {
            "NX" if !xx => nx = true,
            "XX" if !nx => xx = true,
            "KEEPTTL" if unit.is_none() => keep = true,
            "EX" | "PX" | "EXAT" | "PXAT"
                if !keep && unit.as_ref().is_none_or(|(u, _)| u == w) && i + 1 < argv.len() =>
            {
                unit = Some((w.to_owned(), i + 1));
                i += 1;
            }
            _ => return Err(ParseError::Syntax),
        }
        i += 1;
    }
    let expiry = match unit {
        Some((unit, index)) => model_expiry(&unit, &argv[index], now)?,
        None if keep => Expiry::Keep,
        None => Expiry::Persist,
    };
    let condition = match (nx, xx) {
        (true, _) => Condition::NoneExist,
        (_, true) => Condition::AllExist,
        _ => Condition::Always,
    };
    Ok(request(2..2 + 2 * n, condition, expiry, Ack::One))
}

/// The TTL grammar: first the NUMKEYS shape (the NUMKEYS model succeeds,
/// or fails only on its time, with at least one option), then the TTL form.
fn model_ttl(argv: &[Vec<u8>], now: i64) -> Result<Request, ParseError> {
    if argv.len() >= 4 {
        let numkeys_reading = model_numkeys(argv, now);
        let has_options = model_i64(&argv[1])
            .is_some_and(|n| n >= 1 && 2 + 2 * (n as usize).min(argv.len()) < argv.len());
        let shape = matches!(
            numkeys_reading,
            Ok(_) | Err(ParseError::NotAnInteger) | Err(ParseError::InvalidExpireTime)
        );
        if shape && has_options {
            return Err(ParseError::NumkeysShape);
        }
    } else {
        return Err(ParseError::WrongArity);
    }
    let words = upper(argv);
    let is_condition = |w: &str| w == "NX" || w == "XX";
    let is_unit = |w: &str| ["EX", "PX", "EXAT", "PXAT"].contains(&w);
    let options: Vec<&str> = words[1..]
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
    if words.get(time_index).is_some_and(|w| w == "KEEPTTL") {
        return Err(ParseError::KeepTtl);
    }
    let pairs = argv.len() as i64 - time_index as i64 - 1;
    if pairs < 2 || pairs % 2 != 0 {
        let keywords = ["NX", "XX", "EX", "PX", "EXAT", "PXAT", "KEEPTTL"];
        let option_after = words
            .iter()
            .skip(time_index + 1)
            .any(|w| keywords.contains(&w.as_str()));
        return Err(if option_after {
            ParseError::OptionsFirst
        } else {
            ParseError::WrongArity
        });
    }
    let unit = units.first().map_or("EX", |w| **w);
    let expiry = model_expiry(unit, &argv[time_index], now)?;
    let (condition, ack) = match conditions.first().map(|w| **w) {
        Some("NX") => (Condition::NoneExist, Ack::One),
        Some("XX") => (Condition::AllExist, Ack::One),
        _ => (Condition::Always, Ack::Ok),
    };
    Ok(request(time_index + 1..argv.len(), condition, expiry, ack))
}

/// The model of either syntax.
fn model(syntax: Syntax, argv: &[Vec<u8>], now: i64) -> Result<Request, ParseError> {
    match syntax {
        Syntax::Ttl => model_ttl(argv, now),
        Syntax::Numkeys => model_numkeys(argv, now),
    }
}

/// Arguments that mix random bytes, integer-looking text, real integers
/// and option keywords in any case.
pub(crate) fn arg_strategy() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..24),
        "[-+ 0-9]{0,22}".prop_map(String::into_bytes),
        any::<i64>().prop_map(|n| n.to_string().into_bytes()),
        (1i64..=4_000_000_000_000).prop_map(|n| n.to_string().into_bytes()),
        (1i64..=4).prop_map(|n| n.to_string().into_bytes()),
        "(?i)(nx|xx|ex|px|exat|pxat|keepttl)".prop_map(String::into_bytes),
    ]
}

/// Cases per property: 4096 in the test suite, more under `make fuzz`.
pub(crate) fn cases() -> u32 {
    std::env::var("MSETEX_FUZZ_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(4096)
}

pub(crate) fn views(argv: &[Vec<u8>]) -> Vec<&[u8]> {
    argv.iter().map(Vec::as_slice).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn parse_i64_agrees_with_model(bytes in arg_strategy()) {
        prop_assert_eq!(parse_i64(&bytes), model_i64(&bytes));
        prop_assert_eq!(is_i64(&bytes), model_i64(&bytes).is_some());
    }

    #[test]
    fn parse_i64_round_trips(n in any::<i64>()) {
        prop_assert_eq!(parse_i64(n.to_string().as_bytes()), Some(n));
    }

    #[test]
    fn ttl_never_panics_and_agrees_with_model(
        tail in proptest::collection::vec(arg_strategy(), 0..10),
        now in 0i64..=i64::MAX,
    ) {
        let mut argv = vec![b"MSETEX".to_vec()];
        argv.extend(tail);
        prop_assert_eq!(Syntax::Ttl.parse(&views(&argv), now), model(Syntax::Ttl, &argv, now));
    }

    #[test]
    fn numkeys_never_panics_and_agrees_with_model(
        tail in proptest::collection::vec(arg_strategy(), 0..10),
        now in 0i64..=i64::MAX,
    ) {
        let mut argv = vec![b"MSETEX".to_vec()];
        argv.extend(tail);
        prop_assert_eq!(Syntax::Numkeys.parse(&views(&argv), now), model(Syntax::Numkeys, &argv, now));
    }

    #[test]
    fn ttl_option_order_does_not_matter(
        condition in prop::sample::select(vec!["", "NX", "XX"]),
        unit in prop::sample::select(vec!["", "EX", "PX", "EXAT", "PXAT"]),
        time in 1i64..1_000_000,
    ) {
        let time = time.to_string();
        let build = |first: &str, second: &str| {
            let mut argv: Vec<&str> = vec!["MSETEX"];
            argv.extend([first, second].into_iter().filter(|w| !w.is_empty()));
            argv.extend([time.as_str(), "k", "v"]);
            ttl(&argv).map(|r| (r.condition, r.expiry))
        };
        prop_assert_eq!(build(condition, unit), build(unit, condition));
    }

    #[test]
    fn ttl_original_form_is_unchanged(seconds in 5i64..=1_000_000_000, pairs in 1usize..5) {
        let seconds_text = seconds.to_string();
        let mut argv = vec!["MSETEX", seconds_text.as_str()];
        for _ in 0..pairs {
            argv.extend(["k", "v"]);
        }
        prop_assert_eq!(
            ttl(&argv),
            Ok(request(2..argv.len(), Condition::Always, Expiry::In(seconds * 1000), Ack::Ok))
        );
    }
}

// ---------------------------------------------------------------------------
// COMMAND DOCS

use crate::docs::{Arg, ArgKind, KeyDocs, KeySpec};

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

/// Where the keys stand does not matter here (`keys.rs` decides it).
const ANY_KEYS: KeyDocs = KeyDocs {
    spec: KeySpec::Range {
        first: 2,
        last: -1,
        step: 2,
        incomplete: false,
    },
    notes: None,
    legacy: (2, -1, 2),
    ask_getkeys: false,
};

/// The docs must describe the grammar the parser accepts.
#[test]
fn ttl_tree_matches_the_grammar() {
    let docs = Syntax::Ttl.docs(ANY_KEYS);
    assert_eq!(names(docs.args), ["condition", "unit", "time", "data"]);
    assert_eq!(tokens(&docs.args[0]), ["NX", "XX"]);
    assert_eq!(tokens(&docs.args[1]), ["EX", "PX", "EXAT", "PXAT"]);
    assert!(docs.args[3].multiple && docs.args[3].subargs[0].kind == ArgKind::Key);
}

#[test]
fn numkeys_tree_matches_the_builtin() {
    let docs = Syntax::Numkeys.docs(ANY_KEYS);
    assert_eq!(
        names(docs.args),
        ["numkeys", "data", "condition", "expiration"]
    );
    assert_eq!(
        tokens(&docs.args[3]),
        ["EX", "PX", "EXAT", "PXAT", "KEEPTTL"]
    );
}
