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
/// The one big call of `make bench` and of the instruction bench; the instruction bench's call
/// of issue #48 (in and out of cluster mode).
pub const BIG_CALL: usize = 10_000;
pub const HUGE_CALL: usize = 100_000;

/// The rows of the call of 100,000 new pairs on `server`: out of and in cluster mode, as loaded by
/// default, then with the AOF and REPLICATE MSETEX in both (one command per call in both).
pub fn huge_rows(server: usize) -> [Row; 4] {
    use {Persistence::*, Replicate::*};
    let setups = [
        (None, Set),
        (Cluster, Set),
        (Aof, Msetex),
        (ClusterAof, Msetex),
    ];
    setups.map(|setup| Setup::ttl(server, setup).rows(Values::ShortKeys)[1].batch(HUGE_CALL))
}

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
    /// Cluster mode, one node owning every slot, nothing else: nobody listens, as
    /// outside it, until a slot export starts (docs/DESIGN.md, "Nobody listens").
    Cluster,
    /// Cluster mode with the AOF (the instruction bench's call of 100,000 pairs).
    ClusterAof,
}

impl Persistence {
    pub fn cluster(self) -> bool {
        matches!(self, Persistence::Cluster | Persistence::ClusterAof)
    }
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

/// No persistence (and REPLICATE SET).
pub const NONE: (Persistence, Replicate) = (Persistence::None, Replicate::Set);

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

/// The instruction bench's regimes of values; those of its setups that propagate.
pub const REGIMES: [Values; 4] = [
    Values::ShortKeys,
    Values::Small,
    Values::Integer,
    Values::Large,
];
pub const KEYS: [Values; 2] = [Values::ShortKeys, Values::Small];

/// The instruction bench's setups on `server`, after the plain one (every regime of values):
/// the AOF, one replica and cluster mode, in both REPLICATE modes (in one outside cluster mode
/// where the module replicates natively: both send the built-in's command), short and long keys;
/// `gate`: one replica and cluster mode, in the default mode, short keys.
pub fn instr_setups(server: usize, target: &Target, gate: bool) -> Vec<(Setup, &'static [Values])> {
    let mut list = vec![(Setup::plain(server), &REGIMES[..])];
    for persistence in [Persistence::Aof, Persistence::Replica, Persistence::Cluster] {
        for replicate in Replicate::BOTH {
            let native = target.replicates_natively(persistence.cluster());
            let skip = (gate
                && (persistence == Persistence::Aof || replicate == Replicate::Msetex))
                || (native && replicate == Replicate::Msetex);
            let values = if gate { &KEYS[..1] } else { &KEYS[..] };
            if !skip {
                list.push((Setup::ttl(server, (persistence, replicate)), values));
            }
        }
    }
    list
}

/// A setup as the tables name it: where its writes go, and what the module sends there.
pub fn setup_label(server: &Target, setup: Setup) -> String {
    let sends = match (setup.persistence, setup.replicate) {
        (Persistence::None, _) => return "no persistence".into(),
        (p, _) if server.replicates_natively(p.cluster()) => "native MSETEX",
        (_, Replicate::Set) => "REPLICATE SET",
        (_, Replicate::Msetex) => "REPLICATE MSETEX",
    };
    let persistence = match setup.persistence {
        Persistence::Aof => "AOF (everysec)",
        Persistence::Replica => "one replica",
        Persistence::ClusterAof => "cluster mode and AOF",
        _ => "cluster mode",
    };
    format!("{persistence}, {sends}")
}

/// What the module propagates in `setup` on `server`, as bench/floor's load arguments (its floors
/// then propagate the same): nothing while nobody listens (no persistence; a single-node cluster
/// exporting no slot); the built-in's MSETEX where the module replicates natively; else per
/// REPLICATE mode, per key `SET` or per call `<name>.apply`.
pub fn propagation(server: &Target, setup: Setup, module_name: &str) -> String {
    match (setup.persistence, setup.replicate) {
        (Persistence::None | Persistence::Cluster, _) => String::new(),
        (p, _) if server.replicates_natively(p.cluster()) => "native MSETEX".into(),
        (_, Replicate::Set) => "set".into(),
        (_, Replicate::Msetex) => format!("apply {module_name}.apply"),
    }
}

/// One table row: everything but the variant.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub struct Row {
    pub setup: Setup,
    pub workload: Workload,
    pub values: Values,
    pub batch: usize,
}

impl Row {
    /// This row with `batch` keys a call.
    pub fn batch(self, batch: usize) -> Row {
        Row { batch, ..self }
    }

    /// This row in `setup`.
    pub fn at(self, setup: Setup) -> Row {
        Row { setup, ..self }
    }
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
        if setup.form == Form::Numkeys {
            rows.extend([Values::Small, Values::Integer].map(|v| row(workload, v, 100)));
            continue;
        }
        let batches: &[usize] = if options.quick {
            &[100]
        } else {
            &[1, 10, 100, 1000]
        };
        rows.extend(batches.iter().map(|b| row(workload, Values::Small, *b)));
        rows.extend([Values::Integer, Values::Large].map(|v| row(workload, v, 100)));
    }
    rows
}

/// The setups of `make bench`, which run at once, interleaved round by round, so that their
/// figures compare within a round: the server under test without persistence, in both forms.
/// (Every server, with the AOF, a replica, in cluster mode: the instruction bench.)
pub fn setups() -> [Setup; 2] {
    let numkeys = Setup {
        form: Form::Numkeys,
        ..Setup::plain(0)
    };
    [Setup::plain(0), numkeys]
}

/// The variants of a row.
pub fn variants(row: Row, servers: &[Target]) -> Vec<Variant> {
    let setup = row.setup;
    let mut list = vec![Variant::Module, Variant::Mset];
    if servers[setup.server].has_builtin_msetex() && setup.form == Form::Ttl {
        list.push(Variant::Builtin);
    }
    if setup.form == Form::Ttl {
        list.extend([Variant::Lua, Variant::Setex]);
    }
    list
}

/// How many redis-benchmark runs `make bench` makes: every variant of every row of every setup,
/// once per round.
pub fn run_count(servers: &[Target], options: &Options) -> usize {
    let runs = |setup| -> usize {
        let rows = rows_of(setup, options);
        rows.iter().map(|r| variants(*r, servers).len()).sum()
    };
    setups().map(runs).iter().sum::<usize>() * options.rounds
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
    fn the_rows_and_their_variants() {
        let servers = [server(Product::Redis, (8, 6, 3))];
        let quick = Options {
            quick: true,
            rounds: 2,
            ..Options::default()
        };
        // TTL form: 6 rows x (module, MSET, built-in, Lua, SETEX); NUMKEYS form: 4 x 2.
        assert_eq!(run_count(&servers, &quick), (30 + 8) * 2);
        assert_eq!(run_count(&servers, &Options::default()), (60 + 8) * 7);
        let row = rows_of(setups()[0], &quick)[0];
        let expected = [
            Variant::Module,
            Variant::Mset,
            Variant::Builtin,
            Variant::Lua,
        ];
        assert_eq!(variants(row, &servers)[..4], expected);
    }
}
