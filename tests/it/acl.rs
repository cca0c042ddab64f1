//! ACL: the server's own check before MSETEX (its categories and key
//! specifications on Redis 7.2+ and Valkey; rules by name on 7.0 and 6.2),
//! and on Redis 7.0 a capability asked of the server before any write: MSET
//! on the call's keys and SET on each. The module never changes a user's
//! rules.

/// The module's refusal on Redis 7.0 where the user may not write the keys
/// with MSET and SET (src/outcome.rs).
fn lacks_capability(name: &str) -> String {
    format!(
        "NOPERM this user has no permissions to run the '{name}' command with these keys: on \
         Redis 7.0, {name} also needs MSET on these keys and SET on each"
    )
}

use msetex_harness::*;

fn as_app_user(server: &Server) -> Connection {
    let mut admin = server.client();
    q::<(), _>(
        &mut admin,
        &["ACL", "SETUSER", "app", "on", ">secret", "~app:*", "+@all"],
    );
    let mut con = server.client();
    q::<(), _>(&mut con, &["AUTH", "app", "secret"]);
    con
}

#[test]
fn a_key_outside_the_pattern_is_refused_wherever_it_is() {
    let server = Server::start();
    let mut admin = server.client();
    let mut app = as_app_user(&server);
    q::<(), _>(&mut admin, &["SET", "app:b", "before", "EX", "1000"]);
    for args in [
        &["MSETEX", "60", "other", "1", "app:a", "2", "app:b", "3"][..],
        &["MSETEX", "60", "app:a", "1", "other", "2", "app:b", "3"],
        &["MSETEX", "60", "app:a", "1", "app:b", "2", "other", "3"],
    ] {
        let before = snapshot(&mut admin);
        assert_eq!(err(&mut app, args), target().noperm_key(), "{args:?}");
        assert_eq!(snapshot(&mut admin), before, "{args:?} wrote something");
    }
    let ok = exec(&mut app, &["MSETEX", "60", "app:a", "1", "app:b", "2"]).unwrap();
    assert_eq!(ok, Value::Okay);
}

#[test]
fn a_user_without_the_command_is_refused() {
    let server = Server::start();
    let mut admin = server.client();
    let minus_command = format!("-{}", target().command_name());
    q::<(), _>(
        &mut admin,
        &[
            "ACL",
            "SETUSER",
            "reader",
            "on",
            ">pw",
            "~*",
            "+@all",
            &minus_command,
        ],
    );
    let mut con = server.client();
    q::<(), _>(&mut con, &["AUTH", "reader", "pw"]);
    assert_eq!(
        err(&mut con, &["MSETEX", "60", "k", "v"]),
        target().noperm_command("reader", target().command_name())
    );
    assert_eq!(q::<i64, _>(&mut admin, &["DBSIZE"]), 0);
}

/// Creates `user` (password `pw`) with `rules` and returns a connection
/// authenticated as that user.
fn as_user(server: &Server, user: &str, rules: &[&str]) -> Connection {
    let mut admin = server.client();
    let mut setuser = vec!["ACL", "SETUSER", user, "reset", "on", ">pw"];
    setuser.extend_from_slice(rules);
    q::<(), _>(&mut admin, &setuser);
    let mut con = server.client();
    q::<(), _>(&mut con, &["AUTH", user, "pw"]);
    con
}

