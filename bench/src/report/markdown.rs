//! The Markdown of docs/BENCHMARKS.md, section by section.

use super::{instr, Report};
use crate::machine::machine;
use crate::plan::*;
use crate::run::Bench;
use crate::targets::{goals, Targets};
use msetex_harness::RENAMED;
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
        // The instruction bench's section (`make bench-instr`) stays as it was.
        let old = std::fs::read_to_string(&bench.options.out).unwrap_or_default();
        if let (Some(from), Some(to)) = (old.find(instr::START), old.find(instr::END)) {
            let _ = writeln!(md, "\n{}", &old[from..to + instr::END.len()]);
        }
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
        super::goals_table(&goals(self, bench.servers, targets), md);
    }

    /// One line per server: the module against MSET, pipelined SETEX and
    /// the built-in, without persistence and with a replica.
    fn matrix_markdown(&self, bench: &Bench, md: &mut String) {
        let _ = writeln!(
            md,
            "\n## Every server\n\nBatch 100, 32-byte values, server time per key as a ratio \
             to MSET in the same round (overwrite / fresh; pipelined SETEX: CPU time). The \
             replica runs with the module (REPLICATE MSETEX). On servers with a built-in MSETEX the module is loaded as \
             `{RENAMED}` and replicates each call as one native MSETEX (in both modes); the last \
             column is the module against the built-in.\n\n\
             | server | MSETEX, no persistence | MSETEX, one replica | SETEX pipelined, one replica | built-in MSETEX, one replica | module / built-in, one replica |\n\
             | --- | ---: | ---: | ---: | ---: | ---: |"
        );
        let columns = [
            (NONE, Variant::Module, Variant::Mset),
            (REPLICA, Variant::Module, Variant::Mset),
            (REPLICA, Variant::Setex, Variant::Mset),
            (REPLICA, Variant::Builtin, Variant::Mset),
            (REPLICA, Variant::Module, Variant::Builtin),
        ];
        for (index, server) in bench.servers.iter().enumerate() {
            let note = if index == 0 {
                " (server under test)"
            } else {
                ""
            };
            let cells = columns.map(|(setup, variant, den)| {
                let rows = Setup::ttl(index, setup).rows(Values::Small);
                let ratios = rows.map(|row| self.ratios.get(&(row, variant, den)));
                match ratios {
                    [None, None] => "-".to_owned(),
                    _ => ratios
                        .map(|r| r.map_or("-".into(), |r| format!("{r:.2}x")))
                        .join(" / "),
                }
            });
            let _ = writeln!(
                md,
                "| {}{note} | {} |",
                server.describe(),
                cells.join(" | ")
            );
        }
    }

    /// One call of 10,000 keys against one MSET, on every server.
    fn big_call_markdown(&self, bench: &Bench, md: &mut String) {
        let _ = writeln!(
            md,
            "\n## One call of 10,000 keys\n\nServer time (INFO commandstats) of one MSETEX of \
             10,000 keys against one MSET of the same keys (no persistence; median of {} \
             rounds; `/ MSET` is the median of within-round ratios; against the module API's \
             floor: \"Instructions per key\" below). `refresh`: every key exists with a TTL and \
             a value of the same length, as when a session store rewrites its sessions. \
             Nothing else runs while such a call does: split very large batches if that \
             matters.\n\n\
             | server | new keys: MSETEX µs | MSET µs | / MSET | refresh: MSETEX µs | MSET µs | / MSET |\n\
             | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
            bench.options.rounds.max(3)
        );
        for (index, call) in &self.big_calls {
            let cells =
                call.map(|(module, mset, ratio)| format!("{module:.0} | {mset:.0} | {ratio:.2}x"));
            let _ = writeln!(
                md,
                "| {} | {} |",
                bench.servers[*index].describe(),
                cells.join(" | ")
            );
        }
    }

    /// Every row of the server under test, one table per setup.
    fn rows_markdown(&self, bench: &Bench, md: &mut String) {
        let _ = writeln!(
            md,
            "\n## {}: every row\n\nOne section per server configuration. `server µs/key`: \
             INFO commandstats; `CPU µs/key`: the server process's CPU time over the run. \
             `vs MSET` is the within-round ratio of server time per key (CPU time for \
             pipelined SETEX, commandstats for the others); `rate vs MSET` that of keys/s \
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
                    "\n### {}\n\n| workload | value | keys/call | variant | keys/s | rate vs MSET | server µs/key | CPU µs/key | vs MSET | p50 ms | p99 ms | failed |\n| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
                    bench.describe_setup(row.setup)
                );
            }
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {:.0} | {:.2}x | {:.3} | {:.3} | {:.2}x | {:.3} | {:.3} | {} |",
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
                sample.cpu_us_per_key,
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
            "\n## ACL LOAD of 2,000 users on {}\n\n| with the module | without | ratio |\n\
             | ---: | ---: | ---: |\n| {:.2} ms | {:.2} ms | {:.2} |",
            bench.servers[0].describe(),
            acl.with_ms,
            acl.without_ms,
            acl.ratio
        );
    }
}

/// The title, and what wrote the file.
fn header_markdown(bench: &Bench, md: &mut String) {
    let quick = ", **quick mode: two rounds, fewer keys; a first look, not a measurement**";
    let quick = if bench.options.quick { quick } else { "" };
    let _ = writeln!(
        md,
        "# MSETEX benchmarks\n\nGenerated by `make bench` (bench/{quick}); do not edit by hand.\n"
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
             server. Server time per key: one call against one call (MSETEX, MSET, the Lua \
             loop, the built-in) is INFO commandstats `usec_per_call` divided by the keys per \
             call; wherever pipelined SETEX (`-P` equal to the batch: 100 commands against one \
             call) is either side of a ratio, both sides are the server process's CPU time \
             over the run (INFO cpu, `used_cpu_user` + `used_cpu_sys`, before and after it) \
             divided by the keys written, since commandstats leaves out what each command costs \
             around its call (reading, parsing, lookup, the reply). Figures are medians over \
             rounds; each ratio is the median of the ratios measured within a round. TTL {TTL} \
             s everywhere. A replica runs on the same machine, on the \
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
             on the server's CPU, during the next run) and `MEMORY PURGE`. Keys are `k:` and \
             12 digits (14 bytes).\n"
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
