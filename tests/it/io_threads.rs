//! Servers that ask for a command's keys from their I/O threads (Redis 8.2+
//! with io-threads; Valkey 8+ in cluster mode): a `getkeys-api` callback
//! there runs a module context on an I/O thread while the main thread works,
//! which crashed Redis 8.6.3 and Valkey 8.0-9.1 under load with a replica.
//! The module declares its keys by key specs on those servers instead.
//! Sized for the suite (5 s of load); `make soak` runs 60 s on every server.

use msetex_harness::*;

const IO_THREADS: u32 = 4;

/// A primary with `io-threads 4` (in cluster mode where the server computes
/// slots on I/O threads) and a replica, both with the module.
fn primary_and_replica() -> (Server, Server, bool) {
    let cluster = target().io_thread_keys_need_cluster();
    let config = ServerConfig::default().line(&format!("io-threads {IO_THREADS}"));
    if cluster {
        let (primary, replica) = cluster_pair(config, ServerConfig::default());
        (primary, replica, true)
    } else {
        let primary = config.start();
        let replica = start_replica(&primary, ServerConfig::default());
        (primary, replica, false)
    }
}

#[test]
fn io_threads_with_a_replica_under_load_keep_the_server_up() {
    let (primary, replica, _) = primary_and_replica();
    let seconds = scaled(5, 60) as u64;
    // 200 clients on 4 benchmark threads, MSETEX with two keys of one slot.
    let name = target().command_name();
    benchmark_for(
        &primary,
        seconds,
        &[
            "-c",
            "200",
            "--threads",
            "4",
            "-r",
            "100000",
            name,
            "100",
            "{t}k:__rand_int__",
            "v",
            "{t}j:__rand_int__",
            "w",
        ],
    );
    assert!(
        answers_ping(primary.port(), std::time::Duration::from_secs(5)),
        "the primary went down:\n{}",
        primary.log()
    );
    let mut p = primary.client();
    let mut r = replica.client();
    // Commands the I/O threads had already read may still run after the
    // load stops: compare once the primary is quiet.
    let same = eventually(std::time::Duration::from_secs(20), || {
        wait_for_replicas(&mut p, 1);
        digest(&mut p) == digest(&mut r)
    });
    assert!(same, "replica and primary differ");
    let keys: i64 = q(&mut p, &["DBSIZE"]);
    assert!(keys > 100, "the load wrote only {keys} keys");
    record_result(
        &format!("io-threads {IO_THREADS}, replica, 200 clients"),
        &format!(
            "{seconds} s of MSETEX from 200 clients on 4 threads: server up, {keys} keys, \
             replica identical (DEBUG DIGEST)"
        ),
    );
}

#[test]
fn keys_are_declared_exactly_whatever_the_threads() {
    let (primary, _replica, _) = primary_and_replica();
    let mut con = primary.client();
    let plain = ["MSETEX", "60", "{t}a", "1", "{t}b", "2"];
    assert_eq!(exec(&mut con, &plain).unwrap(), Value::Okay);
    let mut getkeys = vec!["COMMAND", "GETKEYS"];
    getkeys.extend_from_slice(&plain);
    assert_eq!(q::<Vec<String>, _>(&mut con, &getkeys), ["{t}a", "{t}b"]);
    // Keys tagged {t}: a key spec read as it stands would take "PX" (and
    // the time) for keys, in other slots. Where the server reads keys from
    // key specs only, the module's command filter packs the options first:
    // the server checks the real keys, and COMMAND GETKEYS lists them.
    let with_options = ["MSETEX", "NX", "PX", "60000", "{t}c", "1", "{t}d", "2"];
    assert_eq!(exec(&mut con, &with_options).unwrap(), Value::Int(1));
    assert_eq!(
        q::<Vec<Option<String>>, _>(&mut con, &["MGET", "{t}c", "{t}d"]),
        [Some("1".to_owned()), Some("2".to_owned())]
    );
    let mut getkeys = vec!["COMMAND", "GETKEYS"];
    getkeys.extend_from_slice(&with_options);
    assert_eq!(q::<Vec<String>, _>(&mut con, &getkeys), ["{t}c", "{t}d"]);
}

