//! The performance targets: the thresholds of docs/BENCHMARKS.md's
//! "Targets" tables, read from docs/bench-targets.txt (parsed here); what a
//! verdict is ([`Goal`]), its table and its one line ([`verdict`]). Which
//! target applies to which figure: `report::goals` (make bench) and
//! `instr::report` (make bench-instr).
//!
//! A line of the file is `<name> <comparison> <value>`, then optionally
//! `# why`; blank lines and lines starting with `#` are comments. The
//! comparison is `at-most` (the figure must be <= value) or `within` (the
//! figure must lie within value of 1); the value is a number (`1.7`), a
//! fraction (`1/3`) or a percentage (`10%`).

use std::collections::BTreeMap;
use Comparison::{AtMost, Within};

/// Every target the reports need, with its comparison and whether it is one per workload
/// (`.overwrite` and `.fresh`): the file must hold exactly these.
const BASES: &[(&str, Comparison, bool)] = &[
    ("main.no-persistence.integer.msetex/mset", AtMost, true),
    ("main.no-persistence.msetex/lua", AtMost, true),
    ("main.no-persistence.msetex/setex", AtMost, true),
    ("main.no-persistence.numkeys/ttl", Within, true),
    ("main.no-persistence.integer.numkeys/ttl", Within, true),
    ("main.acl-load-2000-users.module/without", AtMost, false),
    ("failed-calls-and-runs", AtMost, false),
    ("others.instructions.msetex/floor", AtMost, true),
    ("redis70.instructions.msetex/floor", AtMost, true),
    ("others.instructions.integer.msetex/floor", AtMost, true),
    ("redis70.instructions.integer.msetex/floor", AtMost, true),
    ("every.instructions.msetex/setex", AtMost, true),
    ("builtin.instructions.module/builtin", AtMost, true),
    ("others.instructions-10000-keys.msetex/floor", AtMost, true),
    ("redis70.instructions-10000-keys.msetex/floor", AtMost, true),
    ("every.instructions.stored/set-ex", Within, false),
    (
        "every.instructions-replicated-set.msetex/setex",
        AtMost,
        true,
    ),
    (
        "every.instructions-replicated-msetex.msetex/setex",
        AtMost,
        true,
    ),
    ("every.instructions-replica.applied/setex", AtMost, true),
    ("every.instructions-aof-reload.applied/setex", AtMost, false),
    ("every.instructions-cluster.msetex/setex", AtMost, true),
    ("builtin.instructions-cluster.module/builtin", AtMost, true),
    ("every.instructions-cluster.keys/call", AtMost, false),
    (
        "valkey91.instructions-100000-pairs.cluster/outside",
        AtMost,
        false,
    ),
];

/// The names of [`BASES`], one per workload where they are.
pub fn names() -> Vec<(String, Comparison)> {
    let mut names = Vec::new();
    for &(base, comparison, per_workload) in BASES {
        let workloads: &[&str] = match per_workload {
            true => &[".overwrite", ".fresh"],
            false => &[""],
        };
        names.extend(workloads.iter().map(|w| (format!("{base}{w}"), comparison)));
    }
    names
}

/// One line of a Targets table: what (server first), the target's name, the figure, whether it
/// holds.
pub struct Goal {
    pub what: String,
    pub name: String,
    pub server: String,
    pub measured: String,
    pub holds: bool,
}

impl Goal {
    /// A goal about `server` ("": about no one server), `what` after the server's name.
    pub fn new(server: &str, what: &str, name: &str, measured: String, holds: bool) -> Goal {
        let what = match server.is_empty() {
            true => what.to_owned(),
            false => format!("{server}, {what}"),
        };
        let (name, server) = (name.to_owned(), server.to_owned());
        Goal {
            what,
            name,
            server,
            measured,
            holds,
        }
    }
}

/// A Targets table's rows, then its verdict.
pub fn goals_table(goals: &[Goal]) -> String {
    let mut md = "| target | measured | holds |\n| --- | ---: | --- |\n".to_owned();
    for goal in goals {
        let holds = if goal.holds { "yes" } else { "**no**" };
        md.push_str(&format!(
            "| {} | {} | {holds} |\n",
            goal.what, goal.measured
        ));
    }
    md + "\n" + &verdict(goals) + "\n"
}

/// The one line a commit message can quote: how many hold, and the missed targets by name with
/// their servers; computed from the table's own goals.
pub fn verdict(goals: &[Goal]) -> String {
    let mut missed: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for goal in goals.iter().filter(|goal| !goal.holds) {
        let servers = missed.entry(&goal.name).or_default();
        if !goal.server.is_empty() && !servers.contains(&goal.server.as_str()) {
            servers.push(&goal.server);
        }
    }
    let held = goals.len() - goals.iter().filter(|goal| !goal.holds).count();
    let list: Vec<String> = missed
        .iter()
        .map(|(name, servers)| match servers.is_empty() {
            true => name.to_string(),
            false => format!("{name} ({})", servers.join(", ")),
        })
        .collect();
    match list.is_empty() {
        true => format!("Verdict: every target holds ({held} of {held})."),
        false => format!(
            "Verdict: {held} of {} targets hold; missed: {}.",
            goals.len(),
            list.join("; ")
        ),
    }
}

