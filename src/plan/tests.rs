use super::*;
use crate::replication::{CallForm, Replicate, Sent};
use crate::server::{Callable, Product, ServerCommand};
use crate::syntax::Syntax;

fn redis(major: u32, minor: u32) -> Server {
    Server {
        product: Product::Redis,
        version: (major, minor, 0),
    }
}

fn valkey(major: u32, minor: u32) -> Server {
    Server {
        product: Product::Valkey,
        version: (major, minor, 0),
    }
}

/// Every server kind the module supports.
fn servers() -> Vec<Server> {
    let mut all: Vec<Server> = [
        (6, 2),
        (7, 0),
        (7, 2),
        (7, 4),
        (8, 0),
        (8, 2),
        (8, 4),
        (8, 6),
    ]
    .into_iter()
    .map(|(major, minor)| redis(major, minor))
    .collect();
    all.extend(
        [(7, 2), (8, 0), (8, 1), (9, 0), (9, 1)]
            .into_iter()
            .map(|(major, minor)| valkey(major, minor)),
    );
    all
}

fn env(cluster: bool, io_threads: Option<u32>) -> Environment {
    Environment {
        cluster,
        io_threads,
        jemalloc: true,
        callable: Callable::ALL,
        name_in_use: Some(false),
        builtin_listed: None,
        keynum_step: None,
        acl: AclCheck::Categories,
        key_specs: true,
        slot_migrations_at_load: None,
    }
}

