//! The command filter's rewrite of a call (and of `COMMAND GETKEYS` / `ACL DRYRUN` about one), the
//! argument it packs, and the load's check that the server then reads exactly the call's keys.
//!
//! A packed argument: a [`Mark`] byte, then each argument it holds as `<length>:<bytes>`. No
//! option, time or numkeys starts with a mark byte: the command reads only what the filter wrote.
//! A call rewritten to its keys leaves its values with the filter, which holds them for the
//! command by a token, the packed argument's last (`Ctx::take_held`): they are not copied.

use super::{Keys, Read, Reading, MARK};
use crate::ffi::{ArgsChange, EverySecond, Piece, Rewrite};
use crate::outcome::{self, Refusal};
use crate::syntax::{ParseError, Request, Syntax};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mark {
    /// A marked call's arguments that are not pairs, after how many stood before the pairs.
    Options = 0,
    /// The same, then the token of its held values, for a call rewritten to its keys.
    KeysOnly = 1,
    /// A call the command refuses: every argument after its name.
    Refused = 2,
}

impl Keys {
    /// Whether the filter may rewrite command `name`: MSETEX where it rewrites, COMMAND GETKEYS
    /// and ACL DRYRUN about it.
    pub fn filter_wants(&self, ours: &str, name: &[u8]) -> bool {
        let is = |word: &[u8]| name.eq_ignore_ascii_case(word);
        let filters = self.filters();
        (filters && (is(ours.as_bytes()) || is(b"ACL")))
            || ((filters || self.syntax == Syntax::Ttl) && is(b"COMMAND"))
    }

    /// Rewrites a command naming MSETEX (`ours`) so that the key spec finds exactly its keys, in
    /// one pass (DESIGN.md, "Where the keys are"); a call the command refuses becomes `<name>
    /// <refused>`, padded to the arity. `COMMAND GETKEYS` of a typed client's numkeys call gets
    /// the TTL form's refusal as the name of an unknown command (a cluster client shows it).
    /// A call rewritten to its keys holds its values under `token`.
    pub fn rewrite<A: AsRef<[u8]>>(&self, ours: &str, args: &[A], token: u64) -> Rewrite {
        let Some((at, routed)) = locate(ours, args) else {
            return Rewrite::default();
        };
        let change = |at, replaced, with| ArgsChange { at, replaced, with };
        let call = args.get(at..).unwrap_or_default();
        let parsed = self.syntax.parse(call, 0);
        if !routed && parsed == Err(ParseError::NumkeysShape) {
            let hint = outcome::numkeys_shape_hint(ours).into_bytes();
            return vec![change(0, args.len(), vec![Piece::New(hint)])].into();
        }
        let arity = self.arity().unsigned_abs() as usize;
        if !self.filters() || call.len() < arity {
            return Rewrite::default();
        }
        let after_name = call.get(1..).unwrap_or_default();
        let refused = || {
            let mut with = vec![Piece::New(encode(Mark::Refused, None, after_name))];
            with.resize(arity - 1, Piece::New(Vec::new()));
            vec![change(at + 1, after_name.len(), with)].into()
        };
        let Ok(Request { pairs, .. }) = parsed else {
            return refused();
        };
        if !self.rewrites() {
            return Rewrite::default();
        }
        // Where the server routes by keys read before this filter, a client's mark starts them.
        let marked = |arg: &A| {
            let arg = arg.as_ref();
            let arg = arg.split(|b| *b == 0).next().unwrap_or_default();
            arg.eq_ignore_ascii_case(MARK.to_bytes())
        };
        if self.reading == Reading::Marked && self.cluster && call.iter().any(marked) {
            return refused();
        }
        let before = pairs.start.saturating_sub(1);
        let head = call.get(1..pairs.start).unwrap_or_default();
        let tail = call.get(pairs.end..).unwrap_or_default();
        let moved = head.iter().chain(tail).map(AsRef::as_ref);
        if self.reading == Reading::KeysOnly {
            // COMMAND GETKEYS and ACL DRYRUN run no call: their values are dropped.
            let token = if routed { token } else { 0 }.to_string().into_bytes();
            let moved: Vec<&[u8]> = moved.chain([token.as_slice()]).collect();
            // The keys move left, each by the arguments before it that leave: not copied.
            let count = pairs.len() / 2;
            let keys = EverySecond {
                first: at + pairs.start,
                count,
            };
            let packed = Piece::New(encode(Mark::KeysOnly, Some(before), &moved));
            let with = vec![packed, Piece::Sent(keys)];
            let values = EverySecond {
                first: keys.first + 1,
                count: if routed { count } else { 0 },
            };
            return Rewrite {
                changes: vec![change(at + 1, after_name.len(), with)],
                held: values,
            };
        }
        let range = self.reading == Reading::Range;
        if range && pairs.start == 2 && tail.is_empty() {
            return Rewrite::default();
        }
        let moved: Vec<&[u8]> = moved.collect();
        let options = encode(Mark::Options, Some(before), &moved);
        if range {
            return vec![
                change(at + pairs.end, tail.len(), Vec::new()),
                change(at + 1, before, vec![Piece::New(options)]),
            ]
            .into();
        }
        vec![
            change(at + pairs.end, tail.len(), vec![Piece::New(options)]),
            change(at + 1, before, vec![Piece::New(MARK.to_bytes().to_vec())]),
        ]
        .into()
    }

