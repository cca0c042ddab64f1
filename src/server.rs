//! Which server this is, and what that means for MSETEX: the [`Profile`].
//!
//! Redis 6.2 - 8.x and Valkey 7.2 - 9.x differ in ways a module must follow
//! to behave like their own SET: how a short string is stored, which
//! keyspace events SET fires, what SET does with a deadline in the past,
//! whether module calls count keyspace hits, and whether the server asks a
//! module for a command's keys from an I/O thread. Every such difference is
//! decided here, once, at load time, from `INFO server` and a few config
//! values and which of its commands it runs; the rest of the module reads
//! the profile. Where the module cannot read a fact, the profile takes the
//! choice that is safe whatever the fact is.
//!
//! Pure functions (no Redis types) so every server kind is unit-tested.

use std::ffi::CStr;

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

    /// True from `redis` on Redis, from `valkey` on Valkey.
    fn at_least(&self, redis: (u32, u32), valkey: (u32, u32)) -> bool {
        let (major, minor, _) = self.version;
        (major, minor)
            >= match self.product {
                Product::Redis => redis,
                Product::Valkey => valkey,
            }
    }

    /// True from Redis 8.4 and Valkey 9.1 on, which ship their own MSETEX.
    pub fn has_builtin_msetex(&self) -> bool {
        self.at_least((8, 4), (9, 1))
    }

    /// How this server learns a call's keys with `environment`: from its
    /// I/O threads (no callback then) on Redis 8.2+ with io-threads, and on
    /// Valkey 8+ in cluster mode with io-threads (Valkey 9: always, since it
    /// can turn them on at run time). io-threads unreadable: above 1.
    fn keys_declared(&self, environment: Environment) -> KeysDeclared {
        let redis = self.product == Product::Redis;
        let io_threads = environment.io_threads.is_none_or(|n| n > 1);
        let on_io_threads = if redis {
            self.at_least((8, 2), (0, 0)) && io_threads
        } else {
            self.at_least((0, 0), (8, 0))
                && environment.cluster
                && (io_threads || self.at_least((0, 0), (9, 0)))
        };
        if !on_io_threads {
            return KeysDeclared::ByCallback;
        }
        KeysDeclared::BySpecs {
            moved: if redis && environment.cluster {
                MovedKeys::Refused
            } else {
                MovedKeys::Packed
            },
            keynum_exact: self.has_builtin_msetex() && redis,
        }
    }

    /// Where SET stores a short string on this server.
    fn embedding(&self) -> Embedding {
        match self.product {
            Product::Redis if self.at_least((8, 2), (0, 0)) => Embedding::Redis82,
            Product::Valkey if self.at_least((0, 0), (9, 0)) => Embedding::Valkey9,
            Product::Valkey if self.at_least((0, 0), (8, 1)) => Embedding::Valkey81,
            _ => Embedding::Separate,
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

/// Facts about the running server that only its configuration tells, as
/// far as the module could read them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Environment {
    /// `cluster-enabled yes`.
    pub cluster: bool,
    /// `io-threads`; `None` where the module could not read it (CONFIG
    /// renamed away on a server without `RedisModule_ConfigGetNumeric`):
    /// then taken as above 1, the choice that is safe either way.
    pub io_threads: Option<u32>,
    /// `mem_allocator` is jemalloc, whose size classes the in-place check
    /// relies on.
    pub jemalloc: bool,
    /// Which of the server commands the module may call run under their
    /// own names (`rename-command` can take any of them away).
    pub callable: Callable,
    /// Whether the COMMAND-NAME asked for, where it has no dot, is the
    /// original name of a server command (renamed away: a module cannot
    /// take it); `None` where that could not be read.
    pub name_in_use: Option<bool>,
}

/// The server commands the module calls or replicates: named once here,
/// probed at load (`RedisModule_Call` with no arguments: an arity error
/// means the command is there, an unknown command that it was renamed
/// away), and each path that needs one is chosen only where it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerCommand {
    /// The batch of keys the key API cannot write as SET would.
    Mset,
    /// Redis 6.2's writes, Valkey 8+'s past deadlines, and what
    /// REPLICATE SET sends.
    Set,
    /// The built-in MSETEX (Redis 8.4+, Valkey 9.1+): Valkey's batch, the
    /// native replicated form, and whether the module steps aside.
    Msetex,
    /// `ACL LIST`, read before MODULE UNLOAD where an unload with rules
    /// naming the module's commands would crash the server.
    Acl,
}