#[test]
fn a_user_who_may_not_write_may_not_run_msetex() {
    // Redis 7.2+ and Valkey check MSETEX's own categories (@write @string
    // @slow); on Redis 7.0 `+@all` grants it, and the module asks the server
    // whether the user may run MSET on the call's keys and SET on each.
    if skip_unless(
        target().is_7_0_or_later(),
        "Redis 6.2 has neither ACL categories for module commands nor a module API that \
         checks a command permission (README, Security)",
    ) {
        return;
    }
    let server = Server::start();
    let name = target().command_name();
    for (user, rules) in [
        ("nowrite", &["~app:*", "+@all", "-@write"][..]),
        ("nostring", &["~app:*", "+@all", "-@string"]),
        ("noslow", &["~app:*", "+@all", "-@slow"]),
    ] {
        let mut con = as_user(&server, user, rules);
        let expected = if target().has_module_acl_categories() {
            target().noperm_command(user, name)
        } else {
            lacks_capability(name)
        };
        assert_eq!(
            err(&mut con, &["MSETEX", "100", "app:a", "v"]),
            expected,
            "{user}"
        );
        assert_eq!(q::<i64, _>(&mut server.client(), &["DBSIZE"]), 0, "{user}");
    }
    // Reading is still fine, and the refusal is in the ACL log.
    let mut con = as_user(&server, "nowrite", &["~app:*", "+@all", "-@write"]);
    assert_eq!(q::<Option<String>, _>(&mut con, &["GET", "app:a"]), None);
    let log = format!("{:?}", exec(&mut server.client(), &["ACL", "LOG"]).unwrap());
    assert!(log.contains(name) && log.contains("nowrite"), "{log}");
}

#[test]
fn a_user_who_may_write_keeps_msetex() {
    if skip_unless(target().is_7_0_or_later(), "ACL categories need Redis 7.0") {
        return;
    }
    let server = Server::start();
    let name = target().command_name();
    // A category grant reaches MSETEX on Redis 7.2+; on 7.0 module commands
    // have no categories, so it is granted by name.
    let mut rules = vec!["~*", "-@all", "+@write", "+@read"];
    let by_name = format!("+{name}");
    if !target().has_module_acl_categories() {
        rules.push(&by_name);
    }
    let mut con = as_user(&server, "writer", &rules);
    assert_eq!(
        exec(&mut con, &["MSETEX", "100", "w:a", "1"]).unwrap(),
        Value::Okay
    );
    assert_eq!(q::<String, _>(&mut con, &["GET", "w:a"]), "1");
    // A command rule against SET: MSETEX is a command of its own, as MSET is. Redis 7.0, which
    // cannot say whether a rule took MSETEX's categories away, allows only what the user could
    // write with MSET and SET anyway: a user without SET is refused there.
    let mut con = as_user(&server, "noset", &["~*", "+@all", "-set"]);
    let reply = exec(&mut con, &["MSETEX", "100", "w:b", "2"]);
    if target().has_module_acl_categories() || !target().is_7_0_or_later() {
        assert_eq!(reply.unwrap(), Value::Okay);
    } else {
        assert_eq!(error_text(&reply.unwrap_err()), lacks_capability(name));
    }
}

/// A selector that may SET some keys does not let MSETEX write the others: the user below may
/// MSET every key (one selector) and SET only `first*` keys (another). Redis 7.2 refuses every
/// call of it by the categories; 7.0 refuses the calls that name a key the user cannot SET, and
/// logs that key.
#[test]
fn a_selector_cannot_widen_a_call() {
    if skip_unless(
        target().is_7_0_or_later(),
        "selectors and a permission check for modules need Redis 7.0",
    ) {
        return;
    }
    let server = Server::start();
    let name = target().command_name();
    let mut admin = server.client();
    let mut con = as_user(
        &server,
        "sel",
        &[
            "+@all",
            "-@write",
            "~*",
            "(+mset",
            "~*)",
            "(+set",
            "+setex",
            "+psetex",
            "+msetnx",
            "+setrange",
            "~first*)",
        ],
    );
    for refused in [
        &["SET", "other", "x", "EX", "60"][..],
        &["EXPIRE", "other", "60"],
        &["DEL", "other"],
        &["MSETEX", "60", "other", "x"],
        &["MSETEX", "1", "first1", "x", "other", "y"],
        &["MSETEX", "1", "other", "y", "first1", "x"],
    ] {
        q::<(), _>(&mut admin, &["ACL", "LOG", "RESET"]);
        let reply = err(&mut con, refused);
        assert!(reply.starts_with("NOPERM"), "{refused:?}: {reply}");
        assert_eq!(q::<i64, _>(&mut admin, &["DBSIZE"]), 0, "{refused:?}");
        if refused[0] == "MSETEX" && !target().has_module_acl_categories() {
            assert_eq!(reply, lacks_capability(name));
            let log = field_maps(&q::<Value, _>(&mut admin, &["ACL", "LOG", "1"]));
            let entry = log.first().expect("an ACL LOG entry");
            assert_eq!(entry.get("reason").map(String::as_str), Some("key"));
            assert_eq!(entry.get("object").map(String::as_str), Some("other"));
            assert_eq!(entry.get("username").map(String::as_str), Some("sel"));
        }
    }
    // What the user could write anyway, 7.0 writes.
    let both = exec(&mut con, &["MSETEX", "60", "first1", "x", "first2", "y"]);
    if target().has_module_acl_categories() {
        assert!(error_text(&both.unwrap_err()).starts_with("NOPERM"));
    } else {
        assert_eq!(both.unwrap(), Value::Okay);
        assert_eq!(q::<i64, _>(&mut admin, &["EXISTS", "first1", "first2"]), 2);
    }
}

