//! The two syntaxes of MSETEX, chosen when the module loads (`SYNTAX TTL |
//! NUMKEYS`), and everything that differs between them; this is the only
//! place that tells them apart:
//!
//! ```text
//! SYNTAX TTL      MSETEX [NX | XX] [EX | PX | EXAT | PXAT] time key value [key value ...]
//! SYNTAX NUMKEYS  MSETEX numkeys key value [key value ...] [NX | XX]
//!                        [EX seconds | PX ms | EXAT unix-s | PXAT unix-ms | KEEPTTL]
//! ```
//!
//! Each syntax's grammar, the positions of its pairs, its key
//! specification and COMMAND DOCS, how it is replicated and what it is
//! called: `ttl.rs`, `numkeys.rs`; what they share (the validated
//! [`Request`], errors, options, integers): `options.rs`; the module's own
//! replication command, which serves both: `apply.rs`.
//!
//! Pure functions over byte slices: no Redis types, and no allocation when
//! a call is parsed (packing the TTL form's options, in the command filter,
//! builds one argument), so the grammars are unit- and property-tested
//! without a server.

use std::ffi::CStr;
use std::ops::Range;

use crate::ffi::docs::Docs;
#[cfg(doc)]
use crate::server::KeysDeclared;

pub mod apply;
mod numkeys;
mod options;
mod ttl;

pub use options::{
    parse_i64, Ack, Condition, Expiry, ParseError, Request, Resolved, ACL_CATEGORIES,
};
pub use ttl::pack_options;

/// Which syntax the module was loaded with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// `MSETEX [NX|XX] [EX|PX|EXAT|PXAT] time key value ...` (the default).
    Ttl,
    /// `MSETEX numkeys key value ... [NX|XX] [EX|PX|EXAT|PXAT t|KEEPTTL]`.
    Numkeys,
}

/// How a call is replicated in `REPLICATE MSETEX` mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplicatedForm {
    /// `<name>.apply <deadline | KEEPTTL | PERSIST> key value ...`: the
    /// module's own replication command (`apply`).
    Apply,
    /// `msetex numkeys key value ... [PXAT ms | KEEPTTL]`: the built-in's
    /// own form, which Redis 8.4+ / Valkey 9.1+ replicas run natively.
    Builtin,
}

/// Why the server could not have learned a call's keys exactly where keys
/// are declared by key specifications only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Undeclared {
    /// The TTL form's options moved the keys.
    TtlOptions,
    /// The NUMKEYS form on a server that cannot read its keynum spec.
    Numkeys,
}

impl Syntax {
    /// Validates a whole call. `argv` (any byte strings: the module passes
    /// its argument views, the tests byte slices) includes the command name
    /// at index 0; `now_ms` is the server's clock (unix milliseconds), used
    /// only to check that a relative TTL does not overflow.
    pub fn parse<A: AsRef<[u8]>>(self, argv: &[A], now_ms: i64) -> Result<Request, ParseError> {
        match self {
            Syntax::Ttl => ttl::parse(argv, now_ms),
            Syntax::Numkeys => numkeys::parse(argv, now_ms),
        }
    }

    /// Where the key/value pairs are, which is all the server needs to
    /// learn where the keys are (cluster slots, ACLs, COMMAND GETKEYS).
    /// `None` when the shape of the call is invalid: it declares no keys
    /// and fails when it runs.
    pub fn pair_range<A: AsRef<[u8]>>(self, argv: &[A]) -> Option<Range<usize>> {
        match self {
            Syntax::Ttl => ttl::pair_range(argv),
            Syntax::Numkeys => numkeys::pairs(argv).ok(),
        }
    }

    /// What COMMAND DOCS and COMMAND INFO say. `by_specs`: the key spec
    /// alone must describe the keys (no getkeys callback); `keynum_steps`:
    /// the server reads a keynum spec with a step (Redis 8.4+, Valkey 9.1+).
    pub fn docs(self, by_specs: bool, keynum_steps: bool) -> Docs {
        match self {
            Syntax::Ttl => ttl::docs(by_specs),
            Syntax::Numkeys => numkeys::docs(by_specs, keynum_steps),
        }
    }

    /// Its name: `ttl` or `numkeys` (`INFO msetex`, and in upper case the
    /// load argument).
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

    /// True for the syntax of the built-in MSETEX (Redis 8.4+, Valkey 9.1+).
    pub fn is_builtins(self) -> bool {
        self == Syntax::Numkeys
    }

    /// How REPLICATE MSETEX sends a call: the built-in's own form where it
    /// is the built-in's syntax under the built-in's name, else the module's
    /// replication command.
    pub fn replicated_form(self, default_name: bool) -> ReplicatedForm {
        if self.is_builtins() && default_name {
            ReplicatedForm::Builtin
        } else {
            ReplicatedForm::Apply
        }
    }

    /// Where keys are declared by key specifications only: whether the
    /// server read this call's keys exactly (`Ok`), or why not. `cluster`:
    /// cluster routing reads keys the legacy way, which cannot express a
    /// keynum spec; `keynum_steps`: before Redis 8.4 / Valkey 9.1 a keynum
    /// spec with a step reads as half the keys.
    pub fn keys_declared(
        self,
        request: &Request,
        cluster: bool,
        keynum_steps: bool,
    ) -> Result<(), Undeclared> {
        match self {
            Syntax::Ttl if request.pairs.start != 2 => Err(Undeclared::TtlOptions),
            Syntax::Numkeys if cluster || !keynum_steps => Err(Undeclared::Numkeys),
            _ => Ok(()),
        }
    }

    /// True when the command filter must rewrite calls with options before
    /// the server reads keys from the key spec (`command::rewrite`).
    pub fn has_leading_options(self) -> bool {
        self == Syntax::Ttl
    }

    /// Redis 6.2's SET words a bad TTL `invalid expire time in set` (no
    /// quotes); the TTL form follows SET, the NUMKEYS form the built-in.
    pub fn follows_set_errors(self) -> bool {
        self == Syntax::Ttl
    }

    /// What the log says where keys are declared by key specs only.
    pub fn by_specs_note(self, options_refused: bool) -> &'static str {
        match (self, options_refused) {
            (Syntax::Ttl, true) => {
                "the TTL form's options are refused (in cluster mode with io-threads, this \
                 server routes a call by keys it reads before any module)"
            }
            (Syntax::Ttl, false) => {
                "a command filter packs the TTL form's options into one argument before the \
                 server reads the keys (MONITOR and SLOWLOG show that form)"
            }
            (Syntax::Numkeys, _) => {
                "where the server cannot read them from the key spec (cluster mode, or \
                 before Redis 8.4 / Valkey 9.1) every call is refused"
            }
        }
    }
}

#[cfg(test)]
mod tests;