impl ServerCommand {
    pub const ALL: [ServerCommand; 4] = [
        ServerCommand::Mset,
        ServerCommand::Set,
        ServerCommand::Msetex,
        ServerCommand::Acl,
    ];

    pub fn name(self) -> &'static CStr {
        match self {
            ServerCommand::Mset => c"MSET",
            ServerCommand::Set => c"SET",
            ServerCommand::Msetex => c"MSETEX",
            ServerCommand::Acl => c"ACL",
        }
    }

    fn bit(self) -> u8 {
        1 << self as u8
    }
}

/// The set of [`ServerCommand`]s a server runs under their own names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Callable(u8);

impl Callable {
    /// Every command there (what the unit tests start from).
    #[cfg(test)]
    pub const ALL: Callable = Callable(0b1111);

    /// The commands for which `probe` says yes.
    pub fn probe(mut probe: impl FnMut(ServerCommand) -> bool) -> Callable {
        Callable(
            ServerCommand::ALL
                .into_iter()
                .filter(|command| probe(*command))
                .fold(0, |bits, command| bits | command.bit()),
        )
    }

    pub fn has(self, command: ServerCommand) -> bool {
        self.0 & command.bit() != 0
    }

    /// The same set without `command` (as `rename-command command ""`).
    #[cfg(test)]
    pub fn without(self, command: ServerCommand) -> Callable {
        Callable(self.0 & !command.bit())
    }
}

/// The server's own MSETEX.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Builtin {
    /// Before Redis 8.4 / Valkey 9.1.
    None,
    /// There, under its name.
    Serving,
    /// This version has one, but not under its name (`rename-command
    /// MSETEX ""`): the name is free for the module.
    RenamedAway,
}

/// Who keeps MODULE UNLOAD from crashing the server when ACL rules still
/// name one of the module's commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnloadGuard {
    /// Valkey 9.1+ refuses such an unload itself.
    Server,
    /// Everywhere else (Redis 6.2 to 8.6 and Valkey 7.2 to 8.1 crash then,
    /// and an unknown server is taken to): the module refuses it.
    Module,
}

/// What SET does when its deadline is already past.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PastDeadline {
    /// Stores the key, which is then logically expired (Redis, Valkey 7.2).
    Store,
    /// Valkey 8+: deletes an existing key at once (and replicates a DEL or
    /// UNLINK), unless the deadline is still ahead of the command's clock
    /// (inside a script, its start), the server is a replica, loading, in
    /// import-mode, or applying a slot migration's stream. No module API
    /// reads that clock, so where a deadline looks past the server's own
    /// SET decides, key by key (`write::write_as_set`).
    DecidedBySet,
}

/// Where SET stores a string value: in its own allocation, or embedded in
/// the key's when short enough. A value written in place keeps its own
/// allocation, so it is stored as SET would only when SET does not embed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Embedding {
    /// The value is an object of its own (Redis 7.0 to 8.0, Valkey 7.2 and
    /// 8.0): a string rewritten in place is as compact as SET's, by
    /// jemalloc's size classes (`sizing`).
    Separate,
    /// Redis 8.2+ (`kvobjSet`): a value of at most 44 bytes when key and
    /// value take at most 41, with a TTL or without.
    Redis82,
    /// Valkey 8.1 (`createStringObjectWithKeyAndExpire`): key and value at
    /// most 33 bytes with a TTL, 41 without; values up to 44.
    Valkey81,
    /// Valkey 9 (`shouldEmbedStringObject`): key and value at most 105, 103
    /// or 101 bytes with a TTL (113, 111, 109 without) as the key is under
    /// 32, under 256 bytes or longer; values up to 116.
    Valkey9,
}

impl Embedding {
    /// True when SET would store `value` embedded with `key` (the key
    /// holding a TTL afterwards or not).
    pub fn embeds(self, key: usize, value: usize, ttl: bool) -> bool {
        let fits =
            |most_value: usize, most_both: usize| value <= most_value && key + value <= most_both;
        match self {
            Embedding::Separate => false,
            Embedding::Redis82 => fits(44, 41),
            Embedding::Valkey81 => fits(44, if ttl { 33 } else { 41 }),
            Embedding::Valkey9 => {
                let header = match key {
                    0..=31 => 0,
                    32..=255 => 2,
                    _ => 4,
                };
                fits(116, if ttl { 105 } else { 113 } - header)
            }
        }
    }
}

