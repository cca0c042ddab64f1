//! What the instruction bench measured, written out: the verdicts (which target of
//! docs/bench-targets.txt applies to which figure, in the order of the Targets table), its
//! section of docs/BENCHMARKS.md and of docs/PROFILE.md, and README.md's cost block.

use super::{Instr, CALLS, MALLOC_CONF, RELOADED};
use crate::plan::*;
use crate::targets::{bound, goals_table, short, Goal, Targets};
use msetex_harness::{Product, Replicate, Target};
use std::collections::BTreeSet;
use std::fmt::Write as _;
use Figure::*;

/// A table's lines: label, server, rows (overwrite, new keys).
type Lines<'a> = Vec<(String, &'a Target, [Row; 2])>;

/// Mark the instruction bench's sections, and README.md's block.
pub const START: &str = "<!-- instr:start -->";
pub const END: &str = "<!-- instr:end -->";
const README: (&str, &str) = ("<!-- bench:start -->", "<!-- bench:end -->");

/// `a / b`: `f` of the overwrite row, then of the new keys' row.
fn both(rows: [Row; 2], f: impl FnMut(Row) -> String) -> String {
    rows.map(f).join(" / ")
}

/// A figure of a row: a variant's instructions per key (None: the floor's), MSETEX's over them,
/// what applying a variant's stream cost (replica, AOF load) and MSETEX's over SETEX's, the share
/// of MSETEX's reading and declaring keys.
#[derive(Clone, Copy, PartialEq)]
enum Figure {
    Count(Option<Variant>),
    Over(Option<Variant>),
    Applied(Variant),
    AppliedOver,
    Keys,
    /// `Keys` less the server's filter API the filter calls.
    KeysBeyondApi,
    /// Of MSETEX's reading and declaring keys: the filter's, the server's, `msetex::keys` else;
    /// and of the filter's, the filter API.
    Part(usize),
}

impl Figure {
    fn title(self) -> String {
        let name = |v: Option<Variant>| v.map_or("floor", label);
        match self {
            Count(v) => name(v).into(),
            Over(v) => format!("MSETEX / {}", name(v)),
            Applied(v) => format!("applying {}'s", name(Some(v))),
            AppliedOver => "MSETEX's / SETEX's".into(),
            Keys => "keys / call".into(),
            KeysBeyondApi => "keys / call, less the filter API".into(),
            Part(i) => [
                "filter",
                "key extraction",
                "`msetex::keys` elsewhere",
                "of the filter: the filter API",
            ][i]
                .into(),
        }
    }
}

impl Instr {
    fn figure(&self, figure: Figure, row: Row) -> f64 {
        let applied = |v| *self.applied.get(&(row, v)).unwrap_or(&f64::NAN);
        match figure {
            Count(v) => v
                .or_else(|| self.floor(row))
                .map_or(f64::NAN, |v| self.count(row, v)),
            Over(v) => self.ratio(row, v),
            Applied(v) => applied(v),
            AppliedOver => applied(Variant::Module) / applied(Variant::Setex),
            Keys | KeysBeyondApi => {
                let api = |k: &[f64; 4]| if figure == Keys { 0.0 } else { k[3] };
                let keys = self
                    .keys
                    .get(&row)
                    .map_or(f64::NAN, |k| k[..3].iter().sum::<f64>() - api(k));
                keys / self.count(row, Variant::Module)
            }
            Part(i) => self.keys.get(&row).map_or(f64::NAN, |k| k[i]),
        }
    }

    /// A figure as the tables print it; `-` where not measured.
    fn cell(&self, figure: Figure, row: Row, server: &Target) -> String {
        let lacks = |v| v == Some(Variant::Builtin) && !server.has_builtin_msetex();
        match (figure, self.figure(figure, row)) {
            (Count(v) | Over(v), _) if lacks(v) => "-".into(),
            (_, value) if value.is_nan() => "-".into(),
            (Count(_) | Applied(_) | Part(_), value) => format!("{value:.0}"),
            (_, value) => format!("{value:.3}"),
        }
    }

