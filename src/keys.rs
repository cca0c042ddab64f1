//! Where a call's keys are and how the server learns them (getkeys callback, or key specs with the
//! command filter packing or refusing options), decided at load; DESIGN.md, "Where the keys are".

use std::ffi::CStr;

use crate::docs::{keys_from_2, pairs_from_2, KeyDocs, KeySpec};
use crate::ffi::{Arg, ArgsChange, Ctx, KeyPositions, OwnedString};
use crate::outcome::Refusal;
use crate::server::{Builtin, KeysDeclared, MovedKeys, Profile};
use crate::syntax::{Layout, Packed, ParseError, Request, Syntax, ARITY};

/// How this deployment's calls get their keys to the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keys {
    syntax: Syntax,
    declared: KeysDeclared,
    /// What the filter does with a call whose options stand among its keys; `None`: nothing
    /// (keys come from the callback, or the NUMKEYS form's keynum spec is exact).
    filter: Option<MovedKeys>,
    /// Whether the server reads a keynum spec with its step, as it answered (`None`: not asked).
    keynum_step: Option<bool>,
    /// The server has a built-in MSETEX (the command the keynum question is asked about).
    builtin: bool,
    /// Cluster mode: a call's keys route it.
    cluster: bool,
}

impl Keys {
    pub fn new(syntax: Syntax, profile: &Profile) -> Keys {
        let filter = match profile.keys {
            KeysDeclared::BySpecs {
                moved,
                keynum_exact,
            } => (syntax == Syntax::Ttl || !keynum_exact).then_some(moved),
            KeysDeclared::ByCallback => None,
        };
        Keys {
            syntax,
            declared: profile.keys,
            filter,
            keynum_step: profile.keynum_step,
            builtin: profile.builtin != Builtin::None,
            cluster: profile.cluster,
        }
    }

    /// Validates a call as the server passes it (packed only where the filter packs).
    pub fn parse<A: AsRef<[u8]>>(&self, argv: &[A], now_ms: i64) -> Result<Request, ParseError> {
        self.syntax.parse(argv, now_ms, self.packed())
    }

    /// What the filter makes of argv[1] here (`Refused`: GETKEYS and ACL DRYRUN's options).
    fn packed(&self) -> Packed {
        match self.filter {
            None => Packed::Plain,
            Some(MovedKeys::Packed | MovedKeys::Refused) => Packed::Options,
            Some(MovedKeys::AllButKeys) => Packed::AllButKeys,
        }
    }

    /// The call's values where the filter packed them (`Layout::KeysOnly`), made string objects
    /// for the write; none where they are arguments. `None` if one cannot be made.
    pub fn values<'c>(
        &self,
        ctx: &Ctx<'c>,
        argv: &[Arg<'c>],
        request: &Request,
    ) -> Option<Vec<OwnedString>> {
        if request.layout != Layout::KeysOnly {
            return Some(Vec::new());
        }
        let values = self.syntax.packed_values(argv)?;
        values.iter().map(|value| ctx.string(value)).collect()
    }

    /// The least argument count the server lets through (negative: at least): the filter's
    /// `AllButKeys` form of a one-pair call has three.
    pub fn arity(&self) -> i32 {
        match self.filter {
            Some(MovedKeys::AllButKeys) => -3,
            _ => ARITY,
        }
    }