/// With and without cluster mode, io-threads 1, 4 and unreadable.
fn environments() -> Vec<Environment> {
    let mut all = Vec::new();
    for cluster in [false, true] {
        for io_threads in [Some(1), Some(4), None] {
            all.push(env(cluster, io_threads));
        }
    }
    all
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

/// The load of `server` in `environment`, with the answers that server gives the load's questions.
fn plan(options: &LoadOptions, server: &Server, environment: Environment) -> Result<Plan, String> {
    super::plan(options, server, environment.answered_by(server))
}

fn options(syntax: Syntax, replicate: Replicate, name: &str) -> LoadOptions {
    LoadOptions {
        command_name: name.to_owned(),
        syntax,
        replicate,
    }
}

fn registrations(plan: Result<Plan, String>) -> Box<Registrations> {
    match plan {
        Ok(Plan::Register(registrations)) => registrations,
        other => panic!("expected registrations, got {other:?}"),
    }
}

fn roles(registrations: &Registrations) -> Vec<Role> {
    registrations.commands.iter().map(|c| c.role).collect()
}

#[test]
fn every_server_kind_gets_msetex_and_what_its_replication_needs() {
    for server in servers() {
        for env in environments() {
            for syntax in [Syntax::Ttl, Syntax::Numkeys] {
                for replicate in [Replicate::Set, Replicate::Msetex] {
                    let what = format!("{server:?} {env:?} {syntax:?} {replicate:?}");
                    let plan = registrations(plan(
                        &options(syntax, replicate, "app.msetex"),
                        &server,
                        env,
                    ));
                    let msetex = &plan.commands[0];
                    assert_eq!(msetex.role, Role::Msetex, "{what}");
                    assert_eq!(msetex.name.as_c_str(), c"app.msetex", "{what}");
                    let keys = plan.module.keys;
                    assert_eq!(msetex.flags, keys.flags(), "{what}");
                    assert_eq!(msetex.legacy_keys, keys.docs().legacy, "{what}");
                    assert!(msetex.docs.is_some(), "{what}");

                    // Servers that run MSETEX natively, outside cluster
                    // mode: one native command per call, whatever the mode.
                    let native = server.has_builtin_msetex() && !env.cluster;
                    let expected_replication = if native {
                        Sent::PerCall {
                            command: c"MSETEX".to_owned(),
                            form: CallForm::Numkeys,
                        }
                    } else if replicate == Replicate::Set {
                        Sent::PerKey
                    } else {
                        Sent::PerCall {
                            command: c"app.msetex.apply".to_owned(),
                            form: CallForm::Apply,
                        }
                    };
                    assert_eq!(plan.module.replication.sent, expected_replication, "{what}");
                    // Only the names this deployment needs.
                    let mut expected = vec![Role::Msetex];
                    if replicate == Replicate::Msetex && !native {
                        expected.push(Role::Apply);
                    }
                    // Every call counts its key-API changes with it, whoever listens.
                    expected.push(Role::ChangesCounter);
                    assert_eq!(roles(&plan), expected, "{what}");
                    if let Some(apply) = plan.commands.iter().find(|c| c.role == Role::Apply) {
                        assert_eq!(apply.name.as_c_str(), c"app.msetex.apply", "{what}");
                        assert_eq!(apply.flags, c"write deny-oom", "{what}");
                        assert_eq!(apply.legacy_keys, (2, -1, 2), "{what}");
                    }
                    assert_eq!(
                        plan.module.replication.counter.as_c_str(),
                        c"app.msetex.changes",
                        "{what}"
                    );
                    // No slot migration job at load: "nobody listens" can be proven everywhere.
                    assert!(plan.module.profile.shortcut_allowed(), "{what}");
                    assert_eq!(
                        plan.module.profile.atomic_slot_migration,
                        server.is(Product::Valkey, (9, 0), None),
                        "{what}"
                    );
                    assert_eq!(
                        plan.module.profile.signal_on_close,
                        server.is(Product::Redis, (8, 6), None),
                        "{what}"
                    );
                    let unreadable =
                        plan.module.profile.keys_on_io_threads && env.io_threads.is_none();
                    assert_eq!(
                        plan.notes.iter().any(|n| n.contains("could not be read")),
                        unreadable,
                        "{what}: {:?}",
                        plan.notes
                    );
                }
            }
        }
    }
}

#[test]
fn the_builtin_serves_its_own_syntax_under_its_name() {
    let load = |server: &Server, syntax, name: &str, env: Environment| {
        plan(&options(syntax, Replicate::Set, name), server, env)
    };
    for server in servers() {
        let builtin = server.has_builtin_msetex();
        let what = format!("{server:?}");
        match load(&server, Syntax::Numkeys, "msetex", PLAIN) {
            Ok(Plan::BuiltinServes { line, profile }) => {
                assert!(builtin, "{what}");
                assert!(line.contains(&server.describe()), "{line}");
                // A module that serves nothing blocks nothing: it declares
                // what the server asks of every loaded module.
                assert_eq!(
                    profile.atomic_slot_migration,
                    server.product == Product::Valkey,
                    "{what}"
                );
            }
            Ok(Plan::Register(_)) => assert!(!builtin, "{what}"),
            Err(error) => panic!("{what}: {error}"),
        }
        for env in [PLAIN, env(true, Some(1))] {
            // The built-in renamed away: the module takes no name the server gave a command
            // (registering one crashes the server) and answers to no name it did not register,
            // so the default name is refused, saying what to load instead.
            let renamed = Environment {
                callable: Callable::ALL.without(ServerCommand::Msetex),
                ..env
            };
            match load(&server, Syntax::Numkeys, "msetex", renamed) {
                Err(error) => {
                    assert!(builtin, "{what}");
                    assert!(
                        error.contains("renamed away") && error.contains("COMMAND-NAME msetex.nk"),
                        "{error}"
                    );
                }
                Ok(plan) => {
                    assert!(!builtin, "{what}");
                    assert_eq!(
                        registrations(Ok(plan)).commands[0].name.as_c_str(),
                        c"msetex"
                    );
                }
            }
            for (syntax, name) in [(Syntax::Numkeys, "app.nk"), (Syntax::Ttl, "app.ttl")] {
                let own = registrations(load(&server, syntax, name, renamed));
                assert_eq!(own.commands[0].name.to_str(), Ok(name), "{what}");
                assert!(!own.module.profile.native_replication(), "{what}");
            }
        }
        match load(&server, Syntax::Ttl, "msetex", PLAIN) {
            Err(error) => {
                assert!(builtin, "{what}");
                assert!(
                    error.contains(&server.describe()) && error.contains("COMMAND-NAME"),
                    "{error}"
                );
            }
            Ok(plan) => {
                assert!(!builtin, "{what}");
                assert!(matches!(plan, Plan::Register(_)), "{what}");
            }
        }
        for syntax in [Syntax::Ttl, Syntax::Numkeys] {
            assert!(
                matches!(
                    load(&server, syntax, "msetex.x", PLAIN),
                    Ok(Plan::Register(_))
                ),
                "{what}"
            );
        }
    }
}

#[test]
fn replicate_msetex_sends_the_numkeys_form_under_its_name_outside_cluster_mode() {
    let server = redis(7, 2);
    let load = |syntax, name: &str, env| {
        registrations(plan(
            &options(syntax, Replicate::Msetex, name),
            &server,
            env,
        ))
    };
    let own = load(Syntax::Numkeys, "msetex", PLAIN);
    assert_eq!(
        own.module.replication.sent,
        Sent::PerCall {
            command: c"msetex".to_owned(),
            form: CallForm::Numkeys
        }
    );
    assert_eq!(roles(&own), [Role::Msetex, Role::ChangesCounter]);
    assert!(
        own.notes[0].contains("one 'msetex' command"),
        "{:?}",
        own.notes
    );
    assert!(own.notes[0].contains("run it natively"));
    // In cluster mode a slot migration's filter must read the keys.
    let cluster = load(Syntax::Numkeys, "msetex", env(true, Some(1)));
    assert!(matches!(
        cluster.module.replication.sent,
        Sent::PerCall {
            form: CallForm::Apply,
            ..
        }
    ));
    for (syntax, name) in [(Syntax::Numkeys, "nk"), (Syntax::Ttl, "msetex")] {
        let apply = load(syntax, name, PLAIN);
        assert_eq!(
            apply.module.replication.sent,
            Sent::PerCall {
                command: CString::new(format!("{name}.apply")).unwrap(),
                form: CallForm::Apply
            }
        );
        assert!(!apply.notes[0].contains("natively"), "{:?}", apply.notes);
    }
    assert_eq!(
        load(Syntax::Numkeys, "nk", PLAIN).registered,
        "command 'nk' registered on Redis 7.2.0 (SYNTAX NUMKEYS)"
    );
}

/// A command renamed away: a path that does not need it, or a refused load
/// that names it. Never a call that writes and then finds it missing.
#[test]
fn a_renamed_command_takes_another_path_or_fails_the_load_with_its_name() {
    for server in servers() {
        for cluster in [false, true] {
            for replicate in [Replicate::Set, Replicate::Msetex] {
                for missing in ServerCommand::ALL {
                    let what = format!("{server:?} cluster {cluster} {replicate:?} {missing:?}");
                    let env = Environment {
                        callable: Callable::ALL.without(missing),
                        ..env(cluster, Some(1))
                    };
                    let loaded = plan(&options(Syntax::Ttl, replicate, "m"), &server, env);
                    let valkey_8 = server.is(Product::Valkey, (8, 0), None);
                    let valkey_9_1 = server.is(Product::Valkey, (9, 1), None);
                    let native = server.has_builtin_msetex() && !cluster;
                    // Redis 7.0's ACL check asks about MSET and SET.
                    let redis_7_0 = server.is(Product::Redis, (7, 0), Some((7, 2)));
                    let refused = match missing {
                        ServerCommand::Mset => !valkey_9_1,
                        ServerCommand::Set => {
                            valkey_8 || redis_7_0 || (replicate == Replicate::Set && !native)
                        }
                        ServerCommand::Msetex => false,
                    };
                    match loaded {
                        Err(error) => {
                            assert!(refused, "{what}: {error}");
                            let name = missing.name().to_string_lossy();
                            assert!(
                                error.contains(&format!("no '{name}' command")),
                                "{what}: {error}"
                            );
                        }
                        Ok(Plan::Register(plan)) => {
                            assert!(!refused, "{what}");
                            if missing == ServerCommand::Msetex {
                                assert!(!plan.module.profile.builtin_batch(), "{what}");
                                assert!(!plan.module.profile.native_replication(), "{what}");
                            }
                        }
                        Ok(Plan::BuiltinServes { .. }) => panic!("{what}"),
                    }
                }
            }
        }
    }
}

/// A name without a dot may be a server command renamed away, which a
/// module cannot take (the server crashes): refused unless ACL CAT, which
/// lists every command by its original name, says it is free.
#[test]
fn a_name_without_a_dot_must_be_free() {
    let load = |name: &str, name_in_use| {
        plan(
            &options(Syntax::Ttl, Replicate::Set, name),
            &redis(7, 0),
            Environment {
                name_in_use,
                ..PLAIN
            },
        )
    };
    assert!(matches!(load("mine", Some(false)), Ok(Plan::Register(_))));
    let taken = load("set", Some(true)).unwrap_err();
    assert!(
        taken.contains("'set' is the name of a server command"),
        "{taken}"
    );
    let unknown = load("mine", None).unwrap_err();
    assert!(unknown.contains("ACL CAT"), "{unknown}");
    // The default name and names with a dot are no server command's.
    for name in ["msetex", "app.mine"] {
        assert!(matches!(load(name, None), Ok(Plan::Register(_))), "{name}");
    }
}
