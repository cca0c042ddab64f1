//! Hardened and upgraded deployments: each server command the module calls
//! renamed away (`rename-command X ""`, common for CONFIG, ACL, DEBUG),
//! MODULE UNLOAD (refused while the module has commands), and the
//! built-in MSETEX of Redis 8.4+ / Valkey 9.1+ renamed away, beside which
//! the module serves under a name of its own. Each either works completely (primary, replica, AOF)
//! or is refused cleanly: a refused load with one log line naming the
//! command, a refused unload with the server up. Never a crash, never a
//! call that writes and then fails.

use msetex_harness::*;

/// The server commands the module may call, as `rename-command` takes them.
const COMMANDS: [&str; 5] = ["MSET", "SET", "MSETEX", "ACL", "CONFIG"];

/// Whether the module loads on this server in `mode` with `command`
/// renamed away: it refuses only where every path it could take needs the
/// command (docs/OPERATIONS.md, *Hardened configurations*).
fn loads_without(command: &str, mode: Replicate) -> bool {
    let t = target();
    let valkey_8 = t.at_least(None, Some((8, 0)));
    let valkey_9_1 = t.is_valkey() && t.has_builtin_msetex();
    // Redis 7.0's ACL check asks the server about MSET and SET.
    let redis_7_0 = t.is_7_0_or_later() && !t.has_module_acl_categories();
    match command {
        // The batch of what the key API cannot write; Valkey 9.1 batches with
        // its built-in.
        "MSET" => valkey_9_1,
        // Valkey 8+'s past deadlines, Redis 7.0's ACL check, REPLICATE SET's
        // wire (except where the server runs MSETEX natively).
        "SET" => {
            !valkey_8 && !redis_7_0 && (mode == Replicate::Msetex || t.replicates_natively(false))
        }
        _ => true,
    }
}

/// Every write path of this server in one call, then a past deadline, a
/// KEEPTTL-free overwrite and NX: new keys, a same-length overwrite, an
/// integer, a short string SET embeds, a long one, another type.
fn exercise(con: &mut Connection) -> Vec<&'static [u8]> {
    let seed = [
        "MSETEX",
        "900",
        "h:same",
        "0123456789abcdef0123456789abcdef0123456789abcdef",
    ];
    assert_eq!(exec(con, &seed).unwrap(), Value::Okay);
    q::<i64, _>(con, &["RPUSH", "h:list", "x"]);
    let long = "y".repeat(200);
    let call = [
        "MSETEX",
        "600",
        "h:new",
        "n",
        "h:same",
        "fedcba9876543210fedcba9876543210fedcba9876543210",
        "h:int",
        "12345",
        "h:list",
        "now a string",
        "h:long",
        &long,
    ];
    assert_eq!(exec(con, &call).unwrap(), Value::Okay);
    let past = (now_ms() - 60_000).to_string();
    assert_eq!(
        exec(
            con,
            &["MSETEX", "PXAT", &past, "h:same", "gone", "h:fresh", "f"]
        )
        .unwrap(),
        Value::Okay
    );
    let later = (now_ms() + 900_000).to_string();
    assert_eq!(
        exec(
            con,
            &["MSETEX", "NX", "PXAT", &later, "h:nx", "1", "h:nx2", "2"]
        )
        .unwrap(),
        Value::Int(1)
    );
    vec![
        b"h:new", b"h:same", b"h:int", b"h:list", b"h:long", b"h:fresh", b"h:nx", b"h:nx2",
    ]
}