/// What a figure against the built-in or pipelined SETEX may reach: its own limit, or where the
/// floor itself is further above that yardstick, the floor's distance times the floor's target (a
/// bound, not a waiver).
pub fn bound(limit: f64, floor_over_yardstick: f64, floor_limit: f64) -> f64 {
    match floor_over_yardstick * floor_limit {
        floor if floor > limit => floor,
        _ => limit,
    }
}

/// `1.1`, `0.99`: a limit as the tables print it.
pub fn short(value: f64) -> String {
    let text = format!("{value:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}
use std::path::PathBuf;

/// How a measured figure is held against a target's value.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Comparison {
    /// The figure must be at most the value.
    AtMost,
    /// The figure must lie within the value of 1: |figure - 1| <= value.
    Within,
}

impl Comparison {
    fn word(self) -> &'static str {
        match self {
            Comparison::AtMost => "at-most",
            Comparison::Within => "within",
        }
    }

    fn parse(word: &str) -> Option<Comparison> {
        [Comparison::AtMost, Comparison::Within]
            .into_iter()
            .find(|c| c.word() == word)
    }
}

/// One line of the file.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct Limit {
    pub comparison: Comparison,
    pub value: f64,
    /// 1-based line number, for messages.
    pub line: usize,
}

/// Every target of the file, by name.
#[derive(Debug)]
pub struct Targets {
    limits: BTreeMap<String, Limit>,
}

/// docs/bench-targets.txt, from this crate's manifest (bench/).
pub fn default_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/bench-targets.txt")
}

