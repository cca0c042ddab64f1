//! MSETEX itself: validate the whole call, check NX/XX against every key,
//! then for each key write the value, set the deadline, notify and
//! replicate, in the order `SET ... PXAT` does.
//!
//! Atomicity comes from the server running one command at a time; the only
//! thing we must guarantee is that an error reply means nothing was written,
//! which is why every check happens in `parse` before the first write.

use std::ffi::CString;
use std::sync::RwLock;

use crate::ffi::{Arg, Ctx, EventClass, Key, KeyPositions, OwnedString, Reply};
use crate::parse::{self, Condition, ParseError, Request};
use crate::{propagation, stats};

/// The name the command was registered under, used in error texts the way
/// the server uses a command's own name ("... for 'msetex' command").
static COMMAND_NAME: RwLock<String> = RwLock::new(String::new());

/// Records the registered command name (lower case, as the server reports it).
pub fn set_command_name(name: &str) {
    if let Ok(mut slot) = COMMAND_NAME.write() {
        *slot = name.to_ascii_lowercase();
    }
}

fn command_name() -> String {
    COMMAND_NAME
        .read()
        .map(|name| name.clone())
        .unwrap_or_default()
}

/// `MSETEX [NX | XX] [EX | PX | EXAT | PXAT] time key value [key value ...]`
pub fn msetex(ctx: &Ctx<'_>, args: &[Arg<'_>]) -> Reply {
    stats::record_call();
    let request = match parse::parse(args, ctx.now_ms()) {
        Ok(request) => request,
        Err(error) => {
            stats::record_error();
            return Reply::Error(error_text(error));
        }
    };
    let pairs = args.get(request.first_key..).unwrap_or_default();
    if !condition_holds(ctx, pairs, request.condition) {
        return Reply::Integer(0);
    }
    match write_all(ctx, pairs, &request) {
        Ok(written) => {
            stats::record_keys(written);
            match request.condition {
                Condition::Always => Reply::Ok,
                Condition::NoneExist | Condition::AllExist => Reply::Integer(1),
            }
        }
        Err(error) => {
            stats::record_error();
            ctx.log_warning(&error.to_string());
            Reply::Error(internal_error_text(&error))
        }
    }
}

/// Answers the server's "where are the keys" call (`getkeys-api`): the
/// keys move with the options, so a fixed first/last/step cannot say. A
/// call whose shape is invalid declares no keys and fails when it runs.
pub fn declare_keys(positions: &KeyPositions, args: &[Arg<'_>]) {
    if let Ok(layout) = parse::parse_layout(args) {
        for index in layout.key_indexes(args.len()) {
            positions.key_at(index);
        }
    }
}

/// NX / XX: checks every key before anything is written. Keys are looked
/// up as a write command does (a logically expired key counts as absent),
/// without touching hit/miss statistics or signalling anything.
fn condition_holds(ctx: &Ctx<'_>, pairs: &[Arg<'_>], condition: Condition) -> bool {
    let wanted_empty = match condition {
        Condition::Always => return true,
        Condition::NoneExist => true,
        Condition::AllExist => false,
    };
    pairs.iter().step_by(2).all(|key| {
        ctx.open_key_for_write(*key)
            .is_some_and(|handle| handle.is_empty() == wanted_empty)
    })
}

/// The Redis error text for a refused call, as the server words it.
fn error_text(error: ParseError) -> CString {
    let text = match error {
        ParseError::WrongArity => {
            format!(
                "ERR wrong number of arguments for '{}' command",
                command_name()
            )
        }
        ParseError::Syntax => "ERR syntax error".to_owned(),
        ParseError::NotAnInteger => "ERR value is not an integer or out of range".to_owned(),
        ParseError::InvalidExpireTime => {
            format!("ERR invalid expire time in '{}' command", command_name())
        }
    };
    CString::new(text).unwrap_or_else(|_| c"ERR invalid arguments".to_owned())
}

fn internal_error_text(error: &WriteError) -> CString {
    CString::new(format!("ERR msetex {error}"))
        .unwrap_or_else(|_| c"ERR msetex internal error".to_owned())
}

/// A module API call that its preconditions say cannot fail, failed.
#[derive(Debug)]
enum WriteError {
    /// Could not allocate the strings shared by the replicated commands
    /// (checked before the first write, so nothing was written).
    Setup,
    /// A key could not be written; earlier keys of the call were written
    /// and replicated, so replicas still match this server.
    Key { index: usize, step: &'static str },
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WriteError::Setup => write!(f, "could not allocate the replication arguments"),
            WriteError::Key { index, step } => {
                write!(f, "failed to {step} for key #{index} of the call")
            }
        }
    }
}

