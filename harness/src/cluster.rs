//! Cluster nodes: one-node clusters, primary and replica pairs, two-node
//! clusters and atomic slot migrations between them.

use std::time::Duration;

use redis::Value;

use crate::*;

/// A cluster of two nodes, both with `config` plus cluster mode: a primary
/// owning every slot and its replica, linked and synced.
pub fn cluster_pair(config: ServerConfig, replica_config: ServerConfig) -> (Server, Server) {
    let cluster = |config: ServerConfig| {
        config
            .line("cluster-enabled yes")
            .line("cluster-config-file nodes.conf")
            .line("cluster-node-timeout 5000")
            .start()
    };
    let primary = cluster(config);
    let replica = cluster(replica_config);
    let mut p = primary.client();
    let mut addslots = vec!["CLUSTER".to_owned(), "ADDSLOTS".to_owned()];
    addslots.extend((0..16384).map(|slot: u32| slot.to_string()));
    q::<(), _>(&mut p, &addslots);
    let id: String = q(&mut p, &["CLUSTER", "MYID"]);
    let mut r = replica.client();
    q::<(), _>(
        &mut r,
        &["CLUSTER", "MEET", "127.0.0.1", &primary.port().to_string()],
    );
    let known = eventually(Duration::from_secs(20), || {
        q::<String, _>(&mut r, &["CLUSTER", "NODES"]).contains(&id)
    });
    assert!(
        known,
        "the replica never learned the primary:\n{}",
        replica.log()
    );
    q::<(), _>(&mut r, &["CLUSTER", "REPLICATE", &id]);
    let up = eventually(Duration::from_secs(30), || {
        info_field(&mut r, "replication", "master_link_status").as_deref() == Some("up")
            && q::<String, _>(&mut p, &["CLUSTER", "INFO"]).contains("cluster_state:ok")
    });
    assert!(up, "the cluster replica never synced:\n{}", replica.log());
    (primary, replica)
}

/// A one-node cluster owning every slot: enough for slot checks.
pub fn single_node_cluster() -> Server {
    single_node_cluster_with(ServerConfig::default())
}

/// [`single_node_cluster`] started from `config`.
pub fn single_node_cluster_with(config: ServerConfig) -> Server {
    let server = config
        .line("cluster-enabled yes")
        .line("cluster-config-file nodes.conf")
        .start();
    let mut con = server.client();
    // CLUSTER ADDSLOTSRANGE is 7.0+; ADDSLOTS with every slot works everywhere.
    let mut addslots = vec!["CLUSTER".to_owned(), "ADDSLOTS".to_owned()];
    addslots.extend((0..16384).map(|slot: u32| slot.to_string()));
    q::<(), _>(&mut con, &addslots);
    let ok = eventually(Duration::from_secs(20), || {
        q::<String, _>(&mut con, &["CLUSTER", "INFO"]).contains("cluster_state:ok")
    });
    assert!(ok, "cluster never became ok:\n{}", server.log());
    server
}

/// A Redis Cluster of real servers on 127.0.0.1, module loaded everywhere.
pub struct Cluster {
    pub nodes: Vec<Server>,
}

/// One line of CLUSTER NODES.
#[derive(Debug, Clone)]
pub struct ClusterNode {
    pub id: String,
    pub port: u16,
    pub is_primary: bool,
    /// The primary's id, for a replica.
    pub primary_id: Option<String>,
}

