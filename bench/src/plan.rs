//! The experiment model: what is measured (forms, persistence, setups,
//! workloads, values, rows, variants) and which groups, rows and variants
//! run on which server.

use crate::options::Options;
use msetex_harness::{shared_server_paths, target, targets_at, Replicate, Target};

pub const TTL: &str = "3600";
/// Keys of the overwrite workload: a session store's working set.
pub const OVERWRITE_KEYSPACE: usize = 10_000;
/// Keys of the fresh workload: redis-benchmark's key space (an `int`).
pub const FRESH_KEYSPACE: u64 = 2_000_000_000;
pub const CLIENTS: usize = 20;
pub const SMALL_VALUE: usize = 32;
pub const LARGE_VALUE: usize = 1024;
/// A canonical integer outside the shared-integer range: SET stores it
/// with the `int` encoding.
pub const INTEGER_VALUE: &str = "1234567890";

/// The module's two syntaxes.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Form {
    Ttl,
    Numkeys,
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Persistence {
    None,
    Aof,
    Replica,
    /// Cluster mode, one node owning every slot, nothing else: where the
    /// module never trusts "nobody listens" (docs/DESIGN.md).
    Cluster,
}

/// One server configuration; its rows run on one server (and replica).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub struct Setup {
    /// Index into the benchmark's server list (0: the server under test).
    pub server: usize,
    pub form: Form,
    pub persistence: Persistence,
    pub replicate: Replicate,
}

/// No persistence (and REPLICATE SET); one replica with REPLICATE MSETEX.
pub const NONE: (Persistence, Replicate) = (Persistence::None, Replicate::Set);
pub const REPLICA: (Persistence, Replicate) = (Persistence::Replica, Replicate::Msetex);

impl Setup {
    /// The TTL form on `server`, with this persistence and REPLICATE mode.
    pub fn ttl(server: usize, (persistence, replicate): (Persistence, Replicate)) -> Setup {
        let form = Form::Ttl;
        Setup {
            server,
            form,
            persistence,
            replicate,
        }
    }

    /// The TTL form without persistence on `server`.
    pub fn plain(server: usize) -> Setup {
        Setup::ttl(server, NONE)
    }

    /// The setup's rows of 100 keys per call with these values: overwrite, fresh.
    pub fn rows(self, values: Values) -> [Row; 2] {
        Workload::BOTH.map(|workload| Row {
            setup: self,
            workload,
            values,
            batch: 100,
        })
    }
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Workload {
    Overwrite,
    Fresh,
}

impl Workload {
    pub const BOTH: [Workload; 2] = [Workload::Overwrite, Workload::Fresh];

    pub fn label(self) -> &'static str {
        match self {
            Workload::Overwrite => "overwrite",
            Workload::Fresh => "fresh",
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Values {
    Small,
    Integer,
    Large,
    /// 32-byte values under short keys (`k:N`), where every other row's keys are `k:` and 12
    /// digits: the instruction bench's regime where Redis 8.2+ embeds the value in the key.
    ShortKeys,
}

impl Values {
    pub fn label(self) -> &'static str {
        match self {
            Values::Small | Values::ShortKeys => "32 B",
            Values::Integer => "integer",
            Values::Large => "1024 B",
        }
    }

    pub fn value(self) -> String {
        match self {
            Values::Integer => INTEGER_VALUE.to_owned(),
            Values::Large => "x".repeat(LARGE_VALUE),
            _ => "x".repeat(SMALL_VALUE),
        }
    }

    /// The instruction bench's name for the regime.
    pub fn regime(self) -> &'static str {
        match self {
            Values::ShortKeys => "short keys, 32 B",
            Values::Small => "long keys, 32 B",
            Values::Integer => "integers",
            Values::Large => "1 KB values",
        }
    }
}

/// The instruction bench's regimes.
pub const REGIMES: [Values; 4] = [
    Values::ShortKeys,
    Values::Small,
    Values::Integer,
    Values::Large,
];

/// One table row: everything but the variant.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub struct Row {
    pub setup: Setup,
    pub workload: Workload,
    pub values: Values,
    pub batch: usize,
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Variant {
    /// The module's command, in the setup's form.
    Module,
    Mset,
    /// The server's own MSETEX (Redis 8.4+, Valkey 9.1+).
    Builtin,
    Lua,
    Setex,
    /// `floor.bare` of bench/floor: the bare job through the module API.
    Floor,
    /// `floor.events`: the floor plus what correctness needs (keyspace
    /// events, the modified-key signal, the change count).
    FloorEvents,
    /// `floor.mset`: MSET of the pairs through the module API, then each deadline: SET's
    /// encodings (`int`, embedded values) where the key API cannot give them.
    FloorMset,
}

/// The servers: the one under test first, then the matrix.
pub fn servers(options: &Options) -> &'static [Target] {
    let mut list = vec![target().clone()];
    if options.matrix {
        let paths: Vec<String> = match std::env::var("SERVERS") {
            Ok(list) => list.split_whitespace().map(str::to_owned).collect(),
            Err(_) => shared_server_paths(),
        };
        // One server per release: a build that reports the version of one listed before it
        // (../shared/servers/redis-keystep reports 8.6.3) is not a release.
        for server in targets_at(&paths) {
            let known: Vec<String> = list.iter().map(Target::describe).collect();
            if !known.contains(&server.describe()) {
                list.push(server);
            }
        }
    }
    Box::leak(list.into_boxed_slice())
}

