//! The block of README.md between the bench markers.

use super::Report;
use crate::plan::*;
use msetex_harness::Replicate;

const START: &str = "<!-- bench:start -->";
const END: &str = "<!-- bench:end -->";

/// The README's lines: (label, persistence, REPLICATE mode, values, against).
const LINES: [(&str, Persistence, Replicate, Values, Variant); 6] = [
    (
        "no persistence",
        Persistence::None,
        Replicate::Set,
        Values::Small,
        Variant::Mset,
    ),
    (
        "integer values, no persistence",
        Persistence::None,
        Replicate::Set,
        Values::Integer,
        Variant::Mset,
    ),
    (
        "cluster mode, no replica",
        Persistence::Cluster,
        Replicate::Set,
        Values::Small,
        Variant::Mset,
    ),
    (
        "one replica, `REPLICATE SET` (default)",
        Persistence::Replica,
        Replicate::Set,
        Values::Small,
        Variant::Mset,
    ),
    (
        "one replica, `REPLICATE MSETEX`",
        Persistence::Replica,
        Replicate::Msetex,
        Values::Small,
        Variant::Mset,
    ),
    (
        "MSETEX against the usual Lua `SET ... EX` loop",
        Persistence::None,
        Replicate::Set,
        Values::Small,
        Variant::Lua,
    ),
];

impl Report {
    /// Rewrites the block between the bench markers in README.md.
    pub fn update_readme(&self, path: &str) {
        let Ok(readme) = std::fs::read_to_string(path) else {
            eprintln!("{path} not found: not updated");
            return;
        };
        let (Some(start), Some(end)) = (readme.find(START), readme.find(END)) else {
            eprintln!("{path} has no {START} ... {END} block: not updated");
            return;
        };
        let updated = format!(
            "{}{}{}",
            &readme[..start],
            self.readme_block(),
            &readme[end + END.len()..]
        );
        std::fs::write(path, updated).expect("write README");
        eprintln!("updated the benchmark block of {path}");
    }

    /// The block, markers included.
    fn readme_block(&self) -> String {
        let table: String = LINES
            .iter()
            .map(|(label, persistence, replicate, values, den)| {
                let [overwrite, fresh] = self
                    .main_row(*persistence, *replicate, *values)
                    .map(|row| format!("{:.2}x", self.ratio(row, *den)));
                format!("| {label} | {overwrite} | {fresh} |\n")
            })
            .collect();
        let classic = |prefix: &str| {
            self.classic
                .iter()
                .find(|(label, _)| label.starts_with(prefix))
                .map_or(f64::NAN, |(_, s)| *s)
        };
        let refresh = self
            .big_calls
            .iter()
            .find(|(index, _)| *index == 0)
            .map_or(f64::NAN, |(_, call)| call.refresh_ratio);
        format!(
            "{START}\nFrom the last `make bench` ([docs/BENCHMARKS.md](docs/BENCHMARKS.md): \
             every server, every row); server time per key against MSET, which sets no TTL, \
             in the same run (100 keys per call, 32-byte values, 20 clients; keys that \
             already hold TTLs / new keys):\n\n\
             | | overwrite | new keys |\n| --- | ---: | ---: |\n{table}\n\
             10,000 keys with a 10 s TTL from one client: {:.3} s with one MSETEX, {:.3} s \
             with one MSET (no TTL), {:.3} s with one SETEX per key; one call refreshing \
             10,000 keys costs {refresh:.2}x the server time of one MSET of them.\n{END}",
            classic("(d)"),
            classic("(c)"),
            classic("(a)"),
        )
    }
}