#[test]
fn a_script_is_checked_as_the_user_that_runs_it() {
    if skip_unless(target().is_7_0_or_later(), "ACL categories need Redis 7.0") {
        return;
    }
    let server = Server::start();
    let name = target().command_name();
    let script = format!("return redis.pcall('{name}', '100', KEYS[1], 'v')");
    let mut admin = server.client();
    let written = raw_command(&["EVAL", &script, "1", "k1"]).query::<Value>(&mut admin);
    assert_eq!(written, Ok(Value::Okay));
    let mut con = as_user(&server, "u", &["~*", "+@all", "-@write", "+eval"]);
    let reply = raw_command(&["EVAL", &script, "1", "k2"]).query::<Value>(&mut con);
    assert!(
        format!("{reply:?}").contains("NOPERM") || reply.is_err(),
        "{reply:?}"
    );
    assert_eq!(q::<Option<String>, _>(&mut admin, &["GET", "k2"]), None);
    assert!(answers_ping(
        server.port(),
        std::time::Duration::from_secs(2)
    ));
}

// ---------------------------------------------------------------------------
// Redis 7.0 against Redis 7.2, rule set by rule set, call by call

/// Rule sets: selectors, categories, explicit grants and denials, key and
/// channel permissions, first arguments, and rule orders. Each is given to
/// `ACL SETUSER u reset on >pw` (split on spaces, as redis-cli sends a
/// selector, which the server merges); after ";", a second `ACL SETUSER u`
/// without reset.
const RULE_SETS: &[&str] = &[
    "+@all ~*",
    "+@all -@write ~*",
    "+@all -@write ~* (+set ~tmp:*)",
    "+@all -@write ~* (+@write ~tmp:*)",
    "+@all -@write ~* (+msetex ~tmp:*)",
    "+@all -@write ~* (+mset ~tmp:*)",
    // What the user could write anyway: MSET and SET on the keys.
    "+@all -@write ~* (+mset +set ~tmp:*)",
    "-@all +msetex +mset +set ~app:*",
    // A category taken away, then MSET granted back by name.
    "+@all -@write +mset ~*",
    "+@all -@string +mset ~*",
    "+@all -@slow +mset ~*",
    "-@all +msetex ~app:*",
    "-@all +msetex ~*",
    "-@all +msetex +mset ~*",
    "+@all -set ~*",
    "+@all -mset ~*",
    "-@all +get ~* (+msetex ~c*)",
    "-@all +msetex +@write %R~app:* %W~w:*",
    "-@all +msetex +mset ~app:* (+msetex +mset ~w:*)",
    "-@all +@write ~*",
    "-@all +@write +msetex ~app:* (~w:* +msetex +@write)",
    "+@all -@write +msetex ~*",
    "-@all +msetex -@write ~*",
    "+@all -msetex ~*",
    "+@all -@slow ~* (-@all +@slow +msetex ~s:*)",
    "-@all +msetex|100 +@write ~*",
    "+@all -@string +@write ~w:* %R~app:*",
    // What 7.0 describes with an invented +@string.
    "~* +@fast -@dangerous",
    "~* +@all -@dangerous",
    // Channel rules, whatever acl-pubsub-default says.
    "+@all ~* &chan:* resetchannels",
    "+@all ~* allchannels",
    "-@all +msetex +@write ~* &news:*",
    "-@all +msetex ~* ; -@write",
    "+@all -@write ~* ; +msetex",
    "+@all ~* ; -@string (+@read +msetex ~r:*)",
    // The server reads a rule name up to a NUL byte (ACL SETUSER only).
    "+@all -@write\0x ~*",
    "-@all +@write\0x ~*",
];

