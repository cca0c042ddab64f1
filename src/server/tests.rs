use super::*;
use crate::server::KeynumStep;

impl Server {
    /// A `product` from version `from` and before `before` (the unit tests' expectations per
    /// server kind; version comparisons stay in `server`).
    pub fn is(&self, product: Product, from: (u32, u32), before: Option<(u32, u32)>) -> bool {
        let (major, minor, _) = self.version;
        self.product == product
            && (major, minor) >= from
            && before.is_none_or(|before| (major, minor) < before)
    }
}

impl Environment {
    /// `self` with the answers `server` gives the load's questions (the servers as measured).
    pub fn answered_by(self, server: &Server) -> Environment {
        let redis = server.product == Product::Redis;
        let builtin = server.has_builtin_msetex();
        let serving = builtin && self.callable.has(ServerCommand::Msetex);
        Environment {
            builtin_listed: Some(builtin),
            // Redis 8.4.0 to 8.4.3 read a keynum spec without its step (fixed in 8.4.4).
            keynum_step: serving.then_some(!(redis && server.version < (8, 4, 4))),
            key_specs: !(redis && server.version < (7, 0, 0)),
            slot_migrations_at_load: Some(false),
            acl: if redis && server.version < (7, 0, 0) {
                AclCheck::CommandName
            } else if redis && server.version < (7, 2, 0) {
                AclCheck::Capability
            } else {
                AclCheck::Categories
            },
            ..self
        }
    }
}

impl Callable {
    /// Every command there (what the unit tests start from).
    pub const ALL: Callable = Callable([true; 3]);

    /// The same set without `command` (as `rename-command command ""`).
    pub fn without(mut self, command: ServerCommand) -> Callable {
        self.0 = ServerCommand::ALL.map(|other| other != command && self.has(other));
        self
    }
}

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

fn redis(version: &str) -> Server {
    from_info(&format!(
        "# Server\r\nredis_version:{version}\r\nredis_mode:standalone\r\n"
    ))
    .unwrap()
}

fn valkey(version: &str) -> Server {
    from_info(&format!(
        "# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:{version}\r\n"
    ))
    .unwrap()
}

const PLAIN: Environment = Environment {
    cluster: false,
    io_threads: Some(1),
    jemalloc: true,
    callable: Callable::ALL,
    name_in_use: Some(false),
    builtin_listed: None,
    keynum_step: None,
    acl: AclCheck::Categories,
    key_specs: true,
    slot_migrations_at_load: None,
};

#[test]
fn identifies_every_server_kind() {
    assert_eq!(
        redis("7.0.15"),
        Server {
            product: Product::Redis,
            version: (7, 0, 15)
        }
    );
    assert_eq!(valkey("8.0.1").product, Product::Valkey);
    assert_eq!(valkey("255.255.255").version, (255, 255, 255));
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
    assert_eq!(redis("8.4.0-rc1").version, (8, 4, 0));
}

#[test]
fn builtin_msetex_from_redis_8_4_and_valkey_9_1() {
    let cases = [
        (redis("6.2.14"), false),
        (redis("7.0.15"), false),
        (redis("8.2.2"), false),
        (redis("8.4.0"), true),
        (redis("8.6.3"), true),
        (valkey("8.1.3"), false),
        (valkey("9.0.0"), false),
        (valkey("9.1.0"), true),
        (valkey("255.255.255"), true),
    ];
    for (server, builtin) in cases {
        assert_eq!(server.has_builtin_msetex(), builtin, "{server:?}");
    }
}

#[test]
fn keys_are_declared_without_getkeys_where_io_threads_ask_or_specs_are_exact() {
    let with = |io_threads: u32, cluster| Environment {
        cluster,
        io_threads: Some(io_threads),
        ..PLAIN
    };
    let io = |server: &Server, env| Profile::new(server, env).keys_on_io_threads;
    assert!(io(&redis("8.6.3"), with(4, false)));
    assert!(io(&redis("8.6.3"), with(4, true)));
    assert!(!io(&redis("8.6.3"), with(1, false)));
    assert!(!io(&redis("8.6.3"), with(1, true)));
    assert!(!io(&redis("8.0.6"), with(4, false)));
    assert!(!io(&redis("7.0.15"), with(4, true)));
    // Valkey: only in cluster mode; 9 can raise io-threads at run time.
    assert!(!io(&valkey("8.1.1"), with(4, false)));
    assert!(!io(&valkey("8.1.1"), with(1, true)));
    assert!(io(&valkey("8.0.1"), with(4, true)));
    assert!(io(&valkey("9.1.2"), with(1, true)));
    assert!(!io(&valkey("7.2.7"), with(4, true)));
    // io-threads unreadable (CONFIG renamed away): taken as above 1.
    let unreadable = |cluster| Environment {
        cluster,
        io_threads: None,
        ..PLAIN
    };
    assert!(io(&redis("8.2.0"), unreadable(false)));
    assert!(io(&valkey("8.1.1"), unreadable(true)));
    assert!(!io(&valkey("8.1.1"), unreadable(false)));
    assert!(!io(&redis("8.0.6"), unreadable(true)));
}

