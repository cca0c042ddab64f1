//! The server under test (`REDIS_SERVER`, default `redis-server` on PATH):
//! which product and version it is, and what that means for the tests.
//!
//! Everything that differs between Redis 6.2 - 8.x and Valkey 7.2 - 9.x is
//! stated here, once, from the version the binary reports, so that a test
//! states what it expects of *this* server instead of loosening its
//! assertion. These are facts about the servers, each with the upstream
//! source it comes from where it is not a documented feature; they are not
//! read from the module's own table (`src/server.rs`), which they check.

use std::process::Command;
use std::sync::OnceLock;

/// Redis or Valkey.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Product {
    Redis,
    Valkey,
}

/// The server binary the tests start.
#[derive(Debug, Clone)]
pub struct Target {
    pub binary: String,
    pub product: Product,
    pub version: (u32, u32, u32),
}

/// The name the TTL-form tests call MSETEX by. Servers with a built-in
/// MSETEX (Redis 8.4+, Valkey 9.1+) keep that name for themselves, so the
/// module is loaded there under this one.
pub const RENAMED: &str = "msetex.ttl";

static TARGET: OnceLock<Target> = OnceLock::new();

/// How the module loaded in a server says that server reads a call's keys (`INFO msetex`'s `keys`
/// field): the module's own decision, read back rather than restated here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeysRead {
    /// The getkeys callback.
    Callback,
    /// The NUMKEYS form's keynum key specification, read with its step; no filter.
    KeynumSpec,
    /// A key specification after the mark the module's command filter puts before the keys.
    Marked,
    /// Key specifications, the filter moving everything but the keys into argument 1 (Valkey in
    /// cluster mode with I/O threads).
    KeysOnly,
    /// A key range from argument 2, every second, the filter moving what is not a pair into
    /// argument 1 (Redis 8.2+ outside cluster mode).
    Range,
}

impl KeysRead {
    /// The reading of the module loaded in the server `con` is connected to.
    pub fn of(con: &mut redis::Connection) -> KeysRead {
        let field = crate::info_field(con, "msetex", "msetex_keys");
        match field.as_deref() {
            Some("callback") => KeysRead::Callback,
            Some("keynum_spec") => KeysRead::KeynumSpec,
            Some("marked") => KeysRead::Marked,
            Some("keys_only") => KeysRead::KeysOnly,
            Some("range") => KeysRead::Range,
            other => panic!("INFO msetex has no known keys field: {other:?}"),
        }
    }

    /// The server reads keys from key specifications only (no getkeys callback).
    pub fn by_specs(self) -> bool {
        self != KeysRead::Callback
    }

    /// The command filter rewrites calls (MONITOR and SLOWLOG show the rewritten form).
    pub fn rewrites(self) -> bool {
        matches!(
            self,
            KeysRead::Marked | KeysRead::KeysOnly | KeysRead::Range
        )
    }
}
static KEYNUM_STEP: OnceLock<Option<bool>> = OnceLock::new();

/// Whether the server under test reads a keynum key spec with its step, as `COMMAND GETKEYS` of
/// its own MSETEX answers on a server started once, without the module (`None`: no built-in).
/// Not from the version: ../shared/servers/redis-keystep reports 8.6.3 but reads a keynum spec
/// as Redis 7.0 to 8.4.3 did (only the first half of the keys, redis/redis#14657).
pub fn reads_keynum_step() -> Option<bool> {
    *KEYNUM_STEP.get_or_init(|| {
        if !target().has_builtin_msetex() {
            return None;
        }
        let server = crate::ServerConfig::without_module().start();
        let call = ["COMMAND", "GETKEYS", "MSETEX", "2", "a", "v", "b", "v"];
        let keys: Vec<String> = crate::raw_command(&call).query(&mut server.client()).ok()?;
        Some(keys == ["a", "b"])
    })
}
static BUILTINS: OnceLock<Vec<Target>> = OnceLock::new();

/// The server under test, identified once per test binary from `--version`.
pub fn target() -> &'static Target {
    TARGET.get_or_init(|| {
        let binary = std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".to_owned());
        let output = Command::new(&binary)
            .arg("--version")
            .output()
            .unwrap_or_else(|e| panic!("cannot run {binary} --version ({e}): set REDIS_SERVER"));
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        Target::from_version_line(binary, &text)
            .unwrap_or_else(|| panic!("cannot read the server version from {text:?}"))
    })
}

/// Identifies the server binary at `path` from `--version`.
pub fn target_of(binary: &str) -> Option<Target> {
    let output = Command::new(binary).arg("--version").output().ok()?;
    Target::from_version_line(binary.to_owned(), &String::from_utf8_lossy(&output.stdout))
}