/// Calls, as the user sends them: keys that different selectors allow,
/// first, middle and last.
const CALLS: &[&[&str]] = &[
    &["MSETEX", "100", "tmp:1", "x", "important", "hacked"],
    &["MSETEX", "100", "important", "hacked", "tmp:1", "x"],
    &["MSETEX", "100", "tmp:1", "x"],
    &["MSETEX", "100", "app:a", "1"],
    &["MSETEX", "100", "app:a", "1", "w:b", "2"],
    &["MSETEX", "100", "w:b", "2"],
    &["MSETEX", "100", "c1", "x"],
    &["MSETEX", "101", "app:a", "1"],
    &["MSETEX", "NX", "PX", "100000", "s:1", "y", "s:2", "z"],
    &["MSETEX", "100", "r:1", "x"],
];

/// What one call did: its reply (errors by kind: the servers word them
/// differently), every key of the call afterwards, and the newest ACL LOG
/// entry (reason and object), if any.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Outcome {
    reply: String,
    values: Vec<Option<String>>,
    log: Option<(String, String)>,
}

impl Outcome {
    fn wrote(&self) -> bool {
        self.values.iter().any(Option::is_some)
    }
}

fn outcome(admin: &mut Connection, user: &mut Connection, call: &[&str]) -> Outcome {
    q::<(), _>(admin, &["FLUSHALL"]);
    q::<(), _>(admin, &["ACL", "LOG", "RESET"]);
    let reply = match raw_command(call).query::<Value>(user) {
        Ok(value) => format!("{value:?}"),
        Err(e) => {
            let text = error_text(&e);
            if text.contains("permissions to run") {
                "NOPERM command".to_owned()
            } else if text.contains("access") {
                "NOPERM key".to_owned()
            } else {
                text
            }
        }
    };
    let values = keys_of(call)
        .iter()
        .map(|k| q::<Option<String>, _>(admin, &["GET", k]))
        .collect();
    let log = field_maps(&q::<Value, _>(admin, &["ACL", "LOG", "1"]))
        .into_iter()
        .next()
        .map(|entry| {
            (
                entry.get("reason").cloned().unwrap_or_default(),
                entry.get("object").cloned().unwrap_or_default(),
            )
        });
    Outcome { reply, values, log }
}

/// The keys of one of [`CALLS`].
fn keys_of<'a>(call: &[&'a str]) -> Vec<&'a str> {
    call.iter()
        .skip(1)
        .filter(|a| a.contains(':') || **a == "important" || **a == "c1")
        .copied()
        .collect()
}

/// `ACL DRYRUN u call...`: whether the server allows it.
fn dry_run(admin: &mut Connection, call: &[&str]) -> bool {
    let mut args = vec!["ACL", "DRYRUN", "u"];
    args.extend_from_slice(call);
    matches!(
        raw_command(&args).query::<Value>(admin),
        Ok(Value::Okay) | Ok(Value::SimpleString(_))
    )
}

/// The MSET of a call's pairs, the permission Redis 7.0 also asks for.
fn as_mset<'a>(call: &[&'a str]) -> Vec<&'a str> {
    let keys = keys_of(call);
    let first = call
        .iter()
        .position(|a| Some(a) == keys.first())
        .unwrap_or(1);
    let mut mset = vec!["MSET"];
    mset.extend_from_slice(&call[first..]);
    mset
}