/// Writes and replicates every pair; returns how many keys were written.
fn write_all(ctx: &Ctx<'_>, pairs: &[Arg<'_>], request: &Request) -> Result<usize, WriteError> {
    let replication = Replication::for_call(ctx, request.deadline_ms)?;
    let mut written_keys = 0;
    for (index, pair) in pairs.chunks_exact(2).enumerate() {
        if let [key, value] = pair {
            let written = write_key(ctx, *key, *value, request.deadline_ms)
                .map_err(|step| WriteError::Key { index, step })?;
            if written == Written::Directly {
                replication
                    .record(ctx, *key, *value)
                    .map_err(|step| WriteError::Key { index, step })?;
            }
            written_keys += 1;
        }
    }
    Ok(written_keys)
}

/// How this call's writes reach replicas and the AOF.
enum Replication {
    /// Every key goes out as `SET key value PXAT <deadline>`: absolute, so a
    /// replica or an AOF replay lands on the same instant, and native, so
    /// the AOF loads without this module. The two strings are shared.
    Commands {
        pxat: OwnedString,
        deadline: OwnedString,
    },
    /// Nobody receives replicated commands (see `propagation`): only count
    /// the change, as the server does for every key MSET writes.
    CountOnly,
}

impl Replication {
    fn for_call(ctx: &Ctx<'_>, deadline_ms: i64) -> Result<Replication, WriteError> {
        if !propagation::replication_is_fed(ctx.aof_on()) {
            return Ok(Replication::CountOnly);
        }
        Ok(Replication::Commands {
            pxat: ctx.string(b"PXAT").ok_or(WriteError::Setup)?,
            deadline: ctx.string_from_i64(deadline_ms).ok_or(WriteError::Setup)?,
        })
    }

    fn record(&self, ctx: &Ctx<'_>, key: Arg<'_>, value: Arg<'_>) -> Result<(), &'static str> {
        match self {
            Replication::Commands { pxat, deadline } => {
                if ctx.replicate_set_pxat(key, value, pxat, deadline) {
                    Ok(())
                } else {
                    Err("replicate")
                }
            }
            Replication::CountOnly => {
                ctx.count_change_without_propagating();
                Ok(())
            }
        }
    }
}

/// How a key was written, which decides who replicates it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Written {
    /// Through the module key API: this module notifies and replicates.
    Directly,
    /// By the server's own SET, which notified, counted and replicated it.
    BySet,
}

/// Writes one key with its value and deadline, signals it modified (WATCH,
/// client-side caching) and fires `set` then `expire`. A deadline already
/// past leaves the key logically expired, exactly as `SET ... PXAT` does.
fn write_key(
    ctx: &Ctx<'_>,
    key: Arg<'_>,
    value: Arg<'_>,
    deadline_ms: i64,
) -> Result<Written, &'static str> {
    // A canonical integer is stored by SET in the compact `int` encoding (or
    // as a shared integer), which no module API can produce: let SET do it.
    // If the server refuses (SET renamed away), the generic path still
    // writes the right value, only less compactly.
    if let Some(number) = parse::parse_i64(value.bytes()) {
        if ctx.call_set_integer_pxat(key, number, deadline_ms) {
            return Ok(Written::BySet);
        }
    }
    let mut handle = ctx.open_key_for_write(key).ok_or("open the key")?;
    store_value(&mut handle, value)?;
    ctx.signal_modified(key);
    ctx.notify(EventClass::String, c"set", key);
    if !handle.set_abs_expire(deadline_ms) {
        return Err("set the expiry");
    }
    ctx.notify(EventClass::Generic, c"expire", key);
    Ok(Written::Directly)
}

/// Stores `value` as the key's string. A key that already holds a string of
/// the same length is overwritten in place: its dictionary entry and TTL
/// entry stay, which is what makes refreshing a session as cheap as MSET.
/// Anything else is replaced whole, like SET.
fn store_value(handle: &mut Key<'_>, value: Arg<'_>) -> Result<(), &'static str> {
    let bytes = value.bytes();
    let same_length = !bytes.is_empty() && handle.string_len() == Some(bytes.len());
    if same_length && handle.overwrite_same_length(bytes) {
        return Ok(());
    }
    if handle.set(value) {
        Ok(())
    } else {
        Err("store the value")
    }
}
