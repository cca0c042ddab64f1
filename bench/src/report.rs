//! What the runs add up to: medians and within-round ratios (here), the
//! Markdown of docs/BENCHMARKS.md (`markdown`) and the block of README.md
//! between the bench markers (`readme`).

pub mod instr;
mod markdown;
mod readme;

use crate::plan::*;
use crate::run::experiments::{AclLoad, BigCall, Memory};
use crate::run::{Bench, Sample};
use crate::statistics::{median, median_ratio};
use std::collections::BTreeMap;

/// Medians and within-round ratios, ready to print.
#[derive(Default)]
pub struct Report {
    /// (row, variant) -> median sample
    cells: BTreeMap<(Row, Variant), Sample>,
    pub big_calls: Vec<(usize, BigCall)>,
    classic: Vec<(&'static str, f64)>,
    pub memory: Memory,
    pub acl_load: AclLoad,
    pub failed_calls: u64,
    /// (row, numerator, denominator) -> median within-round ratio of server time per key: the
    /// process's CPU time where pipelined SETEX is either side (100 commands against one
    /// call), INFO commandstats elsewhere (one call against one call)
    ratios: BTreeMap<(Row, Variant, Variant), f64>,
    /// (row, variant) -> median within-round ratio to MSET of keys/s
    rate_ratios: BTreeMap<(Row, Variant), f64>,
    /// (workload, values) -> median within-round ratio of the NUMKEYS
    /// form's server time per key to the TTL form's
    pub numkeys_vs_ttl: BTreeMap<(Workload, Values), f64>,
}

impl Report {
    pub fn new(
        bench: &Bench,
        big_calls: Vec<(usize, BigCall)>,
        classic: Vec<(&'static str, f64)>,
        memory: Memory,
        acl_load: AclLoad,
    ) -> Report {
        let mut report = Report {
            cells: BTreeMap::new(),
            big_calls,
            classic,
            memory,
            acl_load,
            failed_calls: failed_calls(bench),
            ratios: BTreeMap::new(),
            rate_ratios: BTreeMap::new(),
            numkeys_vs_ttl: numkeys_vs_ttl(bench),
        };
        for ((row, variant), samples) in &bench.samples {
            report.add(bench, *row, *variant, samples);
        }
        report
    }

    /// The median sample of a row's variant and its within-round ratios.
    fn add(&mut self, bench: &Bench, row: Row, variant: Variant, samples: &[Sample]) {
        let med = |f: fn(&Sample) -> f64| median(samples.iter().map(f).collect());
        let sample = Sample {
            keys_per_sec: med(|s| s.keys_per_sec),
            server_us_per_key: med(|s| s.server_us_per_key),
            cpu_us_per_key: med(|s| s.cpu_us_per_key),
            p50_ms: med(|s| s.p50_ms),
            p99_ms: med(|s| s.p99_ms),
            failed: samples.iter().map(|s| s.failed).sum(),
        };
        self.cells.insert((row, variant), sample);
        for den in [
            Variant::Mset,
            Variant::Builtin,
            Variant::Lua,
            Variant::Setex,
        ] {
            let (a, b) = ((row, variant), (row, den));
            let ratio = match variant == Variant::Setex || den == Variant::Setex {
                true => per_round(bench, a, b, |s| s.cpu_us_per_key),
                false => per_round(bench, a, b, |s| s.server_us_per_key),
            };
            if ratio.is_finite() {
                self.ratios.insert((row, variant, den), ratio);
            }
        }
        let rate = per_round(bench, (row, variant), (row, Variant::Mset), |s| {
            s.keys_per_sec
        });
        self.rate_ratios.insert((row, variant), rate);
    }

    /// The within-round ratio of the module to `den` in the row given.
    pub fn ratio(&self, row: Row, den: Variant) -> f64 {
        let ratio = self.ratios.get(&(row, Variant::Module, den));
        ratio.copied().unwrap_or(f64::NAN)
    }
}

/// A targets table's rows.
pub fn goals_table(goals: &[crate::targets::goals::Goal], md: &mut String) {
    for goal in goals {
        let holds = if goal.holds { "yes" } else { "**no**" };
        md.push_str(&format!(
            "| {} | {} | {holds} |\n",
            goal.what, goal.measured
        ));
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
    let text = splice(&text, instr::START, instr::END, block)
        .unwrap_or_else(|| format!("{text}{}{block}\n", if text.is_empty() { "" } else { "\n" }));
    std::fs::write(path, text).unwrap_or_else(|e| panic!("write {path}: {e}"));
    eprintln!("wrote the instruction section of {path}");
}

/// The median of the within-round ratios of `f` between two (row, variant) runs.
fn per_round(bench: &Bench, a: (Row, Variant), b: (Row, Variant), f: fn(&Sample) -> f64) -> f64 {
    let figures = |k| {
        bench
            .samples
            .get(&k)
            .map_or(Vec::new(), |s| s.iter().map(f).collect())
    };
    median_ratio(&figures(a), &figures(b))
}

/// (workload, values) -> the NUMKEYS form's server time per key over the TTL form's, median of
/// the rounds. The two forms run on identical servers (pinned alike), one after the other in each
/// round: their server times compare directly (dividing each by its own server's MSET first added
/// MSET's noise: MSET of new integers took 0.55 or 0.9 us a key from one server to the next).
fn numkeys_vs_ttl(bench: &Bench) -> BTreeMap<(Workload, Values), f64> {
    let mut numkeys_vs_ttl = BTreeMap::new();
    for values in [Values::Small, Values::Integer] {
        for row in Setup::plain(0).rows(values) {
            let numkeys = Row {
                setup: Setup {
                    form: Form::Numkeys,
                    ..row.setup
                },
                ..row
            };
            let (a, b) = ((numkeys, Variant::Module), (row, Variant::Module));
            let ratio = per_round(bench, a, b, |s| s.server_us_per_key);
            numkeys_vs_ttl.insert((row.workload, values), ratio);
        }
    }
    numkeys_vs_ttl
}

/// Failed calls of every run, plus the runs that failed.
fn failed_calls(bench: &Bench) -> u64 {
    let calls: u64 = bench.samples.values().flatten().map(|s| s.failed).sum();
    calls + bench.failures.len() as u64
}
