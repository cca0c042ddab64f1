//! The command filter, run before every command: where keys come from key specs only, it moves a
//! call's options out of the keys' way (or refuses the call) before the server reads the keys, and
//! it answers `COMMAND GETKEYS` and `ACL DRYRUN` about such calls as the call itself. It never
//! changes a command's name: ACL rules, the AOF and MONITOR see the command the client sent.

use crate::config;
use crate::ffi::ArgsChange;
use crate::outcome::Refusal;
use crate::replication;
use crate::server::MovedKeys;
use crate::syntax::{ParseError, Syntax};

/// What the command filter sees in a command's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    Other,
    /// SYNC or PSYNC: a replica (and a replication backlog) may appear.
    ReplicationHandshake,
    /// May be rewritten: MSETEX where options would be read as keys, and COMMAND (GETKEYS) and ACL
    /// (DRYRUN), which ask about a call.
    Rewrite,
}

/// Classifies a command by name for the filter, in a few comparisons (it runs on every command).
pub fn seen(name: &[u8]) -> Seen {
    if replication::is_replication_handshake(name) {
        return Seen::ReplicationHandshake;
    }
    let Some(module) = config::get() else {
        return Seen::Other;
    };
    let packs = module.filter_packs();
    let is = |word: &[u8]| name.eq_ignore_ascii_case(word);
    if (packs && is(module.name.as_bytes()))
        || ((packs || module.syntax == Syntax::Ttl) && is(b"COMMAND"))
        || (packs && is(b"ACL"))
    {
        Seen::Rewrite
    } else {
        Seen::Other
    }
}

/// Rewrites a command naming MSETEX. With key specs only ([`KeysDeclared::BySpecs`]), options among
/// the keys are packed into one argument (`Syntax::pack`) so slot checks, redirections, ACL key
/// rules, `COMMAND GETKEYS` and `ACL DRYRUN` see the real keys; where the server routes by keys
/// read before any filter ([`MovedKeys::Refused`]), such a call is refused. A typed client's
/// numkeys call that the TTL form refuses gets that refusal from `COMMAND GETKEYS` too.
pub fn rewrite(args: &[&[u8]]) -> Vec<ArgsChange> {
    let Some(module) = config::get() else {
        return Vec::new();
    };
    let Some((at, routed)) = locate(module, args) else {
        return Vec::new();
    };
    let call = args.get(at..).unwrap_or_default();
    // A typed client's numkeys call, refused by the TTL form: answered before keys read from its
    // shape are routed or listed (cluster clients ask COMMAND GETKEYS first).
    let asks_or_is_routed = !routed || module.cluster;
    if asks_or_is_routed
        && module.syntax == Syntax::Ttl
        && module.syntax.parse(call, 0, module.packed()) == Err(ParseError::NumkeysShape)
    {
        return refuse_with(
            args,
            Refusal::Parse(ParseError::NumkeysShape).short_text(&module.name),
        );
    }
    let packing = module
        .packs_for()
        .and_then(|moved| module.syntax.pack(call).map(|packing| (moved, packing)));
    if let Some((moved, packing)) = packing {
        if routed && moved == MovedKeys::Refused {
            return refuse_with(args, Refusal::Unroutable.short_text(&module.name));
        }
        return vec![
            ArgsChange {
                at: at + packing.trailing,
                replaced: call.len().saturating_sub(packing.trailing),
                with: Vec::new(),
            },
            ArgsChange {
                at: at + 1,
                replaced: packing.leading,
                with: vec![packing.arg],
            },
        ];
    }
    Vec::new()
}

/// Where a call of MSETEX is in the command (0; COMMAND GETKEYS: 2; ACL DRYRUN: 3), and whether
/// the server routes it (only the call itself).
fn locate(module: &config::Module, args: &[&[u8]]) -> Option<(usize, bool)> {
    let is_ours = |arg: &&[u8]| arg.eq_ignore_ascii_case(module.name.as_bytes());
    let is = |arg: &&[u8], word: &[u8]| arg.eq_ignore_ascii_case(word);
    match args {
        [first, ..] if is_ours(first) => Some((0, true)),
        [command, sub, name, ..]
            if is(command, b"COMMAND")
                && (is(sub, b"GETKEYS") || is(sub, b"GETKEYSANDFLAGS"))
                && is_ours(name) =>
        {
            Some((2, false))
        }
        [acl, sub, _user, name, ..] if is(acl, b"ACL") && is(sub, b"DRYRUN") && is_ours(name) => {
            Some((3, false))
        }
        _ => None,
    }
}

/// Turns the command into an unknown one named `text`: the server answers `ERR unknown command
/// '<text>'` before permissions or routing, nothing runs (in MULTI, the transaction is refused).
fn refuse_with(args: &[&[u8]], text: String) -> Vec<ArgsChange> {
    vec![ArgsChange {
        at: 0,
        replaced: args.len(),
        with: vec![text.into_bytes()],
    }]
}
