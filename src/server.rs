//! Which server this is and what that means for MSETEX: the [`Profile`], each difference decided
//! once at load (DESIGN.md, "Facts taken from the version"); pure, unit-tested per server kind.

use std::ffi::CStr;

use crate::acl::AclCheck;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Product {
    Redis,
    Valkey,
}

impl Product {
    fn name(self) -> &'static str {
        match self {
            Product::Redis => "Redis",
            Product::Valkey => "Valkey",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    pub product: Product,
    /// Valkey's own (it also reports `redis_version:7.2.4`).
    pub version: (u32, u32, u32),
}

impl Server {
    /// Reads the server from INFO fields; `None` if no version.
    pub fn identify<'a>(field: impl Fn(&str) -> Option<&'a str>) -> Option<Server> {
        let valkey = field("server_name").is_some_and(|name| name.trim() == "valkey");
        let (product, version) = match (valkey, field("valkey_version")) {
            (true, Some(version)) => (Product::Valkey, version),
            // Valkey 7.2 still reported only redis_version (7.2.x).
            (true, None) => (Product::Valkey, field("redis_version")?),
            (false, _) => (Product::Redis, field("redis_version")?),
        };
        // "8.4.0-rc1" -> (8, 4, 0); a missing patch is 0.
        let mut parts = version.trim().split('-').next()?.split('.').map(str::parse);
        let (major, minor) = (parts.next()?.ok()?, parts.next()?.ok()?);
        let version = (major, minor, parts.next().unwrap_or(Ok(0)).ok()?);
        Some(Server { product, version })
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

    pub fn has_builtin_msetex(&self) -> bool {
        self.at_least((8, 4), (9, 1))
    }

    /// Whether the server may ask for a command's keys on an I/O thread, where a getkeys callback
    /// crashes it (DESIGN.md, "Where the keys are"); unreadable io-threads: above 1 (and on Valkey
    /// 9+, `CONFIG SET` can start them later).
    fn keys_on_io_threads(&self, environment: &Environment) -> bool {
        let io_threads = environment.io_threads.is_none_or(|n| n > 1);
        match self.product {
            Product::Redis => self.at_least((8, 2), (0, 0)) && io_threads,
            Product::Valkey => {
                environment.cluster
                    && self.at_least((0, 0), (8, 0))
                    && (io_threads || self.at_least((0, 0), (9, 0)))
            }
        }
    }

    fn embedding(&self) -> Embedding {
        match self.product {
            Product::Redis if self.at_least((8, 2), (0, 0)) => Embedding::Redis82,
            Product::Valkey if self.at_least((0, 0), (9, 0)) => Embedding::Valkey9,
            Product::Valkey if self.at_least((0, 0), (8, 1)) => Embedding::Valkey81,
            Product::Redis if !self.at_least((7, 0), (0, 0)) => Embedding::CountedByLength,
            _ => Embedding::Separate,
        }
    }

    /// The load's line on a server newer than the newest of its family the matrix runs.
    pub fn untested_note(&self) -> Option<String> {
        let (major, minor, _) = self.version;
        let (newest, assumed) = match self.product {
            Product::Redis => (
                (8, 6),
                "module commands' keys may be read on I/O threads (io-threads above 1) and, in \
                 cluster mode, routed before command filters run; SET embeds a value with its key \
                 up to 41 bytes together and fires 'overwritten'; closing a key signals it",
            ),
            Product::Valkey => (
                (9, 1),
                "module commands' keys may be read on I/O threads in cluster mode, and routed by \
                 their legacy key range after command filters ran; SET embeds a value with its \
                 key up to 105 bytes together (with a TTL) and deletes a key whose deadline is \
                 past; atomic slot migration needs the module's consent",
            ),
        };
        ((major, minor) > newest).then(|| {
            let tested = format!("{} {}.{}", self.product.name(), newest.0, newest.1);
            format!(
                "{} is newer than the newest server this module was tested on ({tested}.x): it \
                 assumes this server does what {tested} does: {assumed}",
                self.describe()
            )
        })
    }

    pub fn describe(&self) -> String {
        let (major, minor, patch) = self.version;
        format!("{} {major}.{minor}.{patch}", self.product.name())
    }
}

/// Facts only the server's configuration tells, as far as the module could read them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Environment {
    pub cluster: bool,
    /// `io-threads`; `None` if unreadable (CONFIG renamed, no `RedisModule_ConfigGetNumeric`).
    pub io_threads: Option<u32>,
    /// `mem_allocator` is jemalloc (whose size classes `sizing` knows).
    pub jemalloc: bool,
    pub callable: Callable,
    /// Whether a dotless COMMAND-NAME is a server command's original name; `None` if unreadable.
    pub name_in_use: Option<bool>,
    /// Whether `ACL CAT` lists a command MSETEX (a built-in, maybe renamed); `None` if unreadable.
    pub builtin_listed: Option<bool>,
    /// Whether the server reads a KEYNUM spec with its step ([`KeynumStep`]); `None`: not asked.
    pub keynum_step: Option<bool>,
    /// What the module API offers (`AclCheck::offered`).
    pub acl: AclCheck,
    /// Whether the module API can register key specs (`RedisModule_SetCommandInfo`).
    pub key_specs: bool,
    /// Whether `CLUSTER GETSLOTMIGRATIONS` listed a job at load (Valkey 9+ in cluster mode: an
    /// export started before is otherwise unseen); `None` if not asked or unreadable.
    pub slot_migrations_at_load: Option<bool>,
}

