//! Argument parsing for both syntaxes of MSETEX, into one [`Request`]:
//!
//! ```text
//! SYNTAX TTL      MSETEX [NX | XX] [EX | PX | EXAT | PXAT] time key value [key value ...]
//! SYNTAX NUMKEYS  MSETEX numkeys key value [key value ...] [NX | XX]
//!                        [EX seconds | PX ms | EXAT unix-s | PXAT unix-ms | KEEPTTL]
//! ```
//!
//! The NUMKEYS form is the built-in command of Redis 8.4+ and Valkey 9.1+;
//! its grammar here is theirs (Redis 8.6.3): options after the pairs, in any
//! order and any case, parsed like SET's (a repeated option is allowed, the
//! last time wins; only conflicting ones are a syntax error).
//!
//! Pure functions over byte slices: no Redis types, no allocation, so both
//! grammars are unit- and property-tested without a server. The command
//! layer turns a [`ParseError`] into the server's error text.

use std::ops::Range;

/// Which syntax the module was loaded with (`SYNTAX TTL | NUMKEYS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// `MSETEX [NX|XX] [EX|PX|EXAT|PXAT] time key value ...` (the default).
    Ttl,
    /// `MSETEX numkeys key value ... [NX|XX] [EX|PX|EXAT|PXAT t|KEEPTTL]`.
    Numkeys,
}

/// Why a call was refused. Each variant maps to one error reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseError {
    /// `ERR wrong number of arguments for '<cmd>' command`
    WrongArity,
    /// `ERR syntax error` (a repeated, conflicting or unknown option)
    Syntax,
    /// `ERR value is not an integer or out of range`
    NotAnInteger,
    /// `ERR invalid expire time in '<cmd>' command`
    InvalidExpireTime,
    /// NUMKEYS: numkeys is not an integer from 1 to 2^31-1.
    InvalidNumkeys,
    /// NUMKEYS: fewer key/value pairs than numkeys says.
    WrongPairCount,
    /// TTL: the call has exactly the shape of the NUMKEYS form with options
    /// (`MSETEX 2 k v k v EX 60`), which the TTL form would misread.
    NumkeysShape,
}

/// Which keys must exist for the call to write anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Condition {
    /// No NX or XX: always write.
    Always,
    /// `NX`: write only if none of the keys exists.
    NoneExist,
    /// `XX`: write only if every key exists.
    AllExist,
}

/// What happens to each key's time to live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiry {
    /// `EX` / `PX`: this many milliseconds from the command's clock (> 0;
    /// validated so that the deadline fits a signed 64-bit clock).
    In(i64),
    /// `EXAT` / `PXAT`: this unix time in milliseconds (may be past).
    At(i64),
    /// `KEEPTTL` (NUMKEYS): every key keeps the TTL it has.
    Keep,
    /// No expiry option (NUMKEYS): keys end without a TTL, as with MSET.
    Persist,
}

/// The reply to a call that wrote its keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ack {
    /// `+OK`: the TTL form without NX/XX, like MSET and SET.
    Ok,
    /// `:1` (`:0` when NX/XX stopped the call): NX/XX, and the NUMKEYS form.
    One,
}

/// A validated call: everything the write step needs besides the key and
/// value arguments themselves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// argv indexes of the pairs: keys and values alternate from `start`.
    pub pairs: Range<usize>,
    pub condition: Condition,
    pub expiry: Expiry,
    pub ack: Ack,
}

/// Validates a whole call. `argv` (any byte strings: the module passes its
/// argument views, the tests byte slices) includes the command name at
/// index 0; `now_ms` is the server's clock (unix milliseconds), used only to
/// check that a relative TTL does not overflow.
pub fn parse<A: AsRef<[u8]>>(
    syntax: Syntax,
    argv: &[A],
    now_ms: i64,
) -> Result<Request, ParseError> {
    match syntax {
        Syntax::Ttl => parse_ttl(argv, now_ms),
        Syntax::Numkeys => parse_numkeys(argv, now_ms),
    }
}

