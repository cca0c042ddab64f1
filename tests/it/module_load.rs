//! Loading: `loadmodule` in redis.conf (every other test) and MODULE LOAD /
//! MODULE UNLOAD at run time.

use msetex_harness::*;

#[test]
fn load_and_unload_at_run_time() {
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

    q::<(), _>(&mut con, &["MODULE", "UNLOAD", "msetex"]);
    let unknown = err(&mut con, &["MSETEX", "60", "k", "v"]);
    assert!(unknown.starts_with("ERR unknown command"), "{unknown}");
    let value: String = q(&mut con, &["GET", "k"]);
    assert_eq!(
        value, "v",
        "keys outlive the module: they are plain strings"
    );

    // And back again.
    q::<(), _>(&mut con, &load);
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
