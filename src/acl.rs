//! ACL on Redis 7.0: MSETEX as a member of `@write @string @slow`, as on
//! Redis 7.2+.
//!
//! Redis 7.0 gives module commands no ACL categories: `-@write` leaves a
//! module command's permission bit alone. Everything else about the check
//! is the same code as 7.2's, and the server runs it before MSETEX: per
//! selector, the command bit and every key the command declares (with write
//! access), the first selector that allows both wins, the refusal is logged
//! and worded by the server. So the module leans on that check and fixes
//! the one input that differs, the bit:
//!
//! - **Rules as they are set.** The command filter sees every `ACL
//!   SETUSER` before it runs and adds, after each `+@write`, `+@string` or
//!   `+@slow` (and each `-@...`), the same rule for MSETEX by name
//!   ([`translate_setuser`]), root and selectors alike, as 7.2 applies the
//!   category to MSETEX. The bit then ends as 7.2 leaves it.
//! - **Rules the filter never sees**: users of redis.conf and of the ACL
//!   file (loaded after the modules at start-up, or by `ACL LOAD`), and
//!   users that existed before `MODULE LOAD`. Those are corrected from the
//!   rules the server keeps ([`correction`]), on the next cron tick, and
//!   before any MSETEX call runs meanwhile. The filter sees a command when
//!   it is queued, so an `ACL LOAD` inside MULTI makes the correction due
//!   again at every `EXEC` until no client is in a transaction
//!   ([`on_exec`]). 7.0 keeps a description rebuilt
//!   from the bitmap rather than the rules as written, which is exact
//!   unless a category rule came after an explicit grant or denial of
//!   MSETEX in the same line (README, *Security*).
//! - **MODULE UNLOAD**: 7.0 panics describing a user whose bit for a
//!   removed command differs from its `+@all` / `-@all` base
//!   (`ACLDescribeSelectorCommandRules`), so the bits go back to the base
//!   first ([`Goal::Unloadable`]).
//!
//! Pure functions over strings; the state is three flags and the rules set
//! since a correction became due.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// The categories MSETEX belongs to on Redis 7.2+ (`syntax::ACL_CATEGORIES`).
const CATEGORIES: [&str; 3] = ["write", "string", "slow"];

// ---------------------------------------------------------------------------
// Rules as they are set: ACL SETUSER

/// The operations of `ACL SETUSER user op ...` (`ops`: the arguments after
/// the user name) with every category rule of MSETEX's categories followed
/// by the same rule for `name`; `None` when there is none (nothing to
/// change). Selectors spread over several arguments are merged first, as the
/// server merges them (`ACLMergeSelectorArguments`); one with quotes the
/// server cannot read is left as it is (the server refuses it).
pub fn translate_setuser(ops: &[&[u8]], name: &str) -> Option<Vec<Vec<u8>>> {
    let merged = merge_selectors(ops)?;
    let mut changed = false;
    let mut out = Vec::with_capacity(merged.len() + 2);
    for op in merged {
        if is_selector(&op) {
            let inner = op.get(1..op.len() - 1).unwrap_or_default();
            match translate_selector(inner, name) {
                Some(translated) => {
                    changed = true;
                    out.push([b"(".as_slice(), &translated, b")"].concat());
                }
                None => out.push(op),
            }
        } else {
            let extra = category_rule(&op).map(|sign| [&[sign][..], name.as_bytes()].concat());
            out.push(op);
            if let Some(extra) = extra {
                changed = true;
                out.push(extra);
            }
        }
    }
    changed.then_some(out)
}

/// `+` or `-` when `op` is `±@write`, `±@string` or `±@slow` (any case).
fn category_rule(op: &[u8]) -> Option<u8> {
    let (&sign, rest) = op.split_first()?;
    let category = rest.strip_prefix(b"@")?;
    let ours = CATEGORIES
        .iter()
        .any(|c| c.as_bytes().eq_ignore_ascii_case(category));
    (ours && (sign == b'+' || sign == b'-')).then_some(sign)
}

