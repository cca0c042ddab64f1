//! `--instr` (`make bench-instr`, `make bench-gate`): instructions per key of the whole server
//! process under valgrind's callgrind, in steady state, on every server, regime and variant;
//! what each floor path leaves in a key, against SET EX; and callgrind_annotate's profiles.

use crate::plan::*;
use crate::run::{flush_now, Bench, Progress, Running};
use msetex_harness::{q, Target, TempDir};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Calls of a measured phase (or pipelines of 100 SETEX), 100 keys each; the one big call.
pub const CALLS: usize = 20;
pub const BIG_CALL: usize = 10_000;
/// jemalloc: no purging on a clock, no cache GC, thread caches larger than a phase's swing. With
/// the defaults, refills and flushes that depend on the cache's history made the same phase cost
/// 2% more or less from one run to the next.
pub const MALLOC_CONF: &str = "dirty_decay_ms:-1,muzzy_decay_ms:-1,tcache_gc_incr_bytes:\
    4294967296,tcache_nslots_small_min:4096,tcache_nslots_small_max:4096,tcache_nslots_large:256";
/// Redis and Valkey seed their hash functions (keys, the command table) from /dev/urandom: a
/// fixed seed makes every run's tables alike, where each seed made lookups collide more or less
/// (pipelined SETEX's command lookups: 4% from one server process to the next).
const SEED: &str = r#"#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define SEEDED(f) FILE *f(const char *p, const char *m) { FILE *(*real)(const char *, const char *) \
    = dlsym(RTLD_NEXT, #f); return real(strcmp(p, "/dev/urandom") ? p : getenv("FIXED_URANDOM"), m); }
SEEDED(fopen) SEEDED(fopen64)
"#;
pub const FLOOR_PATHS: [Variant; 2] = [Variant::FloorEvents, Variant::FloorMset];
/// Whose keys are checked against SET EX's (None); also the variants of the 10,000-key call.
const STORED: [Option<Variant>; 4] = [
    None,
    Some(Variant::Module),
    Some(Variant::FloorEvents),
    Some(Variant::FloorMset),
];

/// The variants measured on `server`.
pub fn variants(server: &Target) -> Vec<Variant> {
    let mut list = vec![Variant::Module, Variant::Floor, Variant::FloorEvents];
    list.extend([Variant::FloorMset, Variant::Mset, Variant::Setex]);
    list.extend(server.has_builtin_msetex().then_some(Variant::Builtin));
    list
}

/// callgrind_annotate's functions of a dump: (function (object), own, with callees) per key.
pub type Profile = Vec<(String, f64, f64)>;

/// What the instruction bench measured, by row (`Setup::plain(server)`; the regime is the row's
/// values) and variant.
#[derive(Default)]
pub struct Instr {
    /// Instructions per key.
    pub counts: BTreeMap<(Row, Variant), f64>,
    /// OBJECT ENCODING and MEMORY USAGE of a key the variant wrote (None: SET EX; overwrite: the
    /// third write).
    pub stored: BTreeMap<(Row, Option<Variant>), String>,
    /// The profiles of MSETEX and the floor paths.
    pub profiles: BTreeMap<(Row, Variant), Profile>,
}

impl Instr {
    pub fn count(&self, row: Row, variant: Variant) -> f64 {
        *self.counts.get(&(row, variant)).unwrap_or(&f64::NAN)
    }

    /// A row's floor: the cheaper of the floor paths that leave keys as SET EX does (checked on
    /// the row's regime with 100 keys a call).
    pub fn floor(&self, row: Row) -> Option<Variant> {
        let stored = |v| self.stored.get(&(Row { batch: 100, ..row }, v));
        let fair = |v: &Variant| stored(Some(*v)).is_some_and(|s| Some(s) == stored(None));
        let cheaper =
            |a: &Variant, b: &Variant| self.count(row, *a).total_cmp(&self.count(row, *b));
        FLOOR_PATHS.into_iter().filter(fair).min_by(cheaper)
    }

    /// MSETEX's instructions per key over `den`'s (None: the row's floor's).
    pub fn ratio(&self, row: Row, den: Option<Variant>) -> f64 {
        let (den, module) = (
            den.or_else(|| self.floor(row)),
            self.count(row, Variant::Module),
        );
        den.map_or(f64::NAN, |den| module / self.count(row, den))
    }
}

/// `server` through a script that execs it under callgrind (the same process id), counting every
/// instruction but those of `serverCron`; with its directory (the script, its pid, the dumps).
pub fn under_callgrind(server: &Target) -> (Target, TempDir) {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new("instr");
    let at = |file: &str| dir.path().join(file).display().to_string();
    let written = std::fs::write(at("seed.c"), SEED).and(std::fs::write(at("seed"), [b'0'; 64]));
    written.expect("write the seed");
    let (so, c) = (at("seed.so"), at("seed.c"));
    let gcc = Command::new("gcc")
        .args(["-shared", "-fPIC", "-o", &so, &c, "-ldl"])
        .status();
    assert!(gcc.is_ok_and(|s| s.success()), "gcc: no seed library");
    let (out, urandom) = (at("callgrind.out"), at("seed"));
    let text = format!(
        "#!/bin/sh\necho $$ > {out}.pid\nexport MALLOC_CONF={MALLOC_CONF} JE_MALLOC_CONF=\
         {MALLOC_CONF} LD_PRELOAD={so} FIXED_URANDOM={urandom}\nexec setarch -R valgrind \
         --tool=callgrind --callgrind-out-file={out} --dump-line=no --toggle-collect=serverCron \
         --collect-atstart=yes --log-file={out}.log {} \"$@\"\n",
        server.binary
    );
    std::fs::write(at("server"), text).expect("write the callgrind script");
    let executable = std::fs::Permissions::from_mode(0o755);
    std::fs::set_permissions(at("server"), executable).expect("chmod");
    let mut wrapped = server.clone();
    wrapped.binary = at("server");
    (wrapped, dir)
}

/// The keys of a regime: `k:N` or `k:` and 12 digits, with another prefix.
fn key(values: Values, prefix: &str, i: usize) -> String {
    match values {
        Values::ShortKeys => format!("{prefix}{i}"),
        _ => format!("{prefix}{i:012}"),
    }
}

/// A server under callgrind: what it measured goes to `instr`.
struct Measured<'b> {
    bench: &'b Bench,
    instr: &'b mut Instr,
    server: usize,
    running: Running,
    dir: PathBuf,
    dumps: usize,
}

