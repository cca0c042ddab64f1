//! The three load choices in one table, serving both the load arguments (`SYNTAX NUMKEYS`) and
//! the module configurations (`msetex.syntax numkeys`); each is fixed once loaded.

use std::ffi::CString;
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::replication::Replicate;
use crate::syntax::Syntax;

pub const DEFAULT_COMMAND_NAME: &str = "msetex";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadOptions {
    /// The name to register the command under, in lower case.
    pub command_name: String,
    pub syntax: Syntax,
    pub replicate: Replicate,
}

impl LoadOptions {
    pub fn default_name(&self) -> bool {
        self.command_name == DEFAULT_COMMAND_NAME
    }
}

/// A load choice: its load argument, its configuration, its values in lower case (none: a name),
/// its default, and why `CONFIG SET` cannot change it.
struct Choice {
    keyword: &'static str,
    config: &'static str,
    values: &'static [&'static str],
    default: &'static str,
    fixed: &'static str,
}

/// The choices, in the order of every `[_; 3]` below.
#[rustfmt::skip]
const CHOICES: [Choice; 3] = [
    Choice { keyword: "SYNTAX", config: "msetex.syntax", values: &["ttl", "numkeys"], default: "ttl",
        fixed: "the command was registered with this syntax's arity, key specifications and docs" },
    Choice { keyword: "REPLICATE", config: "msetex.replicate", values: &["set", "msetex"],
        default: "set", fixed: "msetex sends a command registered only by a load that chose it, \
            which only servers with the module loaded alike run, and the AOF keeps it" },
    Choice { keyword: "COMMAND-NAME", config: "msetex.command-name", values: &[],
        default: DEFAULT_COMMAND_NAME,
        fixed: "a server registers module commands only while the module loads" },
];

/// `value` as `choice` holds it (lower case), or the error naming `label`.
fn read(choice: &Choice, label: &str, value: &str) -> Result<String, String> {
    if choice.values.is_empty() {
        // Printable ASCII without `|` (the subcommand separator), lower case as servers list them.
        let printable = value.bytes().all(|b| b.is_ascii_graphic() && b != b'|');
        if (1..=64).contains(&value.len()) && printable {
            return Ok(value.to_ascii_lowercase());
        }
        return Err(format!(
            "invalid {label} '{value}': use 1 to 64 printable characters, no spaces or '|'"
        ));
    }
    let found = choice.values.iter().find(|v| value.eq_ignore_ascii_case(v));
    let values = choice.values.join(" or ");
    found
        .map(|v| (*v).to_owned())
        .ok_or_else(|| format!("unknown {label} '{value}' ({values})"))
}

const USAGE: &str = "the load arguments are SYNTAX TTL|NUMKEYS, REPLICATE SET|MSETEX \
                     and COMMAND-NAME <name>";

/// The load arguments, by choice (`None`: not given; the last value wins); the error is the log
/// line.
pub fn parse_load_args(args: &[&[u8]]) -> Result<[Option<String>; 3], String> {
    let mut given = [None, None, None];
    let mut rest = args.iter().map(|arg| String::from_utf8_lossy(arg));
    while let Some(arg) = rest.next() {
        let is = |(choice, _): &(&Choice, _)| arg.eq_ignore_ascii_case(choice.keyword);
        let Some((choice, slot)) = CHOICES.iter().zip(&mut given).find(is) else {
            return Err(format!("unknown load argument '{arg}' ({USAGE})"));
        };
        let keyword = choice.keyword;
        let value = rest
            .next()
            .ok_or_else(|| format!("{keyword} needs a value ({USAGE})"))?;
        *slot = Some(read(choice, keyword, &value)?);
    }
    Ok(given)
}

/// What each configuration holds, as the server set it; once `settled`, the values in force.
static HELD: Mutex<([String; 3], bool)> = Mutex::new(([const { String::new() }; 3], false));

fn held() -> MutexGuard<'static, ([String; 3], bool)> {
    HELD.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Starts a load: each configuration holds its load argument or its default, registered as its
/// default so that the server sets (and `CONFIG REWRITE` writes) only one that differs.
pub fn begin(given: &[Option<String>; 3]) -> Result<Vec<(CString, CString)>, String> {
    let mut held = held();
    held.1 = false;
    let choices = CHOICES.iter().zip(given).zip(&mut held.0);
    let c = |text: &str| CString::new(text).map_err(|e| e.to_string());
    choices
        .map(|((choice, given), value)| {
            *value = given.clone().unwrap_or_else(|| choice.default.to_owned());
            Ok((c(choice.config.trim_start_matches("msetex."))?, c(value)?))
        })
        .collect()
}

/// Ends the load: the values in force, or the log line refusing the load.
pub fn settle(given: &[Option<String>; 3]) -> Result<LoadOptions, String> {
    let mut held = held();
    held.1 = true;
    for ((choice, value), given) in CHOICES.iter().zip(&mut held.0).zip(given) {
        let (keyword, config) = (choice.keyword, choice.config);
        *value = read(choice, config, value)?;
        if let Some(given) = given.as_ref().filter(|given| *given != value) {
            return Err(format!(
                "the load argument {keyword} {given} and the configuration {config} {value} \
                 disagree: make the choice once"
            ));
        }
    }
    let [syntax, replicate, name] = &held.0;
    Ok(LoadOptions {
        command_name: name.clone(),
        syntax: [Syntax::Ttl, Syntax::Numkeys][usize::from(syntax == "numkeys")],
        replicate: [Replicate::Set, Replicate::Msetex][usize::from(replicate == "msetex")],
    })
}

