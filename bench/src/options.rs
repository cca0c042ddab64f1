//! The command line, parsed by hand: `--quick`, `--rounds N`, `--keys N`, `--out PATH`;
//! `--instr` (instructions per key under callgrind), `--gate` (the same, fewer setups, exiting 1
//! when a target is missed), `--no-matrix` (the server under test only), `--profile PATH` (where
//! `--instr` writes its profile section; "-": nowhere), `--readme PATH` (its cost block; "-").

pub struct Options {
    pub quick: bool,
    pub rounds: usize,
    pub keys_per_run: usize,
    pub matrix: bool,
    pub out: String,
    pub readme: String,
    pub instr: bool,
    pub gate: bool,
    pub profile: String,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            quick: false,
            rounds: 7,
            keys_per_run: 200_000,
            matrix: true,
            out: "docs/BENCHMARKS.md".into(),
            readme: "README.md".into(),
            instr: false,
            gate: false,
            profile: "docs/PROFILE.md".into(),
        }
    }
}

/// The options of this process; panics on an unknown or incomplete one.
pub fn parse_options() -> Options {
    parse(std::env::args().skip(1))
}

fn parse(mut args: impl Iterator<Item = String>) -> Options {
    let mut options = Options::default();
    while let Some(flag) = args.next() {
        let mut value = || {
            args.next()
                .unwrap_or_else(|| panic!("{flag} needs a value"))
        };
        match flag.as_str() {
            "--quick" => {
                options.quick = true;
                options.rounds = 2;
                options.keys_per_run = 50_000;
            }
            "--rounds" => options.rounds = value().parse().expect("--rounds N"),
            "--keys" => options.keys_per_run = value().parse().expect("--keys N"),
            "--no-matrix" => options.matrix = false,
            "--out" => options.out = value(),
            "--readme" => options.readme = value(),
            "--instr" => options.instr = true,
            "--gate" => (options.instr, options.gate) = (true, true),
            "--profile" => options.profile = value(),
            _ => panic!("unknown option {flag}"),
        }
    }
    assert!(options.rounds > 0 && options.keys_per_run >= 1000);
    options
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(args: &[&str]) -> Options {
        parse(args.iter().map(|arg| arg.to_string()))
    }

    #[test]
    fn defaults_and_the_make_targets() {
        let options = parse_all(&[]);
        assert!(!options.quick && options.matrix && !options.instr && !options.gate);
        assert_eq!((options.rounds, options.keys_per_run), (7, 200_000));
        let paths = [options.out, options.readme, options.profile];
        assert_eq!(
            paths,
            ["docs/BENCHMARKS.md", "README.md", "docs/PROFILE.md"]
        );
        let quick = parse_all(&["--quick", "--out", "target/BENCHMARKS-quick.md"]);
        assert!(quick.quick && quick.out == "target/BENCHMARKS-quick.md");
        assert_eq!((quick.rounds, quick.keys_per_run), (2, 50_000));
        // make bench-gate: the instruction bench, exiting 1 on a miss; later flags win.
        let gate = parse_all(&["--gate", "--readme", "-", "--profile", "-", "--no-matrix"]);
        assert!(gate.instr && gate.gate && !gate.matrix);
        assert_eq!((&*gate.readme, &*gate.profile), ("-", "-"));
        let options = parse_all(&["--quick", "--rounds", "3", "--keys", "1000"]);
        assert_eq!((options.rounds, options.keys_per_run), (3, 1000));
    }

    #[test]
    #[should_panic(expected = "unknown option --round")]
    fn unknown_flags_stop_the_run() {
        parse_all(&["--round", "3"]);
    }

    #[test]
    #[should_panic(expected = "--out needs a value")]
    fn a_missing_value_stops_the_run() {
        parse_all(&["--out"]);
    }
}
