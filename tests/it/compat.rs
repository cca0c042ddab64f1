//! Being a good citizen: COMMAND DOCS / COMMAND INFO, the COMMAND-NAME load
//! argument, refusing bad load arguments without harm.

use msetex_harness::*;

/// A flat list of the strings in a (nested) reply, for `contains` checks.
fn flatten(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Array(items) | Value::Set(items) => items.iter().for_each(|v| flatten(v, out)),
        Value::Map(pairs) => pairs.iter().for_each(|(k, v)| {
            flatten(k, out);
            flatten(v, out);
        }),
        Value::BulkString(bytes) => out.push(String::from_utf8_lossy(bytes).into_owned()),
        Value::SimpleString(text) => out.push(text.clone()),
        Value::Int(n) => out.push(n.to_string()),
        _ => {}
    }
}

fn words(value: &Value) -> Vec<String> {
    let mut out = Vec::new();
    flatten(value, &mut out);
    out
}

/// The names in MODULE LIST, sorted.
fn module_names(con: &mut Connection) -> Vec<String> {
    let Value::Array(modules) = exec(con, &["MODULE", "LIST"]).unwrap() else {
        panic!("MODULE LIST is not an array")
    };
    let mut names: Vec<String> = modules
        .iter()
        .filter_map(|module| after(&words(module), "name").map(str::to_owned))
        .collect();
    names.sort();
    names
}

/// `ours` plus the modules this server version loads by itself, sorted.
fn with_bundled(ours: &[&str]) -> Vec<String> {
    let mut names: Vec<String> = ours
        .iter()
        .chain(target().bundled_modules())
        .map(|name| name.to_string())
        .collect();
    names.sort();
    names
}

/// The value after `field` in a flattened reply.
fn after<'a>(words: &'a [String], field: &str) -> Option<&'a str> {
    let at = words.iter().position(|w| w == field)?;
    words.get(at + 1).map(String::as_str)
}

#[test]
fn command_docs_describe_msetex() {
    if skip_unless(
        target().is_7_0_or_later(),
        "COMMAND DOCS appeared in Redis 7.0",
    ) {
        return;
    }
    let server = Server::start();
    let mut con = server.client();
    let docs = words(&exec(&mut con, &["COMMAND", "DOCS", "msetex"]).unwrap());
    assert_eq!(
        after(&docs, "summary"),
        Some("Sets multiple keys to multiple values with one time to live, atomically.")
    );
    assert_eq!(after(&docs, "since"), Some("1.0.0"));
    assert_eq!(after(&docs, "group"), Some("module"));
    assert_eq!(
        after(&docs, "complexity"),
        Some("O(N) where N is the number of keys to set.")
    );
    assert!(
        docs.windows(2)
            .any(|w| w[0] == "module" && w[1] == "msetex"),
        "{docs:?}"
    );
    for token in ["NX", "XX", "EX", "PX", "EXAT", "PXAT"] {
        assert!(
            docs.iter().any(|w| w == token),
            "token {token} missing: {docs:?}"
        );
    }
    for name in ["condition", "unit", "time", "data", "key", "value"] {
        assert!(
            docs.iter().any(|w| w == name),
            "argument {name} missing: {docs:?}"
        );
    }
}

#[test]
fn command_info_shows_the_key_specification() {
    if skip_unless(
        target().is_7_0_or_later(),
        "key specifications appeared in Redis 7.0",
    ) {
        return;
    }
    let server = Server::start();
    let mut con = server.client();
    let info = words(&exec(&mut con, &["COMMAND", "INFO", "msetex"]).unwrap());
    // -2 where a call the command refuses is rewritten to two arguments (no key among them).
    let read = KeysRead::of(&mut con);
    let arity = if read == KeysRead::Range { "-2" } else { "-4" };
    assert_eq!(
        info.get(1).map(String::as_str),
        Some(arity),
        "arity: {info:?}"
    );
    for flag in ["write", "denyoom", "OW", "update"] {
        assert!(info.iter().any(|w| w == flag), "{flag} missing: {info:?}");
    }
    // Options move the keys: with the getkeys callback the spec is incomplete; where the filter
    // marks the keys (Redis 7.0+ outside cluster mode) the first spec finds them after the mark,
    // and a second, not a key and incomplete, tells clients to ask COMMAND GETKEYS about a call
    // as sent. Movable either way.
    for flag in ["movablekeys", "incomplete"] {
        assert!(info.iter().any(|w| w == flag), "{flag}: {info:?}");
    }
    let marked = info.iter().any(|w| w == "not_key");
    assert_eq!(marked, read.rewrites(), "{read:?}: {info:?}");
    if read == KeysRead::Marked {
        let search = ["keyword", "\u{1}keys\u{1}", "startfrom", "1"];
        assert!(info.windows(4).any(|w| w == search), "{info:?}");
        assert_eq!(after(&info, "lastkey"), Some("-2"));
    } else {
        assert_eq!(after(&info, "index"), Some("spec"));
        assert_eq!(after(&info, "lastkey"), Some("-1"));
    }
    assert_eq!(after(&info, "keystep"), Some("2"));
    // The server enforces the arity itself, with the same words.
    assert_eq!(
        err(&mut con, &["MSETEX", "1", "k"]),
        named("ERR wrong number of arguments for 'msetex' command")
    );
}

