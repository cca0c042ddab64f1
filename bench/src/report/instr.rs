//! The instruction bench's sections of docs/BENCHMARKS.md and docs/PROFILE.md.

use crate::instr::{variants, Instr, BIG_CALL, CALLS, FLOOR_PATHS, MALLOC_CONF};
use crate::plan::*;
use crate::targets::goals::Goal;
use msetex_harness::{Target, RENAMED};
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// Mark the instruction bench's sections.
pub const START: &str = "<!-- instr:start -->";
pub const END: &str = "<!-- instr:end -->";

/// `a / b`: overwrite, then new keys, of a server's rows of `values` with `batch` keys a call.
fn both(server: usize, values: Values, batch: usize, f: impl FnMut(Row) -> String) -> String {
    let rows = Setup::plain(server)
        .rows(values)
        .map(|row| Row { batch, ..row });
    rows.map(f).join(" / ")
}

impl Instr {
    /// The section of docs/BENCHMARKS.md, markers included.
    pub fn markdown(&self, servers: &[Target], about: &[(&str, String)], goals: &[Goal]) -> String {
        let mut md = format!("{START}\n## Instructions per key (`make bench-instr`)\n\n");
        for (what, value) in about {
            let _ = writeln!(md, "- {what}: {value}");
        }
        let _ = writeln!(
            md,
            "- how counted: every server under valgrind's callgrind, counting the whole process \
             (reading, parsing, the command, the reply, the event loop) but `serverCron`, which \
             `DEBUG PAUSE-CRON 1` also keeps from changing anything; `callgrind_control -z` \
             before a measured phase, `-d` after it; instructions per key are the dump's total \
             over the keys written. jemalloc: `MALLOC_CONF={MALLOC_CONF}` (no purging on a \
             clock; thread caches larger than a phase's swing, so that no phase pays refills and \
             flushes that depend on the cache's history).\n\
             - a phase: {CALLS} calls of 100 keys (pipelined SETEX: {CALLS} pipelines of 100, \
             each sent in one write), or one call of {BIG_CALL}, alike for every variant. Steady \
             state: fillers first (`floor.bare`: every hash table has the same size, and none \
             resizes during the phase); `overwrite`: the variant writes the keys twice before \
             (a first rewrite moves a value SET embedded out of its key); `new`: the variant \
             writes as many other keys first; then a lookup of every key ends the last resize's \
             incremental rehash.\n\
             - regimes: 32-byte values with short keys (`k:N`) and long keys (`k:` and 12 \
             digits, what `make bench` uses), integers (`{INTEGER_VALUE}`) and 1 KB values (long \
             keys). SET embeds a short key's value on Redis 8.2+ and Valkey 9, a long key's on \
             Valkey 9; Valkey 8.1 embeds neither once the key has a TTL.\n\
             - the floor of a regime: of bench/floor's `floor.events` (per key open, the value \
             in place when of the same length else `RedisModule_StringSet`, the deadline, close, \
             the events, the signal, the change count) and `floor.mset` (MSET through \
             `RedisModule_Call`, with values copied when integers so that MSET encodes them; \
             then per key open, deadline, close, `expire`), the cheaper of those that leave each \
             key with SET EX's OBJECT ENCODING and MEMORY USAGE, as checked on this run for every \
             server, regime and workload (last table). `floor.bare`: `floor.events` without \
             events, signal or count.\n\
             - ratios: MSETEX's instructions per key over the regime's floor's, pipelined \
             SETEX's or the built-in MSETEX's (there the module is `{RENAMED}`), same regime and \
             workload.\n\n\
             ### Targets, in instructions\n\nFigures: short keys / long keys / integers / 1 KB \
             values (the {BIG_CALL}-key call: long keys).\n\n\
             | target | measured | holds |\n| --- | ---: | --- |"
        );
        for goal in goals {
            let holds = if goal.holds { "yes" } else { "**no**" };
            let _ = writeln!(md, "| {} | {} | {holds} |", goal.what, goal.measured);
        }
        let big = (" (one call of 10,000 keys)", BIG_CALL, &REGIMES[1..2]);
        for (title, batch, regimes) in [("", 100, &REGIMES[..]), big] {
            let (ratios, counts): (&[_], &[_]) = match batch {
                100 => (
                    &[None, Some(Variant::Setex), Some(Variant::Builtin)],
                    &[Variant::Floor, Variant::FloorEvents, Variant::FloorMset]
                        .map(Some)
                        .into_iter()
                        .chain([
                            Some(Variant::Mset),
                            Some(Variant::Setex),
                            Some(Variant::Builtin),
                        ])
                        .collect::<Vec<_>>(),
                ),
                _ => (&[None], &FLOOR_PATHS.map(Some)),
            };
            for &values in regimes {
                let _ = writeln!(
                    md,
                    "\n### {}{title}\n\nInstructions per key, overwrite / new.\n\n\
                     | server | MSETEX | floor | MSETEX / {} | {} |\n| --- {}|",
                    values.regime(),
                    ratios
                        .iter()
                        .map(|den| den.map_or("floor", |d| label(d)))
                        .collect::<Vec<_>>()
                        .join(" | MSETEX / "),
                    counts
                        .iter()
                        .map(|v| label(v.unwrap()))
                        .collect::<Vec<_>>()
                        .join(" | "),
                    "| ---: ".repeat(2 + ratios.len() + counts.len())
                );
                for (index, server) in servers.iter().enumerate() {
                    let has = variants(server);
                    let figure = |variant: Option<Variant>, ratio: Option<Option<Variant>>| match (
                        variant.or(ratio.flatten()),
                        ratio,
                    ) {
                        (Some(v), _) if !has.contains(&v) && batch == 100 => "-".into(),
                        (_, Some(den)) => both(index, values, batch, |r| {
                            format!("{:.3}", self.ratio(r, den))
                        }),
                        _ => both(index, values, batch, |r| {
                            let v = variant.or_else(|| self.floor(r));
                            v.map_or("-".into(), |v| format!("{:.0}", self.count(r, v)))
                        }),
                    };
                    let mut row = vec![figure(Some(Variant::Module), None), figure(None, None)];
                    row.extend(ratios.iter().map(|den| figure(None, Some(*den))));
                    row.extend(counts.iter().map(|v| figure(*v, None)));
                    let _ = writeln!(md, "| {} | {} |", server.describe(), row.join(" | "));
                }
            }
        }
        self.fairness_markdown(servers, &mut md);
        md + END
    }

