//! `INFO msetex`: counters since the module was loaded.

use msetex_harness::*;

fn counter(con: &mut Connection, field: &str) -> i64 {
    info_field(con, "msetex", field)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("INFO msetex lacks {field}"))
}

#[test]
fn counts_calls_keys_and_errors() {
    let server = Server::start();
    let mut con = server.client();
    assert_eq!(counter(&mut con, "msetex_calls"), 0);
    q::<(), _>(&mut con, &["MSETEX", "60", "a", "1", "b", "2", "c", "3"]);
    q::<(), _>(&mut con, &["MSETEX", "60", "a", "x"]);
    let _ = exec(&mut con, &["MSETEX", "0", "a", "1"]);
    let _ = exec(&mut con, &["MSETEX", "60", "a", "1", "b"]);
    assert_eq!(counter(&mut con, "msetex_calls"), 4);
    assert_eq!(counter(&mut con, "msetex_keys_set"), 4);
    assert_eq!(counter(&mut con, "msetex_errors"), 2);
    // Below the declared minimum of 4 arguments: from Redis 7.0 the server
    // refuses it before the module runs (not counted); 6.2 checks no arity
    // for module commands, and a range reading declares -2 (a refused call
    // is rewritten to two arguments), so the module refuses it (counted).
    let _ = exec(&mut con, &["MSETEX", "60", "a"]);
    let server_checks = target().is_7_0_or_later() && KeysRead::of(&mut con) != KeysRead::Range;
    let (calls, errors) = if server_checks { (4, 2) } else { (5, 3) };
    assert_eq!(counter(&mut con, "msetex_calls"), calls);
    assert_eq!(counter(&mut con, "msetex_errors"), errors);
    // NX that writes nothing: a call, no keys, no error.
    let zero = exec(&mut con, &["MSETEX", "NX", "60", "a", "1"]).unwrap();
    assert_eq!(zero, Value::Int(0));
    assert_eq!(counter(&mut con, "msetex_calls"), calls + 1);
    assert_eq!(counter(&mut con, "msetex_keys_set"), 4);
    assert_eq!(counter(&mut con, "msetex_errors"), errors);
}

#[test]
fn reports_the_load_options_and_who_listens() {
    let server = Server::start();
    let mut con = server.client();
    let field = |con: &mut Connection, name: &str| {
        info_field(con, "msetex", name).unwrap_or_else(|| panic!("INFO msetex lacks {name}"))
    };
    assert_eq!(field(&mut con, "msetex_syntax"), "ttl");
    assert_eq!(field(&mut con, "msetex_replicate"), "set");
    // How ACL rules reach MSETEX (README, Security).
    let acl = if target().has_module_acl_categories() {
        "categories"
    } else if target().is_7_0_or_later() {
        "by-name-and-capability"
    } else {
        "by-name"
    };
    assert_eq!(field(&mut con, "msetex_acl"), acl);
    let quiet = eventually(std::time::Duration::from_secs(5), || {
        field(&mut con, "msetex_replication_listeners") == "none"
    });
    assert!(quiet, "no replica, no backlog, no AOF: nobody listens");
    // With the AOF on, every call is replicated: the field says so (it
    // used to say `none`, from the replication probe alone).
    q::<(), _>(&mut con, &["CONFIG", "SET", "appendonly", "yes"]);
    assert_eq!(field(&mut con, "msetex_replication_listeners"), "aof");
    let mut args = target().default_module_args();
    args.extend(["SYNTAX", "NUMKEYS", "REPLICATE", "MSETEX"].map(String::from));
    if target().has_builtin_msetex() {
        args = [
            "COMMAND-NAME",
            "msetex.nk",
            "SYNTAX",
            "NUMKEYS",
            "REPLICATE",
            "MSETEX",
        ]
        .map(String::from)
        .to_vec();
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let server = ServerConfig::default().module_args(&args).start();
    let mut con = server.client();
    assert_eq!(field(&mut con, "msetex_syntax"), "numkeys");
    assert_eq!(field(&mut con, "msetex_replicate"), "msetex");

    // In cluster mode too, on every server: either slot migrations move keys
    // with MIGRATE (nothing replicated reaches the target), or the server
    // announces each export before its first write (Redis 8.4+, Valkey 9+),
    // and a fresh cluster lists no job at load.
    let cluster = single_node_cluster();
    let mut con = cluster.client();
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_eq!(field(&mut con, "msetex_replication_listeners"), "none");
}
