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
