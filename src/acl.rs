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
//!   users that existed before `MODULE LOAD`. Those are corrected from their
//!   rules as written, where the server still holds exactly what they give,
//!   else from the rules the server describes ([`wanted_permissions`],
//!   [`correction`]). What the filter sees of `ACL LOAD` (sent by anyone,
//!   perhaps refused, perhaps queued) only says when to read from the
//!   server whether one succeeded (see "When to correct"). 7.0 keeps a
//!   description rebuilt from the bitmap rather than the rules as written,
//!   which is exact unless a category rule came after an explicit grant or
//!   denial of MSETEX (README, *Security*).
//! - **MODULE UNLOAD**: 7.0 panics describing a user whose bit for a
//!   removed command differs from its `+@all` / `-@all` base
//!   (`ACLDescribeSelectorCommandRules`), so the bits go back to the base
//!   first ([`Goal::Unloadable`]).
//!
//! Pure functions over strings; the state is a few flags and the count of
//! successful `ACL LOAD`s last read.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
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
    let (&sign, rest) = c_str(op).split_first()?;
    let category = rest.strip_prefix(b"@")?;
    let ours = CATEGORIES
        .iter()
        .any(|c| c.as_bytes().eq_ignore_ascii_case(category));
    (ours && (sign == b'+' || sign == b'-')).then_some(sign)
}