#[test]
fn write_paths_follow_what_set_leaves() {
    let profile = |server: &Server| Profile::new(server, PLAIN);
    let redis_6_2 = profile(&redis("6.2.16"));
    assert!(redis_6_2.nx_check_counts_access && redis_6_2.verbatim_copies_call);
    assert_eq!(
        profile(&redis("6.2.16")).in_place,
        Some(Embedding::CountedByLength)
    );
    for server in [
        redis("7.0.15"),
        redis("8.0.6"),
        valkey("7.2.7"),
        valkey("8.0.1"),
    ] {
        assert_eq!(
            profile(&server).in_place,
            Some(Embedding::Separate),
            "{server:?}"
        );
    }
    assert_eq!(profile(&redis("8.6.3")).in_place, Some(Embedding::Redis82));
    assert_eq!(
        profile(&valkey("8.1.1")).in_place,
        Some(Embedding::Valkey81)
    );
    assert_eq!(profile(&valkey("9.1.2")).in_place, Some(Embedding::Valkey9));
    let redis_8_6 = profile(&redis("8.6.3"));
    assert!(redis_8_6.fires_overwritten && redis_8_6.signal_on_close);
    assert!(!profile(&redis("8.0.6")).fires_overwritten);
    assert!(
        profile(&valkey("9.1.2")).builtin_batch() && !profile(&valkey("9.0.0")).builtin_batch()
    );
    assert!(!redis_8_6.builtin_batch());
    // The built-in renamed away: MSET writes Valkey's batch.
    let renamed = Environment {
        callable: Callable::ALL.without(ServerCommand::Msetex),
        ..PLAIN
    };
    let valkey_renamed = Profile::new(&valkey("9.1.2"), renamed);
    assert!(!valkey_renamed.builtin_batch());
    assert_eq!(valkey_renamed.builtin, Builtin::RenamedAway);
    assert_eq!(profile(&valkey("9.1.2")).builtin, Builtin::Serving);
    assert_eq!(profile(&valkey("9.0.0")).builtin, Builtin::None);
    assert!(
        profile(&redis("7.0.15")).fresh_lru_on_overwrite
            && !profile(&redis("7.2.6")).fresh_lru_on_overwrite
    );
    let libc = Environment {
        jemalloc: false,
        ..PLAIN
    };
    assert_eq!(Profile::new(&redis("7.0.15"), libc).in_place, None);
}

/// The bounds measured on each server (OBJECT ENCODING of SET's keys).
#[test]
fn set_embeds_short_strings_as_each_server_does() {
    assert!(!Embedding::Separate.embeds(1, 1, true));
    // Redis 6.2.16: values up to 44 bytes are `embstr`, whatever the key.
    assert!(Embedding::CountedByLength.embeds(200, 44, true));
    assert!(!Embedding::CountedByLength.embeds(1, 45, false));
    // Redis 8.6.3: 9-byte key with 32 bytes embedded, 33 not.
    assert!(Embedding::Redis82.embeds(9, 32, true) && !Embedding::Redis82.embeds(9, 33, true));
    assert!(Embedding::Redis82.embeds(20, 21, false) && !Embedding::Redis82.embeds(20, 22, false));
    assert!(!Embedding::Redis82.embeds(0, 45, false));
    // Valkey 8.1.1, with a TTL: k9/v24 embedded, k9/v25 not.
    assert!(Embedding::Valkey81.embeds(9, 24, true) && !Embedding::Valkey81.embeds(9, 25, true));
    assert!(Embedding::Valkey81.embeds(9, 32, false));
    // Valkey 9.1.2, with a TTL: k9/v96, k31/v74, k32/v71 embedded, one more not.
    for (key, value) in [(9, 96), (31, 74), (32, 71)] {
        assert!(Embedding::Valkey9.embeds(key, value, true), "{key}/{value}");
        assert!(
            !Embedding::Valkey9.embeds(key, value + 1, true),
            "{key}/{value}"
        );
    }
    // The benchmark's session keys (14-byte key, 32-byte value).
    assert!(!Embedding::Redis82.embeds(14, 32, true) && !Embedding::Valkey81.embeds(14, 32, true));
    assert!(Embedding::Valkey9.embeds(14, 32, true));
}