/// Where the key/value pairs are, which is all the server needs to learn
/// where the keys are (cluster slots, ACLs, COMMAND GETKEYS). `None` when
/// the shape of the call is invalid: it declares no keys and fails when it
/// runs.
pub fn pair_range<A: AsRef<[u8]>>(syntax: Syntax, argv: &[A]) -> Option<Range<usize>> {
    match syntax {
        Syntax::Ttl => ttl_layout(argv)
            .ok()
            .map(|layout| layout.first_key..argv.len()),
        Syntax::Numkeys => numkeys_pairs(argv).ok(),
    }
}

/// The smallest valid call of either form: `MSETEX time|numkeys key value`.
const MIN_ARGC: usize = 4;

// ---------------------------------------------------------------------------
// SYNTAX TTL

/// What the TTL form's leading options say, and where its time and keys are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct TtlLayout<'a> {
    condition: Condition,
    unit: TimeUnit,
    time: &'a [u8],
    first_key: usize,
}

/// Checks order: the NUMKEYS shape, arity, options, arity again once the
/// options are known, the integer, its range.
fn parse_ttl<A: AsRef<[u8]>>(argv: &[A], now_ms: i64) -> Result<Request, ParseError> {
    if has_numkeys_shape(argv) {
        return Err(ParseError::NumkeysShape);
    }
    let layout = ttl_layout(argv)?;
    let time = parse_i64(layout.time).ok_or(ParseError::NotAnInteger)?;
    Ok(Request {
        pairs: layout.first_key..argv.len(),
        condition: layout.condition,
        expiry: expiry(layout.unit, time, now_ms)?,
        ack: match layout.condition {
            Condition::Always => Ack::Ok,
            Condition::NoneExist | Condition::AllExist => Ack::One,
        },
    })
}

/// Options (at most one of each group, any order), then time, then at
/// least one whole pair; or the same options and time packed into argv[1]
/// (see [`pack_ttl_options`]).
fn ttl_layout<A: AsRef<[u8]>>(argv: &[A]) -> Result<TtlLayout<'_>, ParseError> {
    if argv.len() < MIN_ARGC {
        return Err(ParseError::WrongArity);
    }
    let (options, time, first_key) = match argv.get(1).and_then(|arg| unpack(arg.as_ref())) {
        Some((words, time)) => (
            read_options(words.split(|b| *b == b' ').map(Keyword::parse)),
            Some(time),
            2,
        ),
        None => {
            // The options end at the first argument that is none (KEEPTTL
            // is no option of the TTL form: it is where the time goes).
            let count = argv
                .iter()
                .skip(1)
                .take_while(|arg| is_ttl_option(arg.as_ref()))
                .count();
            let words = argv.iter().skip(1).take(count);
            (
                read_options(words.map(|arg| Keyword::parse(arg.as_ref()))),
                argv.get(1 + count).map(AsRef::as_ref),
                2 + count,
            )
        }
    };
    let (condition, unit) = options?;
    let pairs = argv.len().saturating_sub(first_key);
    let Some(time) = time.filter(|_| pairs >= 2 && pairs.is_multiple_of(2)) else {
        return Err(ParseError::WrongArity);
    };
    Ok(TtlLayout {
        condition,
        unit,
        time,
        first_key,
    })
}