fn is_selector(op: &[u8]) -> bool {
    op.len() >= 2 && op.first() == Some(&b'(') && op.last() == Some(&b')')
}

/// Joins a selector given as several arguments (`(+set`, `~tmp:*)`) with
/// spaces, as the server does; `None` when a parenthesis stays open.
fn merge_selectors(ops: &[&[u8]]) -> Option<Vec<Vec<u8>>> {
    let mut merged = Vec::with_capacity(ops.len());
    let mut open: Option<Vec<u8>> = None;
    for op in ops {
        match open.as_mut() {
            Some(selector) => {
                selector.push(b' ');
                selector.extend_from_slice(op);
                if op.last() == Some(&b')') {
                    merged.extend(open.take());
                }
            }
            None if op.first() == Some(&b'(') && op.last() != Some(&b')') => {
                open = Some(op.to_vec());
            }
            None => merged.push(op.to_vec()),
        }
    }
    open.is_none().then_some(merged)
}

/// The inside of a selector with the rule for `name` added after each
/// category rule; `None` when nothing changes or the server could not split
/// it into rules (then it refuses the selector, and so the SETUSER).
fn translate_selector(inner: &[u8], name: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(inner.len() + 16);
    let mut copied = 0;
    for (value, end) in split_args(inner)? {
        if let Some(sign) = category_rule(&value) {
            out.extend_from_slice(inner.get(copied..end)?);
            out.push(b' ');
            out.push(sign);
            out.extend_from_slice(name.as_bytes());
            copied = end;
        }
    }
    if copied == 0 {
        return None;
    }
    out.extend_from_slice(inner.get(copied..)?);
    Some(out)
}

/// `sdssplitargs`: the arguments of `line`, each with the offset just past
/// its last byte (its closing quote, if quoted). `None` where the server's
/// own split fails (an unterminated quote, or a closing quote followed by
/// something other than a space).
fn split_args(line: &[u8]) -> Option<Vec<(Vec<u8>, usize)>> {
    // A C string: it ends at the first NUL.
    let line = line.split(|b| *b == 0).next().unwrap_or_default();
    let at = |i: usize| line.get(i).copied().unwrap_or(0);
    let mut args = Vec::new();
    let mut p = 0;
    loop {
        while p < line.len() && is_space(at(p)) {
            p += 1;
        }
        if p >= line.len() {
            return Some(args);
        }
        let mut current = Vec::new();
        let (mut in_double, mut in_single) = (false, false);
        let end = loop {
            let c = at(p);
            if in_double {
                if c == b'\\' && at(p + 1) == b'x' && is_hex(at(p + 2)) && is_hex(at(p + 3)) {
                    current.push(hex(at(p + 2)) * 16 + hex(at(p + 3)));
                    p += 3;
                } else if c == b'\\' && at(p + 1) != 0 {
                    p += 1;
                    current.push(match at(p) {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 0x08,
                        b'a' => 0x07,
                        other => other,
                    });
                } else if c == b'"' {
                    if at(p + 1) != 0 && !is_space(at(p + 1)) {
                        return None;
                    }
                    break p + 1;
                } else if c == 0 {
                    return None;
                } else {
                    current.push(c);
                }
            } else if in_single {
                if c == b'\\' && at(p + 1) == b'\'' {
                    p += 1;
                    current.push(b'\'');
                } else if c == b'\'' {
                    if at(p + 1) != 0 && !is_space(at(p + 1)) {
                        return None;
                    }
                    break p + 1;
                } else if c == 0 {
                    return None;
                } else {
                    current.push(c);
                }
            } else {
                match c {
                    b' ' | b'\n' | b'\r' | b'\t' | 0 => break p,
                    b'"' => in_double = true,
                    b'\'' => in_single = true,
                    _ => current.push(c),
                }
            }
            p += 1;
        };
        p = end + usize::from(end < line.len());
        args.push((current, end));
    }
}