impl Cluster {
    /// `primaries` primaries with one replica each, created with
    /// `redis-cli --cluster create`, every slot covered and every replica
    /// in sync.
    pub fn start(primaries: usize) -> Cluster {
        let nodes: Vec<Server> = (0..primaries * 2)
            .map(|_| {
                ServerConfig::default()
                    .line("cluster-enabled yes")
                    .line("cluster-config-file nodes.conf")
                    .line("cluster-node-timeout 3000")
                    .start()
            })
            .collect();
        let mut create = std::process::Command::new(
            std::env::var("REDIS_CLI").unwrap_or_else(|_| "redis-cli".to_owned()),
        );
        create.arg("--cluster").arg("create");
        for node in &nodes {
            create.arg(format!("127.0.0.1:{}", node.port()));
        }
        let output = create
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .output()
            .expect("run redis-cli --cluster create (install redis-tools)");
        assert!(
            output.status.success(),
            "cluster create failed:\n{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        let cluster = Cluster { nodes };
        cluster.wait_until_stable();
        cluster
    }

    /// Waits until every node says `cluster_state:ok` and every replica's
    /// link to its primary is up.
    pub fn wait_until_stable(&self) {
        for node in &self.nodes {
            let mut con = node.client();
            let ok = eventually(Duration::from_secs(60), || {
                let info: String = q(&mut con, &["CLUSTER", "INFO"]);
                let state_ok = info.contains("cluster_state:ok");
                let role = info_field(&mut con, "replication", "role");
                let linked = role.as_deref() == Some("master")
                    || info_field(&mut con, "replication", "master_link_status").as_deref()
                        == Some("up");
                state_ok && linked
            });
            assert!(
                ok,
                "node {} never became stable:\n{}",
                node.port(),
                node.log()
            );
        }
    }

    /// Waits until every node lists every other one as connected, with the
    /// same primaries and replicas.
    pub fn wait_until_everyone_knows_everyone(&self) {
        let expected = self.nodes.len();
        for node in &self.nodes {
            let mut con = node.client();
            let ok = eventually(Duration::from_secs(30), || {
                let text: String = q(&mut con, &["CLUSTER", "NODES"]);
                let lines: Vec<&str> = text.lines().collect();
                let connected = lines.iter().filter(|l| l.contains(" connected")).count();
                let replicas = lines.iter().filter(|l| l.contains("slave")).count();
                lines.len() == expected && connected == expected && replicas == expected / 2
            });
            assert!(ok, "node {} does not know the whole cluster", node.port());
        }
    }

    /// CLUSTER NODES as seen from the first node.
    pub fn topology(&self) -> Vec<ClusterNode> {
        let mut con = self.nodes[0].client();
        let text: String = q(&mut con, &["CLUSTER", "NODES"]);
        text.lines()
            .filter_map(|line| {
                let fields: Vec<&str> = line.split_whitespace().collect();
                let port = fields.get(1)?.split(['@', ':']).nth(1)?.parse().ok()?;
                let flags = fields.get(2)?;
                let primary = fields.get(3)?;
                Some(ClusterNode {
                    id: fields.first()?.to_string(),
                    port,
                    is_primary: flags.contains("master"),
                    primary_id: (*primary != "-").then(|| primary.to_string()),
                })
            })
            .collect()
    }

    pub fn node(&self, port: u16) -> &Server {
        self.nodes
            .iter()
            .find(|n| n.port() == port)
            .unwrap_or_else(|| panic!("no node on port {port}"))
    }

    /// The primary that owns `key`'s slot, and its replica.
    pub fn owner_of(&self, key: &str) -> (ClusterNode, ClusterNode) {
        let mut con = self.nodes[0].client();
        let slot: i64 = q(&mut con, &["CLUSTER", "KEYSLOT", key]);
        let slots: Value = q(&mut con, &["CLUSTER", "SLOTS"]);
        let Value::Array(ranges) = slots else {
            panic!("CLUSTER SLOTS: {slots:?}")
        };
        let port = ranges
            .iter()
            .find_map(|range| match range {
                Value::Array(items) => match (&items[0], &items[1], &items[2]) {
                    (Value::Int(start), Value::Int(end), Value::Array(primary))
                        if (*start..=*end).contains(&slot) =>
                    {
                        match primary.get(1) {
                            Some(Value::Int(port)) => Some(*port as u16),
                            _ => None,
                        }
                    }
                    _ => None,
                },
                _ => None,
            })
            .unwrap_or_else(|| panic!("no owner for slot {slot}"));
        // Gossip may take a moment to tell every node who replicates whom.
        let mut found = None;
        let settled = eventually(Duration::from_secs(30), || {
            let nodes = self.topology();
            let primary = nodes.iter().find(|n| n.port == port).cloned();
            let replica = primary.as_ref().and_then(|p| {
                nodes
                    .iter()
                    .find(|n| n.primary_id.as_deref() == Some(p.id.as_str()))
                    .cloned()
            });
            found = primary.zip(replica);
            found.is_some()
        });
        assert!(settled, "no replica of port {port} in CLUSTER NODES");
        found.expect("checked above")
    }
}

/// The slot of `key` (`CLUSTER KEYSLOT`) and the node of `nodes` that owns it (`CLUSTER SLOTS`).
pub fn slot_owner<'a>(nodes: &'a [Server], key: &str) -> (i64, &'a Server) {
    let mut con = nodes[0].client();
    let slot: i64 = q(&mut con, &["CLUSTER", "KEYSLOT", key]);
    let ranges: Vec<Value> = q(&mut con, &["CLUSTER", "SLOTS"]);
    let port = ranges.iter().find_map(|range| match range {
        Value::Array(items) => match items.as_slice() {
            [Value::Int(first), Value::Int(last), Value::Array(primary), ..]
                if (*first..=*last).contains(&slot) =>
            {
                match primary.get(1) {
                    Some(Value::Int(port)) => Some(*port),
                    _ => None,
                }
            }
            _ => None,
        },
        _ => None,
    });
    let port = port.unwrap_or_else(|| panic!("no node owns slot {slot}: {ranges:?}"));
    let node = nodes.iter().find(|node| i64::from(node.port()) == port);
    (
        slot,
        node.unwrap_or_else(|| panic!("slot {slot} on an unknown port {port}")),
    )
}

