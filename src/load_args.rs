//! The load arguments `[SYNTAX TTL | NUMKEYS] [REPLICATE SET | MSETEX] [COMMAND-NAME name]`,
//! pure; a bad argument fails the load with the error's log line.

use std::ffi::CStr;

use crate::replication::Replicate;
use crate::syntax::Syntax;

/// The command name without a `COMMAND-NAME` load argument.
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

const USAGE: &str = "the load arguments are SYNTAX TTL|NUMKEYS, REPLICATE SET|MSETEX \
                     and COMMAND-NAME <name>";

/// Parses the load arguments; the error is the log line. A repeated argument's last value wins.
pub fn parse_load_args(args: &[&[u8]]) -> Result<LoadOptions, String> {
    let mut options = LoadOptions {
        command_name: DEFAULT_COMMAND_NAME.to_owned(),
        syntax: Syntax::Ttl,
        replicate: Replicate::Set,
    };
    let mut rest = args.iter().copied();
    while let Some(arg) = rest.next() {
        let original = String::from_utf8_lossy(arg);
        let text = original.to_ascii_uppercase();
        let missing = || format!("{text} needs a value ({USAGE})");
        let value = rest.next().map(String::from_utf8_lossy).ok_or_else(missing);
        match text.as_str() {
            "COMMAND-NAME" => options.command_name = valid_command_name(&value?)?,
            "SYNTAX" => {
                let value = value?;
                options.syntax = named(&[Syntax::Ttl, Syntax::Numkeys], Syntax::label, &value)
                    .ok_or_else(|| format!("unknown SYNTAX '{value}' (TTL or NUMKEYS)"))?;
            }
            "REPLICATE" => {
                let value = value?;
                let modes = [Replicate::Set, Replicate::Msetex];
                options.replicate = named(&modes, Replicate::label, &value)
                    .ok_or_else(|| format!("unknown REPLICATE '{value}' (SET or MSETEX)"))?;
            }
            _ => return Err(format!("unknown load argument '{original}' ({USAGE})")),
        }
    }
    Ok(options)
}

/// The one of `choices` whose label `value` is, in any case.
fn named<T: Copy>(choices: &[T], label: fn(T) -> &'static CStr, value: &str) -> Option<T> {
    let value = value.as_bytes();
    let is = |choice: &&T| value.eq_ignore_ascii_case(label(**choice).to_bytes());
    choices.iter().find(is).copied()
}

/// A name the server can register and clients type: printable ASCII, no spaces or `|` (subcommand
/// separator), at most 64 bytes; lower-cased, as the server lists command names.
fn valid_command_name(name: &str) -> Result<String, String> {
    let printable = name.bytes().all(|b| b.is_ascii_graphic() && b != b'|');
    if name.is_empty() || name.len() > 64 || !printable {
        return Err(format!(
            "invalid COMMAND-NAME '{name}': use 1 to 64 printable characters, no spaces or '|'"
        ));
    }
    Ok(name.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<LoadOptions, String> {
        let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        parse_load_args(&bytes)
    }

    #[test]
    fn defaults() {
        let options = parse(&[]).unwrap();
        assert_eq!(options.command_name, DEFAULT_COMMAND_NAME);
        assert_eq!(options.syntax, Syntax::Ttl);
        assert_eq!(options.replicate, Replicate::Set);
    }

    #[test]
    fn every_argument_in_any_case_and_order() {
        let options = parse(&[
            "replicate",
            "msetex",
            "Command-Name",
            "MyApp.MSetEx",
            "syntax",
            "numkeys",
        ])
        .unwrap();
        assert_eq!(
            options,
            LoadOptions {
                command_name: "myapp.msetex".into(),
                syntax: Syntax::Numkeys,
                replicate: Replicate::Msetex,
            }
        );
        // The last value wins, like repeated config lines.
        let options = parse(&["SYNTAX", "NUMKEYS", "SYNTAX", "TTL"]).unwrap();
        assert_eq!(options.syntax, Syntax::Ttl);
    }

    #[test]
    fn bad_arguments_say_what_is_wrong() {
        let error = |args: &[&str]| parse(args).unwrap_err();
        assert!(error(&["COMMAND-NAME"]).starts_with("COMMAND-NAME needs a value"));
        assert!(error(&["SYNTAX"]).starts_with("SYNTAX needs a value"));
        assert!(error(&["REPLICATE"]).starts_with("REPLICATE needs a value"));
        assert_eq!(
            error(&["SYNTAX", "LEGACY"]),
            "unknown SYNTAX 'LEGACY' (TTL or NUMKEYS)"
        );
        assert_eq!(
            error(&["REPLICATE", "AOF"]),
            "unknown REPLICATE 'AOF' (SET or MSETEX)"
        );
        assert!(error(&["NAME", "x"]).starts_with("unknown load argument 'NAME'"));
        for bad in ["", "two words", "a|b", "tab\there", &"x".repeat(65)] {
            assert!(
                error(&["COMMAND-NAME", bad]).starts_with("invalid COMMAND-NAME"),
                "{bad:?}"
            );
        }
    }
}