    /// Where a key `variant` wrote holds neither SET EX's OBJECT ENCODING nor a MEMORY USAGE
    /// within `tolerance` of SET EX's: the row, what it holds, against SET EX's.
    fn unlike_set(
        &self,
        server: &Target,
        row: Row,
        v: Option<Variant>,
        tolerance: f64,
    ) -> Option<String> {
        let parse = |s: &str| -> Option<(String, f64)> {
            let (encoding, memory) = s.split_once(' ')?;
            Some((encoding.to_owned(), memory.parse().ok()?))
        };
        let (set, held) = (self.stored(row, None)?, self.stored(row, Some(v?))?);
        let ((set_encoding, set_memory), (encoding, memory)) = (parse(set)?, parse(held)?);
        let over = memory / set_memory - 1.0;
        let (label, regime) = (setup_label(server, row.setup), row.values.regime());
        let who = format!(
            "{label}, {regime}, {}, {}",
            row.workload.label(),
            Count(v).title()
        );
        let text = format!("{who}: {held} (SET EX: {set}, {:+.1}%)", over * 100.0);
        (encoding != set_encoding && over.abs() > tolerance).then_some(text)
    }

    /// The call of 100,000 pairs, where measured: out of and in cluster mode, as loaded by
    /// default, then with the AOF and REPLICATE MSETEX.
    fn huge_calls(&self, index: usize) -> Option<[f64; 4]> {
        let counts = huge_rows(index).map(|row| self.counts.get(&(row, Variant::Module)).copied());
        counts
            .into_iter()
            .collect::<Option<Vec<f64>>>()?
            .try_into()
            .ok()
    }

