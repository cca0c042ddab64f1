//! The figures of README.md: the block between the bench markers, and the
//! inline figures `<!--bench:NAME-->...<!--/bench-->` of the "choose" table.

use super::Report;
use crate::plan::*;
use msetex_harness::Replicate;

const START: &str = "<!-- bench:start -->";
const END: &str = "<!-- bench:end -->";
const INLINE_END: &str = "<!--/bench-->";

/// The block's rows: (label, persistence and REPLICATE mode, values).
const LINES: [(&str, (Persistence, Replicate), Values); 5] = [
    ("no persistence", NONE, Values::Small),
    ("integer values", NONE, Values::Integer),
    (
        "cluster mode",
        (Persistence::Cluster, Replicate::Set),
        Values::Small,
    ),
    (
        "one replica, `REPLICATE SET`",
        (Persistence::Replica, Replicate::Set),
        Values::Small,
    ),
    ("one replica, `REPLICATE MSETEX`", REPLICA, Values::Small),
];

/// The inline figures: name, and the setup whose MSETEX costs they give.
const INLINE: [(&str, Replicate); 2] = [
    ("replica-set", Replicate::Set),
    ("replica-msetex", Replicate::Msetex),
];

impl Report {
    /// Rewrites the block between the bench markers in README.md, and its
    /// inline figures.
    pub fn update_readme(&self, path: &str, server: &str) {
        let Ok(readme) = std::fs::read_to_string(path) else {
            eprintln!("{path} not found: not updated");
            return;
        };
        let Some(mut updated) = super::splice(&readme, START, END, &self.readme_block(server))
        else {
            eprintln!("{path} has no {START} ... {END} block: not updated");
            return;
        };
        for (name, replicate) in INLINE {
            let setup = (Persistence::Replica, replicate);
            let [overwrite, fresh] = self.costs(setup, Values::Small, Variant::Module);
            updated = replace_inline(&updated, name, &format!("{overwrite} / {fresh}"));
        }
        std::fs::write(path, updated).expect("write README");
        eprintln!("updated the benchmark figures of {path}");
    }

    /// A variant's server time per key as a multiple of MSET's, in the main
    /// rows of a setup: [overwrite, new keys].
    fn costs(&self, setup: (Persistence, Replicate), v: Values, variant: Variant) -> [String; 2] {
        Setup::ttl(0, setup).rows(v).map(|row| {
            let ratio = self.ratios.get(&(row, variant, Variant::Mset));
            format!("{:.2}x", ratio.copied().unwrap_or(f64::NAN))
        })
    }

    /// The block, markers included.
    fn readme_block(&self, server: &str) -> String {
        let line = |(label, setup, values): &(&str, _, _)| {
            let [m_over, m_new] = self.costs(*setup, *values, Variant::Module);
            let [s_over, s_new] = self.costs(*setup, *values, Variant::Setex);
            format!("| {label} | {m_over} | {m_new} | {s_over} | {s_new} |\n")
        };
        let table: String = LINES.iter().map(line).collect();
        let [lua_over, lua_new] = self.costs(NONE, Values::Small, Variant::Lua);
        let classic = |prefix: &str| {
            let found = self
                .classic
                .iter()
                .find(|(label, _)| label.starts_with(prefix));
            found.map_or(f64::NAN, |(_, s)| *s)
        };
        let main = self.big_calls.iter().find(|(index, _)| *index == 0);
        let refresh = main.map_or(f64::NAN, |(_, call)| call[1].2);
        format!(
            "{START}\nServer time per key as a multiple of MSET's (which sets no TTL) in the \
             same run; lower is cheaper. {}, 100 keys per call, 32-byte values, keys of 14 \
             bytes (`k:` and 12 digits), 20 clients; \"TTL keys\": overwriting keys that hold \
             TTLs, as a session store does. MSETEX: INFO commandstats, one call against one \
             MSET; pipelined SETEX: the server's CPU time, its and MSET's (100 commands against \
             one call) ([docs/BENCHMARKS.md](docs/BENCHMARKS.md) has every server and row):\n\n\
             | | MSETEX, TTL keys | MSETEX, new keys | pipelined SETEX, TTL keys | pipelined SETEX, new keys |\n\
             | --- | ---: | ---: | ---: | ---: |\n{table}\n\
             The usual Lua `SET ... EX` loop costs {lua_over} / {lua_new}. 10,000 keys with a \
             10 s TTL from one client: {:.3} s with one MSETEX, {:.3} s with one MSET (no TTL), \
             {:.3} s with one SETEX per key; one MSETEX refreshing 10,000 keys costs \
             {refresh:.2}x the server time of one MSET of them. Against the module API's \
             floor, in instructions per key in every regime: `make bench-instr`, in \
             docs/BENCHMARKS.md.\n{END}",
            server,
            classic("(d)"),
            classic("(c)"),
            classic("(a)"),
        )
    }
}

/// `text` with the figure between `<!--bench:NAME-->` and the next
/// `<!--/bench-->` replaced by `figure`, wherever it appears.
fn replace_inline(text: &str, name: &str, figure: &str) -> String {
    let open = format!("<!--bench:{name}-->");
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(&open) {
        let after = &rest[at + open.len()..];
        let Some(close) = after.find(INLINE_END) else {
            break;
        };
        out.push_str(&rest[..at + open.len()]);
        out.push_str(figure);
        out.push_str(INLINE_END);
        rest = &after[close + INLINE_END.len()..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_block_states_its_regime_and_yardsticks() {
        let block = Report::default().readme_block("Redis 7.0.15");
        let first = block.lines().nth(1).unwrap();
        for words in [
            "Redis 7.0.15, 100 keys per call, 32-byte values, keys of 14 bytes",
            "MSETEX: INFO commandstats",
            "pipelined SETEX: the server's CPU time",
        ] {
            assert!(first.contains(words), "{words}: {first}");
        }
        // As many lines as before (README.md must stay under 250).
        assert_eq!(block.lines().count(), 13);
    }

    #[test]
    fn inline_figures_are_replaced_everywhere_and_nothing_else() {
        let text = "a <!--bench:x-->1x<!--/bench--> b <!--bench:y-->2x<!--/bench--> <!--bench:x-->old<!--/bench-->";
        assert_eq!(
            super::replace_inline(text, "x", "9x"),
            "a <!--bench:x-->9x<!--/bench--> b <!--bench:y-->2x<!--/bench--> <!--bench:x-->9x<!--/bench-->"
        );
        assert_eq!(super::replace_inline("no marker", "x", "9x"), "no marker");
    }
}
