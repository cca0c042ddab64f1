//! Giving users MSETEX's permission on Redis 7.0, where module commands
//! have no ACL categories: correcting the rules the server keeps, with the
//! pure decisions of `acl`, and deciding whether MODULE UNLOAD may go ahead.

use crate::acl;
use crate::config::{self, AclCheck, Module};
use crate::ffi::{self, CallValue, Ctx};

/// Gives every user MSETEX's permission as `goal` says, from the rules the
/// server keeps (`ACL GETUSER`), with `ACL SETUSER` run by the module
/// (which the filter leaves alone), taking the rules set since into account
/// (see [`acl::wanted_permissions`]). Returns whether every user could be
/// corrected; failures are logged.
pub fn correct(ctx: &Ctx<'_>, module: &Module, goal: acl::Goal) -> bool {
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

/// Cron tick: corrections due since the module loaded or an ACL LOAD; and
/// once no client is in a transaction, no `ACL LOAD` can wait in one.
pub fn on_cron(ctx: &Ctx<'_>) {
    let Some(module) = config::get() else {
        return;
    };
    if module.acl != AclCheck::Translated {
        return;
    }
    if acl::pending() {
        correct(ctx, module, acl::Goal::Like72);
    }
    if acl::load_may_be_queued() {
        if let Some(CallValue::Text(list)) = ctx.call(c"CLIENT", &[b"LIST"]) {
            if !acl::some_client_in_multi(&String::from_utf8_lossy(&list)) {
                acl::no_load_queued();
            }
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
        AclCheck::Translated => correct(ctx, module, acl::Goal::Unloadable),
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
