//! `SYNTAX NUMKEYS`: the built-in MSETEX of Redis 8.4+ and Valkey 9.1+ on
//! every older server. Compared call by call with the real built-ins (Redis
//! 8.6.3 and Valkey 9.1.2 from ../shared/servers), driven by a typed client,
//! and carried across the upgrade to a server with its own MSETEX.

use msetex_harness::*;
use redis::{Commands, ExistenceCheck, MSetOptions, SetExpiry};

/// The keyspace every compared call starts from: strings with and without
/// TTLs, an integer, other types.
fn seed(con: &mut Connection) {
    q::<(), _>(con, &["FLUSHALL"]);
    q::<(), _>(con, &["SET", "s:ttl", "old", "EX", "1000"]);
    q::<(), _>(con, &["SET", "s:plain", "plain"]);
    q::<(), _>(con, &["SET", "s:int", "42", "EX", "1000"]);
    q::<i64, _>(con, &["RPUSH", "s:list", "a", "b"]);
    q::<i64, _>(con, &["HSET", "s:hash", "f", "v"]);
    q::<i64, _>(con, &["EXPIRE", "s:hash", "1000"]);
}

/// The calls, after the command name: valid ones with every option, and
/// invalid ones of every kind.
fn calls() -> Vec<Vec<Vec<u8>>> {
    let now_s = now_ms() / 1000;
    let exat = (now_s + 1000).to_string();
    let pxat = (now_ms() + 1_000_000).to_string();
    let past = (now_ms() - 60_000).to_string();
    let mut calls: Vec<Vec<String>> = [
        // valid: every option, any order, any case
        &["2", "n:a", "1", "n:b", "two"][..],
        &["2", "n:a", "x", "n:b", "y", "EX", "100"],
        &["1", "n:a", "px", "PX", "100500"],
        &["2", "n:c", "c", "s:plain", "p", "EXAT", &exat],
        &["2", "n:d", "d", "s:ttl", "t", "PXAT", &pxat],
        &["2", "s:ttl", "kept", "s:int", "7", "KEEPTTL"],
        &["2", "s:ttl", "gone", "s:plain", "q"],
        &["2", "n:e", "e", "n:f", "f", "NX"],
        &["2", "n:e", "e2", "n:g", "g", "NX", "EX", "100"],
        &["2", "s:list", "l", "s:hash", "h", "XX", "PX", "200000"],
        &["2", "s:list", "l", "n:missing", "m", "XX"],
        &["1", "n:h", "h", "nx", "ex", "5"],
        &["1", "n:i", "i", "Ex", "5", "nX"],
        &["1", "n:j", "j", "NX", "NX"],
        &["1", "n:k", "k", "EX", "abc", "EX", "50"],
        &["1", "s:int", "8", "KEEPTTL", "KEEPTTL", "XX"],
        &["3", "n:dup", "1", "n:dup", "22", "n:dup", "333"],
        &["2", "n:int", "12345", "n:neg", "-7"],
        &["2", "n:zero", "0", "n:big", "9223372036854775807"],
        &["1", "n:empty", ""],
        &["2", "s:plain", "1", "n:past", "2", "PXAT", &past],
        // invalid
        &["0", "k", "v"],
        &["-1", "k", "v"],
        &["abc", "k", "v"],
        &["1.5", "k", "v"],
        &["+1", "k", "v"],
        &["2147483648", "k", "v"],
        &["2", "k", "v"],
        &["3", "k", "v", "k2", "v2"],
        &["2", "k", "v", "k2"],
        &["1", "k"],
        &["1", "k", "v", "FOO"],
        &["1", "k", "v", "k2", "v2"],
        &["1", "k", "v", "GET"],
        &["1", "k", "v", "EX"],
        &["1", "k", "v", "NX", "XX"],
        &["1", "k", "v", "XX", "NX", "EX", "5"],
        &["1", "k", "v", "EX", "10", "PX", "10"],
        &["1", "k", "v", "KEEPTTL", "EX", "10"],
        &["1", "k", "v", "EX", "10", "KEEPTTL"],
        &["1", "k", "v", "EX", "0"],
        &["1", "k", "v", "PX", "-5"],
        &["1", "k", "v", "EXAT", "0"],
        &["1", "k", "v", "EX", "abc"],
        &["1", "k", "v", "EX", "1.5"],
        &["1", "k", "v", "EX", "NX"],
        &["1", "k", "v", "EX", "5", "EX", "abc"],
        &["1", "k", "v", "EX", "9223372036854775807"],
        &["1", "k", "v", "EX", "9223372036854775"],
        &["1", "k", "v", "PX", "9223372036854775807"],
        &["1", "k", "v", "EXAT", "9223372036854776"],
        &["1", "k", "v", "EX", "9223372036854775808"],
    ]
    .iter()
    .map(|call| call.iter().map(|a| a.to_string()).collect())
    .collect();
    // 1,000 keys, some existing, with a TTL.
    let mut big = vec!["1000".to_owned()];
    for i in 0..1000 {
        big.extend([format!("m:{i}"), format!("{i}")]);
    }
    big.extend(["EX".to_owned(), "300".to_owned()]);
    calls.push(big);
    let mut calls: Vec<Vec<Vec<u8>>> = calls
        .into_iter()
        .map(|call| call.into_iter().map(String::into_bytes).collect())
        .collect();
    // Binary keys and values.
    calls.push(vec![
        b"2".to_vec(),
        b"\x00bin\xff".to_vec(),
        b"\r\n\x00".to_vec(),
        b"n:bin".to_vec(),
        vec![0x80, 0x81, 0x00],
        b"EX".to_vec(),
        b"100".to_vec(),
    ]);
    calls
}

