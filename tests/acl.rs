//! ACL key permissions apply to every key before MSETEX runs.

mod common;

use common::*;

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
    // Redis 7.0 has no ACL categories for module commands, so `-@write`
    // used to leave MSETEX allowed. The module now asks the server whether
    // the user may run SET on the call's key; Redis 7.2+ and Valkey check
    // the command's own categories (@write @string @slow).
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
            format!("NOPERM this user has no permissions to run the '{name}' command")
        };
        assert_eq!(
            err(&mut con, &["MSETEX", "100", "app:a", "v"]),
            expected,
            "{user}"
        );
        assert_eq!(q::<i64, _>(&mut server.client(), &["DBSIZE"]), 0, "{user}");
    }
    // Reading is still fine, and the refusal is in the ACL log on 7.0.
    let mut con = as_user(&server, "nowrite", &["~app:*", "+@all", "-@write"]);
    assert_eq!(q::<Option<String>, _>(&mut con, &["GET", "app:a"]), None);
    if !target().has_module_acl_categories() {
        let log = format!("{:?}", exec(&mut server.client(), &["ACL", "LOG"]).unwrap());
        assert!(log.contains(name) && log.contains("nowrite"), "{log}");
    }
}

#[test]
fn a_user_who_may_write_keeps_msetex() {
    if skip_unless(target().is_7_0_or_later(), "ACL categories need Redis 7.0") {
        return;
    }
    let server = Server::start();
    let name = target().command_name();
    // Where MSETEX has no categories, a user needs it by name (as every
    // module command there), and then may run it when SET is allowed.
    let rules: &[&str] = if target().has_module_acl_categories() {
        &["~*", "-@all", "+@write", "+@read"]
    } else {
        &["~*", "-@all", "+@write", "+@read", "+msetex"]
    };
    let rules: Vec<String> = rules.iter().map(|r| r.replace("msetex", name)).collect();
    let rules: Vec<&str> = rules.iter().map(String::as_str).collect();
    let mut con = as_user(&server, "writer", &rules);
    assert_eq!(
        exec(&mut con, &["MSETEX", "100", "w:a", "1"]).unwrap(),
        Value::Okay
    );
    assert_eq!(q::<String, _>(&mut con, &["GET", "w:a"]), "1");
    // A command rule against SET: on Redis 7.0 MSETEX follows SET; with
    // categories it is a command of its own, as MSET is.
    let mut con = as_user(&server, "noset", &["~*", "+@all", "-set"]);
    let reply = exec(&mut con, &["MSETEX", "100", "w:b", "2"]);
    if target().has_module_acl_categories() {
        assert_eq!(reply.unwrap(), Value::Okay);
    } else {
        assert_eq!(
            error_text(&reply.unwrap_err()),
            format!("NOPERM this user has no permissions to run the '{name}' command")
        );
    }
}
