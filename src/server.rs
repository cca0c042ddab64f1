//! Which server this is, and what the module was asked to do at load time.
//!
//! Redis 8.4 and Valkey 9.1 have their own MSETEX, with another syntax.
//! Registering `msetex` there fails, and where the built-in command was
//! renamed with `rename-command`, it aborts the server during start-up. So
//! before registering anything the module identifies the server from
//! `INFO server` and, where a built-in MSETEX exists, refuses the default
//! name with one log line that says what to do instead.
//!
//! Pure functions (no Redis types) so every server kind is unit-tested.

/// The command name used when no `COMMAND-NAME` load argument is given.
pub const DEFAULT_COMMAND_NAME: &str = "msetex";

/// Load arguments: `loadmodule /path/libmsetex.so [COMMAND-NAME name]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadOptions {
    /// The name to register the command under, in lower case.
    pub command_name: String,
}

/// Parses the module's load arguments; the error is the log line to print.
pub fn parse_load_args(args: &[&[u8]]) -> Result<LoadOptions, String> {
    let mut options = LoadOptions {
        command_name: DEFAULT_COMMAND_NAME.to_owned(),
    };
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        if !arg.eq_ignore_ascii_case(b"COMMAND-NAME") {
            return Err(format!(
                "unknown load argument '{}' (the only one is COMMAND-NAME <name>)",
                String::from_utf8_lossy(arg)
            ));
        }
        let name = rest
            .next()
            .ok_or("COMMAND-NAME needs a value, e.g. COMMAND-NAME msetex.set")?;
        options.command_name = valid_command_name(name)?;
    }
    Ok(options)
}

/// A command name the server can register and clients can type: printable
/// ASCII without spaces or `|` (which separates subcommands), at most 64
/// bytes. Returned in lower case, as the server lists command names.
fn valid_command_name(name: &[u8]) -> Result<String, String> {
    let printable = name.iter().all(|b| b.is_ascii_graphic() && *b != b'|');
    if name.is_empty() || name.len() > 64 || !printable {
        return Err(format!(
            "invalid COMMAND-NAME '{}': use 1 to 64 printable characters, no spaces or '|'",
            String::from_utf8_lossy(name)
        ));
    }
    Ok(String::from_utf8_lossy(name).to_ascii_lowercase())
}

/// The server family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Product {
    Redis,
    Valkey,
}

/// A server as `INFO server` describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    pub product: Product,
    /// The product's own version (Valkey also reports `redis_version:7.2.4`
    /// for compatibility; its real version is `valkey_version`).
    pub version: (u32, u32, u32),
}

impl Server {
    /// Reads the server from INFO fields (`field("redis_version")` etc.).
    /// `None` if the version cannot be read.
    pub fn identify<'a>(field: impl Fn(&str) -> Option<&'a str>) -> Option<Server> {
        let valkey = field("server_name").is_some_and(|name| name.trim() == "valkey");
        let (product, version) = match (valkey, field("valkey_version")) {
            (true, Some(version)) => (Product::Valkey, version),
            // Valkey 7.2 still reported only redis_version (7.2.x).
            (true, None) => (Product::Valkey, field("redis_version")?),
            (false, _) => (Product::Redis, field("redis_version")?),
        };
        Some(Server {
            product,
            version: parse_version(version)?,
        })
    }

    /// True from Redis 8.4 and Valkey 9.1 on, which ship their own MSETEX.
    pub fn has_builtin_msetex(&self) -> bool {
        match self.product {
            Product::Redis => self.version >= (8, 4, 0),
            Product::Valkey => self.version >= (9, 1, 0),
        }
    }

    pub fn describe(&self) -> String {
        let (major, minor, patch) = self.version;
        let product = match self.product {
            Product::Redis => "Redis",
            Product::Valkey => "Valkey",
        };
        format!("{product} {major}.{minor}.{patch}")
    }
}

/// "8.4.0" -> (8, 4, 0); a missing patch is 0; anything after a `-` is
/// ignored ("8.4.0-rc1").
fn parse_version(text: &str) -> Option<(u32, u32, u32)> {
    let text = text.trim();
    let core = text.split('-').next().unwrap_or(text);
    let mut parts = core.split('.').map(|part| part.parse::<u32>().ok());
    let major = parts.next().flatten()?;
    let minor = parts.next().flatten()?;
    let patch = parts.next().unwrap_or(Some(0))?;
    Some((major, minor, patch))
}