/// How this server's version tells MSETEX to behave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    /// How this server words the errors MSETEX shares with SET and the
    /// built-in MSETEX.
    pub wording: Wording,
    /// How the server learns where a call's keys are.
    pub keys: KeysDeclared,
    /// Writing through the key API (StringSet, DMA, signals) leaves keys as
    /// SET does, and counting such a change is cheap. Not on Redis 6.2,
    /// where counting a change copies the whole call each time: every key
    /// is then written by the server's own SET, which also fires SET's
    /// events in argument order.
    pub key_api_writes: bool,
    /// Where SET stores a string value, which decides whether one written
    /// in place is stored as SET would; `None`: never in place (no key API,
    /// or an allocator whose size classes the check does not know).
    pub in_place: Option<Embedding>,
    /// Redis 8.2+: SET fires `overwritten` (and `type_changed`) when it
    /// replaces a key; a key written in place fires it too.
    pub fires_overwritten: bool,
    /// Redis 8.6: `RedisModule_SignalModifiedKey` looks the key up and
    /// counts a keyspace hit (or a miss), which SET does not; the signal
    /// that closing a key opened for writing sends counts nothing. So there
    /// keys are signalled by closing them, and keys only looked at are
    /// opened for reading.
    pub signal_on_close: bool,
    /// The server's own MSETEX, and whether it is there under its name.
    pub builtin: Builtin,
    /// Valkey 9.1+ with its built-in under its name: the built-in writes
    /// each key as SET does (SET's encoding, the deadline kept in place,
    /// `set` then `expire` per key), so the keys the key API cannot write
    /// go through it instead of MSET and a deadline afterwards. (Redis
    /// 8.6's fires `expire` before `set`.)
    pub builtin_batch: bool,
    /// Redis before 7.2: a key SET overwrites gets a fresh LRU clock (later
    /// servers keep the old one).
    pub fresh_lru_on_overwrite: bool,
    pub past_deadline: PastDeadline,
    /// SET NX/XX looks the key up twice on Redis 6.2 (the condition, then
    /// the write), so the NX/XX check counts an access there too.
    pub condition_counts_access: bool,
    /// Whether "nobody receives replicated commands" can be proven from
    /// `INFO replication` and the replication commands clients send. Never
    /// in cluster mode: a slot migration (atomic on Redis 8.4+ and Valkey
    /// 9+) streams writes to the importing node from the moment it starts,
    /// through the same propagation, before INFO shows any listener.
    pub shortcut_allowed: bool,
    /// The server reads a keynum key spec with a step of 2 (the built-in
    /// MSETEX's): Redis 8.4+, Valkey 9.1+. Older ones read half the keys.
    pub keynum_steps: bool,
    /// Replicas and the AOF of this server run the built-in MSETEX, and
    /// nothing drops it: Redis 8.4+ / Valkey 9.1+ with the built-in under
    /// its name, outside cluster mode (a slot migration's filter cannot
    /// read the built-in's keys: Redis 8.6.3 drops it, losing the write).
    pub native_replication: bool,
    /// Valkey 9+: declare that the module handles atomic slot migration
    /// (the server refuses to migrate slots otherwise).
    pub atomic_slot_migration: bool,
    pub unload_guard: UnloadGuard,
}

/// How the server learns where a call's keys are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeysDeclared {
    /// The `getkeys-api` callback: exact for every form.
    ByCallback,
    /// Key specifications only: the server may call a `getkeys-api` command
    /// back from an I/O thread to learn its keys (Redis 8.2+ with
    /// io-threads; Valkey 8+ in cluster mode with io-threads, Valkey 9 in
    /// cluster mode), where the module context it creates races the main
    /// thread. Calls whose options a key spec cannot step over are handled
    /// by the command filter before the server reads their keys, as
    /// `moved` says.
    BySpecs {
        moved: MovedKeys,
        /// The NUMKEYS form's keynum spec describes its calls exactly:
        /// where the server reads a keynum spec with its step (Redis 8.4+)
        /// and routes by key specs (Redis; Valkey routes a module command
        /// by its legacy key range).
        keynum_exact: bool,
    },
}

