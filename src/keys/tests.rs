//! Where the keys are: the decision on every server kind, the registration it makes, and two
//! properties over random calls, against models of the servers' key extraction
//! (`getKeysUsingKeySpecs`, `populateCommandLegacyRangeSpec`) and of redis-py 8.2's cluster client
//! (`_get_keys_from_specs`): the filter's rewrite changes nothing the command decides and leaves
//! the server exactly the call's keys; a client reading COMMAND INFO finds exactly a call's keys,
//! or asks COMMAND GETKEYS, which answers them.

use super::*;
use crate::acl::AclCheck;
use crate::docs::KeyDocs;
use crate::ffi::Rewrite;
use crate::server::{Callable, Environment, Product, Server, ServerCommand};
use crate::syntax::tests::{arg_strategy, cases, views};
use proptest::prelude::*;

const NOW: i64 = 1_700_000_000_000;

fn environment(cluster: bool, io_threads: Option<u32>) -> Environment {
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

fn reading(syntax: Syntax, server: Server, environment: Environment) -> Reading {
    let profile = Profile::new(&server, environment.answered_by(&server));
    Keys::new(syntax, &profile).reading
}

fn redis(version: (u32, u32, u32)) -> Server {
    Server {
        product: Product::Redis,
        version,
    }
}

fn valkey(version: (u32, u32, u32)) -> Server {
    Server {
        product: Product::Valkey,
        version,
    }
}

/// One reading per server kind, mode and io-threads; a fact the load could not read is taken as
/// the unsafe answer (io-threads as above 1, the keynum step as not read).
#[test]
fn the_decision_on_every_server_kind() {
    use Reading::*;
    use Syntax::{Numkeys as N, Ttl as T};
    let (one, four, unread) = (Some(1), Some(4), None);
    let cases = [
        // Redis 6.2 has no key specs: the callback, everywhere.
        (redis((6, 2, 16)), false, four, T, Callback),
        (redis((6, 2, 16)), true, one, N, Callback),
        // Redis outside cluster mode: the callback where keys are read only when needed (before
        // 8.2), else a range after the filter's packed argument; the keynum spec where the server
        // said it reads its step (8.4.4+).
        (redis((7, 0, 15)), false, one, T, Callback),
        (redis((7, 0, 15)), false, one, N, Callback),
        (redis((8, 0, 6)), false, four, T, Callback),
        (redis((8, 2, 0)), false, one, T, Range),
        (redis((8, 6, 3)), false, four, T, Range),
        (redis((8, 6, 3)), false, one, N, Keynum),
        (redis((8, 4, 2)), false, four, N, Range),
        // Redis in cluster mode: the callback routes, where no I/O thread asks for keys.
        (redis((7, 0, 15)), true, four, T, Callback),
        (redis((8, 6, 3)), true, one, T, Callback),
        (redis((8, 6, 3)), true, one, N, Callback),
        // Redis 8.2+ in cluster mode with io-threads (or unreadable): no callback.
        (redis((8, 6, 3)), true, four, T, Marked),
        (redis((8, 6, 3)), true, unread, T, Marked),
        (redis((8, 6, 3)), true, four, N, Keynum),
        (redis((8, 4, 2)), true, four, N, Marked),
        (redis((8, 2, 0)), true, four, N, Marked),
        // Valkey: the callback but where I/O threads ask for keys in cluster mode.
        (valkey((7, 2, 7)), true, four, T, Callback),
        (valkey((8, 1, 1)), false, four, T, Callback),
        (valkey((8, 1, 1)), true, one, N, Callback),
        (valkey((8, 1, 1)), true, four, T, KeysOnly),
        (valkey((8, 1, 1)), true, unread, N, KeysOnly),
        (valkey((9, 1, 2)), true, one, N, KeysOnly),
        (valkey((9, 1, 2)), false, one, T, Callback),
        (valkey((9, 1, 2)), false, one, N, Keynum),
    ];
    for (server, cluster, io_threads, syntax, expected) in cases {
        let got = reading(syntax, server.clone(), environment(cluster, io_threads));
        assert_eq!(
            got, expected,
            "{server:?} cluster {cluster} io-threads {io_threads:?} {syntax:?}"
        );
    }
}

/// The keystep build (reports 8.6.3) with MSETEX renamed away cannot be asked about the step:
/// taken as not read, so no keynum spec is complete (the case of the hardened config).
#[test]
fn a_keynum_step_not_asked_is_not_read() {
    let server = redis((8, 6, 3));
    for (answer, expected) in [
        (Some(true), Reading::Keynum),
        (Some(false), Reading::Marked),
        (None, Reading::Marked),
    ] {
        let mut env = environment(true, Some(2));
        env.callable = Callable::ALL.without(ServerCommand::Msetex);
        let mut profile = Profile::new(&server, env);
        profile.keynum_step = KeynumStep::answered(answer);
        let keys = Keys::new(Syntax::Numkeys, &profile);
        assert_eq!(keys.reading, expected, "{answer:?}");
        let complete = matches!(
            keys.docs().spec,
            KeySpec::Keynum {
                incomplete: false,
                ..
            }
        );
        assert_eq!(complete, answer == Some(true));
    }
}

fn keys_of(syntax: Syntax, reading: Reading, step: KeynumStep) -> Keys {
    Keys {
        syntax,
        reading,
        step,
        cluster: true,
    }
}

const READINGS: [Reading; 5] = [
    Reading::Callback,
    Reading::Keynum,
    Reading::Marked,
    Reading::KeysOnly,
    Reading::Range,
];

/// The deployments that exist: the keynum reading only for the NUMKEYS form whose step is read.
fn deployments() -> Vec<Keys> {
    let mut all = Vec::new();
    for syntax in [Syntax::Ttl, Syntax::Numkeys] {
        for reading in READINGS {
            for step in [KeynumStep::Read, KeynumStep::NotRead] {
                let keynum_ok = syntax == Syntax::Numkeys && step == KeynumStep::Read;
                if reading != Reading::Keynum || keynum_ok {
                    all.push(keys_of(syntax, reading, step));
                }
            }
        }
    }
    all
}

#[test]
fn the_registration_follows_the_reading() {
    for keys in deployments() {
        let docs = keys.docs();
        let callback = keys.reading == Reading::Callback;
        assert_eq!(keys.flags().to_bytes().ends_with(b"getkeys-api"), callback);
        let short = matches!(keys.reading, Reading::KeysOnly | Reading::Range);
        assert_eq!(keys.arity(), if short { -2 } else { -4 });
        // A spec that describes the call after the filter tells clients to ask GETKEYS.
        assert_eq!(docs.ask_getkeys, keys.rewrites(), "{keys:?}");
        let (_, movable) = legacy_and_movable(&keys);
        assert!(movable, "{keys:?}");
    }
}

// --- Models --------------------------------------------------------------------------------

/// The keys the server reads from `argv` by MSETEX's key specs (`getKeysUsingKeySpecs` without
/// RETURN_PARTIAL: `None` where a spec is invalid or incomplete and, with no callback, no keys).
fn keys_by_specs(docs: &KeyDocs, argv: &[Vec<u8>]) -> Option<Vec<usize>> {
    let argc = argv.len() as i64;
    let (first, last, step, incomplete) = match docs.spec {
        KeySpec::Range {
            first,
            last,
            step,
            incomplete,
        } => {
            let first = i64::from(first);
            (first, argc + i64::from(last), i64::from(step), incomplete)
        }
        KeySpec::Keynum {
            index,
            step,
            incomplete,
        } => {
            let numkeys = argv.get(usize::try_from(index).ok()?)?;
            let numkeys: i64 = std::str::from_utf8(numkeys).ok()?.parse().ok()?;
            if numkeys < 0 || numkeys.to_string().len() != argv[index as usize].len() {
                return None;
            }
            let first = i64::from(index) + 1;
            (
                first,
                first + (numkeys - 1) * i64::from(step),
                i64::from(step),
                incomplete,
            )
        }
        KeySpec::AfterKeyword {
            keyword,
            last,
            step,
        } => {
            // strcasecmp from argv[1] to argv[argc - 2]: up to a NUL, ignoring case.
            let is = |arg: &Vec<u8>| {
                let arg = arg.split(|b| *b == 0).next().unwrap_or_default();
                arg.eq_ignore_ascii_case(keyword.to_bytes())
            };
            let found = argv
                .iter()
                .take(argv.len().saturating_sub(1))
                .skip(1)
                .position(is)?;
            let first = found as i64 + 2;
            (first, argc + i64::from(last), i64::from(step), false)
        }
    };
    if last >= argc || last < first || first >= argc || incomplete {
        return None;
    }
    Some(
        (first..=last)
            .step_by(step as usize)
            .map(|i| i as usize)
            .collect(),
    )
}

/// The keys the server reads from `argv` for ACL and (after the filter) routing: none for a call
/// shorter than the arity, then the specs, and the callback (`Keys::declare`) where they fail.
fn server_keys(keys: &Keys, argv: &[Vec<u8>]) -> Vec<usize> {
    // The arity check comes first.
    if argv.len() < keys.arity().unsigned_abs() as usize {
        return Vec::new();
    }
    match keys_by_specs(&keys.docs(), argv) {
        Some(found) => found,
        None if keys.reading == Reading::Callback => match keys.syntax.parse(argv, NOW) {
            Ok(request) => request.pairs.step_by(2).collect(),
            Err(_) => Vec::new(),
        },
        None => Vec::new(),
    }
}

/// COMMAND INFO's legacy positions and `movablekeys` flag (`populateCommandLegacyRangeSpec`, and
/// the callback's flag).
fn legacy_and_movable(keys: &Keys) -> (Option<(i64, i64, i64)>, bool) {
    let docs = keys.docs();
    let callback = keys.reading == Reading::Callback;
    match docs.spec {
        KeySpec::Keynum { .. } | KeySpec::AfterKeyword { .. } => (None, true),
        KeySpec::Range {
            first,
            last,
            step,
            incomplete,
        } => {
            let legacy = (i64::from(first), i64::from(last), i64::from(step));
            if !docs.ask_getkeys {
                (Some(legacy), callback || incomplete)
            } else if step == 1 {
                (Some(legacy), true)
            } else {
                (None, true)
            }
        }
    }
}

/// What redis-py 8.2's cluster client finds in `call`: `None` where it asks COMMAND GETKEYS.
fn redis_py_82(keys: &Keys, call: &[Vec<u8>]) -> Option<Vec<usize>> {
    let (legacy, movable) = legacy_and_movable(keys);
    let docs = keys.docs();
    let argc = call.len() as i64;
    if movable {
        let incomplete = match docs.spec {
            KeySpec::Range { incomplete, .. } | KeySpec::Keynum { incomplete, .. } => incomplete,
            // A search redis-py does not implement.
            KeySpec::AfterKeyword { .. } => return None,
        };
        if incomplete || docs.ask_getkeys || argc < i64::from(keys.arity().abs()) {
            return None;
        }
        let mut complete = docs;
        complete.ask_getkeys = false;
        // A spec past the end sends the client to GETKEYS.
        return keys_by_specs(&complete, call);
    }
    let (first, last, step) = legacy.unwrap_or((0, 0, 0));
    let last = if last < 0 { argc + last } else { last };
    Some(
        (first..=last)
            .step_by(step.max(1) as usize)
            .map(|i| i as usize)
            .collect(),
    )
}

/// `COMMAND GETKEYS <call>` as the server answers after the filter: `None` for an error.
fn getkeys(keys: &Keys, call: &[Vec<u8>]) -> Option<Vec<Vec<u8>>> {
    let mut command: Vec<Vec<u8>> = [b"COMMAND".to_vec(), b"GETKEYS".to_vec()]
        .into_iter()
        .chain(call.iter().cloned())
        .collect();
    let sent = command.clone();
    for change in keys.rewrite("msetex", &sent, TOKEN).changes {
        change.apply(&mut command, &sent);
    }
    let inner = command.get(2..)?.to_vec();
    if inner.first().map(Vec::as_slice) != Some(b"msetex".as_slice())
        || (inner.len() as i32) < keys.arity().abs()
    {
        return None;
    }
    let found = server_keys(keys, &inner);
    (!found.is_empty()).then(|| found.iter().map(|i| inner[*i].clone()).collect())
}

/// The token a test's filter gives a call.
const TOKEN: u64 = 7;

/// A call as the filter rewrites it, and the values it holds for the command.
fn rewritten(keys: &Keys, call: &[Vec<u8>]) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let Rewrite { changes, held } = keys.rewrite("msetex", call, TOKEN);
    let mut argv = call.to_vec();
    for change in changes {
        change.apply(&mut argv, call);
    }
    (argv, held.positions().map(|at| call[at].clone()).collect())
}