/// How the user `u` gets its rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Defined {
    /// `ACL SETUSER`.
    SetUser,
    /// A `user` line of redis.conf.
    Config,
    /// `--user` on the command line.
    CommandLine,
    /// An ACL file the server loads at start, with another user's key
    /// pattern of non-UTF-8 bytes.
    AclFile,
    /// The same file, loaded with `ACL LOAD`.
    AclLoad,
    /// `ACL SETUSER` before `MODULE LOAD`.
    BeforeModuleLoad,
}

const DEFINITIONS: [Defined; 6] = [
    Defined::SetUser,
    Defined::Config,
    Defined::CommandLine,
    Defined::AclFile,
    Defined::AclLoad,
    Defined::BeforeModuleLoad,
];

/// An ACL file's users: the default one, one whose key pattern is not
/// UTF-8, and `u` with `rules`.
fn acl_file(rules: &str) -> Vec<u8> {
    let mut file =
        b"user default on nopass ~* &* +@all\nuser other on nopass ~\xff\xfe* +@all\n".to_vec();
    file.extend_from_slice(format!("user u reset on >pw {rules}\n").as_bytes());
    file
}

/// A server of `binary` on which user `u` holds `rules`, defined as
/// `defined` says, and a connection as `u`; `None` where that definition
/// cannot hold those rules (a NUL byte outside ACL SETUSER; a rule naming
/// MSETEX before the module is loaded).
fn server_with_user(
    binary: &'static Target,
    rules: &str,
    defined: Defined,
) -> Option<(Server, Connection)> {
    let (rules, later) = rules.split_once(" ; ").unwrap_or((rules, ""));
    let nul = rules.contains('\0');
    if (nul && defined != Defined::SetUser)
        || (defined == Defined::BeforeModuleLoad && rules.contains("msetex"))
    {
        return None;
    }
    let rules = rules.replace("msetex", target().command_name());
    let later = later.replace("msetex", target().command_name());
    let mut config = match defined {
        Defined::BeforeModuleLoad => ServerConfig::without_module(),
        _ => ServerConfig::default(),
    }
    .binary(binary);
    let dir = TempDir::new("acl");
    let file = dir.path().join("users.acl");
    match defined {
        Defined::Config => config = config.line(&format!("user u reset on >pw {rules}")),
        Defined::CommandLine => {
            let mut args = vec!["--user", "u", "reset", "on", ">pw"];
            args.extend(rules.split(' '));
            config = config.args(&args);
        }
        Defined::AclFile => {
            std::fs::write(&file, acl_file(&rules)).expect("write the ACL file");
            config = config.line(&format!("aclfile {}", file.display()));
        }
        Defined::AclLoad => {
            std::fs::write(&file, b"user default on nopass ~* &* +@all\n").expect("ACL file");
            config = config.line(&format!("aclfile {}", file.display()));
        }
        Defined::SetUser | Defined::BeforeModuleLoad => {}
    }
    let server = Server::start_with(config, dir);
    let mut admin = server.client();
    let mut setuser = vec!["ACL", "SETUSER", "u", "reset", "on", ">pw"];
    setuser.extend(rules.split(' '));
    match defined {
        Defined::SetUser | Defined::BeforeModuleLoad => q::<(), _>(&mut admin, &setuser),
        Defined::AclLoad => {
            std::fs::write(&file, acl_file(&rules)).expect("write the ACL file");
            q::<(), _>(&mut admin, &["ACL", "LOAD"]);
        }
        _ => {}
    }
    if defined == Defined::BeforeModuleLoad {
        let mut load = vec![
            "MODULE".to_owned(),
            "LOAD".to_owned(),
            module_path().display().to_string(),
        ];
        load.extend(target().default_module_args());
        q::<(), _>(&mut admin, &load);
    }
    if !later.is_empty() {
        let mut more = vec!["ACL", "SETUSER", "u"];
        more.extend(later.split(' '));
        q::<(), _>(&mut admin, &more);
    }
    let mut user = server.client();
    q::<(), _>(&mut user, &["AUTH", "u", "pw"]);
    Some((server, user))
}