pub fn get(index: usize) -> String {
    held().0.get(index).cloned().unwrap_or_default()
}

/// Sets configuration `index`: freely while the module loads; after, only to the value in force.
pub fn set(index: usize, value: &str) -> Result<(), String> {
    let (held, settled) = &mut *held();
    let (Some(choice), Some(held)) = (CHOICES.get(index), held.get_mut(index)) else {
        return Err("no such configuration".to_owned());
    };
    if !*settled {
        *held = value.to_owned();
    } else if read(choice, choice.config, value)? != *held {
        let (config, why) = (choice.config, choice.fixed);
        return Err(format!(
            "{config} is fixed once loaded: {why}; change it in the config file and restart"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<[Option<String>; 3], String> {
        let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        parse_load_args(&bytes)
    }

    fn given(values: [Option<&str>; 3]) -> [Option<String>; 3] {
        values.map(|value| value.map(str::to_owned))
    }

    #[test]
    fn every_argument_in_any_case_and_order() {
        assert_eq!(parse(&[]).unwrap(), given([None, None, None]));
        let args = [
            "replicate",
            "msetex",
            "Command-Name",
            "MyApp.MSetEx",
            "syntax",
            "numkeys",
        ];
        let all = given([Some("numkeys"), Some("msetex"), Some("myapp.msetex")]);
        assert_eq!(parse(&args).unwrap(), all);
        // The last value wins, like repeated config lines.
        let last = parse(&["SYNTAX", "NUMKEYS", "SYNTAX", "TTL"]).unwrap();
        assert_eq!(last, given([Some("ttl"), None, None]));
    }

    #[test]
    fn bad_arguments_say_what_is_wrong() {
        let error = |args: &[&str]| parse(args).unwrap_err();
        assert!(error(&["COMMAND-NAME"]).starts_with("COMMAND-NAME needs a value"));
        assert!(error(&["SYNTAX"]).starts_with("SYNTAX needs a value"));
        assert!(error(&["REPLICATE"]).starts_with("REPLICATE needs a value"));
        assert_eq!(
            error(&["SYNTAX", "LEGACY"]),
            "unknown SYNTAX 'LEGACY' (ttl or numkeys)"
        );
        assert_eq!(
            error(&["REPLICATE", "AOF"]),
            "unknown REPLICATE 'AOF' (set or msetex)"
        );
        assert!(error(&["NAME", "x"]).starts_with("unknown load argument 'NAME'"));
        for bad in ["", "two words", "a|b", "tab\there", &"x".repeat(65)] {
            assert!(
                error(&["COMMAND-NAME", bad]).starts_with("invalid COMMAND-NAME"),
                "{bad:?}"
            );
        }
    }

    /// One test: the configurations' values are the module's, shared by every thread.
    #[test]
    fn configurations_meet_the_load_arguments_then_stay_fixed() {
        let set_ok = |index: usize, value: &str| assert_eq!(set(index, value), Ok(()));
        let load = |args: &[&str], set: &[(usize, &str)]| {
            let given = parse(args).unwrap();
            let defaults = begin(&given).unwrap();
            for (index, (_, default)) in defaults.iter().enumerate() {
                assert_eq!(get(index).as_bytes(), default.to_bytes());
            }
            for (index, value) in set {
                set_ok(*index, value);
            }
            settle(&given)
        };
        let defaults = LoadOptions {
            command_name: "msetex".into(),
            syntax: Syntax::Ttl,
            replicate: Replicate::Set,
        };
        assert_eq!(load(&[], &[]), Ok(defaults));
        let configured = load(&["SYNTAX", "numkeys"], &[(1, "MSETEX"), (2, "App.X")]);
        let expected = LoadOptions {
            command_name: "app.x".into(),
            syntax: Syntax::Numkeys,
            replicate: Replicate::Msetex,
        };
        assert_eq!(configured, Ok(expected));
        assert_eq!(get(2), "app.x");

        // CONFIG SET: the value in force, in any case, passes; anything else is refused.
        set_ok(0, "NUMKEYS");
        assert_eq!(
            set(0, "legacy").unwrap_err(),
            "unknown msetex.syntax 'legacy' (ttl or numkeys)"
        );
        for (index, value) in [(0, "ttl"), (1, "set"), (2, "msetex")] {
            let name = CHOICES[index].config;
            let refused = set(index, value).unwrap_err();
            assert!(
                refused.starts_with(&format!("{name} is fixed once loaded: ")),
                "{refused}"
            );
            assert!(refused.len() < 256, "the server keeps 255 bytes: {refused}");
        }
        assert_eq!(get(0), "numkeys");

        assert_eq!(
            load(&["SYNTAX", "NUMKEYS"], &[(0, "ttl")]).unwrap_err(),
            "the load argument SYNTAX numkeys and the configuration msetex.syntax ttl disagree: \
             make the choice once"
        );
        // The same choice twice agrees.
        assert!(load(&["REPLICATE", "MSETEX"], &[(1, "msetex")]).is_ok());
        assert_eq!(
            load(&[], &[(1, "aof")]).unwrap_err(),
            "unknown msetex.replicate 'aof' (set or msetex)"
        );
        assert!(load(&[], &[(2, "a b")])
            .unwrap_err()
            .starts_with("invalid msetex.command-name 'a b'"));
    }
}
