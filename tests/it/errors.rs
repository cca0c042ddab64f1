//! Every refused call gets the server's own error text and writes nothing.

use msetex_harness::*;

fn arity() -> String {
    named("ERR wrong number of arguments for 'msetex' command")
}
const NOT_INTEGER: &str = "ERR value is not an integer or out of range";
fn expire() -> String {
    target().invalid_expire(target().command_name())
}

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
        assert_refused(&mut con, args, &arity());
    }
}

#[test]
fn misplaced_options_say_where_they_go() {
    let server = Server::start();
    let mut con = populated(&server);
    let name = target().command_name();
    let first = format!(
        "ERR the options of {name} come first: {name} [NX|XX] [EX|PX|EXAT|PXAT] time key value \
         [key value ...]"
    );
    for args in [
        &["MSETEX", "60", "k", "v", "NX"][..],
        &["MSETEX", "60", "k", "v", "k2", "v2", "PX"],
    ] {
        assert_refused(&mut con, args, &first);
    }
    let keepttl = format!(
        "ERR KEEPTTL exists only in the numkeys form (load the module with SYNTAX NUMKEYS); \
         {name} takes {name} [NX|XX] [EX|PX|EXAT|PXAT] time key value [key value ...]"
    );
    assert_refused(&mut con, &["MSETEX", "KEEPTTL", "60", "k", "v"], &keepttl);
    assert_refused(&mut con, &["MSETEX", "NX", "KEEPTTL", "k", "v"], &keepttl);
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
            &expire(),
        );
    }
}

#[test]
fn set_ex_words_the_same_errors() {
    // The reference: the server's own SET ... EX, with its command name.
    let server = Server::start();
    let mut con = server.client();
    assert_eq!(err(&mut con, &["SET", "k", "v", "EX", "abc"]), NOT_INTEGER);
    let name = target().command_name();
    assert_eq!(
        err(&mut con, &["SET", "k", "v", "EX", "0"]),
        expire().replace(name, "set")
    );
    assert_eq!(
        err(&mut con, &["SET", "k", "v", "EX", "9223372036854775"]),
        expire().replace(name, "set")
    );
    assert_eq!(
        err(&mut con, &["SETEX", "k"]),
        arity().replace(name, "setex")
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
    let deadline = deadline_of(&mut con, "k").0;
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

#[test]
fn hostile_corpus_gets_exact_errors_and_writes_nothing() {
    let server = Server::start();
    let mut con = populated(&server);
    let before = snapshot(&mut con);
    let not_integers = [
        "",
        " ",
        " 1",
        "1 ",
        "+1",
        "1e3",
        "0x10",
        "1.0",
        "01",
        "-0",
        "--1",
        "1-",
        "١",
        "99999999999999999999",
        "-99999999999999999999",
        "9223372036854775808",
        "-9223372036854775809",
        "NaN",
        "inf",
        "\u{0}",
        "1\u{0}",
    ];
    let out_of_range = ["0", "-1", "-9223372036854775808"];
    let prefixes: [&[&str]; 8] = [
        &[],
        &["EX"],
        &["px"],
        &["EXAT"],
        &["PXAT"],
        &["NX"],
        &["xx", "PX"],
        &["EXAT", "NX"],
    ];
    let mut calls = 0;
    for prefix in prefixes {
        let call = |time: &str, pairs: &[&str]| -> Vec<String> {
            let mut args = vec!["MSETEX".to_owned()];
            args.extend(prefix.iter().map(|s| s.to_string()));
            args.push(time.to_owned());
            args.extend(pairs.iter().map(|s| s.to_string()));
            args
        };
        for time in not_integers {
            let args = call(time, &["k", "v", "list", "v"]);
            assert_eq!(err(&mut con, &args), NOT_INTEGER, "{args:?}");
            calls += 1;
        }
        // i64::MAX overflows every unit but PXAT, where it is a valid instant.
        let pxat = prefix.iter().any(|p| p.eq_ignore_ascii_case("PXAT"));
        let overflow = (!pxat).then_some("9223372036854775807");
        for time in out_of_range.into_iter().chain(overflow) {
            let args = call(time, &["k", "v"]);
            assert_eq!(err(&mut con, &args), expire(), "{args:?}");
            calls += 1;
        }
        for pairs in [&["k"][..], &["k", "v", "k2"], &["", "", ""]] {
            let args = call("10", pairs);
            if args.len() >= 4 {
                assert_eq!(err(&mut con, &args), arity(), "{args:?}");
                calls += 1;
            }
        }
        // A second keyword of either group, anywhere among the options.
        for extra in ["NX", "xx", "EX", "pxat"] {
            let mut args = vec!["MSETEX".to_owned()];
            args.extend(prefix.iter().map(|s| s.to_string()));
            args.push(extra.to_owned());
            args.extend(["10", "k", "v"].map(String::from));
            let repeats_a_group = prefix.iter().any(|p| {
                let is_condition =
                    |w: &str| w.eq_ignore_ascii_case("NX") || w.eq_ignore_ascii_case("XX");
                is_condition(p) == is_condition(extra)
            });
            if repeats_a_group {
                assert_eq!(err(&mut con, &args), "ERR syntax error", "{args:?}");
                calls += 1;
            }
        }
    }
    assert!(calls > 200, "{calls}");
    assert_eq!(snapshot(&mut con), before, "a refused call wrote something");
    assert_eq!(q::<String, _>(&mut con, &["PING"]), "PONG");
}