/// Redis 7.2.6, the reference the differences are counted against, if it is
/// there (../shared/servers).
fn redis_7_2_reference() -> Option<&'static Target> {
    let found = targets_at(&[shared_servers_dir()
        .join("redis-7.2.6/redis-server")
        .display()
        .to_string()]);
    let reference = found.into_iter().next()?;
    Some(Box::leak(Box::new(reference)))
}

/// The SET of each key of a call, with the call's expiry in milliseconds, as
/// the module asks Redis 7.0 for them.
fn as_sets(call: &[&str]) -> Vec<Vec<String>> {
    let units = ["EX", "PX", "EXAT", "PXAT"];
    let options = call
        .iter()
        .skip(1)
        .take_while(|a| ["NX", "XX"].contains(a) || units.contains(a))
        .count();
    let unit = call
        .iter()
        .skip(1)
        .take(options)
        .find(|a| units.contains(a))
        .copied()
        .unwrap_or("EX");
    let time: i64 = call[1 + options].parse().expect("a time");
    let (option, ms) = match unit {
        "EX" => ("PX", time * 1000),
        "PX" => ("PX", time),
        "EXAT" => ("PXAT", time * 1000),
        _ => ("PXAT", time),
    };
    call[2 + options..]
        .chunks(2)
        .map(|pair| {
            ["SET", pair[0], pair[1], option, &ms.to_string()]
                .map(str::to_owned)
                .to_vec()
        })
        .collect()
}

/// README, *Security*: on Redis 7.0 MSETEX writes exactly what the user could
/// write anyway: a call writes if and only if the server's own check allows
/// it (by name or `+@all`, and the key patterns), the user may MSET its keys
/// and SET each with its expiry (each asked with `ACL DRYRUN`), whatever way
/// the user got its rules. A call the module refuses answers NOPERM and
/// leaves an ACL LOG entry. Against Redis 7.2.6 (if there) both kinds of
/// difference are counted; where both write, both do the same.
#[test]
fn redis_7_0_writes_exactly_what_the_user_could_write_with_mset_and_set() {
    if skip_unless(
        target().product == Product::Redis && target().version.0 == 7 && target().version.1 == 0,
        "Redis 7.0 alone gives module commands no ACL categories",
    ) {
        return;
    }
    let reference = redis_7_2_reference();
    let mut violations = Vec::new();
    let (mut compared, mut wider, mut narrower) = (0, 0, 0);
    for defined in DEFINITIONS {
        for rules in RULE_SETS {
            let Some((ours, mut ours_user)) = server_with_user(target(), rules, defined) else {
                continue;
            };
            let mut theirs = reference.map(|reference| {
                server_with_user(reference, rules, defined).expect("the same definition")
            });
            let mut ours_admin = ours.client();
            let mut theirs_admin = theirs.as_ref().map(|(server, _)| server.client());
            for call in CALLS {
                let what = format!("{defined:?} [{rules}] {call:?}");
                let a = outcome(&mut ours_admin, &mut ours_user, call);
                compared += 1;
                let by_server = dry_run(&mut ours_admin, call);
                let by_mset = dry_run(&mut ours_admin, &as_mset(call));
                let by_set = as_sets(call).iter().all(|set| {
                    let set: Vec<&str> = set.iter().map(String::as_str).collect();
                    dry_run(&mut ours_admin, &set)
                });
                if a.wrote() != (by_server && by_mset && by_set) {
                    violations.push(format!(
                        "{what}: 7.0 {a:?}; the server's check {by_server}, MSET {by_mset}, \
                         SET on each {by_set}"
                    ));
                } else if !a.wrote() && !a.reply.starts_with("NOPERM") {
                    violations.push(format!("{what}: 7.0 refused without NOPERM: {a:?}"));
                } else if !a.wrote() && by_server && a.log.is_none() {
                    violations.push(format!(
                        "{what}: the module's refusal left no ACL LOG entry"
                    ));
                }
                let (Some((_, theirs_user)), Some(theirs_admin)) =
                    (theirs.as_mut(), theirs_admin.as_mut())
                else {
                    continue;
                };
                let b = outcome(theirs_admin, theirs_user, call);
                match (a.wrote(), b.wrote()) {
                    (true, false) => wider += 1,
                    (false, true) => narrower += 1,
                    (true, true)
                        if a != Outcome {
                            log: a.log.clone(),
                            ..b.clone()
                        } =>
                    {
                        violations.push(format!("{what}: 7.0 {a:?}, 7.2 {b:?}"))
                    }
                    _ => {}
                }
            }
        }
    }
    assert!(
        violations.is_empty(),
        "{} of {compared} calls break the rule:\n{}",
        violations.len(),
        violations.join("\n")
    );
    let against = if reference.is_some() {
        format!(
            "; against Redis 7.2.6: {wider} written where 7.2 refuses (the user may MSET those \
             keys and SET each), {narrower} refused where 7.2 writes (the user lacks one of them)"
        )
    } else {
        "; Redis 7.2.6 not found, no comparison".to_owned()
    };
    record_result(
        "ACL on Redis 7.0: MSETEX writes what MSET and SET could",
        &format!(
            "{} rule sets x {} calls, users from ACL SETUSER, redis.conf, --user, an ACL file \
             (with non-UTF-8 bytes), ACL LOAD and before MODULE LOAD: {compared} calls, each \
             written exactly where the server's check, MSET on its keys and SET on each allow \
             it{against}",
            RULE_SETS.len(),
            CALLS.len()
        ),
    );
}