impl Targets {
    /// Reads and checks docs/bench-targets.txt; panics, naming the file and
    /// the line, if it cannot be read, is malformed, lacks a target the
    /// report needs or has one it does not know.
    pub fn load() -> Targets {
        let path = default_path();
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read the targets file {}: {e}", path.display()));
        Targets::parse(&text)
            .and_then(|targets| targets.check(&names()).map(|()| targets))
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// Parses the text of a targets file.
    pub fn parse(text: &str) -> Result<Targets, String> {
        let mut limits = BTreeMap::new();
        for (index, line) in text.lines().enumerate() {
            let number = index + 1;
            let Some((name, limit)) =
                parse_line(line, number).map_err(|e| format!("line {number}: {e}"))?
            else {
                continue;
            };
            if let Some(first) = limits.get(name).map(|limit: &Limit| limit.line) {
                return Err(format!(
                    "line {number}: {name} is already set on line {first}"
                ));
            }
            limits.insert(name.to_owned(), limit);
        }
        Ok(Targets { limits })
    }

    /// Whether the file holds exactly the targets `names`, each with its
    /// comparison.
    pub fn check<N: AsRef<str>>(&self, names: &[(N, Comparison)]) -> Result<(), String> {
        for (name, comparison) in names {
            let (name, word) = (name.as_ref(), comparison.word());
            match self.limits.get(name) {
                None => {
                    return Err(format!(
                        "no target {name} (expected `{name} {word} <value>`)"
                    ))
                }
                Some(limit) if limit.comparison != *comparison => {
                    let (line, other) = (limit.line, limit.comparison.word());
                    return Err(format!(
                        "line {line}: {name} must be `{word}`, not `{other}`"
                    ));
                }
                Some(_) => {}
            }
        }
        let unknown =
            |(name, _): &(&String, &Limit)| !names.iter().any(|(n, _)| n.as_ref() == *name);
        match self.limits.iter().find(unknown) {
            Some((name, limit)) => Err(format!(
                "line {}: unknown target {name} (no row of the report has that name)",
                limit.line
            )),
            None => Ok(()),
        }
    }

    /// Whether the file sets the target `name`.
    pub fn has(&self, name: &str) -> bool {
        self.limits.contains_key(name)
    }

    /// The value of an `at-most` target.
    pub fn at_most(&self, name: &str) -> f64 {
        self.value(name, Comparison::AtMost)
    }

    /// The value of a `within` target: the tolerance around 1.
    pub fn within(&self, name: &str) -> f64 {
        self.value(name, Comparison::Within)
    }

    fn value(&self, name: &str, comparison: Comparison) -> f64 {
        match self.limits.get(name) {
            Some(limit) if limit.comparison == comparison => limit.value,
            Some(limit) => panic!(
                "target {name} (line {}) is `{}`, the report needs `{}`",
                limit.line,
                limit.comparison.word(),
                comparison.word()
            ),
            None => panic!("no target {name} in {}", default_path().display()),
        }
    }
}

/// A line's target, or `None` for a blank or comment line.
fn parse_line(line: &str, number: usize) -> Result<Option<(&str, Limit)>, String> {
    let content = line.split_once('#').map_or(line, |(before, _)| before);
    let fields: Vec<&str> = content.split_whitespace().collect();
    let [name, comparison, value] = fields[..] else {
        if fields.is_empty() {
            return Ok(None);
        }
        return Err(format!(
            "expected `<name> <comparison> <value>  # why`, found {} field(s) in {:?}",
            fields.len(),
            line.trim()
        ));
    };
    let comparison = Comparison::parse(comparison).ok_or_else(|| {
        format!("unknown comparison {comparison:?} for {name} (at-most or within)")
    })?;
    let value = parse_value(value).ok_or_else(|| {
        format!(
            "{name}: {value:?} is not a value (a number such as 1.7, a fraction such as 1/3 \
             or a percentage such as 10%, at least 0)"
        )
    })?;
    Ok(Some((
        name,
        Limit {
            comparison,
            value,
            line: number,
        },
    )))
}

/// `1.7`, `1/3` or `10%`: a finite number, at least 0.
fn parse_value(text: &str) -> Option<f64> {
    let number = |text: &str| text.parse::<f64>().ok().filter(|v| v.is_finite());
    let value = if let Some(percent) = text.strip_suffix('%') {
        number(percent)? / 100.0
    } else if let Some((numerator, denominator)) = text.split_once('/') {
        number(numerator)? / number(denominator).filter(|d| *d != 0.0)?
    } else {
        number(text)?
    };
    (value >= 0.0).then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_comments_blanks_values_and_errors() {
        let text = "# a header\n\na.b.overwrite   at-most 1.7   # why\n\t c  within  10%\n";
        let targets = Targets::parse(text).unwrap();
        let values = (targets.at_most("a.b.overwrite"), targets.within("c"));
        assert_eq!(
            (targets.limits.len(), targets.limits["c"].line, values),
            (2, 4, (1.7, 0.1))
        );
        for (text, value) in [("10%", 0.1), ("1/3", 1.0 / 3.0), ("0", 0.0), ("0.99", 0.99)] {
            assert_eq!(parse_value(text), Some(value), "{text}");
        }
        for text in [
            "", "x", "-1", "1/0", "inf", "NaN", "1/x", "%", "1.5x", "1/2/3",
        ] {
            assert_eq!(parse_value(text), None, "{text}");
        }
        let error = |text| Targets::parse(text).unwrap_err();
        let fields = "expected `<name> <comparison> <value>  # why`, found 2 field(s)";
        let expected = format!("line 2: {fields} in \"name at-most\"");
        assert_eq!(error("# ok\nname at-most\n"), expected);
        assert_eq!(
            error("\nname below 1\n"),
            "line 2: unknown comparison \"below\" for name (at-most or within)"
        );
        assert!(error("name at-most 1.7x").starts_with("line 1: name: \"1.7x\" is not a value"));
        let twice = "line 2: a is already set on line 1";
        assert_eq!(error("a at-most 1\na at-most 2\n"), twice);
        let names = [("a", Comparison::AtMost), ("b", Comparison::Within)];
        let check = |text| Targets::parse(text).unwrap().check(&names);
        assert_eq!(check("a at-most 1\nb within 5%\n"), Ok(()));
        let missing = "no target b (expected `b within <value>`)";
        assert_eq!(check("a at-most 1\n"), Err(missing.into()));
        let unknown = "line 3: unknown target c (no row of the report has that name)";
        assert_eq!(
            check("a at-most 1\nb within 5%\nc at-most 2\n"),
            Err(unknown.into())
        );
        let wrong = "line 1: a must be `at-most`, not `within`";
        assert_eq!(check("a within 1\nb within 5%\n"), Err(wrong.into()));
    }

    #[test]
    fn bounds_and_the_verdict() {
        // The floor 1.155 times the built-in, at its target 1.1: 1.2705; no lower than the limit.
        assert!((bound(1.15, 1.155, 1.1) - 1.2705).abs() < 1e-9);
        assert_eq!(
            (bound(1.15, 1.0, 1.1), bound(1.15, f64::NAN, 1.1)),
            (1.15, 1.15)
        );
        let goal = |server, name, holds| Goal::new(server, "x", name, String::new(), holds);
        let mut goals = vec![goal("A", "a.b", true), goal("B", "c.d", true)];
        assert_eq!(verdict(&goals), "Verdict: every target holds (2 of 2).");
        goals.extend([
            goal("A", "c.d", false),
            goal("B", "c.d", false),
            goal("", "e", false),
        ]);
        let missed = "Verdict: 2 of 5 targets hold; missed: c.d (A, B); e.";
        assert_eq!(verdict(&goals), missed);
        assert!(goals_table(&goals).ends_with(&format!("\n\n{missed}\n")));
    }

    #[test]
    fn the_repository_file_holds_every_target() {
        let text = std::fs::read_to_string(default_path()).unwrap();
        let targets = Targets::parse(&text).unwrap();
        targets.check(&names()).unwrap();
        let floor =
            |who, workload| targets.at_most(&format!("{who}.instructions.msetex/floor.{workload}"));
        assert_eq!(
            (floor("redis70", "overwrite"), floor("others", "fresh")),
            (1.24, 1.05)
        );
        let keys = targets.at_most("every.instructions-cluster.keys/call");
        assert_eq!(keys, 0.05);
    }
}
