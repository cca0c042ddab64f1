//! MSETEX itself: validate the whole call, check that the server learned its
//! keys and that the user may write, check NX/XX against every key, then
//! write every key (`write`), replicating as it goes (`propagation`).
//!
//! Atomicity comes from the server running one command at a time; what the
//! module guarantees is that an error reply means nothing was written:
//! every check that can refuse a call runs before the first write.

use std::ffi::CString;

use crate::config::{self, AclCheck, KeysDeclared, Module};
use crate::ffi::{Arg, ContextFlags, Ctx, KeyPositions, Reply, Touch};
use crate::parse::{self, Ack, Condition, ParseError, Request, Syntax};
use crate::propagation::{PerCallCommand, Wire};
use crate::server::{Product, TtlOptions};
use crate::{propagation, stats, write};

/// `MSETEX ...` in the syntax the module was loaded with.
pub fn msetex(ctx: &Ctx<'_>, args: &[Arg<'_>]) -> Reply {
    answer(ctx, args, |module, args| run(ctx, module, args))
}

/// Runs `handler` for one call: counts it, and turns a refusal into the
/// error reply the server would give.
fn answer<'c>(
    ctx: &Ctx<'c>,
    args: &[Arg<'c>],
    handler: impl FnOnce(&Module, &[Arg<'c>]) -> Result<Reply, Refusal>,
) -> Reply {
    stats::record_call();
    let Some(module) = config::get() else {
        stats::record_error();
        return Reply::Error(c"ERR msetex is not loaded".to_owned());
    };
    match handler(module, args) {
        Ok(reply) => reply,
        Err(refusal) => {
            stats::record_error();
            let text = match refusal {
                Refusal::Parse(error) => error_text(error, module),
                Refusal::Text(text) => text,
                Refusal::Failed(step) => {
                    // Cannot happen by the module API's contract; if it does,
                    // the keys written before stay written and replicated.
                    ctx.log_warning(&format!("msetex: failed to {step}"));
                    format!("ERR msetex failed to {step}")
                }
            };
            Reply::Error(CString::new(text).unwrap_or_else(|_| c"ERR msetex".to_owned()))
        }
    }
}

/// Why a call was refused.
enum Refusal {
    Parse(ParseError),
    Text(String),
    Failed(write::Failed),
}

impl From<ParseError> for Refusal {
    fn from(error: ParseError) -> Refusal {
        Refusal::Parse(error)
    }
}

impl From<write::Failed> for Refusal {
    fn from(step: write::Failed) -> Refusal {
        Refusal::Failed(step)
    }
}

fn run(ctx: &Ctx<'_>, module: &Module, args: &[Arg<'_>]) -> Result<Reply, Refusal> {
    let flags = ctx.flags();
    let request = parse::parse(module.syntax, args, ctx.now_ms())?;
    keys_were_declared(module, &request, flags).map_err(Refusal::Text)?;
    check_acl(ctx, module, args, &request, flags)?;
    let pairs = args.get(request.pairs.clone()).unwrap_or_default();
    let touch = if module.profile.condition_counts_access {
        Touch::Yes
    } else {
        Touch::No
    };
    if !condition_holds(ctx, pairs, request.condition, touch) {
        return Ok(Reply::Integer(0));
    }
    write(ctx, module, pairs, &request, flags)
}

/// `<name>.apply <deadline | KEEPTTL | PERSIST> key value ...`: a call as
/// REPLICATE MSETEX replicated it, applied on a replica, while the AOF
/// loads, or on the node a slot migrates to. Clients cannot call it: they
/// call MSETEX (the call is refused, nothing written).
pub fn apply(ctx: &Ctx<'_>, args: &[Arg<'_>]) -> Reply {
    answer(ctx, args, |module, args| {
        let flags = ctx.flags();
        if !flags.replicated && !flags.loading {
            return Err(Refusal::Text(format!(
                "ERR {}.apply only applies what MSETEX replicated (on replicas, while the AOF \
                 loads, on the node a slot migrates to): call {}",
                module.name, module.name
            )));
        }
        let request = parse::parse_apply(args)?;
        let pairs = args.get(request.pairs.clone()).unwrap_or_default();
        write(ctx, module, pairs, &request, flags)
    })
}