/// The servers with a built-in MSETEX this machine has, to compare the
/// NUMKEYS form with: `MSETEX_BUILTIN_SERVERS` (binaries separated by
/// spaces), or Redis 8.6.3 and Valkey 9.1.2 from ../shared/servers.
pub fn builtin_servers() -> &'static [Target] {
    BUILTINS.get_or_init(|| {
        let listed = std::env::var("MSETEX_BUILTIN_SERVERS").ok().map(|list| {
            list.split_whitespace()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        });
        let candidates = listed.unwrap_or_else(|| {
            ["redis-8.6.3/redis-server", "valkey-9.1.2/valkey-server"]
                .iter()
                .map(|path| shared_servers_dir().join(path).display().to_string())
                .collect()
        });
        targets_at(&candidates)
            .into_iter()
            .filter(Target::has_builtin_msetex)
            .collect()
    })
}

/// ../shared/servers, beside this repository: one directory per server.
pub fn shared_servers_dir() -> std::path::PathBuf {
    crate::repo_root().join("../shared/servers")
}

/// Every release's `*-server` binary under [`shared_servers_dir`], by directory name: a directory
/// named `<product>-<version>` (not `redis-keystep`, a build made for the tests).
pub fn shared_server_paths() -> Vec<String> {
    let release = |dir: &std::fs::DirEntry| {
        let name = dir.file_name().to_string_lossy().into_owned();
        let version = name.split_once('-').map_or("", |(_, version)| version);
        !version.is_empty() && version.split('.').all(|part| part.parse::<u32>().is_ok())
    };
    let mut paths: Vec<String> = std::fs::read_dir(shared_servers_dir())
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter(release)
        .flat_map(|dir| std::fs::read_dir(dir.path()).into_iter().flatten())
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| {
            path.is_file()
                && path
                    .file_name()
                    .is_some_and(|name| name.to_string_lossy().ends_with("-server"))
        })
        .map(|path| path.display().to_string())
        .collect();
    paths.sort();
    paths
}

/// The servers at `paths` that exist and report a version, identified.
pub fn targets_at(paths: &[String]) -> Vec<Target> {
    paths
        .iter()
        .filter(|path| std::path::Path::new(path).is_file())
        .filter_map(|path| executable(path))
        .filter_map(|path| target_of(&path))
        .collect()
}

/// `path`, or a private executable copy where the file lacks its run bit
/// (../shared may be laid out read-only).
fn executable(path: &str) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path).ok()?.permissions().mode();
    if mode & 0o111 != 0 {
        return Some(path.to_owned());
    }
    let copy = std::env::temp_dir().join(format!(
        "msetex-bin-{}-{}",
        std::process::id(),
        path.replace('/', "_")
    ));
    std::fs::copy(path, &copy).ok()?;
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).ok()?;
    Some(copy.display().to_string())
}

impl Target {
    /// Reads `Redis server v=7.0.15 ...`, `Valkey server v=8.0.1 ...` or
    /// Valkey 7.2's `Server v=7.2.7 ...`.
    fn from_version_line(binary: String, line: &str) -> Option<Target> {
        let product = if line.starts_with("Redis server") {
            Product::Redis
        } else if line.starts_with("Valkey server") || line.starts_with("Server v=") {
            Product::Valkey
        } else {
            return None;
        };
        let version = line
            .split_whitespace()
            .find_map(|word| word.strip_prefix("v="))?;
        let mut parts = version.split('.').map(|p| p.parse::<u32>().ok());
        let version = (
            parts.next()??,
            parts.next()??,
            parts.next().flatten().unwrap_or(0),
        );
        Some(Target {
            binary,
            product,
            version,
        })
    }

    /// "Redis 7.0.15", "Valkey 9.1.2": as the module's log lines name it.
    pub fn describe(&self) -> String {
        let (a, b, c) = self.version;
        format!("{} {a}.{b}.{c}", self.product_name())
    }