    /// Which floor path each regime takes, and where MSETEX leaves a key other than SET EX.
    fn fairness_markdown(&self, servers: &[Target], md: &mut String) {
        let _ = writeln!(
            md,
            "\n### The floor of each regime, and what a key holds\n\nThe floor path (overwrite \
             / new), and SET EX's OBJECT ENCODING and MEMORY USAGE, which the floor path's key \
             has too.\n\n| server | {} |\n| --- | --- | --- | --- | --- |",
            REGIMES.map(Values::regime).join(" | ")
        );
        let mut differs = Vec::new();
        for (index, server) in servers.iter().enumerate() {
            let cells = REGIMES.map(|values| {
                both(index, values, 100, |row| {
                    let stored = |v| self.stored.get(&(row, v)).cloned().unwrap_or_default();
                    let (set, module) = (stored(None), stored(Some(Variant::Module)));
                    if module != set {
                        let (r, w) = (values.regime(), row.workload.label());
                        let server = server.describe();
                        differs.push(format!("{server}, {r}, {w}: `{module}`, SET EX `{set}`"));
                    }
                    format!("{} ({set})", self.floor(row).map_or("none", label))
                })
            });
            let _ = writeln!(md, "| {} | {} |", server.describe(), cells.join(" | "));
        }
        if !differs.is_empty() {
            let _ = writeln!(
                md,
                "\nWhere MSETEX leaves a key other than SET EX does (OBJECT ENCODING, MEMORY \
                 USAGE); its ratio to the floor then compares unlike results:\n"
            );
            differs
                .iter()
                .for_each(|line| md.push_str(&format!("- {line}\n")));
        }
    }