    /// The flags MSETEX registers with: a getkeys callback only where the server may call it.
    pub fn flags(&self) -> &'static CStr {
        match self.declared {
            KeysDeclared::ByCallback => c"write deny-oom getkeys-api",
            KeysDeclared::BySpecs { .. } => c"write deny-oom",
        }
    }

    /// MSETEX's key specification: incomplete where the callback answers (options move the keys)
    /// or the server reads a keynum spec without its step.
    pub fn docs(&self) -> KeyDocs {
        let keynum = |incomplete| KeyDocs {
            spec: KeySpec::Keynum {
                index: 1,
                step: 2,
                incomplete,
            },
            notes: None,
            legacy: (0, 0, 0),
            movable: false,
        };
        match (self.syntax, self.declared, self.filter) {
            (_, _, Some(MovedKeys::AllButKeys)) => keys_from_2(
                c"Keys follow argument 1, where the module's command filter moves every other one.",
            ),
            (Syntax::Ttl, KeysDeclared::ByCallback, _) => pairs_from_2(
                true,
                c"Keys follow the options and the time; options move them.",
            ),
            (Syntax::Ttl, ..) => pairs_from_2(false, c"Keys follow the time."),
            (Syntax::Numkeys, KeysDeclared::ByCallback, _) => {
                keynum(self.keynum_step != Some(true))
            }
            (Syntax::Numkeys, _, None) => keynum(false),
            (Syntax::Numkeys, _, Some(_)) => pairs_from_2(
                false,
                c"Keys follow numkeys; the module's command filter moves the options in front.",
            ),
        }
    }

    /// What the log says about how the server learns a call's keys: where its answer on the
    /// keynum step was not yes, and where keys are declared by key specifications only.
    pub fn load_note(&self, io_threads_read: bool) -> Option<String> {
        let step = self.keynum_note();
        let specs = self.specs_note(io_threads_read);
        match (step, specs) {
            (Some(step), Some(specs)) => Some(format!("{step}; {specs}")),
            (step, specs) => step.or(specs),
        }
    }

    /// Where the NUMKEYS form stands beside a built-in whose keynum spec the server does not (or
    /// could not be asked to) read with its step: what it said, and the path taken instead.
    fn keynum_note(&self) -> Option<String> {
        if self.syntax != Syntax::Numkeys || !self.builtin || self.keynum_step == Some(true) {
            return None;
        }
        let answer = match self.keynum_step {
            Some(_) => {
                "this server's COMMAND GETKEYS reads only the first half of the keys of its own \
                 MSETEX (a keynum key specification read without its step, redis/redis#14657)"
            }
            None => {
                "this server could not be asked whether it reads a keynum key specification with \
                 its step (COMMAND GETKEYS of its MSETEX failed: MSETEX or COMMAND renamed away?)"
            }
        };
        let path = match (self.declared, self.filter) {
            (KeysDeclared::ByCallback, _) => "the getkeys callback declares every call's keys",
            (KeysDeclared::BySpecs { .. }, None) => {
                "taken as yes, and confirmed on this module's own command once registered (the \
                 load is refused if not)"
            }
            (KeysDeclared::BySpecs { .. }, Some(_)) => {
                "the keys are declared as a range after numkeys"
            }
        };
        Some(format!("{answer}: {path}"))
    }

    fn specs_note(&self, io_threads_read: bool) -> Option<String> {
        let what = match (self.declared, self.filter, self.syntax) {
            (KeysDeclared::ByCallback, ..) => return None,
            (_, None, _) => "the NUMKEYS form's keynum specification describes every call",
            (_, Some(MovedKeys::Refused), Syntax::Ttl) => {
                "calls with options are refused (in cluster mode with io-threads, this server \
                 routes a call by keys it reads before any module)"
            }
            (_, Some(MovedKeys::Refused), Syntax::Numkeys) => {
                "calls with options after the pairs are refused (in cluster mode with io-threads, \
                 this server routes a call by keys it reads before any module)"
            }
            (_, Some(MovedKeys::Packed), _) => {
                "a command filter moves the options into one argument before the server reads \
                 the keys (MONITOR and SLOWLOG show that form)"
            }
            (_, Some(MovedKeys::AllButKeys), _) => {
                "a command filter moves every argument but the keys (options and values) into one \
                 argument before the server reads the keys, and clients reading COMMAND ask \
                 COMMAND GETKEYS (MONITOR and SLOWLOG show that form)"
            }
        };
        Some(format!(
            "this server may ask for command keys from I/O threads{}, or reads a keynum key \
             specification with its step outside cluster mode (key specifications are then exact, \
             and cost less than a callback): keys are declared by key specifications only, and \
             {what}",
            if io_threads_read {
                ""
            } else {
                " (io-threads could not be read, CONFIG renamed?, so taken as above 1)"
            }
        ))
    }

    /// Whether the server read this call's keys exactly: always by callback; by key specs only if
    /// no options stood among the keys (moved by the filter, or none). `argc`: argument count.
    pub fn were_declared(&self, request: &Request, argc: usize) -> bool {
        match (self.syntax, self.declared) {
            (_, KeysDeclared::ByCallback) => true,
            (Syntax::Ttl, _) => request.pairs.start == 2,
            (Syntax::Numkeys, _) => self.filter.is_none() || request.pairs.end == argc,
        }
    }

    /// Answers the server's "where are the keys" call. A call the command refuses declares no
    /// keys (no CROSSSLOT or key pattern error before its own refusal): it is parsed as the
    /// command parses it, with the server's clock (a relative TTL must not overflow it).
    pub fn declare<A: AsRef<[u8]>>(&self, positions: &KeyPositions, args: &[A]) {
        if let Ok(request) = self.parse(args, positions.now_ms()) {
            for index in request.pairs.step_by(2).filter(|index| *index < args.len()) {
                positions.key_at(index);
            }
        }
    }

    /// Whether the filter may rewrite command `name` (it runs before every command: a few
    /// comparisons): MSETEX where options would be read as keys, COMMAND GETKEYS, ACL DRYRUN.
    pub fn filter_wants(&self, ours: &str, name: &[u8]) -> bool {
        let is = |word: &[u8]| name.eq_ignore_ascii_case(word);
        let packs = self.filter.is_some();
        (packs && is(ours.as_bytes()))
            || ((packs || self.syntax == Syntax::Ttl) && is(b"COMMAND"))
            || (packs && is(b"ACL"))
    }

    /// Rewrites a command naming MSETEX (`ours`): packs the options among the keys, or refuses
    /// the call where the server routes it by keys read before any filter. A typed client's
    /// numkeys call gets the TTL form's refusal from `COMMAND GETKEYS` too (cluster clients ask).
    pub fn rewrite<A: AsRef<[u8]>>(&self, ours: &str, args: &[A]) -> Vec<ArgsChange> {
        let Some((at, routed)) = locate(ours, args) else {
            return Vec::new();
        };
        let call = args.get(at..).unwrap_or_default();
        if (!routed || self.cluster)
            && self.syntax == Syntax::Ttl
            && self.parse(call, 0) == Err(ParseError::NumkeysShape)
        {
            return refuse_with(
                args,
                Refusal::Parse(ParseError::NumkeysShape).short_text(ours),
            );
        }
        // Packs only where this deployment packs (the filter also sees calls it leaves as they are).
        let packed = |moved| Some((moved, self.syntax.pack(call, self.packed())?));
        let Some((moved, packing)) = self.filter.and_then(packed) else {
            return Vec::new();
        };
        if routed && moved == MovedKeys::Refused {
            return refuse_with(args, Refusal::Unroutable.short_text(ours));
        }
        // From the end: the trailing options, each value (last first), then the leading ones.
        let trailing = ArgsChange {
            at: at + packing.trailing,
            replaced: call.len().saturating_sub(packing.trailing),
            with: Vec::new(),
        };
        let values = packing.values.into_iter().flat_map(|pairs| {
            pairs.skip(1).step_by(2).rev().map(move |value| ArgsChange {
                at: at + value,
                replaced: 1,
                with: Vec::new(),
            })
        });
        let leading = ArgsChange {
            at: at + 1,
            replaced: packing.leading,
            with: vec![packing.arg],
        };
        std::iter::once(trailing)
            .chain(values)
            .chain([leading])
            .collect()
    }
}

