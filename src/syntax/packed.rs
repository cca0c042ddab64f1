//! The filter's packed argument (`Syntax::pack`, `Syntax::unpacked`): a mark byte, then each
//! replaced argument as `<length>:<bytes>` (`"\0" "2:NX" "2:PX" "5:60000"` for `NX PX 60000`).
//! Two forms: the options (mark 0: the pairs follow it), or everything but the keys (mark 1: the
//! options, then the values; the keys follow it). No option, time or numkeys starts with either.

use std::ops::Range;

/// What this deployment's filter packs, so what argv[1] may be (`keys.rs`); elsewhere a client's
/// hand-made packed argument is read as sent (and refused).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Packed {
    /// Nothing: argv[1] is read as sent.
    Plain,
    /// The options (and numkeys or the time) in argv[1]; the pairs follow it.
    Options,
    /// Everything but the keys in argv[1]: the options, then the values; the keys follow it.
    AllButKeys,
}

impl Packed {
    /// The first byte of this form's packed argument.
    fn mark(self) -> Option<u8> {
        match self {
            Packed::Plain => None,
            Packed::Options => Some(0),
            Packed::AllButKeys => Some(1),
        }
    }
}

/// A call with arguments moved into argv[1] (`packed`): the packed argument replaces
/// argv[1..1 + `leading`]; the arguments from `trailing` on are dropped, and the values of
/// `values` (the pairs, as argv indexes) are removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packing {
    pub arg: Vec<u8>,
    pub leading: usize,
    pub trailing: usize,
    pub values: Option<Range<usize>>,
}

/// Packs `args` into one argument of the form `form` (not `Plain`).
pub(super) fn encode<A: AsRef<[u8]>>(form: Packed, args: &[A]) -> Vec<u8> {
    let size = args.iter().map(|a| a.as_ref().len() + 8).sum::<usize>();
    let mut packed = Vec::with_capacity(1 + size);
    packed.extend(form.mark());
    for arg in args {
        let arg = arg.as_ref();
        packed.extend_from_slice(arg.len().to_string().as_bytes());
        packed.push(b':');
        packed.extend_from_slice(arg);
    }
    packed
}

/// The values of the pairs `pairs` of `argv` (none for `None`).
pub(super) fn values<A>(argv: &[A], pairs: Option<Range<usize>>) -> impl Iterator<Item = &A> {
    let pairs = pairs.and_then(|pairs| argv.get(pairs)).unwrap_or_default();
    pairs.iter().skip(1).step_by(2)
}

/// The arguments packed into `arg`, if it is a packed argument of the form `form`.
pub(super) fn decode(form: Packed, arg: &[u8]) -> Option<Vec<&[u8]>> {
    let mut rest = arg.strip_prefix(&[form.mark()?])?;
    let mut args = Vec::new();
    while !rest.is_empty() {
        let colon = rest.iter().position(|b| *b == b':')?;
        let digits = rest.get(..colon)?;
        if digits.is_empty() || digits.len() > 10 || !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let len: usize = std::str::from_utf8(digits).ok()?.parse().ok()?;
        let end = colon.checked_add(1)?.checked_add(len)?;
        args.push(rest.get(colon + 1..end)?);
        rest = rest.get(end..)?;
    }
    (!args.is_empty()).then_some(args)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let args: [&[u8]; 4] = [b"NX", b"PX", b"", b"6 0:0\0"];
        let packed = encode(Packed::Options, &args);
        assert_eq!(packed, b"\x002:NX2:PX0:6:6 0:0\x00");
        assert_eq!(decode(Packed::Options, &packed), Some(args.to_vec()));
        let packed = encode(Packed::AllButKeys, &args);
        assert_eq!(packed, b"\x012:NX2:PX0:6:6 0:0\x00");
        assert_eq!(decode(Packed::AllButKeys, &packed), Some(args.to_vec()));
        // One form is not the other, and nothing is packed where nothing packs.
        assert_eq!(decode(Packed::Options, &packed), None);
        assert_eq!(decode(Packed::Plain, &packed), None);
    }

    #[test]
    fn anything_else_is_not_packed() {
        for arg in [
            &b"60"[..],
            b"",
            b"\x00",
            b"\x002:N",
            b"\x00x:NX",
            b"\x00:NX",
            b"\x002NX",
            b"\x0099999999999:x",
        ] {
            assert_eq!(decode(Packed::Options, arg), None, "{arg:?}");
        }
    }
}
