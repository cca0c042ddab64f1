//! The AOF holds native commands with absolute deadlines (`SET ... PXAT` per
//! key, or where the server runs MSETEX natively, one `MSETEX ... PXAT` per
//! call): a restart keeps values and deadlines, and the same AOF loads on a
//! server without the module.

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

/// The AOF names only commands every server of this version has: SET, or
/// the built-in MSETEX where the server runs it natively; never the
/// module's own.
fn assert_native_commands(aof: &str) {
    assert!(
        !aof.contains(target().command_name()) && !aof.contains(".apply"),
        "the AOF must not name the module's commands:\n{aof}"
    );
    let names_msetex = aof.to_ascii_uppercase().contains("MSETEX");
    assert_eq!(
        names_msetex,
        target().replicates_natively(false),
        "MSETEX only where the server runs it natively:\n{aof}"
    );
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
    assert_native_commands(&aof);
    assert!(
        aof.contains("PXAT"),
        "expected absolute deadlines (PXAT) in the AOF:\n{aof}"
    );
    if !target().replicates_natively(false) {
        assert!(
            aof.contains("MULTI") && aof.contains("EXEC"),
            "several keys are one transaction:\n{aof}"
        );
    }

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
    assert_native_commands(&aof);
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
    let omega = deadline_of(&mut con, "p:a").0.to_string();
    // Each call as `<name>.apply <deadline> key value ...` (the absolute
    // deadline first, then the pairs, the keys where the key spec says), or
    // where the server runs MSETEX natively as the built-in's own
    // `MSETEX numkeys key value ... PXAT deadline`.
    let native = target().replicates_natively(false);
    let apply = format!("{name}.apply");
    let (command, last_call) = if native {
        (
            "MSETEX",
            resp(&["MSETEX", "1", "p:a", "omega", "PXAT", &omega]),
        )
    } else {
        (
            apply.as_str(),
            resp(&[apply.as_str(), &omega, "p:a", "omega"]),
        )
    };
    let calls = aof.matches(&format!("\r\n{command}\r\n")).count();
    assert_eq!(calls, 2, "one {command} per call:\n{aof}");
    assert!(
        aof.contains(&String::from_utf8_lossy(&last_call).into_owned()),
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

    // Without the module the server replays the native form, and cannot
    // replay the module's own (it says why).
    server.kill();
    let without = ServerConfig::without_module().line("appendonly yes");
    if native {
        server.set_config(without);
        server.restart();
        assert_eq!(values_and_deadlines(&mut server.client(), &KEYS), before);
    } else {
        let log = without.start_expecting_failure_in(copy_data(server.dir()));
        assert!(
            log.to_ascii_lowercase()
                .contains(&format!("unknown command '{apply}'")),
            "{log}"
        );
    }
}
