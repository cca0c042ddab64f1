//! Giving users MSETEX's permission on Redis 7.0, where module commands
//! have no ACL categories: correcting the rules the server keeps, with the
//! pure decisions of `acl`, and deciding whether MODULE UNLOAD may go ahead.

use std::sync::atomic::{AtomicU32, Ordering};

use crate::acl;
use crate::config::{self, AclCheck, Module};
use crate::ffi::{self, CallValue, Ctx};

/// Gives every user MSETEX's permission as `goal` says, from the rules the
/// server keeps (`ACL GETUSER`) and, where the server holds exactly what
/// they give, the rules as written in the file it read them from (see
/// [`acl::wanted_permissions`]), with `ACL SETUSER` run by the module (which
/// the filter leaves alone). Returns whether every user could be
/// corrected; failures are logged.
pub fn correct(ctx: &Ctx<'_>, module: &Module, goal: acl::Goal) -> bool {
    let Some(CallValue::Array(users)) = ctx.call(c"ACL", &[b"USERS"]) else {
        if acl::users_unreadable() {
            ctx.log_warning(
                "msetex: ACL USERS failed (ACL renamed or disabled?): MSETEX permissions are not \
                 corrected; category rules do not reach MSETEX, grant or deny it by name",
            );
        }
        return false;
    };
    let written = match goal {
        acl::Goal::Like72 => written_users(ctx),
        acl::Goal::Unloadable => Vec::new(),
    };
    // A user of that name would be the operator's: never touched.
    let taken = |probe: &[u8]| {
        users
            .iter()
            .any(|user| matches!(user, CallValue::Text(name) if name == probe))
    };
    let probe = (0..64)
        .map(|n| match n {
            0 => PROBE.to_vec(),
            n => [PROBE, b":", n.to_string().as_bytes()].concat(),
        })
        .find(|probe| !taken(probe));
    let mut all = true;
    let mut failed: Vec<Vec<u8>> = Vec::new();
    let mut failures: Vec<String> = Vec::new();
    for user in users {
        let CallValue::Text(name) = user else {
            continue;
        };
        let described = ctx
            .call(c"ACL", &[b"GETUSER", &name])
            .and_then(|reply| described_user(&reply));
        let Some(described) = described else {
            all = false;
            failures.push(format!(
                "'{}' (ACL GETUSER)",
                String::from_utf8_lossy(&name)
            ));
            failed.push(name);
            continue;
        };
        let rules = written
            .iter()
            .find(|(user, _)| *user == name)
            .map(|(_, rules)| rules.as_slice())
            .filter(|rules| {
                probe
                    .as_deref()
                    .is_some_and(|probe| holds_exactly(ctx, probe, &described, rules))
            });
        let wanted = acl::wanted_permissions(
            &described.root.commands,
            &described.selectors,
            &module.name,
            goal,
            rules,
        );
        let Some(ops) = acl::correction(
            &described.root.commands,
            &described.selectors,
            &module.name,
            &wanted,
        ) else {
            continue;
        };
        let mut setuser: Vec<&[u8]> = vec![b"SETUSER", &name];
        setuser.extend(ops.iter().map(|op| op.as_bytes()));
        if !matches!(ctx.call(c"ACL", &setuser), Some(CallValue::Text(_))) {
            all = false;
            failures.push(format!(
                "'{}' ({})",
                String::from_utf8_lossy(&name),
                ops.join(" ")
            ));
            failed.push(name);
        }
    }
    if goal == acl::Goal::Like72 {
        // Users left uncorrected are refused MSETEX (fail closed) and tried
        // again on every cron tick; said in the log when that changes.
        acl::corrected();
        if acl::set_uncorrected(failed) && !failures.is_empty() {
            ctx.log_warning(&format!(
                "msetex: could not give MSETEX its Redis 7.2 permission to {}: MSETEX is refused \
                 to them until it can",
                failures.join(", ")
            ));
        }
    }
    all
}

/// The user the module creates for a moment to see what the server makes
/// of written rules: this name, or the first of `msetex:probe:1`, ... that
/// no user has.
const PROBE: &[u8] = b"msetex:probe";

/// Whether the server holds for a user described as `described` exactly
/// what `rules` give on this server: a new user given `rules` (by the
/// module, which the filter leaves alone) is described the same, commands,
/// keys and channels of every selector. Then the user's rules are still the
/// ones written (not changed by `ACL SETUSER` since, which the filter
/// already translated), and their 7.2 reading is the correction.
fn holds_exactly(ctx: &Ctx<'_>, probe: &[u8], described: &User, rules: &[Vec<u8>]) -> bool {
    let mut setuser: Vec<&[u8]> = vec![b"SETUSER", probe];
    setuser.extend(rules.iter().map(Vec::as_slice));
    let created = matches!(ctx.call(c"ACL", &setuser), Some(CallValue::Text(_)));
    let made = created
        .then(|| ctx.call(c"ACL", &[b"GETUSER", probe]))
        .flatten()
        .and_then(|reply| described_user(&reply));
    let _ = ctx.call(c"ACL", &[b"DELUSER", probe]);
    made.as_ref() == Some(described)
}