/// Every argument of a call that may be a key, and the seeded keys.
fn keys_of(call: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut keys: Vec<Vec<u8>> = call.iter().skip(1).step_by(2).cloned().collect();
    keys.extend(["s:ttl", "s:plain", "s:int", "s:list", "s:hash"].map(|k| k.as_bytes().to_vec()));
    keys.sort();
    keys.dedup();
    keys
}

/// What a client sees of `key`: type, string value, and its deadline if any.
fn observe(con: &mut Connection, key: &[u8]) -> (String, Option<Vec<u8>>, Option<i64>) {
    let kind: String = q(con, &[b"TYPE".as_slice(), key]);
    let value = if kind == "string" {
        q(con, &[b"GET".as_slice(), key])
    } else {
        None
    };
    let pttl: i64 = q(con, &[b"PTTL".as_slice(), key]);
    let deadline = (pttl >= 0).then(|| now_ms() + pttl);
    (kind, value, deadline)
}

/// An error text with the command named `msetex`, as the built-in says it.
fn as_builtin_words(text: &str, name: &str) -> String {
    text.replace(&format!("'{name}'"), "'msetex'")
}

#[test]
fn answers_every_call_as_the_builtin_does() {
    let builtins = builtin_servers();
    if skip_unless(
        !builtins.is_empty(),
        "no server with a built-in MSETEX on this machine (../shared/servers)",
    ) {
        return;
    }
    let ours = ServerConfig::numkeys().start();
    let name = target().numkeys_name();
    let mut a = ours.client();
    let mut compared = 0;
    for builtin in builtins {
        let theirs = ServerConfig::without_module().binary(builtin).start();
        let mut b = theirs.client();
        // Error texts differ between Redis and Valkey in two cases; compare
        // them with the built-in of the module's own family.
        let same_family = builtin.product == target().product;
        for call in calls() {
            seed(&mut a);
            seed(&mut b);
            let mut ours_call = vec![name.as_bytes().to_vec()];
            ours_call.extend(call.iter().cloned());
            let mut theirs_call = vec![b"MSETEX".to_vec()];
            theirs_call.extend(call.iter().cloned());
            let shown: Vec<String> = call
                .iter()
                .take(8)
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            let reply_a = exec(&mut a, &ours_call);
            let reply_b = raw_command(&theirs_call).query::<Value>(&mut b);
            match (&reply_a, &reply_b) {
                (Ok(x), Ok(y)) => assert_eq!(x, y, "{} {shown:?}: reply", builtin.describe()),
                (Err(x), Err(y)) if same_family => assert_eq!(
                    as_builtin_words(&error_text(x), name),
                    error_text(y),
                    "{} {shown:?}: error",
                    builtin.describe()
                ),
                (Err(_), Err(_)) => {}
                _ => panic!(
                    "{} {shown:?}: ours {reply_a:?}, built-in {reply_b:?}",
                    builtin.describe()
                ),
            }
            for key in keys_of(&call) {
                let (kind_a, value_a, deadline_a) = observe(&mut a, &key);
                let (kind_b, value_b, deadline_b) = observe(&mut b, &key);
                let key = String::from_utf8_lossy(&key);
                assert_eq!(
                    (kind_a, value_a),
                    (kind_b, value_b),
                    "{} {shown:?}: {key}",
                    builtin.describe()
                );
                let close = match (deadline_a, deadline_b) {
                    (Some(x), Some(y)) => (x - y).abs() <= 1500,
                    (x, y) => x == y,
                };
                assert!(
                    close,
                    "{} {shown:?}: {key} deadline {deadline_a:?} vs {deadline_b:?}",
                    builtin.describe()
                );
            }
            compared += 1;
        }
    }
    assert!(compared > 50);
}

