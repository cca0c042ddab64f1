//! What MSETEX stores: values, deadlines, types replaced, repeated keys,
//! encodings and memory, compared with the server's own SET ... EX.

use msetex_harness::*;

#[test]
fn sets_every_key_with_one_deadline() {
    let server = Server::start();
    let mut con = server.client();
    let before = now_ms();
    let reply = exec(&mut con, &["MSETEX", "100", "a", "1", "b", "two", "c", "3"]).unwrap();
    let after = now_ms();
    assert_eq!(reply, Value::Okay);
    let values: Vec<String> = q(&mut con, &["MGET", "a", "b", "c"]);
    assert_eq!(values, ["1", "two", "3"]);
    let deadlines: Vec<i64> = ["a", "b", "c"]
        .iter()
        .map(|k| deadline_of(&mut con, k).0)
        .collect();
    assert!(
        deadlines.iter().all(|d| *d == deadlines[0]),
        "{deadlines:?}"
    );
    assert!(
        (before + 100_000..=after + 100_000).contains(&deadlines[0]),
        "deadline {} not within [{before}, {after}] + 100 s",
        deadlines[0]
    );
    let ttl: i64 = q(&mut con, &["TTL", "b"]);
    assert!((99..=100).contains(&ttl), "ttl {ttl}");
}

#[test]
fn values_are_binary_safe() {
    let server = Server::start();
    let mut con = server.client();
    let binary: &[u8] = b"\x00\xff\r\n\x80 nul\x00inside";
    let long = vec![b'z'; 100_000];
    let args: Vec<&[u8]> = vec![
        b"MSETEX",
        b"60",
        b"empty",
        b"",
        b"bin",
        binary,
        b"\x00key\xfe",
        b"v",
        b"long",
        &long,
    ];
    assert_eq!(exec(&mut con, &args).unwrap(), Value::Okay);
    let got: Vec<u8> = q(&mut con, &["GET", "bin"]);
    assert_eq!(got, binary);
    let got: Vec<u8> = q(&mut con, &["GET", "empty"]);
    assert!(got.is_empty());
    let exists: i64 = q(&mut con, &["EXISTS", "empty"]);
    assert_eq!(exists, 1, "an empty value is still a key");
    let got: Vec<u8> = q(&mut con, &[b"GET".as_slice(), b"\x00key\xfe"]);
    assert_eq!(got, b"v");
    let got: Vec<u8> = q(&mut con, &["GET", "long"]);
    assert_eq!(got, long);
    for key in [&b"empty"[..], b"bin", b"\x00key\xfe", b"long"] {
        let ttl: i64 = q(&mut con, &[b"TTL".as_slice(), key]);
        assert!(ttl > 0, "{key:?} has no TTL");
    }
}

#[test]
fn replaces_any_type_and_any_ttl() {
    let server = Server::start();
    let mut con = server.client();
    q::<i64, _>(&mut con, &["RPUSH", "list", "x"]);
    q::<i64, _>(&mut con, &["HSET", "hash", "f", "v"]);
    q::<i64, _>(&mut con, &["SADD", "set", "m"]);
    q::<i64, _>(&mut con, &["ZADD", "zset", "1", "m"]);
    q::<String, _>(&mut con, &["XADD", "stream", "*", "f", "v"]);
    q::<(), _>(&mut con, &["SET", "long_ttl", "old", "EX", "100000"]);
    q::<(), _>(&mut con, &["SET", "no_ttl", "old"]);
    let keys = [
        "list", "hash", "set", "zset", "stream", "long_ttl", "no_ttl",
    ];
    let mut args = vec!["MSETEX", "50"];
    for key in keys {
        args.extend([key, "new"]);
    }
    assert_eq!(exec(&mut con, &args).unwrap(), Value::Okay);
    for key in keys {
        let kind: String = q(&mut con, &["TYPE", key]);
        assert_eq!(kind, "string", "{key}");
        let value: String = q(&mut con, &["GET", key]);
        assert_eq!(value, "new", "{key}");
        let ttl: i64 = q(&mut con, &["TTL", key]);
        assert!((49..=50).contains(&ttl), "{key}: ttl {ttl}");
    }
}

