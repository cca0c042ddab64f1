//! `make bench`: MSETEX side by side with MSET, a Lua loop, pipelined SETEX and, where the
//! server has one, its built-in MSETEX, driven by redis-benchmark against servers started here;
//! `--instr` (`make bench-instr`, `make bench-gate`): instructions per key under callgrind against
//! the module API's floor (bench/floor), in every regime, on every server (`instr`).
//!
//! Every figure in docs/BENCHMARKS.md, docs/PROFILE.md's bench section and the block of README.md
//! between the bench markers is written by this program. Machines are shared and noisy, so each
//! wall-clock ratio is the median over rounds of the ratio measured within one round, where the
//! variants run one after another on the same server. `make bench` measures the server under
//! test (`REDIS_SERVER`, default Debian's redis-server) without persistence (1 to 1,000 keys per
//! call, large and integer values) in both forms, and ACL LOAD
//! of 2,000 users with and without the module; the instruction bench every server of
//! ../shared/servers (or `SERVERS="bin ..."`), with the AOF, a replica and in cluster mode too.
//! The targets (docs/bench-targets.txt) are checked in both.
//!
//! Modules: `options` (the command line), `plan` (what is measured, on which server), `pinning`
//! (CPUs), `run` (the runner and the experiments), `statistics`, `report` (make bench's verdicts
//! and docs/BENCHMARKS.md), `instr` (make bench-instr: its measurements, verdicts and sections,
//! the README block), `targets` (the targets file, what a verdict is) and `machine`. Imports go
//! one way: `targets` and `plan` import no other module of the bench, `run` none of `instr`,
//! `report` or `targets`, `instr` none of `report`.

mod instr;
mod machine;
mod options;
mod pinning;
mod plan;
mod report;
mod run;
mod statistics;
mod targets;

use instr::report::splice_file;
use msetex_harness::Target;
use pinning::Pinning;
use report::Report;
use run::experiments::acl_load;
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
    // The server under test only: every other server's figures are the instruction bench's.
    let runs = plan::run_count(&servers[..1], &options);
    let mut bench = Bench::new(options, &servers[..1], Pinning::detect(), runs);
    bench.run_group(&plan::setups());
    bench.progress.report("ACL LOAD of 2,000 users");
    let report = Report::new(&bench, acl_load(&bench));
    write_report(&bench, &report, &targets);
}

/// `--instr`: every server under callgrind; the sections of `--out` and of `--profile`, and
/// README.md's block (`--readme`); with `--gate`, exits 1 when a target is missed.
fn instructions(options: options::Options, servers: &'static [Target], targets: &Targets) {
    let (wrapped, dirs): (Vec<_>, Vec<_>) = servers.iter().map(instr::under_callgrind).unzip();
    let wrapped: &'static [[Target; 2]] = Box::leak(wrapped.into_boxed_slice());
    let measured: Vec<Target> = wrapped.iter().map(|[server, _]| server.clone()).collect();
    let phases = servers.iter().map(|s| instr::phases(s, options.gate)).sum();
    let mut progress = run::Progress::new(phases);
    let pinning = Pinning::Off("callgrind".into());
    let bench = Bench::new(options, Box::leak(measured.into_boxed_slice()), pinning, 0);
    let mut instr = instr::Instr::default();
    for (index, dir) in dirs.iter().enumerate() {
        let roles = (&servers[index], &wrapped[index][1], dir);
        instr::measure_server(&bench, &mut instr, &mut progress, index, roles);
    }
    let (options, gate) = (&bench.options, bench.options.gate);
    let goals = servers.iter().enumerate();
    let goals: Vec<_> = goals
        .flat_map(|(i, s)| instr.goals(targets, i, s, gate))
        .collect();
    let mut about = machine::machine(&bench);
    about.retain(|(what, _)| !matches!(*what, "client" | "CPU pinning"));
    let block = instr.markdown(servers, &about, &goals);
    println!("{block}");
    splice_file(&options.out, &block);
    if options.profile != "-" {
        splice_file(&options.profile, &instr.profile_markdown(servers));
    }
    let readme = std::fs::read_to_string(&options.readme).unwrap_or_default();
    match instr
        .readme(&servers[0], &readme)
        .filter(|_| options.readme != "-")
    {
        Some(text) => std::fs::write(&options.readme, text).expect("write README"),
        None => eprintln!("{}: not updated", options.readme),
    }
    for goal in goals.iter().filter(|goal| !goal.holds) {
        eprintln!("missed: {} ({})", goal.what, goal.measured);
    }
    eprintln!("{}", targets::verdict(&goals));
    if gate && goals.iter().any(|goal| !goal.holds) {
        std::process::exit(1);
    }
}

/// Prints the report and its verdict, writes it to `--out`.
fn write_report(bench: &Bench, report: &Report, targets: &Targets) {
    let markdown = report.markdown(bench, targets);
    print!("{markdown}");
    std::fs::write(&bench.options.out, &markdown).expect("write the benchmark report");
    eprintln!(
        "wrote {} in {}",
        bench.options.out,
        minutes(bench.progress.started.elapsed().as_secs())
    );
    let verdict = markdown.lines().find(|line| line.starts_with("Verdict:"));
    eprintln!("{}", verdict.unwrap_or_default());
}