#[test]
fn key_positions_are_the_builtins() {
    if skip_unless(
        target().is_7_0_or_later(),
        "key specifications and COMMAND DOCS appeared in Redis 7.0",
    ) {
        return;
    }
    let server = ServerConfig::numkeys().start();
    let mut con = server.client();
    let name = target().numkeys_name();
    let keys: Vec<String> = q(
        &mut con,
        &[
            "COMMAND", "GETKEYS", name, "2", "a", "1", "b", "2", "NX", "EX", "5",
        ],
    );
    assert_eq!(keys, ["a", "b"]);
    let info = format!("{:?}", exec(&mut con, &["COMMAND", "INFO", name]).unwrap());
    for word in [
        "keynum",
        "keynumidx",
        "firstkey",
        "OW",
        "update",
        "movablekeys",
    ] {
        assert!(info.contains(word), "COMMAND INFO lacks {word}: {info}");
    }
    let docs = format!("{:?}", exec(&mut con, &["COMMAND", "DOCS", name]).unwrap());
    for word in ["numkeys", "KEEPTTL", "EXAT", "unix-time"] {
        assert!(docs.contains(word), "COMMAND DOCS lacks {word}: {docs}");
    }
    // ACL key rules apply to every key.
    q::<(), _>(
        &mut con,
        &["ACL", "SETUSER", "app", "on", ">pw", "~app:*", "+@all"],
    );
    let mut app = server.client();
    q::<(), _>(&mut app, &["AUTH", "app", "pw"]);
    let refused = err(
        &mut app,
        &[name, "2", "app:a", "1", "other", "2", "EX", "9"],
    );
    assert_eq!(refused, target().noperm_key());
    assert_eq!(q::<i64, _>(&mut con, &["DBSIZE"]), 0);
}

#[test]
fn cluster_slot_checks_see_every_key() {
    let server = {
        let args = target().numkeys_module_args();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        ServerConfig::default()
            .module_args(&args)
            .line("cluster-enabled yes")
            .line("cluster-config-file nodes.conf")
            .start()
    };
    let mut con = server.client();
    let mut addslots = vec!["CLUSTER".to_owned(), "ADDSLOTS".to_owned()];
    addslots.extend((0..16384).map(|slot: u32| slot.to_string()));
    q::<(), _>(&mut con, &addslots);
    let ok = eventually(std::time::Duration::from_secs(20), || {
        q::<String, _>(&mut con, &["CLUSTER", "INFO"]).contains("cluster_state:ok")
    });
    assert!(ok);
    // On Valkey 9, which may ask for keys from I/O threads and routes a
    // module command by its legacy key range, the command filter moves the
    // options in front of the pairs: the same answers (issue: every call
    // used to be refused there, telling to set io-threads 1, which it was).
    let name = target().numkeys_name();
    assert_eq!(
        err(&mut con, &[name, "2", "a", "1", "b", "2", "EX", "5"]),
        "CROSSSLOT Keys in request don't hash to the same slot"
    );
    let one = exec(&mut con, &[name, "2", "{t}a", "1", "{t}b", "2", "EX", "5"]).unwrap();
    assert_eq!(one, Value::Int(1));
}

