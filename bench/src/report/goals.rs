//! The verdicts of `make bench`: which target of docs/bench-targets.txt applies to which figure
//! of the report. The order of the list is the order of the "Targets" table.

use super::Report;
use crate::plan::*;
use crate::targets::{short, Goal, Targets};
use msetex_harness::Target;

/// Every target, in the order of the table (a `%` in a goal's text: its limit).
pub fn goals(report: &Report, servers: &[Target], targets: &Targets) -> Vec<Goal> {
    let (main, mut list) = (servers[0].describe(), Vec::new());
    let mut at_most = |what: String, name: &str, ratio: f64, digits: usize| {
        let limit = targets.at_most(name);
        let what = what.replacen('%', &short(limit), 1);
        let measured = format!("{ratio:.digits$}x");
        list.push(Goal::new(&main, &what, name, measured, ratio <= limit));
    };
    // Without persistence, against MSET (integers), the Lua loop and pipelined SETEX.
    let dens = [
        (
            Values::Integer,
            Variant::Mset,
            "integer values, MSETEX / MSET",
            ".integer.msetex/mset",
        ),
        (
            Values::Small,
            Variant::Lua,
            "MSETEX / Lua SET EX loop",
            ".msetex/lua",
        ),
        (
            Values::Small,
            Variant::Setex,
            "MSETEX / pipelined SETEX",
            ".msetex/setex",
        ),
    ];
    for (values, den, what, name) in dens {
        for row in Setup::plain(0).rows(values) {
            let w = row.workload.label();
            let what = format!("no persistence, {what}, {w}: at most %x");
            let name = format!("main.no-persistence{name}.{w}");
            at_most(what, &name, report.ratio(row, den), 2);
        }
    }
    let what = "ACL LOAD of 2,000 users with the module: at most %x without".into();
    let name = "main.acl-load-2000-users.module/without";
    at_most(what, name, report.acl_load.ratio, 2);
    // The NUMKEYS form costs what the TTL form costs.
    let mut within = |what: String, name: String, ratio: f64, digits: usize| {
        let tolerance = targets.within(&name);
        let what = what.replacen('%', &format!("{}%", short(tolerance * 100.0)), 1);
        let holds = (ratio - 1.0).abs() <= tolerance;
        let measured = format!("{ratio:.digits$}x");
        list.push(Goal::new(&main, &what, &name, measured, holds));
    };
    let part = |v| if v == Values::Integer { ".integer" } else { "" };
    for (values, workload) in [Values::Small, Values::Integer]
        .into_iter()
        .flat_map(|v| Workload::BOTH.map(|w| (v, w)))
    {
        let ratio = report.numkeys_vs_ttl.get(&(workload, values)).copied();
        let (w, v) = (workload.label(), values.label());
        let what = format!(
            "no persistence, {v} {w}: NUMKEYS form / TTL form, server time per key, within % of 1"
        );
        let name = format!("main.no-persistence{}.numkeys/ttl.{w}", part(values));
        within(what, name, ratio.unwrap_or(f64::NAN), 2);
    }
    let name = "failed-calls-and-runs";
    let (limit, failed) = (targets.at_most(name), report.failed_calls);
    let what = match limit == 0.0 {
        true => "zero failed calls or runs".into(),
        false => format!("at most {} failed calls or runs", short(limit)),
    };
    let (measured, holds) = (failed.to_string(), failed as f64 <= limit);
    list.push(Goal::new("", &what, name, measured, holds));
    list
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::tests::server;
    use msetex_harness::Product;

    #[test]
    fn the_table_its_limits_and_verdicts_from_the_file() {
        let servers = [server(Product::Redis, (7, 0, 15))];
        let mut report = Report::default();
        let text = std::fs::read_to_string(crate::targets::default_path()).unwrap();
        let list = goals(&report, &servers, &Targets::parse(&text).unwrap());
        let verdicts = |goals: &[Goal], what: &str| -> Vec<(String, bool)> {
            let found = goals.iter().filter(|goal| goal.what.contains(what));
            found
                .map(|goal| (goal.measured.clone(), goal.holds))
                .collect()
        };
        assert_eq!(list.len(), 12);
        for expected in [
            "Redis 7.0.15, no persistence, MSETEX / pipelined SETEX, overwrite: at most 0.99x",
            "Redis 7.0.15, no persistence, MSETEX / Lua SET EX loop, overwrite: at most 0.33x",
            "Redis 7.0.15, no persistence, integer fresh: NUMKEYS form / TTL form, server time per key, within 10% of 1",
        ] {
            assert!(list.iter().any(|goal| goal.what == expected), "{expected}");
        }
        // Nothing measured: NaN holds no ratio target.
        let nan = ("NaNx".to_owned(), false);
        assert_eq!(verdicts(&list, "Lua"), [nan.clone(), nan]);
        assert_eq!(verdicts(&list, "zero failed"), [("0".to_owned(), true)]);
        // Other limits in the file, other verdicts.
        (report.failed_calls, report.acl_load.ratio) = (2, 1.7);
        let text = text.replace(
            "module/without             at-most  1.2",
            "module/without at-most 1.75",
        );
        let text = text.replace(
            "runs                               at-most  0",
            "runs at-most 3",
        );
        let goals = goals(&report, &servers, &Targets::parse(&text).unwrap());
        assert_eq!(verdicts(&goals, "failed calls"), [("2".to_owned(), true)]);
        assert_eq!(goals.last().unwrap().what, "at most 3 failed calls or runs");
        let acl = "ACL LOAD of 2,000 users with the module: at most 1.75x";
        assert_eq!(verdicts(&goals, acl), [("1.70x".to_owned(), true)]);
    }
}
