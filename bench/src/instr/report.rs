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
    let rows = Setup::plain(server).rows(values);
    rows.map(|row| Row { batch, ..row }).map(f).join(" / ")
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
             over the keys written. So that the same phase counts the same from one run to the \
             next: jemalloc with `MALLOC_CONF={MALLOC_CONF}` (no purging on a clock; thread \
             caches larger than a phase's swing, so that no phase pays refills and flushes that \
             depend on the cache's history), and /dev/urandom read as a fixed file (an \
             `LD_PRELOAD` of `fopen`): every run seeds the hash tables, the command table's too, \
             alike. Nothing else may run on the machine meanwhile: contention changes how the \
             server reads a pipelined write, and with it the count (3.5% in one run).\n\
             - a phase: {CALLS} calls of 100 keys (pipelined SETEX: {CALLS} pipelines of 100, \
             each sent in one write), or one call of {BIG_CALL}, alike for every variant. Steady \
             state: fillers first (`floor.bare`: every hash table has the same size, and none \
             resizes during the phase); `overwrite`: the variant writes the keys twice before \
             (a first rewrite moves a value SET embedded out of its key); `new`: the variant \
             writes as many other keys first; then a lookup of every key ends the last resize's \
             incremental rehash. Each row starts with a phase of its first variant, which is then \
             measured again: every phase follows the FLUSHALL of a whole phase of its row (the \
             first had followed the last row's, with half as many values of its size cached).\n\
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
        super::goals_table(goals, &mut md);
        // Columns: a variant's instructions per key (None: the floor's), or MSETEX's over it.
        use Variant::*;
        let counts =
            [Floor, FloorEvents, FloorMset, Mset, Setex, Builtin].map(|v| (false, Some(v)));
        let ratios = [None, Some(Setex), Some(Builtin)].map(|den| (true, den));
        let head = [(false, Some(Module)), (false, None)];
        let all: Vec<_> = head.into_iter().chain(ratios).chain(counts).collect();
        let big: Vec<_> = all
            .iter()
            .copied()
            .filter(|(_, v)| v.is_none_or(|v| v == Module || FLOOR_PATHS.contains(&v)))
            .collect();
        for (title, batch, regimes, columns) in [
            ("", 100, &REGIMES[..], all),
            (" (one call of 10,000 keys)", BIG_CALL, &REGIMES[1..2], big),
        ] {
            for &values in regimes {
                let head = |&(ratio, v): &(bool, Option<Variant>)| {
                    let over = if ratio { "MSETEX / " } else { "" };
                    format!("{over}{}", v.map_or("floor", label))
                };
                let titles: Vec<String> = columns.iter().map(head).collect();
                let bars = "| ---: ".repeat(columns.len());
                let regime = format!("\n### {}{title}\n\n", values.regime());
                let _ = writeln!(md, "{regime}Instructions per key, overwrite / new.\n");
                let _ = writeln!(md, "| server | {} |\n| --- {bars}|", titles.join(" | "));
                for (index, server) in servers.iter().enumerate() {
                    let has = variants(server);
                    let cells = columns.iter().map(|&(ratio, v)| match (ratio, v) {
                        (_, Some(v)) if !has.contains(&v) => "-".into(),
                        (true, den) => both(index, values, batch, |r| {
                            format!("{:.3}", self.ratio(r, den))
                        }),
                        (false, v) => both(index, values, batch, |r| {
                            let v = v.or_else(|| self.floor(r));
                            v.map_or("-".into(), |v| format!("{:.0}", self.count(r, v)))
                        }),
                    });
                    let cells: Vec<String> = cells.collect();
                    let _ = writeln!(md, "| {} | {} |", server.describe(), cells.join(" | "));
                }
            }
        }
        self.fairness_markdown(servers, &mut md);
        md + END
    }

    /// Which floor path each regime takes, and what a key holds after SET EX (and after MSETEX
    /// where that differs).
    fn fairness_markdown(&self, servers: &[Target], md: &mut String) {
        let _ = writeln!(
            md,
            "\n### The floor of each regime, and what a key holds\n\nThe floor path (overwrite \
             / new), SET EX's OBJECT ENCODING and MEMORY USAGE, which the floor path's key has \
             too, and MSETEX's where they differ (its ratio to the floor then compares unlike \
             results).\n\n| server | {} |\n| --- | --- | --- | --- | --- |",
            REGIMES.map(Values::regime).join(" | ")
        );
        for (index, server) in servers.iter().enumerate() {
            let cells = REGIMES.map(|values| {
                both(index, values, 100, |row| {
                    let stored = |v| self.stored.get(&(row, v)).cloned().unwrap_or_default();
                    let (set, module) = (stored(None), stored(Some(Variant::Module)));
                    let floor = self.floor(row).map_or("none", label);
                    match module == set {
                        true => format!("{floor} ({set})"),
                        false => format!("{floor} ({set}; MSETEX: {module})"),
                    }
                })
            });
            let _ = writeln!(md, "| {} | {} |", server.describe(), cells.join(" | "));
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
        if missed.is_empty() {
            md.push_str("\nIn this run every MSETEX / floor target holds: nothing to show.\n");
        }
        // Own instructions (MSETEX's minus the floor's), or MSETEX's with callees.
        let figure = |row: Row, function: &str, inclusive: bool| {
            let find = |variant| {
                let list = self
                    .profiles
                    .get(&(row, variant))
                    .cloned()
                    .unwrap_or_default();
                let found = list.into_iter().find(|(name, ..)| name == function);
                found.map_or(0.0, |(_, own, incl)| if inclusive { incl } else { own })
            };
            match self.floor(row) {
                Some(_) if inclusive => find(Variant::Module),
                Some(floor) => find(Variant::Module) - find(floor),
                None => f64::NAN,
            }
        };
        for (index, server) in servers.iter().enumerate() {
            let mut rows = missed.to_vec();
            rows.retain(|row| row.setup.server == index);
            let mut functions = BTreeSet::new();
            for &row in &rows {
                let profile = |v| self.profiles.get(&(row, v)).cloned().unwrap_or_default();
                let profiles = [Variant::Module, Variant::FloorEvents, Variant::FloorMset];
                let names = profiles
                    .map(profile)
                    .concat()
                    .into_iter()
                    .map(|(name, ..)| name);
                let mut names: Vec<String> = names.collect::<BTreeSet<_>>().into_iter().collect();
                for inclusive in [false, true] {
                    names.retain(|name| !inclusive || name.starts_with("msetex::"));
                    let by = |name: &String| -figure(row, name, inclusive).abs();
                    names.sort_by(|a, b| by(a).total_cmp(&by(b)));
                    let top = names.iter().take(6 - inclusive as usize);
                    functions.extend(top.map(|name| (inclusive, name.clone())));
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
                    both(index, values, 100, |row| match rows.contains(&row) {
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
