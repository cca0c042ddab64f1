//! How a failed call ends, and every error text: a [`Refusal`] before the first write, in the
//! server's own words (SET's or the built-in's), or an [`Abort`] once a module API call failed.

use crate::server::Profile;
use crate::syntax::{ParseError, Syntax};

/// Why a call was refused before anything was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    Parse(ParseError),
    /// Keys declared by key specs only, and this call's options stood among them, unmoved.
    Undeclared,
    /// Redis 7.0: the user may not write these keys with MSET, or one of them with SET (`acl`).
    NoCapability,
    ApplyFromClient,
    /// Options among the keys where the server routes before any filter (`MovedKeys::Refused`).
    Unroutable,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    Refused(Refusal),
    Aborted(Abort),
}

impl From<Refusal> for Failure {
    fn from(refusal: Refusal) -> Failure {
        Failure::Refused(refusal)
    }
}

impl From<ParseError> for Failure {
    fn from(error: ParseError) -> Failure {
        Failure::Refused(Refusal::Parse(error))
    }
}

impl From<Abort> for Failure {
    fn from(abort: Abort) -> Failure {
        Failure::Aborted(abort)
    }
}

/// The step at which a call stopped once writing had begun.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Abort(pub &'static str);

impl Refusal {
    /// The error reply of command `name`, loaded with `syntax`, in this server's words.
    pub fn text(self, name: &str, syntax: Syntax, profile: &Profile) -> String {
        match self {
            Refusal::Parse(error) => parse_error_text(error, name, syntax, profile),
            Refusal::Undeclared => format!(
                "ERR {name}: this server reads command keys from key specifications only \
                 (io-threads > 1, or Valkey in cluster mode), and this call's options stand among \
                 its keys where no command filter moved them (scripts and module calls of some \
                 servers skip it): send the call without options there{}",
                match syntax {
                    Syntax::Ttl => format!(" ({name} seconds key value ...)"),
                    Syntax::Numkeys => String::new(),
                }
            ),
            Refusal::NoCapability => format!(
                "NOPERM this user has no permissions to run the '{name}' command with these \
                 keys: on Redis 7.0, {name} also needs MSET on these keys and SET on each"
            ),
            Refusal::ApplyFromClient => format!(
                "ERR {name}.apply only applies what MSETEX replicated (on replicas, while the \
                 AOF loads, on the node a slot migrates to): call {name}"
            ),
            Refusal::Unroutable => format!("ERR {}", self.short_text(name)),
        }
    }

    /// The refusal as the filter gives it, as an unknown command's name: at most 128 bytes (the
    /// server cuts the name there), only where the filter refuses.
    pub fn short_text(self, name: &str) -> String {
        let mut text = match self {
            Refusal::Unroutable => format!(
                "{name}: options cannot be routed in cluster mode with io-threads > 1; send the \
                 call without options"
            ),
            _ => format!(
                "{name} takes the TTL first; this call has the numkeys form: load the module \
                 with SYNTAX NUMKEYS"
            ),
        };
        while text.len() > 128 {
            text.pop();
        }
        text
    }
}

impl Abort {
    pub fn text(self) -> String {
        format!("ERR msetex failed to {}", self.0)
    }
}

/// An invalid call's error text, as the server words it (Valkey words two differently).
fn parse_error_text(error: ParseError, name: &str, syntax: Syntax, profile: &Profile) -> String {
    match error {
        ParseError::WrongArity => format!("ERR wrong number of arguments for '{name}' command"),
        ParseError::Syntax => "ERR syntax error".to_owned(),
        ParseError::NotAnInteger => "ERR value is not an integer or out of range".to_owned(),
        // The built-in MSETEX words it the 7.0 way; Redis 6.2's SET did not.
        ParseError::InvalidExpireTime if profile.redis_6 && syntax == Syntax::Ttl => {
            format!("ERR invalid expire time in {name}")
        }
        ParseError::InvalidExpireTime => format!("ERR invalid expire time in '{name}' command"),
        ParseError::InvalidNumkeys if profile.valkey => {
            "ERR invalid numkeys value or out of range".to_owned()
        }
        ParseError::InvalidNumkeys => "ERR invalid numkeys value".to_owned(),
        ParseError::WrongPairCount if profile.valkey => "ERR syntax error".to_owned(),
        ParseError::WrongPairCount => "ERR wrong number of key-value pairs".to_owned(),
        ParseError::KeepTtl => format!(
            "ERR KEEPTTL exists only in the numkeys form (load the module with SYNTAX NUMKEYS); \
             {name} takes {name} [NX|XX] [EX|PX|EXAT|PXAT] time key value [key value ...]"
        ),
        ParseError::OptionsFirst => format!(
            "ERR the options of {name} come first: {name} [NX|XX] [EX|PX|EXAT|PXAT] time key \
             value [key value ...]"
        ),
        ParseError::NumkeysShape => format!(
            "ERR this {name} takes the TTL first ({name} seconds key value ...), but the call \
             has the shape of the numkeys form that Redis 8.4+ clients send ({name} numkeys \
             key value ... EX seconds); nothing was written. Load the module with SYNTAX \
             NUMKEYS to serve such clients"
        ),
    }
}
