//! The load choices as module configurations (Redis 7.0+, Valkey): config-file lines, `MODULE
//! LOADEX ... CONFIG`, `CONFIG GET`, `CONFIG SET` (refused: every choice is fixed once loaded),
//! `CONFIG REWRITE`; load arguments everywhere (the only way on Redis 6.2); quiet shutdowns.

use std::collections::BTreeMap;

use msetex_harness::*;

/// Redis 7.0+ and Valkey register module configurations (`RedisModule_RegisterStringConfig`).
fn has_module_configs() -> bool {
    target().is_7_0_or_later()
}

/// `CONFIG GET msetex.*`, by name.
fn configs(con: &mut Connection) -> BTreeMap<String, String> {
    let pairs: Vec<String> = q(con, &["CONFIG", "GET", "msetex.*"]);
    let pairs = pairs
        .chunks(2)
        .map(|pair| (pair[0].clone(), pair[1].clone()));
    pairs.collect()
}

fn expected(syntax: &str, replicate: &str, name: &str) -> BTreeMap<String, String> {
    let pairs = [
        ("msetex.syntax", syntax),
        ("msetex.replicate", replicate),
        ("msetex.command-name", name),
    ];
    pairs
        .into_iter()
        .map(|(config, value)| (config.to_owned(), value.to_owned()))
        .collect()
}

/// The module in force answers as configured: INFO msetex, and a numkeys-form call under `name`.
fn serves_numkeys_as(con: &mut Connection, name: &str, replicate: &str) {
    let info = |con: &mut Connection, field| info_field(con, "msetex", field);
    assert_eq!(info(con, "msetex_syntax").as_deref(), Some("numkeys"));
    assert_eq!(info(con, "msetex_replicate").as_deref(), Some(replicate));
    assert_eq!(info(con, "msetex_command_name").as_deref(), Some(name));
    let call = [name, "2", "a", "1", "b", "2", "EX", "100"];
    assert_eq!(
        raw_command(&call).query::<Value>(con).unwrap(),
        Value::Int(1)
    );
    assert_eq!(q::<i64, _>(con, &["TTL", "b"]), 100);
}

/// The module chose `numkeys`, `replicate` and `app.nk`, and so it does once `CONFIG REWRITE` wrote
/// the config file and the server restarted from that file alone, which this returns.
fn kept_by_config_rewrite(server: &mut Server, replicate: &str) -> String {
    for restarted in [false, true] {
        if restarted {
            q::<(), _>(&mut server.client(), &["CONFIG", "REWRITE"]);
            server.restart_as_rewritten();
        }
        let mut con = server.client();
        assert_eq!(configs(&mut con), expected("numkeys", replicate, "app.nk"));
        serves_numkeys_as(&mut con, "app.nk", replicate);
    }
    server.config_file()
}

#[test]
fn config_file_lines_choose_and_config_rewrite_keeps_them() {
    if !has_module_configs() {
        // Redis 6.2 knows no module configurations: such a line stops the server (which says
        // so on stderr, "Bad directive", before it opens its log).
        ServerConfig::default()
            .line("msetex.syntax numkeys")
            .start_expecting_failure();
        return;
    }
    let mut server = ServerConfig::default()
        .module_args(&[])
        .line("msetex.syntax NUMKEYS")
        .line("msetex.replicate msetex")
        .line("msetex.command-name App.NK")
        .start();
    // CONFIG REWRITE writes the configurations that differ from their defaults.
    let file = kept_by_config_rewrite(&mut server, "msetex");
    assert!(file.contains("msetex.syntax \"numkeys\""), "{file}");
}

#[test]
fn module_loadex_config_chooses_and_config_rewrite_keeps_it() {
    if !has_module_configs() {
        return;
    }
    let mut server = ServerConfig::without_module().start();
    let mut con = server.client();
    let path = module_path().display().to_string();
    let loadex = |con: &mut Connection, args: &[&str]| {
        let mut call = vec!["MODULE", "LOADEX", path.as_str()];
        call.extend(args);
        raw_command(&call).query::<Value>(con)
    };
    // A configuration the module does not have: the server unloads the module at once (Redis 8
    // asserting that it can), and the module lets it, as no client can hold its commands yet.
    let typo = loadex(&mut con, &["CONFIG", "msetex.syntx", "numkeys"]).unwrap_err();
    assert!(error_text(&typo).contains("Error loading"), "{typo}");
    assert_eq!(q::<String, _>(&mut con, &["PING"]), "PONG");
    assert!(configs(&mut con).is_empty());
    // A configuration and a load argument that disagree refuse the load, in one line.
    let both = [
        "CONFIG",
        "msetex.syntax",
        "numkeys",
        "ARGS",
        "SYNTAX",
        "TTL",
    ];
    assert!(loadex(&mut con, &both).is_err());
    let line = "<msetex> not loaded: the load argument SYNTAX ttl and the configuration \
                msetex.syntax numkeys disagree: make the choice once";
    assert!(server.log().contains(line), "{}", server.log());

    let chosen = [
        "CONFIG",
        "msetex.syntax",
        "numkeys",
        "CONFIG",
        "msetex.command-name",
        "app.nk",
    ];
    assert_eq!(loadex(&mut con, &chosen).unwrap(), Value::Okay);
    let file = kept_by_config_rewrite(&mut server, "set");
    assert!(file.contains(&format!("loadmodule {path}")), "{file}");
    let default = !file.contains("msetex.replicate");
    assert!(
        default,
        "a configuration at its default is not written: {file}"
    );
}

