//! How a call that does not succeed ends, as two types:
//!
//! - a [`Refusal`] happens before the first write: nothing was written,
//!   replicated or signalled, and the error reply says why, in the words
//!   the server's own commands use (SET's for the TTL form, the built-in
//!   MSETEX's for the NUMKEYS form);
//! - an [`Abort`] happens once writing has begun (`command::write`): a
//!   module API call that its preconditions say cannot fail, failed. The
//!   keys written before it (possibly none) stay written and replicated;
//!   the reply is `ERR msetex failed to <step>` and the log has a warning
//!   line. No test can make one happen.
//!
//! (A panic, a bug, is caught where the server calls the module and
//! answered `ERR msetex internal error`, wherever it happened.)

use crate::server::Wording;
use crate::syntax::{ParseError, Syntax, Undeclared};

/// Why a call was refused before anything was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The call is invalid.
    Parse(ParseError),
    /// Where keys are declared by key specifications only, the server could
    /// not have learned this call's keys.
    Undeclared(Undeclared),
    /// The user may not run MSETEX (Redis 7.0, see `acl`).
    NoPermissionForCommand,
    /// The user may run MSETEX, but not on one of these keys.
    NoPermissionForKeys,
    /// A client called `<name>.apply`.
    ApplyFromClient,
    /// A TTL-form call with options on a server that would route it by
    /// misread keys (`TtlOptions::Refused`).
    Unroutable,
}

impl From<ParseError> for Refusal {
    fn from(error: ParseError) -> Refusal {
        Refusal::Parse(error)
    }
}

/// The step at which a call stopped once writing had begun.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Abort(pub &'static str);

impl Refusal {
    /// The error reply of the command `name`, loaded with `syntax`, in the
    /// words of this server.
    pub fn text(self, name: &str, syntax: Syntax, wording: Wording) -> String {
        match self {
            Refusal::Parse(error) => parse_error_text(error, name, syntax, wording),
            Refusal::Undeclared(Undeclared::TtlOptions) => format!(
                "ERR {name} options need the getkeys API, which this server would call from I/O \
                 threads (io-threads > 1): send '{name} seconds key value ...', or load the \
                 module with SYNTAX NUMKEYS"
            ),
            Refusal::Undeclared(Undeclared::Numkeys) => format!(
                "ERR {name} cannot declare the keys of its NUMKEYS form on this server, which \
                 asks for command keys from I/O threads (io-threads > 1) and cannot read them \
                 from a key specification alone: set io-threads 1 or use SYNTAX TTL"
            ),
            Refusal::NoPermissionForCommand => {
                format!("NOPERM this user has no permissions to run the '{name}' command")
            }
            Refusal::NoPermissionForKeys => {
                "NOPERM this user has no permissions to access one of the keys used as arguments"
                    .to_owned()
            }
            Refusal::ApplyFromClient => format!(
                "ERR {name}.apply only applies what MSETEX replicated (on replicas, while the \
                 AOF loads, on the node a slot migrates to): call {name}"
            ),
            Refusal::Unroutable => format!(
                "ERR {name} options cannot be routed on this server: in cluster mode with \
                 io-threads > 1 it reads a command's keys before this module can tell where \
                 the options put them; send '{name} seconds key value ...', or set io-threads 1"
            ),
        }
    }
}

impl Abort {
    /// The error reply.
    pub fn text(self) -> String {
        format!("ERR msetex failed to {}", self.0)
    }
}

/// The error text for an invalid call, as the server words it: SET's texts
/// for the TTL form, the built-in MSETEX's for the NUMKEYS form (Valkey
/// words two of them differently).
fn parse_error_text(error: ParseError, name: &str, syntax: Syntax, wording: Wording) -> String {
    let valkey = wording == Wording::Valkey;
    match error {
        ParseError::WrongArity => format!("ERR wrong number of arguments for '{name}' command"),
        ParseError::Syntax => "ERR syntax error".to_owned(),
        ParseError::NotAnInteger => "ERR value is not an integer or out of range".to_owned(),
        // The built-in MSETEX words it the 7.0 way; Redis 6.2's SET did not.
        ParseError::InvalidExpireTime
            if wording == Wording::Redis62 && syntax.follows_set_errors() =>
        {
            format!("ERR invalid expire time in {name}")
        }
        ParseError::InvalidExpireTime => format!("ERR invalid expire time in '{name}' command"),
        ParseError::InvalidNumkeys if valkey => {
            "ERR invalid numkeys value or out of range".to_owned()
        }
        ParseError::InvalidNumkeys => "ERR invalid numkeys value".to_owned(),
        ParseError::WrongPairCount if valkey => "ERR syntax error".to_owned(),
        ParseError::WrongPairCount => "ERR wrong number of key-value pairs".to_owned(),
        ParseError::NumkeysShape => format!(
            "ERR this {name} takes the TTL first ({name} seconds key value ...), but the call \
             has the shape of the numkeys form that Redis 8.4+ clients send ({name} numkeys \
             key value ... EX seconds); nothing was written. Load the module with SYNTAX \
             NUMKEYS to serve such clients"
        ),
    }
}
