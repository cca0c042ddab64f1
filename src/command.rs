//! MSETEX itself: validate the whole call, check that the server learned its
//! keys and that the user may write, check NX/XX against every key, then
//! write every key (`write`), replicating as it goes (`replication`); and
//! what the command filter does to MSETEX calls.
//!
//! Atomicity comes from the server running one command at a time. Every
//! check that can refuse a call runs before the first write: a refusal
//! ([`Refusal`]) means nothing was written. Once writing has begun the only
//! error is an [`Abort`] (`ERR msetex failed to <step>`, see `outcome`).

use std::ffi::CString;

use crate::acl::AclCheck;
use crate::config::{self, Module};
use crate::deadline::Deadline;
use crate::ffi::{AclVerdict, Arg, ArgsChange, ContextFlags, Ctx, KeyPositions, Reply, Touch};
use crate::outcome::{Abort, Refusal};
use crate::replication::{self, Wire};
use crate::server::MovedKeys;
use crate::syntax::{self, apply, Ack, Condition, ParseError, Request, Syntax};
use crate::write::{Batching, Fork};
use crate::{stats, write};

/// How a call ended: a reply, or an error before or after the first write.
enum Outcome {
    Refused(Refusal),
    Aborted(Abort),
}

impl From<Refusal> for Outcome {
    fn from(refusal: Refusal) -> Outcome {
        Outcome::Refused(refusal)
    }
}

impl From<syntax::ParseError> for Outcome {
    fn from(error: syntax::ParseError) -> Outcome {
        Outcome::Refused(Refusal::Parse(error))
    }
}

impl From<Abort> for Outcome {
    fn from(abort: Abort) -> Outcome {
        Outcome::Aborted(abort)
    }
}

/// `MSETEX ...` in the syntax the module was loaded with.
pub fn msetex(ctx: &Ctx<'_>, args: &[Arg<'_>]) -> Reply {
    answer(ctx, |module| run(ctx, module, args))
}

/// `<name>.apply <deadline | KEEPTTL | PERSIST> key value ...`: a call as
/// REPLICATE MSETEX replicated it, applied on a replica, while the AOF
/// loads, or on the node a slot migrates to. Clients cannot call it: they
/// call MSETEX (the call is refused, nothing written).
pub fn apply(ctx: &Ctx<'_>, args: &[Arg<'_>]) -> Reply {
    answer(ctx, |module| {
        let flags = ctx.flags();
        if !flags.replicated && !flags.loading {
            return Err(Refusal::ApplyFromClient.into());
        }
        let request = apply::parse(args)?;
        let pairs = args.get(request.pairs.clone()).unwrap_or_default();
        write(ctx, module, pairs, &request, flags)
    })
}

/// Runs `handler` for one call: counts it, and turns a refusal or an abort
/// into its error reply.
fn answer(ctx: &Ctx<'_>, handler: impl FnOnce(&Module) -> Result<Reply, Outcome>) -> Reply {
    stats::record_call();
    let Some(module) = config::get() else {
        stats::record_error();
        return Reply::Error(c"ERR msetex is not loaded".to_owned());
    };
    let text = match handler(module) {
        Ok(reply) => return reply,
        Err(Outcome::Refused(refusal)) => {
            refusal.text(&module.name, module.syntax, module.profile.wording)
        }
        Err(Outcome::Aborted(abort)) => {
            ctx.log_warning(&format!("msetex: failed to {}", abort.0));
            abort.text()
        }
    };
    stats::record_error();
    Reply::Error(CString::new(text).unwrap_or_else(|_| c"ERR msetex".to_owned()))
}

fn run(ctx: &Ctx<'_>, module: &Module, args: &[Arg<'_>]) -> Result<Reply, Outcome> {
    let flags = ctx.flags();
    let request = module.syntax.parse(args, ctx.now_ms())?;
    keys_were_declared(module, &request, flags, args.len())?;
    let pairs = args.get(request.pairs.clone()).unwrap_or_default();
    check_acl(ctx, module, pairs, flags)?;
    let touch = if module.profile.condition_counts_access {
        Touch::Yes
    } else {
        Touch::No
    };
    if !condition_holds(
        ctx,
        pairs,
        request.condition,
        touch,
        module.profile.signal_on_close,
    ) {
        return Ok(Reply::Integer(0));
    }
    write(ctx, module, pairs, &request, flags)
}

