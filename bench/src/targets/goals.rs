//! The verdicts: which target of docs/bench-targets.txt applies to which
//! row and server, the figure measured, and whether it holds. The order of
//! the list is the order of the "Targets" table.

use super::Comparison::{self, AtMost, Within};
use super::Targets;
use crate::plan::*;
use crate::report::Report;
use crate::run::experiments::BigCall;
use crate::statistics::Spread;
use msetex_harness::{Product, Replicate, Target};

/// Every target the report needs, with its comparison: the file must hold
/// exactly these.
pub const NAMES: &[(&str, Comparison)] = &[
    ("each.no-persistence.msetex/setex.overwrite", AtMost),
    ("each.no-persistence.msetex/setex.fresh", AtMost),
    ("each.replica-msetex.msetex/setex.overwrite", AtMost),
    ("each.replica-msetex.msetex/setex.fresh", AtMost),
    (
        "no-builtin.no-persistence.msetex/floor-events.overwrite",
        AtMost,
    ),
    (
        "no-builtin.no-persistence.msetex/floor-events.fresh",
        AtMost,
    ),
    ("redis62.no-persistence.msetex/setex.overwrite", AtMost),
    ("redis62.no-persistence.msetex/setex.fresh", AtMost),
    (
        "redis62.no-persistence.msetex/floor-events.overwrite",
        AtMost,
    ),
    ("redis62.no-persistence.msetex/floor-events.fresh", AtMost),
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
    (
        "main.one-call-10000-keys.msetex/floor-events.overwrite",
        AtMost,
    ),
    ("main.one-call-10000-keys.msetex/floor-events.fresh", AtMost),
    ("main.memory-per-key.msetex/set-ex", Within),
    ("main.memory-per-key.integer.msetex/set-ex", Within),
    ("main.acl-load-2000-users.module/without", AtMost),
    ("failed-calls-and-runs", AtMost),
];

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
        Values::Small => "",
        Values::Integer => ".integer",
        Values::Large => ".large",
    }
}

/// `1.04x (0.98–1.10, 7 rounds)`: a distance from the floor, with its
/// range over the rounds.
fn floor_figure(spread: Spread) -> String {
    match spread.rounds {
        0 => format!("{:.2}x", spread.median),
        1 => format!("{:.2}x (1 round)", spread.median),
        rounds => format!(
            "{:.2}x ({}, {rounds} rounds)",
            spread.median,
            spread.range()
        ),
    }
}

