//! Clusters of primaries only, for the tests of cluster clients: each node owns an
//! equal share of the slots and none has a replica, so a call a client sends to a node
//! that does not own its keys gets `MOVED`, and what each node holds shows where every
//! call went. Also what the routing tests read from a node: key slots, slot owners,
//! command and error statistics.

use std::collections::BTreeMap;
use std::time::Duration;

use redis::{Connection, Value};

use crate::*;

/// `primaries` nodes started from `config` (the module loaded as it says, any extra
/// lines such as `io-threads 4`) in one cluster: node `i` owns the `i`-th equal share of
/// the 16384 slots, every node knows every other, and each answers `cluster_state:ok`
/// with the same slot map. Made with CLUSTER ADDSLOTS and MEET, not redis-cli, so it
/// works with every server binary.
pub fn primaries_cluster(config: ServerConfig, primaries: usize) -> Cluster {
    assert!(primaries >= 1);
    let nodes: Vec<Server> = (0..primaries)
        .map(|_| {
            config
                .clone()
                .line("cluster-enabled yes")
                .line("cluster-config-file nodes.conf")
                .line("cluster-node-timeout 5000")
                .line("cluster-announce-ip 127.0.0.1")
                .start()
        })
        .collect();
    for (index, node) in nodes.iter().enumerate() {
        let mut con = node.client();
        // Distinct epochs, as redis-cli --cluster create sets them: no collision to settle.
        let epoch = (index + 1).to_string();
        q::<(), _>(&mut con, &["CLUSTER", "SET-CONFIG-EPOCH", &epoch]);
        let (first, last) = share(index, primaries);
        let mut addslots = vec!["CLUSTER".to_owned(), "ADDSLOTS".to_owned()];
        addslots.extend((first..=last).map(|slot| slot.to_string()));
        q::<(), _>(&mut con, &addslots);
    }
    let mut first = nodes[0].client();
    for node in &nodes[1..] {
        let port = node.port().to_string();
        q::<(), _>(&mut first, &["CLUSTER", "MEET", "127.0.0.1", &port]);
    }
    let known = format!("cluster_known_nodes:{primaries}");
    let size = format!("cluster_size:{primaries}");
    for node in &nodes {
        let mut con = node.client();
        let ok = eventually(Duration::from_secs(60), || {
            let info: String = q(&mut con, &["CLUSTER", "INFO"]);
            info.contains("cluster_state:ok")
                && info.contains(&known)
                && info.contains(&size)
                && slot_owners(&mut con).len() == primaries
        });
        assert!(
            ok,
            "node {} never saw the {primaries}-primary cluster whole:\n{}",
            node.port(),
            node.log()
        );
    }
    Cluster { nodes }
}

/// The slots node `index` of `primaries` owns in [`primaries_cluster`].
fn share(index: usize, primaries: usize) -> (usize, usize) {
    (
        index * 16384 / primaries,
        (index + 1) * 16384 / primaries - 1,
    )
}

/// The hash slot of `key` (CRC16 of its hash tag, or of the whole key), as
/// `CLUSTER KEYSLOT` computes it.
pub fn key_slot(key: &[u8]) -> u16 {
    let tagged = key.iter().position(|&b| b == b'{').and_then(|open| {
        let close = key[open + 1..].iter().position(|&b| b == b'}')?;
        (close > 0).then(|| &key[open + 1..open + 1 + close])
    });
    crc16(tagged.unwrap_or(key)) % 16384
}

/// CRC16-CCITT (XMODEM), the checksum of Redis Cluster key slots.
fn crc16(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &byte in bytes {
        crc ^= u16::from(byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// One slot range of `CLUSTER SLOTS` and the port of the primary that owns it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotOwner {
    pub first: u16,
    pub last: u16,
    pub port: u16,
}

/// `CLUSTER SLOTS` as the node behind `con` sees it: every range with an owner whose
/// address is known (an empty address is a node still being met).
pub fn slot_owners(con: &mut Connection) -> Vec<SlotOwner> {
    let ranges: Vec<Value> = q(con, &["CLUSTER", "SLOTS"]);
    ranges
        .iter()
        .filter_map(|range| match range {
            Value::Array(items) => match items.as_slice() {
                [Value::Int(first), Value::Int(last), Value::Array(primary), ..] => {
                    let known =
                        matches!(primary.first(), Some(Value::BulkString(ip)) if !ip.is_empty());
                    match primary.get(1) {
                        Some(Value::Int(port)) if known => Some(SlotOwner {
                            first: *first as u16,
                            last: *last as u16,
                            port: *port as u16,
                        }),
                        _ => None,
                    }
                }
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// The port of the primary that owns `slot` in `owners`.
pub fn owner_port(owners: &[SlotOwner], slot: u16) -> Option<u16> {
    owners
        .iter()
        .find(|owner| (owner.first..=owner.last).contains(&slot))
        .map(|owner| owner.port)
}

/// One command's line of `INFO commandstats`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CommandStat {
    pub calls: u64,
    /// Refused before it ran (`MOVED`, `CROSSSLOT`, arity, ACL...): Redis 7.0+, Valkey.
    pub rejected_calls: u64,
    /// Ran and replied an error.
    pub failed_calls: u64,
}

/// `INFO commandstats`, by command name as the server names it (`get`,
/// `command|getkeys`, `msetex.nk`).
pub fn command_stats(con: &mut Connection) -> BTreeMap<String, CommandStat> {
    let info: String = q(con, &["INFO", "commandstats"]);
    info.lines()
        .filter_map(|line| line.strip_prefix("cmdstat_")?.split_once(':'))
        .map(|(name, fields)| {
            let field = |wanted: &str| {
                fields
                    .split(',')
                    .filter_map(|pair| pair.split_once('='))
                    .find(|(key, _)| *key == wanted)
                    .and_then(|(_, value)| value.parse().ok())
                    .unwrap_or(0)
            };
            let stat = CommandStat {
                calls: field("calls"),
                rejected_calls: field("rejected_calls"),
                failed_calls: field("failed_calls"),
            };
            (name.to_owned(), stat)
        })
        .collect()
}

/// `INFO errorstats`: how many replies began with each error code (`MOVED`, `CROSSSLOT`).
pub fn error_stats(con: &mut Connection) -> BTreeMap<String, u64> {
    let info: String = q(con, &["INFO", "errorstats"]);
    info.lines()
        .filter_map(|line| line.strip_prefix("errorstat_")?.split_once(':'))
        .map(|(code, fields)| {
            let count = fields
                .strip_prefix("count=")
                .and_then(|n| n.trim().parse().ok())
                .unwrap_or(0);
            (code.to_owned(), count)
        })
        .collect()
}
