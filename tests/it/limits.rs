//! Server limits apply before MSETEX runs: maxmemory (deny-oom).

use msetex_harness::*;

#[test]
fn refused_when_out_of_memory_and_nothing_is_written() {
    let server = Server::start();
    let mut con = server.client();
    q::<(), _>(&mut con, &["SET", "k", "old"]);
    q::<(), _>(
        &mut con,
        &["CONFIG", "SET", "maxmemory-policy", "noeviction"],
    );
    q::<(), _>(&mut con, &["CONFIG", "SET", "maxmemory", "1"]);
    let before = snapshot(&mut con);
    assert_eq!(
        err(&mut con, &["MSETEX", "60", "k", "new", "k2", "v"]),
        "OOM command not allowed when used memory > 'maxmemory'."
    );
    q::<(), _>(&mut con, &["CONFIG", "SET", "maxmemory", "0"]);
    assert_eq!(snapshot(&mut con), before);
    let ok = exec(&mut con, &["MSETEX", "60", "k", "new"]).unwrap();
    assert_eq!(ok, Value::Okay);
}