#[test]
fn a_typed_client_is_served_by_numkeys_and_refused_by_ttl() {
    // redis-rs's mset_ex sends what redis-py's msetex() and node-redis send:
    // MSETEX <number of pairs> key value ... [NX|XX] [EX n | PX n | ...].
    let items = [("session:1", "data"), ("csrf:1", "tok")];
    let ex = MSetOptions::default().with_expiration(SetExpiry::EX(1800));

    let numkeys = ServerConfig::numkeys().start();
    let mut con = redis::Client::open(numkeys.url())
        .and_then(|c| c.get_connection())
        .expect("connect");
    if target().has_builtin_msetex() {
        // Here the typed client reaches the server's own MSETEX (the module
        // serves under another name, checked call by call above).
        let _ = ex;
    } else {
        assert!(con.mset_ex::<_, _, bool>(&items, ex).unwrap());
        assert_eq!(
            q::<String, _>(&mut numkeys.client(), &["GET", "session:1"]),
            "data"
        );
        let ttl: i64 = q(&mut numkeys.client(), &["TTL", "csrf:1"]);
        assert!((1799..=1800).contains(&ttl), "{ttl}");
        let nx = MSetOptions::default()
            .conditional_set(ExistenceCheck::NX)
            .with_expiration(SetExpiry::PX(5000));
        assert!(!con.mset_ex::<_, _, bool>(&items, nx).unwrap());
        assert_eq!(q::<i64, _>(&mut numkeys.client(), &["EXISTS", "EX"]), 0);
    }

    // The TTL form would store a key named EX and give every key a TTL of
    // 2 seconds: it refuses that shape and writes nothing.
    let ttl = Server::start();
    let mut admin = ttl.client();
    let name = target().command_name();
    let sent = [
        "MSETEX",
        "2",
        "session:1",
        "data",
        "csrf:1",
        "tok",
        "EX",
        "1800",
    ];
    let expected = format!(
        "ERR this {name} takes the TTL first ({name} seconds key value ...), but the call has \
         the shape of the numkeys form that Redis 8.4+ clients send ({name} numkeys key value \
         ... EX seconds); nothing was written. Load the module with SYNTAX NUMKEYS to serve \
         such clients"
    );
    assert_eq!(err(&mut admin, &sent), expected);
    for options in [
        &["PX", "5000"][..],
        &["XX", "KEEPTTL"],
        &["NX", "EX", "60"],
        &["NX"],
    ] {
        let mut call = vec!["MSETEX", "2", "session:1", "data", "csrf:1", "tok"];
        call.extend_from_slice(options);
        assert_eq!(err(&mut admin, &call), expected, "{options:?}");
    }
    assert_eq!(q::<i64, _>(&mut admin, &["DBSIZE"]), 0);
    // The TTL form's own calls still work, keys named like options too.
    q::<(), _>(&mut admin, &["MSETEX", "60", "EX", "1", "PX", "2"]);
    assert_eq!(q::<String, _>(&mut admin, &["GET", "PX"]), "2");
}

#[test]
fn upgrading_to_a_server_with_its_own_msetex() {
    let builtins = builtin_servers();
    if skip_unless(
        !builtins.is_empty(),
        "no server with a built-in MSETEX on this machine (../shared/servers)",
    ) {
        return;
    }
    for builtin in builtins {
        // The same loadmodule line, SYNTAX NUMKEYS under the default name:
        // the module loads, registers nothing, and says the built-in serves.
        let upgraded = ServerConfig::default()
            .binary(builtin)
            .module_args(&["SYNTAX", "NUMKEYS"])
            .start();
        assert!(
            upgraded
                .log()
                .contains("has its own MSETEX with this syntax"),
            "{}",
            upgraded.log()
        );
        let mut con = upgraded.client();
        let docs = format!(
            "{:?}",
            raw_command(&["COMMAND", "DOCS", "MSETEX"])
                .query::<Value>(&mut con)
                .unwrap()
        );
        assert!(
            !docs.contains("\"module\""),
            "MSETEX is not the built-in: {docs}"
        );
        let one = raw_command(&["MSETEX", "1", "k", "v", "EX", "60"])
            .query::<Value>(&mut con)
            .unwrap();
        assert_eq!(one, Value::Int(1));
        // The TTL form keeps refusing the default name there.
        let log = ServerConfig::default()
            .binary(builtin)
            .module_args(&[])
            .start_expecting_failure();
        assert!(
            log.contains("takes numkeys first") && log.contains("COMMAND-NAME"),
            "{log}"
        );
    }
}

