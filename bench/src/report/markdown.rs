//! The Markdown of docs/BENCHMARKS.md, section by section.

use super::Report;
use crate::machine::machine;
use crate::plan::*;
use crate::run::Bench;
use crate::targets::{goals, Targets};
use msetex_harness::{Replicate, RENAMED};
use std::fmt::Write as _;

impl Report {
    /// The whole of docs/BENCHMARKS.md.
    pub fn markdown(&self, bench: &Bench, targets: &Targets) -> String {
        let mut md = String::new();
        header_markdown(bench, &mut md);
        method_markdown(bench, &mut md);
        self.targets_markdown(bench, targets, &mut md);
        self.matrix_markdown(bench, &mut md);
        self.big_call_markdown(bench, &mut md);
        self.rows_markdown(bench, &mut md);
        self.classic_markdown(bench, &mut md);
        self.memory_markdown(bench, &mut md);
        self.acl_load_markdown(bench, &mut md);
        failures_markdown(bench, &mut md);
        md
    }

    /// The targets and whether each holds.
    fn targets_markdown(&self, bench: &Bench, targets: &Targets, md: &mut String) {
        let _ = writeln!(md, "## Targets\n");
        let _ = writeln!(
            md,
            "Batch 100, 32-byte values unless said otherwise; ratios of server time per key \
             (below 1: MSETEX costs less).\n"
        );
        let _ = writeln!(md, "| target | measured | holds |\n| --- | ---: | --- |");
        for target in goals(self, bench.servers, targets) {
            let _ = writeln!(
                md,
                "| {} | {} | {} |",
                target.what,
                target.measured,
                if target.holds { "yes" } else { "**no**" }
            );
        }
    }

    /// One line per server: the module against MSET, pipelined SETEX and
    /// the built-in, without persistence and with a replica.
    fn matrix_markdown(&self, bench: &Bench, md: &mut String) {
        let _ = writeln!(
            md,
            "\n## Every server\n\nBatch 100, 32-byte values, server time per key as a ratio \
             to MSET in the same round (overwrite / fresh). The replica runs with the module \
             (REPLICATE MSETEX). On servers with a built-in MSETEX the module is loaded as \
             `{RENAMED}` and replicates each call as one native MSETEX (in both modes); the last \
             column is the module against the built-in.\n\n\
             | server | MSETEX, no persistence | MSETEX, one replica | SETEX pipelined, one replica | built-in MSETEX, one replica | module / built-in, one replica |\n\
             | --- | ---: | ---: | ---: | ---: | ---: |"
        );
        for (index, server) in bench.servers.iter().enumerate() {
            let pair = |persistence, replicate, variant, den| {
                Workload::BOTH
                    .map(|workload| {
                        let row = Row {
                            setup: Setup {
                                server: index,
                                form: Form::Ttl,
                                persistence,
                                replicate,
                            },
                            workload,
                            values: Values::Small,
                            batch: 100,
                        };
                        self.ratios
                            .get(&(row, variant, den))
                            .map_or("-".to_owned(), |r| format!("{r:.2}x"))
                    })
                    .join(" / ")
            };
            let builtin = server.has_builtin_msetex();
            let replicate = Replicate::Msetex;
            let note = if index == 0 {
                " (server under test)"
            } else {
                ""
            };
            let _ = writeln!(
                md,
                "| {}{note} | {} | {} | {} | {} | {} |",
                server.describe(),
                pair(
                    Persistence::None,
                    Replicate::Set,
                    Variant::Module,
                    Variant::Mset
                ),
                pair(
                    Persistence::Replica,
                    replicate,
                    Variant::Module,
                    Variant::Mset
                ),
                pair(
                    Persistence::Replica,
                    replicate,
                    Variant::Setex,
                    Variant::Mset
                ),
                if builtin {
                    pair(
                        Persistence::Replica,
                        replicate,
                        Variant::Builtin,
                        Variant::Mset,
                    )
                } else {
                    "-".to_owned()
                },
                if builtin {
                    pair(
                        Persistence::Replica,
                        replicate,
                        Variant::Module,
                        Variant::Builtin,
                    )
                } else {
                    "-".to_owned()
                },
            );
        }
        self.floor_markdown(bench, md);
    }