/// Calls with every option, keys and values that look like options, numbers or packed
/// arguments: what clients send, well formed or not.
fn call_strategy() -> impl Strategy<Value = (Syntax, Vec<Vec<u8>>)> {
    let word = prop_oneof![
        Just(b"NX".to_vec()),
        Just(b"xx".to_vec()),
        Just(b"EX".to_vec()),
        Just(b"px".to_vec()),
        Just(b"EXAT".to_vec()),
        Just(b"pxat".to_vec()),
        Just(b"KEEPTTL".to_vec()),
    ];
    let arg = || {
        prop_oneof![
            19 => arg_strategy(),
            1 => Just(MARK.to_bytes().to_vec()),
        ]
    };
    let pair = (arg(), arg());
    let options = proptest::collection::vec(word, 0..3);
    let time = prop_oneof![
        (1i64..=100_000_000).prop_map(|n| n.to_string().into_bytes()),
        arg_strategy()
    ];
    let syntax = prop::sample::select(vec![Syntax::Ttl, Syntax::Numkeys]);
    (
        syntax,
        options,
        time,
        proptest::collection::vec(pair, 0..5),
        proptest::collection::vec(arg_strategy(), 0..3),
        any::<bool>(),
    )
        .prop_map(|(syntax, options, time, pairs, extra, numkeys_ok)| {
            let mut call = vec![b"msetex".to_vec()];
            let flat = pairs.iter().flat_map(|(k, v)| [k.clone(), v.clone()]);
            match syntax {
                Syntax::Ttl => {
                    call.extend(options);
                    call.push(time);
                    call.extend(flat);
                }
                Syntax::Numkeys => {
                    let n = if numkeys_ok {
                        pairs.len()
                    } else {
                        pairs.len() + 1
                    };
                    call.push(n.to_string().into_bytes());
                    call.extend(flat);
                    for option in options {
                        let unit = !matches!(&option[..], b"NX" | b"xx" | b"KEEPTTL");
                        call.push(option);
                        if unit {
                            call.push(time.clone());
                        }
                    }
                }
            }
            call.extend(extra);
            (syntax, call)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    /// The command reads the rewritten call as the original (the same request or error), the
    /// server finds exactly its keys in it (none in a call the command refuses, which then answers
    /// as outside cluster mode), and the server's arity check lets every rewritten call through.
    #[test]
    fn the_rewrite_changes_nothing_but_where_the_keys_are(
        (syntax, call) in call_strategy(),
        reading in prop::sample::select(READINGS.to_vec()),
        now in 0i64..=i64::MAX / 2,
        read_step in any::<bool>(),
    ) {
        let read_step = read_step || reading == Reading::Keynum;
        let step = if read_step { KeynumStep::Read } else { KeynumStep::NotRead };
        prop_assume!(reading != Reading::Keynum || syntax == Syntax::Numkeys);
        let keys = keys_of(syntax, reading, step);
        let original = syntax.parse(&views(&call), now);
        let (argv, held) = rewritten(&keys, &call);
        prop_assert!(argv.len() >= 2);
        let read = keys.read(&argv, now, false);
        let found: Vec<&[u8]> = server_keys(&keys, &argv).iter().map(|i| argv[*i].as_slice()).collect();
        match &original {
            Err(error) => {
                prop_assert_eq!(read, Err(Refusal::Parse(*error)));
                // The filter parses without the server's clock: a relative TTL that overflows
                // only from the command's clock is refused by the command, its keys declared.
                if keys.filters() && syntax.parse(&views(&call), 0).is_err() {
                    prop_assert!(found.is_empty(), "{:?}", found);
                }
            }
            Ok(request) => {
                let sent: Vec<&[u8]> = call[request.pairs.clone()].iter().step_by(2).map(Vec::as_slice).collect();
                if reading == Reading::Marked && call.contains(&MARK.to_bytes().to_vec()) {
                    prop_assert_eq!(read, Err(Refusal::Marked));
                    prop_assert!(found.is_empty());
                } else {
                    let (got, token) = read.expect("read");
                    prop_assert_eq!((got.condition, got.expiry, got.ack), (request.condition, request.expiry, request.ack));
                    prop_assert_eq!(&found, &sent);
                    // Values are held, under the call's token, only for a call rewritten to its keys.
                    let keys_only = reading == Reading::KeysOnly;
                    prop_assert_eq!(token, keys_only.then_some(TOKEN));
                    prop_assert_eq!(held.len(), if keys_only { found.len() } else { 0 });
                    // The pairs the command writes are the call's, in order.
                    let written: Vec<&[u8]> = if token.is_none() {
                        argv[got.pairs.clone()].iter().map(Vec::as_slice).collect()
                    } else {
                        found.iter().zip(&held).flat_map(|(k, v)| [*k, v.as_slice()]).collect()
                    };
                    let pairs: Vec<&[u8]> = call[request.pairs.clone()].iter().map(Vec::as_slice).collect();
                    prop_assert_eq!(written, pairs);
                }
            }
        }
    }

    /// A client that reads COMMAND INFO as redis-py 8.2 does finds a call's keys, or asks COMMAND
    /// GETKEYS, which answers them; for a call the command refuses, it sends the call or gets
    /// GETKEYS's error, never other keys the server would route by.
    #[test]
    fn clients_reading_command_find_the_keys_or_ask(
        (syntax, call) in call_strategy(),
        reading in prop::sample::select(READINGS.to_vec()),
        read_step in any::<bool>(),
    ) {
        let read_step = read_step || reading == Reading::Keynum;
        let step = if read_step { KeynumStep::Read } else { KeynumStep::NotRead };
        prop_assume!(reading != Reading::Keynum || syntax == Syntax::Numkeys);
        let keys = keys_of(syntax, reading, step);
        let Ok(request) = syntax.parse(&views(&call), NOW) else {
            return Ok(());
        };
        let refused = reading == Reading::Marked && call.contains(&MARK.to_bytes().to_vec());
        let real: Vec<Vec<u8>> = call[request.pairs.clone()].iter().step_by(2).cloned().collect();
        let client = match redis_py_82(&keys, &call) {
            Some(positions) => Some(positions.iter().map(|i| call[*i].clone()).collect()),
            None => getkeys(&keys, &call),
        };
        if refused {
            prop_assert_eq!(getkeys(&keys, &call), None);
        } else {
            prop_assert_eq!(client, Some(real));
        }
    }
}

/// The load asks the server which keys it reads from a call with options, rewritten as the filter
/// rewrites it, and refuses to load unless they are the call's keys.
#[test]
fn the_load_checks_the_keys_the_server_reads() {
    let both = || Some(vec![b"{msetex}a".to_vec(), b"{msetex}b".to_vec()]);
    let marked = keys_of(Syntax::Numkeys, Reading::Marked, KeynumStep::NotRead);
    let mut asked = Vec::new();
    let ok = marked.check("m", |call| {
        asked = call.iter().map(|a| a.to_vec()).collect();
        both()
    });
    assert_eq!(ok, Ok(()));
    assert_eq!(asked.len(), 7, "m <mark> a 1 b 2 <packed>: {asked:?}");
    assert_eq!(asked[1], MARK.to_bytes());
    // Half the keys (a keynum spec read without its step): refused, with the keys read.
    let keynum = keys_of(Syntax::Numkeys, Reading::Keynum, KeynumStep::Read);
    let error = keynum
        .check("m", |_| Some(vec![b"{msetex}a".to_vec()]))
        .unwrap_err();
    assert!(
        error.contains("as [{msetex}a], not [{msetex}a {msetex}b]"),
        "{error}"
    );
    // Not asked (COMMAND renamed away): a complete keynum spec refuses the load, the mark does
    // not; the callback is not checked.
    assert!(keynum.check("m", |_| None).is_err());
    assert_eq!(marked.check("m", |_| None), Ok(()));
    let callback = keys_of(Syntax::Ttl, Reading::Callback, KeynumStep::NotAsked);
    assert_eq!(callback.check("m", |_| panic!("not asked")), Ok(()));
}

/// `msetex 1000 {t}k0 v ... {t}k999 v`, a NUMKEYS call of 1,000 pairs without options.
fn thousand_pairs() -> Vec<Vec<u8>> {
    let pairs = (0..1000).flat_map(|i| [format!("{{t}}k{i}").into_bytes(), b"v".to_vec()]);
    [b"msetex".to_vec(), b"1000".to_vec()]
        .into_iter()
        .chain(pairs)
        .collect()
}

/// One pass over the arguments: a keys-only rewrite replaces the keys in place and drops the rest
/// in one change, whatever the number of pairs, and holds the values (not copied); COMMAND
/// GETKEYS holds none.
#[test]
fn a_rewrite_is_a_few_changes_whatever_the_call() {
    let keys = keys_of(Syntax::Numkeys, Reading::KeysOnly, KeynumStep::Read);
    let mut call = thousand_pairs();
    call.extend([b"EX".to_vec(), b"60".to_vec()]);
    let rewrite = keys.rewrite("msetex", &call, TOKEN);
    assert_eq!(rewrite.changes.len(), 1);
    assert_eq!(
        rewrite.held.positions().collect::<Vec<_>>(),
        (3..2002).step_by(2).collect::<Vec<_>>()
    );
    let (argv, _) = rewritten(&keys, &call);
    assert_eq!(argv.len(), 1002);
    assert!(argv[1].len() < 32, "the packed argument holds no value");
    let (request, token) = keys.read(&argv, NOW, false).unwrap();
    assert_eq!((request.pairs, token), (2..1002, Some(TOKEN)));
    let getkeys = [&[b"COMMAND".to_vec(), b"GETKEYS".to_vec()][..], &call].concat();
    assert_eq!(keys.rewrite("msetex", &getkeys, TOKEN).held.count, 0);
}

/// The range leaves a call whose pairs run to the end as sent (the server reads its keys there),
/// and moves only what is not a pair: two changes whatever the number of pairs.
#[test]
fn a_range_rewrite_moves_only_what_is_not_a_pair() {
    let keys = keys_of(Syntax::Numkeys, Reading::Range, KeynumStep::NotRead);
    let mut call = thousand_pairs();
    assert_eq!(keys.rewrite("msetex", &call, TOKEN), Rewrite::default());
    assert_eq!(keys.read(&call, NOW, false).map(|r| r.0.pairs), Ok(2..2002));
    call.extend([b"EX".to_vec(), b"60".to_vec()]);
    let changes = keys.rewrite("msetex", &call, TOKEN).changes;
    assert_eq!(changes.len(), 2);
    assert!(changes.iter().all(|change| change.with.len() <= 1));
    let (argv, _) = rewritten(&keys, &call);
    assert_eq!(
        (argv.len(), &argv[2], &argv[2001]),
        (2002, &call[2], &call[2001])
    );
    assert_eq!(keys.read(&argv, NOW, false).map(|r| r.0.pairs), Ok(2..2002));
}
