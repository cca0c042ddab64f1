//! Where a call's keys are, and how the server learns them (DESIGN.md, "Where the keys are"); the
//! filter's rewrite and the load's check are in `rewrite.rs`.

use std::ffi::CStr;

use crate::docs::{pairs_from_2, KeyDocs, KeySpec};
use crate::ffi::KeyPositions;
use crate::outcome::Refusal;
use crate::server::{KeynumStep, Profile, Routing};
use crate::syntax::{Request, Syntax, ARITY};

mod rewrite;

/// The keyword after which a marked call's keys are (`Reading::Marked`); no option, time or
/// numkeys is.
pub const MARK: &CStr = c"\x01keys\x01";

/// How the server reads a call's keys, decided once per load (DESIGN.md's table).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// The server asks the module (`getkeys-api`), where no I/O thread asks and key specs cannot
    /// do as well.
    Callback,
    /// The NUMKEYS form's keynum spec, which the server said it reads with its step.
    Keynum,
    /// The filter marks every call, `<name> MARK key value ... <the rest packed>`, and a key spec
    /// finds the keys after the mark (Redis).
    Marked,
    /// The filter moves every argument but the keys into argument 1, and keys go from 2 to the end:
    /// Valkey routes by the legacy key range in cluster mode.
    KeysOnly,
    /// The filter moves every argument but the pairs into argument 1 (a call whose pairs run from
    /// argument 2 to the end is left as sent), and keys go from 2 to the end, every second: Redis
    /// 8.2+ outside cluster mode, which reads keys again after the filter.
    Range,
}

impl Reading {
    fn decide(syntax: Syntax, profile: &Profile) -> Reading {
        let keynum = syntax == Syntax::Numkeys && profile.keynum_step == KeynumStep::Read;
        if !profile.key_specs {
            return Reading::Callback;
        }
        if profile.cluster {
            return match (profile.keys_on_io_threads, profile.routing) {
                (false, _) => Reading::Callback,
                (true, Routing::LegacyRangeAfterFilters) => Reading::KeysOnly,
                (true, Routing::KeysReadBeforeFilters) if keynum => Reading::Keynum,
                (true, Routing::KeysReadBeforeFilters) => Reading::Marked,
            };
        }
        if keynum {
            Reading::Keynum
        } else if profile.keys_read_with_every_call || profile.keys_on_io_threads {
            // Read before the filter too: a range costs that read little, where a mark, which a
            // call as sent lacks, is compared with every argument.
            Reading::Range
        } else {
            Reading::Callback
        }
    }

    pub fn label(self) -> &'static CStr {
        match self {
            Reading::Callback => c"callback",
            Reading::Keynum => c"keynum_spec",
            Reading::Marked => c"marked",
            Reading::KeysOnly => c"keys_only",
            Reading::Range => c"range",
        }
    }
}

/// A call read: its request, and the token of the values the filter holds for it
/// (`Reading::KeysOnly`, whose request's pairs are then its keys alone).
pub type Read = Result<(Request, Option<u64>), Refusal>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keys {
    pub syntax: Syntax,
    pub reading: Reading,
    /// The server's answer about the keynum step (the NUMKEYS spec is complete only on `Read`).
    pub step: KeynumStep,
    /// Cluster mode, where a marked call that holds the mark is refused.
    pub cluster: bool,
}

impl Keys {
    pub fn new(syntax: Syntax, profile: &Profile) -> Keys {
        Keys {
            syntax,
            reading: Reading::decide(syntax, profile),
            step: profile.keynum_step,
            cluster: profile.cluster,
        }
    }

    pub fn rewrites(&self) -> bool {
        matches!(
            self.reading,
            Reading::Marked | Reading::KeysOnly | Reading::Range
        )
    }

    /// Whether the command filter rewrites calls: every call, or beside a complete keynum spec,
    /// calls the command refuses (whose keys would route them: CROSSSLOT before its own error).
    pub fn filters(&self) -> bool {
        self.rewrites() || self.keynum_complete()
    }

    fn keynum_complete(&self) -> bool {
        let spec = self.docs().spec;
        matches!(spec, KeySpec::Keynum { incomplete, .. } if !incomplete)
    }