    /// One line per server, without persistence: the module API's floor,
    /// the module and pipelined SETEX against MSET, and the module's
    /// distance from the floor with events.
    fn floor_markdown(&self, bench: &Bench, md: &mut String) {
        let _ = writeln!(
            md,
            "\n### The module API's floor\n\nNo persistence, batch 100, 32-byte values, \
             overwrite / fresh. The floor is `bench/floor`, a module loaded beside MSETEX in the \
             same server and measured in the same rounds: `floor` (`floor.bare`) does the bare \
             job through the module API (per key: open, the value in place when the length \
             matches or set, the deadline, close); `floor + events` (`floor.events`) adds what \
             correctness needs (keyspace events `set` and `expire`, the modified-key signal, \
             the change count for save points). The first four columns are server time per key \
             as a ratio to MSET in the same round; `MSETEX / floor + events` is the median of \
             the within-round ratios, `lowest–highest` their range over the rounds counted \
             (a failed run leaves its round out).\n\n\
             | server | floor | floor + events | MSETEX | SETEX pipelined | MSETEX / floor + events | lowest–highest | rounds |\n\
             | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
        );
        for index in 0..bench.servers.len() {
            let _ = writeln!(md, "{}", self.floor_line(bench, index));
        }
    }

    /// A server's line of the floor table.
    fn floor_line(&self, bench: &Bench, server: usize) -> String {
        let rows = Workload::BOTH.map(|workload| Row {
            setup: Setup::plain(server),
            workload,
            values: Values::Small,
            batch: 100,
        });
        let to_mset = |variant| {
            rows.map(|row| {
                self.ratios
                    .get(&(row, variant, Variant::Mset))
                    .map_or("-".to_owned(), |r| format!("{r:.2}x"))
            })
            .join(" / ")
        };
        let spreads = rows.map(|row| self.spread(row, Variant::Module, Variant::FloorEvents));
        let distance = spreads
            .map(|s| {
                if s.rounds == 0 {
                    "-".to_owned()
                } else {
                    format!("{:.2}x", s.median)
                }
            })
            .join(" / ");
        let range = spreads
            .map(|s| {
                if s.rounds == 0 {
                    "-".to_owned()
                } else {
                    s.range()
                }
            })
            .join(" / ");
        let rounds = match spreads {
            [a, b] if a.rounds == b.rounds => a.rounds.to_string(),
            [a, b] => format!("{} / {}", a.rounds, b.rounds),
        };
        let note = if server == 0 {
            " (server under test)"
        } else {
            ""
        };
        format!(
            "| {}{note} | {} | {} | {} | {} | {distance} | {range} | {rounds} |",
            bench.servers[server].describe(),
            to_mset(Variant::Floor),
            to_mset(Variant::FloorEvents),
            to_mset(Variant::Module),
            to_mset(Variant::Setex),
        )
    }

    /// One call of 10,000 keys against one MSET and one `floor.events`, on
    /// every server.
    fn big_call_markdown(&self, bench: &Bench, md: &mut String) {
        let _ = writeln!(
            md,
            "\n## One call of 10,000 keys\n\nServer time of one MSETEX of 10,000 keys against \
             one MSET and one `floor.events` (the module API's floor with events, above) of \
             the same keys (no persistence; median of {} rounds; `/ MSET` and `/ floor` are \
             medians of within-round ratios). `refresh`: every key exists with a TTL and a \
             value of the same length, as when a session store rewrites its sessions. Nothing \
             else runs while such a call does: split very large batches if that matters.\n\n\
             | server | new keys: MSETEX µs | MSET µs | floor µs | / MSET | / floor | refresh: MSETEX µs | MSET µs | floor µs | / MSET | / floor |\n\
             | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
            bench.options.rounds.max(3)
        );
        for (index, call) in &self.big_calls {
            let _ = writeln!(
                md,
                "| {} | {:.0} | {:.0} | {:.0} | {:.2}x | {:.2}x | {:.0} | {:.0} | {:.0} | {:.2}x | {:.2}x |",
                bench.servers[*index].describe(),
                call.new_us.0,
                call.new_us.1,
                call.floor_us.0,
                call.new_ratio,
                call.new_floor.median,
                call.refresh_us.0,
                call.refresh_us.1,
                call.floor_us.1,
                call.refresh_ratio,
                call.refresh_floor.median,
            );
        }
    }