impl Measured<'_> {
    /// Writes keys `prefix`0.. with `variant`, `per_call` a call (SETEX: a pipeline of as many),
    /// each call sent in one write.
    fn write(&mut self, values: Values, variant: Variant, prefix: &str, n: usize, per_call: usize) {
        let value = values.value();
        let name = self.bench.stat(Setup::plain(self.server), variant);
        for start in (0..n).step_by(per_call) {
            let mut pipe = redis::pipe();
            let keys = (start..n.min(start + per_call)).map(|i| key(values, prefix, i));
            if variant == Variant::Setex {
                for k in keys {
                    pipe.cmd("SETEX").arg(k).arg(TTL).arg(&value);
                }
            } else {
                let cmd = match variant {
                    Variant::Mset => pipe.cmd("MSET"),
                    Variant::Builtin => pipe.cmd("MSETEX").arg(per_call),
                    _ => pipe.cmd(&name).arg(TTL),
                };
                for k in keys {
                    cmd.arg(k).arg(&value);
                }
                if variant == Variant::Builtin {
                    cmd.arg("EX").arg(TTL);
                }
            }
            let written = pipe.query::<()>(&mut self.running.con);
            written.unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }

    /// Runs callgrind_control (-z: zero the counters, -d: dump them).
    fn control(&self, flag: &str) {
        let pid = std::fs::read_to_string(self.dir.join("callgrind.out.pid")).expect("pid");
        let mut command = Command::new("callgrind_control");
        let done = command.args([flag, pid.trim()]).output();
        let done = done.is_ok_and(|out| out.status.success());
        assert!(done, "callgrind_control {flag} {pid}");
    }

    /// Instructions per key of `variant` writing `row.batch` keys a call, in steady state: keys
    /// it wrote twice before (overwrite: a first rewrite moves a value SET embedded out of its
    /// key), or new keys on a server that has just written as many (fresh).
    fn measure(&mut self, row: Row, variant: Variant) {
        let (values, per_call) = (row.values, row.batch);
        let keys = per_call * if per_call == BIG_CALL { 1 } else { CALLS };
        // Keys when the phase starts: no hash table of any server resizes during it (Redis and
        // Valkey before 8.1 grow at powers of two, Valkey 8.1+ at 7 times one: 7,168, 8,192 |
        // 14,336, 16,384 | 28,672), and a lookup of each (a rehash step) ends the last resize.
        let fillers = if per_call == BIG_CALL { 17_000 } else { 8_500 } - keys;
        flush_now(&mut self.running.con);
        let small = match values {
            Values::ShortKeys => values,
            _ => Values::Small,
        };
        self.write(small, Variant::Floor, "f:", fillers, 100);
        let overwrite = row.workload == Workload::Overwrite;
        let warm = if overwrite { "k:" } else { "w:" };
        for _ in 0..1 + overwrite as usize {
            self.write(values, variant, warm, keys, per_call);
        }
        for (prefix, count) in [("f:", fillers), (warm, keys)] {
            for start in (0..count).step_by(200) {
                let mut exists = redis::cmd("EXISTS");
                for i in start..count.min(start + 200) {
                    exists.arg(key(values, prefix, i));
                }
                exists.query::<i64>(&mut self.running.con).expect("EXISTS");
            }
        }
        self.control("-z");
        self.write(values, variant, "k:", keys, per_call);
        self.control("-d");
        self.dumps += 1;
        let dump = self.dir.join(format!("callgrind.out.{}", self.dumps));
        let text = std::fs::read_to_string(&dump).expect("read the callgrind dump");
        let total = text.lines().find_map(|line| line.strip_prefix("summary: "));
        let total = total.and_then(|n| n.trim().parse::<f64>().ok());
        let (instr, keys) = (&mut *self.instr, keys as f64);
        instr
            .counts
            .insert((row, variant), total.expect("summary: in the dump") / keys);
        if per_call == 100 && (variant == Variant::Module || FLOOR_PATHS.contains(&variant)) {
            instr.profiles.insert((row, variant), annotate(&dump, keys));
        }
        let _ = std::fs::remove_file(dump);
    }

    /// A phase of the row's first variant, measured and then measured again: each variant's
    /// phase then starts as the next one's does, after the FLUSHALL of a whole phase of this row.
    /// The allocator's caches hold what that FLUSHALL freed; the first variant had started with
    /// half as many values of the row's size cached, and paid the refills (1 KB values, new
    /// keys: 7% more instructions a key on Redis 7.2.6).
    fn prime(&mut self, row: Row, variants: &[Variant]) {
        if let Some(first) = variants.first() {
            self.measure(row, *first);
        }
    }

    /// OBJECT ENCODING and MEMORY USAGE of a key written by `variant` (None: SET EX), three
    /// times for overwrite.
    fn stored(&mut self, row: Row, variant: Option<Variant>) {
        flush_now(&mut self.running.con);
        let (k, value) = (key(row.values, "k:", 0), row.values.value());
        for _ in 0..1 + 2 * (row.workload == Workload::Overwrite) as usize {
            match variant {
                Some(variant) => self.write(row.values, variant, "k:", 1, 1),
                None => q(&mut self.running.con, &["SET", &k, &value, "EX", TTL]),
            }
        }
        let con = &mut self.running.con;
        let encoding: String = q(con, &["OBJECT", "ENCODING", &k]);
        let memory: i64 = q(con, &["MEMORY", "USAGE", &k]);
        let stored = format!("{encoding} {memory}");
        self.instr.stored.insert((row, variant), stored);
    }
}