#[test]
fn each_renamed_command_takes_another_path_or_refuses_the_load() {
    let mut outcomes = Vec::new();
    // A server refuses to start renaming a command it does not have.
    let commands = COMMANDS
        .into_iter()
        .filter(|command| *command != "MSETEX" || target().has_builtin_msetex());
    for command in commands {
        for mode in [Replicate::Set, Replicate::Msetex] {
            let rename = format!("rename-command {command} \"\"");
            let what = format!("{command} renamed, REPLICATE {}", mode.arg());
            let config = || ServerConfig::default().replicate(mode).line(&rename);
            if !loads_without(command, mode) {
                let log = config().start_expecting_failure();
                let refusals: Vec<&str> = log
                    .lines()
                    .filter(|l| l.contains("<msetex> not loaded"))
                    .collect();
                assert_eq!(refusals.len(), 1, "{what}: one line says why:\n{log}");
                assert!(
                    refusals[0].contains(&format!("no '{command}' command")),
                    "{what}: {}",
                    refusals[0]
                );
                outcomes.push(format!("{what}: load refused"));
                continue;
            }
            let mut primary = config()
                .line("appendonly yes")
                .line("appendfsync always")
                .start();
            // REPLICATE SET's replicas need nothing; REPLICATE MSETEX's the
            // module, loaded the same way.
            let replica_config = match mode {
                Replicate::Set => ServerConfig::without_module().line(&rename),
                Replicate::Msetex => config(),
            };
            let replica = start_replica(&primary, replica_config);
            let mut p = primary.client();
            let keys = exercise(&mut p);
            wait_for_replicas(&mut p, 1);
            let on_primary = values_and_deadlines(&mut p, &keys);
            assert_eq!(
                on_primary[0].0.as_deref(),
                Some(b"n".as_slice()),
                "{what}: {on_primary:?}"
            );
            assert_eq!(
                values_and_deadlines(&mut replica.client(), &keys),
                on_primary,
                "{what}: the replica"
            );
            assert!(
                !primary.log().contains("failed to"),
                "{what}:\n{}",
                primary.log()
            );
            primary.restart();
            assert_eq!(
                values_and_deadlines(&mut primary.client(), &keys),
                on_primary,
                "{what}: the AOF"
            );
            outcomes.push(format!("{what}: served"));
        }
    }
    record_result("renamed server commands", &outcomes.join("; "));
}

/// `rename-command CONFIG ""` used to leave the module unable to read
/// io-threads, so it assumed 1 and registered the getkeys callback that
/// crashes servers asking for keys from I/O threads. It now reads it
/// another way (`RedisModule_ConfigGetNumeric`), or takes it as above 1:
/// no callback where the server asks for keys on I/O threads, either way.
#[test]
fn config_renamed_away_still_declares_keys_safely_with_io_threads() {
    let cluster = target().io_thread_keys_need_cluster();
    let config = ServerConfig::default()
        .line("rename-command CONFIG \"\"")
        .line("io-threads 4");
    let server = if cluster {
        cluster_pair(config, ServerConfig::default()).0
    } else {
        config.start()
    };
    let mut con = server.client();
    let read = KeysRead::of(&mut con);
    if target().asks_keys_on_io_threads() {
        assert!(read.by_specs(), "{read:?}\n{}", server.log());
    }
    // The calls work all the same, options included.
    let call = ["MSETEX", "NX", "PX", "60000", "{t}a", "1", "{t}b", "2"];
    assert_eq!(exec(&mut con, &call).unwrap(), Value::Int(1));
    let getkeys = [&["COMMAND", "GETKEYS"][..], &call].concat();
    assert_eq!(q::<Vec<String>, _>(&mut con, &getkeys), ["{t}a", "{t}b"]);
}