/// The server commands the module calls or replicates, probed at load (`ffi::command_callable`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerCommand {
    Mset,
    Set,
    Msetex,
}

impl ServerCommand {
    pub const ALL: [ServerCommand; 3] = [Self::Mset, Self::Set, Self::Msetex];

    pub fn name(self) -> &'static CStr {
        match self {
            ServerCommand::Mset => c"MSET",
            ServerCommand::Set => c"SET",
            ServerCommand::Msetex => c"MSETEX",
        }
    }
}

/// Which [`ServerCommand`]s run under their own names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Callable([bool; 3]);

impl Callable {
    pub fn probe(probe: impl FnMut(ServerCommand) -> bool) -> Callable {
        Callable(ServerCommand::ALL.map(probe))
    }

    pub fn has(self, command: ServerCommand) -> bool {
        self.0.get(command as usize) == Some(&true)
    }
}

/// The server's own MSETEX.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Builtin {
    /// Before Redis 8.4 / Valkey 9.1.
    None,
    Serving,
    /// There, but renamed away (`rename-command MSETEX ""`).
    RenamedAway,
}

/// What SET does when its deadline is already past (DESIGN.md, "Past deadlines").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PastDeadline {
    /// Stores the key, which is then logically expired (Redis, Valkey 7.2).
    Store,
    /// Valkey 8+: may delete the key, by a clock no module API reads: SET decides per key.
    DecidedBySet,
}

/// Where SET stores a string: its own allocation or, when short, embedded in the key's. In place
/// matches SET only where SET does not embed (DESIGN.md, "Writing a key").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Embedding {
    /// Its own object (Redis 7.0 - 8.0, Valkey 7.2, 8.0): in place can be as compact (`sizing`).
    Separate,
    /// Redis 6.2: MEMORY USAGE counts an `embstr` (up to 44 bytes) by its length, in place by the
    /// allocation (up to 10% more): short values are not written in place.
    CountedByLength,
    /// Redis 8.2+ (`kvobjSet`): values up to 44 bytes, key and value at most 41, TTL or not.
    Redis82,
    /// Valkey 8.1 (`createStringObjectWithKeyAndExpire`): key and value at most 33 bytes with a
    /// TTL, 41 without; values up to 44.
    Valkey81,
    /// Valkey 9 (`shouldEmbedStringObject`): key and value at most 105/103/101 bytes with a TTL
    /// (113/111/109 without) for keys under 32, under 256 bytes, longer; values up to 116.
    Valkey9,
}