#[test]
fn past_deadlines_as_set_treats_them() {
    let past = |server: &Server| Profile::new(server, PLAIN).past_deadline;
    assert_eq!(past(&redis("8.6.3")), PastDeadline::Store);
    assert_eq!(past(&valkey("7.2.7")), PastDeadline::Store);
    assert_eq!(past(&valkey("8.0.1")), PastDeadline::DecidedBySet);
    assert_eq!(past(&valkey("9.1.2")), PastDeadline::DecidedBySet);
}

#[test]
fn error_texts_and_cluster_options() {
    let wording = |server: &Server| {
        let profile = Profile::new(server, PLAIN);
        (
            profile.expire_error_unquoted,
            profile.numkeys_errors_worded_as_valkey,
        )
    };
    assert_eq!(wording(&redis("6.2.16")), (true, false));
    assert_eq!(wording(&redis("7.0.15")), (false, false));
    assert_eq!(wording(&valkey("7.2.7")), (false, true));
    // In cluster mode, "nobody listens" holds where no slot export can run unseen: none on
    // servers without atomic slot migration; announced by an event from Redis 8.4 and Valkey 9,
    // where a job listed at load (or a list that cannot be read) is one the module missed.
    let cluster = |listed| Environment {
        cluster: true,
        slot_migrations_at_load: listed,
        ..PLAIN
    };
    for (server, listed, allowed) in [
        (valkey("8.1.1"), None, true),
        (redis("7.0.15"), None, true),
        (redis("8.6.3"), None, true),
        (valkey("9.1.2"), Some(false), true),
        (valkey("9.1.2"), Some(true), false),
        (valkey("9.1.2"), None, false),
    ] {
        let profile = Profile::new(&server, cluster(listed));
        assert_eq!(profile.shortcut_allowed(), allowed, "{server:?} {listed:?}");
        assert!(
            Profile::new(&server, PLAIN).shortcut_allowed(),
            "{server:?}"
        );
        let announced = matches!(profile.slot_export, SlotExport::Announced { .. });
        assert_eq!(announced, server.has_builtin_msetex(), "{server:?}");
    }
    assert!(Profile::new(&valkey("9.1.2"), cluster(None)).atomic_slot_migration);
}

/// The keynum step is what the server answered; its version says nothing (the keystep build
/// reports 8.6.3), and a server that could not be asked is taken as not reading it.
#[test]
fn the_keynum_step_is_what_the_server_answered() {
    let renamed = Environment {
        callable: Callable::ALL.without(ServerCommand::Msetex),
        ..PLAIN
    };
    let cases = [
        (Some(true), PLAIN, KeynumStep::Read),
        (Some(false), PLAIN, KeynumStep::NotRead),
        (None, PLAIN, KeynumStep::NotAsked),
        (None, renamed, KeynumStep::NotAsked),
    ];
    for (answer, env, step) in cases {
        let env = Environment {
            keynum_step: answer,
            ..env
        };
        assert_eq!(Profile::new(&redis("8.6.3"), env).keynum_step, step);
    }
}

#[test]
fn native_replication() {
    let cluster = Environment {
        cluster: true,
        ..PLAIN
    };
    for server in [redis("8.6.3"), valkey("9.1.2")] {
        assert!(
            Profile::new(&server, PLAIN).native_replication(),
            "{server:?}"
        );
        assert!(
            !Profile::new(&server, cluster).native_replication(),
            "{server:?}"
        );
    }
    assert!(!Profile::new(&redis("8.2.0"), PLAIN).native_replication());
}

/// A server newer than the matrix's newest of its family gets one log line naming the newest
/// tested version and what is assumed from it; the tested ones and older get none.
#[test]
fn a_server_newer_than_the_matrix_is_named_in_the_log() {
    for tested in [
        redis("8.6.3"),
        redis("8.6.9"),
        redis("7.0.15"),
        valkey("9.1.2"),
        valkey("8.1.1"),
    ] {
        assert_eq!(tested.untested_note(), None, "{tested:?}");
    }
    let note = redis("8.8.0").untested_note().unwrap();
    assert!(
        note.starts_with(
            "Redis 8.8.0 is newer than the newest server this module was tested on (Redis 8.6.x)"
        ),
        "{note}"
    );
    assert!(note.contains("41 bytes"), "{note}");
    let note = valkey("10.0.1").untested_note().unwrap();
    assert!(
        note.contains("(Valkey 9.1.x)") && note.contains("105 bytes"),
        "{note}"
    );
    assert!(valkey("9.2.0").untested_note().is_some());
}