/// MODULE UNLOAD is refused while the module has commands: once one is gone, a client that
/// queued it in MULTI runs freed memory at EXEC (every server of the matrix), a client that last
/// ran it makes Redis 8.0+ reuse it, and an ACL rule naming it crashes Redis 6.2 - 8.6 and Valkey
/// 7.2 - 8.1. A module that stepped aside registered nothing, and unloads.
#[test]
fn module_unload_is_refused_so_nothing_reaches_a_command_gone() {
    for acl_renamed in [false, true] {
        let mut config = ServerConfig::default();
        if acl_renamed {
            config = config.line("rename-command ACL \"\"");
        }
        let server = config.start();
        let (mut queued, mut admin) = (server.client(), server.client());
        q::<(), _>(&mut queued, &["MULTI"]);
        let reply = exec(&mut queued, &["MSETEX", "60", "k", "v"]);
        assert!(reply.is_ok(), "{reply:?}");
        if !acl_renamed {
            let rule = format!("+{}", target().command_name());
            q::<(), _>(&mut admin, &["ACL", "SETUSER", "u1", "on", "nopass", &rule]);
        }
        let refused = err(&mut admin, &["MODULE", "UNLOAD", "msetex"]);
        assert!(
            refused.starts_with("ERR Error unloading module"),
            "{refused}"
        );
        assert_eq!(
            exec(&mut queued, &["EXEC"]).unwrap(),
            Value::Array(vec![Value::Okay])
        );
        assert_eq!(q::<String, _>(&mut admin, &["GET", "k"]), "v");
        // Valkey 9.1 refuses an unload with such a rule itself, before the module is asked.
        let server_refused = target().is_valkey() && target().has_builtin_msetex() && !acl_renamed;
        assert!(
            server_refused || server.log().contains("MODULE UNLOAD refused"),
            "{}",
            server.log()
        );
    }
    if target().has_builtin_msetex() {
        let server = ServerConfig::without_module().start();
        let mut con = server.client();
        let path = module_path().display().to_string();
        q::<(), _>(&mut con, &["MODULE", "LOAD", &path, "SYNTAX", "NUMKEYS"]);
        q::<(), _>(&mut con, &["MODULE", "UNLOAD", "msetex"]);
    }
    record_result(
        "MODULE UNLOAD",
        "refused while the module has commands (MSETEX queued in MULTI, an ACL rule naming it, \
         ACL renamed away): server up, the queued call runs; a module that stepped aside unloads",
    );
}

/// The load line of the module beside a built-in MSETEX, under its own name.
fn beside_the_builtin(mode: Replicate) -> ServerConfig {
    ServerConfig::default().module_args(&[
        "SYNTAX",
        "NUMKEYS",
        "COMMAND-NAME",
        "msetex.nk",
        "REPLICATE",
        mode.arg(),
    ])
}

/// docs/OPERATIONS.md, *Servers with their own MSETEX*: with the built-in renamed away, the module
/// takes no name the server gave a command. Under the default name it refuses to load, saying
/// what to load instead; under a name of its own it serves that name, which ACL rules, COMMAND
/// INFO, replicas and the AOF all see as itself, and `MSETEX` stays unknown to everyone.
#[test]
fn beside_a_builtin_renamed_away_the_module_answers_only_to_its_own_name() {
    if skip_unless(
        target().has_builtin_msetex(),
        "a built-in MSETEX (Redis 8.4+, Valkey 9.1+)",
    ) {
        return;
    }
    let renamed = "rename-command MSETEX \"\"";
    let log = ServerConfig::default()
        .module_args(&["SYNTAX", "NUMKEYS"])
        .line(renamed)
        .start_expecting_failure();
    assert!(
        log.contains("renamed away") && log.contains("COMMAND-NAME msetex.nk"),
        "{log}"
    );
    for mode in [Replicate::Set, Replicate::Msetex] {
        let config = || beside_the_builtin(mode).line(renamed);
        let mut primary = config()
            .line("appendonly yes")
            .line("appendfsync always")
            .start();
        let replica = start_replica(&primary, config());
        let mut p = primary.client();
        assert!(err(&mut p, &["MSETEX", "1", "a", "1", "EX", "600"]).contains("unknown command"));
        assert_eq!(
            q::<Value, _>(&mut p, &["COMMAND", "INFO", "MSETEX"]),
            Value::Array(vec![Value::Nil])
        );
        let info = format!(
            "{:?}",
            q::<Value, _>(&mut p, &["COMMAND", "INFO", "msetex.nk"])
        );
        assert!(
            info.contains("msetex.nk") && info.contains("write"),
            "{info}"
        );
        // ACL rules see the command under its name: denied by it or by a category, it is
        // refused; a rule about MSETEX names another command, which no one can run here.
        for (rules, allowed) in [
            ("+@all -msetex ~*", true),
            ("+@all -msetex.nk ~*", false),
            ("+@all -@write ~*", false),
            ("-@all +msetex.nk ~*", true),
            ("-@all +msetex ~*", false),
        ] {
            let mut setuser = vec!["ACL", "SETUSER", "u", "reset", "on", ">pw"];
            setuser.extend(rules.split(' '));
            q::<(), _>(&mut p, &setuser);
            let mut user = primary.client();
            q::<(), _>(&mut user, &["AUTH", "u", "pw"]);
            let call = ["msetex.nk", "1", "u:k", "v", "EX", "600"];
            let dry_run = raw_command(&[&["ACL", "DRYRUN", "u"][..], &call].concat())
                .query::<Value>(&mut p)
                .is_ok_and(|reply| reply == Value::Okay);
            let reply = raw_command(&call).query::<i64>(&mut user);
            assert_eq!(reply.is_ok(), allowed, "[{rules}] {reply:?}");
            assert_eq!(dry_run, allowed, "[{rules}] ACL DRYRUN");
            if !allowed {
                assert!(error_text(&reply.unwrap_err()).starts_with("NOPERM"));
            }
            assert!(err(&mut user, &["MSETEX", "1", "u:k", "v"]).contains("unknown command"));
            q::<i64, _>(&mut p, &["DEL", "u:k"]);
        }
        let call = ["msetex.nk", "2", "a", "1", "b", "two", "NX", "EX", "600"];
        assert_eq!(raw_command(&call).query::<i64>(&mut p).unwrap(), 1);
        assert_eq!(
            info_field(&mut p, "msetex", "msetex_calls").as_deref(),
            Some("3")
        );
        wait_for_replicas(&mut p, 1);
        let keys: [&[u8]; 2] = [b"a", b"b"];
        let on_primary = values_and_deadlines(&mut p, &keys);
        assert!(
            on_primary.iter().all(|(v, d)| v.is_some() && d.0 > 0),
            "{on_primary:?}"
        );
        assert_eq!(
            values_and_deadlines(&mut replica.client(), &keys),
            on_primary
        );
        primary.restart();
        assert_eq!(
            values_and_deadlines(&mut primary.client(), &keys),
            on_primary
        );
    }
}