    /// The load's last check where the server reads keys from a key spec: which keys `getkeys`
    /// (`COMMAND GETKEYS`) reads from a call with options, rewritten as the filter would; anything
    /// but exactly its keys refuses the load (DESIGN.md, "Loading").
    pub fn check(
        &self,
        ours: &str,
        getkeys: impl FnOnce(&[&[u8]]) -> Option<Vec<Vec<u8>>>,
    ) -> Result<(), String> {
        let keynum = self.keynum_complete();
        if self.reading == Reading::Callback && !keynum {
            return Ok(());
        }
        let [a, b] = PROBE_KEYS;
        let options: &[&[u8]] = &[b"NX", b"PX", b"100000"];
        let name = ours.as_bytes();
        let call: Vec<&[u8]> = match self.syntax {
            Syntax::Ttl => [&[name][..], options, &[a, b"1", b, b"2"]].concat(),
            Syntax::Numkeys => [&[name, b"2", a, b"1", b, b"2"][..], options].concat(),
        };
        let words = [&[b"COMMAND".as_slice(), b"GETKEYS"][..], &call].concat();
        let sent: Vec<Vec<u8>> = words.into_iter().map(<[u8]>::to_vec).collect();
        let mut command = sent.clone();
        for change in self.rewrite(ours, &sent, 0).changes {
            change.apply(&mut command, &sent);
        }
        let asked: Vec<&[u8]> = command.iter().skip(2).map(Vec::as_slice).collect();
        let shown = |words: &[&[u8]]| {
            let words: Vec<_> = words.iter().map(|w| String::from_utf8_lossy(w)).collect();
            words.join(" ")
        };
        let (call, probe) = (shown(&call), shown(&PROBE_KEYS));
        match getkeys(&asked) {
            Some(keys) if keys == PROBE_KEYS => Ok(()),
            None if !keynum => Ok(()),
            None => Err(format!(
                "COMMAND GETKEYS could not confirm that the server reads the keynum key \
                 specification of '{call}' with its step, so ACL key patterns and cluster slots \
                 might not see every key: MSETEX does not load here (restore COMMAND's name)"
            )),
            Some(keys) => {
                let read = shown(&keys.iter().map(Vec::as_slice).collect::<Vec<_>>());
                Err(format!(
                    "the server reads the keys of '{call}' as [{read}], not [{probe}] (its key \
                     specifications do not say where this call's keys are), so ACL key patterns \
                     and cluster slots would not see every key: MSETEX does not load here"
                ))
            }
        }
    }
}

const PROBE_KEYS: [&[u8]; 2] = [b"{msetex}a", b"{msetex}b"];

/// Where a call of MSETEX is in the command (0; COMMAND GETKEYS: 2; ACL DRYRUN: 3), and whether
/// the server routes it (only the call itself).
fn locate<A: AsRef<[u8]>>(ours: &str, args: &[A]) -> Option<(usize, bool)> {
    let is = |arg: &A, word: &[u8]| arg.as_ref().eq_ignore_ascii_case(word);
    let is_ours = |arg: &A| is(arg, ours.as_bytes());
    match args {
        [first, ..] if is_ours(first) => Some((0, true)),
        [command, sub, name, ..]
            if is(command, b"COMMAND")
                && (is(sub, b"GETKEYS") || is(sub, b"GETKEYSANDFLAGS"))
                && is_ours(name) =>
        {
            Some((2, false))
        }
        [acl, sub, _user, name, ..] if is(acl, b"ACL") && is(sub, b"DRYRUN") && is_ours(name) => {
            Some((3, false))
        }
        _ => None,
    }
}

/// The packed argument of `mark`: `before` (if any), then `args`.
fn encode<A: AsRef<[u8]>>(mark: Mark, before: Option<usize>, args: &[A]) -> Vec<u8> {
    let size = args.iter().map(|a| a.as_ref().len() + 4).sum::<usize>();
    let mut packed = Vec::with_capacity(24 + size);
    packed.push(mark as u8);
    let mut item = |arg: &[u8]| {
        push_decimal(&mut packed, arg.len());
        packed.push(b':');
        packed.extend_from_slice(arg);
    };
    if let Some(before) = before {
        let mut digits = Vec::with_capacity(4);
        push_decimal(&mut digits, before);
        item(&digits);
    }
    for arg in args {
        item(arg.as_ref());
    }
    packed
}