/// The TTL form's options: at most one condition and one unit; anything
/// else (a repeated group, a word that is no such option) is a syntax error.
fn read_options(
    keywords: impl Iterator<Item = Option<Keyword>>,
) -> Result<(Condition, TimeUnit), ParseError> {
    let mut condition = None;
    let mut unit = None;
    for keyword in keywords {
        let slot_taken = match keyword {
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

/// True for NX, XX, EX, PX, EXAT and PXAT: the options before the time.
fn is_ttl_option(arg: &[u8]) -> bool {
    matches!(
        Keyword::parse(arg),
        Some(Keyword::Condition(_) | Keyword::Unit(_))
    )
}

// ---------------------------------------------------------------------------
// SYNTAX TTL, options packed into one argument

/// The first byte of a packed options argument; no time starts with it.
const PACKED: u8 = 0;
/// At most this many options are packed: two are valid, a third always
/// repeats one (a syntax error), so the rest cannot change the answer.
const MOST_PACKED: usize = 3;

/// Packs the TTL form's leading options and its time into one argument, so
/// that the keys follow at 2, 4, ... as the command's key specification
/// says: the call as the server must see it where it reads keys from key
/// specifications only (see `keys_declared`). Returns the packed argument
/// and how many arguments from argv[1] on it replaces; `None` when the call
/// has no leading option (nothing to pack) or no argument after them.
///
/// The packed form is `PACKED`, the number of options, the options and the
/// time separated by spaces: `"\0\x02NX PX 60000"` for `NX PX 60000`. The
/// time is the rest of the argument, verbatim.
pub fn pack_ttl_options<A: AsRef<[u8]>>(argv: &[A]) -> Option<(Vec<u8>, usize)> {
    let count = argv
        .iter()
        .skip(1)
        .take_while(|arg| is_ttl_option(arg.as_ref()))
        .take(MOST_PACKED)
        .count();
    let time = argv.get(1 + count)?;
    if count == 0 {
        return None;
    }
    let mut packed = vec![PACKED, count as u8];
    for option in argv.get(1..1 + count)? {
        packed.extend_from_slice(option.as_ref());
        packed.push(b' ');
    }
    packed.extend_from_slice(time.as_ref());
    Some((packed, count + 1))
}

/// The options (separated by spaces) and the time of a packed argument, if
/// `arg` is one.
fn unpack(arg: &[u8]) -> Option<(&[u8], &[u8])> {
    let (&count, rest) = arg.strip_prefix(&[PACKED])?.split_first()?;
    let count = usize::from(count);
    if !(1..=MOST_PACKED).contains(&count) {
        return None;
    }
    // The options are keywords, without spaces: the time is what follows
    // the `count`th space.
    let end = rest
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b' ')
        .nth(count - 1)?
        .0;
    Some((rest.get(..end)?, rest.get(end + 1..)?))
}

/// True when the call reads as the NUMKEYS form *with at least one option*:
/// a valid numkeys, that many pairs, then a syntactically valid option list.
/// That is what typed clients of Redis 8.4+ send (`MSETEX 2 k v k v EX 60`);
/// the TTL form would store the option words as keys and read numkeys as
/// seconds. Without options the two forms cannot be told apart.
fn has_numkeys_shape<A: AsRef<[u8]>>(argv: &[A]) -> bool {
    numkeys_pairs(argv)
        .is_ok_and(|pairs| pairs.end < argv.len() && numkeys_options(argv, pairs.end).is_ok())
}

// ---------------------------------------------------------------------------
// SYNTAX NUMKEYS

/// Checks order, as the built-in: numkeys, the pair count, the options'
/// syntax, then the time's integer and range.
fn parse_numkeys<A: AsRef<[u8]>>(argv: &[A], now_ms: i64) -> Result<Request, ParseError> {
    let pairs = numkeys_pairs(argv)?;
    let options = numkeys_options(argv, pairs.end)?;
    let expiry = match options.expiry {
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
        condition: options.condition,
        expiry,
        ack: Ack::One,
    })
}

/// `numkeys` and the pairs it announces: numkeys from 1 to 2^31-1, and at
/// least that many pairs after it.
fn numkeys_pairs<A: AsRef<[u8]>>(argv: &[A]) -> Result<Range<usize>, ParseError> {
    if argv.len() < MIN_ARGC {
        return Err(ParseError::WrongArity);
    }
    let numkeys = argv
        .get(1)
        .and_then(|arg| parse_i64(arg.as_ref()))
        .filter(|n| (1..=i64::from(i32::MAX)).contains(n))
        .ok_or(ParseError::InvalidNumkeys)?;
    let available = (argv.len() - 2) / 2;
    let numkeys = usize::try_from(numkeys).map_err(|_| ParseError::InvalidNumkeys)?;
    if numkeys > available {
        return Err(ParseError::WrongPairCount);
    }
    Ok(2..2 + 2 * numkeys)
}

/// The expiry option of the NUMKEYS form, with the argv index of its time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ExpiryOption {
    None,
    Keep,
    Unit(TimeUnit, usize),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct NumkeysOptions {
    condition: Condition,
    expiry: ExpiryOption,
}

/// The options after the pairs, with SET's rules: NX and XX exclude each
/// other, the four units and KEEPTTL exclude each other, a unit needs a
/// following argument (its time, not read here), repeating an option is
/// allowed and the last one counts, anything else is a syntax error.
fn numkeys_options<A: AsRef<[u8]>>(argv: &[A], from: usize) -> Result<NumkeysOptions, ParseError> {
    let mut options = NumkeysOptions {
        condition: Condition::Always,
        expiry: ExpiryOption::None,
    };
    let mut index = from;
    while let Some(arg) = argv.get(index) {
        match Keyword::parse(arg.as_ref()).ok_or(ParseError::Syntax)? {
            Keyword::Condition(condition) => {
                if options.condition != Condition::Always && options.condition != condition {
                    return Err(ParseError::Syntax);
                }
                options.condition = condition;
            }
            Keyword::KeepTtl => {
                if matches!(options.expiry, ExpiryOption::Unit(..)) {
                    return Err(ParseError::Syntax);
                }
                options.expiry = ExpiryOption::Keep;
            }
            Keyword::Unit(unit) => {
                let conflicts = match options.expiry {
                    ExpiryOption::None => false,
                    ExpiryOption::Keep => true,
                    ExpiryOption::Unit(other, _) => other != unit,
                };
                if conflicts || index + 1 >= argv.len() {
                    return Err(ParseError::Syntax);
                }
                index += 1;
                options.expiry = ExpiryOption::Unit(unit, index);
            }
        }
        index += 1;
    }
    Ok(options)
}

// ---------------------------------------------------------------------------
// The module's own replication command

/// The first argument of `<name>.apply` for [`Expiry::Keep`].
pub const APPLY_KEEP: &[u8] = b"KEEPTTL";
/// The first argument of `<name>.apply` for [`Expiry::Persist`].
pub const APPLY_PERSIST: &[u8] = b"PERSIST";

/// `<name>.apply <deadline | KEEPTTL | PERSIST> key value [key value ...]`:
/// one call as `REPLICATE MSETEX` sends it to replicas, the AOF and a slot
/// migration's stream, already decided (no NX/XX) and with its absolute
/// deadline in unix milliseconds. The keys are at 2, 4, ..., where the
/// command's key specification says, so every server finds them exactly.
pub fn parse_apply<A: AsRef<[u8]>>(argv: &[A]) -> Result<Request, ParseError> {
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

// ---------------------------------------------------------------------------
// Shared

/// What `time` counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TimeUnit {
    /// `EX` (the TTL form's default): seconds from now.
    Seconds,
    /// `PX`: milliseconds from now.
    Milliseconds,
    /// `EXAT`: a unix time in seconds.
    UnixSeconds,
    /// `PXAT`: a unix time in milliseconds.
    UnixMilliseconds,
}

/// One option keyword of either form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keyword {
    Condition(Condition),
    Unit(TimeUnit),
    KeepTtl,
}

impl Keyword {
    /// Recognises a keyword, ignoring ASCII case.
    fn parse(arg: &[u8]) -> Option<Keyword> {
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

/// Turns `time` into an [`Expiry`] with the range rules of
/// `SET ... EX/PX/EXAT/PXAT`: zero, negative, or a deadline that overflows
/// a signed 64-bit millisecond clock is an invalid expire time.
fn expiry(unit: TimeUnit, time: i64, now_ms: i64) -> Result<Expiry, ParseError> {
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
mod tests;