#[test]
fn an_aof_written_here_loads_on_servers_with_their_own_msetex() {
    let builtins = builtin_servers();
    if skip_unless(
        !builtins.is_empty() && !target().has_builtin_msetex(),
        "needs a server with a built-in MSETEX and an older one to write the AOF",
    ) {
        return;
    }
    let keys: [&[u8]; 5] = [b"u:a", b"u:int", b"u:keep", b"u:plain", b"u:bin"];
    for replicate in ["SET", "MSETEX"] {
        let config = ServerConfig::default()
            .module_args(&["SYNTAX", "NUMKEYS", "REPLICATE", replicate])
            .line("appendonly yes")
            .line("appendfsync always");
        let mut server = config.start();
        let mut con = server.client();
        let pxat = (now_ms() + 3_600_000).to_string();
        // Absolute, as every setup write whose deadline a test compares.
        let kept_until = (now_ms() + 5_000_000).to_string();
        q::<(), _>(&mut con, &["SET", "u:keep", "old", "PXAT", &kept_until]);
        let writes: [&[&[u8]]; 3] = [
            &[
                b"MSETEX",
                b"2",
                b"u:a",
                b"alpha",
                b"u:int",
                b"42",
                b"PXAT",
                pxat.as_bytes(),
            ],
            &[b"MSETEX", b"1", b"u:keep", b"new", b"KEEPTTL"],
            &[
                b"MSETEX",
                b"2",
                b"u:plain",
                b"p",
                b"u:bin",
                b"\x00\xff",
                b"EX",
                b"900",
            ],
        ];
        for call in writes {
            assert_eq!(exec(&mut con, call).unwrap(), Value::Int(1));
        }
        let before = values_and_deadlines(&mut con, &keys);
        server.kill();
        // Redis 7.4 (RDB 12) and Valkey 8 write data the other family cannot
        // read; both read what Redis 7.2 and older and Valkey 7.2 wrote.
        let readable = |builtin: &Target| {
            let other_family_reads = match target().product {
                Product::Redis => target().version < (7, 4, 0),
                Product::Valkey => target().version < (8, 0, 0),
            };
            builtin.product == target().product || other_family_reads
        };
        for builtin in builtins.iter().filter(|b| readable(b)) {
            // Each newer server on its own copy: it may rewrite the files
            // in a format another one cannot read.
            let upgraded = Server::start_with(
                ServerConfig::without_module()
                    .binary(builtin)
                    .line("appendonly yes"),
                copy_data(server.dir()),
            );
            let mut con = upgraded.client();
            let after: Vec<(Option<Vec<u8>>, i64)> = keys
                .iter()
                .map(|key| {
                    let value: Option<Vec<u8>> = q(&mut con, &[b"GET".as_slice(), key]);
                    let deadline: i64 = q(&mut con, &[b"PEXPIRETIME".as_slice(), key]);
                    (value, deadline)
                })
                .collect();
            let before: Vec<(Option<Vec<u8>>, i64)> =
                before.iter().map(|(v, d)| (v.clone(), d.0)).collect();
            assert_eq!(
                after,
                before,
                "REPLICATE {replicate} on {}",
                builtin.describe()
            );
            server.kill();
        }
    }
}