/// The keys of the call [`Keys::confirm`] asks about.
const PROBE_KEYS: [&[u8]; 2] = [b"{msetex}a", b"{msetex}b"];

impl Keys {
    /// The load's last check, once MSETEX is registered: asks the server (`getkeys`: `COMMAND
    /// GETKEYS`) which keys it reads from a call with options, as the filter (where `filtered`)
    /// passes it on. Anything but exactly the call's keys refuses the load (the error is the log
    /// line); a server that cannot be asked (COMMAND renamed away) was given the choices that are
    /// safe either way.
    pub fn confirm(
        &self,
        ours: &str,
        filtered: bool,
        getkeys: impl FnOnce(&[&[u8]]) -> Option<Vec<Vec<u8>>>,
    ) -> Result<(), String> {
        let [a, b] = PROBE_KEYS;
        let options: [&[u8]; 3] = [b"NX", b"PX", b"100000"];
        let call: Vec<&[u8]> = match self.syntax {
            Syntax::Ttl => [&[ours.as_bytes()][..], &options, &[a, b"1", b, b"2"]].concat(),
            Syntax::Numkeys => [&[ours.as_bytes(), b"2", a, b"1", b, b"2"][..], &options].concat(),
        };
        let mut command: Vec<Vec<u8>> = [&[b"COMMAND".as_slice(), b"GETKEYS"][..], &call]
            .concat()
            .into_iter()
            .map(<[u8]>::to_vec)
            .collect();
        if filtered && self.filter_wants(ours, b"COMMAND") {
            let args: Vec<&[u8]> = command.iter().map(Vec::as_slice).collect();
            for change in self.rewrite(ours, &args) {
                change.apply(&mut command);
            }
        }
        let asked: Vec<&[u8]> = command.iter().skip(2).map(Vec::as_slice).collect();
        let Some(keys) = getkeys(&asked) else {
            return Ok(());
        };
        if keys == PROBE_KEYS {
            return Ok(());
        }
        let shown = |words: &[&[u8]]| {
            let words: Vec<String> = words
                .iter()
                .map(|w| String::from_utf8_lossy(w).into_owned())
                .collect();
            words.join(" ")
        };
        let read: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        Err(format!(
            "the server reads the keys of '{}' as [{}], not [{}] (its key specifications do not \
             say where this call's keys are), so ACL key patterns and cluster slots would not \
             see every key: MSETEX does not load here",
            shown(&call),
            shown(&read),
            shown(&PROBE_KEYS)
        ))
    }
}