    /// Every row of the server under test, one table per setup.
    fn rows_markdown(&self, bench: &Bench, md: &mut String) {
        let _ = writeln!(
            md,
            "\n## {}: every row\n\nOne section per server configuration. `vs MSET` is \
             the within-round ratio of server time per key; `rate vs MSET` that of keys/s \
             seen by the clients.",
            bench.servers[0].describe()
        );
        let mut current: Option<Setup> = None;
        for ((row, variant), sample) in &self.cells {
            if row.setup.server != 0 {
                continue;
            }
            if current != Some(row.setup) {
                current = Some(row.setup);
                let _ = writeln!(
                    md,
                    "\n### {}\n\n| workload | value | keys/call | variant | keys/s | rate vs MSET | server µs/key | vs MSET | p50 ms | p99 ms | failed |\n| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
                    bench.describe_setup(row.setup)
                );
            }
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {:.0} | {:.2}x | {:.3} | {:.2}x | {:.3} | {:.3} | {} |",
                row.workload.label(),
                row.values.label(),
                row.batch,
                bench.variant_label(row.setup, *variant),
                sample.keys_per_sec,
                self.rate_ratios
                    .get(&(*row, *variant))
                    .copied()
                    .unwrap_or(f64::NAN),
                sample.server_us_per_key,
                self.ratios
                    .get(&(*row, *variant, Variant::Mset))
                    .copied()
                    .unwrap_or(f64::NAN),
                sample.p50_ms,
                sample.p99_ms,
                sample.failed
            );
        }
    }

    /// The classic experiment, approach by approach.
    fn classic_markdown(&self, bench: &Bench, md: &mut String) {
        let _ = writeln!(
            md,
            "\n## The classic experiment: 10,000 keys with a 10 s TTL, one client\n\n\
             A PHP client measured (a) 0.418 s, (b) 0.438 s and (c) 0.029 s per 10,000 keys \
             on a 2019 VM. The same four approaches, timed here end to end on {} (median \
             of {} runs):\n\n| approach | seconds per 10,000 keys |\n| --- | ---: |",
            bench.servers[0].describe(),
            if bench.options.quick { 1 } else { 3 }
        );
        for (label, seconds) in &self.classic {
            let _ = writeln!(md, "| {label} | {seconds:.4} |");
        }
    }

    /// Memory per key against SET ... EX.
    fn memory_markdown(&self, bench: &Bench, md: &mut String) {
        let _ = writeln!(
            md,
            "\n## Memory: 1,000,000 keys with TTL on {}\n\n\
             | values | MSETEX (1,000 keys per call), used_memory per key | SET ... EX | ratio |\n\
             | --- | ---: | ---: | ---: |",
            bench.servers[0].describe()
        );
        for (values, msetex, set) in &self.memory.rows {
            let _ = writeln!(
                md,
                "| {} | {msetex:.1} B | {set:.1} B | {:.3} |",
                match values {
                    Values::Integer => "integers (0 to 7.9 billion)",
                    _ => values.label(),
                },
                msetex / set
            );
        }
    }

    fn acl_load_markdown(&self, bench: &Bench, md: &mut String) {
        let acl = &self.acl_load;
        let _ = writeln!(
            md,
            "\n## ACL LOAD of 2,000 users on {}\n\n             | with the module | without | ratio |\n| ---: | ---: | ---: |\n             | {:.2} ms | {:.2} ms | {:.2} |",
            bench.servers[0].describe(),
            acl.with_ms,
            acl.without_ms,
            acl.ratio
        );
    }
}

/// The title, and what wrote the file.
fn header_markdown(bench: &Bench, md: &mut String) {
    let _ = writeln!(md, "# MSETEX benchmarks\n");
    let _ = writeln!(
        md,
        "Generated by `make bench` (bench/{}); do not edit by hand.\n",
        if bench.options.quick {
            ", **quick mode: two rounds, fewer keys; a first look, not a measurement**"
        } else {
            ""
        }
    );
}

/// The machine, the servers and how they were measured.
fn method_markdown(bench: &Bench, md: &mut String) {
    let _ = writeln!(md, "## Machine and method\n");
    for (k, v) in machine(bench) {
        let _ = writeln!(md, "- {k}: {v}");
    }
    let _ = writeln!(
        md,
        "- method: redis-benchmark, {CLIENTS} clients, {} keys written per run, {} rounds; in \
             each round every variant of a row runs once, one after another, on the same \
             server. Server time per key is INFO commandstats `usec_per_call` divided by the \
             keys per call (SETEX: pipelined with `-P` equal to the batch). Figures are \
             medians over rounds; each ratio is the median of the ratios measured within a \
             round. TTL {TTL} s everywhere. A replica runs on the same machine, on the \
             client's CPU when pinned (see CPU pinning).",
        bench.options.keys_per_run, bench.options.rounds
    );
    let _ = writeln!(
        md,
        "- workloads: `overwrite` rewrites a fixed set of {OVERWRITE_KEYSPACE} keys that \
             all hold TTLs and values of the same size (reloaded with SET EX before every \
             run), as a session store does; `fresh` writes random keys from a space of {FRESH_KEYSPACE}, so every key is new. Values: 32 \
             bytes, 1024 bytes, or the integer {INTEGER_VALUE} (stored as `int`). MSET sets \
             no TTL: it is the yardstick every ratio is taken against. Every run starts with \
             `FLUSHALL SYNC` (Valkey 8+ otherwise frees the last run's keys in the background, \
             on the server's CPU, during the next run) and `MEMORY PURGE`."
    );
    let _ = writeln!(
        md,
        "- the module API's floor: `bench/floor` (target/release/libmsetex_floor.so), loaded \
             beside the module on every server without persistence and run in the same rounds \
             as the other variants in the rows of 100 keys per call: `floor.bare` (open, write \
             in place or set, deadline, close, per key) and `floor.events` (the same plus the \
             keyspace events, the modified-key signal and the change count for save points). \
             MSETEX / floor + events is how far MSETEX is from what the module API allows.\n"
    );
}