/// The NUMKEYS form carries the built-in's tips (Redis 8.6.3's MSETEX:
/// multi_shard, all_succeeded) beside its keynum specification, where
/// COMMAND INFO shows that spec (7.0+); the TTL form carries none.
#[test]
fn command_info_of_the_numkeys_form_carries_the_builtins_tips() {
    if skip_unless(
        target().is_7_0_or_later(),
        "command tips appeared in Redis 7.0",
    ) {
        return;
    }
    let tips = [
        "request_policy:multi_shard",
        "response_policy:all_succeeded",
    ];
    let server = ServerConfig::numkeys().start();
    let mut con = server.client();
    let name = target().numkeys_name();
    let info = words(
        &raw_command(&["COMMAND", "INFO", name])
            .query(&mut con)
            .unwrap(),
    );
    // Beside the keynum spec only: where a first spec reads a rewritten call, a client that
    // honours multi_shard would split the call by keys it cannot place.
    let keynum = !KeysRead::of(&mut con).rewrites();
    for tip in tips {
        let shown = info.iter().any(|w| w == tip);
        assert_eq!(shown, keynum, "{tip}: {info:?}");
    }
    if keynum {
        assert_eq!(after(&info, "type"), Some("index"), "{info:?}");
        assert!(
            info.iter().any(|w| w == "keynum"),
            "a keynum spec: {info:?}"
        );
    }
    let server = Server::start();
    let mut con = server.client();
    let info = words(&exec(&mut con, &["COMMAND", "INFO", "msetex"]).unwrap());
    assert!(!info.iter().any(|w| tips.contains(&w.as_str())), "{info:?}");
}

#[test]
fn command_name_load_argument() {
    let server = ServerConfig::default()
        .module_args(&["COMMAND-NAME", "MyApp.MSetEx"])
        .start();
    let mut con = server.client();
    let ok = exec(&mut con, &["myapp.msetex", "60", "a", "1", "b", "2"]).unwrap();
    assert_eq!(ok, Value::Okay);
    assert_eq!(
        exec(&mut con, &["MYAPP.MSETEX", "NX", "60", "c", "1"]).unwrap(),
        Value::Int(1)
    );
    assert!(err(&mut con, &["MSETEX", "60", "a", "1"]).starts_with("ERR unknown command"));
    assert_eq!(
        err(&mut con, &["myapp.msetex", "0", "a", "1"]),
        target().invalid_expire("myapp.msetex")
    );
    let keys: Vec<String> = q(
        &mut con,
        &["COMMAND", "GETKEYS", "myapp.msetex", "PX", "5", "x", "1"],
    );
    assert_eq!(keys, ["x"]);
    if target().is_7_0_or_later() {
        let docs = words(&exec(&mut con, &["COMMAND", "DOCS", "myapp.msetex"]).unwrap());
        assert!(docs.iter().any(|w| w == "PXAT"), "{docs:?}");
    }
    assert_eq!(
        module_names(&mut con),
        with_bundled(&["msetex"]),
        "the module keeps its name"
    );
    let registered = format!(
        "command 'myapp.msetex' registered on {}",
        target().describe()
    );
    assert!(server.log().contains(&registered), "{}", server.log());
}

#[test]
fn bad_load_arguments_refuse_the_load_with_a_clear_line() {
    for (args, expected) in [
        (&["COMMAND-NAME"][..], "COMMAND-NAME needs a value"),
        (&["NAME", "x"], "unknown load argument 'NAME'"),
        (&["COMMAND-NAME", "a|b"], "invalid COMMAND-NAME 'a|b'"),
    ] {
        let log = ServerConfig::default()
            .module_args(args)
            .start_expecting_failure();
        assert!(
            log.contains(&format!("<msetex> not loaded: {expected}")),
            "{args:?}:\n{log}"
        );
    }
    // A server command's name is refused before the module asks for it
    // (the server would crash registering one renamed away); a name with a
    // dot another module took is refused by the server, without harm.
    let log = ServerConfig::default()
        .module_args(&["COMMAND-NAME", "get"])
        .start_expecting_failure();
    assert!(
        log.contains("not loaded: COMMAND-NAME 'get' is the name of a server command"),
        "{log}"
    );
    let log = ServerConfig::default()
        .module_args(&["COMMAND-NAME", "get"])
        .line("rename-command GET \"\"")
        .start_expecting_failure();
    assert!(
        log.contains("not loaded: COMMAND-NAME 'get' is the name of a server command"),
        "{log}"
    );
}

#[test]
fn module_load_with_arguments_at_run_time() {
    let server = ServerConfig::without_module().start();
    let mut con = server.client();
    let path = module_path().display().to_string();
    let refused = err(&mut con, &["MODULE", "LOAD", path.as_str(), "BOGUS"]);
    assert_eq!(
        refused,
        "ERR Error loading the extension. Please check the server logs."
    );
    assert_eq!(q::<String, _>(&mut con, &["PING"]), "PONG");
    q::<(), _>(
        &mut con,
        &["MODULE", "LOAD", path.as_str(), "COMMAND-NAME", "ttl.mset"],
    );
    assert_eq!(
        exec(&mut con, &["TTL.MSET", "60", "k", "v"]).unwrap(),
        Value::Okay
    );
    // Loaded as in every other test (on a server of its own: MODULE UNLOAD is refused), errors
    // use that name again.
    let server = ServerConfig::without_module().start();
    let mut con = server.client();
    let mut load = vec!["MODULE".to_owned(), "LOAD".to_owned(), path.clone()];
    load.extend(target().default_module_args());
    q::<(), _>(&mut con, &load);
    assert_eq!(
        err(&mut con, &["MSETEX", "x", "k", "v"]),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(
        err(&mut con, &["MSETEX", "-1", "k", "v"]),
        target().invalid_expire(target().command_name())
    );
}