/// The rows of one setup.
pub fn rows_of(setup: Setup, options: &Options) -> Vec<Row> {
    let row = |workload, values, batch| Row {
        setup,
        workload,
        values,
        batch,
    };
    let mut rows = Vec::new();
    for workload in Workload::BOTH {
        let main = setup.server == 0;
        match (main, setup.form, setup.persistence) {
            (true, Form::Ttl, Persistence::None) => {
                let batches: &[usize] = if options.quick {
                    &[100]
                } else {
                    &[1, 10, 100, 1000]
                };
                rows.extend(batches.iter().map(|b| row(workload, Values::Small, *b)));
                rows.push(row(workload, Values::Integer, 100));
                rows.push(row(workload, Values::Large, 100));
            }
            (true, _, _) => {
                rows.push(row(workload, Values::Small, 100));
                rows.push(row(workload, Values::Integer, 100));
            }
            (false, _, _) => rows.push(row(workload, Values::Small, 100)),
        }
    }
    rows
}

/// Every setup, in groups that run at once, interleaved round by round,
/// so that their figures can be compared within a round.
pub fn groups(servers: &[Target]) -> Vec<Vec<Setup>> {
    let main = |persistence| {
        Replicate::BOTH
            .map(|r| Setup::ttl(0, (persistence, r)))
            .to_vec()
    };
    let numkeys = Setup {
        form: Form::Numkeys,
        ..Setup::plain(0)
    };
    let cluster = Setup::ttl(0, (Persistence::Cluster, Replicate::Set));
    let mut list = vec![vec![Setup::plain(0), numkeys]];
    list.extend([
        main(Persistence::Aof),
        main(Persistence::Replica),
        vec![cluster],
    ]);
    for server in 1..servers.len() {
        list.extend([
            vec![Setup::plain(server)],
            vec![Setup::ttl(server, REPLICA)],
        ]);
    }
    list
}

/// The variants of a row.
pub fn variants(row: Row, servers: &[Target]) -> Vec<Variant> {
    let setup = row.setup;
    let mut list = vec![Variant::Module, Variant::Mset];
    if servers[setup.server].has_builtin_msetex() && setup.form == Form::Ttl {
        list.push(Variant::Builtin);
    }
    if setup.form == Form::Ttl {
        if setup.server == 0 && setup.persistence == Persistence::None {
            list.push(Variant::Lua);
        }
        list.push(Variant::Setex);
    }
    list
}

/// How many redis-benchmark runs the groups make: every variant of every
/// row of every setup, once per round.
pub fn run_count(groups: &[Vec<Setup>], servers: &[Target], options: &Options) -> usize {
    let runs = |setup| -> usize {
        rows_of(setup, options)
            .iter()
            .map(|r| variants(*r, servers).len())
            .sum()
    };
    groups
        .iter()
        .flatten()
        .map(|setup| runs(*setup) * options.rounds)
        .sum()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use msetex_harness::Product;

    /// A server of this product and version, for the tests.
    pub(crate) fn server(product: Product, version: (u32, u32, u32)) -> Target {
        Target {
            binary: "redis-server".into(),
            product,
            version,
        }
    }

    #[test]
    fn the_server_under_test_alone() {
        let servers = [server(Product::Redis, (7, 0, 15))];
        let groups = groups(&servers);
        assert_eq!(
            groups.iter().map(Vec::len).collect::<Vec<_>>(),
            [2, 2, 2, 1]
        );
        let quick = Options {
            quick: true,
            rounds: 2,
            ..Options::default()
        };
        // TTL form: 6 rows x (module, MSET, Lua, SETEX); NUMKEYS form: 4 x 2;
        // AOF, replica (two modes each) and cluster: 4 x (module, MSET, SETEX).
        assert_eq!(run_count(&groups, &servers, &quick), (24 + 8 + 5 * 12) * 2);
        let full = Options::default();
        assert_eq!(run_count(&groups, &servers, &full), (48 + 8 + 5 * 12) * 7);
    }

    #[test]
    fn the_matrix_adds_two_setups_per_server() {
        let servers = [
            server(Product::Redis, (7, 0, 15)),
            server(Product::Redis, (8, 6, 3)),
        ];
        let groups = groups(&servers);
        assert_eq!(groups.len(), 6);
        let replica = groups[5][0];
        assert_eq!(
            (replica.server, replica.persistence),
            (1, Persistence::Replica)
        );
        let row = rows_of(replica, &Options::default())[0];
        let expected = [
            Variant::Module,
            Variant::Mset,
            Variant::Builtin,
            Variant::Setex,
        ];
        assert_eq!(variants(row, &servers), expected);
    }
}
