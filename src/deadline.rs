//! The deadline of one call: a relative expiry takes effect once, at the first key written, from
//! the command's clock; then one absolute deadline ([`Resolved`]) serves the rest.

use crate::ffi::Word;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiry {
    /// `EX` / `PX`: milliseconds from the command's clock (> 0, the deadline fits an i64 clock).
    In(i64),
    /// `EXAT` / `PXAT`: this unix time in milliseconds (may be past).
    At(i64),
    /// `KEEPTTL` (NUMKEYS): every key keeps the TTL it has.
    Keep,
    /// No expiry option (NUMKEYS): keys end without a TTL, as with MSET.
    Persist,
}

/// An expiry with its deadline known: what keys, replicas and the AOF get.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolved {
    At(i64),
    Keep,
    Persist,
}

impl Expiry {
    /// The absolute form, once known (all but a relative TTL before the first key).
    pub fn resolved(self) -> Option<Resolved> {
        match self {
            Expiry::In(_) => None,
            Expiry::At(deadline) => Some(Resolved::At(deadline)),
            Expiry::Keep => Some(Resolved::Keep),
            Expiry::Persist => Some(Resolved::Persist),
        }
    }

    /// A relative TTL took effect at `at`, which serves from now on.
    pub fn took_effect(&mut self, at: i64) {
        if let Expiry::In(_) = self {
            *self = Expiry::At(at);
        }
    }
}

impl From<Resolved> for Expiry {
    fn from(resolved: Resolved) -> Expiry {
        match resolved {
            Resolved::At(deadline) => Expiry::At(deadline),
            Resolved::Keep => Expiry::Keep,
            Resolved::Persist => Expiry::Persist,
        }
    }
}

/// `expiry` as SET's and the built-in's options after the pairs (the inverse of the NUMKEYS form's
/// options: round-trip property test).
pub fn options(expiry: Expiry) -> Vec<Word> {
    match expiry {
        Expiry::At(at) => vec![Word::Text(b"PXAT"), Word::Number(at)],
        Expiry::In(ms) => vec![Word::Text(b"PX"), Word::Number(ms)],
        Expiry::Keep => vec![Word::Text(b"KEEPTTL")],
        Expiry::Persist => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replication::apply;
    use crate::syntax::Syntax;
    use proptest::prelude::*;

    fn text(words: &[Word]) -> Vec<Vec<u8>> {
        words
            .iter()
            .map(|word| match word {
                Word::Text(text) => text.to_vec(),
                Word::Number(n) => n.to_string().into_bytes(),
            })
            .collect()
    }

    fn resolved() -> impl Strategy<Value = Resolved> {
        prop_oneof![
            (1i64..=i64::MAX).prop_map(Resolved::At),
            Just(Resolved::Keep),
            Just(Resolved::Persist),
        ]
    }

    proptest! {
        /// What the module sends reads back as what it meant: the apply
        /// form through `<name>.apply`'s parser, the options through the
        /// NUMKEYS form's (the built-in's grammar, SET's options).
        #[test]
        fn words_are_the_inverse_of_the_parsers(resolved in resolved()) {
            let expiry = Expiry::from(resolved);
            let mut call = vec![b"m.apply".to_vec()];
            call.extend(text(&apply::words(resolved)));
            call.extend([b"k".to_vec(), b"v".to_vec()]);
            prop_assert_eq!(apply::parse(&call).map(|r| r.expiry), Ok(expiry));
            let mut call = vec![b"msetex".to_vec(), b"1".to_vec(), b"k".to_vec(), b"v".to_vec()];
            call.extend(text(&options(expiry)));
            prop_assert_eq!(Syntax::Numkeys.parse(&call, 0).map(|r| r.expiry), Ok(expiry));
        }
    }

    #[test]
    fn a_relative_ttl_is_resolved_once() {
        let mut deadline = Expiry::In(5000);
        assert_eq!(deadline.resolved(), None);
        deadline.took_effect(1_700_000_005_000);
        assert_eq!(deadline.resolved(), Some(Resolved::At(1_700_000_005_000)));
        deadline.took_effect(1);
        assert_eq!(deadline, Expiry::At(1_700_000_005_000));
        let mut kept = Expiry::Keep;
        kept.took_effect(7);
        assert_eq!(kept.resolved(), Some(Resolved::Keep));
    }
}
