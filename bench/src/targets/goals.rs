//! The verdicts: which target of docs/bench-targets.txt applies to which
//! row and server, the figure measured, and whether it holds. The order of
//! the list is the order of the "Targets" table.

use super::Comparison::{self, AtMost, Within};
use super::Targets;
use crate::instr::{Instr, BIG_CALL};
use crate::plan::*;
use crate::report::Report;
use msetex_harness::{Product, Replicate, Target};

/// Every target the report needs, with its comparison and whether it is one per workload
/// (`.overwrite` and `.fresh`): the file must hold exactly these.
const BASES: &[(&str, Comparison, bool)] = &[
    ("each.no-persistence.msetex/setex", AtMost, true),
    ("each.replica-msetex.msetex/setex", AtMost, true),
    ("redis62.no-persistence.msetex/setex", AtMost, true),
    ("main.no-persistence.integer.msetex/mset", AtMost, true),
    ("main.replica-msetex.msetex/mset", AtMost, true),
    ("builtin.replica-msetex.module/builtin", AtMost, true),
    ("main.no-persistence.msetex/lua", AtMost, true),
    ("main.no-persistence.msetex/setex", AtMost, true),
    ("main.no-persistence.numkeys/ttl", Within, true),
    ("main.no-persistence.integer.numkeys/ttl", Within, true),
    ("main.memory-per-key.msetex/set-ex", Within, false),
    ("main.memory-per-key.integer.msetex/set-ex", Within, false),
    ("main.acl-load-2000-users.module/without", AtMost, false),
    ("failed-calls-and-runs", AtMost, false),
    ("others.instructions.msetex/floor", AtMost, true),
    ("redis70.instructions.msetex/floor", AtMost, true),
    ("others.instructions.integer.msetex/floor", AtMost, true),
    ("redis70.instructions.integer.msetex/floor", AtMost, true),
    ("every.instructions.msetex/setex", AtMost, true),
    ("builtin.instructions.module/builtin", AtMost, true),
    ("others.instructions-10000-keys.msetex/floor", AtMost, true),
    ("redis70.instructions-10000-keys.msetex/floor", AtMost, true),
];

/// The names of [`BASES`], one per workload where they are.
pub fn names() -> Vec<(String, Comparison)> {
    let mut names = Vec::new();
    for &(base, comparison, per_workload) in BASES {
        let workloads: &[&str] = if per_workload {
            &[".overwrite", ".fresh"]
        } else {
            &[""]
        };
        names.extend(workloads.iter().map(|w| (format!("{base}{w}"), comparison)));
    }
    names
}