/// Every measurement on one server, started under callgrind (`dir`: from [`under_callgrind`]).
pub fn measure_server(
    bench: &Bench,
    instr: &mut Instr,
    p: &mut Progress,
    server: usize,
    dir: &TempDir,
) {
    // serverCron returns at once: no timer work changes the state a phase starts from.
    let start = || {
        let mut running = bench.start(Setup::plain(server));
        q::<(), _>(&mut running.con, &["DEBUG", "PAUSE-CRON", "1"]);
        running
    };
    let (running, dir) = (start(), dir.path().to_owned());
    let mut m = Measured {
        bench,
        instr,
        server,
        running,
        dir,
        dumps: 0,
    };
    let target = &bench.servers[server];
    let mut measure = |m: &mut Measured, row: Row, variant| {
        let label = bench.variant_label(row.setup, variant);
        let (name, r, w) = (target.describe(), row.values.regime(), row.workload.label());
        p.report(&format!("{name}, {r}, {w} x{}, {label}", row.batch));
        m.measure(row, variant);
        p.done += 1;
    };
    for values in REGIMES {
        for row in Setup::plain(server).rows(values) {
            for variant in STORED {
                m.stored(row, variant);
            }
            let variants = variants(target);
            m.prime(row, &variants);
            for variant in variants {
                measure(&mut m, row, variant);
            }
        }
    }
    // A new server for the 10,000-key call: the large allocations it meets depended on how the
    // reads of earlier calls had split (1% from one run to the next).
    (m.running, m.dumps) = (start(), 0);
    for mut row in Setup::plain(server).rows(Values::Small) {
        row.batch = BIG_CALL;
        let variants: Vec<Variant> = STORED.into_iter().flatten().collect();
        m.prime(row, &variants);
        for variant in variants {
            measure(&mut m, row, variant);
        }
    }
}

/// callgrind_annotate's functions of a dump, per key: own instructions and with callees.
fn annotate(dump: &Path, keys: f64) -> Profile {
    let lines = |inclusive: &str| -> BTreeMap<String, f64> {
        let mut command = Command::new("callgrind_annotate");
        command
            .args([&format!("--inclusive={inclusive}"), "--threshold=100"])
            .arg(dump);
        let out = command.output().expect("run callgrind_annotate");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|line| {
                let (count, rest) = line.trim().split_once(' ')?;
                let count: f64 = count.replace(',', "").parse().ok()?;
                let (_, name) = rest.split_once(")  ")?.1.split_once(':')?;
                let (function, object) = name.rsplit_once(" [")?;
                let object = object.trim_end_matches(']').rsplit('/').next()?;
                Some((format!("{function} ({object})"), count / keys))
            })
            .collect()
    };
    // Functions on the stack when the counters were zeroed get the whole phase as their own.
    let (own, inclusive) = (lines("no"), lines("yes"));
    let total = inclusive.values().copied().fold(0.0, f64::max);
    let own = |f: &String| own.get(f).copied().filter(|own| *own < 0.99 * total);
    let row = |(f, incl): (&String, &f64)| (f.clone(), own(f).unwrap_or(0.0), *incl);
    inclusive.iter().map(row).collect()
}