    pub fn product_name(&self) -> &'static str {
        match self.product {
            Product::Redis => "Redis",
            Product::Valkey => "Valkey",
        }
    }

    pub fn is_valkey(&self) -> bool {
        self.product == Product::Valkey
    }

    /// True from `redis` on Redis, from `valkey` on Valkey (either may be None).
    pub fn at_least(&self, redis: Option<(u32, u32)>, valkey: Option<(u32, u32)>) -> bool {
        let (major, minor, _) = self.version;
        let floor = match self.product {
            Product::Redis => redis,
            Product::Valkey => valkey,
        };
        floor.is_some_and(|floor| (major, minor) >= floor)
    }

    /// Redis 7.0 and every Valkey: the version every newer config and command
    /// below builds on (multi-part AOF, PEXPIRETIME, COMMAND DOCS, key specs,
    /// `enable-module-command`, CLUSTER ADDSLOTSRANGE).
    pub fn is_7_0_or_later(&self) -> bool {
        self.at_least(Some((7, 0)), Some((7, 2)))
    }

    /// Redis 8.4+ and Valkey 9.1+ ship their own MSETEX.
    pub fn has_builtin_msetex(&self) -> bool {
        self.at_least(Some((8, 4)), Some((9, 1)))
    }

    /// Whether the module replicates each call as one native MSETEX (the
    /// built-in's own command, which replicas and AOF loading run without
    /// the module), whatever REPLICATE says: Redis 8.4+ and Valkey 9.1+
    /// with the built-in under its name, outside cluster mode (a slot
    /// migration's filter cannot read the built-in's keys: Redis 8.6.3
    /// drops it, see resharding.rs).
    pub fn replicates_natively(&self, cluster: bool) -> bool {
        self.has_builtin_msetex() && !cluster
    }

    /// Whether the crash of module getkeys callbacks on I/O threads needs
    /// cluster mode on this server: Valkey looks keys up on I/O threads only
    /// to compute cluster slots (9.1.2: networking.c
    /// `ioThreadReadQueryFromClient` -> server.c `prepareCommandGeneric` ->
    /// `clusterSlotByCommand`); Redis 8.2+ does for every command (8.6.3:
    /// networking.c `processInputBuffer` -> server.c `preprocessCommand`).
    pub fn io_thread_keys_need_cluster(&self) -> bool {
        self.is_valkey()
    }

    /// Whether this server asks for a command's keys on its I/O threads with
    /// io-threads above 1 (in cluster mode where
    /// [`Target::io_thread_keys_need_cluster`]): Redis 8.2+, Valkey 8+. There
    /// a getkeys callback crashes the server under load (io_threads.rs).
    pub fn asks_keys_on_io_threads(&self) -> bool {
        self.at_least(Some((8, 2)), Some((8, 0)))
    }

    /// ACL categories for module commands (RedisModule_SetCommandACLCategories).
    pub fn has_module_acl_categories(&self) -> bool {
        self.at_least(Some((7, 2)), Some((7, 2)))
    }

    /// The name the TTL-form tests call the module's command by.
    pub fn command_name(&self) -> &'static str {
        if self.has_builtin_msetex() {
            RENAMED
        } else {
            "msetex"
        }
    }

    /// The name the NUMKEYS-form tests call the module's command by: its
    /// default where the server has no MSETEX of its own.
    pub fn numkeys_name(&self) -> &'static str {
        if self.has_builtin_msetex() {
            "msetex.nk"
        } else {
            "msetex"
        }
    }

    /// Load arguments for the NUMKEYS form under [`Self::numkeys_name`].
    pub fn numkeys_module_args(&self) -> Vec<String> {
        let mut args = vec!["SYNTAX".to_owned(), "NUMKEYS".to_owned()];
        if self.has_builtin_msetex() {
            args.extend(["COMMAND-NAME".to_owned(), self.numkeys_name().to_owned()]);
        }
        args
    }

    /// Load arguments that register the TTL form under [`Self::command_name`].
    pub fn default_module_args(&self) -> Vec<String> {
        if self.has_builtin_msetex() {
            vec!["COMMAND-NAME".to_owned(), RENAMED.to_owned()]
        } else {
            Vec::new()
        }
    }

    /// The server's refusal when an ACL key pattern does not match.
    pub fn noperm_key(&self) -> &'static str {
        if self.at_least(Some((7, 2)), Some((7, 2))) {
            "NOPERM No permissions to access a key"
        } else {
            "NOPERM this user has no permissions to access one of the keys used as arguments"
        }
    }

    /// The server's refusal when a user may not run `command` at all.
    pub fn noperm_command(&self, user: &str, command: &str) -> String {
        if self.at_least(Some((7, 2)), Some((7, 2))) {
            format!("NOPERM User {user} has no permissions to run the '{command}' command")
        } else if self.is_7_0_or_later() {
            format!("NOPERM this user has no permissions to run the '{command}' command")
        } else {
            format!(
                "NOPERM this user has no permissions to run the '{command}' command or its subcommand"
            )
        }
    }

    /// SET's words for an invalid TTL, naming `command` as the server does
    /// (Redis 6.2: `invalid expire time in set`).
    pub fn invalid_expire(&self, command: &str) -> String {
        if self.is_7_0_or_later() {
            format!("ERR invalid expire time in '{command}' command")
        } else {
            format!("ERR invalid expire time in {command}")
        }
    }

    /// Modules every server of this version loads by itself (MODULE LIST).
    pub fn bundled_modules(&self) -> &'static [&'static str] {
        match self.product {
            Product::Redis if self.version.0 >= 8 => &["vectorset"],
            Product::Valkey if self.version.0 >= 9 => &["lua"],
            _ => &[],
        }
    }

    /// Config lines this version knows that the harness always wants.
    pub fn base_config(&self) -> &'static str {
        if self.is_7_0_or_later() {
            "enable-module-command yes\nenable-debug-command yes\n"
        } else {
            ""
        }
    }
}
