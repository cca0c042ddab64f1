//! `make bench`: MSETEX side by side with MSET, a Lua loop, pipelined SETEX and, where the
//! server has one, its built-in MSETEX, driven by redis-benchmark against servers started here;
//! `--instr` (`make bench-instr`, `make bench-gate`): instructions per key under callgrind against
//! the module API's floor (bench/floor), in every regime, on every server (`instr`).
//!
//! Every figure in docs/BENCHMARKS.md (and the block of README.md between the bench markers) is
//! written by this program. Machines are shared and noisy, so each wall-clock ratio is the median
//! over rounds of the ratio measured within one round, where the variants run one after another
//! on the same server. Sections: the server under test (`REDIS_SERVER`, default Debian's
//! redis-server) without persistence (1 to 1,000 keys per call, large and integer values), in
//! the NUMKEYS form, with the AOF and one replica in both REPLICATE modes, in cluster mode; every
//! server of ../shared/servers (or `SERVERS="bin ..."`) without persistence and with one
//! replica; one call of 10,000 keys against one MSET; the PHP experiment the project started
//! from; memory per key against SET ... EX; ACL LOAD of 2,000 users with and without the module.
//! The targets (docs/bench-targets.txt) are checked in both modes. Options: `options`.
//!
//! Modules: `options` (the command line), `plan` (what is measured, on which server), `pinning`
//! (CPUs), `run` (the runner and the experiments), `instr`, `statistics`, `targets` (the targets
//! file and the verdicts), `report` (docs/BENCHMARKS.md, docs/PROFILE.md, the README block) and
//! `machine`.

mod instr;
mod machine;
mod options;
mod pinning;
mod plan;
mod report;
mod run;
mod statistics;
mod targets;

use msetex_harness::Target;
use pinning::Pinning;
use report::Report;
use run::experiments::{acl_load, big_call, classic_experiment, memory_per_key, BigCall};
use run::{minutes, Bench};
use targets::Targets;

fn main() {
    let options = options::parse_options();
    // Read first: a malformed targets file stops the run before it starts.
    let targets = Targets::load();
    let servers = plan::servers(&options);
    if options.instr {
        // So is a missing floor module (bench/floor), before any server starts.
        run::floor_module();
        return instructions(options, servers, &targets);
    }
    let groups = plan::groups(servers);
    let runs = plan::run_count(&groups, servers, &options);
    let mut bench = Bench::new(options, servers, Pinning::detect(), runs);
    for group in &groups {
        bench.run_group(group);
    }
    bench
        .progress
        .report("one call of 10,000 keys against one MSET, on every server");
    let big_calls: Vec<(usize, BigCall)> = (0..servers.len())
        .map(|server| (server, big_call(&bench, server)))
        .collect();
    bench
        .progress
        .report("the classic experiment: 10,000 keys, one client");
    let classic = classic_experiment(&bench);
    bench.progress.report("memory per key");
    let memory = memory_per_key(&bench);
    bench
        .progress
        .report("ACL LOAD of 2,000 users, with and without the module");
    let acl = acl_load(&bench);
    let report = Report::new(&bench, big_calls, classic, memory, acl);
    write_report(&bench, &report, &targets);
}

/// `--instr`: every server under callgrind; the section of `--out` and of `--profile`; with
/// `--gate`, exits 1 when a target is missed.
fn instructions(options: options::Options, servers: &'static [Target], targets: &Targets) {
    let (wrapped, dirs): (Vec<_>, Vec<_>) = servers.iter().map(instr::under_callgrind).unzip();
    let wrapped: &'static [Target] = Box::leak(wrapped.into_boxed_slice());
    // The phases: every variant in four regimes and two workloads; the 10,000-key call's six.
    let phases = servers
        .iter()
        .map(|s| instr::variants(s).len() * 8 + 6)
        .sum();
    let mut progress = run::Progress::new(phases);
    let bench = Bench::new(options, wrapped, Pinning::Off("callgrind".into()), 0);
    let mut measured = instr::Instr::default();
    for (index, dir) in dirs.iter().enumerate() {
        instr::measure_server(&bench, &mut measured, &mut progress, index, dir);
    }
    let (goals, missed) = targets::goals::instr_goals(&measured, servers, targets);
    let mut about = machine::machine(&bench);
    about.retain(|(what, _)| !matches!(*what, "client" | "CPU pinning"));
    let block = measured.markdown(servers, &about, &goals);
    println!("{block}");
    report::splice_file(&bench.options.out, &block);
    if bench.options.profile != "-" {
        let profile = measured.profile_markdown(servers, &missed);
        report::splice_file(&bench.options.profile, &profile);
    }
    for goal in goals.iter().filter(|goal| !goal.holds) {
        eprintln!("missed: {} ({})", goal.what, goal.measured);
    }
    if bench.options.gate && goals.iter().any(|goal| !goal.holds) {
        std::process::exit(1);
    }
}

/// Prints the report, writes it to `--out`, then updates the README block.
fn write_report(bench: &Bench, report: &Report, targets: &Targets) {
    let markdown = report.markdown(bench, targets);
    print!("{markdown}");
    std::fs::write(&bench.options.out, &markdown).expect("write the benchmark report");
    eprintln!(
        "wrote {} in {}",
        bench.options.out,
        minutes(bench.progress.started.elapsed().as_secs())
    );
    if bench.options.readme != "-" {
        report.update_readme(&bench.options.readme, &bench.servers[0].describe());
    }
}