/// Users defined every way, rules that name no module command: what the
/// server says about them with and without the module.
fn acl_list_of(with_module: bool) -> (Server, Vec<Vec<u8>>) {
    let dir = TempDir::new("acl-list");
    let file = dir.path().join("users.acl");
    let mut text = acl_file("+@all -@write ~* (+@write ~tmp:*)");
    text.extend_from_slice(b"user c on nopass ~* resetchannels &chan:* +@all -@dangerous\n");
    text.extend_from_slice(b"user d on nopass allchannels ~* +@fast -@dangerous\n");
    std::fs::write(&file, text).expect("write the ACL file");
    let config = if with_module {
        ServerConfig::default()
    } else {
        ServerConfig::without_module()
    };
    let config = config
        .line(&format!("aclfile {}", file.display()))
        .line("acl-pubsub-default allchannels");
    let server = Server::start_with(config, dir);
    let mut admin = server.client();
    for rules in [
        &[
            "ACL", "SETUSER", "e", "on", "nopass", "+@all", "-@write", "~*",
        ][..],
        &[
            "ACL", "SETUSER", "f", "on", "nopass", "-@all", "+@write", "(+get", "~r:*)",
        ],
    ] {
        q::<(), _>(&mut admin, rules);
    }
    let list: Vec<Vec<u8>> = q(&mut admin, &["ACL", "LIST"]);
    (server, list)
}

#[test]
fn acl_list_and_acl_save_are_what_the_server_says_without_the_module() {
    if skip_unless(
        target().is_7_0_or_later(),
        "selectors and ACL SAVE need Redis 7.0",
    ) {
        return;
    }
    let (ours, with) = acl_list_of(true);
    let (_theirs, without) = acl_list_of(false);
    // Redis 7.0 lists single commands in its hash table's order, which
    // differs from one process to the next: each user's rules as a set.
    let text = |list: &[Vec<u8>]| -> Vec<Vec<String>> {
        list.iter()
            .map(|line| {
                let mut words: Vec<String> = String::from_utf8_lossy(line)
                    .split(' ')
                    .map(str::to_owned)
                    .collect();
                words.sort();
                words
            })
            .collect()
    };
    assert_eq!(text(&with), text(&without), "ACL LIST");
    // A file ACL SAVE writes loads on a server without the module.
    let mut admin = ours.client();
    q::<(), _>(&mut admin, &["ACL", "SAVE"]);
    let dir = TempDir::new("acl-saved");
    let saved = dir.path().join("users.acl");
    std::fs::copy(ours.dir().join("users.acl"), &saved).expect("copy the saved file");
    let config = ServerConfig::without_module()
        .line(&format!("aclfile {}", saved.display()))
        .line("acl-pubsub-default allchannels");
    let reloaded = Server::start_with(config, dir);
    let list: Vec<Vec<u8>> = q(&mut reloaded.client(), &["ACL", "LIST"]);
    assert_eq!(
        text(&list),
        text(&with),
        "ACL LIST after ACL SAVE, without the module"
    );
}

