//! Keyspace notifications: per key, `set` then `expire`, exactly like a
//! sequence of `SET key value EX seconds`.

use msetex_harness::*;
use std::time::Duration;

/// Runs `write` and returns the (event, key) pairs it published.
fn events_of(server: &Server, write: impl FnOnce(&mut Connection)) -> Vec<(String, String)> {
    let mut listener = server.client();
    let mut pubsub = listener.as_pubsub();
    pubsub.psubscribe("__keyevent@0__:*").expect("psubscribe");
    let mut con = server.client();
    write(&mut con);
    // A marker event tells us every earlier event has been delivered.
    q::<i64, _>(&mut con, &["DEL", "end-marker"]);
    q::<(), _>(&mut con, &["SET", "end-marker", "1"]);
    pubsub
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    keyevents_until(&mut pubsub, |_, key| key == "end-marker")
}

/// KEA: every class of event (the `n` class is the test below).
fn start_notifying() -> Server {
    ServerConfig::default()
        .line("notify-keyspace-events KEA")
        .start()
}

fn seed(con: &mut Connection) {
    q::<(), _>(con, &["SET", "n:same", "1234567", "EX", "100"]);
    q::<i64, _>(con, &["RPUSH", "n:list", "x"]);
}

#[test]
fn set_then_expire_per_key_like_set_ex() {
    let server = start_notifying();
    // new key, same-length overwrite, integer, other type, repeated key
    let pairs = [
        ("n:new", "value"),
        ("n:same", "abcdefg"),
        ("n:int", "42"),
        ("n:list", "now-a-string"),
        ("n:new", "again"),
    ];
    let ours = events_of(&server, |con| {
        seed(con);
        let mut args = vec!["MSETEX", "60"];
        for (k, v) in pairs {
            args.extend([k, v]);
        }
        q::<(), _>(con, &args);
    });
    let mut reference_server = start_notifying();
    let reference = events_of(&reference_server, |con| {
        seed(con);
        for (k, v) in pairs {
            q::<(), _>(con, &["SET", k, v, "EX", "60"]);
        }
    });
    reference_server.kill();
    // Per key, the same events in the same order as a SET EX loop; across
    // the keys of one call the interleaving may differ (keys that go through
    // the server's own MSET fire their `set` together).
    for (key, _) in pairs {
        let of_key = |events: &[(String, String)]| -> Vec<String> {
            events
                .iter()
                .filter(|(_, k)| k == key)
                .map(|(e, _)| e.clone())
                .collect()
        };
        assert_eq!(of_key(&ours), of_key(&reference), "{key}");
    }
    let sorted = |mut events: Vec<(String, String)>| {
        events.sort();
        events
    };
    assert_eq!(sorted(ours.clone()), sorted(reference));
    // And the shape, spelled out for the first key.
    let first: Vec<(String, String)> = ours
        .iter()
        .filter(|(_, key)| key == "n:new")
        .cloned()
        .collect();
    let expected = [
        ("set", "n:new"),
        ("expire", "n:new"),
        ("set", "n:new"),
        ("expire", "n:new"),
    ];
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(e, k)| (e.to_string(), k.to_string()))
        .collect();
    assert_eq!(first, expected);
}

#[test]
fn a_refused_call_notifies_nothing() {
    let server = start_notifying();
    let events = events_of(&server, |con| {
        assert!(exec(con, &["MSETEX", "0", "a", "1"]).is_err());
        assert!(exec(con, &["MSETEX", "x", "a", "1"]).is_err());
        assert!(exec(con, &["MSETEX", "1", "a"]).is_err());
    });
    assert_eq!(events, []);
}

#[test]
fn new_keys_report_new_before_set() {
    // With the opt-in `n` class, a key that did not exist reports `new`
    // first, as with SET; a key that existed does not, whatever path
    // writes it (in place, or the server's MSET for an integer).
    if skip_unless(
        target().at_least(Some((7, 0)), Some((7, 2))),
        "the `n` (new key) event class appeared in Redis 7.0",
    ) {
        return;
    }
    let config = || {
        ServerConfig::default()
            .line("notify-keyspace-events KEAn")
            .start()
    };
    let seed = |con: &mut Connection| {
        q::<(), _>(con, &["SET", "n:old", "abc", "EX", "100"]);
        q::<(), _>(con, &["SET", "n:was-int", "7", "EX", "100"]);
    };
    let pairs = [
        ("n:fresh", "v"),
        ("n:old", "xyz"),
        ("n:num", "7"),
        ("n:was-int", "8"),
    ];
    let server = config();
    let ours = events_of(&server, |con| {
        seed(con);
        let mut args = vec!["MSETEX", "60"];
        for (k, v) in pairs {
            args.extend([k, v]);
        }
        q::<(), _>(con, &args);
    });
    let reference_server = config();
    let reference = events_of(&reference_server, |con| {
        seed(con);
        for (k, v) in pairs {
            q::<(), _>(con, &["SET", k, v, "EX", "60"]);
        }
    });
    for key in ["n:fresh", "n:old", "n:num", "n:was-int"] {
        let of_key = |events: &[(String, String)]| -> Vec<String> {
            events
                .iter()
                .filter(|(_, k)| k == key)
                .map(|(e, _)| e.clone())
                .collect()
        };
        assert_eq!(of_key(&ours), of_key(&reference), "{key}");
    }
    let mut new: Vec<&str> = ours
        .iter()
        .filter(|(event, _)| event == "new")
        .map(|(_, key)| key.as_str())
        .collect();
    new.sort_unstable();
    // The two seeded by SET, then the two MSETEX created.
    assert_eq!(new, ["n:fresh", "n:num", "n:old", "n:was-int"]);
}

#[test]
fn events_follow_the_arguments_across_keys() {
    // `MSETEX 100 a 1 b xy c hello`, b holding a longer string: a and b go
    // through the server's own batch command, c through the key API. Their
    // `set` events come in argument order, as three SET EX fire them, and
    // each key's `expire` after its own `set` (on Valkey 9.1+, whose
    // built-in MSETEX writes the batch, exactly SET's interleaving).
    let pairs = [
        ("o:a", "1"),
        ("o:b", "xy"),
        ("o:c", "hello"),
        ("o:d", "7"),
        ("o:e", "new"),
    ];
    let seed = |con: &mut Connection| q::<(), _>(con, &["SET", "o:b", "a longer string"]);
    let server = start_notifying();
    let ours = events_of(&server, |con| {
        seed(con);
        let mut args = vec!["MSETEX", "100"];
        for (k, v) in pairs {
            args.extend([k, v]);
        }
        q::<(), _>(con, &args);
    });
    let reference_server = start_notifying();
    let reference = events_of(&reference_server, |con| {
        seed(con);
        for (k, v) in pairs {
            q::<(), _>(con, &["SET", k, v, "EX", "100"]);
        }
    });
    let named = |events: &[(String, String)], name: &str| -> Vec<String> {
        events
            .iter()
            .filter(|(e, _)| e == name)
            .map(|(_, k)| k.clone())
            .collect()
    };
    for name in ["set", "expire"] {
        assert_eq!(
            named(&ours, name),
            named(&reference, name),
            "`{name}` events: {ours:?}"
        );
    }
    for (key, _) in pairs {
        let position = |name: &str| ours.iter().position(|(e, k)| e == name && k == key);
        assert!(position("set") < position("expire"), "{key}: {ours:?}");
    }
}
