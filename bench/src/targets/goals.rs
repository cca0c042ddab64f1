//! The verdicts: which target of docs/bench-targets.txt applies to which
//! row and server, the figure measured, and whether it holds. The order of
//! the list is the order of the "Targets" table.

use super::Comparison::{self, AtMost, Within};
use super::Targets;
use crate::instr::{Instr, BIG_CALL};
use crate::plan::*;
use crate::report::Report;
use msetex_harness::{Product, Replicate, Target};

/// Every target the report needs, with its comparison: the file must hold
/// exactly these.
pub const NAMES: &[(&str, Comparison)] = &[
    ("each.no-persistence.msetex/setex.overwrite", AtMost),
    ("each.no-persistence.msetex/setex.fresh", AtMost),
    ("each.replica-msetex.msetex/setex.overwrite", AtMost),
    ("each.replica-msetex.msetex/setex.fresh", AtMost),
    ("redis62.no-persistence.msetex/setex.overwrite", AtMost),
    ("redis62.no-persistence.msetex/setex.fresh", AtMost),
    ("main.no-persistence.integer.msetex/mset.overwrite", AtMost),
    ("main.no-persistence.integer.msetex/mset.fresh", AtMost),
    ("main.replica-msetex.msetex/mset.overwrite", AtMost),
    ("main.replica-msetex.msetex/mset.fresh", AtMost),
    ("builtin.replica-msetex.module/builtin.overwrite", AtMost),
    ("builtin.replica-msetex.module/builtin.fresh", AtMost),
    ("main.no-persistence.msetex/lua.overwrite", AtMost),
    ("main.no-persistence.msetex/lua.fresh", AtMost),
    ("main.no-persistence.msetex/setex.overwrite", AtMost),
    ("main.no-persistence.msetex/setex.fresh", AtMost),
    ("main.no-persistence.numkeys/ttl.overwrite", Within),
    ("main.no-persistence.numkeys/ttl.fresh", Within),
    ("main.no-persistence.integer.numkeys/ttl.overwrite", Within),
    ("main.no-persistence.integer.numkeys/ttl.fresh", Within),
    ("main.memory-per-key.msetex/set-ex", Within),
    ("main.memory-per-key.integer.msetex/set-ex", Within),
    ("main.acl-load-2000-users.module/without", AtMost),
    ("failed-calls-and-runs", AtMost),
    ("others.instructions.msetex/floor.overwrite", AtMost),
    ("others.instructions.msetex/floor.fresh", AtMost),
    ("redis70.instructions.msetex/floor.overwrite", AtMost),
    ("redis70.instructions.msetex/floor.fresh", AtMost),
    ("every.instructions.msetex/setex.overwrite", AtMost),
    ("every.instructions.msetex/setex.fresh", AtMost),
    ("builtin.instructions.module/builtin.overwrite", AtMost),
    ("builtin.instructions.module/builtin.fresh", AtMost),
    (
        "every.instructions-10000-keys.msetex/floor.overwrite",
        AtMost,
    ),
    ("every.instructions-10000-keys.msetex/floor.fresh", AtMost),
];