#[test]
fn config_set_keeps_the_value_in_force_and_refuses_a_change_saying_why() {
    if !has_module_configs() {
        return;
    }
    let server = Server::start();
    let mut con = server.client();
    let name = target().command_name();
    assert_eq!(configs(&mut con), expected("ttl", "set", name));
    // The value in force, in any case, is accepted (and changes nothing).
    q::<(), _>(&mut con, &["CONFIG", "SET", "msetex.syntax", "TTL"]);
    q::<(), _>(&mut con, &["CONFIG", "SET", "msetex.command-name", name]);
    for (config, value, why) in [
        (
            "msetex.syntax",
            "numkeys",
            "the command was registered with this syntax's arity, key specifications and docs",
        ),
        (
            "msetex.replicate",
            "msetex",
            "msetex sends a command registered only by a load that chose it",
        ),
        (
            "msetex.command-name",
            "other.name",
            "a server registers module commands only while the module loads",
        ),
    ] {
        let refused = err(&mut con, &["CONFIG", "SET", config, value]);
        let because = format!("{config} is fixed once loaded: {why}");
        assert!(refused.starts_with("ERR CONFIG SET failed"), "{refused}");
        assert!(refused.contains(&because), "{refused}");
        assert!(
            refused.ends_with("change it in the config file and restart"),
            "{refused}"
        );
    }
    let unknown = err(&mut con, &["CONFIG", "SET", "msetex.syntax", "legacy"]);
    assert!(
        unknown.contains("unknown msetex.syntax 'legacy' (ttl or numkeys)"),
        "{unknown}"
    );
    assert_eq!(configs(&mut con), expected("ttl", "set", name));
    q::<(), _>(&mut con, &["MSETEX", "60", "k", "v"]);
}

#[test]
fn a_configuration_the_module_cannot_take_refuses_the_load_in_one_line() {
    if !has_module_configs() {
        return;
    }
    for (line, args, refusal) in [
        (
            "msetex.syntax ttl",
            &["SYNTAX", "NUMKEYS", "COMMAND-NAME", "app.nk"][..],
            "the load argument SYNTAX numkeys and the configuration msetex.syntax ttl disagree",
        ),
        (
            "msetex.replicate aof",
            &[],
            "unknown msetex.replicate 'aof' (set or msetex)",
        ),
        (
            "msetex.command-name a|b",
            &[],
            "invalid msetex.command-name 'a|b': use 1 to 64 printable characters",
        ),
    ] {
        let log = ServerConfig::default()
            .module_args(args)
            .line(line)
            .start_expecting_failure();
        assert!(
            log.contains(&format!("<msetex> not loaded: {refusal}")),
            "{line}:\n{log}"
        );
        assert_eq!(log.matches("<msetex>").count(), 1, "{line}:\n{log}");
    }
}

#[test]
fn load_arguments_choose_on_every_server() {
    let args = [
        "SYNTAX",
        "NUMKEYS",
        "REPLICATE",
        "MSETEX",
        "COMMAND-NAME",
        "App.NK",
    ];
    let server = ServerConfig::default().module_args(&args).start();
    let mut con = server.client();
    serves_numkeys_as(&mut con, "app.nk", "msetex");
    // A load argument is the configuration's value (and its default: CONFIG REWRITE keeps the
    // loadmodule line and writes no configuration line).
    let shown = if has_module_configs() {
        expected("numkeys", "msetex", "app.nk")
    } else {
        BTreeMap::new()
    };
    assert_eq!(configs(&mut con), shown);
    // Agreeing with its load argument, a configuration is welcome.
    if has_module_configs() {
        let server = ServerConfig::default()
            .module_args(&args)
            .line("msetex.syntax numkeys")
            .start();
        serves_numkeys_as(&mut server.client(), "app.nk", "msetex");
    }
}

#[test]
fn a_normal_shutdown_logs_no_warning_about_the_module() {
    // Valkey 9.1+ unloads every module at shutdown; the module lets it then, while an operator's
    // MODULE UNLOAD is still refused with its reason.
    for sigterm in [true, false] {
        let mut server = Server::start();
        let mut con = server.client();
        q::<(), _>(&mut con, &["MSETEX", "60", "k", "v"]);
        let refused = err(&mut con, &["MODULE", "UNLOAD", "msetex"]);
        assert!(
            refused.starts_with("ERR Error unloading module"),
            "{refused}"
        );
        assert!(server.log().contains("<msetex> MODULE UNLOAD refused"));
        // A client with MSETEX queued in MULTI as the server goes down.
        let mut queued = server.client();
        q::<(), _>(&mut queued, &["MULTI"]);
        assert_eq!(
            q::<String, _>(&mut queued, &["MSETEX", "60", "q", "v"]),
            "QUEUED"
        );

        let before = server.log().len();
        let exit = server.shut_down(sigterm);
        assert!(exit.success(), "{exit:?}\n{}", server.log());
        let log = server.log();
        let shutdown = log.get(before..).unwrap_or_default();
        let warnings: Vec<&str> = shutdown
            .lines()
            .filter(|line| line.split_whitespace().nth(5) == Some("#"))
            .filter(|line| {
                let line = line.to_ascii_lowercase();
                line.contains("msetex") || line.contains("module")
            })
            .collect();
        assert!(warnings.is_empty(), "sigterm {sigterm}:\n{shutdown}");
        if target().at_least(None, Some((9, 1))) {
            assert!(shutdown.contains("Module msetex unloaded"), "{shutdown}");
        }
        // And it starts again as it was.
        server.restart();
        assert_eq!(q::<String, _>(&mut server.client(), &["PING"]), "PONG");
    }
}
