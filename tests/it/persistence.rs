//! The AOF holds native `SET ... PXAT` commands: a restart keeps values and
//! absolute deadlines, and the same AOF loads on a server without the module.

use msetex_harness::*;

const KEYS: [&[u8]; 4] = [b"p:a", b"p:int", b"p:bin", b"p:empty"];

fn write_sample(con: &mut Connection) {
    let args: Vec<&[u8]> = vec![
        b"MSETEX",
        b"1000",
        b"p:a",
        b"alpha",
        b"p:int",
        b"42",
        b"p:bin",
        b"\x00\x01\xfe",
        b"p:empty",
        b"",
    ];
    assert_eq!(exec(con, &args).unwrap(), Value::Okay);
    // An in-place overwrite and a second deadline.
    q::<(), _>(con, &["MSETEX", "2000", "p:a", "omega"]);
}

fn aof_config() -> ServerConfig {
    ServerConfig::default()
        .line("appendonly yes")
        .line("appendfsync always")
}

#[test]
fn aof_holds_native_commands_with_absolute_deadlines() {
    let mut server = aof_config().start();
    let mut con = server.client();
    write_sample(&mut con);
    let before = values_and_deadlines(&mut con, &KEYS);
    let aof = aof_text(server.dir());
    assert!(
        !aof.to_ascii_uppercase().contains("MSETEX"),
        "the AOF must not name MSETEX:\n{aof}"
    );
    assert!(
        aof.contains("PXAT"),
        "expected SET ... PXAT in the AOF:\n{aof}"
    );
    assert!(
        aof.contains("MULTI") && aof.contains("EXEC"),
        "several keys are one transaction:\n{aof}"
    );

    // Crash and restart: every acknowledged key is back with its deadline.
    server.restart();
    let mut con = server.client();
    assert_eq!(values_and_deadlines(&mut con, &KEYS), before);

    // The same files load on a server that does not have the module.
    server.set_config(ServerConfig::without_module().line("appendonly yes"));
    server.restart();
    let mut con = server.client();
    assert_eq!(values_and_deadlines(&mut con, &KEYS), before);
    assert!(
        exec(&mut con, &["MSETEX", "1", "x", "y"]).is_err(),
        "module must not be loaded"
    );
}

#[test]
fn aof_switched_on_at_run_time_gets_every_later_write() {
    let mut server = Server::start();
    let mut con = server.client();
    let probed = eventually(std::time::Duration::from_secs(5), || {
        info_field(&mut con, "msetex", "msetex_replication_listeners").as_deref() == Some("none")
    });
    assert!(probed, "the probe should find no replica and no backlog");
    q::<(), _>(&mut con, &["CONFIG", "SET", "appendonly", "yes"]);
    q::<(), _>(&mut con, &["CONFIG", "SET", "appendfsync", "always"]);
    let rewritten = eventually(std::time::Duration::from_secs(20), || {
        info_field(&mut con, "persistence", "aof_rewrite_in_progress").as_deref() == Some("0")
            && info_field(&mut con, "persistence", "aof_rewrite_scheduled").as_deref() == Some("0")
    });
    assert!(rewritten, "initial AOF rewrite did not finish");
    write_sample(&mut con);
    let before = values_and_deadlines(&mut con, &KEYS);
    let aof = aof_text(server.dir());
    assert!(!aof.to_ascii_uppercase().contains("MSETEX"), "{aof}");
    assert!(
        aof.contains("p:empty"),
        "the writes must be in the AOF:\n{aof}"
    );
    server.set_config(aof_config());
    server.restart();
    let mut con = server.client();
    assert_eq!(values_and_deadlines(&mut con, &KEYS), before);
}

#[test]
fn rdb_snapshot_keeps_values_and_deadlines() {
    let mut server = Server::start();
    let mut con = server.client();
    write_sample(&mut con);
    let before = values_and_deadlines(&mut con, &KEYS);
    q::<(), _>(&mut con, &["SAVE"]);
    server.restart();
    let mut con = server.client();
    assert_eq!(values_and_deadlines(&mut con, &KEYS), before);
}

#[test]
fn replicate_msetex_logs_one_command_per_call() {
    let config = || {
        Replicate::Msetex
            .primary()
            .line("appendonly yes")
            .line("appendfsync always")
    };
    let mut server = config().start();
    let mut con = server.client();
    write_sample(&mut con);
    let before = values_and_deadlines(&mut con, &KEYS);
    let aof = aof_text(server.dir());
    let name = target().command_name();
    // Each call as `<name>.apply <deadline> key value ...`: the absolute
    // deadline first, then the pairs, the keys where the key spec says.
    let apply = format!("{name}.apply");
    let calls = aof.matches(&format!("\r\n{apply}\r\n")).count();
    assert_eq!(calls, 2, "one {apply} per call:\n{aof}");
    let omega = deadline_of(&mut con, "p:a").0.to_string();
    assert!(
        aof.contains(
            &String::from_utf8_lossy(&resp(&[apply.as_str(), &omega, "p:a", "omega"])).into_owned()
        ),
        "{aof}"
    );
    assert!(!aof.contains("\r\nSET\r\n"), "{aof}");
    // One command needs no transaction (Redis 6.2 wraps every command a
    // module replicates in MULTI/EXEC all the same).
    if target().is_7_0_or_later() {
        assert!(!aof.contains("MULTI"), "{aof}");
    }

    server.restart();
    let mut con = server.client();
    assert_eq!(values_and_deadlines(&mut con, &KEYS), before);
    assert_eq!(
        q::<String, _>(&mut con, &["OBJECT", "ENCODING", "p:int"]),
        "int"
    );

    // Without the module the server cannot replay it, and says why.
    server.kill();
    let log = ServerConfig::without_module()
        .line("appendonly yes")
        .start_expecting_failure_in(copy_data(server.dir()));
    assert!(
        log.to_ascii_lowercase()
            .contains(&format!("unknown command '{apply}'")),
        "{log}"
    );
}