/// The instruction targets, server by server: each figure over the four regimes (short keys,
/// long keys, integers, 1 KB values), both workloads; the 10,000-key call in its one regime.
/// With them, the rows (100 keys a call) whose MSETEX / floor target is missed.
pub fn instr_goals(instr: &Instr, servers: &[Target], targets: &Targets) -> (Vec<Goal>, Vec<Row>) {
    let (mut list, mut missed) = (Vec::new(), Vec::new());
    for (index, server) in servers.iter().enumerate() {
        // Redis 7.0's module asks the server about each key's ACL rules: a target of its own.
        let redis70 = server.product == Product::Redis && server.version.0 == 7;
        let floor = if redis70 && server.version.1 == 0 {
            "redis70"
        } else {
            "others"
        };
        let setex = Some(Variant::Setex);
        let mut goals = vec![
            (
                "MSETEX / floor",
                format!("{floor}.instructions.msetex/floor"),
                None,
            ),
            (
                "MSETEX / pipelined SETEX",
                "every.instructions.msetex/setex".into(),
                setex,
            ),
        ];
        if server.has_builtin_msetex() {
            let name = "builtin.instructions.module/builtin".into();
            goals.push(("module / built-in MSETEX", name, Some(Variant::Builtin)));
        }
        let big = "every.instructions-10000-keys.msetex/floor".to_owned();
        goals.push(("one call of 10,000 keys, MSETEX / floor", big, None));
        for (what, name, den) in goals {
            let (batch, regimes) = match what.starts_with("one call") {
                true => (BIG_CALL, &REGIMES[1..2]),
                false => (100, &REGIMES[..]),
            };
            for workload in Workload::BOTH {
                let limit = targets.at_most(&format!("{name}.{}", workload.label()));
                let row = |values| Row {
                    setup: Setup::plain(index),
                    workload,
                    values,
                    batch,
                };
                let ratios: Vec<(Row, f64)> = regimes
                    .iter()
                    .map(|v| (row(*v), instr.ratio(row(*v), den)))
                    .collect();
                let held = |ratio: f64| ratio <= limit;
                if what == "MSETEX / floor" {
                    missed.extend(
                        ratios
                            .iter()
                            .filter(|(_, r)| !held(*r))
                            .map(|(row, _)| *row),
                    );
                }
                let measured: Vec<String> = ratios.iter().map(|(_, r)| format!("{r:.3}")).collect();
                let (server, workload) = (server.describe(), workload.label());
                list.push(Goal {
                    what: format!("{server}, {what}, {workload}: at most {}x", short(limit)),
                    measured: measured.join(" / "),
                    holds: ratios.iter().all(|(_, r)| held(*r)),
                });
            }
        }
    }
    (list, missed)
}

/// One target: what, where, the figure, whether it holds.
pub struct Goal {
    pub what: String,
    pub measured: String,
    pub holds: bool,
}

/// Every target, in the order of the table.
pub fn goals(report: &Report, servers: &[Target], targets: &Targets) -> Vec<Goal> {
    let goals = Goals {
        report,
        targets,
        main: servers[0].describe(),
        list: Vec::new(),
    };
    goals.build(servers)
}

/// 1.6, 2.3, 0.33: as short as the limit needs.
fn short(limit: f64) -> String {
    format!("{limit:.2}")
        .trim_end_matches('0')
        .trim_end_matches('.')
        .to_owned()
}

/// The name's part for values: none for 32 bytes.
fn values_part(values: Values) -> &'static str {
    match values {
        Values::Integer => ".integer",
        Values::Large => ".large",
        _ => "",
    }
}

/// Rows of batch 100 and 32-byte values on `server`, both workloads.
fn rows(server: usize, persistence: Persistence, replicate: Replicate) -> [Row; 2] {
    Setup::ttl(server, persistence, replicate).rows(Values::Small)
}

struct Goals<'a> {
    report: &'a Report,
    targets: &'a Targets,
    /// The server under test, described.
    main: String,
    list: Vec<Goal>,
}

