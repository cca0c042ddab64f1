//! The two syntaxes of MSETEX (`SYNTAX TTL | NUMKEYS`), told apart only here; pure and
//! property-tested (`tests.rs`).

use std::ffi::CStr;

use crate::docs::{Docs, KeyDocs, KeySpec};

mod numkeys;
mod options;
mod ttl;

pub use options::{
    is_i64, parse_i64, Ack, Condition, ParseError, Request, ACL_CATEGORIES, ARITY, DATA,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    Ttl,
    Numkeys,
}

impl Syntax {
    /// Validates a whole call as sent (with the command name); `now_ms` only checks that a relative
    /// TTL does not overflow.
    pub fn parse<A: AsRef<[u8]>>(self, argv: &[A], now_ms: i64) -> Result<Request, ParseError> {
        match self {
            Syntax::Ttl => ttl::parse(argv, now_ms),
            Syntax::Numkeys => numkeys::parse(argv, now_ms),
        }
    }

    /// COMMAND DOCS and COMMAND INFO, the keys where `keys` says.
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

    /// `INFO msetex`'s `syntax` (upper case: the load argument).
    pub fn label(self) -> &'static CStr {
        match self {
            Syntax::Ttl => c"ttl",
            Syntax::Numkeys => c"numkeys",
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
