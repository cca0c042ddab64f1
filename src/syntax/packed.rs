//! The filter's packed argument (`Syntax::pack`, `Syntax::unpacked`): a NUL byte, then each
//! replaced argument as `<length>:<bytes>` (`"\0" "2:NX" "2:PX" "5:60000"` for `NX PX 60000`). No
//! option, time or numkeys starts with a NUL byte.

/// The first byte of a packed argument.
const MARK: u8 = 0;

/// Whether a call's argv[1] may be the command filter's packed form: only where this deployment
/// packs (`keys.rs`); elsewhere a client's hand-made one is read as sent (and refused).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Packed {
    Read,
    Plain,
}

/// A call with its options moved into argv[1] (`packed`): the packed argument replaces
/// argv[1..1 + `leading`]; the arguments from `trailing` on are dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packing {
    pub arg: Vec<u8>,
    pub leading: usize,
    pub trailing: usize,
}

/// Packs `args` into one argument.
pub(super) fn encode<A: AsRef<[u8]>>(args: &[A]) -> Vec<u8> {
    let size = args.iter().map(|a| a.as_ref().len() + 8).sum::<usize>();
    let mut packed = Vec::with_capacity(1 + size);
    packed.push(MARK);
    for arg in args {
        let arg = arg.as_ref();
        packed.extend_from_slice(arg.len().to_string().as_bytes());
        packed.push(b':');
        packed.extend_from_slice(arg);
    }
    packed
}

/// The arguments packed into `arg`, if it is a packed argument.
pub(super) fn decode(arg: &[u8]) -> Option<Vec<&[u8]>> {
    let mut rest = arg.strip_prefix(&[MARK])?;
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
        let packed = encode(&args);
        assert_eq!(packed, b"\x002:NX2:PX0:6:6 0:0\x00");
        assert_eq!(decode(&packed), Some(args.to_vec()));
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
            assert_eq!(decode(arg), None, "{arg:?}");
        }
    }
}