impl Goals<'_> {
    fn build(mut self, servers: &[Target]) -> Vec<Goal> {
        let main = self.main.clone();
        let none = |values| Setup::plain(0).rows(values);
        let (small, integer) = (none(Values::Small), none(Values::Integer));
        let replica = rows(0, Persistence::Replica, Replicate::Msetex);
        self.every_server(servers);
        self.both(
            &format!("{main}, no persistence, integer values, MSETEX / MSET"),
            integer,
            Variant::Mset,
            "main.no-persistence.integer.msetex/mset",
        );
        self.both(
            &format!("{main}, one replica, REPLICATE MSETEX, MSETEX / MSET"),
            replica,
            Variant::Mset,
            "main.replica-msetex.msetex/mset",
        );
        self.builtin(servers);
        self.both(
            &format!("{main}, no persistence, MSETEX / Lua SET EX loop"),
            small,
            Variant::Lua,
            "main.no-persistence.msetex/lua",
        );
        self.both(
            &format!("{main}, no persistence, MSETEX / pipelined SETEX"),
            small,
            Variant::Setex,
            "main.no-persistence.msetex/setex",
        );
        self.numkeys();
        self.memory();
        self.acl_load();
        self.failures();
        self.list
    }

    /// The module against `den` in both rows, each at most its target
    /// `<name>.<workload>`.
    fn both(&mut self, what: &str, rows: [Row; 2], den: Variant, name: &str) {
        for row in rows {
            let workload = row.workload.label();
            let limit = self.targets.at_most(&format!("{name}.{workload}"));
            let ratio = self.report.ratio(row, den);
            self.list.push(Goal {
                what: format!("{what}, {workload}: at most {}x", short(limit)),
                measured: format!("{ratio:.2}x"),
                holds: ratio <= limit,
            });
        }
    }

    // Every server: below pipelined SETEX (from Redis 7.0 on, without
    // persistence and with a replica in REPLICATE MSETEX mode; Redis 6.2
    // without persistence, its own target).
    fn every_server(&mut self, servers: &[Target]) {
        for (index, server) in servers.iter().enumerate() {
            let name = server.describe();
            let none = rows(index, Persistence::None, Replicate::Set);
            if server.product == Product::Redis && server.version < (7, 0, 0) {
                self.both(
                    &format!("{name}, no persistence, MSETEX / pipelined SETEX"),
                    none,
                    Variant::Setex,
                    "redis62.no-persistence.msetex/setex",
                );
                continue;
            }
            self.both(
                &format!("{name}, no persistence, MSETEX / pipelined SETEX"),
                none,
                Variant::Setex,
                "each.no-persistence.msetex/setex",
            );
            self.both(
                &format!("{name}, one replica, REPLICATE MSETEX, MSETEX / pipelined SETEX"),
                rows(index, Persistence::Replica, Replicate::Msetex),
                Variant::Setex,
                "each.replica-msetex.msetex/setex",
            );
        }
    }

    /// The module against the built-in MSETEX, where there is one.
    fn builtin(&mut self, servers: &[Target]) {
        for (index, server) in servers.iter().enumerate() {
            if !server.has_builtin_msetex() {
                continue;
            }
            self.both(
                &format!(
                    "{}, one replica, REPLICATE MSETEX, module / built-in MSETEX",
                    server.describe()
                ),
                rows(index, Persistence::Replica, Replicate::Msetex),
                Variant::Builtin,
                "builtin.replica-msetex.module/builtin",
            );
        }
    }

    /// The NUMKEYS form costs what the TTL form costs.
    fn numkeys(&mut self) {
        let main = &self.main;
        for values in [Values::Small, Values::Integer] {
            for ttl_row in Setup::plain(0).rows(values) {
                let workload = ttl_row.workload.label();
                let tolerance = self.targets.within(&format!(
                    "main.no-persistence{}.numkeys/ttl.{workload}",
                    values_part(values)
                ));
                let ratio = self
                    .report
                    .numkeys_vs_ttl
                    .get(&(ttl_row.workload, values))
                    .copied()
                    .unwrap_or(f64::NAN);
                self.list.push(Goal {
                    what: format!(
                        "{main}, no persistence, {} {workload}: NUMKEYS form / TTL form, server time per key, within {}% of 1",
                        values.label(),
                        short(tolerance * 100.0)
                    ),
                    measured: format!("{ratio:.2}x"),
                    holds: (ratio - 1.0).abs() <= tolerance,
                });
            }
        }
    }

    /// Memory per key against SET ... EX.
    fn memory(&mut self) {
        let main = &self.main;
        for (values, msetex, set) in &self.report.memory.rows {
            let tolerance = self.targets.within(&format!(
                "main.memory-per-key{}.msetex/set-ex",
                values_part(*values)
            ));
            let ratio = msetex / set;
            self.list.push(Goal {
                what: format!(
                    "{main}, memory per key, {} values: within {}% of SET EX",
                    values.label(),
                    short(tolerance * 100.0)
                ),
                measured: format!("{ratio:.3}x"),
                holds: (ratio - 1.0).abs() <= tolerance,
            });
        }
    }

    /// ACL LOAD costs what it costs without the module.
    fn acl_load(&mut self) {
        let limit = self
            .targets
            .at_most("main.acl-load-2000-users.module/without");
        let ratio = self.report.acl_load.ratio;
        self.list.push(Goal {
            what: format!(
                "{}, ACL LOAD of 2,000 users with the module: at most {}x without",
                self.main,
                short(limit)
            ),
            measured: format!("{ratio:.2}x"),
            holds: ratio <= limit,
        });
    }

    fn failures(&mut self) {
        let limit = self.targets.at_most("failed-calls-and-runs");
        let failed = self.report.failed_calls;
        self.list.push(Goal {
            what: if limit == 0.0 {
                "zero failed calls or runs".into()
            } else {
                format!("at most {} failed calls or runs", short(limit))
            },
            measured: failed.to_string(),
            holds: failed as f64 <= limit,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::tests::server;

    fn repository_targets() -> Targets {
        let text = std::fs::read_to_string(super::super::default_path()).unwrap();
        Targets::parse(&text).unwrap()
    }

    /// Every kind of server and experiment the report can hold, so that
    /// every target is looked up.
    fn everything() -> (Report, Vec<Target>) {
        let servers = vec![
            server(Product::Redis, (7, 0, 15)),
            server(Product::Redis, (6, 2, 16)),
            server(Product::Redis, (8, 6, 3)),
            server(Product::Valkey, (8, 1, 1)),
            server(Product::Valkey, (9, 1, 2)),
        ];
        let mut report = Report::empty();
        report.memory.rows = vec![(Values::Small, 101.0, 100.0), (Values::Integer, 80.0, 80.0)];
        (report, servers)
    }

    #[test]
    fn the_table_is_the_one_of_the_hard_coded_limits() {
        let (report, servers) = everything();
        let goals = goals(&report, &servers, &repository_targets());
        let what: Vec<&str> = goals.iter().map(|goal| goal.what.as_str()).collect();
        // Two per server (four from Redis 7.0 on), four for the built-ins, 16 on the server
        // under test.
        assert_eq!(what.len(), 2 + 4 * 4 + 4 + 16);
        for expected in [
            "Redis 7.0.15, one replica, REPLICATE MSETEX, MSETEX / pipelined SETEX, fresh: at most 0.99x",
            "Redis 6.2.16, no persistence, MSETEX / pipelined SETEX, overwrite: at most 0.99x",
            "Valkey 9.1.2, one replica, REPLICATE MSETEX, module / built-in MSETEX, fresh: at most 1x",
            "Redis 7.0.15, one replica, REPLICATE MSETEX, MSETEX / MSET, fresh: at most 2.3x",
            "Redis 7.0.15, no persistence, MSETEX / Lua SET EX loop, overwrite: at most 0.33x",
            "Redis 7.0.15, no persistence, integer fresh: NUMKEYS form / TTL form, server time per key, within 10% of 1",
            "Redis 7.0.15, memory per key, 32 B values: within 5% of SET EX",
            "zero failed calls or runs",
        ] {
            assert!(what.contains(&expected), "{expected}");
        }
        // Redis 6.2 has no replica target, servers without a built-in no built-in target.
        assert!(!what
            .iter()
            .any(|w| w.starts_with("Redis 6.2.16, one replica")));
        assert!(!what
            .iter()
            .any(|w| w.starts_with("Valkey 8.1.1") && w.contains("built-in")));
    }

    #[test]
    fn verdicts() {
        let (report, servers) = everything();
        let goals = goals(&report, &servers, &repository_targets());
        let verdict = |start: &str| -> Vec<(String, bool)> {
            goals
                .iter()
                .filter(|goal| goal.what.contains(start))
                .map(|goal| (goal.measured.clone(), goal.holds))
                .collect()
        };
        // Nothing measured: NaN holds no ratio target.
        assert_eq!(
            verdict("Lua"),
            [("NaNx".to_owned(), false), ("NaNx".to_owned(), false)]
        );
        assert_eq!(
            verdict("memory per key"),
            [("1.010x".to_owned(), true), ("1.000x".to_owned(), true)]
        );
        assert_eq!(verdict("zero failed"), [("0".to_owned(), true)]);
    }

    #[test]
    fn limits_come_from_the_file() {
        let (mut report, servers) = everything();
        report.failed_calls = 2;
        report.acl_load.ratio = 1.7;
        let text: String = std::fs::read_to_string(super::super::default_path())
            .unwrap()
            .lines()
            .map(|line| match line.split_whitespace().next() {
                Some("main.acl-load-2000-users.module/without") => {
                    "main.acl-load-2000-users.module/without at-most 1.75\n".to_owned()
                }
                Some("failed-calls-and-runs") => "failed-calls-and-runs at-most 3\n".to_owned(),
                _ => format!("{line}\n"),
            })
            .collect();
        let targets = Targets::parse(&text).unwrap();
        let goals = goals(&report, &servers, &targets);
        let last = &goals[goals.len() - 1];
        assert_eq!(
            (last.what.as_str(), last.holds),
            ("at most 3 failed calls or runs", true)
        );
        let call = goals
            .iter()
            .find(|goal| goal.what.contains("ACL LOAD"))
            .unwrap();
        assert!(
            call.what.contains("at most 1.75x") && call.holds,
            "{}",
            call.what
        );
    }

    /// An instruction bench where MSETEX costs 1.15 floor.events, floor.mset 1.25 and SETEX 2,
    /// and the floor paths leave keys as SET does where `fair` says.
    fn instr(servers: &[Target], fair: fn(Values, Variant) -> bool) -> Instr {
        let mut instr = Instr::default();
        let factors = [(Variant::Module, 1.15), (Variant::FloorEvents, 1.0)];
        let factors = factors
            .into_iter()
            .chain([(Variant::FloorMset, 1.25), (Variant::Setex, 2.0)]);
        for server in 0..servers.len() {
            for values in REGIMES {
                for row in Setup::plain(server).rows(values) {
                    for (variant, factor) in factors.clone() {
                        instr.counts.insert((row, variant), 1000.0 * factor);
                        instr.counts.insert(
                            (
                                Row {
                                    batch: BIG_CALL,
                                    ..row
                                },
                                variant,
                            ),
                            1000.0 * factor,
                        );
                        let stored = if fair(values, variant) {
                            "embstr 96"
                        } else {
                            "raw 96"
                        };
                        instr.stored.insert((row, Some(variant)), stored.into());
                    }
                    instr.stored.insert((row, None), "embstr 96".into());
                }
            }
        }
        instr
    }

    #[test]
    fn instruction_targets_take_the_cheapest_fair_floor() {
        let servers = [
            server(Product::Redis, (7, 0, 15)),
            server(Product::Valkey, (8, 1, 1)),
        ];
        // floor.events leaves integers unlike SET: their floor is floor.mset.
        let fair = |values, variant| variant == Variant::FloorMset || values != Values::Integer;
        let (goals, missed) = instr_goals(&instr(&servers, fair), &servers, &repository_targets());
        let found = |what: &str| -> (&str, bool) {
            let goal = goals.iter().find(|goal| goal.what == what).expect(what);
            (goal.measured.as_str(), goal.holds)
        };
        // 1.15 over floor.events, 1.15 / 1.25 = 0.92 over floor.mset (integers).
        let redis70 = found("Redis 7.0.15, MSETEX / floor, overwrite: at most 1.2x");
        assert_eq!(redis70, ("1.150 / 1.150 / 0.920 / 1.150", true));
        let valkey = found("Valkey 8.1.1, MSETEX / floor, overwrite: at most 1.1x");
        assert_eq!(valkey, ("1.150 / 1.150 / 0.920 / 1.150", false));
        let setex = found("Valkey 8.1.1, MSETEX / pipelined SETEX, fresh: at most 0.99x");
        assert_eq!(setex, ("0.575 / 0.575 / 0.575 / 0.575", true));
        let big =
            found("Redis 7.0.15, one call of 10,000 keys, MSETEX / floor, fresh: at most 1.1x");
        assert_eq!(big, ("1.150", false));
        // Neither server has a built-in: no such target.
        assert!(goals.iter().all(|goal| !goal.what.contains("built-in")));
        // Misses: every row but the integers' on Valkey; on Redis 7.0 (at most 1.2 / 1.1) only
        // new keys.
        assert_eq!(missed.len(), 3 + 6);
        assert!(missed.iter().all(|row| row.values != Values::Integer));
        let mut redis70 = missed.iter().filter(|row| row.setup.server == 0);
        assert!(redis70.clone().count() == 3 && redis70.all(|row| row.workload == Workload::Fresh));
    }

    #[test]
    fn no_fair_floor_holds_no_target() {
        let servers = [server(Product::Valkey, (9, 1, 2))];
        let instr = instr(&servers, |_, _| false);
        let (goals, missed) = instr_goals(&instr, &servers, &repository_targets());
        assert_eq!(missed.len(), 8);
        let floor = goals
            .iter()
            .find(|goal| goal.what.contains("MSETEX / floor"))
            .unwrap();
        assert_eq!(
            (floor.measured.as_str(), floor.holds),
            ("NaN / NaN / NaN / NaN", false)
        );
        // The built-in's target is there; nothing measured: NaN.
        let builtin = goals
            .iter()
            .find(|goal| goal.what.contains("built-in"))
            .unwrap();
        assert!(builtin
            .what
            .starts_with("Valkey 9.1.2, module / built-in MSETEX, overwrite"));
        assert!(!builtin.holds);
    }
}