/// Where a call of MSETEX is in the command (0; COMMAND GETKEYS: 2; ACL DRYRUN: 3), and whether
/// the server routes it (only the call itself).
fn locate<A: AsRef<[u8]>>(ours: &str, args: &[A]) -> Option<(usize, bool)> {
    let is = |arg: &A, word: &[u8]| arg.as_ref().eq_ignore_ascii_case(word);
    let is_ours = |arg: &A| is(arg, ours.as_bytes());
    match args {
        [first, ..] if is_ours(first) => Some((0, true)),
        [command, sub, name, ..]
            if is(command, b"COMMAND")
                && (is(sub, b"GETKEYS") || is(sub, b"GETKEYSANDFLAGS"))
                && is_ours(name) =>
        {
            Some((2, false))
        }
        [acl, sub, _user, name, ..] if is(acl, b"ACL") && is(sub, b"DRYRUN") && is_ours(name) => {
            Some((3, false))
        }
        _ => None,
    }
}

/// Turns the command into an unknown one named `text`: the server answers `ERR unknown command
/// '<text>'` before permissions or routing, nothing runs (in MULTI, the transaction is refused).
fn refuse_with<A>(args: &[A], text: String) -> Vec<ArgsChange> {
    vec![ArgsChange {
        at: 0,
        replaced: args.len(),
        with: vec![text.into_bytes()],
    }]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acl::AclCheck;
    use crate::server::{Callable, Environment, Product, Server};

    fn keys(syntax: Syntax, product: Product, version: (u32, u32, u32), cluster: bool) -> Keys {
        keys_threads(syntax, product, version, cluster, 1)
    }

    fn keys_threads(
        syntax: Syntax,
        product: Product,
        version: (u32, u32, u32),
        cluster: bool,
        io_threads: u32,
    ) -> Keys {
        let environment = Environment {
            cluster,
            io_threads: Some(io_threads),
            jemalloc: true,
            callable: Callable::ALL,
            name_in_use: Some(false),
            builtin_listed: None,
            keynum_step: None,
            acl: AclCheck::Categories,
        };
        let server = Server { product, version };
        let profile = Profile::new(&server, environment.answered_by(&server));
        Keys::new(syntax, &profile)
    }

    #[test]
    fn key_specs_say_where_the_keys_are() {
        let range = |incomplete| KeySpec::Range {
            first: 2,
            last: -1,
            step: 2,
            incomplete,
        };
        let keynum = |incomplete| KeySpec::Keynum {
            index: 1,
            step: 2,
            incomplete,
        };
        // The callback answers where options move the keys.
        let ttl = keys(Syntax::Ttl, Product::Redis, (7, 0, 15), false);
        assert_eq!(ttl.docs().spec, range(true));
        assert_eq!(ttl.flags(), c"write deny-oom getkeys-api");
        // The built-in's keynum spec, read with its step from Redis 8.4 on.
        let newer = keys(Syntax::Numkeys, Product::Redis, (8, 6, 3), false).docs();
        assert_eq!((newer.spec, newer.legacy), (keynum(false), (0, 0, 0)));
        let older = keys(Syntax::Numkeys, Product::Redis, (7, 0, 15), false).docs();
        assert_eq!(older.spec, keynum(true));
        // Key specs only where Valkey routes by the legacy range: the filter moves all but the
        // keys in front, the keys are one plain range, and a second spec marks them movable.
        let moved = keys(Syntax::Numkeys, Product::Valkey, (9, 1, 2), true);
        assert_eq!(moved.flags(), c"write deny-oom");
        let docs = moved.docs();
        let keys_only = KeySpec::Range {
            first: 2,
            last: -1,
            step: 1,
            incomplete: false,
        };
        assert_eq!(
            (docs.spec, docs.legacy, docs.movable),
            (keys_only, (2, -1, 1), true)
        );
        assert_eq!(moved.arity(), -3);
        let ttl_moved = keys_threads(Syntax::Ttl, Product::Valkey, (8, 1, 1), true, 4);
        assert_eq!(ttl_moved.docs().spec, keys_only);
        // Redis with io-threads, outside cluster mode: the options only.
        let options = keys_threads(Syntax::Numkeys, Product::Redis, (8, 2, 0), false, 4);
        assert_eq!(
            (
                options.docs().spec,
                options.docs().legacy,
                options.docs().movable
            ),
            (range(false), (2, -1, 2), false)
        );
        assert_eq!(options.arity(), ARITY);
        assert!(moved.filter_wants("msetex", b"MSETEX"));
        assert!(!ttl.filter_wants("msetex", b"MSETEX"));
    }

    /// The load asks the server which keys it reads from a call with options, passed on as the
    /// filter passes it, and refuses to load unless they are the call's keys.
    #[test]
    fn the_load_confirms_the_keys_the_server_reads() {
        let both = || Some(vec![b"{msetex}a".to_vec(), b"{msetex}b".to_vec()]);
        let plain = keys(Syntax::Numkeys, Product::Redis, (7, 0, 15), false);
        let mut asked = Vec::new();
        let ok = plain.confirm("m", true, |call| {
            asked = call.iter().map(|a| a.to_vec()).collect();
            both()
        });
        assert_eq!(ok, Ok(()));
        assert_eq!(asked.len(), 9, "the call as a client sends it");
        // Half the keys (a keynum spec read without its step): refused, with the keys read.
        let half = plain.confirm("m", true, |_| Some(vec![b"{msetex}a".to_vec()]));
        let error = half.unwrap_err();
        assert!(
            error.contains("as [{msetex}a], not [{msetex}a {msetex}b]"),
            "{error}"
        );
        // Not asked (COMMAND renamed away): the load goes on.
        assert_eq!(plain.confirm("m", true, |_| None), Ok(()));
        // Where the filter packs, the server is asked about the packed call.
        let packed = keys(Syntax::Numkeys, Product::Valkey, (9, 1, 2), true);
        let mut asked = Vec::new();
        let ok = packed.confirm("m", true, |call| {
            asked = call.iter().map(|a| a.to_vec()).collect();
            both()
        });
        assert_eq!(ok, Ok(()));
        assert_eq!(asked.len(), 4, "m <packed> a b: {asked:?}");
        assert_eq!(asked.get(1).and_then(|a| a.first()), Some(&1));
        // Without the filter (it could not be registered) the call goes as it is.
        let error = packed.confirm("m", false, |call| {
            Some(call.iter().skip(2).step_by(2).map(|a| a.to_vec()).collect())
        });
        assert!(error.is_err());
    }
}