/// docs/OPERATIONS.md, *Servers with their own MSETEX*: an AOF that holds the built-in's MSETEX
/// commands does not load once MSETEX is renamed away (the AOF runs no command filter, and a
/// module cannot take the name); rewritten first (BGREWRITEAOF, with the built-in still named),
/// it loads beside the module under its own name, every key and deadline kept.
#[test]
fn an_aof_with_the_builtins_msetex_moves_across_by_a_rewrite() {
    if skip_unless(
        target().has_builtin_msetex(),
        "a built-in MSETEX (Redis 8.4+, Valkey 9.1+)",
    ) {
        return;
    }
    let aof = |config: ServerConfig| config.line("appendonly yes").line("appendfsync always");
    let mut server = aof(ServerConfig::without_module()).start();
    let mut con = server.client();
    let call = ["MSETEX", "2", "a", "1", "b", "two", "EX", "600"];
    assert_eq!(raw_command(&call).query::<i64>(&mut con).unwrap(), 1);
    let keys: [&[u8]; 2] = [b"a", b"b"];
    let written = values_and_deadlines(&mut con, &keys);
    let renamed = || aof(beside_the_builtin(Replicate::Set)).line("rename-command MSETEX \"\"");
    let log = server.restart_expecting_failure(renamed());
    assert!(log.contains("MSETEX"), "{log}");
    // The documented way across: a rewrite while the built-in still has its name.
    server.set_config(aof(beside_the_builtin(Replicate::Set)));
    server.restart();
    let mut con = server.client();
    assert_eq!(values_and_deadlines(&mut con, &keys), written);
    q::<String, _>(&mut con, &["BGREWRITEAOF"]);
    let rewritten = eventually(std::time::Duration::from_secs(20), || {
        info_field(&mut con, "persistence", "aof_rewrite_in_progress").as_deref() == Some("0")
            && info_field(&mut con, "persistence", "aof_rewrite_scheduled").as_deref() == Some("0")
            && info_field(&mut con, "persistence", "aof_last_bgrewrite_status").as_deref()
                == Some("ok")
    });
    assert!(rewritten, "{}", server.log());
    server.set_config(renamed());
    server.restart();
    let mut con = server.client();
    assert_eq!(values_and_deadlines(&mut con, &keys), written);
    let again = ["msetex.nk", "1", "c", "3", "EX", "600"];
    assert_eq!(raw_command(&again).query::<i64>(&mut con).unwrap(), 1);
}
