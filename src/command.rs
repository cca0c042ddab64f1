//! One call (DESIGN.md, "One call, step by step"): every check that can refuse ([`Refusal`]) runs
//! before the first write, after which the only error is an [`Abort`].

use std::ffi::CString;

use crate::acl::{self, AclCheck, Lacks};
use crate::deadline::{self, Expiry};
use crate::ffi::{Arg, Caller, ContextFlags, Ctx, LogReason, OwnedString, Reply};
use crate::loaded::{Loaded, LOADED};
use crate::outcome::{Failure, Refusal};
use crate::replication::{self, apply, CtxLink, Wire};
use crate::syntax::{Ack, Request};
use crate::write::Batching;
use crate::{stats, write};

pub fn msetex(ctx: &Ctx<'_>, args: &[Arg<'_>]) -> Reply {
    answer(ctx, |module| run(ctx, module, args))
}

/// `<name>.apply`: a call as REPLICATE MSETEX replicated it; refused from clients.
pub fn apply(ctx: &Ctx<'_>, args: &[Arg<'_>]) -> Reply {
    answer(ctx, |module| {
        let flags = ctx.flags();
        if !flags.replicated && !flags.loading {
            return Err(Refusal::ApplyFromClient.into());
        }
        let request = apply::parse(args).map_err(Refusal::Parse)?;
        let pairs = args.get(request.pairs.clone()).unwrap_or_default();
        write(ctx, module, pairs, &request, flags, ctx.now_ms())
    })
}

/// Runs `handler` for one call: counts it, and turns a failure into its error reply.
fn answer(ctx: &Ctx<'_>, handler: impl FnOnce(&Loaded) -> Result<Reply, Failure>) -> Reply {
    stats::record_call();
    let Some(module) = LOADED.get() else {
        stats::record_error();
        return Reply::Error(c"ERR msetex is not loaded".to_owned());
    };
    let text = match handler(module) {
        Ok(reply) => return reply,
        Err(Failure::Refused(refusal)) => {
            refusal.text(&module.name, module.syntax, &module.profile)
        }
        Err(Failure::Aborted(abort)) => {
            ctx.log_warning(&format!("msetex: failed to {}", abort.0));
            abort.text()
        }
    };
    stats::record_error();
    Reply::Error(CString::new(text).unwrap_or_else(|_| c"ERR msetex".to_owned()))
}

fn run(ctx: &Ctx<'_>, module: &Loaded, args: &[Arg<'_>]) -> Result<Reply, Failure> {
    let flags = ctx.flags();
    let now_ms = ctx.now_ms();
    let trusted = flags.replicated || flags.loading;
    let (request, held) = module.keys.read(args, now_ms, trusted)?;
    let arguments = args.get(request.pairs.clone()).unwrap_or_default();
    // Where the filter rewrote the call to its keys, it holds the values.
    let values = match held {
        Some(token) => ctx.take_held(token, arguments.len()),
        None => Some(Vec::new()),
    };
    let values = values.ok_or(Refusal::Undeclared)?;
    let interleaved: Vec<Arg<'_>>;
    let pairs = if values.is_empty() {
        arguments
    } else {
        let values = values.iter().map(OwnedString::arg);
        interleaved = arguments
            .iter()
            .copied()
            .zip(values)
            .flat_map(|(k, v)| [k, v])
            .collect();
        &interleaved
    };
    check_acl(ctx, module, pairs, request.expiry, flags)?;
    if !write::condition_holds(ctx, &module.profile, pairs, request.condition) {
        return Ok(Reply::Integer(0));
    }
    write(ctx, module, pairs, &request, flags, now_ms)
}

/// Writes a validated call; `now_ms` is the clock it was parsed with.
fn write(
    ctx: &Ctx<'_>,
    module: &Loaded,
    pairs: &[Arg<'_>],
    request: &Request,
    flags: ContextFlags,
    now_ms: i64,
) -> Result<Reply, Failure> {
    let mut wire = Wire::new(
        CtxLink::new(ctx, &module.replication.counter),
        &module.replication,
        pairs,
        replication::nobody_listens(flags.aof),
    );
    // An abort drops the wire, which sends what was written.
    let written = write::write_all(
        ctx,
        &module.profile,
        pairs,
        request.expiry,
        Batching::choose(&module.profile, request.expiry, now_ms),
        flags.active_child,
        &mut wire,
    )?;
    wire.finish()?;
    stats::record_keys(written);
    Ok(match request.ack {
        Ack::Ok => Reply::Ok,
        Ack::One => Reply::Integer(1),
    })
}

/// Redis 7.0 ([`AclCheck::Capability`]): whether the user may write the keys with MSET and each
/// with SET, a refusal logged in the ACL log. Not inlined: `make profile` tells its share.
#[inline(never)]
fn check_acl(
    ctx: &Ctx<'_>,
    module: &Loaded,
    pairs: &[Arg<'_>],
    expiry: Expiry,
    flags: ContextFlags,
) -> Result<(), Refusal> {
    if module.profile.acl != AclCheck::Capability || flags.replicated || flags.loading {
        return Ok(());
    }
    let mut user = match Caller::of(ctx) {
        Caller::Unrestricted => return Ok(()),
        Caller::Unknown => return Err(Refusal::NoCapability),
        Caller::User(user) => user,
    };
    let (Some(mset), Some(set), Some(options)) = (
        ctx.string(b"MSET"),
        ctx.string(b"SET"),
        ctx.words(&deadline::options(expiry)),
    ) else {
        return Err(Refusal::NoCapability);
    };
    let options: Vec<Arg<'_>> = options.iter().map(|option| option.arg()).collect();
    let commands = [mset.arg(), set.arg()];
    let Err(lacks) = acl::check_capability(&mut user, commands, &options, pairs) else {
        return Ok(());
    };
    match lacks {
        Lacks::Mset => {
            if let Some(name) = ctx.string(module.name.as_bytes()) {
                user.log_refusal(name.arg(), LogReason::Command);
            }
        }
        Lacks::Key(key) => user.log_refusal(key, LogReason::Key),
    }
    Err(Refusal::NoCapability)
}
