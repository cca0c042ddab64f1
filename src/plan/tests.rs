use super::*;
use crate::replication::Replicate;
use crate::server::Product;
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

fn environments() -> Vec<Environment> {
    let mut all = Vec::new();
    for cluster in [false, true] {
        for io_threads in [1, 4] {
            all.push(Environment {
                cluster,
                io_threads,
                jemalloc: true,
            });
        }
    }
    all
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

/// Where the server asks a `getkeys-api` command for its keys from an I/O
/// thread, so that keys are declared by key specs only. Redis 8.6.3
/// (networking.c `processInputBuffer` -> server.c `preprocessCommand` ->
/// `extractKeysAndSlot` on the I/O thread, which falls back to the module's
/// callback); Valkey 9.1.2 in cluster mode (networking.c
/// `ioThreadReadQueryFromClient` -> server.c `prepareCommandGeneric` ->
/// `clusterSlotByCommand`), which Valkey 9 can reach with io-threads turned
/// on at run time. The Redis 8.2 and Valkey 8.0 bounds are those of
/// `Profile::new`, whose tests cover them.
fn asks_from_io_threads(server: &Server, env: Environment) -> bool {
    let (major, minor, _) = server.version;
    match server.product {
        Product::Redis => (major, minor) >= (8, 2) && env.io_threads > 1,
        Product::Valkey => major >= 8 && env.cluster && (env.io_threads > 1 || major >= 9),
    }
}

#[test]
fn every_server_kind_gets_msetex_and_its_replication_command() {
    for server in servers() {
        for env in environments() {
            for syntax in [Syntax::Ttl, Syntax::Numkeys] {
                for replicate in [Replicate::Set, Replicate::Msetex] {
                    let what = format!("{server:?} {env:?} {syntax:?} {replicate:?}");
                    let plan = registrations(plan(
                        &options(syntax, replicate, "app.msetex"),
                        Some(&server),
                        env,
                    ));
                    let by_specs = asks_from_io_threads(&server, env);
                    let msetex = &plan.commands[0];
                    assert_eq!(msetex.role, Role::Msetex, "{what}");
                    assert_eq!(msetex.name.as_c_str(), c"app.msetex", "{what}");
                    assert_eq!(
                        msetex.flags.to_bytes().ends_with(b" getkeys-api"),
                        !by_specs,
                        "{what}"
                    );
                    assert!(msetex.categories && msetex.docs.is_some(), "{what}");
                    let apply = &plan.commands[1];
                    assert_eq!(apply.role, Role::Apply, "{what}");
                    assert_eq!(apply.name.as_c_str(), c"app.msetex.apply", "{what}");
                    assert_eq!(apply.flags, c"write deny-oom", "{what}");
                    assert_eq!(apply.legacy_keys, (2, -1, 2), "{what}");

                    // Redis routes a command in cluster mode by the keys its
                    // I/O threads read before any command filter ran.
                    let unroutable = syntax == Syntax::Ttl
                        && by_specs
                        && server.product == Product::Redis
                        && env.cluster;
                    let mut expected = vec![Role::Msetex, Role::Apply];
                    if unroutable {
                        expected.push(Role::Unroutable);
                    }
                    if replicate == Replicate::Msetex {
                        expected.push(Role::ChangesCounter);
                    }
                    assert_eq!(roles(&plan), expected, "{what}");
                    assert_eq!(
                        plan.module.unroutable_c.as_deref(),
                        unroutable.then_some(c"app.msetex.unroutable"),
                        "{what}"
                    );
                    assert_eq!(
                        plan.module.counter_c.as_deref(),
                        (replicate == Replicate::Msetex).then_some(c"app.msetex.changes"),
                        "{what}"
                    );
                    let needed: Vec<&CStr> = plan.needed.iter().map(|(c, _)| *c).collect();
                    match replicate {
                        Replicate::Set => assert_eq!(needed, [c"MSET", c"SET"], "{what}"),
                        Replicate::Msetex => assert_eq!(needed, [c"MSET"], "{what}"),
                    }
                    assert_eq!(plan.shortcut_allowed, !env.cluster, "{what}");
                    assert_eq!(
                        plan.atomic_slot_migration,
                        server.product == Product::Valkey && server.version >= (9, 0, 0),
                        "{what}"
                    );
                    assert_eq!(
                        plan.signal_on_close,
                        server.product == Product::Redis && server.version >= (8, 6, 0),
                        "{what}"
                    );
                    assert_eq!(plan.module.replicated_form, ReplicatedForm::Apply, "{what}");
                    assert_eq!(
                        plan.notes.len(),
                        usize::from(replicate == Replicate::Msetex) + usize::from(by_specs),
                        "{what}"
                    );
                }
            }
        }
    }
}

#[test]
fn an_unidentified_server_gets_the_careful_choices() {
    let env = environments()[0];
    let plan = registrations(plan(
        &options(Syntax::Ttl, Replicate::Set, "msetex"),
        None,
        env,
    ));
    assert_eq!(plan.commands[0].flags, c"write deny-oom");
    assert_eq!(
        plan.registered,
        "command 'msetex' registered on an unidentified server (SYNTAX TTL)"
    );
}

#[test]
fn the_builtin_serves_its_own_syntax_under_its_name() {
    let env = environments()[0];
    let load = |server: &Server, syntax, name: &str| {
        plan(&options(syntax, Replicate::Set, name), Some(server), env)
    };
    for server in servers() {
        let builtin = server.has_builtin_msetex();
        let what = format!("{server:?}");
        match load(&server, Syntax::Numkeys, "msetex") {
            Ok(Plan::BuiltinServes(line)) => {
                assert!(builtin, "{what}");
                assert!(line.contains(&server.describe()), "{line}");
            }
            Ok(Plan::Register(_)) => assert!(!builtin, "{what}"),
            Err(error) => panic!("{what}: {error}"),
        }
        match load(&server, Syntax::Ttl, "msetex") {
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
                matches!(load(&server, syntax, "msetex.x"), Ok(Plan::Register(_))),
                "{what}"
            );
        }
    }
}