/// `isspace` in the C locale.
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn is_hex(c: u8) -> bool {
    c.is_ascii_hexdigit()
}

fn hex(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        b'A'..=b'F' => c - b'A' + 10,
        _ => 0,
    }
}

// ---------------------------------------------------------------------------
// Rules the filter never saw: corrections from the server's description

/// MSETEX's permission in one selector: its command bit, and the first
/// arguments it is allowed with while the bit is clear (`+msetex|60`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Permission {
    pub allowed: bool,
    pub first_args: Vec<String>,
}

/// Which permission a correction aims at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Goal {
    /// What Redis 7.2 gives for the same rules: category rules include
    /// MSETEX.
    Like72,
    /// The `+@all` / `-@all` base and no first argument: what the server
    /// can still describe once the command is gone.
    Unloadable,
}

/// MSETEX's permission in a selector described by `commands` (the
/// `commands` field of `ACL GETUSER`: `+@all` or `-@all`, then rules), with
/// category rules applying to MSETEX (`categories`, as on 7.2) or not (as
/// on 7.0, where the description reproduces the bitmap exactly).
pub fn permission(commands: &str, name: &str, categories: bool) -> Permission {
    let mut permission = Permission {
        allowed: false,
        first_args: Vec::new(),
    };
    let set = |permission: &mut Permission, allowed| {
        permission.allowed = allowed;
        permission.first_args.clear();
    };
    for rule in commands.split(' ').filter(|r| !r.is_empty()) {
        let (sign, body) = rule.split_at(1.min(rule.len()));
        let allow = match sign {
            "+" => true,
            "-" => false,
            _ => continue,
        };
        if let Some(category) = body.strip_prefix('@') {
            let ours = CATEGORIES.iter().any(|c| c.eq_ignore_ascii_case(category));
            if category.eq_ignore_ascii_case("all") || (categories && ours) {
                set(&mut permission, allow);
            }
        } else if body.eq_ignore_ascii_case(name) {
            set(&mut permission, allow);
        } else if let Some(first_arg) = body
            .get(..name.len())
            .filter(|prefix| prefix.eq_ignore_ascii_case(name))
            .and_then(|_| body.get(name.len()..))
            .and_then(|rest| rest.strip_prefix('|'))
        {
            if allow {
                permission.first_args.push(first_arg.to_owned());
            }
        }
    }
    permission
}

/// The rules that take a selector described by `commands` from its 7.0
/// permission to `wanted`; empty when it already has it.
pub fn fix(commands: &str, name: &str, wanted: &Permission) -> Vec<String> {
    if permission(commands, name, false) == *wanted {
        return Vec::new();
    }
    // -name clears the bit and the first arguments, then rebuild.
    let mut rules = vec![format!("-{name}")];
    if wanted.allowed {
        rules.push(format!("+{name}"));
    } else {
        rules.extend(wanted.first_args.iter().map(|arg| format!("+{name}|{arg}")));
    }
    rules
}

/// The permission `goal` asks for in a selector described by `commands`,
/// from the description alone.
pub fn wanted(commands: &str, name: &str, goal: Goal) -> Permission {
    match goal {
        Goal::Like72 => permission(commands, name, true),
        Goal::Unloadable => Permission {
            allowed: commands.split(' ').next() == Some("+@all"),
            first_args: Vec::new(),
        },
    }
}