    /// Every instruction target of a server, in the order of the Targets table.
    pub fn goals(&self, targets: &Targets, index: usize, server: &Target, gate: bool) -> Vec<Goal> {
        let mut list = Vec::new();
        let (plain, builtin) = (Setup::plain(index), server.has_builtin_msetex());
        // (setup, regimes, the target's setup part, its ratio): a line per workload. Redis 7.0's
        // module asks the server about each key's ACL rules: floor targets of its own.
        let mut specs = vec![(plain, &REGIMES[..], "", "msetex/floor")];
        specs.push((plain, &REGIMES, "", "msetex/setex"));
        if builtin {
            specs.push((plain, &REGIMES, "", "module/builtin"));
        }
        specs.push((plain, &REGIMES[1..2], "-10000-keys", "msetex/floor"));
        for (setup, values) in instr_setups(index, server, gate).into_iter().skip(1) {
            let per_call = setup_label(server, setup).ends_with("MSETEX");
            let (p, default) = (setup.persistence, setup.replicate == Replicate::Set);
            specs.push(match p {
                Persistence::Cluster => (setup, values, "-cluster", "msetex/setex"),
                _ if per_call => (setup, values, "-replicated-msetex", "msetex/setex"),
                _ => (setup, values, "-replicated-set", "msetex/setex"),
            });
            specs.extend(match p {
                _ if !default => None,
                Persistence::Replica => Some((setup, values, "-replica", "applied/setex")),
                Persistence::Aof => Some((setup, values, "-aof-reload", "applied/setex")),
                _ => Some((setup, values, "-cluster", "keys/call")),
            });
            if builtin && p == Persistence::Cluster {
                specs.push((setup, values, "-cluster", "module/builtin"));
            }
        }
        let who = |ratio: &str| match (ratio, server.product, server.version) {
            ("msetex/floor", Product::Redis, (7, 0, _)) => "redis70",
            ("msetex/floor", ..) => "others",
            ("module/builtin", ..) => "builtin",
            _ => "every",
        };
        // A target's name in a row: `.integer` for integers against their floor; the workload.
        let name_of = |part: &str, ratio: &str, row: Row| {
            let integer = row.values == Values::Integer && ratio == "msetex/floor";
            let values = if integer { ".integer" } else { "" };
            let name = format!("{}.instructions{part}{values}.{ratio}", who(ratio));
            let workload = format!("{name}.{}", row.workload.label());
            if targets.has(&workload) {
                workload
            } else {
                name
            }
        };
        let applying = "the replica applying MSETEX's stream / SETEX's";
        for (setup, values, part, ratio) in specs {
            let (figure, what) = match (ratio, part) {
                ("msetex/floor", _) => (Over(None), "MSETEX / floor"),
                ("msetex/setex", _) => (Over(Some(Variant::Setex)), "MSETEX / pipelined SETEX"),
                ("module/builtin", _) => (Over(Some(Variant::Builtin)), "module / built-in MSETEX"),
                ("keys/call", _) => (Keys, "reading and declaring keys / the call"),
                (_, "-replica") => (AppliedOver, applying),
                _ => (AppliedOver, "loading MSETEX's AOF / SETEX's"),
            };
            let (batch, label) = match part {
                "-10000-keys" => (BIG_CALL, "one call of 10,000 keys".into()),
                _ => (100, setup_label(server, setup)),
            };
            // An AOF's load: of new keys only.
            let workloads = match part {
                "-aof-reload" => &[Workload::Fresh][..],
                _ => &Workload::BOTH[..],
            };
            for &workload in workloads {
                let row = |values| setup.rows(values)[workload as usize].batch(batch);
                let rows: Vec<Row> = values.iter().map(|v| row(*v)).collect();
                // Against the built-in or pipelined SETEX: at most the limit, or the row's floor's
                // own distance from it times the floor's target (without persistence, same regime,
                // workload): one rule for the module and its floor.
                let cell = |row: Row| {
                    let limit = targets.at_most(&name_of(part, ratio, row));
                    let over = match figure {
                        Over(Some(other)) => self.count(row, other),
                        // Applying: the row's floor's stream (the same commands, in the server's
                        // MULTI/EXEC) against SETEX's, at the same limit.
                        AppliedOver => {
                            let applied = |v| self.figure(Applied(v), row);
                            let floor = self.floor(row).map_or(f64::NAN, applied);
                            let floor = floor / applied(Variant::Setex);
                            return (self.figure(figure, row), limit, bound(limit, floor, limit));
                        }
                        _ => return (self.figure(figure, row), limit, limit),
                    };
                    let floor = self.figure(Count(None), row) / over;
                    let floor_limit = targets.at_most(&name_of("", "msetex/floor", row.at(plain)));
                    let value = self.figure(figure, row);
                    (value, limit, bound(limit, floor, floor_limit))
                };
                let cells: Vec<_> = rows.iter().map(|row| cell(*row)).collect();
                let held: Vec<bool> = cells.iter().map(|(f, _, bound)| f <= bound).collect();
                let x = if figure == Keys { "" } else { "x" };
                let mut limits = format!("{}{x}", short(cells[0].1));
                if let Some(i) = cells.iter().position(|c| c.1 != cells[0].1) {
                    let (regime, limit) = (rows[i].values.regime(), short(cells[i].1));
                    let _ = write!(limits, " ({regime} {limit}x)");
                }
                if cells.iter().any(|(_, limit, bound)| bound > limit) {
                    limits.push_str(", or the floor's bound");
                }
                let text = |&(figure, limit, bound): &(f64, f64, f64)| match bound > limit {
                    true => format!("{figure:.3} (bound {bound:.3})"),
                    false => format!("{figure:.3}"),
                };
                let measured = cells.iter().map(text).collect::<Vec<_>>().join(" / ");
                let what = format!("{label}, {what}, {}: at most {limits}", workload.label());
                let (name, holds) = (name_of(part, ratio, rows[0]), held.iter().all(|h| *h));
                list.push(Goal::new(&server.describe(), &what, &name, measured, holds));
            }
        }
        // What keys hold: MSETEX's and its floor's, in every setup, regime and workload.
        let name = "every.instructions.stored/set-ex";
        let tolerance = targets.within(name);
        let setups = instr_setups(index, server, gate).into_iter();
        let rows =
            setups.flat_map(|(setup, values)| values.iter().flat_map(move |v| setup.rows(*v)));
        let found = rows.flat_map(|r| [Some(Variant::Module), self.floor(r)].map(|v| (r, v)));
        let found = found.filter_map(|(row, v)| self.unlike_set(server, row, v, tolerance));
        let mut unlike: Vec<String> = found.collect::<BTreeSet<_>>().into_iter().collect();
        let holds = unlike.is_empty();
        unlike.resize(unlike.len().max(1), "all".into());
        let what = format!(
            "every setup, regime and workload: MSETEX's keys and its floor's hold SET EX's \
             OBJECT ENCODING, or a MEMORY USAGE within {}% of SET EX's",
            short(tolerance * 100.0)
        );
        let measured = unlike.join("; ");
        list.push(Goal::new(&server.describe(), &what, name, measured, holds));
        // Issue #48's call of 100,000 pairs, in cluster mode over outside it.
        if let Some([plain, cluster, aof, cluster_aof]) = self.huge_calls(index) {
            let name = "valkey91.instructions-100000-pairs.cluster/outside";
            let limit = targets.at_most(name);
            let what = format!(
                "one call of 100,000 new pairs (keys of one hash tag), instructions per key in \
                 cluster mode / outside it, as loaded by default / with the AOF and REPLICATE \
                 MSETEX in both (one command per call in both): at most {}x",
                short(limit)
            );
            let (by_default, with_aof) = (cluster / plain, cluster_aof / aof);
            let measured = format!("{by_default:.3} ({cluster:.0} / {plain:.0}) / {with_aof:.3} ({cluster_aof:.0} / {aof:.0})");
            let holds = by_default <= limit && with_aof <= limit;
            list.push(Goal::new(&server.describe(), &what, name, measured, holds));
        }
        list
    }