impl Embedding {
    /// Whether SET would embed `value` with `key` (`ttl`: the key has a TTL afterwards).
    pub fn embeds(self, key: usize, value: usize, ttl: bool) -> bool {
        let fits =
            |most_value: usize, most_both: usize| value <= most_value && key + value <= most_both;
        match self {
            Embedding::Separate => false,
            Embedding::CountedByLength => value <= 44,
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

/// How MSETEX behaves on this server: each difference decided once, at load (DESIGN.md, "Facts
/// taken from the version", tells each).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    /// SET's bad TTL is `invalid expire time in set`, not `... in 'set' command` (Redis 6.2).
    pub expire_error_unquoted: bool,
    /// SET's NX/XX looks the key up twice, counting a keyspace access (Redis 6.2).
    pub nx_check_counts_access: bool,
    /// Redis 6.2: `RedisModule_ReplicateVerbatim` copies the whole call per change counted.
    pub verbatim_copies_call: bool,
    /// Valkey's built-in words two numkeys errors its own way (`outcome::parse_error_text`).
    pub numkeys_errors_worded_as_valkey: bool,
    pub keys_on_io_threads: bool,
    pub routing: Routing,
    /// The server reads every call's keys as it reads the call, whoever needs them (Redis 8.2+,
    /// `preprocessCommand`): a getkeys callback would run twice a call.
    pub keys_read_with_every_call: bool,
    pub key_specs: bool,
    /// The built-in MSETEX writes each key as SET does, `set` then `expire` (Valkey, not Redis).
    pub builtin_writes_as_set: bool,
    /// Valkey's `SKIP_COMMAND_VALIDATION`: no lookup by name of each command replicated.
    pub replicate_without_lookup: bool,
    pub keynum_step: KeynumStep,
    /// Where SET stores a string; `None`: never in place (not jemalloc, whose classes we know).
    pub in_place: Option<Embedding>,
    /// Redis 8.2+: SET fires `overwritten` (and `type_changed`) on replace; in place fires it too.
    pub fires_overwritten: bool,
    /// Redis 8.6: `RedisModule_SignalModifiedKey` counts a keyspace hit SET does not: keys are
    /// signalled by closing them, and looked at read-only.
    pub signal_on_close: bool,
    pub builtin: Builtin,
    /// `cluster-enabled yes`.
    pub cluster: bool,
    /// Redis before 7.2: a key SET overwrites gets a fresh LRU clock (later ones keep the old).
    pub fresh_lru_on_overwrite: bool,
    pub past_deadline: PastDeadline,
    /// Valkey 9+: declare atomic slot migration support (else the server refuses to migrate).
    pub atomic_slot_migration: bool,
    pub slot_export: SlotExport,
    pub acl: AclCheck,
}

/// Whether the server reads a KEYNUM key spec with its step (Redis 7.0 to 8.4.3 do not,
/// redis/redis#14657), as `COMMAND GETKEYS` of its built-in MSETEX answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeynumStep {
    Read,
    NotRead,
    /// No built-in under its name, or COMMAND renamed away: taken as not read.
    NotAsked,
}

impl KeynumStep {
    pub fn answered(answer: Option<bool>) -> KeynumStep {
        match answer {
            Some(true) => KeynumStep::Read,
            Some(false) => KeynumStep::NotRead,
            None => KeynumStep::NotAsked,
        }
    }

    pub fn label(self) -> &'static CStr {
        match self {
            KeynumStep::Read => c"read",
            KeynumStep::NotRead => c"not_read",
            KeynumStep::NotAsked => c"not_asked",
        }
    }
}

/// Whether a slot export (atomic slot migration) can stream what the module replicates, and how
/// the server announces one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotExport {
    /// Not cluster mode, or no atomic slot migration (Redis before 8.4, Valkey before 9).
    None,
    /// Event `event`, subevent `started` before the export's first write (Redis 8.4 cluster_asm.c,
    /// Valkey 9.1 cluster_migrateslots.c), `ended` when it stops; `listed_at_load`: a job was
    /// listed at load (`None`: unknown; Redis's keep a backlog the probe sees).
    Announced {
        event: u64,
        started: u64,
        ended: [u64; 2],
        listed_at_load: Option<bool>,
    },
}

/// How a server routes a module command in cluster mode where it reads keys on I/O threads
/// (DESIGN.md, "Where the keys are").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Routing {
    /// By the keys read from the call as sent, before any command filter ran (Redis 8.2+).
    KeysReadBeforeFilters,
    /// By the legacy key range, read again after a filter changed the call's length (Valkey).
    LegacyRangeAfterFilters,
}