/// MSETEX's permission in each selector (the root first) of a user given
/// the rules `ops` (as `ACL SETUSER` or a `user` line takes them, after the
/// name), applied to a new user, with category rules applying to MSETEX
/// (`categories`, as 7.2) or not (as 7.0). `None` where the server would
/// refuse the rules (a selector it cannot read).
pub fn permissions(ops: &[&[u8]], name: &str, categories: bool) -> Option<Vec<Permission>> {
    let empty = || Permission {
        allowed: false,
        first_args: Vec::new(),
    };
    let mut selectors = vec![empty()];
    for op in merge_selectors(ops)? {
        if is_selector(&op) {
            let mut selector = empty();
            for (rule, _) in split_args(op.get(1..op.len() - 1)?)? {
                apply_rule(&mut selector, &rule, name, categories);
            }
            selectors.push(selector);
        } else if op.eq_ignore_ascii_case(b"reset") {
            selectors = vec![empty()];
        } else if op.eq_ignore_ascii_case(b"clearselectors") {
            selectors.truncate(1);
        } else if let Some(root) = selectors.first_mut() {
            apply_rule(root, &op, name, categories);
        }
    }
    Some(selectors)
}

/// One rule's effect on MSETEX's permission in a selector.
fn apply_rule(permission: &mut Permission, rule: &[u8], name: &str, categories: bool) {
    let set = |permission: &mut Permission, allowed| {
        permission.allowed = allowed;
        permission.first_args.clear();
    };
    let text = String::from_utf8_lossy(rule);
    match text.to_ascii_lowercase().as_str() {
        "allcommands" | "+@all" => return set(permission, true),
        "nocommands" | "-@all" => return set(permission, false),
        _ => {}
    }
    let allow = match text.as_bytes().first() {
        Some(b'+') => true,
        Some(b'-') => false,
        _ => return,
    };
    let body = text.get(1..).unwrap_or_default();
    if let Some(category) = body.strip_prefix('@') {
        if categories && CATEGORIES.iter().any(|c| c.eq_ignore_ascii_case(category)) {
            set(permission, allow);
        }
    } else if body.eq_ignore_ascii_case(name) {
        set(permission, allow);
    } else if let Some(first_arg) = body
        .get(..name.len())
        .filter(|prefix| prefix.eq_ignore_ascii_case(name))
        .and_then(|_| body.get(name.len()..))
        .and_then(|rest| rest.strip_prefix('|'))
    {
        if allow
            && !permission
                .first_args
                .iter()
                .any(|a| a.eq_ignore_ascii_case(first_arg))
        {
            permission.first_args.push(first_arg.to_owned());
        }
    }
}

/// The `user <name> <rules...>` lines of a configuration or ACL file:
/// each name with its rules, as the server reads the line.
pub fn user_lines(text: &str) -> Vec<(Vec<u8>, Vec<Vec<u8>>)> {
    text.lines()
        .filter_map(|line| {
            let args = split_args(line.trim().as_bytes())?;
            let mut words = args.into_iter().map(|(word, _)| word);
            let directive = words.next()?;
            if !directive.eq_ignore_ascii_case(b"user") {
                return None;
            }
            let user = words.next()?;
            Some((user, words.collect()))
        })
        .collect()
}

/// The `include <path>` lines of a configuration file.
pub fn include_lines(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| {
            let args = split_args(line.trim().as_bytes())?;
            match args.as_slice() {
                [(directive, _), (path, _)] if directive.eq_ignore_ascii_case(b"include") => {
                    Some(String::from_utf8_lossy(path).into_owned())
                }
                _ => None,
            }
        })
        .collect()
}

/// True when the rules `commands` name the command `name` (`+name`,
/// `-name`, `+name|arg`).
pub fn names_command(commands: &str, name: &str) -> bool {
    commands.split(' ').any(|rule| {
        let body = rule.get(1..).unwrap_or_default();
        let command = body.split('|').next().unwrap_or_default();
        (rule.starts_with('+') || rule.starts_with('-')) && command.eq_ignore_ascii_case(name)
    })
}

/// One selector as `ACL GETUSER` describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selector {
    pub commands: String,
    pub keys: String,
    pub channels: String,
}

