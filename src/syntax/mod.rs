//! The two syntaxes of MSETEX (load argument `SYNTAX TTL | NUMKEYS`), told apart only here: each
//! one's grammar in `ttl.rs`, `numkeys.rs`, what they share in `options.rs`, the filter's packed
//! form in `packed.rs`. Pure, property-tested without a server (`tests.rs`).

use std::ffi::CStr;

use crate::docs::{Docs, KeyDocs};

mod numkeys;
mod options;
mod packed;
mod ttl;

pub use options::{parse_i64, Ack, Condition, ParseError, Request, ACL_CATEGORIES, ARITY, DATA};
pub use packed::{Packed, Packing};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// The default.
    Ttl,
    Numkeys,
}

impl Syntax {
    /// Validates a whole call, `argv` with the command name; `now_ms` (unix ms) only checks that
    /// a relative TTL does not overflow. A packed call reads as the original.
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
                // The filter packs only options: every pair follows the packed argument. Anything
                // else (a hand-made one that holds keys, a numkeys beyond the pairs) is refused.
                if request.pairs != (2 + shift..argv.len() + shift) {
                    return Err(ParseError::Syntax);
                }
                let pairs = 2..argv.len();
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

    /// COMMAND DOCS and COMMAND INFO, the keys where `keys` says (`keys.rs`); the NUMKEYS form
    /// carries the built-in's tips.
    pub fn docs(self, keys: KeyDocs) -> Docs {
        let (summary, since, args, tips) = match self {
            Syntax::Ttl => (ttl::SUMMARY, c"1.0.0", ttl::ARGS, None),
            Syntax::Numkeys => (
                numkeys::SUMMARY,
                c"2.0.0",
                numkeys::ARGS,
                Some(numkeys::TIPS),
            ),
        };
        Docs {
            summary,
            complexity: c"O(N) where N is the number of keys to set.",
            since,
            args,
            keys,
            arity: ARITY,
            tips,
        }
    }

    /// `ttl` or `numkeys` (`INFO msetex`; in upper case, the load argument).
    pub fn label(self) -> &'static CStr {
        match self {
            Syntax::Ttl => c"ttl",
            Syntax::Numkeys => c"numkeys",
        }
    }
}

#[cfg(test)]
mod tests;