/// Writes a validated call: every check that can refuse it has passed, so
/// from here on an error is an [`Abort`].
fn write(
    ctx: &Ctx<'_>,
    module: &Module,
    pairs: &[Arg<'_>],
    request: &Request,
    flags: ContextFlags,
) -> Result<Reply, Outcome> {
    let mut wire = Wire::new(
        ctx,
        &module.replication,
        module.counter_c.as_deref(),
        flags.aof,
    );
    let mut deadline = Deadline::new(request.expiry);
    let batching = Batching::choose(&module.profile, request.expiry, ctx.now_ms());
    let fork = if flags.active_child {
        Fork::Running
    } else {
        Fork::None
    };
    let written = write::write_all(
        ctx,
        &module.profile,
        pairs,
        &mut deadline,
        batching,
        fork,
        &mut wire,
    )?;
    wire.finish(&module.replication, pairs, deadline.resolved())?;
    stats::record_keys(written);
    Ok(match request.ack {
        Ack::Ok => Reply::Ok,
        Ack::One => Reply::Integer(1),
    })
}

/// Where the server could not learn the call's keys exactly (key
/// specifications only, and options among the keys that the command
/// filter did not move), the call is refused before anything happens: the
/// server's slot and ACL checks looked at the wrong arguments.
fn keys_were_declared(
    module: &Module,
    request: &Request,
    flags: ContextFlags,
    argc: usize,
) -> Result<(), Refusal> {
    if flags.replicated
        || flags.loading
        || module
            .syntax
            .keys_declared(request, &module.profile.keys, argc)
    {
        return Ok(());
    }
    Err(Refusal::Undeclared)
}

/// Redis 7.0 gives module commands no ACL categories: the server's own
/// check before MSETEX allowed it by name (or `+@all`); MSETEX also needs
/// MSET's permission on exactly its keys (see `acl`). The replication link
/// and AOF loading are not checked, as the server's own.
fn check_acl(
    ctx: &Ctx<'_>,
    module: &Module,
    pairs: &[Arg<'_>],
    flags: ContextFlags,
) -> Result<(), Refusal> {
    if module.acl != AclCheck::AlsoMset || flags.replicated || flags.loading {
        return Ok(());
    }
    match ctx.may_run(c"MSET", pairs, &module.name_c) {
        AclVerdict::Allowed => Ok(()),
        AclVerdict::DeniedCommand => Err(Refusal::NoPermissionForCommand),
        AclVerdict::DeniedKey => Err(Refusal::NoPermissionForKeys),
    }
}

/// NX / XX: checks every key before anything is written. Keys are looked
/// up as a write command does (a logically expired key counts as absent),
/// without touching hit/miss statistics or signalling anything, and without
/// counting an access (`touch`) where SET's check does not count one: the
/// write that follows counts it.
fn condition_holds(
    ctx: &Ctx<'_>,
    pairs: &[Arg<'_>],
    condition: Condition,
    touch: Touch,
    read_only: bool,
) -> bool {
    let wanted = match condition {
        Condition::Always => return true,
        Condition::NoneExist => false,
        Condition::AllExist => true,
    };
    // Where closing a key opened for writing signals it (`signal_on_close`),
    // the keys are opened for reading, without any effect a client sees.
    let exists = |key: Arg<'_>| {
        if read_only {
            ctx.open_key_to_read(key)
                .is_some_and(|handle| !handle.is_empty())
        } else {
            ctx.open_key(key, touch)
                .is_some_and(|handle| !handle.is_empty())
        }
    };
    pairs.iter().step_by(2).all(|key| exists(*key) == wanted)
}

/// Answers the server's "where are the keys" call (`getkeys-api`). A call
/// whose shape is invalid declares no keys and fails when it runs.
pub fn declare_keys(positions: &KeyPositions, args: &[Arg<'_>]) {
    let Some(module) = config::get() else {
        return;
    };
    if let Some(pairs) = module.syntax.pair_range(args) {
        for index in pairs.step_by(2) {
            positions.key_at(index);
        }
    }
}

// ---------------------------------------------------------------------------
// The command filter

/// What the command filter sees in a command's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    Other,
    /// SYNC or PSYNC: a replica (and a replication backlog) may appear.
    ReplicationHandshake,
    /// A command the filter may rewrite: MSETEX where options would be
    /// read as keys, or where the module serves a built-in renamed away,
    /// and COMMAND (GETKEYS) and ACL (DRYRUN), which ask about a call.
    Rewrite,
}

/// Classifies a command by its name, for the command filter (which runs
/// before every command: a few comparisons).
pub fn seen(name: &[u8]) -> Seen {
    if replication::is_replication_handshake(name) {
        return Seen::ReplicationHandshake;
    }
    let Some(module) = config::get() else {
        return Seen::Other;
    };
    let packs = module.filter_packs();
    let is = |word: &[u8]| name.eq_ignore_ascii_case(word);
    let asked_about = packs || module.alias;
    if (packs && is(module.name.as_bytes()))
        || (module.alias && is(b"MSETEX"))
        || ((asked_about || module.syntax == Syntax::Ttl) && is(b"COMMAND"))
        || (asked_about && is(b"ACL"))
    {
        Seen::Rewrite
    } else {
        Seen::Other
    }
}

/// How the command filter rewrites a command that names MSETEX: where the
/// server reads keys from key specifications only ([`KeysDeclared::BySpecs`])
/// and a call's options stand among its keys, it moves them into one
/// argument before the server reads the keys (`Syntax::pack`), so that the
/// server's slot checks, redirections, ACL key rules, `COMMAND GETKEYS` and
/// `ACL DRYRUN` see the real keys; where the server routes by keys read
/// before any filter ran ([`MovedKeys::Refused`]), it refuses such a call
/// instead, with nothing written. And `COMMAND GETKEYS` of a call the TTL
/// form refuses as a typed client's numkeys call answers that refusal, so
/// that cluster clients show it.
pub fn rewrite(args: &[&[u8]]) -> Vec<ArgsChange> {
    let Some(module) = config::get() else {
        return Vec::new();
    };
    let is_alias = |arg: &&[u8]| module.alias && arg.eq_ignore_ascii_case(b"MSETEX");
    let is_ours = |arg: &&[u8]| arg.eq_ignore_ascii_case(module.name.as_bytes()) || is_alias(arg);
    let is = |arg: &&[u8], word: &[u8]| arg.eq_ignore_ascii_case(word);
    // Where the call is in the command, and whether the server routes it.
    let (at, routed) = match args {
        [first, ..] if is_ours(first) => (0, true),
        [command, sub, name, ..]
            if is(command, b"COMMAND")
                && (is(sub, b"GETKEYS") || is(sub, b"GETKEYSANDFLAGS"))
                && is_ours(name) =>
        {
            (2, false)
        }
        [acl, sub, _user, name, ..] if is(acl, b"ACL") && is(sub, b"DRYRUN") && is_ours(name) => {
            (3, false)
        }
        _ => return Vec::new(),
    };
    let call = args.get(at..).unwrap_or_default();
    if !routed && module.syntax.parse(call, 0) == Err(ParseError::NumkeysShape) {
        return refuse_with(
            args,
            Refusal::Parse(ParseError::NumkeysShape).short_text(&module.name),
        );
    }
    // The built-in renamed away: its calls go to this command.
    let mut changes: Vec<ArgsChange> = call
        .first()
        .filter(|first| is_alias(first))
        .map(|_| ArgsChange {
            at,
            replaced: 1,
            with: vec![module.name.as_bytes().to_vec()],
        })
        .into_iter()
        .collect();
    let packing = module
        .packs_for()
        .and_then(|moved| module.syntax.pack(call).map(|packing| (moved, packing)));
    if let Some((moved, packing)) = packing {
        if routed && moved == MovedKeys::Refused {
            return refuse_with(args, Refusal::Unroutable.short_text(&module.name));
        }
        changes.push(ArgsChange {
            at: at + packing.trailing,
            replaced: call.len().saturating_sub(packing.trailing),
            with: Vec::new(),
        });
        changes.push(ArgsChange {
            at: at + 1,
            replaced: packing.leading,
            with: vec![packing.arg],
        });
    }
    changes
}

/// Turns the whole command into one the server does not know, named
/// `text`: the server answers `ERR unknown command '<text>'` before it
/// checks permissions or routes anything, and nothing runs. (Inside MULTI
/// the transaction is then refused, as for any unknown command.)
fn refuse_with(args: &[&[u8]], text: String) -> Vec<ArgsChange> {
    vec![ArgsChange {
        at: 0,
        replaced: args.len(),
        with: vec![text.into_bytes()],
    }]
}
