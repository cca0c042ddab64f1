//! MSETEX from Rust with the redis crate (redis-rs).
//! Run: cargo run --example redis_rs -- redis://127.0.0.1:6379/

fn main() -> redis::RedisResult<()> {
    let url = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "redis://127.0.0.1:6379/".into());
    let mut con = redis::Client::open(url)?.get_connection()?;

    // A session and its CSRF token, both for 30 minutes.
    let () = redis::cmd("MSETEX")
        .arg(1800)
        .arg("session:8f2a")
        .arg(r#"{"user":42}"#)
        .arg("csrf:8f2a")
        .arg("c2e1b7")
        .query(&mut con)?;

    // A lock over two resources, all or none, for 10 seconds.
    let acquired: bool = redis::cmd("MSETEX")
        .arg("NX")
        .arg("PX")
        .arg(10_000)
        .arg("lock:{order:7}:stock")
        .arg("3f2a")
        .arg("lock:{order:7}:payment")
        .arg("3f2a")
        .query(&mut con)?;

    let ttl: i64 = redis::cmd("TTL").arg("csrf:8f2a").query(&mut con)?;
    println!("session stored for {ttl} s; lock acquired: {acquired}");
    Ok(())
}
