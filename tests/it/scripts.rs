//! Scripts: `redis.set_repl()` decides what a script's commands send to
//! replicas and the AOF. The server applies it to each command it
//! propagates itself (SET), but until redis/redis#15695 not to what a
//! command queues for propagation on its own: SPOP with a count (its SREMs)
//! and every module's RedisModule_Replicate. A module cannot see the
//! script's choice, so MSETEX follows it exactly where the server's own
//! self-propagating commands do.

use msetex_harness::*;

#[test]
fn set_repl_reaches_msetex_as_far_as_the_server_applies_it() {
    let primary = Server::start();
    let replica = start_replica(&primary, ServerConfig::default());
    let mut p = primary.client();
    let mut r = replica.client();
    let name = target().command_name();
    for mode in ["REPL_NONE", "REPL_AOF", "REPL_REPLICA", "REPL_ALL"] {
        let set = format!("set:{mode}");
        q::<i64, _>(&mut p, &["SADD", &set, "a", "b", "c", "d"]);
        wait_for_replicas(&mut p, 1);
        let script = format!(
            "redis.set_repl(redis.{mode})\n\
             redis.call('SPOP', KEYS[1], 2)\n\
             redis.call('{name}', '100', KEYS[2], 'x')\n\
             redis.call('SET', KEYS[3], 'x')\n\
             return 1"
        );
        let keys = [
            set.clone(),
            format!("msetex:{mode}"),
            format!("plain:{mode}"),
        ];
        let _: i64 = q(
            &mut p,
            &["EVAL", script.as_str(), "3", &keys[0], &keys[1], &keys[2]],
        );
        q::<(), _>(&mut p, &["SET", "sync", mode]);
        wait_for_replicas(&mut p, 1);
        let to_replicas = mode == "REPL_REPLICA" || mode == "REPL_ALL";
        // The server's own rule for a command it propagates itself.
        assert_eq!(
            q::<i64, _>(&mut r, &["EXISTS", &keys[2]]) == 1,
            to_replicas,
            "{mode}: SET"
        );
        // SPOP's SREMs reached the replica if its set shrank too.
        let spop_replicated = q::<i64, _>(&mut r, &["SCARD", &set]) == 2;
        let msetex_replicated = q::<i64, _>(&mut r, &["EXISTS", &keys[1]]) == 1;
        assert_eq!(
            msetex_replicated, spop_replicated,
            "{mode}: MSETEX replicated {msetex_replicated}, SPOP {spop_replicated}"
        );
        // Whatever the server does with the others, REPL_ALL replicates
        // everything, so MSETEX too.
        if mode == "REPL_ALL" {
            assert!(msetex_replicated, "{mode}: MSETEX not replicated");
        }
    }
}
