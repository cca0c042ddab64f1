//! What the runs add up to: medians and within-round ratios (here), the
//! Markdown of docs/BENCHMARKS.md (`markdown`) and the block of README.md
//! between the bench markers (`readme`).

mod markdown;
mod readme;

use crate::plan::*;
use crate::run::experiments::{AclLoad, BigCall, Memory};
use crate::run::{Bench, Sample};
use crate::statistics::{median, median_ratio, ratio_spread, Spread};
use msetex_harness::Replicate;
use std::collections::BTreeMap;

/// Medians and within-round ratios, ready to print.
pub struct Report {
    /// (row, variant) -> median sample
    cells: BTreeMap<(Row, Variant), Sample>,
    pub big_calls: Vec<(usize, BigCall)>,
    classic: Vec<(&'static str, f64)>,
    pub memory: Memory,
    pub acl_load: AclLoad,
    pub failed_calls: u64,
    /// (row, numerator, denominator) -> median within-round ratio of server
    /// time per key
    ratios: BTreeMap<(Row, Variant, Variant), f64>,
    /// (row, numerator, denominator) -> the within-round ratios of server
    /// time per key over the rounds (median, lowest, highest, rounds)
    spreads: BTreeMap<(Row, Variant, Variant), Spread>,
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
            spreads: BTreeMap::new(),
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
        self.cells.insert(
            (row, variant),
            Sample {
                keys_per_sec: med(|s| s.keys_per_sec),
                server_us_per_key: med(|s| s.server_us_per_key),
                p50_ms: med(|s| s.p50_ms),
                p99_ms: med(|s| s.p99_ms),
                failed: samples.iter().map(|s| s.failed).sum(),
            },
        );
        for den in [
            Variant::Mset,
            Variant::Builtin,
            Variant::Lua,
            Variant::Setex,
            Variant::FloorEvents,
        ] {
            let spread = per_round(bench, row, variant, den, |s| s.server_us_per_key);
            if spread.median.is_finite() {
                self.ratios.insert((row, variant, den), spread.median);
                self.spreads.insert((row, variant, den), spread);
            }
        }
        self.rate_ratios.insert(
            (row, variant),
            per_round(bench, row, variant, Variant::Mset, |s| s.keys_per_sec).median,
        );
    }

    /// The within-round ratio of the module to `den` in the row given.
    pub fn ratio(&self, row: Row, den: Variant) -> f64 {
        self.ratios
            .get(&(row, Variant::Module, den))
            .copied()
            .unwrap_or(f64::NAN)
    }

    /// The within-round ratios of `num` to `den` in the row given: median,
    /// lowest, highest and rounds (no round when either never ran).
    pub fn spread(&self, row: Row, num: Variant, den: Variant) -> Spread {
        self.spreads
            .get(&(row, num, den))
            .copied()
            .unwrap_or(Spread::NONE)
    }

    /// The rows of the server under test, batch 100, TTL form, both workloads.
    pub fn main_row(
        &self,
        persistence: Persistence,
        replicate: Replicate,
        values: Values,
    ) -> [Row; 2] {
        Workload::BOTH.map(|workload| Row {
            setup: Setup {
                server: 0,
                form: Form::Ttl,
                persistence,
                replicate,
            },
            workload,
            values,
            batch: 100,
        })
    }
}

/// The within-round ratios of `f` between two variants of a row: median,
/// lowest, highest, rounds.
fn per_round(bench: &Bench, row: Row, num: Variant, den: Variant, f: fn(&Sample) -> f64) -> Spread {
    let (Some(a), Some(b)) = (
        bench.samples.get(&(row, num)),
        bench.samples.get(&(row, den)),
    ) else {
        return Spread::NONE;
    };
    let a: Vec<f64> = a.iter().map(f).collect();
    let b: Vec<f64> = b.iter().map(f).collect();
    ratio_spread(&a, &b)
}

/// (workload, values) -> the NUMKEYS form's server time per key over the
/// TTL form's, median of the rounds.
fn numkeys_vs_ttl(bench: &Bench) -> BTreeMap<(Workload, Values), f64> {
    let mut numkeys_vs_ttl = BTreeMap::new();
    for values in [Values::Small, Values::Integer] {
        for workload in Workload::BOTH {
            let row = |form| Row {
                setup: Setup {
                    server: 0,
                    form,
                    persistence: Persistence::None,
                    replicate: Replicate::Set,
                },
                workload,
                values,
                batch: 100,
            };
            // The two forms run on identical servers (pinned alike), one
            // after the other in each round: their server times compare
            // directly. Dividing each by its own server's MSET first
            // added MSET's noise: MSET of new integers took 0.55 or
            // 0.9 us a key from one server process to the next.
            let cost = |form| -> Vec<f64> {
                bench
                    .samples
                    .get(&(row(form), Variant::Module))
                    .map(|samples| samples.iter().map(|s| s.server_us_per_key).collect())
                    .unwrap_or_default()
            };
            let ratio = median_ratio(&cost(Form::Numkeys), &cost(Form::Ttl));
            numkeys_vs_ttl.insert((workload, values), ratio);
        }
    }
    numkeys_vs_ttl
}

/// Failed calls of every run, plus the runs that failed.
fn failed_calls(bench: &Bench) -> u64 {
    bench
        .samples
        .values()
        .flatten()
        .map(|s| s.failed)
        .sum::<u64>()
        + bench.failures.len() as u64
}

#[cfg(test)]
impl Report {
    /// A report of nothing measured: every ratio NaN.
    pub fn empty() -> Report {
        Report {
            cells: BTreeMap::new(),
            big_calls: Vec::new(),
            classic: Vec::new(),
            memory: Memory { rows: Vec::new() },
            acl_load: AclLoad {
                with_ms: f64::NAN,
                without_ms: f64::NAN,
                ratio: f64::NAN,
            },
            failed_calls: 0,
            ratios: BTreeMap::new(),
            spreads: BTreeMap::new(),
            rate_ratios: BTreeMap::new(),
            numkeys_vs_ttl: BTreeMap::new(),
        }
    }

    /// Records a within-round ratio as if measured.
    pub fn set_spread(&mut self, row: Row, num: Variant, den: Variant, spread: Spread) {
        self.ratios.insert((row, num, den), spread.median);
        self.spreads.insert((row, num, den), spread);
    }
}
