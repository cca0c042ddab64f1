//! The instruction bench's section of docs/BENCHMARKS.md and of docs/PROFILE.md.

use crate::instr::{variants, Cell, Instr, BIG_CALL, FLOOR_PATHS};
use crate::plan::*;
use crate::targets::goals::Goal;
use msetex_harness::{Target, RENAMED};
use std::fmt::Write as _;

/// Marks the instruction bench's section of docs/BENCHMARKS.md and docs/PROFILE.md.
pub const START: &str = "<!-- instr:start -->";
pub const END: &str = "<!-- instr:end -->";

/// A floor path's short name.
fn path(variant: Option<Variant>) -> &'static str {
    match variant {
        Some(Variant::FloorEvents) => "floor.events",
        Some(Variant::FloorMset) => "floor.mset",
        _ => "none",
    }
}

/// `a / b`, overwrite then new keys.
fn both(f: impl FnMut(Workload) -> String) -> String {
    Workload::BOTH.map(f).join(" / ")
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
            "- how counted: each server runs under valgrind's callgrind (`--toggle-collect=\
             serverCron`: the timer's own work left out, and `DEBUG PAUSE-CRON 1` so that it \
             changes nothing either); `callgrind_control -z` before a measured phase and `-d` \
             after it; the figure is the dump's total (the whole process: reading, parsing, \
             the command, the reply, the event loop) divided by the keys written. jemalloc runs \
             with `{}` set through `MALLOC_CONF`: no purging on a clock and thread caches \
             larger than a phase's swing, so that allocations cost their fast path, as in a \
             warm server, not refills and flushes that depend on the cache's history.\n\
             - a phase: {} calls of 100 keys (pipelined SETEX: {} pipelines of 100 commands, \
             each sent in one write), or one call of {BIG_CALL} keys, the same for every \
             variant. Steady state: fillers first (`floor.bare`, so that every hash table of \
             every server has the same size and none resizes during the phase), then \
             `overwrite`: the variant writes the same keys twice before the measured write \
             (the first rewrite moves a value SET embedded out of its key), `new`: the variant \
             writes as many other new keys first; then one lookup of every key, so that the \
             last resize's incremental rehash is over.\n\
             - regimes: short keys (`k:N`) and long keys (`k:` and 12 digits, what `make \
             bench` uses) with 32-byte values, integers (`{INTEGER_VALUE}`, long keys), 1 KB \
             values (long keys). SET embeds a short key's value in the key on Redis 8.2+ and \
             Valkey 9, a long key's on Valkey 9; Valkey 8.1 embeds neither once the key has a \
             TTL.\n\
             - the floor of a regime: the cheaper of two module-API paths (bench/floor), among \
             those that leave each key as `SET key value EX` does, checked on this run with \
             OBJECT ENCODING and MEMORY USAGE on every server, regime and workload (table \
             below): `floor.events` (per key open, in place when the value has the same \
             length, else `RedisModule_StringSet`, the deadline, close, the events and signal, \
             the change count) or `floor.mset` (the server's MSET through `RedisModule_Call`, \
             values copied when they are integers so that MSET encodes them as SET does, then \
             per key open, deadline, close, `expire`). `floor.bare` is `floor.events` without \
             events, signal or change count.\n\
             - ratios: instructions per key of MSETEX over the same figure of the regime's \
             floor, of pipelined SETEX and of the built-in MSETEX (where the server has one, the \
             module loaded as `{RENAMED}`), in the same regime and workload.\n",
            crate::instr::MALLOC_CONF,
            crate::instr::CALLS,
            crate::instr::CALLS,
        );
        let _ = writeln!(
            md,
            "### Targets, in instructions\n\nEach target on each server; the figures are \
             short keys / long keys / integers / 1 KB values (the 10,000-key call: long keys).\n\n\
             | target | measured | holds |\n| --- | ---: | --- |"
        );
        for goal in goals {
            let holds = if goal.holds { "yes" } else { "**no**" };
            let _ = writeln!(md, "| {} | {} | {holds} |", goal.what, goal.measured);
        }
        for regime in REGIMES {
            self.regime_markdown(servers, regime, &mut md);
        }
        let _ = writeln!(
            md,
            "\n### One call of {BIG_CALL} keys\n\nLong keys, 32-byte values; overwrite / new.\n\n\
             | server | MSETEX | floor | MSETEX / floor | floor.events | floor.mset |\n\
             | --- | ---: | ---: | ---: | ---: | ---: |"
        );
        let long = REGIMES[1];
        for (index, server) in servers.iter().enumerate() {
            let cell = |workload, variant| (index, BIG_CALL, long, workload, variant);
            let count = |variant: Variant| both(|w| format!("{:.0}", self.count(cell(w, variant))));
            let floor = both(|w| match self.floor(cell(w, Variant::Module)) {
                Some(floor) => format!("{:.0}", self.count(cell(w, floor))),
                None => "-".into(),
            });
            let ratio = both(|w| format!("{:.3}", self.ratio(cell(w, Variant::Module), None)));
            let [events, mset] = FLOOR_PATHS.map(count);
            let module = count(Variant::Module);
            let name = server.describe();
            let _ = writeln!(
                md,
                "| {name} | {module} | {floor} | {ratio} | {events} | {mset} |"
            );
        }
        self.fairness_markdown(servers, &mut md);
        md.push_str(END);
        md
    }

    /// One regime: every variant's instructions per key and the ratios, on every server.
    fn regime_markdown(&self, servers: &[Target], regime: Regime, md: &mut String) {
        let _ = writeln!(
            md,
            "\n### {}\n\nInstructions per key, overwrite / new.\n\n\
             | server | MSETEX | floor | MSETEX / floor | MSETEX / SETEX | MSETEX / built-in \
             | floor.bare | floor.events | floor.mset | MSET | SETEX pipelined | built-in |\n\
             | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
            regime.label()
        );
        for (index, server) in servers.iter().enumerate() {
            let cell = |workload, variant| (index, 100, regime, workload, variant);
            let has = variants(server);
            let count = |variant| match has.contains(&variant) {
                true => both(|w| format!("{:.0}", self.count(cell(w, variant)))),
                false => "-".into(),
            };
            let ratio = |den: Option<Variant>| match den.is_none_or(|den| has.contains(&den)) {
                true => both(|w| format!("{:.3}", self.ratio(cell(w, Variant::Module), den))),
                false => "-".into(),
            };
            let floor = both(|w| match self.floor(cell(w, Variant::Module)) {
                Some(floor) => format!("{:.0}", self.count(cell(w, floor))),
                None => "-".into(),
            });
            let _ = writeln!(
                md,
                "| {} | {} | {floor} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                server.describe(),
                count(Variant::Module),
                ratio(None),
                ratio(Some(Variant::Setex)),
                ratio(Some(Variant::Builtin)),
                count(Variant::Floor),
                count(Variant::FloorEvents),
                count(Variant::FloorMset),
                count(Variant::Mset),
                count(Variant::Setex),
                count(Variant::Builtin),
            );
        }
    }

    /// Which floor path each regime takes, and where MSETEX leaves a key other than SET EX.
    fn fairness_markdown(&self, servers: &[Target], md: &mut String) {
        let _ = writeln!(
            md,
            "\n### The floor of each regime, and what a key holds\n\nThe floor path of each \
             regime (overwrite / new): the cheaper of those that leave the key with SET EX's \
             OBJECT ENCODING and MEMORY USAGE (shown), checked on this run.\n\n\
             | server | {} |\n| --- | --- | --- | --- | --- |",
            REGIMES.map(Regime::label).join(" | ")
        );
        let mut differs = Vec::new();
        for (index, server) in servers.iter().enumerate() {
            let cells = REGIMES.map(|regime| {
                both(|workload| {
                    let stored = |v| self.stored.get(&(index, regime, workload, v)).cloned();
                    let set = stored(None).unwrap_or_default();
                    if let Some(module) = stored(Some(Variant::Module)).filter(|m| *m != set) {
                        differs.push(format!(
                            "{}, {}, {}: MSETEX leaves `{module}`, SET EX `{set}`",
                            server.describe(),
                            regime.label(),
                            workload.label()
                        ));
                    }
                    let cell: Cell = (index, 100, regime, workload, Variant::Module);
                    format!("{} ({set})", path(self.floor(cell)))
                })
            });
            let _ = writeln!(md, "| {} | {} |", server.describe(), cells.join(" | "));
        }
        if !differs.is_empty() {
            let _ = writeln!(
                md,
                "\nWhere MSETEX's key differs from SET EX's (OBJECT ENCODING, MEMORY USAGE; \
                 the ratios above then compare it with a floor that does more):\n"
            );
            for line in differs {
                let _ = writeln!(md, "- {line}");
            }
        }
    }

    /// The section of docs/PROFILE.md: where the instructions above the floor go, for every
    /// regime and workload whose target `missed` names.
    pub fn profile_markdown(&self, servers: &[Target], missed: &[Cell]) -> String {
        let mut md = format!(
            "{START}\n## Instructions above the floor (`make bench-instr`)\n\nFor every regime \
             and workload whose MSETEX / floor target is missed: from callgrind_annotate of the \
             measured phase's dump, instructions per key by function (`self`: in the function \
             itself; `with callees`: inclusive), MSETEX against its floor. The first table \
             lists the functions whose own instructions differ most; their differences add up \
             to the whole difference. The second lists the module's functions with their \
             callees.\n"
        );
        for &(server, _, regime, workload, _) in missed {
            let cell = (server, 100, regime, workload, Variant::Module);
            let (Some(floor), Some(module)) = (
                self.floor(cell),
                self.profiles
                    .get(&(server, regime, workload, Variant::Module)),
            ) else {
                continue;
            };
            let base = &self.profiles[&(server, regime, workload, floor)];
            let own = |list: &[(String, f64, f64)], f: &str| {
                list.iter()
                    .find(|(name, ..)| name == f)
                    .map_or(0.0, |(_, own, _)| *own)
            };
            let mut names: Vec<&String> = module.iter().chain(base).map(|(n, ..)| n).collect();
            names.sort();
            names.dedup();
            let mut diffs: Vec<(f64, &String)> = names
                .into_iter()
                .map(|n| (own(module, n) - own(base, n), n))
                .collect();
            diffs.sort_by(|a, b| b.0.abs().total_cmp(&a.0.abs()));
            let (a, b) = (
                self.count(cell),
                self.count((server, 100, regime, workload, floor)),
            );
            let _ = writeln!(
                md,
                "\n### {}, {}, {}: MSETEX {a:.0}, {} {b:.0} (+{:.0} per key, {:.3}x)\n\n\
                 | function (self) | MSETEX | floor | difference |\n| --- | ---: | ---: | ---: |",
                servers[server].describe(),
                regime.label(),
                workload.label(),
                path(Some(floor)),
                a - b,
                a / b
            );
            for (diff, name) in diffs.iter().take(12) {
                let (m, f) = (own(module, name), own(base, name));
                let _ = writeln!(md, "| `{name}` | {m:.0} | {f:.0} | {diff:+.0} |");
            }
            let _ = writeln!(
                md,
                "\n| module function (with callees) | MSETEX |\n| --- | ---: |"
            );
            let mut mine: Vec<_> = module
                .iter()
                .filter(|(n, ..)| n.starts_with("msetex::"))
                .collect();
            mine.sort_by(|x, y| y.2.total_cmp(&x.2));
            for (name, _, incl) in mine.iter().take(10) {
                let _ = writeln!(md, "| `{name}` | {incl:.0} |");
            }
        }
        md.push_str(END);
        md
    }
}