#[test]
fn a_repeated_key_keeps_the_last_value() {
    let server = Server::start();
    let mut con = server.client();
    // Same length (overwritten in place), other lengths, integers, back to text.
    let args = [
        "MSETEX", "60", "k", "aaa", "k", "bbb", "k", "cccccc", "k", "42", "k", "d", "j", "1", "j",
        "22",
    ];
    assert_eq!(exec(&mut con, &args).unwrap(), Value::Okay);
    let k: String = q(&mut con, &["GET", "k"]);
    let j: String = q(&mut con, &["GET", "j"]);
    assert_eq!((k.as_str(), j.as_str()), ("d", "22"));
    let ttl: i64 = q(&mut con, &["TTL", "k"]);
    assert!(ttl > 0);
    // MSET agrees on the same arguments.
    q::<(), _>(
        &mut con,
        &[
            "MSET", "m", "aaa", "m", "bbb", "m", "cccccc", "m", "42", "m", "d",
        ],
    );
    let m: String = q(&mut con, &["GET", "m"]);
    assert_eq!(m, k);
}

#[test]
fn overwriting_in_place_does_not_touch_shared_or_other_values() {
    let server = Server::start();
    let mut con = server.client();
    // Values that the server may share or encode: small integers are shared
    // objects, short strings are embedded. Overwrite each with a same-length
    // string and check that nothing else changed.
    q::<(), _>(&mut con, &["SET", "shared_a", "7"]);
    q::<(), _>(&mut con, &["SET", "shared_b", "7"]);
    q::<(), _>(&mut con, &["SET", "emb", "hello"]);
    q::<(), _>(&mut con, &["SET", "other", "hello"]);
    assert_eq!(
        exec(&mut con, &["MSETEX", "60", "shared_a", "x", "emb", "world"]).unwrap(),
        Value::Okay
    );
    let got: Vec<String> = q(&mut con, &["MGET", "shared_a", "shared_b", "emb", "other"]);
    assert_eq!(got, ["x", "7", "world", "hello"]);
    let answer: i64 = q(&mut con, &["INCRBY", "shared_b", "0"]);
    assert_eq!(answer, 7, "the shared integer object must be intact");
    // Overwrite again: now the value is a private string.
    assert_eq!(
        exec(&mut con, &["MSETEX", "60", "emb", "again"]).unwrap(),
        Value::Okay
    );
    let got: String = q(&mut con, &["GET", "emb"]);
    assert_eq!(got, "again");
}

#[test]
fn refreshing_a_session_replaces_value_and_deadline() {
    let server = Server::start();
    let mut con = server.client();
    q::<(), _>(&mut con, &["MSETEX", "1000", "s", "0123456789abcdef"]);
    let first = deadline_of(&mut con, "s").0;
    q::<(), _>(&mut con, &["MSETEX", "10", "s", "fedcba9876543210"]);
    let second = deadline_of(&mut con, "s").0;
    let value: String = q(&mut con, &["GET", "s"]);
    assert_eq!(value, "fedcba9876543210");
    assert!(
        second < first - 900_000,
        "deadline must move back: {first} -> {second}"
    );
}

#[test]
fn keys_expire() {
    let server = Server::start();
    let mut con = server.client();
    q::<(), _>(&mut con, &["MSETEX", "1", "gone_a", "x", "gone_b", "12345"]);
    assert!(
        eventually(std::time::Duration::from_secs(5), || {
            q::<i64, _>(&mut con, &["EXISTS", "gone_a", "gone_b"]) == 0
        }),
        "keys still there after their TTL"
    );
}

/// `MEMORY USAGE` and `OBJECT ENCODING` of a key written by MSETEX against
/// the same key written by `SET key value EX seconds`.
fn footprint(con: &mut Connection, key: &str) -> (i64, String) {
    let usage: i64 = q(con, &["MEMORY", "USAGE", key, "SAMPLES", "0"]);
    let encoding: String = q(con, &["OBJECT", "ENCODING", key]);
    (usage, encoding)
}