    /// The section of docs/PROFILE.md: where the instructions above the floor go, on every server
    /// with a `missed` row (MSETEX / floor above its target), from callgrind_annotate.
    pub fn profile_markdown(&self, servers: &[Target], missed: &[Row]) -> String {
        let mut md = format!(
            "{START}\n## Instructions above the floor (`make bench-instr`)\n\nFrom \
             callgrind_annotate of the measured phases, per key, on every server where MSETEX / \
             floor misses its target, in the regimes and workloads that miss it (overwrite / \
             new; `-`: the target holds). First the functions whose own instructions (callees \
             left out) differ most between MSETEX and its floor, MSETEX's minus the floor's \
             (all such differences add up to the whole distance); then the module's own \
             functions with their callees.\n"
        );
        // Own instructions (MSETEX's minus the floor's), or MSETEX's with callees.
        let figure = |row: Row, function: &str, inclusive: bool| {
            let find = |variant| {
                let list = self
                    .profiles
                    .get(&(row, variant))
                    .map(Vec::as_slice)
                    .unwrap_or_default();
                let found = list.iter().find(|(name, ..)| name == function);
                found.map_or(0.0, |(_, own, incl)| if inclusive { *incl } else { *own })
            };
            match self.floor(row) {
                Some(_) if inclusive => find(Variant::Module),
                Some(floor) => find(Variant::Module) - find(floor),
                None => f64::NAN,
            }
        };
        for (index, server) in servers.iter().enumerate() {
            let rows: Vec<&Row> = missed
                .iter()
                .filter(|row| row.setup.server == index)
                .collect();
            let mut functions = BTreeSet::new();
            for &&row in &rows {
                let profiles = [Variant::Module, Variant::FloorEvents, Variant::FloorMset];
                let profiles =
                    profiles.map(|v| self.profiles.get(&(row, v)).cloned().unwrap_or_default());
                let mut names: Vec<String> = profiles
                    .concat()
                    .into_iter()
                    .map(|(name, ..)| name)
                    .collect();
                names.sort();
                names.dedup();
                for inclusive in [false, true] {
                    names.retain(|name| !inclusive || name.starts_with("msetex::"));
                    let by = |name: &String| -figure(row, name, inclusive).abs();
                    names.sort_by(|a, b| by(a).total_cmp(&by(b)));
                    functions.extend(
                        names
                            .iter()
                            .take(6 - inclusive as usize)
                            .map(|n| (inclusive, n.clone())),
                    );
                }
            }
            if rows.is_empty() {
                continue;
            }
            let _ = writeln!(
                md,
                "\n### {}\n\n| function | {} |\n| --- | ---: | ---: | ---: | ---: |",
                server.describe(),
                REGIMES.map(Values::regime).join(" | ")
            );
            for (inclusive, function) in &functions {
                let values = REGIMES.map(|values| {
                    both(index, values, 100, |row| match rows.contains(&&row) {
                        false => "-".into(),
                        true if *inclusive => format!("{:.0}", figure(row, function, true)),
                        true => format!("{:+.0}", figure(row, function, false)),
                    })
                });
                let callees = if *inclusive { ", with callees" } else { "" };
                let _ = writeln!(md, "| `{function}`{callees} | {} |", values.join(" | "));
            }
        }
        md + END
    }
}

/// A variant's column title.
fn label(variant: Variant) -> &'static str {
    match variant {
        Variant::Floor => "floor.bare",
        Variant::FloorEvents => "floor.events",
        Variant::FloorMset => "floor.mset",
        Variant::Mset => "MSET",
        Variant::Setex => "SETEX pipelined",
        Variant::Builtin => "built-in",
        _ => "MSETEX",
    }
}
