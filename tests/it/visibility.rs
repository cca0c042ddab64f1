//! What other clients see of a call besides its keys: client-side caching
//! invalidations, MONITOR, SLOWLOG and INFO commandstats, against SET on
//! the same server. Keys the server's own command writes for MSETEX (MSET,
//! or the built-in MSETEX on Valkey 9.1+: integers everywhere, and what the
//! key API cannot write as SET would) run that command on a client of the
//! module's, which MONITOR, SLOWLOG and commandstats see (docs/COMMAND.md,
//! *Behaviour*).

use msetex_harness::*;
use std::time::Duration;

/// The keys that `call` (as the tracking client) gets invalidations for, in
/// BCAST NOLOOP mode, redirected to a subscriber: a write by another client
/// ends the wait.
fn invalidated_by_own_writes(server: &Server, call: &[&[&str]]) -> Vec<String> {
    let mut subscriber = server.client();
    let id: i64 = q(&mut subscriber, &["CLIENT", "ID"]);
    let mut pubsub = subscriber.as_pubsub();
    pubsub.subscribe("__redis__:invalidate").expect("subscribe");
    pubsub
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut writer = server.client();
    let id = id.to_string();
    q::<(), _>(
        &mut writer,
        &[
            "CLIENT", "TRACKING", "on", "BCAST", "NOLOOP", "REDIRECT", &id,
        ],
    );
    for command in call {
        let _: Value = q(&mut writer, command);
    }
    q::<(), _>(&mut server.client(), &["SET", "t:marker", "1"]);
    let mut own = Vec::new();
    loop {
        let message = pubsub.get_message().expect("an invalidation");
        let keys: Vec<String> = message.get_payload().unwrap_or_default();
        let done = keys.iter().any(|k| k == "t:marker");
        own.extend(keys.into_iter().filter(|k| k != "t:marker"));
        if done {
            return own;
        }
    }
}

#[test]
fn a_bcast_noloop_client_is_not_told_about_its_own_writes() {
    if skip_unless(
        target().is_7_0_or_later() || target().version.0 == 6,
        "client tracking",
    ) {
        return;
    }
    // Every path: a new key, an integer (the server's batch command), a
    // string refreshed in place, another type replaced.
    let seed: &[&[&str]] = &[
        &["SET", "t:same", "abcd", "EX", "100"],
        &["RPUSH", "t:list", "x"],
    ];
    let server = Server::start();
    let mut con = server.client();
    for command in seed {
        let _: Value = q(&mut con, command);
    }
    let ours = invalidated_by_own_writes(
        &server,
        &[&[
            "MSETEX", "100", "t:new", "v", "t:int", "42", "t:same", "wxyz", "t:list", "s",
        ]],
    );
    let reference = Server::start();
    let mut con = reference.client();
    for command in seed {
        let _: Value = q(&mut con, command);
    }
    let theirs = invalidated_by_own_writes(
        &reference,
        &[
            &["SET", "t:new", "v", "EX", "100"],
            &["SET", "t:int", "42", "EX", "100"],
            &["SET", "t:same", "wxyz", "EX", "100"],
            &["SET", "t:list", "s", "EX", "100"],
        ],
    );
    assert_eq!(theirs, Vec::<String>::new());
    assert_eq!(ours, theirs);
}

/// The name the server's batch command shows under: MSET, or the built-in
/// MSETEX on Valkey 9.1+.
fn batch_command() -> &'static str {
    if target().is_valkey() && target().has_builtin_msetex() {
        "msetex"
    } else {
        "mset"
    }
}

fn calls_of(con: &mut Connection, command: &str) -> i64 {
    info_field(con, "commandstats", &format!("cmdstat_{command}"))
        .and_then(|stats| {
            stats
                .split(',')
                .find_map(|f| f.strip_prefix("calls=").and_then(|n| n.parse().ok()))
        })
        .unwrap_or(0)
}

#[test]
fn monitor_slowlog_and_commandstats_show_the_batch_command_and_nothing_else() {
    let server = ServerConfig::default()
        .line("slowlog-log-slower-than 0")
        .start();
    let mut con = server.client();
    let mut monitor = std::net::TcpStream::connect(("127.0.0.1", server.port())).expect("monitor");
    monitor
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    std::io::Write::write_all(&mut monitor, b"MONITOR\r\n").expect("MONITOR");
    let mut lines = std::io::BufReader::new(monitor);
    let mut line = String::new();
    std::io::BufRead::read_line(&mut lines, &mut line).expect("+OK");
    let batch = batch_command();
    let name = target().command_name();

    // Keys the key API writes (a 200-byte string refreshed in place, which
    // no server embeds with its key): only the call itself shows.
    let (old, new) = ("o".repeat(200), "n".repeat(200));
    q::<(), _>(&mut con, &["SET", "m:new", &old, "EX", "100"]);
    q::<(), _>(&mut con, &["SLOWLOG", "RESET"]);
    q::<(), _>(&mut con, &["MSETEX", "100", "m:new", &new]);
    let slowlog: Value = q(&mut con, &["SLOWLOG", "GET", "10"]);
    let logged = format!("{slowlog:?}").to_ascii_lowercase();
    assert_eq!(calls_of(&mut con, batch), 0, "{batch}");
    assert!(!logged.contains(&format!("\"{batch}\"")), "{logged}");
    // An integer goes through the batch command: MONITOR shows its line
    // before the call's, SLOWLOG and commandstats count it.
    q::<(), _>(&mut con, &["SLOWLOG", "RESET"]);
    let before = calls_of(&mut con, batch);
    q::<(), _>(&mut con, &["MSETEX", "100", "m:int", "42"]);
    assert_eq!(calls_of(&mut con, batch), before + 1);
    let slowlog: Value = q(&mut con, &["SLOWLOG", "GET", "10"]);
    let logged = format!("{slowlog:?}").to_ascii_lowercase();
    assert!(
        logged.contains(batch) && logged.contains("m:int"),
        "{logged}"
    );

    let mut seen = Vec::new();
    while !seen.iter().any(|l: &String| {
        l.contains("m:int") && l.to_ascii_lowercase().contains(&format!("\"{name}\""))
    }) {
        line.clear();
        std::io::BufRead::read_line(&mut lines, &mut line).expect("a MONITOR line");
        seen.push(line.trim().to_owned());
    }
    // The module's own calls: not from the test's connection.
    let batch_lines = |key: &str| {
        seen.iter()
            .filter(|l| l.to_ascii_lowercase().contains(&format!("\"{batch}\"")) && l.contains(key))
            .filter(|l| !l.contains("127.0.0.1:"))
            .count()
    };
    assert_eq!(batch_lines("m:int"), 1, "{seen:?}");
    assert_eq!(batch_lines("m:new"), 0, "{seen:?}");
}