/// Appends `n` in decimal, without an allocation of its own (every value of a call goes here).
fn push_decimal(out: &mut Vec<u8>, mut n: usize) {
    let start = out.len();
    loop {
        out.push(b'0' + (n % 10) as u8);
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if let Some(digits) = out.get_mut(start..) {
        digits.reverse();
    }
}

/// The mark and the arguments packed into `arg`, if it is a packed argument.
fn decode(arg: &[u8]) -> Option<(Mark, Vec<&[u8]>)> {
    let (mark, mut rest) = arg.split_first()?;
    let mark = [Mark::Options, Mark::KeysOnly, Mark::Refused]
        .into_iter()
        .find(|m| *m as u8 == *mark)?;
    let mut args = Vec::with_capacity(rest.len() / 8);
    while !rest.is_empty() {
        let (len, after) = length(rest)?;
        args.push(after.get(..len)?);
        rest = after.get(len..)?;
    }
    Some((mark, args))
}

/// `<digits>:` at the start of `bytes` (1 to 10 digits): the length, and what follows the colon.
fn length(bytes: &[u8]) -> Option<(usize, &[u8])> {
    let mut len: usize = 0;
    for (at, byte) in bytes.iter().enumerate().take(11) {
        match byte {
            b'0'..=b'9' => len = len.checked_mul(10)?.checked_add(usize::from(byte - b'0'))?,
            b':' if at > 0 => return Some((len, bytes.get(at + 1..)?)),
            _ => return None,
        }
    }
    None
}

/// A call the filter rewrote, read back ([`Read`]) with the pairs where they are in it (the keys
/// alone, with the token of their held values, for a call rewritten to its keys); `None` if it
/// holds no rewrite. A refused call gets its own error (`Refusal::Marked` where it parses), one
/// whose pairs are not where the original's are (a hand-made packed argument) `Syntax`.
pub(super) fn unpack<A: AsRef<[u8]>>(
    argv: &[A],
    reading: Reading,
    syntax: Syntax,
    now_ms: i64,
) -> Option<Read> {
    let name = argv.first()?.as_ref();
    let first = argv.get(1)?.as_ref();
    if first.first() == Some(&(Mark::Refused as u8)) {
        let (_, call) = decode(first)?;
        let call: Vec<&[u8]> = std::iter::once(name).chain(call).collect();
        let error = syntax.parse(&call, now_ms).err();
        return Some(Err(error.map_or(Refusal::Marked, Refusal::Parse)));
    }
    // The packed argument, found and decoded before anything is collected: most calls hold none.
    let (mark, at) = match reading {
        Reading::Marked if first == MARK.to_bytes() => (
            Mark::Options,
            argv.len().checked_sub(1).filter(|last| *last >= 2)?,
        ),
        Reading::KeysOnly => (Mark::KeysOnly, 1),
        Reading::Range => (Mark::Options, 1),
        _ => return None,
    };
    let (found, moved) = decode(argv.get(at)?.as_ref())?;
    let (before, moved) = moved.split_first().filter(|_| found == mark)?;
    let before: usize = std::str::from_utf8(before).ok()?.parse().ok()?;
    let (head, rest) = (moved.get(..before)?, moved.get(before..)?);
    let end = if at == 1 { argv.len() } else { at };
    let placed = argv.get(2..end)?.len();
    let (tail, token, pairs) = if mark == Mark::KeysOnly {
        let (token, tail) = rest.split_last()?;
        let token: u64 = std::str::from_utf8(token).ok()?.parse().ok()?;
        (tail, Some(token), 2 * placed)
    } else {
        (rest, None, placed)
    };
    // The syntax reads no pair of a call it takes: empty bytes stand for them (the values are
    // held, and the keys are not read twice); the filter read the call as sent.
    let start = 1 + head.len();
    let in_original = start..start + pairs;
    let original: Vec<&[u8]> = std::iter::once(name)
        .chain(head.iter().copied())
        .chain(std::iter::repeat_n(&[][..], pairs))
        .chain(tail.iter().copied())
        .collect();
    let request = match syntax.parse(&original, now_ms) {
        Ok(request) if request.pairs == in_original => Request {
            pairs: 2..2 + placed,
            ..request
        },
        Ok(_) => return Some(Err(Refusal::Parse(ParseError::Syntax))),
        Err(error) => return Some(Err(Refusal::Parse(error))),
    };
    Some(Ok((request, token)))
}
