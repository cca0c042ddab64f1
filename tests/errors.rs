//! Every refused call gets the server's own error text and writes nothing.

mod common;

use common::*;

const ARITY: &str = "ERR wrong number of arguments for 'msetex' command";
const NOT_INTEGER: &str = "ERR value is not an integer or out of range";
const EXPIRE: &str = "ERR invalid expire time in 'msetex' command";

/// Fills a database whose every key a bad call below names.
fn populated(server: &Server) -> Connection {
    let mut con = server.client();
    q::<(), _>(&mut con, &["SET", "k", "old", "EX", "1000"]);
    q::<(), _>(&mut con, &["SET", "k2", "old2"]);
    q::<i64, _>(&mut con, &["RPUSH", "list", "x"]);
    con
}

fn assert_refused(con: &mut Connection, args: &[&str], expected: &str) {
    let before = snapshot(con);
    assert_eq!(err(con, args), expected, "{args:?}");
    assert_eq!(snapshot(con), before, "{args:?} changed the data set");
}

#[test]
fn wrong_number_of_arguments() {
    let server = Server::start();
    let mut con = populated(&server);
    for args in [
        &["MSETEX"][..],
        &["MSETEX", "60"],
        &["MSETEX", "60", "k"],
        &["MSETEX", "60", "k", "v", "k2"],
        &["MSETEX", "60", "k", "v", "k2", "v2", "list"],
        &["MSETEX", "notanumber", "k"],
        &["msetex", "60", "k"],
        &["MsEtEx", "60", "k", "v", "k2"],
    ] {
        assert_refused(&mut con, args, ARITY);
    }
}

#[test]
fn seconds_not_an_integer() {
    let server = Server::start();
    let mut con = populated(&server);
    for seconds in [
        "abc",
        "",
        " 1",
        "1 ",
        "+1",
        "1.5",
        "1e3",
        "0x10",
        "01",
        "-0",
        "--1",
        "1-",
        "99999999999999999999",
        "-9223372036854775809",
        "9223372036854775808",
    ] {
        assert_refused(
            &mut con,
            &["MSETEX", seconds, "k", "v", "list", "v"],
            NOT_INTEGER,
        );
    }
}

#[test]
fn invalid_expire_time() {
    let server = Server::start();
    let mut con = populated(&server);
    for seconds in [
        "0",
        "-1",
        "-9223372036854775808",
        // Would overflow when multiplied by 1000.
        "9223372036854775807",
        "9223372036854776",
        // Fits once multiplied, overflows once "now" is added.
        "9223372036854775",
    ] {
        assert_refused(
            &mut con,
            &["MSETEX", seconds, "k", "v", "list", "v"],
            EXPIRE,
        );
    }
}

#[test]
fn set_ex_words_the_same_errors() {
    // The reference: the server's own SET ... EX, with its command name.
    let server = Server::start();
    let mut con = server.client();
    assert_eq!(err(&mut con, &["SET", "k", "v", "EX", "abc"]), NOT_INTEGER);
    assert_eq!(
        err(&mut con, &["SET", "k", "v", "EX", "0"]),
        EXPIRE.replace("msetex", "set")
    );
    assert_eq!(
        err(&mut con, &["SET", "k", "v", "EX", "9223372036854775"]),
        EXPIRE.replace("msetex", "set")
    );
    assert_eq!(
        err(&mut con, &["SETEX", "k"]),
        ARITY.replace("msetex", "setex")
    );
}

#[test]
fn the_largest_valid_ttl_is_accepted() {
    let server = Server::start();
    let mut con = server.client();
    // Anything up to i64::MAX milliseconds from now is a valid deadline.
    let largest = (i64::MAX - now_ms() - 60_000) / 1000;
    let ok = exec(&mut con, &["MSETEX", &largest.to_string(), "k", "v"]).unwrap();
    assert_eq!(ok, Value::Okay);
    let deadline: i64 = q(&mut con, &["PEXPIRETIME", "k"]);
    assert!(deadline > i64::MAX - 120_000, "{deadline}");
}

#[test]
fn server_survives_a_burst_of_bad_calls() {
    let server = Server::start();
    let mut con = populated(&server);
    let before = snapshot(&mut con);
    let bad: [&[&str]; 6] = [
        &["MSETEX"],
        &["MSETEX", "x", "k", "v"],
        &["MSETEX", "0", "k", "v"],
        &["MSETEX", "-5", "k", "v"],
        &["MSETEX", "", "", ""],
        &["MSETEX", "1", "k"],
    ];
    for _ in 0..200 {
        for args in bad {
            assert!(exec(&mut con, args).is_err());
        }
    }
    assert_eq!(snapshot(&mut con), before);
    let pong: String = q(&mut con, &["PING"]);
    assert_eq!(pong, "PONG");
}