    /// A getkeys callback only where the server may call it.
    pub fn flags(&self) -> &'static CStr {
        match self.reading {
            Reading::Callback => c"write deny-oom getkeys-api",
            _ => c"write deny-oom",
        }
    }

    /// The arity: the form's, but -2 for `KeysOnly` and `Range` (so a refused `<name> <refused>`
    /// has no keys).
    pub fn arity(&self) -> i32 {
        match self.reading {
            Reading::KeysOnly | Reading::Range => -2,
            _ => ARITY,
        }
    }

    /// MSETEX's key specs: of each call as sent, or of the call after the filter and a second one
    /// telling clients to ask COMMAND GETKEYS (DESIGN.md, "What clients see").
    pub fn docs(&self) -> KeyDocs {
        let keynum = |incomplete| KeyDocs {
            spec: KeySpec::Keynum {
                index: 1,
                step: 2,
                incomplete,
            },
            notes: None,
            legacy: (0, 0, 0),
            ask_getkeys: false,
        };
        match (self.reading, self.syntax) {
            (Reading::Callback, Syntax::Ttl) => {
                pairs_from_2(true, false, c"Keys follow the options and the time.")
            }
            (Reading::Callback, Syntax::Numkeys) => keynum(self.step != KeynumStep::Read),
            (Reading::Keynum, _) => keynum(false),
            (Reading::Marked, _) => KeyDocs {
                spec: KeySpec::AfterKeyword {
                    keyword: MARK,
                    last: -2,
                    step: 2,
                },
                notes: Some(
                    c"Keys after the mark the module's command filter puts in argument 1, the \
                      rest of the call packed into the last; for a call as sent, ask COMMAND \
                      GETKEYS.",
                ),
                legacy: (0, 0, 0),
                ask_getkeys: true,
            },
            (Reading::Range, _) => KeyDocs {
                spec: KeySpec::Range {
                    first: 2,
                    last: -1,
                    step: 2,
                    incomplete: false,
                },
                notes: Some(
                    c"Keys from 2, every second, once the module's command filter moved the \
                      arguments before and after the pairs into argument 1; for a call as sent, \
                      ask COMMAND GETKEYS.",
                ),
                legacy: (0, 0, 0),
                ask_getkeys: true,
            },
            (Reading::KeysOnly, _) => KeyDocs {
                spec: KeySpec::Range {
                    first: 2,
                    last: -1,
                    step: 1,
                    incomplete: false,
                },
                notes: Some(
                    c"Keys from 2 once the module's command filter moved every other argument \
                      into argument 1; for a call as sent, ask COMMAND GETKEYS.",
                ),
                legacy: (2, -1, 1),
                ask_getkeys: true,
            },
        }
    }

    /// The load's line on how the server learns a call's keys (`io_threads_assumed`: io-threads
    /// could not be read, and taken as above 1 decided it).
    pub fn load_note(&self, io_threads_assumed: bool) -> String {
        let how = match self.reading {
            Reading::Callback => {
                "the server asks this module for each call's keys (getkeys callback)"
            }
            Reading::Keynum => {
                "the server reads them from the keynum key specification, with its step, as it \
                 said (COMMAND GETKEYS); a command filter rewrites only a call the command refuses"
            }
            Reading::Marked => {
                "the server reads them from a key specification, after this module's command \
                 filter put a mark before the keys and packed the rest of the call into one \
                 argument (MONITOR and SLOWLOG show that form); COMMAND INFO tells clients to ask \
                 COMMAND GETKEYS"
            }
            Reading::Range => {
                "the server reads them from a key range (from 2, every second), after this \
                 module's command filter moved the options, time or numkeys of a call with options \
                 into one argument before the pairs (MONITOR and SLOWLOG show that form); COMMAND \
                 INFO tells clients to ask COMMAND GETKEYS"
            }
            Reading::KeysOnly => {
                "Valkey reads them on I/O threads from the legacy key range: this module's \
                 command filter moves every argument but the keys into one argument (MONITOR and \
                 SLOWLOG show that form); COMMAND INFO tells clients to ask COMMAND GETKEYS"
            }
        };
        let threads = " (io-threads could not be read, CONFIG renamed?, so taken as above 1)";
        let threads = if io_threads_assumed { threads } else { "" };
        let step = match (self.syntax, self.step) {
            (Syntax::Ttl, _) | (_, KeynumStep::Read) => "",
            (Syntax::Numkeys, KeynumStep::NotRead) => {
                "; the keynum specification is not used as complete: COMMAND GETKEYS of this \
                 server's MSETEX read only the first half of its keys (redis/redis#14657)"
            }
            (Syntax::Numkeys, KeynumStep::NotAsked) => {
                "; the keynum specification is not used as complete: no built-in MSETEX could be \
                 asked whether the server reads its step (none, or MSETEX or COMMAND renamed away)"
            }
        };
        format!("keys: {how}{threads}{step}")
    }

    /// Validates a call as the server passes it (as the filter rewrote it). Unless `trusted`
    /// (replication, AOF), a call that skipped a rewriting filter (a Valkey script's) is refused:
    /// its keys were unread.
    pub fn read<A: AsRef<[u8]>>(&self, argv: &[A], now_ms: i64, trusted: bool) -> Read {
        if self.filters() {
            if let Some(read) = rewrite::unpack(argv, self.reading, self.syntax, now_ms) {
                return read;
            }
        }
        let request = self.syntax.parse(argv, now_ms).map_err(Refusal::Parse)?;
        // The range reads a call whose pairs run from argument 2 to the end as sent.
        let as_sent = self.reading == Reading::Range && request.pairs == (2..argv.len());
        if trusted || as_sent || !self.rewrites() {
            Ok((request, None))
        } else {
            Err(Refusal::Undeclared)
        }
    }

    /// Answers the server's "where are the keys" call; a call the command refuses (parsed with
    /// the server's clock, as the command does) declares none, so gets its own error.
    pub fn declare<A: AsRef<[u8]>>(&self, positions: &KeyPositions, args: &[A]) {
        if let Ok(request) = self.syntax.parse(args, positions.now_ms()) {
            let end = request.pairs.end.min(args.len());
            positions.keys_at((request.pairs.start..end).step_by(2));
        }
    }
}

#[cfg(test)]
mod tests;