/// Rows of batch 100 and 32-byte values on `server`, both workloads.
fn rows(server: usize, persistence: Persistence, replicate: Replicate) -> [Row; 2] {
    Workload::BOTH.map(|workload| Row {
        setup: Setup {
            server,
            form: Form::Ttl,
            persistence,
            replicate,
        },
        workload,
        values: Values::Small,
        batch: 100,
    })
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
        let none = |values| {
            self.report
                .main_row(Persistence::None, Replicate::Set, values)
        };
        let (small, integer) = (none(Values::Small), none(Values::Integer));
        let replica = self
            .report
            .main_row(Persistence::Replica, Replicate::Msetex, Values::Small);
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
        self.big_call();
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

    /// The module's distance from the floor with events in both rows, each
    /// at most its target `<name>.<workload>`; the figure with its range
    /// over the rounds.
    fn floor(&mut self, what: &str, rows: [Row; 2], name: &str) {
        for row in rows {
            let workload = row.workload.label();
            let limit = self.targets.at_most(&format!("{name}.{workload}"));
            let spread = self
                .report
                .spread(row, Variant::Module, Variant::FloorEvents);
            self.push_floor(
                format!("{what}, {workload}: at most {}x", short(limit)),
                spread,
                limit,
            );
        }
    }

    fn push_floor(&mut self, what: String, spread: Spread, limit: f64) {
        self.list.push(Goal {
            what,
            measured: floor_figure(spread),
            holds: spread.median <= limit,
        });
    }

    // Every server: below pipelined SETEX (from Redis 7.0 on, without
    // persistence and with a replica in REPLICATE MSETEX mode; Redis 6.2
    // without persistence, its own target), and close to the module API's
    // floor with events where the server has no built-in MSETEX (Redis 6.2,
    // whose module writes every key with SET, its own target).
    fn every_server(&mut self, servers: &[Target]) {
        for (index, server) in servers.iter().enumerate() {
            let name = server.describe();
            let none = rows(index, Persistence::None, Replicate::Set);
            let what = format!("{name}, no persistence, MSETEX / floor + events");
            if server.product == Product::Redis && server.version < (7, 0, 0) {
                self.both(
                    &format!("{name}, no persistence, MSETEX / pipelined SETEX"),
                    none,
                    Variant::Setex,
                    "redis62.no-persistence.msetex/setex",
                );
                self.floor(&what, none, "redis62.no-persistence.msetex/floor-events");
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
            if !server.has_builtin_msetex() {
                self.floor(&what, none, "no-builtin.no-persistence.msetex/floor-events");
            }
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
            for ttl_row in self
                .report
                .main_row(Persistence::None, Replicate::Set, values)
            {
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

    /// One call of 10,000 keys, on the server under test: close to one
    /// `floor.events` call of them.
    fn big_call(&mut self) {
        let main = self.main.clone();
        let calls: Vec<BigCall> = self
            .report
            .big_calls
            .iter()
            .filter(|(index, _)| *index == 0)
            .map(|(_, call)| *call)
            .collect();
        for call in calls {
            for (workload, keys, spread) in [
                (Workload::Overwrite, "refreshing", call.refresh_floor),
                (Workload::Fresh, "writing new", call.new_floor),
            ] {
                let limit = self.targets.at_most(&format!(
                    "main.one-call-10000-keys.msetex/floor-events.{}",
                    workload.label()
                ));
                self.push_floor(
                    format!(
                        "{main}, one call {keys} 10,000 keys: server time at most {}x one floor.events call of them",
                        short(limit)
                    ),
                    spread,
                    limit,
                );
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
    use crate::run::experiments::BigCall;

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
        let spread = |median| Spread {
            median,
            min: median - 0.05,
            max: median + 0.05,
            rounds: 7,
        };
        let call = BigCall {
            new_us: (1.0, 1.0),
            refresh_us: (1.0, 1.0),
            new_ratio: 1.0,
            refresh_ratio: 1.2,
            floor_us: (1.0, 1.0),
            new_floor: spread(1.0),
            refresh_floor: spread(1.15),
        };
        report.big_calls = vec![(0, call), (2, call)];
        report.memory.rows = vec![(Values::Small, 101.0, 100.0), (Values::Integer, 80.0, 80.0)];
        (report, servers)
    }

    #[test]
    fn the_table_is_the_one_of_the_hard_coded_limits() {
        let (report, servers) = everything();
        let goals = goals(&report, &servers, &repository_targets());
        let what: Vec<&str> = goals.iter().map(|goal| goal.what.as_str()).collect();
        let main = "Redis 7.0.15";
        let expected = [
            format!("{main}, no persistence, MSETEX / pipelined SETEX, overwrite: at most 0.99x"),
            format!("{main}, no persistence, MSETEX / pipelined SETEX, fresh: at most 0.99x"),
            format!("{main}, one replica, REPLICATE MSETEX, MSETEX / pipelined SETEX, overwrite: at most 0.99x"),
            format!("{main}, one replica, REPLICATE MSETEX, MSETEX / pipelined SETEX, fresh: at most 0.99x"),
            format!("{main}, no persistence, MSETEX / floor + events, overwrite: at most 1.1x"),
            format!("{main}, no persistence, MSETEX / floor + events, fresh: at most 1.05x"),
            // Redis 6.2: targets of its own, without a replica.
            "Redis 6.2.16, no persistence, MSETEX / pipelined SETEX, overwrite: at most 0.99x".into(),
            "Redis 6.2.16, no persistence, MSETEX / pipelined SETEX, fresh: at most 0.99x".into(),
            "Redis 6.2.16, no persistence, MSETEX / floor + events, overwrite: at most 1.25x".into(),
            "Redis 6.2.16, no persistence, MSETEX / floor + events, fresh: at most 1.25x".into(),
            // A built-in MSETEX: no floor target.
            "Redis 8.6.3, no persistence, MSETEX / pipelined SETEX, overwrite: at most 0.99x".into(),
            "Redis 8.6.3, no persistence, MSETEX / pipelined SETEX, fresh: at most 0.99x".into(),
            "Redis 8.6.3, one replica, REPLICATE MSETEX, MSETEX / pipelined SETEX, overwrite: at most 0.99x".into(),
            "Redis 8.6.3, one replica, REPLICATE MSETEX, MSETEX / pipelined SETEX, fresh: at most 0.99x".into(),
            "Valkey 8.1.1, no persistence, MSETEX / pipelined SETEX, overwrite: at most 0.99x".into(),
            "Valkey 8.1.1, no persistence, MSETEX / pipelined SETEX, fresh: at most 0.99x".into(),
            "Valkey 8.1.1, one replica, REPLICATE MSETEX, MSETEX / pipelined SETEX, overwrite: at most 0.99x".into(),
            "Valkey 8.1.1, one replica, REPLICATE MSETEX, MSETEX / pipelined SETEX, fresh: at most 0.99x".into(),
            "Valkey 8.1.1, no persistence, MSETEX / floor + events, overwrite: at most 1.1x".into(),
            "Valkey 8.1.1, no persistence, MSETEX / floor + events, fresh: at most 1.05x".into(),
            "Valkey 9.1.2, no persistence, MSETEX / pipelined SETEX, overwrite: at most 0.99x".into(),
            "Valkey 9.1.2, no persistence, MSETEX / pipelined SETEX, fresh: at most 0.99x".into(),
            "Valkey 9.1.2, one replica, REPLICATE MSETEX, MSETEX / pipelined SETEX, overwrite: at most 0.99x".into(),
            "Valkey 9.1.2, one replica, REPLICATE MSETEX, MSETEX / pipelined SETEX, fresh: at most 0.99x".into(),
            format!("{main}, no persistence, integer values, MSETEX / MSET, overwrite: at most 2.5x"),
            format!("{main}, no persistence, integer values, MSETEX / MSET, fresh: at most 2.5x"),
            format!("{main}, one replica, REPLICATE MSETEX, MSETEX / MSET, overwrite: at most 1.8x"),
            format!("{main}, one replica, REPLICATE MSETEX, MSETEX / MSET, fresh: at most 2.3x"),
            "Redis 8.6.3, one replica, REPLICATE MSETEX, module / built-in MSETEX, overwrite: at most 1x".into(),
            "Redis 8.6.3, one replica, REPLICATE MSETEX, module / built-in MSETEX, fresh: at most 1x".into(),
            "Valkey 9.1.2, one replica, REPLICATE MSETEX, module / built-in MSETEX, overwrite: at most 1x".into(),
            "Valkey 9.1.2, one replica, REPLICATE MSETEX, module / built-in MSETEX, fresh: at most 1x".into(),
            format!("{main}, no persistence, MSETEX / Lua SET EX loop, overwrite: at most 0.33x"),
            format!("{main}, no persistence, MSETEX / Lua SET EX loop, fresh: at most 0.5x"),
            format!("{main}, no persistence, MSETEX / pipelined SETEX, overwrite: at most 0.99x"),
            format!("{main}, no persistence, MSETEX / pipelined SETEX, fresh: at most 0.99x"),
            format!("{main}, no persistence, 32 B overwrite: NUMKEYS form / TTL form, server time per key, within 10% of 1"),
            format!("{main}, no persistence, 32 B fresh: NUMKEYS form / TTL form, server time per key, within 10% of 1"),
            format!("{main}, no persistence, integer overwrite: NUMKEYS form / TTL form, server time per key, within 10% of 1"),
            format!("{main}, no persistence, integer fresh: NUMKEYS form / TTL form, server time per key, within 10% of 1"),
            format!("{main}, one call refreshing 10,000 keys: server time at most 1.1x one floor.events call of them"),
            format!("{main}, one call writing new 10,000 keys: server time at most 1.05x one floor.events call of them"),
            format!("{main}, memory per key, 32 B values: within 5% of SET EX"),
            format!("{main}, memory per key, integer values: within 5% of SET EX"),
            format!("{main}, ACL LOAD of 2,000 users with the module: at most 1.2x without"),
            "zero failed calls or runs".into(),
        ];
        assert_eq!(
            what,
            expected.iter().map(String::as_str).collect::<Vec<_>>()
        );
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
            verdict("one call"),
            [
                ("1.15x (1.10–1.20, 7 rounds)".to_owned(), false),
                ("1.00x (0.95–1.05, 7 rounds)".to_owned(), true)
            ]
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
        report.big_calls[0].1.refresh_floor.median = 1.7;
        let text: String = std::fs::read_to_string(super::super::default_path())
            .unwrap()
            .lines()
            .map(|line| match line.split_whitespace().next() {
                Some("main.one-call-10000-keys.msetex/floor-events.overwrite") => {
                    "main.one-call-10000-keys.msetex/floor-events.overwrite at-most 1.75\n"
                        .to_owned()
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
            .find(|goal| goal.what.contains("refreshing"))
            .unwrap();
        assert!(
            call.what.contains("at most 1.75x") && call.holds,
            "{}",
            call.what
        );
    }
}