    /// The section of docs/BENCHMARKS.md, markers included.
    pub fn markdown(&self, servers: &[Target], about: &[(&str, String)], goals: &[Goal]) -> String {
        let mut md = format!("{START}\n## Instructions per key (`make bench-instr`)\n\n");
        for (what, value) in about {
            let _ = writeln!(md, "- {what}: {value}");
        }
        let _ = writeln!(
            md,
            "- how counted: the whole server process under valgrind's callgrind, but \
             `serverCron` (which `DEBUG PAUSE-CRON 1` also stops, once `INFO msetex` says who \
             listens, as the setup should), instrumented from `callgrind_control --instr=on` and \
             `-z` before a measured phase to `-d` after it: the dump's total over the keys \
             written. jemalloc with `MALLOC_CONF={MALLOC_CONF}` and /dev/urandom read as a fixed \
             file (an `LD_PRELOAD` of `fopen`), so that a phase counts the same from one run to \
             the next. Nothing else may run meanwhile: contention changes how the server reads \
             a pipelined write, and the count (3.5% in one run).\n\
             - a phase: {CALLS} calls of 100 keys ({CALLS} pipelines of 100 SETEX, each in one \
             write), or one call of {BIG_CALL}. Steady state: fillers first (`floor.bare`: no \
             hash table resizes during the phase); `overwrite`: the variant wrote the keys twice \
             before; `new`: as many other keys; a lookup of every key ends the last rehash. Each \
             row's first variant runs twice, the first not counted.\n\
             - setups: no persistence (nothing consumes what the module propagates: it sends \
             nothing); the AOF (`appendfsync everysec`); one replica, under callgrind too \
             (`applying`: its instructions per key from before the phase to a `WAIT` after it); \
             cluster mode (one node owning every slot, keys of one hash tag; the module always \
             propagates there). Each in `REPLICATE SET` and `REPLICATE MSETEX`, or once where \
             the module replicates natively (`native MSETEX`: `MSETEX n k v ... PXAT ms`). \
             `AOF load`: {RELOADED} new keys written by a server not under callgrind, 100 a call, \
             then loaded by it under callgrind, counting `loadAppendOnlyFile*` only.\n\
             - regimes: 32-byte values under short keys (`k:N`) and long keys (`k:` and 12 \
             digits), integers (`{INTEGER_VALUE}`), 1 KB values; with persistence short and long \
             keys.\n\
             - the floor of a row: of bench/floor's `floor.events` (per key open, the value in \
             place or `RedisModule_StringSet`, the deadline, close, events, signal, change count) \
             and `floor.mset` (MSET through `RedisModule_Call`, then per key open, deadline, \
             close, `expire`), the cheaper that leaves each key with MSETEX's OBJECT ENCODING (last \
             table). One rule for the module and its floors: both must leave SET EX's encoding or \
             a MEMORY USAGE within 5% of SET EX's (a target, on every row). A floor propagates \
             what the module does (bench/floor's load arguments): nothing while nobody listens (no \
             persistence, a single-node cluster); \
             per key `SET k v PXAT ms` (`RedisModule_Replicate`) for REPLICATE SET; per call \
             `<name>.apply ms k v ...`, or natively `MSETEX n k v ... PXAT ms`. `floor.bare`: \
             `floor.events` without events, signal or count.\n\
             - the module: the TTL form (`msetex 3600 k v ...`), but on a server with a built-in \
             MSETEX the built-in's own form (`msetex.nk n k v ... EX 3600`, loaded with `SYNTAX \
             NUMKEYS COMMAND-NAME msetex.nk`), so that the two compare call for call.\n\
             - ratios: MSETEX's over the row's floor's, pipelined SETEX's or the built-in's. A \
             cell against pipelined SETEX or the built-in holds up to max(its limit, floor / that yardstick x the floor's target without persistence), \
             the bound shown where higher: one rule for the module and its floor. A replica or \
             an AOF load applying MSETEX's stream likewise holds up to max(its limit, the \
             floor's stream applied / SETEX's x that limit): the same commands, which the \
             server wraps in MULTI/EXEC where one call sends more than one.\n\n\
             ### Targets, in instructions\n\nA figure per regime of values (no persistence: \
             short keys / long keys / integers / 1 KB values; with persistence: short keys / \
             long keys; the {BIG_CALL}-key call: long keys).\n"
        );
        md.push_str(&goals_table(goals));
        // A table per persistence (the 10,000-key call's apart): a line per server, regime of
        // values and mode.
        use Variant::*;
        let plain = [
            Count(Some(Floor)),
            Count(Some(FloorEvents)),
            Count(Some(FloorMset)),
        ];
        let applied = [Applied(Module), Applied(Setex), AppliedOver];
        let mut columns = vec![
            Count(Some(Module)),
            Count(None),
            Over(None),
            Over(Some(Setex)),
        ];
        columns.extend([
            Over(Some(Builtin)),
            Count(Some(Setex)),
            Count(Some(Builtin)),
        ]);
        for (persistence, title, batch) in [
            (Persistence::None, "Without persistence", 100),
            (Persistence::None, "One call of 10,000 keys", BIG_CALL),
            (Persistence::Aof, "With the AOF (`AOF load`: new keys)", 100),
            (
                Persistence::Replica,
                "With one replica (`applying`: the replica's)",
                100,
            ),
            (Persistence::Cluster, "In cluster mode", 100),
        ] {
            let mut lines = Vec::new();
            for (index, server) in servers.iter().enumerate() {
                for (setup, values) in instr_setups(index, server, false) {
                    for rows in values
                        .iter()
                        .map(|v| setup.rows(*v).map(|r| r.batch(batch)))
                    {
                        let (name, regime) = (server.describe(), rows[0].values.regime());
                        let label = setup_label(server, setup) + ", -";
                        let label = label
                            .splitn(3, ", ")
                            .take(2)
                            .collect::<Vec<_>>()
                            .join(" | ");
                        let measured = self.count(rows[0], Module).is_finite();
                        if setup.persistence == persistence && measured {
                            lines.push((format!("{name} | {regime} | {label}"), server, rows));
                        }
                    }
                }
            }
            let columns = match (persistence, batch) {
                (_, BIG_CALL) => [&columns[..3], &plain[1..]].concat(),
                (Persistence::None, _) => [&columns[..], &plain, &[Count(Some(Mset))]].concat(),
                (Persistence::Cluster, _) => columns.clone(),
                _ => [&columns[..], &applied].concat(),
            };
            if lines.is_empty() {
                continue;
            }
            let intro = format!("\n### {title}\n\nInstructions per key, overwrite / new.\n");
            self.table(
                &mut md,
                &intro,
                "server | keys | setup | mode",
                &columns,
                lines,
            );
        }
        self.fairness_markdown(servers, &mut md);
        md + END
    }