#[test]
fn replicate_msetex_sends_the_builtin_form_only_under_its_name() {
    let env = environments()[0];
    let server = redis(7, 2);
    let load = |syntax, name: &str| {
        registrations(plan(
            &options(syntax, Replicate::Msetex, name),
            Some(&server),
            env,
        ))
    };
    let builtin = load(Syntax::Numkeys, "msetex");
    assert_eq!(builtin.module.replicated_form, ReplicatedForm::Builtin);
    assert_eq!(builtin.module.replicated_name(), c"msetex");
    assert!(
        builtin.notes[0].contains("one 'msetex' command"),
        "{:?}",
        builtin.notes
    );
    assert!(builtin.notes[0].contains("run it natively"));
    for (syntax, name) in [(Syntax::Numkeys, "nk"), (Syntax::Ttl, "msetex")] {
        let apply = load(syntax, name);
        assert_eq!(apply.module.replicated_form, ReplicatedForm::Apply);
        assert_eq!(
            apply.module.replicated_name().to_bytes(),
            format!("{name}.apply").as_bytes()
        );
        assert!(!apply.notes[0].contains("natively"), "{:?}", apply.notes);
    }
    assert_eq!(
        load(Syntax::Numkeys, "nk").registered,
        "command 'nk' registered on Redis 7.2.0 (SYNTAX NUMKEYS)"
    );
}

#[test]
fn a_renamed_command_fails_the_load_with_its_name() {
    let plan = registrations(plan(
        &options(Syntax::Ttl, Replicate::Set, "msetex"),
        Some(&redis(7, 0)),
        environments()[0],
    ));
    let (_, mset) = &plan.needed[0];
    let (_, set) = &plan.needed[1];
    assert!(
        mset.contains("server's MSET command") && !mset.contains("REPLICATE"),
        "{mset}"
    );
    assert!(
        set.contains("server's SET command") && set.contains("REPLICATE MSETEX"),
        "{set}"
    );
}
