//! MSETEX itself: validate the whole call, check that the server learned its
//! keys and that the user may write, check NX/XX against every key, then
//! write every key (`write`), replicating as it goes (`propagation`).
//!
//! Atomicity comes from the server running one command at a time; what the
//! module guarantees is that an error reply means nothing was written:
//! every check that can refuse a call runs before the first write.

use std::ffi::CString;

use crate::config::{self, AclCheck, KeysDeclared, Module};
use crate::ffi::{AclVerdict, Arg, CallValue, ContextFlags, Ctx, KeyPositions, Reply, Touch};
use crate::parse::{self, Ack, Condition, Expiry, ParseError, Request, Syntax};
use crate::propagation::{PerCallCommand, Wire};
use crate::server::{PastDeadline, Product, TtlOptions};
use crate::{acl, ffi, propagation, stats, write};

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
    let written = match request.expiry {
        // A deadline that looks past where SET may then delete the keys
        // (Valkey 8+): SET itself decides, from the command's clock.
        Expiry::At(deadline)
            if module.profile.past_deadline == PastDeadline::DecidedBySet
                && deadline <= ctx.now_ms() =>
        {
            write::write_as_set(ctx, pairs, deadline, &mut wire)?
        }
        _ => write::write_all(
            ctx,
            &module.profile,
            pairs,
            request.expiry,
            flags.active_child,
            &mut wire,
        )?,
    };
    // Keys SET deleted went out as DEL or UNLINK.
    if written > 0 {
        wire.finish(&PerCallCommand {
            name: module.per_call_name(),
            form: module.per_call,
            pairs,
        })?;
    }
    stats::record_keys(written);
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