/// Writes a validated call: every check that can refuse it has passed.
fn write(
    ctx: &Ctx<'_>,
    module: &Module,
    pairs: &[Arg<'_>],
    request: &Request,
    flags: ContextFlags,
) -> Result<Reply, Refusal> {
    let mut wire = Wire::new(ctx, module.replicate, flags.aof);
    let deletes = write::deletes_past_keys(
        &module.profile,
        request.expiry,
        ctx.now_ms(),
        flags.replica || flags.loading,
    );
    if let Some(event) = deletes {
        write::delete_all(ctx, pairs, event, &mut wire)?;
    } else {
        let written = write::write_all(
            ctx,
            &module.profile,
            pairs,
            request.expiry,
            flags.active_child,
            &mut wire,
        )?;
        wire.finish(&PerCallCommand {
            name: module.per_call_name(),
            form: module.per_call,
            pairs,
        })?;
        stats::record_keys(written);
    }
    Ok(match request.ack {
        Ack::Ok => Reply::Ok,
        Ack::One => Reply::Integer(1),
    })
}

/// Where the server could not learn the call's keys exactly (key
/// specifications only, see [`KeysDeclared`]), the call is refused before
/// anything happens: the server's slot and ACL checks looked at the wrong
/// arguments, or at none.
fn keys_were_declared(
    module: &Module,
    request: &Request,
    flags: ContextFlags,
) -> Result<(), String> {
    if module.keys == KeysDeclared::ByCallback || flags.replicated || flags.loading {
        return Ok(());
    }
    match module.syntax {
        Syntax::Ttl if request.pairs.start != 2 => Err(format!(
            "ERR {} options need the getkeys API, which this server would call from I/O \
             threads (io-threads > 1): send '{} seconds key value ...', or load the module \
             with SYNTAX NUMKEYS",
            module.name, module.name
        )),
        // Cluster routing reads keys the legacy way, which cannot express a
        // keynum spec; servers before Redis 8.4 / Valkey 9.1 also read a
        // keynum spec with a step as half the keys.
        Syntax::Numkeys if module.cluster || !module.profile.keynum_steps => Err(format!(
            "ERR {} cannot declare the keys of its NUMKEYS form on this server, which asks \
             for command keys from I/O threads (io-threads > 1) and cannot read them from a \
             key specification alone: set io-threads 1 or use SYNTAX TTL",
            module.name
        )),
        _ => Ok(()),
    }
}

/// Redis 7.0 has no ACL categories for module commands, so `-@write`
/// would not stop MSETEX there: the user must be allowed to run SET on the
/// call's first key, as the server would check it for SET itself. The
/// replication link and AOF loading are not checked, as the server's own.
fn check_acl(
    ctx: &Ctx<'_>,
    module: &Module,
    args: &[Arg<'_>],
    request: &Request,
    flags: ContextFlags,
) -> Result<(), Refusal> {
    if module.acl != AclCheck::AgainstSet || flags.replicated || flags.loading {
        return Ok(());
    }
    let key = request.pairs.start;
    let (Some(key), Some(value)) = (args.get(key), args.get(key + 1)) else {
        return Ok(());
    };
    if ctx.may_run_set(*key, *value, &module.name_c) {
        Ok(())
    } else {
        Err(Refusal::Text(format!(
            "NOPERM this user has no permissions to run the '{}' command",
            module.name
        )))
    }
}

/// Answers the server's "where are the keys" call (`getkeys-api`). A call
/// whose shape is invalid declares no keys and fails when it runs.
pub fn declare_keys(positions: &KeyPositions, args: &[Arg<'_>]) {
    let Some(module) = config::get() else {
        return;
    };
    if let Some(pairs) = parse::pair_range(module.syntax, args) {
        for index in pairs.step_by(2) {
            positions.key_at(index);
        }
    }
}

/// What the command filter sees in a command's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    Other,
    /// SYNC or PSYNC: a replica (and a replication backlog) may appear.
    ReplicationHandshake,
    /// MSETEX, or COMMAND (which may ask for MSETEX's keys), where the TTL
    /// form's options must be packed before the server reads keys.
    Msetex,
}

/// Classifies a command by its name, for the command filter (which runs
/// before every command: a few comparisons).
pub fn seen(name: &[u8]) -> Seen {
    if propagation::is_replication_handshake(name) {
        return Seen::ReplicationHandshake;
    }
    match config::get() {
        Some(module)
            if module.packs_options()
                && (name.eq_ignore_ascii_case(module.name.as_bytes())
                    || name.eq_ignore_ascii_case(b"COMMAND")) =>
        {
            Seen::Msetex
        }
        _ => Seen::Other,
    }
}

/// Where the server reads a command's keys from its key specification
/// only (see [`KeysDeclared::BySpecs`]), the TTL form's options would be
/// read as keys. The filter rewrites such a call before the server reads
/// them (see [`TtlOptions`]): it packs the options into one argument, so
/// that the keys are at 2, 4, ... as the specification says and the
/// server's slot checks, redirections, ACL key rules and `COMMAND GETKEYS`
/// see the real keys; or, where routing would not see the packed call
/// (Redis in cluster mode), it turns the call into `<name>.unroutable`,
/// which has no keys, is not routed, and refuses it.
pub fn rewrite(args: &[&[u8]]) -> Option<Rewrite> {
    let module = config::get()?;
    let is_msetex = |arg: &&[u8]| arg.eq_ignore_ascii_case(module.name.as_bytes());
    // `COMMAND GETKEYS[ANDFLAGS] msetex ...` asks about the call after it
    // (and is never routed: packing always answers it right).
    let (call, routed) = match args {
        [first, ..] if is_msetex(first) => (args, true),
        [_, sub, rest @ ..]
            if rest.first().is_some_and(is_msetex)
                && (sub.eq_ignore_ascii_case(b"GETKEYS")
                    || sub.eq_ignore_ascii_case(b"GETKEYSANDFLAGS")) =>
        {
            (rest, false)
        }
        _ => return None,
    };
    let (packed, replaced) = parse::pack_ttl_options(call)?;
    match (module.profile.ttl_options, &module.unroutable_c) {
        (TtlOptions::Refused, Some(unroutable)) if routed => Some(Rewrite {
            at: 0,
            replacement: unroutable.as_bytes().to_vec(),
            replaced: 1,
        }),
        _ => Some(Rewrite {
            at: args.len() - call.len() + 1,
            replacement: packed,
            replaced,
        }),
    }
}

/// How the filter rewrites a call: the `replaced` arguments from `at` on
/// become the one argument `replacement`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewrite {
    pub at: usize,
    pub replacement: Vec<u8>,
    pub replaced: usize,
}

/// `<name>.unroutable ...`: a TTL-form call with options on a server that
/// would route it by misread keys (see [`TtlOptions::Refused`]), refused
/// with nothing written.
pub fn unroutable(ctx: &Ctx<'_>, args: &[Arg<'_>]) -> Reply {
    answer(ctx, args, |module, _| {
        Err(Refusal::Text(format!(
            "ERR {name} options cannot be routed on this server: in cluster mode with \
             io-threads > 1 it reads a command's keys before this module can tell where the \
             options put them; send '{name} seconds key value ...', or set io-threads 1",
            name = module.name
        )))
    })
}