/// Reads (INFO commandstats and stats) whether an `ACL LOAD` ran since the
/// last reading; if so, a correction is due.
pub fn check_loads() {
    let successes = ffi::server_info_fields(c"commandstats", &["cmdstat_acl|load"])
        .first()
        .and_then(|(_, value)| acl::successful_calls(value))
        .unwrap_or(0);
    let commands = ffi::server_info_fields(c"stats", &["total_commands_processed"])
        .first()
        .and_then(|(_, value)| value.trim().parse::<i64>().ok())
        .unwrap_or(0);
    if acl::loads_counted(successes, commands) {
        acl::set_pending();
    }
}

/// The users as their rules are written where the server read them: the
/// ACL file (`aclfile`), or else the `user` lines of redis.conf and the
/// files it includes (paths with wildcards are not followed). Empty where
/// neither can be read.
fn written_users(ctx: &Ctx<'_>) -> Vec<(Vec<u8>, Vec<Vec<u8>>)> {
    let read = |path: &str| std::fs::read_to_string(path).ok();
    if let Some(aclfile) = ctx.config(c"aclfile").filter(|path| !path.is_empty()) {
        return read(&aclfile)
            .map(|text| acl::acl_file_users(&text))
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

/// A user as `ACL GETUSER` describes its permissions: the root selector
/// and the others.
#[derive(Debug, PartialEq, Eq)]
struct User {
    root: acl::Selector,
    selectors: Vec<acl::Selector>,
}

/// The selectors of an `ACL GETUSER` reply (RESP2: flat arrays of field and
/// value).
fn described_user(reply: &CallValue) -> Option<User> {
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
    let selector = |value: &CallValue| {
        Some(acl::Selector {
            commands: text(field(value, "commands"))?,
            keys: text(field(value, "keys"))?,
            channels: text(field(value, "channels"))?,
        })
    };
    let root = selector(reply)?;
    let selectors = match field(reply, "selectors") {
        Some(CallValue::Array(list)) => list.iter().map(selector).collect::<Option<Vec<_>>>()?,
        _ => Vec::new(),
    };
    Some(User { root, selectors })
}

/// Cron tick: whether an `ACL LOAD` ran (when the filter saw one, while
/// one may wait in a transaction, and every tenth tick), corrections due,
/// and which clients may still hold a queued `ACL LOAD`.
pub fn on_cron(ctx: &Ctx<'_>) {
    let Some(module) = config::get() else {
        return;
    };
    if module.acl != AclCheck::Translated {
        return;
    }
    static TICKS: AtomicU32 = AtomicU32::new(0);
    let tenth = TICKS.fetch_add(1, Ordering::Relaxed).is_multiple_of(10);
    if acl::load_check_due() || acl::load_may_be_queued() || tenth {
        check_loads();
    }
    if acl::pending() || acl::some_uncorrected() {
        correct(ctx, module, acl::Goal::Like72);
    }
    if acl::load_may_be_queued() {
        if let Some(CallValue::Text(list)) = ctx.call(c"CLIENT", &[b"LIST"]) {
            acl::clients_in_multi_now(acl::clients_in_multi(&String::from_utf8_lossy(&list)));
        }
    }
}

/// Before the server sleeps, after the commands of one event loop iteration
/// and before their replies go out: if the filter saw an `ACL LOAD` (or an
/// EXEC that may run one), whether one ran, and the correction that makes
/// due, so that a client sees its `ACL LOAD` answered only once the loaded
/// users are corrected.
pub fn before_sleep(ctx: &Ctx<'_>) {
    let Some(module) = config::get() else {
        return;
    };
    if module.acl != AclCheck::Translated {
        return;
    }
    if !acl::load_check_due() {
        return;
    }
    check_loads();
    if acl::pending() {
        correct(ctx, module, acl::Goal::Like72);
    }
}

/// MODULE UNLOAD: whether it may go ahead. On Redis 7.0 every user's MSETEX
/// permission goes back to its `+@all` / `-@all` base first: 7.0 would
/// panic describing a user whose bit for a removed command differs from it.
/// Redis 7.2 crashes replaying rules that name a removed command, so the
/// unload is refused while some user's rules name MSETEX (the log says so).
pub fn on_unload(ctx: &Ctx<'_>) -> bool {
    match config::get() {
        Some(module) => correct(ctx, module, acl::Goal::Unloadable),
        None => true,
    }
}