/// The `ACL SETUSER <user> ...` operations that give a user described by
/// `root` and `selectors` the permissions `wanted` (root first, then one
/// per selector), in every selector; `None` when it has them everywhere.
/// Selectors cannot be changed one by one: when one needs a fix, all are
/// cleared and added again from their descriptions (as `ACL SAVE` and `ACL
/// LOAD` would), fixed.
pub fn correction(
    root: &str,
    selectors: &[Selector],
    name: &str,
    wanted: &[Permission],
) -> Option<Vec<String>> {
    let mut wanted = wanted.iter();
    let mut ops = fix(root, name, wanted.next()?);
    let fixes: Vec<Vec<String>> = selectors
        .iter()
        .zip(wanted)
        .map(|(s, wanted)| fix(&s.commands, name, wanted))
        .collect();
    if fixes.len() != selectors.len() {
        return None;
    }
    if fixes.iter().any(|f| !f.is_empty()) {
        ops.push("clearselectors".to_owned());
        for (selector, fix) in selectors.iter().zip(&fixes) {
            let parts = [
                selector.keys.as_str(),
                selector.channels.as_str(),
                selector.commands.as_str(),
            ];
            let mut words: Vec<&str> = parts.into_iter().filter(|p| !p.is_empty()).collect();
            words.extend(fix.iter().map(String::as_str));
            ops.push(format!("({})", words.join(" ")));
        }
    }
    (!ops.is_empty()).then_some(ops)
}

/// The permissions a correction gives a user described by `root` and
/// `selectors`, for `goal`:
/// - where its rules are known whole (`later` holds a `reset`: the rules
///   since it), theirs;
/// - else where the rules `written` for it (its line in the ACL file or
///   redis.conf) followed by `later` still are what the server applied
///   (their 7.0 reading gives the user's present bits in every selector),
///   theirs;
/// - else what the description gives: exact unless a category rule came
///   after an explicit grant or denial of MSETEX (the server keeps no more).
pub fn wanted_permissions(
    root: &str,
    selectors: &[Selector],
    name: &str,
    goal: Goal,
    written: Option<&[Vec<u8>]>,
    later: &[Vec<u8>],
) -> Vec<Permission> {
    let described = std::iter::once(root).chain(selectors.iter().map(|s| s.commands.as_str()));
    if goal == Goal::Like72 {
        let reset = later
            .iter()
            .rposition(|op| op.eq_ignore_ascii_case(b"reset"));
        let rules: Option<Vec<&[u8]>> = match (reset, written) {
            (Some(at), _) => Some(later.iter().skip(at).map(Vec::as_slice).collect()),
            (None, Some(written)) => {
                let all: Vec<&[u8]> = written.iter().chain(later).map(Vec::as_slice).collect();
                let now: Vec<Permission> = described
                    .clone()
                    .map(|commands| permission(commands, name, false))
                    .collect();
                (permissions(&all, name, false).as_ref() == Some(&now)).then_some(all)
            }
            (None, None) => None,
        };
        if let Some(like72) = rules.and_then(|rules| permissions(&rules, name, true)) {
            return like72;
        }
    }
    described
        .map(|commands| wanted(commands, name, goal))
        .collect()
}

// ---------------------------------------------------------------------------
// When to correct

/// True while some user may hold rules the filter did not translate.
static PENDING: AtomicBool = AtomicBool::new(false);

/// While a correction is due: the rules each user got since, through `ACL
/// SETUSER` (or `reset`, for `ACL DELUSER`), in order. A correction applies
/// them after the user's written rules.
static LATER: Mutex<Option<RulesByUser>> = Mutex::new(None);

/// Rules (each an argument of `ACL SETUSER`) by user name.
type RulesByUser = HashMap<Vec<u8>, Vec<Vec<u8>>>;

/// True from an `ACL LOAD` seen by the filter until a cron tick finds no
/// client in a transaction: the filter sees a command when it is queued, so
/// a queued `ACL LOAD` runs at some later `EXEC`, which makes a correction
/// due again ([`on_exec`]).
static LOAD_MAY_BE_QUEUED: AtomicBool = AtomicBool::new(false);