/// The instruction targets, server by server: each figure over the four regimes (short keys,
/// long keys, integers, 1 KB values), both workloads; the 10,000-key call in its one regime.
/// With them, the rows (100 keys a call) whose MSETEX / floor target is missed.
pub fn instr_goals(instr: &Instr, servers: &[Target], targets: &Targets) -> (Vec<Goal>, Vec<Row>) {
    let (mut list, mut missed) = (Vec::new(), Vec::new());
    for (index, server) in servers.iter().enumerate() {
        // Redis 7.0's module asks the server about each key's ACL rules: a target of its own.
        let floor = match (server.product, server.version) {
            (Product::Redis, (7, 0, _)) => "redis70",
            _ => "others",
        };
        let floor_name = format!("{floor}.instructions.msetex/floor");
        let mut goals = vec![("MSETEX / floor", floor_name, None)];
        let setex = "every.instructions.msetex/setex".to_owned();
        goals.push(("MSETEX / pipelined SETEX", setex, Some(Variant::Setex)));
        if server.has_builtin_msetex() {
            let name = "builtin.instructions.module/builtin".into();
            goals.push(("module / built-in MSETEX", name, Some(Variant::Builtin)));
        }
        let big = format!("{floor}.instructions-10000-keys.msetex/floor");
        goals.push(("one call of 10,000 keys, MSETEX / floor", big, None));
        for (what, name, den) in goals {
            let (batch, regimes) = match what.starts_with("one call") {
                true => (BIG_CALL, &REGIMES[1..2]),
                false => (100, &REGIMES[..]),
            };
            // Integers against their floor (MSET's encoding): a target of their own.
            let is_floor = what == "MSETEX / floor";
            for (w, workload) in Workload::BOTH.into_iter().enumerate() {
                let limit_of = |v: Values| match (is_floor, v) {
                    (true, Values::Integer) => name.replace(".msetex", ".integer.msetex"),
                    _ => name.clone(),
                };
                let limit_of =
                    |v| targets.at_most(&format!("{}.{}", limit_of(v), workload.label()));
                let mut rows: Vec<Row> = regimes
                    .iter()
                    .map(|v| Setup::plain(index).rows(*v)[w])
                    .collect();
                rows.iter_mut().for_each(|row| row.batch = batch);
                let ratios: Vec<f64> = rows.iter().map(|row| instr.ratio(*row, den)).collect();
                // Against the built-in, a cell whose fair floor is itself above the limit is
                // bound by the floor (its own target): shown with the floor's ratio.
                let floor_over = |row: &Row| match (den, instr.floor(*row)) {
                    (Some(Variant::Builtin), Some(floor)) => {
                        let ratio = instr.count(*row, floor) / instr.count(*row, Variant::Builtin);
                        (ratio > limit_of(row.values)).then_some(ratio)
                    }
                    _ => None,
                };
                let bound: Vec<Option<f64>> = rows.iter().map(floor_over).collect();
                let held: Vec<bool> = (rows.iter().zip(&ratios).zip(&bound))
                    .map(|((row, ratio), bound)| *ratio <= limit_of(row.values) || bound.is_some())
                    .collect();
                for (row, _) in rows.iter().zip(&held).filter(|(_, h)| is_floor && !**h) {
                    missed.push(*row);
                }
                let measured: Vec<String> = (ratios.iter().zip(&bound))
                    .map(|(r, bound)| match bound {
                        Some(floor) => format!("{r:.3} (floor {floor:.3})"),
                        None => format!("{r:.3}"),
                    })
                    .collect();
                let limit = short(limit_of(Values::Small));
                let limit = match (is_floor, den) {
                    (true, _) => {
                        format!("{limit}x (integers {}x)", short(limit_of(Values::Integer)))
                    }
                    (false, Some(Variant::Builtin)) => {
                        format!("{limit}x, or the floor / built-in where that is above")
                    }
                    (false, _) => format!("{limit}x"),
                };
                let (server, workload) = (server.describe(), workload.label());
                list.push(Goal {
                    what: format!("{server}, {what}, {workload}: at most {limit}"),
                    measured: measured.join(" / "),
                    holds: held.iter().all(|h| *h),
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
    let limit = format!("{limit:.2}");
    limit.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// The name's part for values: none for 32 bytes.
fn values_part(values: Values) -> &'static str {
    match values {
        Values::Integer => ".integer",
        Values::Large => ".large",
        _ => "",
    }
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
        // Every server: below pipelined SETEX, without persistence and (from Redis 7.0 on) with a
        // replica in REPLICATE MSETEX mode; Redis 6.2 has targets of its own.
        for (index, server) in servers.iter().enumerate() {
            let name = server.describe();
            let setex = "MSETEX / pipelined SETEX";
            let (what, target) = (format!("{name}, no persistence, {setex}"), "no-persistence");
            if server.product == Product::Redis && server.version < (7, 0, 0) {
                let target = format!("redis62.{target}.msetex/setex");
                self.both(index, NONE, Values::Small, &what, Variant::Setex, &target);
                continue;
            }
            let target = format!("each.{target}.msetex/setex");
            self.both(index, NONE, Values::Small, &what, Variant::Setex, &target);
            let what = format!("{name}, one replica, REPLICATE MSETEX, {setex}");
            let target = "each.replica-msetex.msetex/setex";
            self.both(index, REPLICA, Values::Small, &what, Variant::Setex, target);
        }
        let main = self.main.clone();
        let mset = "no persistence, integer values, MSETEX / MSET";
        let integer = format!("{main}, {mset}");
        let name = "main.no-persistence.integer.msetex/mset";
        self.both(0, NONE, Values::Integer, &integer, Variant::Mset, name);
        let replica = format!("{main}, one replica, REPLICATE MSETEX, MSETEX / MSET");
        let name = "main.replica-msetex.msetex/mset";
        self.both(0, REPLICA, Values::Small, &replica, Variant::Mset, name);
        // The module against the built-in MSETEX, where there is one.
        for (index, server) in servers.iter().enumerate() {
            if server.has_builtin_msetex() {
                let what = "one replica, REPLICATE MSETEX, module / built-in MSETEX";
                let what = format!("{}, {what}", server.describe());
                let name = "builtin.replica-msetex.module/builtin";
                self.both(index, REPLICA, Values::Small, &what, Variant::Builtin, name);
            }
        }
        for (den, what, name) in [
            (Variant::Lua, "Lua SET EX loop", "lua"),
            (Variant::Setex, "pipelined SETEX", "setex"),
        ] {
            let what = format!("{main}, no persistence, MSETEX / {what}");
            self.both(
                0,
                NONE,
                Values::Small,
                &what,
                den,
                &format!("main.no-persistence.msetex/{name}"),
            );
        }
        // The NUMKEYS form costs what the TTL form costs; memory per key what SET EX's does.
        for values in [Values::Small, Values::Integer] {
            for workload in Workload::BOTH {
                let ratio = self.report.numkeys_vs_ttl.get(&(workload, values)).copied();
                let (w, v) = (workload.label(), values.label());
                let what = format!(
                    "{main}, no persistence, {v} {w}: NUMKEYS form / TTL form, server time per key, within % of 1"
                );
                let name = format!("main.no-persistence{}.numkeys/ttl.{w}", values_part(values));
                self.within(what, &name, ratio.unwrap_or(f64::NAN), 2);
            }
        }
        for (values, msetex, set) in self.report.memory.rows.clone() {
            let what = format!(
                "{main}, memory per key, {} values: within % of SET EX",
                values.label()
            );
            let name = format!("main.memory-per-key{}.msetex/set-ex", values_part(values));
            self.within(what, &name, msetex / set, 3);
        }
        // ACL LOAD costs what it costs without the module.
        let what = format!("{main}, ACL LOAD of 2,000 users with the module: at most %x without");
        let limit = self
            .targets
            .at_most("main.acl-load-2000-users.module/without");
        let what = what.replacen('%', &short(limit), 1);
        let ratio = self.report.acl_load.ratio;
        let measured = format!("{ratio:.2}x");
        self.list.push(Goal {
            what,
            measured,
            holds: ratio <= limit,
        });
        let limit = self.targets.at_most("failed-calls-and-runs");
        let failed = self.report.failed_calls;
        self.list.push(Goal {
            what: match limit == 0.0 {
                true => "zero failed calls or runs".into(),
                false => format!("at most {} failed calls or runs", short(limit)),
            },
            measured: failed.to_string(),
            holds: failed as f64 <= limit,
        });
        self.list
    }

    /// The module against `den` in the server's two rows, each at most `<name>.<workload>`.
    fn both(
        &mut self,
        server: usize,
        setup: (Persistence, Replicate),
        values: Values,
        what: &str,
        den: Variant,
        name: &str,
    ) {
        for row in Setup::ttl(server, setup).rows(values) {
            let workload = row.workload.label();
            let limit = self.targets.at_most(&format!("{name}.{workload}"));
            let ratio = self.report.ratio(row, den);
            let what = format!("{what}, {workload}: at most {}x", short(limit));
            self.list.push(Goal {
                what,
                measured: format!("{ratio:.2}x"),
                holds: ratio <= limit,
            });
        }
    }

    /// A ratio within the tolerance `name` sets of 1 (`what`'s `%` after it).
    fn within(&mut self, what: String, name: &str, ratio: f64, digits: usize) {
        let tolerance = self.targets.within(name);
        self.list.push(Goal {
            what: what.replacen('%', &format!("{}%", short(tolerance * 100.0)), 1),
            measured: format!("{ratio:.digits$}x"),
            holds: (ratio - 1.0).abs() <= tolerance,
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
        let mut report = Report::default();
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
    fn verdicts_and_limits_from_the_file() {
        let (mut report, servers) = everything();
        let verdicts = |goals: &[Goal], start: &str| -> Vec<(String, bool)> {
            let found = goals.iter().filter(|goal| goal.what.contains(start));
            found
                .map(|goal| (goal.measured.clone(), goal.holds))
                .collect()
        };
        let list = goals(&report, &servers, &repository_targets());
        // Nothing measured: NaN holds no ratio target.
        let nan = ("NaNx".to_owned(), false);
        assert_eq!(verdicts(&list, "Lua"), [nan.clone(), nan]);
        let memory = [("1.010x".to_owned(), true), ("1.000x".to_owned(), true)];
        assert_eq!(verdicts(&list, "memory per key"), memory);
        assert_eq!(verdicts(&list, "zero failed"), [("0".to_owned(), true)]);
        // Other limits in the file, other verdicts.
        (report.failed_calls, report.acl_load.ratio) = (2, 1.7);
        let text = std::fs::read_to_string(super::super::default_path()).unwrap();
        let text = text.replace(
            "module/without             at-most  1.2",
            "module/without at-most 1.75",
        );
        let text = text.replace(
            "failed-calls-and-runs                               at-most  0",
            "failed-calls-and-runs at-most 3",
        );
        let goals = goals(&report, &servers, &Targets::parse(&text).unwrap());
        assert_eq!(verdicts(&goals, "failed calls"), [("2".to_owned(), true)]);
        assert_eq!(goals.last().unwrap().what, "at most 3 failed calls or runs");
        let acl = goals
            .iter()
            .find(|goal| goal.what.contains("ACL LOAD"))
            .unwrap();
        assert!(
            acl.what.contains("at most 1.75x") && acl.holds,
            "{}",
            acl.what
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
        let redis70 = "Redis 7.0.15, MSETEX / floor, overwrite: at most 1.2x (integers 1.2x)";
        assert_eq!(found(redis70), ("1.150 / 1.150 / 0.920 / 1.150", true));
        let valkey = "Valkey 8.1.1, MSETEX / floor, overwrite: at most 1.1x (integers 1.1x)";
        assert_eq!(found(valkey), ("1.150 / 1.150 / 0.920 / 1.150", false));
        let setex = found("Valkey 8.1.1, MSETEX / pipelined SETEX, fresh: at most 0.99x");
        assert_eq!(setex, ("0.575 / 0.575 / 0.575 / 0.575", true));
        // The 10,000-key call: Redis 7.0's target has the server's part of the ACL check on top.
        let big = |server| format!("{server}, one call of 10,000 keys, MSETEX / floor, fresh");
        assert_eq!(
            found(&(big("Valkey 8.1.1") + ": at most 1.1x")),
            ("1.150", false)
        );
        assert_eq!(
            found(&(big("Redis 7.0.15") + ": at most 1.2x")),
            ("1.150", true)
        );
        // Neither server has a built-in: no such target.
        assert!(goals.iter().all(|goal| !goal.what.contains("built-in")));
        // Misses: every row but the integers' on Valkey; none on Redis 7.0.
        assert_eq!(missed.len(), 6);
        assert!(missed.iter().all(|row| row.values != Values::Integer));
        assert!(missed.iter().all(|row| row.setup.server == 1));
    }

    #[test]
    fn no_fair_floor_holds_no_target() {
        let servers = [server(Product::Valkey, (9, 1, 2))];
        let instr = instr(&servers, |_, _| false);
        let (goals, missed) = instr_goals(&instr, &servers, &repository_targets());
        assert_eq!(missed.len(), 8);
        let floor = goals
            .iter()
            .find(|goal| goal.what.contains("MSETEX / floor"));
        let floor = floor.map(|goal| (goal.measured.as_str(), goal.holds));
        assert_eq!(floor, Some(("NaN / NaN / NaN / NaN", false)));
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
