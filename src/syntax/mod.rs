//! The two syntaxes of MSETEX (load argument `SYNTAX TTL | NUMKEYS`), told apart only here:
//! ```text
//! SYNTAX TTL      MSETEX [NX | XX] [EX | PX | EXAT | PXAT] time key value [key value ...]
//! SYNTAX NUMKEYS  MSETEX numkeys key value [key value ...] [NX | XX]
//!                        [EX seconds | PX ms | EXAT unix-s | PXAT unix-ms | KEEPTTL]
//! ```
//! Per syntax (grammar, pair positions, key specs, COMMAND DOCS): `ttl.rs`, `numkeys.rs`; shared
//! ([`Request`], errors, options, integers): `options.rs`; options moved out of the keys' way:
//! `packed.rs`. Pure functions over byte slices, no
//! allocation except for a packed call, so unit- and property-tested without a server.

use std::ffi::CStr;
use std::ops::Range;

use crate::docs::{Docs, KeyDocs};

mod numkeys;
mod options;
mod packed;
mod ttl;

pub use options::{parse_i64, Ack, Condition, ParseError, Request, ACL_CATEGORIES, ARITY, DATA};

/// Which syntax the module was loaded with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// The default.
    Ttl,
    Numkeys,
}

/// Whether a call's argv[1] may be the command filter's packed form: only where this deployment
/// packs (`keys.rs`). Elsewhere the server read the keys from the call as sent, so a
/// client's hand-made packed argument is read as it is (and refused).
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

impl Syntax {
    /// Validates a whole call. `argv` (argument views, or the tests' byte slices) includes the
    /// command name; `now_ms` (server clock, unix ms) only checks that a relative TTL does not
    /// overflow. A packed call reads as the original, its pairs where they now are.
    pub fn parse<A: AsRef<[u8]>>(
        self,
        argv: &[A],
        now_ms: i64,
        packed: Packed,
    ) -> Result<Request, ParseError> {
        let unpacked = match packed {
            Packed::Read => self.unpacked(argv),
            Packed::Plain => None,
        };
        match unpacked {
            Some((original, shift)) => {
                let request = self.parse_plain(&original, now_ms)?;
                // The filter packs only options: every pair follows the packed argument, where
                // the server read the keys. Anything else (a hand-made packed argument that
                // holds keys, or a numkeys beyond the pairs) is refused.
                let pairs = shifted(request.pairs.clone(), shift)
                    .filter(|pairs| *pairs == (2..argv.len()))
                    .ok_or(ParseError::Syntax)?;
                Ok(Request { pairs, ..request })
            }
            None => self.parse_plain(argv, now_ms),
        }
    }

    fn parse_plain<A: AsRef<[u8]>>(self, argv: &[A], now_ms: i64) -> Result<Request, ParseError> {
        match self {
            Syntax::Ttl => ttl::parse(argv, now_ms),
            Syntax::Numkeys => numkeys::parse(argv, now_ms),
        }
    }

    /// The call with its options moved into argv[1] so keys sit at 2, 4, ...; `None` if they do (or
    /// it is too malformed). TTL: leading options and time; NUMKEYS: numkeys and trailing options.
    pub fn pack<A: AsRef<[u8]>>(self, argv: &[A]) -> Option<Packing> {
        match self {
            Syntax::Ttl => ttl::pack(argv),
            Syntax::Numkeys => numkeys::pack(argv),
        }
    }

    /// The original of a packed call, and how far its pairs moved (TTL form: they follow the
    /// packed arguments; NUMKEYS form: they follow numkeys in both).
    fn unpacked<A: AsRef<[u8]>>(self, argv: &[A]) -> Option<(Vec<&[u8]>, usize)> {
        let (name, rest) = argv.split_first()?;
        let (first, pairs) = rest.split_first()?;
        let moved = packed::decode(first.as_ref())?;
        let pairs = pairs.iter().map(AsRef::as_ref);
        let mut original = Vec::with_capacity(argv.len() + moved.len());
        original.push(name.as_ref());
        let shift = match self {
            Syntax::Ttl => {
                let shift = moved.len().saturating_sub(1);
                original.extend(moved);
                original.extend(pairs);
                shift
            }
            Syntax::Numkeys => {
                let (numkeys, options) = moved.split_first()?;
                original.push(numkeys);
                original.extend(pairs);
                original.extend(options);
                0
            }
        };
        Some((original, shift))
    }

    /// COMMAND DOCS and COMMAND INFO, the keys where `keys` says (`keys.rs`).
    pub fn docs(self, keys: KeyDocs) -> Docs {
        match self {
            Syntax::Ttl => ttl::docs(keys),
            Syntax::Numkeys => numkeys::docs(keys),
        }
    }

    /// `ttl` or `numkeys` (`INFO msetex`; in upper case, the load argument).
    pub fn label(self) -> &'static CStr {
        match self {
            Syntax::Ttl => c"ttl",
            Syntax::Numkeys => c"numkeys",
        }
    }

    /// The syntax a `SYNTAX` load argument names (any case).
    pub fn named(value: &str) -> Option<Syntax> {
        [Syntax::Ttl, Syntax::Numkeys]
            .into_iter()
            .find(|syntax| value.eq_ignore_ascii_case(&syntax.label().to_string_lossy()))
    }

    /// Whether errors follow SET's wording (TTL form) rather than the built-in's (NUMKEYS form).
    pub fn follows_set_errors(self) -> bool {
        self == Syntax::Ttl
    }
}

/// `pairs` of an unpacked call where they are in the packed one (after its argument), or `None`.
fn shifted(pairs: Range<usize>, shift: usize) -> Option<Range<usize>> {
    let start = pairs.start.checked_sub(shift).filter(|start| *start >= 2)?;
    Some(start..pairs.end.checked_sub(shift)?)
}

#[cfg(test)]
mod tests;