#[test]
fn watch_multi_and_scripts_see_the_numkeys_form_as_the_ttl_form() {
    let server = ServerConfig::numkeys().start();
    let name = target().numkeys_name();
    let mut watcher = server.client();
    let mut writer = server.client();

    // WATCH: a write fails the watcher's EXEC, in place or not; a call NX
    // stops writes nothing and leaves it alone.
    for (value, nx_refused) in [("first", false), ("same!", false), ("other", true)] {
        q::<(), _>(&mut watcher, &["SET", "w", "start"]);
        q::<(), _>(&mut watcher, &["WATCH", "w"]);
        let mut call = vec![name, "1", "w", value, "EX", "60"];
        if nx_refused {
            call.push("NX");
        }
        let written: i64 = q(&mut writer, &call);
        assert_eq!(written, i64::from(!nx_refused), "{call:?}");
        q::<(), _>(&mut watcher, &["MULTI"]);
        q::<(), _>(&mut watcher, &["GET", "w"]);
        let reply = exec(&mut watcher, &["EXEC"]).unwrap();
        assert_eq!(reply == Value::Nil, !nx_refused, "{call:?}: {reply:?}");
    }

    // MULTI/EXEC and a script: replies and effects as outside them.
    let replies: Vec<Value> = redis::pipe()
        .atomic()
        .add_command(raw_command(&[
            name, "2", "t1", "a", "t2", "b", "PX", "60000",
        ]))
        .add_command(raw_command(&[name, "1", "t1", "c", "NX"]))
        .query(&mut writer)
        .unwrap();
    assert_eq!(replies, [Value::Int(1), Value::Int(0)]);
    let script =
        format!("return redis.call('{name}', 2, KEYS[1], ARGV[1], KEYS[2], ARGV[2], 'EX', 90)");
    let reply = exec(&mut writer, &["EVAL", &script, "2", "s1", "s2", "x", "7"]).unwrap();
    assert_eq!(reply, Value::Int(1));
    // An error reaches the script as any command's, and writes nothing.
    let script = format!("return redis.pcall('{name}', 3, KEYS[1], ARGV[1])");
    let refused = exec(&mut writer, &["EVAL", &script, "1", "s3", "x"]).unwrap_err();
    assert!(
        error_text(&refused).contains("key-value pairs")
            || error_text(&refused).contains("syntax error"),
        "{refused:?}"
    );
    assert_eq!(q::<i64, _>(&mut writer, &["EXISTS", "s3"]), 0);
    let got: Vec<String> = q(&mut writer, &["MGET", "t1", "t2", "s1", "s2"]);
    assert_eq!(got, ["a", "b", "x", "7"]);
    for key in ["t1", "s2"] {
        let ttl: i64 = q(&mut writer, &["TTL", key]);
        assert!(ttl > 0, "{key}: {ttl}");
    }
}

#[test]
fn keepttl_on_missing_keys_keeps_the_server_up() {
    // Redis 8.6 crashed when the module asked a missing key for its TTL.
    let server = ServerConfig::numkeys().start();
    let name = target().numkeys_name();
    let mut con = server.client();
    q::<(), _>(&mut con, &["SET", "kept", "old", "EX", "500"]);
    let calls: [&[&str]; 3] = [
        &[name, "2", "absent:1", "text", "absent:2", "12", "KEEPTTL"],
        &[name, "2", "kept", "new", "absent:3", "x", "KEEPTTL", "XX"],
        &[
            name, "3", "kept", "7", "absent:4", "8", "absent:4", "9", "KEEPTTL",
        ],
    ];
    for call in calls {
        let _: Value = raw_command(call).query(&mut con).unwrap();
    }
    assert!(answers_ping(
        server.port(),
        std::time::Duration::from_secs(5)
    ));
    let got: Vec<Option<String>> = q(
        &mut con,
        &["MGET", "absent:1", "absent:2", "kept", "absent:4"],
    );
    assert_eq!(
        got,
        [Some("text"), Some("12"), Some("7"), Some("9")].map(|v| v.map(str::to_owned))
    );
    for (key, with_ttl) in [("absent:1", false), ("absent:4", false), ("kept", true)] {
        let ttl: i64 = q(&mut con, &["TTL", key]);
        assert_eq!(ttl > 0, with_ttl, "{key}: {ttl}");
    }
}