#[test]
fn stored_as_compactly_as_set_ex() {
    let server = Server::start();
    let mut con = server.client();
    let long = "y".repeat(300);
    let cases = [
        ("short", "session-token-0123456789abcdef"),
        ("int_shared", "42"),
        ("int", "1234567890123"),
        ("negative", "-17"),
        ("not_canonical", "007"),
        ("empty", ""),
        (
            "embstr_limit",
            "abcdefghijabcdefghijabcdefghijabcdefghij1234",
        ),
        ("long", long.as_str()),
    ];
    for (name, value) in cases {
        let ours = format!("ours:{name}");
        let theirs = format!("sets:{name}"); // same length as ours: key size counts too
        q::<(), _>(&mut con, &["MSETEX", "60", ours.as_str(), value]);
        q::<(), _>(&mut con, &["SET", theirs.as_str(), value, "EX", "60"]);
        let (our_usage, our_encoding) = footprint(&mut con, &ours);
        let (set_usage, set_encoding) = footprint(&mut con, &theirs);
        assert_eq!(our_encoding, set_encoding, "{name}: encoding");
        let diff = (our_usage - set_usage).abs() as f64;
        assert!(
            diff <= set_usage as f64 * 0.05,
            "{name}: MEMORY USAGE {our_usage} vs SET's {set_usage}"
        );
    }
}

#[test]
fn overwritten_keys_stay_as_compact_as_set_ex() {
    let server = Server::start();
    let mut con = server.client();
    // A session store: the same keys rewritten with values of the same and
    // of other lengths. Memory must stay within 5% of what SET EX gives.
    let values = [
        "aaaaaaaaaaaaaaaa",
        "bbbbbbbbbbbbbbbb",
        "cc",
        "dddddddddddddddddddddddddddddd",
        "1234",
    ];
    for value in values {
        q::<(), _>(&mut con, &["MSETEX", "60", "ours", value]);
        q::<(), _>(&mut con, &["SET", "sets", value, "EX", "60"]);
        let (our_usage, _) = footprint(&mut con, "ours");
        let (set_usage, _) = footprint(&mut con, "sets");
        let diff = (our_usage - set_usage).abs() as f64;
        assert!(
            diff <= set_usage as f64 * 0.05,
            "after writing {value:?}: {our_usage} vs SET's {set_usage}"
        );
        let got: String = q(&mut con, &["GET", "ours"]);
        assert_eq!(got, value);
    }
}

#[test]
fn works_inside_multi_exec() {
    let server = Server::start();
    let mut con = server.client();
    let reply: Vec<Value> = redis::pipe()
        .atomic()
        .cmd(target().command_name())
        .arg("60")
        .arg("t1")
        .arg("a")
        .arg("t2")
        .arg("b")
        .cmd("GET")
        .arg("t2")
        .query(&mut con)
        .unwrap();
    assert_eq!(reply, [Value::Okay, Value::BulkString(b"b".to_vec())]);
    let ttl: i64 = q(&mut con, &["TTL", "t1"]);
    assert!(ttl > 0);
}

#[test]
fn works_from_a_lua_script() {
    let server = Server::start();
    let mut con = server.client();
    let name = target().command_name();
    let script =
        format!("return redis.call('{name}', ARGV[1], KEYS[1], ARGV[2], KEYS[2], ARGV[3])");
    let reply = exec(
        &mut con,
        &["EVAL", &script, "2", "l1", "l2", "60", "x", "9"],
    )
    .unwrap();
    assert_eq!(reply, Value::Okay);
    let got: Vec<String> = q(&mut con, &["MGET", "l1", "l2"]);
    assert_eq!(got, ["x", "9"]);
    let ttl: i64 = q(&mut con, &["TTL", "l2"]);
    assert!(ttl > 0);
    // Errors surface to the script like any command's.
    let script = format!("return redis.pcall('{name}', '0', KEYS[1], 'x')");
    let reply = exec(&mut con, &["EVAL", &script, "1", "l3"]);
    let text = error_text(&reply.unwrap_err());
    let expected = target().invalid_expire(name);
    assert!(text.contains(expected.trim_start_matches("ERR ")), "{text}");
}

#[test]
fn watch_sees_the_write() {
    let server = Server::start();
    let mut watcher = server.client();
    let mut writer = server.client();
    q::<(), _>(&mut watcher, &["SET", "w", "before"]);
    q::<(), _>(&mut watcher, &["WATCH", "w"]);
    q::<(), _>(&mut writer, &["MSETEX", "60", "other", "x", "w", "after"]);
    q::<(), _>(&mut watcher, &["MULTI"]);
    q::<(), _>(&mut watcher, &["SET", "w", "from-transaction"]);
    let exec_reply = exec(&mut watcher, &["EXEC"]).unwrap();
    assert_eq!(
        exec_reply,
        Value::Nil,
        "EXEC must fail after a watched key was written"
    );
    let got: String = q(&mut watcher, &["GET", "w"]);
    assert_eq!(got, "after");
}

