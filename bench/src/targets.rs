//! The performance targets: the thresholds of docs/BENCHMARKS.md's
//! "Targets" table, read from docs/bench-targets.txt (parsed here), and the
//! verdicts (`goals`: which target applies to which row and server).
//!
//! A line of the file is `<name> <comparison> <value>`, then optionally
//! `# why`; blank lines and lines starting with `#` are comments. The
//! comparison is `at-most` (the figure must be <= value) or `within` (the
//! figure must lie within value of 1); the value is a number (`1.7`), a
//! fraction (`1/3`) or a percentage (`10%`).

pub mod goals;

pub use goals::goals;

use std::collections::BTreeMap;
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
            .and_then(|targets| targets.check(&goals::names()).map(|()| targets))
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
    fn lines_comments_and_blanks() {
        let targets = Targets::parse(
            "# a header\n\
             \n\
             a.b.overwrite   at-most 1.7   # why\n\
             \t c  within  10%\n\
             lua at-most 1/3 # a third\n",
        )
        .unwrap();
        assert_eq!(targets.limits.len(), 3);
        assert_eq!(targets.at_most("a.b.overwrite"), 1.7);
        assert_eq!(targets.within("c"), 10.0 / 100.0);
        assert_eq!(targets.at_most("lua"), 1.0 / 3.0);
        assert_eq!(targets.limits["c"].line, 4);
    }

    #[test]
    fn values_read_as_the_literals_they_replace() {
        let good = [
            ("10%", 0.1),
            ("5%", 0.05),
            ("1/3", 1.0 / 3.0),
            ("1", 1.0),
            ("0", 0.0),
        ];
        for (text, value) in good.into_iter().chain([("0.99", 0.99)]) {
            assert_eq!(parse_value(text), Some(value), "{text}");
        }
        for text in [
            "", "x", "-1", "1/0", "inf", "NaN", "1/x", "%", "1.5x", "1/2/3",
        ] {
            assert_eq!(parse_value(text), None, "{text}");
        }
    }

    #[test]
    fn a_malformed_line_is_named() {
        let error = |text| Targets::parse(text).unwrap_err();
        assert_eq!(
            error("# ok\nname at-most\n"),
            "line 2: expected `<name> <comparison> <value>  # why`, found 2 field(s) in \"name at-most\""
        );
        assert_eq!(
            error("name at-most 1 2\n"),
            "line 1: expected `<name> <comparison> <value>  # why`, found 4 field(s) in \"name at-most 1 2\""
        );
        assert_eq!(
            error("\nname below 1\n"),
            "line 2: unknown comparison \"below\" for name (at-most or within)"
        );
        assert!(error("name at-most 1.7x").starts_with("line 1: name: \"1.7x\" is not a value"));
        assert_eq!(
            error("a at-most 1\nb within 5%\na at-most 2\n"),
            "line 3: a is already set on line 1"
        );
    }

    #[test]
    fn check_wants_every_known_name_and_no_other() {
        let names = [("a", Comparison::AtMost), ("b", Comparison::Within)];
        let targets = Targets::parse("a at-most 1\nb within 5%\n").unwrap();
        assert_eq!(targets.check(&names), Ok(()));
        let missing = Targets::parse("a at-most 1\n").unwrap();
        assert_eq!(
            missing.check(&names),
            Err("no target b (expected `b within <value>`)".into())
        );
        let unknown = Targets::parse("a at-most 1\nb within 5%\nc at-most 2\n").unwrap();
        assert_eq!(
            unknown.check(&names),
            Err("line 3: unknown target c (no row of the report has that name)".into())
        );
        let wrong = Targets::parse("a within 1\nb within 5%\n").unwrap();
        assert_eq!(
            wrong.check(&names),
            Err("line 1: a must be `at-most`, not `within`".into())
        );
    }

    #[test]
    fn the_repository_file_holds_every_target() {
        let text = std::fs::read_to_string(default_path()).unwrap();
        let targets = Targets::parse(&text).unwrap();
        targets.check(&goals::names()).unwrap();
        assert_eq!(
            targets.at_most("redis70.instructions.msetex/floor.overwrite"),
            1.2
        );
        assert_eq!(
            targets.at_most("others.instructions.msetex/floor.fresh"),
            1.05
        );
        assert_eq!(
            targets.at_most("builtin.instructions.module/builtin.fresh"),
            1.15
        );
        // The wall-clock floor targets the instruction targets replace are gone.
        for name in [
            "no-builtin.no-persistence.msetex/floor-events.overwrite",
            "main.one-call-10000-keys.msetex/floor-events.overwrite",
        ] {
            assert!(
                goals::names().iter().all(|(known, _)| known != name),
                "{name}"
            );
        }
    }
}
