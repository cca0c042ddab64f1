//! The two syntaxes of MSETEX (load argument `SYNTAX TTL | NUMKEYS`), told apart only here: each
//! one's grammar in `ttl.rs`, `numkeys.rs`, what they share in `options.rs`, the filter's packed
//! form in `packed.rs`. Pure, property-tested without a server (`tests.rs`).

use std::ffi::CStr;
use std::ops::Range;

use crate::docs::{Docs, KeyDocs, KeySpec};

mod numkeys;
mod options;
mod packed;
mod ttl;

pub use options::{
    is_i64, parse_i64, Ack, Condition, Layout, ParseError, Request, ACL_CATEGORIES, ARITY, DATA,
};
pub use packed::{Packed, Packing};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// The default.
    Ttl,
    Numkeys,
}

impl Syntax {
    /// Validates a whole call, `argv` with the command name; `now_ms` (unix ms) only checks that
    /// a relative TTL does not overflow. A call packed as `packed` says reads as the original.
    pub fn parse<A: AsRef<[u8]>>(
        self,
        argv: &[A],
        now_ms: i64,
        packed: Packed,
    ) -> Result<Request, ParseError> {
        let Some((original, pairs)) = self.unpacked(argv, packed) else {
            return self.parse_plain(argv, now_ms);
        };
        let request = self.parse_plain(&original, now_ms)?;
        // The filter packs only options (and values): every key follows the packed argument.
        // Anything else (a hand-made one that holds keys, a numkeys beyond the pairs) is refused.
        if request.pairs != pairs {
            return Err(ParseError::Syntax);
        }
        let layout = match packed {
            Packed::AllButKeys => Layout::KeysOnly,
            Packed::Options | Packed::Plain => Layout::Pairs,
        };
        Ok(Request {
            pairs: 2..argv.len(),
            layout,
            ..request
        })
    }

    fn parse_plain<A: AsRef<[u8]>>(self, argv: &[A], now_ms: i64) -> Result<Request, ParseError> {
        match self {
            Syntax::Ttl => ttl::parse(argv, now_ms),
            Syntax::Numkeys => numkeys::parse(argv, now_ms),
        }
    }

    /// The call with arguments moved into argv[1] as `form` packs them: the options (TTL:
    /// leading options and time; NUMKEYS: numkeys and trailing options), and for `AllButKeys`
    /// the values; `None` if nothing needs moving (or the call is too malformed to).
    pub fn pack<A: AsRef<[u8]>>(self, argv: &[A], form: Packed) -> Option<Packing> {
        match self {
            Syntax::Ttl => ttl::pack(argv, form),
            Syntax::Numkeys => numkeys::pack(argv, form),
        }
    }

    /// The original of a call packed as `form`, and where its pairs are in it.
    fn unpacked<A: AsRef<[u8]>>(
        self,
        argv: &[A],
        form: Packed,
    ) -> Option<(Vec<&[u8]>, Range<usize>)> {
        let (name, rest) = argv.split_first()?;
        let (first, after) = rest.split_first()?;
        let mut moved = packed::decode(form, first.as_ref())?;
        let after = after.iter().map(AsRef::as_ref);
        // AllButKeys: the values are the last arguments moved, one for each key after them.
        let values = match form {
            Packed::AllButKeys => {
                let keys = argv.len() - 2;
                let split = moved.len().checked_sub(keys).filter(|_| keys > 0)?;
                moved.split_off(split)
            }
            Packed::Options | Packed::Plain => Vec::new(),
        };
        let pairs: Vec<&[u8]> = if values.is_empty() {
            after.collect()
        } else {
            after
                .zip(values)
                .flat_map(|(key, value)| [key, value])
                .collect()
        };
        let mut original = Vec::with_capacity(1 + moved.len() + pairs.len());
        original.push(name.as_ref());
        let start = match self {
            Syntax::Ttl => {
                original.extend(&moved);
                original.len()
            }
            Syntax::Numkeys => {
                original.push(moved.first()?);
                2
            }
        };
        let end = start + pairs.len();
        original.extend(pairs);
        if self == Syntax::Numkeys {
            original.extend(moved.get(1..)?);
        }
        Some((original, start..end))
    }

    /// The values of a call packed `AllButKeys`, in the order of its keys (argv[2..]).
    pub fn packed_values<A: AsRef<[u8]>>(self, argv: &[A]) -> Option<Vec<&[u8]>> {
        let moved = packed::decode(Packed::AllButKeys, argv.get(1)?.as_ref())?;
        let keys = argv.len().checked_sub(2)?;
        moved
            .get(moved.len().checked_sub(keys)?..)
            .map(<[&[u8]]>::to_vec)
    }

    /// COMMAND DOCS and COMMAND INFO, the keys where `keys` says (`keys.rs`); the NUMKEYS form
    /// carries the built-in's tips where its keys are a keynum spec.
    pub fn docs(self, keys: KeyDocs) -> Docs {
        let (summary, since, args) = match self {
            Syntax::Ttl => (ttl::SUMMARY, c"1.0.0", ttl::ARGS),
            Syntax::Numkeys => (numkeys::SUMMARY, c"2.0.0", numkeys::ARGS),
        };
        // Only beside a keynum spec (COMMAND shows no key range): a client that honours
        // `multi_shard` splits a call by the key range it reads, options included.
        let keynum = matches!(keys.spec, KeySpec::Keynum { .. });
        let tips = (self == Syntax::Numkeys && keynum).then_some(numkeys::TIPS);
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