/// Two cluster nodes started with `config` (the module loaded as it says):
/// the first owns slots 0-8191, the second 8192-16383, both `cluster_state:ok`.
pub fn two_node_cluster(config: ServerConfig) -> [Server; 2] {
    let node = || {
        config
            .clone()
            .line("cluster-enabled yes")
            .line("cluster-config-file nodes.conf")
            .line("cluster-node-timeout 5000")
            .start()
    };
    let nodes = [node(), node()];
    for (node, (first, last)) in nodes.iter().zip([(0u32, 8191u32), (8192, 16383)]) {
        let mut addslots = vec!["CLUSTER".to_owned(), "ADDSLOTS".to_owned()];
        addslots.extend((first..=last).map(|slot| slot.to_string()));
        q::<(), _>(&mut node.client(), &addslots);
    }
    let port = nodes[1].port().to_string();
    q::<(), _>(
        &mut nodes[0].client(),
        &["CLUSTER", "MEET", "127.0.0.1", &port],
    );
    for node in &nodes {
        let mut con = node.client();
        let ok = eventually(Duration::from_secs(30), || {
            q::<String, _>(&mut con, &["CLUSTER", "INFO"]).contains("cluster_state:ok")
                && q::<String, _>(&mut con, &["CLUSTER", "NODES"])
                    .lines()
                    .count()
                    == 2
        });
        assert!(ok, "the two-node cluster never became ok:\n{}", node.log());
    }
    nodes
}

/// Whether this server moves slots with its own atomic slot migration:
/// Redis 8.4+ (`CLUSTER MIGRATION IMPORT`), Valkey 9.0+ (`CLUSTER MIGRATESLOTS`).
pub fn has_atomic_slot_migration() -> bool {
    target().at_least(Some((8, 4)), Some((9, 0)))
}

/// An atomic slot migration in progress (see [`AtomicMigration::start`]).
pub struct AtomicMigration {
    /// Where its state is read: the target on Redis, the source on Valkey.
    watch: u16,
    /// Redis: the task id. Valkey: the target's node id.
    id: String,
    slot: i64,
}

impl AtomicMigration {
    /// Starts moving `slot` from `source` to `target` with the server's own
    /// atomic slot migration.
    pub fn start(source: &Server, target_node: &Server, slot: i64) -> AtomicMigration {
        let slot_text = slot.to_string();
        if target().is_valkey() {
            let id: String = q(&mut target_node.client(), &["CLUSTER", "MYID"]);
            q::<(), _>(
                &mut source.client(),
                &[
                    "CLUSTER",
                    "MIGRATESLOTS",
                    "SLOTSRANGE",
                    &slot_text,
                    &slot_text,
                    "NODE",
                    &id,
                ],
            );
            AtomicMigration {
                watch: source.port(),
                id,
                slot,
            }
        } else {
            let id: String = q(
                &mut target_node.client(),
                &["CLUSTER", "MIGRATION", "IMPORT", &slot_text, &slot_text],
            );
            AtomicMigration {
                watch: target_node.port(),
                id,
                slot,
            }
        }
    }

    /// The migration's state as the server names it: Redis `completed`,
    /// `failed`, `canceled`...; Valkey `success`, `failed`, `cancelled`...
    /// With the server's message, if any.
    pub fn state(&self) -> (String, String) {
        self.state_on(self.watch)
    }

    /// [`AtomicMigration::state`] as the node on `port` sees it (Redis:
    /// the source and the target each report their side of the task).
    pub fn state_on(&self, port: u16) -> (String, String) {
        let mut con = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
            .and_then(|c| c.get_connection())
            .expect("connect to the migration's node");
        let entries: Value = if target().is_valkey() {
            q(&mut con, &["CLUSTER", "GETSLOTMIGRATIONS"])
        } else {
            q(
                &mut con,
                &["CLUSTER", "MIGRATION", "STATUS", "ID", &self.id],
            )
        };
        let range = format!("{0}-{0}", self.slot);
        field_maps(&entries)
            .into_iter()
            .find(|entry| {
                let field = |name: &str| entry.get(name).map(String::as_str);
                if target().is_valkey() {
                    field("operation") == Some("EXPORT")
                        && field("target_node") == Some(self.id.as_str())
                        && field("slot_ranges").is_some_and(|r| r.split(' ').any(|r| r == range))
                } else {
                    field("id") == Some(self.id.as_str())
                }
            })
            .map(|entry| {
                let message = ["last_error", "message"]
                    .iter()
                    .find_map(|f| entry.get(*f).cloned())
                    .unwrap_or_default();
                (entry.get("state").cloned().unwrap_or_default(), message)
            })
            .unwrap_or_else(|| ("unknown".to_owned(), format!("no entry in {entries:?}")))
    }

    /// Waits until the migration has succeeded (`Ok`), or has ended
    /// otherwise (`Err` with its state and message).
    pub fn wait(&self, timeout: Duration) -> Result<(), String> {
        let mut last = (String::new(), String::new());
        let ended = eventually(timeout, || {
            last = self.state();
            ["completed", "success", "failed", "canceled", "cancelled"].contains(&last.0.as_str())
        });
        match last.0.as_str() {
            "completed" | "success" if ended => Ok(()),
            _ => Err(format!("migration state {:?}: {}", last.0, last.1)),
        }
    }
}