impl Profile {
    pub fn new(server: &Server, environment: Environment) -> Profile {
        let redis = server.product == Product::Redis;
        let redis_6 = redis && server.version < (7, 0, 0);
        let has_builtin = server.has_builtin_msetex() || environment.builtin_listed == Some(true);
        let builtin = match (has_builtin, environment.callable.has(ServerCommand::Msetex)) {
            (false, _) => Builtin::None,
            (true, true) => Builtin::Serving,
            (true, false) => Builtin::RenamedAway,
        };
        Profile {
            expire_error_unquoted: redis_6,
            nx_check_counts_access: redis_6,
            verbatim_copies_call: redis_6,
            numkeys_errors_worded_as_valkey: !redis,
            keys_on_io_threads: server.keys_on_io_threads(&environment),
            routing: if redis {
                Routing::KeysReadBeforeFilters
            } else {
                Routing::LegacyRangeAfterFilters
            },
            keys_read_with_every_call: redis && server.at_least((8, 2), (0, 0)),
            key_specs: environment.key_specs,
            builtin_writes_as_set: !redis,
            replicate_without_lookup: !redis,
            keynum_step: KeynumStep::answered(environment.keynum_step),
            in_place: environment.jemalloc.then_some(server.embedding()),
            fires_overwritten: redis && server.at_least((8, 2), (0, 0)),
            signal_on_close: redis && server.at_least((8, 6), (0, 0)),
            builtin,
            cluster: environment.cluster,
            fresh_lru_on_overwrite: redis && server.version < (7, 2, 0),
            past_deadline: if !redis && server.at_least((0, 0), (8, 0)) {
                PastDeadline::DecidedBySet
            } else {
                PastDeadline::Store
            },
            atomic_slot_migration: !redis && server.at_least((0, 0), (9, 0)),
            slot_export: match (environment.cluster, redis) {
                (false, _) => SlotExport::None,
                // REDISMODULE_EVENT_CLUSTER_SLOT_MIGRATION: MIGRATE_STARTED, _FAILED, _COMPLETED.
                (true, true) if server.at_least((8, 4), (0, 0)) => SlotExport::Announced {
                    event: 18,
                    started: 3,
                    ended: [4, 5],
                    listed_at_load: Some(false),
                },
                // VALKEYMODULE_EVENT_ATOMIC_SLOT_MIGRATION: EXPORT_STARTED, _ABORTED, _COMPLETED.
                (true, false) if server.at_least((0, 0), (9, 0)) => SlotExport::Announced {
                    event: 19,
                    started: 1,
                    ended: [3, 5],
                    listed_at_load: environment.slot_migrations_at_load,
                },
                (true, _) => SlotExport::None,
            },
            acl: environment.acl,
        }
    }

    /// Valkey 9.1+ with the built-in under its name: it writes each key as SET does, so it takes
    /// the keys the key API cannot, instead of MSET plus a deadline.
    pub fn builtin_batch(&self) -> bool {
        self.builtin_writes_as_set && self.builtin == Builtin::Serving
    }

    /// Redis 6.2: MSET writes new keys, counting their changes itself, for less than the module's
    /// only way to count one there (DESIGN.md, "What it costs").
    pub fn new_keys_by_mset(&self) -> bool {
        self.verbatim_copies_call
    }

    /// Replicas and the AOF run the built-in: under its name, not in cluster mode (a slot
    /// migration's filter cannot read its keys: Redis 8.6.3 drops it, and the write).
    pub fn native_replication(&self) -> bool {
        self.builtin == Builtin::Serving && !self.cluster
    }

    /// Whether "nobody listens" can be proven (DESIGN.md, "Nobody listens"): in cluster mode only
    /// where no slot export can be under way unseen.
    pub fn shortcut_allowed(&self) -> bool {
        match self.slot_export {
            SlotExport::None => true,
            SlotExport::Announced { listed_at_load, .. } => listed_at_load == Some(false),
        }
    }
}

#[cfg(test)]
mod tests;
