//! MSETEX from redis-rs's typed `mset_ex`, which sends the standard form
//! (`MSETEX numkeys key value ... [NX|XX] [EX seconds | PX ms | ...]`): the
//! module loaded with `SYNTAX NUMKEYS`, or Redis 8.4+ / Valkey 9.1+.
//! Run: cargo run --example typed_client -- redis://127.0.0.1:6379/

use redis::{Commands, ExistenceCheck, MSetOptions, SetExpiry};

fn main() -> redis::RedisResult<()> {
    let url = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "redis://127.0.0.1:6379/".into());
    let mut con = redis::Client::open(url)?.get_connection()?;

    // A session and its CSRF token, both for 30 minutes.
    let session = [("session:8f2a", r#"{"user":42}"#), ("csrf:8f2a", "c2e1b7")];
    let thirty_minutes = MSetOptions::default().with_expiration(SetExpiry::EX(1800));
    let _: bool = con.mset_ex(&session, thirty_minutes)?;

    // A lock over two resources, all or none, for 10 seconds.
    let lock = [
        ("lock:{order:7}:stock", "3f2a"),
        ("lock:{order:7}:payment", "3f2a"),
    ];
    let nx = MSetOptions::default()
        .conditional_set(ExistenceCheck::NX)
        .with_expiration(SetExpiry::PX(10_000));
    let acquired: bool = con.mset_ex(&lock, nx)?;

    let ttl: i64 = con.ttl("csrf:8f2a")?;
    println!("session stored for {ttl} s; lock acquired: {acquired}");
    Ok(())
}
