//! INFO commandstats: calls, server time per call and failures of a command.

use msetex_harness::{info_field, Connection};

pub struct CommandStats {
    pub calls: u64,
    pub usec_per_call: f64,
    pub failed: u64,
}

pub fn command_stats(con: &mut Connection, command: &str) -> Option<CommandStats> {
    let line = info_field(con, "commandstats", &format!("cmdstat_{command}"))?;
    parse(&line)
}

/// `calls=3,usec=30,usec_per_call=10.00,rejected_calls=0,failed_calls=0`
fn parse(line: &str) -> Option<CommandStats> {
    let field = |name: &str| -> Option<f64> {
        line.split(',')
            .find_map(|kv| kv.strip_prefix(&format!("{name}=")))
            .and_then(|v| v.parse().ok())
    };
    Some(CommandStats {
        calls: field("calls")? as u64,
        usec_per_call: field("usec_per_call")?,
        failed: (field("failed_calls").unwrap_or(0.0) + field("rejected_calls").unwrap_or(0.0))
            as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_of_redis_7_and_6() {
        let line = "calls=3,usec=30,usec_per_call=10.50,rejected_calls=1,failed_calls=2";
        let stats = parse(line).unwrap();
        assert_eq!(
            (stats.calls, stats.usec_per_call, stats.failed),
            (3, 10.5, 3)
        );
        // Redis 6 counts no failures.
        let stats = parse("calls=3,usec=30,usec_per_call=10.00").unwrap();
        assert_eq!(stats.failed, 0);
        assert!(parse("calls=3,usec=30").is_none());
    }
}