#[test]
fn config_rewrite_writes_the_users_as_the_server_without_the_module() {
    if skip_unless(target().is_7_0_or_later(), "selectors need Redis 7.0") {
        return;
    }
    let rewritten = |with_module: bool| {
        let config = if with_module {
            ServerConfig::default()
        } else {
            ServerConfig::without_module()
        };
        let server = config
            .line("user a on nopass +@all -@write ~*")
            .line("user b on nopass -@all +@write ~x:* (+get ~y:*)")
            .start();
        let mut admin = server.client();
        q::<(), _>(
            &mut admin,
            &["ACL", "SETUSER", "c", "on", "nopass", "~*", "+@fast"],
        );
        q::<(), _>(&mut admin, &["CONFIG", "REWRITE"]);
        let text = std::fs::read_to_string(server.dir().join("redis.conf")).expect("redis.conf");
        // Each user's rules as a set (Redis 7.0 lists single commands in a
        // hash table's order).
        let users: Vec<Vec<String>> = text
            .lines()
            .filter(|line| line.starts_with("user "))
            .map(|line| {
                let mut words: Vec<String> = line.split(' ').map(str::to_owned).collect();
                words.sort();
                words
            })
            .collect();
        (server, users)
    };
    let (_ours, with) = rewritten(true);
    let (_theirs, without) = rewritten(false);
    assert!(with.len() >= 4, "{with:?}");
    assert_eq!(with, without);
}

/// MSETEX run by another module's RedisModule_Call (examples/caller_module.rs): with `C` (as the
/// calling user) it is checked as that user, as Redis 7.2 checks it; without (as the module) it
/// runs unchecked, from a script too (on Redis 7.0, asking that user-less client for its user's
/// name crashed the server).
#[test]
fn another_modules_call_is_checked_as_its_user() {
    if skip_unless(
        target().is_7_0_or_later(),
        "RedisModule_Call runs as a user (the C flag) since Redis 7.0",
    ) {
        return;
    }
    let caller = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.join("examples/libcaller_module.so")))
        .filter(|path| path.is_file())
        .expect("examples/libcaller_module.so (cargo test builds examples)");
    let server = ServerConfig::default()
        .line(&format!("loadmodule {}", caller.display()))
        .start();
    let name = target().command_name();
    let mut admin = server.client();
    q::<(), _>(
        &mut admin,
        &[
            "ACL", "SETUSER", "w", "on", ">pw", "~*", "+@all", "-@string",
        ],
    );
    let mut user = server.client();
    q::<(), _>(&mut user, &["AUTH", "w", "pw"]);
    let refused = err(&mut user, &["caller.callc", name, "EX", "100", "k1", "v"]);
    assert!(
        refused.contains("NOPERM") || refused.contains("permission"),
        "{refused}"
    );
    assert_eq!(q::<i64, _>(&mut admin, &["EXISTS", "k1"]), 0);
    assert_eq!(
        exec(&mut user, &["caller.call", name, "EX", "100", "k2", "v"]).unwrap(),
        Value::Okay
    );
    let script = format!("return redis.call('caller.call', '{name}', 'EX', '100', 'k3', 'v')");
    assert_eq!(
        exec(&mut user, &["EVAL", &script, "0"]).unwrap(),
        Value::Okay
    );
    assert_eq!(q::<i64, _>(&mut admin, &["EXISTS", "k2", "k3"]), 2);
}
