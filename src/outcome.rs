//! How a failed call ends, and every error text: a [`Refusal`] before the first write, in the
//! server's own words, or an [`Abort`] once a module API call failed.

use crate::server::Profile;
use crate::syntax::{ParseError, Syntax};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    Parse(ParseError),
    /// Keys read from a key spec of the filter's rewrite, and this call skipped the filter.
    Undeclared,
    /// Redis 7.0: the user may not write these keys with MSET, or one of them with SET (`acl`).
    NoCapability,
    ApplyFromClient,
    /// An argument is the filter's mark, where the server routes by keys read before the filter.
    Marked,
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

impl From<Abort> for Failure {
    fn from(abort: Abort) -> Failure {
        Failure::Aborted(abort)
    }
}

/// The step at which a call stopped once writing had begun.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Abort(pub &'static str);

impl Refusal {
    /// The error reply of command `name`, in this server's words.
    pub fn text(self, name: &str, syntax: Syntax, profile: &Profile) -> String {
        match self {
            Refusal::Parse(error) => parse_error_text(error, name, syntax, profile),
            Refusal::Undeclared => format!(
                "ERR {name}: the server read this call's keys from a key specification that \
                 describes the call as the module's command filter rewrites it, and this call \
                 skipped the filter (a script's call on Valkey, which command filters do not see): call {name} \
                 from a client"
            ),
            Refusal::NoCapability => format!(
                "NOPERM this user has no permissions to run the '{name}' command with these \
                 keys: on Redis 7.0, {name} also needs MSET on these keys and SET on each"
            ),
            Refusal::ApplyFromClient => format!(
                "ERR {name}.apply only applies what MSETEX replicated (on replicas, while the \
                 AOF loads, on the node a slot migrates to): call {name}"
            ),
            Refusal::Marked => format!(
                "ERR {name}: an argument of this call is the module's key mark (bytes 01 'keys' \
                 01), which the server would read as the start of the keys before the module's \
                 command filter runs: nothing was written"
            ),
        }
    }
}

/// COMMAND GETKEYS's answer about a typed client's numkeys call to the TTL form, as the name of an
/// unknown command: at most 128 bytes (the server cuts the name there).
pub fn numkeys_shape_hint(name: &str) -> String {
    let mut text = format!(
        "{name} takes the TTL first; this call has the numkeys form: load the module with SYNTAX \
         NUMKEYS"
    );
    while text.len() > 128 {
        text.pop();
    }
    text
}

impl Abort {
    pub fn text(self) -> String {
        format!("ERR msetex failed to {}", self.0)
    }
}

/// An invalid call's error text, as the server words it.
fn parse_error_text(error: ParseError, name: &str, syntax: Syntax, profile: &Profile) -> String {
    match error {
        ParseError::WrongArity => format!("ERR wrong number of arguments for '{name}' command"),
        ParseError::Syntax => "ERR syntax error".to_owned(),
        ParseError::NotAnInteger => "ERR value is not an integer or out of range".to_owned(),
        // The built-in MSETEX words it the 7.0 way; Redis 6.2's SET did not.
        ParseError::InvalidExpireTime if profile.expire_error_unquoted && syntax == Syntax::Ttl => {
            format!("ERR invalid expire time in {name}")
        }
        ParseError::InvalidExpireTime => format!("ERR invalid expire time in '{name}' command"),
        ParseError::InvalidNumkeys if profile.numkeys_errors_worded_as_valkey => {
            "ERR invalid numkeys value or out of range".to_owned()
        }
        ParseError::InvalidNumkeys => "ERR invalid numkeys value".to_owned(),
        ParseError::WrongPairCount if profile.numkeys_errors_worded_as_valkey => {
            "ERR syntax error".to_owned()
        }
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
