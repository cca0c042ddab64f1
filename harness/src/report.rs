//! Long runs, recorded figures and skipped tests (`MSETEX_SOAK`,
//! `MSETEX_RESULTS`, `MSETEX_SKIPS`).

use std::fs;
use std::io::Write;
use std::path::Path;

use crate::*;

/// True under `make soak` (MSETEX_SOAK=long): tests use their full size.
pub fn long_run() -> bool {
    std::env::var("MSETEX_SOAK").is_ok_and(|v| v == "long")
}

/// `suite` in the normal test suite, `long` under `make soak`.
pub fn scaled(suite: usize, long: usize) -> usize {
    if long_run() {
        long
    } else {
        suite
    }
}

/// Appends one result row (`| test | figures |`) to $MSETEX_RESULTS, which
/// `make soak` turns into docs/RELIABILITY.md. A no-op otherwise.
pub fn record_result(test: &str, figures: &str) {
    let Some(path) = std::env::var_os("MSETEX_RESULTS") else {
        return;
    };
    append(&path, &format!("| {test} | {figures} |\n"), "a result");
}

/// Appends `line` to the file at `path`; a failure is reported on stderr
/// (it loses `what`, it fails no test).
fn append(path: &std::ffi::OsStr, line: &str, what: &str) {
    let written = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut file| file.write_all(line.as_bytes()));
    if let Err(e) = written {
        eprintln!("cannot record {what} in {}: {e}", Path::new(path).display());
    }
}

/// Skips the running test on servers that lack what it tests: returns true
/// (and the test returns at once) unless `supported`. The skip and its reason
/// go to stderr and to $MSETEX_SKIPS, which `make test-matrix` reads so that
/// a skipped test is reported as skipped, never counted as passed.
///
/// ```ignore
/// if skip_unless(target().is_7_0_or_later(), "COMMAND DOCS needs Redis 7.0") {
///     return;
/// }
/// ```
pub fn skip_unless(supported: bool, reason: &str) -> bool {
    if supported {
        return false;
    }
    let test = std::thread::current()
        .name()
        .unwrap_or("unnamed")
        .to_owned();
    // The test's name is its path in the suite: `concern::test`.
    let line = format!("{test}\t{}\t{reason}\n", target().describe());
    eprintln!("SKIPPED {test} on {}: {reason}", target().describe());
    if let Some(path) = std::env::var_os("MSETEX_SKIPS") {
        append(&path, &line, "a skip");
    }
    true
}