#[test]
fn watch_sees_an_in_place_overwrite() {
    let server = Server::start();
    let mut watcher = server.client();
    let mut writer = server.client();
    q::<(), _>(&mut writer, &["MSETEX", "60", "w", "same"]);
    q::<(), _>(&mut watcher, &["WATCH", "w"]);
    q::<(), _>(&mut writer, &["MSETEX", "60", "w", "size"]);
    q::<(), _>(&mut watcher, &["MULTI"]);
    q::<(), _>(&mut watcher, &["GET", "w"]);
    assert_eq!(exec(&mut watcher, &["EXEC"]).unwrap(), Value::Nil);
}

#[test]
fn registered_as_a_write_command_with_every_key() {
    let server = Server::start();
    let mut con = server.client();
    let keys: Vec<String> = q(
        &mut con,
        &[
            "COMMAND", "GETKEYS", "MSETEX", "10", "a", "1", "b", "2", "c", "3",
        ],
    );
    assert_eq!(keys, ["a", "b", "c"]);
    // COMMAND INFO: [[name, arity, [flags...], first, last, step, ...]].
    let info: Vec<Vec<Value>> = q(&mut con, &["COMMAND", "INFO", "msetex"]);
    let flags: Vec<String> = info
        .first()
        .and_then(|entry| entry.get(2))
        .map(|flags| redis::from_redis_value_ref(flags).expect("flags are status strings"))
        .expect("COMMAND INFO has the command's flags");
    for flag in ["write", "denyoom"] {
        assert!(
            flags.iter().any(|f| f == flag),
            "COMMAND INFO flags {flags:?} lack {flag}"
        );
    }
    let modules = exec(&mut con, &["MODULE", "LIST"]).unwrap();
    assert!(format!("{modules:?}").contains("msetex"), "{modules:?}");
}

#[test]
fn counts_changes_for_save_points() {
    let server = Server::start();
    let mut con = server.client();
    let changes = |con: &mut Connection| -> i64 {
        let info: String = q(con, &["INFO", "persistence"]);
        info.lines()
            .find_map(|l| l.strip_prefix("rdb_changes_since_last_save:"))
            .and_then(|v| v.trim().parse().ok())
            .expect("rdb_changes_since_last_save")
    };
    let before = changes(&mut con);
    q::<(), _>(&mut con, &["MSETEX", "60", "a", "1", "b", "x", "c", "y"]);
    let after = changes(&mut con);
    // One change per key, like MSET (the integer is written by the
    // server's own command, which counts it itself).
    assert_eq!(after - before, 3);
}

#[test]
fn in_place_overwrites_cost_no_more_memory_at_any_length() {
    let server = Server::start();
    let mut con = server.client();
    // A same-length overwrite keeps the value as a plain (raw) string where
    // SET would embed a short one (Redis 7.0+ MEMORY USAGE counts both by
    // their allocations; Redis 6.2 counts an embedded one by its length, so
    // there short values stay embedded); check that this costs no memory at
    // every length around the embedded-string limit (44 bytes): at some
    // lengths it is even smaller, never more than 5% larger.
    for len in 1..=100 {
        let first = "a".repeat(len);
        let second = "b".repeat(len);
        q::<(), _>(&mut con, &["MSETEX", "60", "ours", first.as_str()]);
        q::<(), _>(&mut con, &["MSETEX", "60", "ours", second.as_str()]);
        q::<(), _>(&mut con, &["SET", "sets", second.as_str(), "EX", "60"]);
        let (our_usage, _) = footprint(&mut con, "ours");
        let (set_usage, _) = footprint(&mut con, "sets");
        // Never more than 5% above SET's footprint (it is sometimes below).
        assert!(
            our_usage as f64 <= set_usage as f64 * 1.05,
            "length {len}: {our_usage} vs SET's {set_usage}"
        );
        let got: String = q(&mut con, &["GET", "ours"]);
        assert_eq!(got, second);
    }
}