/// What the command filter does with a call whose options would be read as
/// keys by a key spec (`MSETEX NX PX 100 k v`, `MSETEX 1 k v EX 60` where
/// the keynum spec is not exact).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MovedKeys {
    /// Packs the options into one argument before the server reads the
    /// keys (see `syntax::pack`): Valkey, which looks a command and its
    /// slot up again after a filter rewrote it, and Redis outside cluster
    /// mode (no routing; ACL reads keys after the filter).
    Packed,
    /// Redis 8.2+ in cluster mode with io-threads routes a command by the
    /// keys its I/O threads read before any filter ran, even after a filter
    /// rewrote it: the filter refuses such a call, with nothing written.
    Refused,
}

/// How the server words the errors MSETEX shares with its commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wording {
    /// Redis 6.2: SET's bad TTL is `invalid expire time in set`.
    Redis62,
    Redis,
    /// Valkey's built-in MSETEX words two NUMKEYS errors its own way.
    Valkey,
}

impl Profile {
    /// The profile of `server` (unknown: the most careful choices) running
    /// with `environment`.
    pub fn new(server: Option<&Server>, environment: Environment) -> Profile {
        let Some(server) = server else {
            return Profile::careful(environment);
        };
        let redis = server.product == Product::Redis;
        let key_api_writes = !(redis && server.version < (7, 0, 0));
        let builtin = match (
            server.has_builtin_msetex(),
            environment.callable.has(ServerCommand::Msetex),
        ) {
            (false, _) => Builtin::None,
            (true, true) => Builtin::Serving,
            (true, false) => Builtin::RenamedAway,
        };
        Profile {
            wording: match server.product {
                Product::Redis if server.version < (7, 0, 0) => Wording::Redis62,
                Product::Redis => Wording::Redis,
                Product::Valkey => Wording::Valkey,
            },
            keys: server.keys_declared(environment),
            key_api_writes,
            in_place: (environment.jemalloc && key_api_writes).then_some(server.embedding()),
            fires_overwritten: redis && server.at_least((8, 2), (0, 0)),
            signal_on_close: redis && server.at_least((8, 6), (0, 0)),
            builtin,
            builtin_batch: !redis && builtin == Builtin::Serving,
            fresh_lru_on_overwrite: redis && server.version < (7, 2, 0),
            past_deadline: if !redis && server.at_least((0, 0), (8, 0)) {
                PastDeadline::DecidedBySet
            } else {
                PastDeadline::Store
            },
            condition_counts_access: redis && server.version < (7, 0, 0),
            keynum_steps: server.has_builtin_msetex(),
            shortcut_allowed: !environment.cluster,
            native_replication: builtin == Builtin::Serving && !environment.cluster,
            atomic_slot_migration: !redis && server.at_least((0, 0), (9, 0)),
            unload_guard: if !redis && server.at_least((0, 0), (9, 1)) {
                UnloadGuard::Server
            } else {
                UnloadGuard::Module
            },
        }
    }

    /// An unidentified server: every choice the one that is safe whatever
    /// the server is.
    fn careful(environment: Environment) -> Profile {
        Profile {
            wording: Wording::Redis,
            keys: KeysDeclared::BySpecs {
                moved: if environment.cluster {
                    MovedKeys::Refused
                } else {
                    MovedKeys::Packed
                },
                keynum_exact: false,
            },
            key_api_writes: false,
            in_place: None,
            fires_overwritten: false,
            signal_on_close: false,
            builtin: Builtin::None,
            builtin_batch: false,
            fresh_lru_on_overwrite: false,
            past_deadline: PastDeadline::Store,
            condition_counts_access: false,
            keynum_steps: false,
            shortcut_allowed: false,
            native_replication: false,
            atomic_slot_migration: false,
            unload_guard: UnloadGuard::Module,
        }
    }

    /// True where the TTL form's leading options or the NUMKEYS form's
    /// trailing ones would be read as keys, so that the command filter
    /// packs or refuses such calls.
    pub fn moves_keys(&self) -> Option<MovedKeys> {
        match self.keys {
            KeysDeclared::ByCallback => None,
            KeysDeclared::BySpecs { moved, .. } => Some(moved),
        }
    }
}

#[cfg(test)]
mod tests;