/// Redis 7.0 has no ACL categories for module commands. The filter gives
/// MSETEX its 7.2 permission in every rule set as it is set (see `acl`), so
/// the server's own check before MSETEX is already 7.2's; only while some
/// user may still hold rules the filter never saw (just loaded, ACL LOAD)
/// are they corrected first, and the call checked again, as the server
/// would. The replication link and AOF loading are not checked, as the
/// server's own.
fn check_acl(
    ctx: &Ctx<'_>,
    module: &Module,
    args: &[Arg<'_>],
    request: &Request,
    flags: ContextFlags,
) -> Result<(), Refusal> {
    if module.acl != AclCheck::Translated || flags.replicated || flags.loading || !acl::pending() {
        return Ok(());
    }
    correct_users(ctx, module, acl::Goal::Like72);
    let pairs = args.get(request.pairs.clone()).unwrap_or_default();
    let keys: Vec<Arg<'_>> = pairs.iter().step_by(2).copied().collect();
    match ctx.acl_verdict(&module.name_c, args, &keys) {
        AclVerdict::Allowed => Ok(()),
        AclVerdict::DeniedCommand => Err(Refusal::Text(format!(
            "NOPERM this user has no permissions to run the '{}' command",
            module.name
        ))),
        AclVerdict::DeniedKey(_) => Err(Refusal::Text(
            "NOPERM this user has no permissions to access one of the keys used as arguments"
                .to_owned(),
        )),
    }
}

/// Gives every user MSETEX's permission as `goal` says, from the rules the
/// server keeps (`ACL GETUSER`), with `ACL SETUSER` run by the module
/// (which the filter leaves alone), taking the rules set since into account
/// (see [`acl::wanted_permissions`]). Returns whether every user could be
/// corrected; failures are logged.
pub fn correct_users(ctx: &Ctx<'_>, module: &Module, goal: acl::Goal) -> bool {
    let Some(CallValue::Array(users)) = ctx.call(c"ACL", &[b"USERS"]) else {
        ctx.log_warning("msetex: ACL USERS failed: MSETEX permissions not corrected");
        return false;
    };
    let written = written_users(ctx);
    let mut all = true;
    for user in users {
        let CallValue::Text(name) = user else {
            continue;
        };

        let described = ctx
            .call(c"ACL", &[b"GETUSER", &name])
            .and_then(|reply| described_user(&reply));
        let Some((root, selectors)) = described else {
            all = false;
            continue;
        };
        let rules = written
            .iter()
            .find(|(user, _)| *user == name)
            .map(|(_, rules)| rules.as_slice());
        let later = acl::later_rules(&name).unwrap_or_default();
        let wanted = acl::wanted_permissions(&root, &selectors, &module.name, goal, rules, &later);
        let Some(ops) = acl::correction(&root, &selectors, &module.name, &wanted) else {
            continue;
        };
        let mut setuser: Vec<&[u8]> = vec![b"SETUSER", &name];
        setuser.extend(ops.iter().map(|op| op.as_bytes()));
        if !matches!(ctx.call(c"ACL", &setuser), Some(CallValue::Text(_))) {
            all = false;
            ctx.log_warning(&format!(
                "msetex: could not give user '{}' MSETEX's permission ({})",
                String::from_utf8_lossy(&name),
                ops.join(" ")
            ));
        }
    }
    if all && goal == acl::Goal::Like72 {
        acl::corrected();
    }
    all
}

/// The users as their rules are written where the server read them: the
/// ACL file (`aclfile`), or else the `user` lines of redis.conf and the
/// files it includes (paths with wildcards are not followed). Empty where
/// neither can be read.
fn written_users(ctx: &Ctx<'_>) -> Vec<(Vec<u8>, Vec<Vec<u8>>)> {
    let read = |path: &str| std::fs::read_to_string(path).ok();
    if let Some(aclfile) = ctx.config(c"aclfile").filter(|path| !path.is_empty()) {
        return read(&aclfile)
            .map(|text| acl::user_lines(&text))
            .unwrap_or_default();
    }
    let mut files: Vec<String> = ffi::server_info_fields(c"server", &["config_file"])
        .into_iter()
        .map(|(_, path)| path)
        .filter(|path| !path.is_empty())
        .collect();
    let mut users = Vec::new();
    let mut seen = 0;
    while let Some(path) = files.get(seen).cloned() {
        seen += 1;
        let Some(text) = read(&path) else {
            continue;
        };
        users.extend(acl::user_lines(&text));
        for include in acl::include_lines(&text) {
            if !include.contains(['*', '?', '[']) && files.len() < 64 && !files.contains(&include) {
                files.push(include);
            }
        }
    }
    users
}

/// The root selector's `commands` and the other selectors of an `ACL
/// GETUSER` reply (RESP2: flat arrays of field and value).
fn described_user(reply: &CallValue) -> Option<(String, Vec<acl::Selector>)> {
    let field = |value: &CallValue, name: &str| -> Option<CallValue> {
        let CallValue::Array(items) = value else {
            return None;
        };
        items.chunks_exact(2).find_map(|pair| match pair {
            [CallValue::Text(key), value] if key == name.as_bytes() => Some(value.clone()),
            _ => None,
        })
    };
    let text = |value: Option<CallValue>| match value {
        Some(CallValue::Text(bytes)) => Some(String::from_utf8_lossy(&bytes).into_owned()),
        _ => None,
    };
    let root = text(field(reply, "commands"))?;
    let selectors = match field(reply, "selectors") {
        Some(CallValue::Array(list)) => list
            .iter()
            .map(|selector| {
                Some(acl::Selector {
                    commands: text(field(selector, "commands"))?,
                    keys: text(field(selector, "keys"))?,
                    channels: text(field(selector, "channels"))?,
                })
            })
            .collect::<Option<Vec<_>>>()?,
        _ => Vec::new(),
    };
    Some((root, selectors))
}

/// Cron tick: corrections due since the module loaded or an ACL LOAD.
pub fn on_cron(ctx: &Ctx<'_>) {
    if let Some(module) = config::get() {
        if module.acl == AclCheck::Translated && acl::pending() {
            correct_users(ctx, module, acl::Goal::Like72);
        }
    }
}

/// MODULE UNLOAD: whether it may go ahead. On Redis 7.0 every user's MSETEX
/// permission goes back to its `+@all` / `-@all` base first: 7.0 would
/// panic describing a user whose bit for a removed command differs from it.
/// Redis 7.2 crashes replaying rules that name a removed command, so the
/// unload is refused while some user's rules name MSETEX (the log says so).
pub fn on_unload(ctx: &Ctx<'_>) -> bool {
    let Some(module) = config::get() else {
        return true;
    };
    match module.acl {
        AclCheck::Translated => correct_users(ctx, module, acl::Goal::Unloadable),
        AclCheck::ByServer => {
            let Some(CallValue::Array(users)) = ctx.call(c"ACL", &[b"USERS"]) else {
                return true;
            };
            let naming: Vec<String> = users
                .iter()
                .filter_map(|user| match user {
                    CallValue::Text(name) => Some(name),
                    _ => None,
                })
                .filter(|name| {
                    ctx.call(c"ACL", &[b"GETUSER", name])
                        .and_then(|reply| described_user(&reply))
                        .is_some_and(|(root, selectors)| {
                            let names = |rules: &str| acl::names_command(rules, &module.name);
                            names(&root) || selectors.iter().any(|s| names(&s.commands))
                        })
                })
                .map(|name| String::from_utf8_lossy(name).into_owned())
                .collect();
            if naming.is_empty() {
                return true;
            }
            ctx.log_warning(&format!(
                "msetex: MODULE UNLOAD refused: the ACL rules of {} name '{}', and this server \
                 would crash replaying them once the command is gone; remove those rules first",
                naming.join(", "),
                module.name
            ));
            false
        }
        AclCheck::Unavailable => true,
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
    /// A command the filter may rewrite: MSETEX or COMMAND (which may ask
    /// for MSETEX's keys) where the TTL form's options must be packed
    /// before the server reads keys, ACL on Redis 7.0 (see `acl`).
    Rewrite,
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
            Seen::Rewrite
        }
        Some(module) if module.acl == AclCheck::Translated && name.eq_ignore_ascii_case(b"ACL") => {
            Seen::Rewrite
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
    if args
        .first()
        .is_some_and(|name| name.eq_ignore_ascii_case(b"ACL"))
    {
        return match acl::acl_command(args, &module.name) {
            acl::AclCommand::SetUser(ops) => Some(Rewrite {
                at: 3,
                replaced: args.len().saturating_sub(3),
                with: ops,
            }),
            acl::AclCommand::Load => {
                acl::set_pending();
                None
            }
            acl::AclCommand::Other => None,
        };
    }
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
            replaced: 1,
            with: vec![unroutable.as_bytes().to_vec()],
        }),
        _ => Some(Rewrite {
            at: args.len() - call.len() + 1,
            replaced,
            with: vec![packed],
        }),
    }
}

/// How the filter rewrites a command: the `replaced` arguments from `at`
/// on become `with`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewrite {
    pub at: usize,
    pub replaced: usize,
    pub with: Vec<Vec<u8>>,
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