/// Whether the module may register `options.command_name` on `server`;
/// the error is the log line that explains why not and what to do.
pub fn check_command_name(server: Option<&Server>, options: &LoadOptions) -> Result<(), String> {
    let Some(server) = server else {
        return Ok(()); // unknown version: registration itself will tell
    };
    if server.has_builtin_msetex() && options.command_name == DEFAULT_COMMAND_NAME {
        return Err(format!(
            "{} has a built-in MSETEX command (with another syntax), so this module cannot \
             register 'msetex' there; load it under another name: loadmodule \
             /path/to/libmsetex.so COMMAND-NAME msetex.set",
            server.describe()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parses INFO text into a field lookup, as the server's INFO reply.
    fn from_info(text: &str) -> Option<Server> {
        Server::identify(|name| {
            text.lines().find_map(|line| {
                line.strip_prefix(name)
                    .and_then(|rest| rest.strip_prefix(':'))
                    .map(str::trim)
            })
        })
    }

    const REDIS_7_0: &str = "# Server\r\nredis_version:7.0.15\r\nredis_git_sha1:00000000\r\n\
                             redis_mode:standalone\r\nos:Linux 6.1.0 x86_64\r\n";
    const REDIS_8_4: &str = "# Server\r\nredis_version:8.4.0\r\nredis_git_sha1:00000000\r\n\
                             redis_mode:standalone\r\n";
    const VALKEY_8_0: &str = "# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\n\
                              valkey_version:8.0.1\r\nserver_mode:standalone\r\n";
    const VALKEY_DEV: &str = "# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\n\
                              valkey_version:255.255.255\r\n";

    fn redis(version: &str) -> String {
        format!("# Server\r\nredis_version:{version}\r\nredis_mode:standalone\r\n")
    }

    fn valkey(version: &str) -> String {
        format!(
            "# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:{version}\r\n"
        )
    }

    #[test]
    fn identifies_every_server_kind() {
        assert_eq!(
            from_info(REDIS_7_0),
            Some(Server {
                product: Product::Redis,
                version: (7, 0, 15)
            })
        );
        assert_eq!(
            from_info(VALKEY_8_0),
            Some(Server {
                product: Product::Valkey,
                version: (8, 0, 1)
            })
        );
        assert_eq!(
            from_info(VALKEY_DEV).map(|s| s.version),
            Some((255, 255, 255))
        );
        let valkey_7_2 = "# Server\r\nredis_version:7.2.5\r\nserver_name:valkey\r\n";
        assert_eq!(
            from_info(valkey_7_2),
            Some(Server {
                product: Product::Valkey,
                version: (7, 2, 5)
            })
        );
        assert_eq!(from_info("# Server\r\nos:Linux\r\n"), None);
        assert_eq!(from_info("# Server\r\nredis_version:unknown\r\n"), None);
    }

    #[test]
    fn builtin_msetex_from_redis_8_4_and_valkey_9_1() {
        let cases: [(String, bool); 14] = [
            (redis("6.2.14"), false),
            (redis("7.0.15"), false),
            (redis("7.2.7"), false),
            (redis("7.4.2"), false),
            (redis("8.0.3"), false),
            (redis("8.2.2"), false),
            (redis("8.4.0"), true),
            (redis("8.4.0-rc1"), true),
            (redis("8.6.3"), true),
            (valkey("8.0.1"), false),
            (valkey("8.1.3"), false),
            (valkey("9.0.0"), false),
            (valkey("9.1.0"), true),
            (VALKEY_DEV.to_owned(), true),
        ];
        for (info, builtin) in cases {
            let server = from_info(&info).unwrap_or_else(|| panic!("unreadable: {info}"));
            assert_eq!(server.has_builtin_msetex(), builtin, "{info}");
        }
        // Valkey reports redis_version 7.2.4 whatever its own version is.
        let valkey_9_1 = from_info(&valkey("9.1.0")).unwrap();
        assert_eq!(valkey_9_1.product, Product::Valkey);
    }

    #[test]
    fn refuses_the_default_name_only_where_msetex_is_built_in() {
        let default = LoadOptions {
            command_name: "msetex".into(),
        };
        let renamed = LoadOptions {
            command_name: "msetex.set".into(),
        };
        let new = from_info(REDIS_8_4).unwrap();
        let old = from_info(REDIS_7_0).unwrap();
        let error = check_command_name(Some(&new), &default).unwrap_err();
        assert!(
            error.contains("Redis 8.4.0") && error.contains("COMMAND-NAME"),
            "{error}"
        );
        assert_eq!(check_command_name(Some(&new), &renamed), Ok(()));
        assert_eq!(check_command_name(Some(&old), &default), Ok(()));
        assert_eq!(check_command_name(None, &default), Ok(()));
    }

    #[test]
    fn load_arguments() {
        let parse = |args: &[&str]| {
            let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
            parse_load_args(&bytes)
        };
        assert_eq!(parse(&[]).unwrap().command_name, "msetex");
        assert_eq!(
            parse(&["COMMAND-NAME", "msetex.set"]).unwrap().command_name,
            "msetex.set"
        );
        assert_eq!(
            parse(&["command-name", "MyApp.MSetEx"])
                .unwrap()
                .command_name,
            "myapp.msetex"
        );
        assert!(parse(&["COMMAND-NAME"])
            .unwrap_err()
            .contains("needs a value"));
        assert!(parse(&["NAME", "x"])
            .unwrap_err()
            .contains("unknown load argument 'NAME'"));
        for bad in ["", "two words", "a|b", "tab\there", &"x".repeat(65)] {
            let error = parse(&["COMMAND-NAME", bad]).unwrap_err();
            assert!(
                error.starts_with("invalid COMMAND-NAME"),
                "{bad:?}: {error}"
            );
        }
        // The last COMMAND-NAME wins, like repeated config lines.
        assert_eq!(
            parse(&["COMMAND-NAME", "a", "COMMAND-NAME", "b"])
                .unwrap()
                .command_name,
            "b"
        );
    }
}