#[test]
fn the_numkeys_form_declares_its_keys_exactly() {
    // Where the server reads a keynum spec with its step and routes by key
    // specs (Redis 8.4+), the built-in's keynum spec describes every call;
    // elsewhere (older servers, Valkey, which routes a module command by
    // its legacy key range) the command filter moves the options after the
    // pairs in front of them, and a plain range describes the keys. Only
    // Redis 8.2 in cluster mode refuses options there (not in the matrix).
    let cluster = target().io_thread_keys_need_cluster();
    let args = target().numkeys_module_args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let config = ServerConfig::default()
        .module_args(&args)
        .line(&format!("io-threads {IO_THREADS}"));
    let (primary, _replica) = if cluster {
        let replica_config = ServerConfig::default().module_args(&args);
        cluster_pair(config, replica_config)
    } else {
        let primary = config.start();
        let replica = start_replica(&primary, ServerConfig::default().module_args(&args));
        (primary, replica)
    };
    let mut con = primary.client();
    let name = target().numkeys_name();
    let call = [name, "2", "{t}a", "1", "{t}b", "2", "NX", "EX", "60"];
    assert_eq!(exec(&mut con, &call).unwrap(), Value::Int(1));
    assert_eq!(
        q::<Vec<Option<String>>, _>(&mut con, &["MGET", "{t}a", "{t}b"]),
        [Some("1".to_owned()), Some("2".to_owned())]
    );
    let mut getkeys = vec!["COMMAND", "GETKEYS"];
    getkeys.extend_from_slice(&call);
    assert_eq!(q::<Vec<String>, _>(&mut con, &getkeys), ["{t}a", "{t}b"]);
    // A key pattern sees the real keys.
    q::<(), _>(
        &mut con,
        &["ACL", "SETUSER", "t", "on", ">pw", "~{t}*", "+@all"],
    );
    let mut user = primary.client();
    q::<(), _>(&mut user, &["AUTH", "t", "pw"]);
    let other = [name, "1", "{t}c", "3", "XX", "PX", "600"];
    assert_eq!(exec(&mut user, &other).unwrap(), Value::Int(0));
    let outside = [name, "1", "{u}c", "3", "PX", "600"];
    assert_eq!(err(&mut user, &outside), target().noperm_key());
}

/// The command filter's packed argument (`\0` then `<len>:<bytes>` per argument, the first the
/// count of those that stood before the pairs) as a client could write it by hand.
fn packed(before: usize, args: &[&str]) -> Vec<u8> {
    let mut out = vec![0u8];
    let before = before.to_string();
    for arg in std::iter::once(before.as_str()).chain(args.iter().copied()) {
        out.extend_from_slice(format!("{}:{arg}", arg.len()).as_bytes());
    }
    out
}

/// A client's hand-made packed argument never takes a key past the server's checks: a numkeys
/// beyond the pairs (it declared a key past the call, which crashed the server), keys inside the
/// packed argument, or a packed call where nothing packs (Redis 8.6 with io-threads read no keys
/// from it and let a user with a key pattern write anywhere). With and without io-threads.
#[test]
fn hand_made_packed_arguments_write_nothing_the_server_did_not_check() {
    let cluster = target().io_thread_keys_need_cluster();
    for threads in [1, IO_THREADS] {
        for syntax in ["TTL", "NUMKEYS"] {
            let (args, name) = if syntax == "TTL" {
                (target().default_module_args(), target().command_name())
            } else {
                (target().numkeys_module_args(), target().numkeys_name())
            };
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let config = ServerConfig::default()
                .module_args(&args)
                .line(&format!("io-threads {threads}"));
            let (server, _replica) = if cluster {
                cluster_pair(config, ServerConfig::default().module_args(&args))
            } else {
                (config.start(), ServerConfig::default().start())
            };
            let mut admin = server.client();
            q::<(), _>(
                &mut admin,
                &["ACL", "SETUSER", "u", "on", ">pw", "~{t}*", "+@all"],
            );
            let mut user = server.client();
            q::<(), _>(&mut user, &["AUTH", "u", "pw"]);
            let crafted: Vec<Vec<u8>> = if syntax == "TTL" {
                vec![
                    packed(4, &["NX", "60", "{s}secret", "v"]),
                    packed(2, &["PX", "60000"]),
                ]
            } else {
                vec![
                    packed(1, &["1"]),
                    packed(1, &["1", "EX", "100"]),
                    packed(1, &["2", "EX", "100"]),
                ]
            };
            for first in &crafted {
                let call: Vec<&[u8]> = vec![name.as_bytes(), first, b"{s}secret", b"v"];
                let sent = raw_command(&call).query::<Value>(&mut user);
                assert!(
                    sent.is_err(),
                    "{syntax}, io-threads {threads}: {first:?} -> {sent:?}"
                );
                let getkeys = [&[&b"COMMAND"[..], b"GETKEYS"][..], &call].concat();
                let _ = raw_command(&getkeys).query::<Value>(&mut admin);
                assert_eq!(q::<String, _>(&mut admin, &["PING"]), "PONG", "server down");
            }
            assert_eq!(
                q::<i64, _>(&mut admin, &["EXISTS", "{s}secret"]),
                0,
                "{syntax}"
            );
        }
    }
}
