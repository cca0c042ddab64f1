//! Loading: `loadmodule` in redis.conf (every other test) and MODULE LOAD at run time; MODULE
//! UNLOAD refused.

use msetex_harness::*;

#[test]
fn loads_at_run_time_and_refuses_to_unload() {
    let server = ServerConfig::without_module().start();
    let mut con = server.client();
    let mut load = vec![
        "MODULE".to_owned(),
        "LOAD".to_owned(),
        module_path().display().to_string(),
    ];
    load.extend(target().default_module_args());
    let unknown = err(&mut con, &["MSETEX", "60", "k", "v"]);
    assert!(unknown.starts_with("ERR unknown command"), "{unknown}");

    q::<(), _>(&mut con, &load);
    assert_eq!(
        exec(&mut con, &["MSETEX", "60", "k", "v"]).unwrap(),
        Value::Okay
    );
    let modules = format!("{:?}", exec(&mut con, &["MODULE", "LIST"]).unwrap());
    assert!(modules.contains("msetex"), "{modules}");

    // MODULE UNLOAD is refused (docs/OPERATIONS.md, *Unloading*): the server up, MSETEX served.
    let refused = err(&mut con, &["MODULE", "UNLOAD", "msetex"]);
    assert!(
        refused.starts_with("ERR Error unloading module"),
        "{refused}"
    );
    assert!(
        server.log().contains(
            "<msetex> MODULE UNLOAD refused: the server can crash once this module's commands are \
             gone (a client with MSETEX queued in MULTI, a client that last ran it, an ACL rule \
             naming it); restart the server without the loadmodule line to remove the module"
        ),
        "{}",
        server.log()
    );
    assert_eq!(
        exec(&mut con, &["MSETEX", "60", "k2", "v2"]).unwrap(),
        Value::Okay
    );
}

#[test]
fn loads_from_redis_conf() {
    let server = Server::start();
    assert!(
        server.log().contains("Module 'msetex' loaded"),
        "{}",
        server.log()
    );
}