    /// A table of `columns` (overwrite / new each) after `intro`, one line per (label, server,
    /// rows); `head`: the labels' columns.
    fn table(&self, md: &mut String, intro: &str, head: &str, columns: &[Figure], lines: Lines) {
        let titles: Vec<String> = columns.iter().map(|c| c.title()).collect();
        let bars =
            "| --- ".repeat(head.matches('|').count() + 1) + &"| ---: ".repeat(columns.len());
        let _ = writeln!(md, "{intro}\n| {head} | {} |\n{bars}|", titles.join(" | "));
        for (label, server, rows) in lines {
            let cells = columns
                .iter()
                .map(|c| both(rows, |row| self.cell(*c, row, server)));
            let _ = writeln!(
                md,
                "| {label} | {} |",
                cells.collect::<Vec<_>>().join(" | ")
            );
        }
    }

    /// Which floor path each row takes without persistence, and what a key holds after SET EX
    /// (and after MSETEX where that differs; every setup's: the `stored/set-ex` target).
    fn fairness_markdown(&self, servers: &[Target], md: &mut String) {
        let _ = writeln!(
            md,
            "\n### The floor of each row, and what a key holds\n\nWithout persistence: the \
             floor path (overwrite / new), SET EX's OBJECT ENCODING and MEMORY USAGE, and \
             MSETEX's where they differ (the floor path's key then holds MSETEX's encoding).\n\n\
             | server | {} |\n| --- | --- | --- | --- | --- |",
            REGIMES.map(Values::regime).join(" | ")
        );
        let cell = |row: Row| {
            let stored = |v| self.stored(row, v).unwrap_or_default().to_owned();
            let (set, module) = (stored(None), stored(Some(Variant::Module)));
            let floor = self.floor(row).map_or("none", label);
            match module == set {
                true => format!("{floor} ({set})"),
                false => format!("{floor} ({set}; MSETEX: {module})"),
            }
        };
        for (index, server) in servers.iter().enumerate() {
            let plain = REGIMES.map(|values| both(Setup::plain(index).rows(values), cell));
            let _ = writeln!(md, "| {} | {} |", server.describe(), plain.join(" | "));
        }
    }