/// Users may hold untranslated rules (module loaded, ACL LOAD seen).
pub fn set_pending() {
    if let Ok(mut later) = LATER.lock() {
        *later = None;
    }
    PENDING.store(true, Ordering::Relaxed);
}

/// `EXEC` is about to run: if it may hold an `ACL LOAD`, the users it
/// loads need a correction once it has run (before any MSETEX after it,
/// inside the transaction too). The rules remembered since stay.
pub fn on_exec() {
    if LOAD_MAY_BE_QUEUED.load(Ordering::Relaxed) {
        PENDING.store(true, Ordering::Relaxed);
    }
}

/// True while an `ACL LOAD` may wait in a transaction.
pub fn load_may_be_queued() -> bool {
    LOAD_MAY_BE_QUEUED.load(Ordering::Relaxed)
}

/// No client is in a transaction: no `ACL LOAD` can be queued any more.
pub fn no_load_queued() {
    LOAD_MAY_BE_QUEUED.store(false, Ordering::Relaxed);
}

/// Whether `CLIENT LIST` output (one client a line, `flags=...` among its
/// fields) shows a client inside MULTI (flag `x`).
pub fn some_client_in_multi(client_list: &str) -> bool {
    client_list.lines().any(|line| {
        line.split(' ')
            .find_map(|field| field.strip_prefix("flags="))
            .is_some_and(|flags| flags.contains('x'))
    })
}

/// True while a correction is due.
pub fn pending() -> bool {
    PENDING.load(Ordering::Relaxed)
}

/// A correction covered every user.
pub fn corrected() {
    if let Ok(mut later) = LATER.lock() {
        *later = None;
    }
    PENDING.store(false, Ordering::Relaxed);
}

/// `user` is about to get `ops`: remembered while a correction is due.
fn remember(user: &[u8], ops: &[&[u8]]) {
    if !pending() {
        return;
    }
    if let Ok(mut later) = LATER.lock() {
        let rules = later
            .get_or_insert_with(HashMap::new)
            .entry(user.to_vec())
            .or_default();
        rules.extend(ops.iter().map(|op| op.to_vec()));
    }
}

/// The rules `user` got since the correction became due, if any.
pub fn later_rules(user: &[u8]) -> Option<Vec<Vec<u8>>> {
    LATER.lock().ok()?.as_ref()?.get(user).cloned()
}

/// What the command filter does with an `ACL ...` command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AclCommand {
    Other,
    /// `ACL SETUSER user ops`: replace the ops (from argument 3) with these.
    SetUser(Vec<Vec<u8>>),
    /// `ACL LOAD`: users come from the ACL file, untranslated.
    Load,
}

/// Classifies `ACL ...` (`args` with the command name) for the filter.
pub fn acl_command(args: &[&[u8]], name: &str) -> AclCommand {
    let sub = args.get(1).copied().unwrap_or_default();
    if sub.eq_ignore_ascii_case(b"LOAD") {
        LOAD_MAY_BE_QUEUED.store(true, Ordering::Relaxed);
        return AclCommand::Load;
    }
    if sub.eq_ignore_ascii_case(b"DELUSER") {
        for user in args.get(2..).unwrap_or_default() {
            remember(user, &[b"reset"]);
        }
        return AclCommand::Other;
    }
    if !sub.eq_ignore_ascii_case(b"SETUSER") {
        return AclCommand::Other;
    }
    let (Some(user), Some(ops)) = (args.get(2), args.get(3..)) else {
        return AclCommand::Other;
    };
    remember(user, ops);
    match translate_setuser(ops, name) {
        Some(ops) => AclCommand::SetUser(ops),
        None => AclCommand::Other,
    }
}

#[cfg(test)]
mod tests;