/// An operation as the server compares it with names (`strcasecmp`): up
/// to its first NUL byte.
fn c_str(op: &[u8]) -> &[u8] {
    op.split(|b| *b == 0).next().unwrap_or_default()
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
        } else if c_str(&op).eq_ignore_ascii_case(b"reset") {
            selectors = vec![empty()];
        } else if c_str(&op).eq_ignore_ascii_case(b"clearselectors") {
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
    let text = String::from_utf8_lossy(c_str(rule));
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

/// The `user <name> <rules...>` lines of a configuration file: each name
/// with its rules, as the server reads the line (`sdssplitargs`).
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

/// The users of an ACL file (`aclfile`), read as the server reads them
/// (`ACLLoadFromFile`): each line trimmed, split on single spaces with no
/// quoting, `user` (in lower case) then the name and the rules, each rule
/// trimmed of tabs and line ends.
pub fn acl_file_users(text: &str) -> Vec<(Vec<u8>, Vec<Vec<u8>>)> {
    text.split('\n')
        .filter_map(|line| {
            let line = line.trim_matches([' ', '\t', '\r', '\n']);
            let mut words = line.split(' ');
            if words.next()? != "user" {
                return None;
            }
            let user = words.next()?.as_bytes().to_vec();
            let rules = words
                .map(|rule| rule.trim_matches(['\t', '\r', '\n']).as_bytes().to_vec())
                .collect();
            Some((user, rules))
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
            let mut words: Vec<String> = parts
                .into_iter()
                .flat_map(|part| part.split(' '))
                .filter(|word| !word.is_empty())
                .map(quoted)
                .collect();
            words.extend(fix.iter().cloned());
            ops.push(format!("({})", words.join(" ")));
        }
    }
    (!ops.is_empty()).then_some(ops)
}

/// `word` as `sdssplitargs` reads it back inside a selector: as it is when
/// it holds no quote, backslash, space or control byte, else in double
/// quotes with those escaped.
fn quoted(word: &str) -> String {
    let plain = |c: char| !matches!(c, '"' | '\'' | '\\') && !c.is_whitespace() && !c.is_control();
    if word.chars().all(plain) {
        return word.to_owned();
    }
    let mut out = String::from("\"");
    for c in word.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                for byte in c.to_string().bytes() {
                    out.push_str(&format!("\\x{byte:02x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The permissions a correction gives a user described by `root` and
/// `selectors`, for `goal`:
/// - where `written` holds the user's rules as written (its line in the ACL
///   file or redis.conf) and the caller found that the server holds exactly
///   what they give on 7.0 (see `users::holds_exactly`), their 7.2 reading
///   (checked once more here: their 7.0 reading must give the present bits);
/// - else what the description gives: exact unless a category rule came
///   after an explicit grant or denial of MSETEX, or a category is
///   described command by command (the server keeps no more).
pub fn wanted_permissions(
    root: &str,
    selectors: &[Selector],
    name: &str,
    goal: Goal,
    written: Option<&[Vec<u8>]>,
) -> Vec<Permission> {
    let described = std::iter::once(root).chain(selectors.iter().map(|s| s.commands.as_str()));
    if let (Goal::Like72, Some(written)) = (goal, written) {
        let rules: Vec<&[u8]> = written.iter().map(Vec::as_slice).collect();
        let now: Vec<Permission> = described
            .clone()
            .map(|commands| permission(commands, name, false))
            .collect();
        if permissions(&rules, name, false).as_ref() == Some(&now) {
            if let Some(like72) = permissions(&rules, name, true) {
                return like72;
            }
        }
    }
    described
        .map(|commands| wanted(commands, name, goal))
        .collect()
}

// ---------------------------------------------------------------------------
// When to correct
//
// The command filter sees a command before the server checks who sends it,
// and when it is queued in MULTI rather than when it runs: what it sees
// says when to look, never what the rules are. Whether an `ACL LOAD` ran
// is read from the server (INFO commandstats); the rules, from the server
// and the files it read.

/// True while a correction is due: the module loaded (users of redis.conf,
/// of the ACL file, or from before MODULE LOAD), or an `ACL LOAD` ran.
static PENDING: AtomicBool = AtomicBool::new(false);

/// True from an `ACL LOAD` (or an EXEC that may run one) seen by the filter
/// until the module next reads whether one ran.
static LOAD_HINT: AtomicBool = AtomicBool::new(false);

/// True from an `ACL LOAD` seen by the filter until a cron tick finds no
/// client in a transaction: a queued `ACL LOAD` runs at some later EXEC.
static LOAD_MAY_BE_QUEUED: AtomicBool = AtomicBool::new(false);

/// The successful `ACL LOAD`s the server had counted when last read, and
/// the commands it had processed then; [`NOT_READ`] before the first
/// reading.
static LOADS_SEEN: AtomicI64 = AtomicI64::new(NOT_READ);
static COMMANDS_SEEN: AtomicI64 = AtomicI64::new(NOT_READ);
const NOT_READ: i64 = i64::MIN;

/// True once the module could not list the users (`ACL` renamed or
/// disabled): nothing is corrected, rules reach MSETEX by name only.
static UNREADABLE: AtomicBool = AtomicBool::new(false);

/// The users cannot be read: stop trying (the caller logs it once).
/// Returns whether this is news.
pub fn users_unreadable() -> bool {
    PENDING.store(false, Ordering::Relaxed);
    !UNREADABLE.swap(true, Ordering::Relaxed)
}

/// See [`users_unreadable`].
pub fn unreadable() -> bool {
    UNREADABLE.load(Ordering::Relaxed)
}

/// The users the last correction could not correct (their rules could not
/// be rebuilt): refused MSETEX until one can (fail closed).
static UNCORRECTED: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());
/// `UNCORRECTED` is not empty (read on every MSETEX call without a lock).
static SOME_UNCORRECTED: AtomicBool = AtomicBool::new(false);

/// Records the users a correction could not correct; true when that list
/// changed (the caller logs it).
pub fn set_uncorrected(users: Vec<Vec<u8>>) -> bool {
    match UNCORRECTED.lock() {
        Ok(mut list) => {
            let changed = *list != users;
            SOME_UNCORRECTED.store(!users.is_empty(), Ordering::Relaxed);
            *list = users;
            changed
        }
        Err(_) => false,
    }
}

/// True while some user could not be corrected.
pub fn some_uncorrected() -> bool {
    SOME_UNCORRECTED.load(Ordering::Relaxed)
}

/// Whether `user` could not be corrected (also when that is unknown).
pub fn is_uncorrected(user: &[u8]) -> bool {
    UNCORRECTED
        .lock()
        .map_or(true, |list| list.iter().any(|u| u.as_slice() == user))
}

/// A correction is due (the module loaded, or an `ACL LOAD` ran).
pub fn set_pending() {
    if !unreadable() {
        PENDING.store(true, Ordering::Relaxed);
    }
}

/// True while a correction is due.
pub fn pending() -> bool {
    PENDING.load(Ordering::Relaxed)
}

/// A correction covered every user.
pub fn corrected() {
    PENDING.store(false, Ordering::Relaxed);
}

/// EXEC is about to run: if it may hold an `ACL LOAD`, look again once it
/// has run (before any MSETEX after it).
pub fn on_exec() {
    if LOAD_MAY_BE_QUEUED.load(Ordering::Relaxed) {
        LOAD_HINT.store(true, Ordering::Relaxed);
    }
}

/// Whether to read now if an `ACL LOAD` ran: after the filter saw one, or
/// an EXEC that may run one. Clears the hint. (Inside one transaction,
/// MSETEX after an `ACL LOAD` that follows a first MSETEX is checked
/// against the rules from before the load: only a user who may run `ACL
/// LOAD` could send that.)
pub fn load_check_due() -> bool {
    LOAD_HINT.swap(false, Ordering::Relaxed)
}

/// The clients that were inside MULTI at the first cron tick after the
/// last `ACL LOAD` the filter saw (`None` before that tick): one of them may
/// hold it queued; narrowed at every tick to those still inside MULTI.
static LOAD_HOLDERS: Mutex<Option<Vec<u64>>> = Mutex::new(None);

/// Cron tick: `in_multi`, the clients inside MULTI now. Narrows the clients
/// that may hold a queued `ACL LOAD`; once none is left, none can be queued.
pub fn clients_in_multi_now(in_multi: Vec<u64>) {
    let Ok(mut holders) = LOAD_HOLDERS.lock() else {
        return;
    };
    let narrowed: Vec<u64> = match holders.take() {
        None => in_multi,
        Some(before) => before
            .into_iter()
            .filter(|id| in_multi.contains(id))
            .collect(),
    };
    if narrowed.is_empty() {
        LOAD_MAY_BE_QUEUED.store(false, Ordering::Relaxed);
    } else {
        *holders = Some(narrowed);
    }
}

/// True while an `ACL LOAD` may wait in a transaction.
pub fn load_may_be_queued() -> bool {
    LOAD_MAY_BE_QUEUED.load(Ordering::Relaxed)
}

/// Records the counters read now: `successes`, the successful `ACL LOAD`s,
/// and `commands`, the commands processed (`total_commands_processed`);
/// true when an `ACL LOAD` ran since the last reading: `successes` changed,
/// or, where the counters were reset since (`CONFIG RESETSTAT`: fewer
/// commands than before), one ran after the reset. Never on what the
/// filter saw, which anyone can send: an `ACL LOAD` and a reset in one
/// transaction or pipeline go unseen (README, *Security*).
pub fn loads_counted(successes: i64, commands: i64) -> bool {
    let loads_before = LOADS_SEEN.swap(successes, Ordering::Relaxed);
    let commands_before = COMMANDS_SEEN.swap(commands, Ordering::Relaxed);
    if loads_before == NOT_READ {
        return false;
    }
    if commands < commands_before {
        return successes > 0;
    }
    loads_before != successes
}

/// Successful calls in an INFO commandstats value
/// (`calls=3,usec=20,usec_per_call=6.67,rejected_calls=0,failed_calls=1`):
/// the calls that ran, less those that failed. Rejected calls never ran.
pub fn successful_calls(cmdstat: &str) -> Option<i64> {
    let field = |name: &str| {
        cmdstat.split(',').find_map(|pair| {
            let (key, value) = pair.split_once('=')?;
            (key == name).then(|| value.parse::<i64>().ok()).flatten()
        })
    };
    Some(field("calls")? - field("failed_calls").unwrap_or(0))
}

/// The ids of the clients inside MULTI (flag `x`) in `CLIENT LIST` output
/// (one client a line: `id=... flags=...`).
pub fn clients_in_multi(client_list: &str) -> Vec<u64> {
    client_list
        .lines()
        .filter_map(|line| {
            let field = |name: &str| {
                line.split(' ')
                    .find_map(|field| field.strip_prefix(name)?.strip_prefix('='))
            };
            field("flags")
                .is_some_and(|flags| flags.contains('x'))
                .then(|| field("id")?.parse().ok())
                .flatten()
        })
        .collect()
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
        LOAD_HINT.store(true, Ordering::Relaxed);
        LOAD_MAY_BE_QUEUED.store(true, Ordering::Relaxed);
        if let Ok(mut holders) = LOAD_HOLDERS.lock() {
            *holders = None;
        }
        return AclCommand::Load;
    }
    if !sub.eq_ignore_ascii_case(b"SETUSER") {
        return AclCommand::Other;
    }
    let Some(ops) = args.get(3..) else {
        return AclCommand::Other;
    };
    match translate_setuser(ops, name) {
        Some(ops) => AclCommand::SetUser(ops),
        None => AclCommand::Other,
    }
}

#[cfg(test)]
mod tests;