    /// The section of docs/PROFILE.md: reading and declaring keys in cluster mode, every server.
    pub fn profile_markdown(&self, servers: &[Target]) -> String {
        let intro = format!(
            "{START}\n## Reading and declaring keys in cluster mode (`make bench-instr`)\n\n\
             Cluster mode (one node, `REPLICATE SET`): instructions per key of MSETEX (overwrite / \
             new) reading and declaring the call's keys, from the dumps' calls, each counted once: \
             the command filter (`msetex::ffi::callbacks::command_filter` with its callees), the \
             server's key extraction (`getKeys*`, Valkey 9's `clusterSlotByCommand`, with their \
             callees: a getkeys callback in which the module declares keys), `msetex::keys::*` \
             called from elsewhere (the command decoding its arguments); a function called both \
             inside and outside those counts by its share of instructions inside. `keys`: `INFO \
             msetex`'s `msetex_keys`; `keys / call`: the share of MSETEX's instructions. `of the \
             filter: the filter API`: the server's `CommandFilterArg*` and `RetainString` the \
             filter calls (where the filter moves keys: one replace and one delete a key, a \
             retain for each key and value), what any command filter that moves them pays; the \
             last column leaves it out.\n"
        );
        let mut lines = Vec::new();
        for (index, server) in servers.iter().enumerate() {
            let reading = self.reading.get(&index).map_or("-", String::as_str);
            for values in KEYS {
                let rows = Setup::ttl(index, (Persistence::Cluster, Replicate::Set)).rows(values);
                let label = format!("{} | {reading} | {}", server.describe(), values.regime());
                lines.extend(
                    self.keys
                        .contains_key(&rows[0])
                        .then_some((label, server, rows)),
                );
            }
        }
        let columns = [
            Part(0),
            Part(3),
            Part(1),
            Part(2),
            Count(Some(Variant::Module)),
            Keys,
            KeysBeyondApi,
        ];
        let mut md = String::new();
        self.table(&mut md, &intro, "server | keys | regime", &columns, lines);
        md + END
    }

