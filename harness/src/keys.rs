//! What keys hold: deadlines, snapshots of the whole keyspace, digests,
//! keyspace events, and waiting for a condition.

use std::thread::sleep;
use std::time::{Duration, Instant};

use redis::Connection;

use crate::*;

/// A key's absolute expiry in unix milliseconds, as PEXPIRETIME reports it
/// (-1: no TTL, -2: no such key).
///
/// Redis 6.2 has no PEXPIRETIME; there [`deadline_of`] reads it exactly with
/// [`DEADLINE_SCRIPT`], so deadlines compare exactly on every server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadline(pub i64);

/// Lua for servers without PEXPIRETIME: the same -1 / -2 answers, otherwise
/// the deadline. PTTL is the deadline minus the live clock at the call, so
/// it is read between two TIMEs and trusted only when both fall in the same
/// millisecond: then that millisecond plus PTTL is the stored deadline, not
/// an estimate one millisecond off (a busy machine can stretch the gap).
const DEADLINE_SCRIPT: &str = "local function ms(t)\n\
        return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n\
    end\n\
    for _ = 1, 1000 do\n\
        local before = ms(redis.call('TIME'))\n\
        local pttl = redis.call('PTTL', KEYS[1])\n\
        if pttl < 0 then return pttl end\n\
        if ms(redis.call('TIME')) == before then return before + pttl end\n\
    end\n\
    return redis.error_reply('the clock moved during every PTTL')";

/// The absolute expiry of `key` (see [`Deadline`]).
pub fn deadline_of<K: AsRef<[u8]>>(con: &mut Connection, key: K) -> Deadline {
    let key = key.as_ref();
    if target().is_7_0_or_later() {
        Deadline(q(con, &[b"PEXPIRETIME".as_slice(), key]))
    } else {
        Deadline(q(
            con,
            &[b"EVAL".as_slice(), DEADLINE_SCRIPT.as_bytes(), b"1", key],
        ))
    }
}

/// One key as [`snapshot`] sees it: name, type, DUMP payload, deadline.
pub type KeyState = (Vec<u8>, String, Option<Vec<u8>>, Deadline);

/// A snapshot of every key, sorted by name. Comparing two snapshots proves
/// that a call changed nothing.
pub fn snapshot(con: &mut Connection) -> Vec<KeyState> {
    let mut keys: Vec<Vec<u8>> = q(con, &["KEYS", "*"]);
    keys.sort();
    keys.into_iter()
        .map(|key| {
            let kind: String = q(con, &[b"TYPE".as_slice(), &key]);
            let dump: Option<Vec<u8>> = q(con, &[b"DUMP".as_slice(), &key]);
            let deadline = deadline_of(con, &key);
            (key, kind, dump, deadline)
        })
        .collect()
}

/// Polls `check` until it returns true or `timeout` passes.
pub fn eventually(timeout: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if check() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        sleep(Duration::from_millis(20));
    }
}

/// Unix time in milliseconds on this machine (same clock as the servers).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// `DEBUG DIGEST`: one hash of every key, value and expiry instant, for
/// proving that two servers hold the same data.
pub fn digest(con: &mut Connection) -> String {
    q(con, &["DEBUG", "DIGEST"])
}

/// The value and deadline of each key, for comparing two servers.
pub fn values_and_deadlines(
    con: &mut Connection,
    keys: &[&[u8]],
) -> Vec<(Option<Vec<u8>>, Deadline)> {
    keys.iter()
        .map(|key| {
            let value: Option<Vec<u8>> = q(con, &[b"GET".as_slice(), key]);
            (value, deadline_of(con, key))
        })
        .collect()
}

/// Keyevent notifications (`__keyevent@0__:<event>` with the key as the
/// message) from `pubsub`, in order, until `is_end(event, key)`: the caller's
/// marker, which tells that every earlier event has been delivered.
pub fn keyevents_until(
    pubsub: &mut redis::PubSub<'_>,
    is_end: impl Fn(&str, &str) -> bool,
) -> Vec<(String, String)> {
    let mut events = Vec::new();
    loop {
        let msg = pubsub.get_message().expect("events until the marker");
        let event = msg
            .get_channel_name()
            .trim_start_matches("__keyevent@0__:")
            .to_owned();
        let key: String = msg.get_payload().expect("key");
        if is_end(&event, &key) {
            return events;
        }
        events.push((event, key));
    }
}
