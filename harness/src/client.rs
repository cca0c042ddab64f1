//! Talking to a server: commands as byte strings, replies, errors, INFO
//! fields and raw RESP.

use redis::{Connection, RedisError, Value};

use crate::*;

/// Builds a command from byte strings. `MSETEX` (any case) as the command,
/// or as the command a COMMAND subcommand is asked about, is the module's
/// TTL form: it becomes [`Target::command_name`], so every test reaches the
/// module even where the server has a built-in MSETEX.
pub fn command<A: AsRef<[u8]>>(args: &[A]) -> redis::Cmd {
    let is_msetex = |arg: &A| arg.as_ref().eq_ignore_ascii_case(b"MSETEX");
    let is_command = args
        .first()
        .is_some_and(|a| a.as_ref().eq_ignore_ascii_case(b"COMMAND"));
    let mut cmd = redis::Cmd::new();
    for (index, arg) in args.iter().enumerate() {
        let renamed = (index == 0 || (index == 2 && is_command)) && is_msetex(arg);
        if renamed {
            cmd.arg(target().command_name());
        } else {
            cmd.arg(arg.as_ref());
        }
    }
    cmd
}

/// A command exactly as given: no renaming (for servers without the
/// module, or the server's own MSETEX).
pub fn raw_command<A: AsRef<[u8]>>(args: &[A]) -> redis::Cmd {
    let mut cmd = redis::Cmd::new();
    for arg in args {
        cmd.arg(arg.as_ref());
    }
    cmd
}

/// `redis::cmd("MSETEX")` for the module's TTL form, by the name it has on
/// this server.
pub fn msetex() -> redis::Cmd {
    redis::cmd(target().command_name())
}

/// `text` with `'msetex'` (an error text naming the command) replaced by the
/// name the command has on this server.
pub fn named(text: &str) -> String {
    text.replace("'msetex'", &format!("'{}'", target().command_name()))
}

/// Runs one command given as byte strings; returns the raw reply.
pub fn exec<A: AsRef<[u8]>>(con: &mut Connection, args: &[A]) -> Result<Value, RedisError> {
    command(args).query(con)
}

/// Runs a command that must succeed and converts its reply.
pub fn q<T: redis::FromRedisValue, A: AsRef<[u8]>>(con: &mut Connection, args: &[A]) -> T {
    command(args).query(con).unwrap_or_else(|e| {
        let printable: Vec<String> = args
            .iter()
            .map(|a| String::from_utf8_lossy(a.as_ref()).into_owned())
            .collect();
        panic!("{printable:?} failed: {}", error_text(&e))
    })
}

/// The full error line the server sent, e.g. `ERR value is not an integer ...`.
pub fn error_text(error: &RedisError) -> String {
    match (error.code(), error.detail()) {
        (Some(code), Some(detail)) => format!("{code} {detail}"),
        (Some(code), None) => code.to_owned(),
        _ => error.to_string(),
    }
}

/// Runs a command that must fail, and returns the error line.
pub fn err<A: AsRef<[u8]>>(con: &mut Connection, args: &[A]) -> String {
    match exec(con, args) {
        Ok(value) => panic!("expected an error, got {value:?}"),
        Err(e) => error_text(&e),
    }
}

/// One field of an INFO section, e.g. `info_field(con, "replication", "role")`.
pub fn info_field(con: &mut Connection, section: &str, field: &str) -> Option<String> {
    let info: String = q(con, &["INFO", section]);
    let prefix = format!("{field}:");
    info.lines()
        .find_map(|line| line.strip_prefix(prefix.as_str()))
        .map(|value| value.trim().to_owned())
}

/// The RESP encoding of one command, as the replication stream carries it.
pub fn resp<A: AsRef<[u8]>>(args: &[A]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        let arg = arg.as_ref();
        out.extend(format!("${}\r\n", arg.len()).into_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Each element of an array reply as a map of field to value: RESP2 flat
/// `[field, value, ...]` arrays or RESP3 maps (numbers as text).
pub fn field_maps(value: &Value) -> Vec<std::collections::BTreeMap<String, String>> {
    let text = |v: &Value| match v {
        Value::BulkString(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        Value::SimpleString(s) => s.clone(),
        Value::Int(n) => n.to_string(),
        other => format!("{other:?}"),
    };
    let Value::Array(entries) = value else {
        return Vec::new();
    };
    entries
        .iter()
        .map(|entry| match entry {
            Value::Array(flat) => flat
                .chunks(2)
                .filter_map(|pair| match pair {
                    [k, v] => Some((text(k), text(v))),
                    _ => None,
                })
                .collect(),
            Value::Map(pairs) => pairs.iter().map(|(k, v)| (text(k), text(v))).collect(),
            _ => Default::default(),
        })
        .collect()
}