/// NX / XX: checks every key before anything is written. Keys are looked
/// up as a write command does (a logically expired key counts as absent),
/// without touching hit/miss statistics or signalling anything, and without
/// counting an access (`touch`) where SET's check does not count one: the
/// write that follows counts it.
fn condition_holds(ctx: &Ctx<'_>, pairs: &[Arg<'_>], condition: Condition, touch: Touch) -> bool {
    let wanted_empty = match condition {
        Condition::Always => return true,
        Condition::NoneExist => true,
        Condition::AllExist => false,
    };
    pairs.iter().step_by(2).all(|key| {
        ctx.open_key(*key, touch)
            .is_some_and(|handle| handle.is_empty() == wanted_empty)
    })
}

/// The error text for a refused call, as the server words it: SET's texts
/// for the TTL, the built-in MSETEX's for the NUMKEYS form (Valkey words
/// two of them differently).
fn error_text(error: ParseError, module: &Module) -> String {
    let name = &module.name;
    let valkey = module.profile.product == Product::Valkey;
    match error {
        ParseError::WrongArity => format!("ERR wrong number of arguments for '{name}' command"),
        ParseError::Syntax => "ERR syntax error".to_owned(),
        ParseError::NotAnInteger => "ERR value is not an integer or out of range".to_owned(),
        // The built-in MSETEX words it the 7.0 way; Redis 6.2's SET did not.
        ParseError::InvalidExpireTime
            if module.profile.legacy_error_texts && module.syntax == Syntax::Ttl =>
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
