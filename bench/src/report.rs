//! What the runs of `make bench` add up to: medians and within-round ratios (here), the
//! verdicts (`goals`) and the Markdown of docs/BENCHMARKS.md (`markdown`).

mod goals;
mod markdown;

use crate::plan::*;
use crate::run::experiments::AclLoad;
use crate::run::{Bench, Sample};
use crate::statistics::{median, median_ratio};
use std::collections::BTreeMap;

/// Medians and within-round ratios, ready to print.
#[derive(Default)]
pub struct Report {
    /// (row, variant) -> median sample
    cells: BTreeMap<(Row, Variant), Sample>,
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
    pub fn new(bench: &Bench, acl_load: AclLoad) -> Report {
        let mut report = Report {
            cells: BTreeMap::new(),
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
        use Variant::{Builtin, Lua, Mset, Setex};
        for den in [Mset, Builtin, Lua, Setex] {
            let (a, b) = ((row, variant), (row, den));
            let ratio = match variant == Setex || den == Setex {
                true => per_round(bench, a, b, |s| s.cpu_us_per_key),
                false => per_round(bench, a, b, |s| s.server_us_per_key),
            };
            if ratio.is_finite() {
                self.ratios.insert((row, variant, den), ratio);
            }
        }
        let (a, mset) = ((row, variant), (row, Mset));
        let rate = per_round(bench, a, mset, |s| s.keys_per_sec);
        self.rate_ratios.insert(a, rate);
    }

    /// The within-round ratio of the module to `den` in the row given.
    pub fn ratio(&self, row: Row, den: Variant) -> f64 {
        let ratio = self.ratios.get(&(row, Variant::Module, den));
        ratio.copied().unwrap_or(f64::NAN)
    }
}

/// The median of the within-round ratios of `f` between two (row, variant) runs.
fn per_round(bench: &Bench, a: (Row, Variant), b: (Row, Variant), f: fn(&Sample) -> f64) -> f64 {
    let figures = |k| {
        bench
            .samples
            .get(&k)
            .map(|s| s.iter().map(f).collect::<Vec<_>>())
    };
    let figures = |k| figures(k).unwrap_or_default();
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
            let (a, b) = (
                (row.at(setups()[1]), Variant::Module),
                (row, Variant::Module),
            );
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