/// The runs that failed, if any.
fn failures_markdown(bench: &Bench, md: &mut String) {
    if !bench.failures.is_empty() {
        let _ = writeln!(md, "\n## Failed runs\n");
        for failure in &bench.failures {
            let _ = writeln!(md, "- {failure}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::Options;
    use crate::pinning::Pinning;
    use crate::plan::tests::server;
    use crate::run::experiments::{AclLoad, Memory};
    use crate::run::Sample;
    use crate::statistics::Spread;
    use msetex_harness::{Product, Target};

    fn sample(us_per_key: f64) -> Sample {
        Sample {
            keys_per_sec: 1.0 / us_per_key,
            server_us_per_key: us_per_key,
            p50_ms: 1.0,
            p99_ms: 1.0,
            failed: 0,
        }
    }

    #[test]
    fn the_floor_line_gives_ratios_to_mset_and_the_distance_with_its_range() {
        let servers: &'static [Target] = Box::leak(Box::new([
            server(Product::Redis, (7, 0, 15)),
            server(Product::Redis, (6, 2, 16)),
        ]));
        let mut bench = Bench::new(Options::default(), servers, Pinning::Off("test".into()), 0);
        let row = |workload| Row {
            setup: Setup::plain(1),
            workload,
            values: Values::Small,
            batch: 100,
        };
        let (overwrite, fresh) = (row(Workload::Overwrite), row(Workload::Fresh));
        let mut record = |row, variant, us: &[f64]| {
            bench
                .samples
                .insert((row, variant), us.iter().copied().map(sample).collect());
        };
        // Three rounds of overwrite; MSETEX / floor + events within each
        // round: 1.1, 1.0, 1.2.
        record(overwrite, Variant::Mset, &[1.0, 1.0, 1.0]);
        record(overwrite, Variant::Floor, &[1.4, 1.4, 1.4]);
        record(overwrite, Variant::FloorEvents, &[1.5, 1.6, 1.5]);
        record(overwrite, Variant::Module, &[1.65, 1.6, 1.8]);
        record(overwrite, Variant::Setex, &[2.0, 2.0, 2.0]);
        // Fresh keys: the floor never ran.
        record(fresh, Variant::Mset, &[2.0, 2.0, 2.0]);
        record(fresh, Variant::Module, &[4.2, 4.2, 4.2]);
        record(fresh, Variant::Setex, &[5.0, 5.0, 5.0]);
        let acl_load = AclLoad {
            with_ms: 1.0,
            without_ms: 1.0,
            ratio: 1.0,
        };
        let report = Report::new(
            &bench,
            Vec::new(),
            Vec::new(),
            Memory { rows: Vec::new() },
            acl_load,
        );
        let spread = report.spread(overwrite, Variant::Module, Variant::FloorEvents);
        assert_eq!((spread.min, spread.max, spread.rounds), (1.0, 1.2, 3));
        assert!((spread.median - 1.1).abs() < 1e-9);
        assert_eq!(report.ratio(overwrite, Variant::FloorEvents), spread.median);
        let none = report.spread(fresh, Variant::Module, Variant::FloorEvents);
        assert!(none.median.is_nan() && none.rounds == Spread::NONE.rounds);
        assert_eq!(
            report.floor_line(&bench, 1),
            "| Redis 6.2.16 | 1.40x / - | 1.50x / - | 1.65x / 2.10x | 2.00x / 2.50x | 1.10x / - \
             | 1.00–1.20 / - | 3 / 0 |"
        );
        // Nothing measured on the server under test.
        assert_eq!(
            report.floor_line(&bench, 0),
            "| Redis 7.0.15 (server under test) | - / - | - / - | - / - | - / - | - / - | - / - \
             | 0 |"
        );
    }
}