    /// README.md's cost block for the server under test (instructions per key by default, with
    /// one replica and in cluster mode) and its inline figures; None before those were measured.
    pub fn readme(&self, server: &Target, text: &str) -> Option<String> {
        use Persistence::{Aof, Cluster, Replica};
        let wanted = |s: &Setup| {
            s.persistence != Aof && (s.persistence != Cluster || s.replicate == Replicate::Set)
        };
        let setups = instr_setups(0, server, false).into_iter().map(|s| s.0);
        let lines: Vec<Setup> = setups.filter(wanted).collect();
        let rows = |setup: Setup| setup.rows(Values::ShortKeys);
        if lines
            .iter()
            .any(|s| self.count(rows(*s)[1], Variant::Module).is_nan())
        {
            return None;
        }
        let intro = format!(
            "{}\nInstructions per key of the whole server ([`make bench-instr`](docs/BENCHMARKS.md): \
             callgrind, deterministic; lower is cheaper), {}, 100 keys per call, 32-byte values, \
             short keys; TTL keys / new keys. `REPLICATE SET` sends a `SET ... PXAT` per key, \
             `REPLICATE MSETEX` one command per call; `MSETEX's / SETEX's`: the replica's \
             instructions per key applying MSETEX's stream over pipelined SETEX's.\n",
            README.0,
            server.describe()
        );
        let label = |setup| match setup_label(server, setup).split_once("REPLICATE ") {
            _ if setup == lines[0] => "by default: no replica, no AOF".into(),
            Some((head, mode)) => format!("{head}`REPLICATE {mode}`"),
            None => setup_label(server, setup),
        };
        let table = lines.iter().map(|s| (label(*s), server, rows(*s)));
        let setex = Over(Some(Variant::Setex));
        let columns = [
            Count(Some(Variant::Module)),
            Count(Some(Variant::Setex)),
            setex,
            AppliedOver,
        ];
        let mut block = String::new();
        self.table(&mut block, &intro, "", &columns, table.collect());
        let mut text = splice(text, README.0, README.1, &(block + README.1))?;
        for (name, mode) in [
            ("replica-set", Replicate::Set),
            ("replica-msetex", Replicate::Msetex),
        ] {
            let by = |s: &&Setup| {
                s.persistence == Replica && (s.replicate == mode || mode == Replicate::Msetex)
            };
            let setup = *lines.iter().rev().find(by)?;
            let figure = both(rows(setup), |r| format!("{:.2}x", self.figure(setex, r)));
            text = replace_inline(&text, name, &figure);
        }
        Some(text)
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

/// `text` with the part from `start` to `end` (both included) replaced by `block`; None unless
/// `text` has both markers.
pub fn splice(text: &str, start: &str, end: &str, block: &str) -> Option<String> {
    let (from, to) = (text.find(start)?, text.find(end)? + end.len());
    Some(format!("{}{block}{}", &text[..from], &text[to..]))
}

/// Puts `block` (instr markers included) in place of the file's marked part, or at its end.
pub fn splice_file(path: &str, block: &str) {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let text = splice(&text, START, END, block)
        .unwrap_or_else(|| format!("{text}{}{block}\n", if text.is_empty() { "" } else { "\n" }));
    std::fs::write(path, text).unwrap_or_else(|e| panic!("write {path}: {e}"));
    eprintln!("wrote the instruction section of {path}");
}

/// `text` with the figure between `<!--bench:NAME-->` and the next `<!--/bench-->` replaced by
/// `figure`, wherever it appears.
fn replace_inline(text: &str, name: &str, figure: &str) -> String {
    let (open, close) = (format!("<!--bench:{name}-->"), "<!--/bench-->");
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(&open) {
        let after = &rest[at + open.len()..];
        let Some(end) = after.find(close) else {
            break;
        };
        out.push_str(&rest[..at + open.len()]);
        out.push_str(figure);
        out.push_str(close);
        rest = &after[end + close.len()..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::tests::server;
    use msetex_harness::Product;

    /// The goals on Valkey 9.1.2 whose text holds `what`, where without persistence in every
    /// regime and workload MSETEX, floor.events, floor.mset and the built-in cost `counts` (SETEX
    /// twice MSETEX) and SET EX's, MSETEX's, floor.events' and floor.mset's keys hold `stored`.
    fn goals(counts: [f64; 4], stored: [&str; 4], what: &str) -> (Instr, Vec<(String, bool)>) {
        let mut instr = Instr::default();
        use Variant::*;
        for row in REGIMES.iter().flat_map(|v| Setup::plain(0).rows(*v)) {
            let counts = counts.into_iter().chain([2.0 * counts[0]]);
            for (v, count) in [Module, FloorEvents, FloorMset, Builtin, Setex]
                .into_iter()
                .zip(counts)
            {
                instr.counts.insert((row, v), count);
                instr.counts.insert((row.batch(BIG_CALL), v), count);
            }
            for (v, held) in [None, Some(Module), Some(FloorEvents), Some(FloorMset)]
                .into_iter()
                .zip(stored)
            {
                instr.stored.insert((row, v), held.into());
            }
        }
        let text = std::fs::read_to_string(crate::targets::default_path()).unwrap();
        let valkey = server(Product::Valkey, (9, 1, 2));
        let goals = instr.goals(&Targets::parse(&text).unwrap(), 0, &valkey, true);
        let goals = goals.into_iter().filter(|g| g.what.contains(what));
        (instr, goals.map(|g| (g.measured, g.holds)).collect())
    }

    #[test]
    fn a_cell_against_the_built_in_is_bound_by_its_floor_not_waived() {
        // floor.events is 1.155 times the built-in: at its target, 1.1, the bound is 1.2705.
        let fair = ["embstr 90"; 4];
        let what = "no persistence, module / built-in MSETEX, overwrite";
        let bound = "1.200 (bound 1.271)";
        let held = goals([1200.0, 1155.0, 1300.0, 1000.0], fair, what).1;
        let all = format!("{bound} / {bound} / {bound} / {bound}");
        assert_eq!(held, [(all, true)]);
        assert!(!goals([1300.0, 1155.0, 1300.0, 1000.0], fair, what).1[0].1);
        // Below the limit's own 1.15, the floor raises nothing.
        let held = goals([1100.0, 1000.0, 1300.0, 1000.0], fair, what).1;
        assert_eq!(held[0].0, "1.100 / 1.100 / 1.100 / 1.100");
    }

    #[test]
    fn the_floor_leaves_msetex_s_encoding_and_both_hold_set_ex_s() {
        // MSETEX rewrites in place (raw) where SET leaves embstr: its floor is floor.events,
        // though floor.mset is cheaper; raw within 5% of SET EX's memory holds, beyond it not.
        let counts = [1100.0, 1000.0, 900.0, 1000.0];
        let what = "hold SET EX's OBJECT ENCODING";
        let (instr, held) = goals(counts, ["embstr 90", "raw 92", "raw 92", "embstr 90"], what);
        let row = Setup::plain(0).rows(Values::Small)[0];
        let floor = (instr.floor(row), instr.ratio(row, None));
        assert_eq!(floor, (Some(Variant::FloorEvents), 1.1));
        assert_eq!(held, [("all".into(), true)]);
        let (_, held) = goals(counts, ["embstr 90", "raw 96", "raw 96", "embstr 90"], what);
        let raw = "short keys, 32 B, overwrite, MSETEX: raw 96 (SET EX: embstr 90, +6.7%)";
        assert!(!held[0].1 && held[0].0.contains(raw), "{}", held[0].0);
        assert!(held[0].0.contains("floor.events: raw 96"), "{}", held[0].0);
        // No floor path of MSETEX's encoding: no floor, no ratio that could hold.
        let what = "no persistence, MSETEX / floor, overwrite";
        let (instr, held) = goals(counts, ["embstr 90", "int 90", "raw 90", "embstr 90"], what);
        assert_eq!((instr.floor(row), held[0].1), (None, false));
    }
}
