//! `--instr` (`make bench-instr`, `make bench-gate`): instructions per key of the whole server
//! process under valgrind's callgrind, in steady state, on every server, regime and variant;
//! what each floor path leaves in the key, against SET; and the module's profile per key.

use crate::plan::*;
use crate::run::{flush_now, Bench, Progress, Running};
use msetex_harness::{q, Connection, Target, TempDir};
use std::collections::BTreeMap;
use std::process::Command;

/// Calls (or pipelines of as many SETEX) of a measured phase, 100 keys each; the 10,000-key call.
pub const CALLS: usize = 20;
pub const BIG_CALL: usize = 10_000;
/// Keys when a measured phase starts (fillers, then the variant's own): no hash table of any
/// server resizes during the phase (Redis and Valkey before 8.1 grow at powers of two, Valkey 8.1+
/// at 7 times one: 7,168, 8,192 | 14,336, 16,384 | 28,672), and [`settle`] ends the last resize.
const KEYS_BEFORE: [(usize, usize); 2] = [(100, 8_500), (BIG_CALL, 17_000)];
/// jemalloc: no purging on a clock, no cache GC, and thread caches larger than a phase's swing, so
/// that no phase pays refills and flushes whose number depends on the cache's history (they
/// made the same phase cost 2% more or less from one run to the next).
pub const MALLOC_CONF: &str =
    "dirty_decay_ms:-1,muzzy_decay_ms:-1,tcache_gc_incr_bytes:4294967296,\
                           tcache_nslots_small_min:4096,tcache_nslots_small_max:4096,\
                           tcache_nslots_large:256";

/// The variants measured on `server`; the floor of a regime is one of [`FLOOR_PATHS`].
pub fn variants(server: &Target) -> Vec<Variant> {
    let mut list = vec![Variant::Module, Variant::Floor, Variant::FloorEvents];
    list.extend([Variant::FloorMset, Variant::Mset, Variant::Setex]);
    if server.has_builtin_msetex() {
        list.push(Variant::Builtin);
    }
    list
}
pub const FLOOR_PATHS: [Variant; 2] = [Variant::FloorEvents, Variant::FloorMset];

/// (server, keys per call, regime, workload, variant).
pub type Cell = (usize, usize, Regime, Workload, Variant);
/// callgrind_annotate's functions of a dump: (function (object), self, inclusive) per key.
pub type Profile = Vec<(String, f64, f64)>;

/// What the instruction bench measured.
#[derive(Default)]
pub struct Instr {
    /// Instructions per key.
    pub counts: BTreeMap<Cell, f64>,
    /// (server, regime, workload, variant or SET EX) -> OBJECT ENCODING and MEMORY USAGE of a
    /// key written so (overwrite: the third write).
    pub stored: BTreeMap<(usize, Regime, Workload, Option<Variant>), String>,
    /// (server, regime, workload, variant) -> (function, self, inclusive) per key.
    pub profiles: BTreeMap<(usize, Regime, Workload, Variant), Profile>,
}

impl Instr {
    pub fn count(&self, cell: Cell) -> f64 {
        self.counts.get(&cell).copied().unwrap_or(f64::NAN)
    }

    /// Whether `variant` leaves keys as SET EX does in this regime and workload.
    pub fn fair(
        &self,
        server: usize,
        regime: Regime,
        workload: Workload,
        variant: Variant,
    ) -> bool {
        let stored = |v| self.stored.get(&(server, regime, workload, v));
        stored(Some(variant)).is_some_and(|s| Some(s) == stored(None))
    }

    /// A regime's floor: the cheaper of the floor paths that leave keys as SET EX does.
    pub fn floor(&self, (server, batch, regime, workload, _): Cell) -> Option<Variant> {
        FLOOR_PATHS
            .into_iter()
            .filter(|v| self.fair(server, regime, workload, *v))
            .min_by(|a, b| {
                let count = |v| self.count((server, batch, regime, workload, v));
                count(*a).total_cmp(&count(*b))
            })
    }

    /// The cell's variant over `den` (None: the regime's floor).
    pub fn ratio(&self, cell: Cell, den: Option<Variant>) -> f64 {
        let (server, batch, regime, workload, _) = cell;
        match den.or_else(|| self.floor(cell)) {
            Some(den) => self.count(cell) / self.count((server, batch, regime, workload, den)),
            None => f64::NAN,
        }
    }
}

/// `server` through a script that execs it under callgrind (the same process), counting every
/// instruction but those of `serverCron` (timer work); with its directory (dumps, pid).
pub fn under_callgrind(server: &Target) -> (Target, TempDir) {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new("instr");
    let (script, out) = (dir.path().join("server"), dir.path().join("callgrind.out"));
    let text = format!(
        "#!/bin/sh\necho $$ > {out}.pid\nexport MALLOC_CONF={MALLOC_CONF} JE_MALLOC_CONF=\
         {MALLOC_CONF}\nexec setarch -R valgrind --tool=callgrind --callgrind-out-file={out} \
         --dump-line=no --toggle-collect=serverCron --collect-atstart=yes --log-file={out}.log \
         {} \"$@\"\n",
        server.binary,
        out = out.display()
    );
    std::fs::write(&script, text).expect("write the callgrind script");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let binary = script.display().to_string();
    (
        Target {
            binary,
            ..server.clone()
        },
        dir,
    )
}

/// The keys of a regime: `k:N` or `k:` and 12 digits, with another prefix.
fn key(regime: Regime, prefix: &str, i: usize) -> String {
    match regime.keys {
        Keys::Short => format!("{prefix}{i}"),
        Keys::Long => format!("{prefix}{i:012}"),
    }
}

/// A server under callgrind and its connection.
struct Measured<'b> {
    bench: &'b Bench,
    instr: &'b mut Instr,
    server: usize,
    running: Running,
    dir: std::path::PathBuf,
    dumps: usize,
}

impl Measured<'_> {
    fn con(&mut self) -> &mut Connection {
        &mut self.running.con
    }

    /// Writes keys `prefix`0.. with `variant`, `per_call` a call (SETEX: a pipeline of as many),
    /// each call sent in one write; `value` (default: the regime's).
    fn write(
        &mut self,
        regime: Regime,
        variant: Variant,
        prefix: &str,
        count: usize,
        per_call: usize,
    ) {
        let value = regime.values.value();
        let name = self.bench.stat(Setup::plain(self.server), variant);
        for start in (0..count).step_by(per_call) {
            let mut pipe = redis::pipe();
            let keys = (start..count.min(start + per_call)).map(|i| key(regime, prefix, i));
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
            pipe.query::<()>(self.con())
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }

    /// Runs callgrind_control (-z: zero the counters, -d: dump them).
    fn control(&self, flag: &str) {
        let pid = std::fs::read_to_string(self.dir.join("callgrind.out.pid")).expect("pid");
        let done = Command::new("callgrind_control")
            .args([flag, pid.trim()])
            .output()
            .is_ok_and(|out| out.status.success());
        assert!(
            done,
            "callgrind_control {flag} {pid} failed (is valgrind installed?)"
        );
    }

    /// Instructions per key of `variant` writing `calls` calls of `per_call` keys, in steady
    /// state: on keys it wrote twice before (overwrite; the first rewrite of a value SET embeds
    /// moves it out), or new keys on a server that has just written as many (fresh).
    fn measure(&mut self, regime: Regime, workload: Workload, variant: Variant, per_call: usize) {
        let calls = if per_call == BIG_CALL { 1 } else { CALLS };
        let keys = per_call * calls;
        let before = KEYS_BEFORE
            .iter()
            .find(|(batch, _)| *batch == per_call)
            .unwrap()
            .1;
        flush_now(self.con());
        let fillers = Regime {
            values: Values::Small,
            ..regime
        };
        self.write(fillers, Variant::Floor, "f:", before - keys, 100);
        let warm = match workload {
            Workload::Overwrite => "k:",
            Workload::Fresh => "w:",
        };
        for _ in 0..1 + (workload == Workload::Overwrite) as usize {
            self.write(regime, variant, warm, keys, per_call);
        }
        self.settle(regime, &[("f:", before - keys), (warm, keys)]);
        self.control("-z");
        self.write(regime, variant, "k:", keys, per_call);
        self.control("-d");
        self.dumps += 1;
        let dump = self.dir.join(format!("callgrind.out.{}", self.dumps));
        let text = std::fs::read_to_string(&dump).expect("read the callgrind dump");
        let total: f64 = text
            .lines()
            .find_map(|line| line.strip_prefix("summary: "))
            .and_then(|n| n.trim().parse().ok())
            .expect("summary: in the callgrind dump");
        let cell = (self.server, per_call, regime, workload, variant);
        let instr = &mut *self.instr;
        instr.counts.insert(cell, total / keys as f64);
        if per_call == 100
            && matches!(
                variant,
                Variant::Module | Variant::FloorEvents | Variant::FloorMset
            )
        {
            let profile = annotate(&dump, keys as f64);
            instr
                .profiles
                .insert((self.server, regime, workload, variant), profile);
        }
        let _ = std::fs::remove_file(dump);
    }

    /// Looks every key up once, in calls of 200: the incremental rehash of the last resize (a
    /// step per lookup) is over before a phase, whatever the server did meanwhile.
    fn settle(&mut self, regime: Regime, sets: &[(&str, usize)]) {
        for &(prefix, count) in sets {
            for start in (0..count).step_by(200) {
                let mut cmd = redis::cmd("EXISTS");
                for i in start..count.min(start + 200) {
                    cmd.arg(key(regime, prefix, i));
                }
                cmd.query::<i64>(self.con()).expect("EXISTS");
            }
        }
    }

    /// OBJECT ENCODING and MEMORY USAGE of a key written by `variant` (None: SET EX), three
    /// times for overwrite.
    fn stored(&mut self, regime: Regime, workload: Workload, variant: Option<Variant>) {
        flush_now(self.con());
        let k = key(regime, "k:", 0);
        for _ in 0..1 + 2 * (workload == Workload::Overwrite) as usize {
            match variant {
                Some(variant) => self.write(regime, variant, "k:", 1, 1),
                None => q(self.con(), &["SET", &k, &regime.values.value(), "EX", TTL]),
            }
        }
        let encoding: String = q(self.con(), &["OBJECT", "ENCODING", &k]);
        let memory: i64 = q(self.con(), &["MEMORY", "USAGE", &k]);
        let stored = &mut self.instr.stored;
        stored.insert(
            (self.server, regime, workload, variant),
            format!("{encoding} {memory}"),
        );
    }
}

/// Every measurement on one server, started under callgrind (`dir`: its script's).
pub fn measure_server(
    bench: &Bench,
    instr: &mut Instr,
    progress: &mut Progress,
    server: usize,
    dir: &TempDir,
) {
    let running = bench.start(Setup::plain(server));
    let dir = dir.path().to_owned();
    let mut m = Measured {
        bench,
        instr,
        server,
        running,
        dir,
        dumps: 0,
    };
    // serverCron returns at once: no timer work changes the state a phase starts from.
    q::<(), _>(m.con(), &["DEBUG", "PAUSE-CRON", "1"]);
    let target = &bench.servers[server];
    for regime in REGIMES {
        for workload in Workload::BOTH {
            for variant in [None, Some(Variant::Module)]
                .into_iter()
                .chain(FLOOR_PATHS.map(Some))
            {
                m.stored(regime, workload, variant);
            }
            for variant in variants(target) {
                report(progress, bench, target, (regime, workload, variant, 100));
                m.measure(regime, workload, variant, 100);
            }
        }
    }
    let long = REGIMES[1];
    for workload in Workload::BOTH {
        for variant in [Variant::Module].into_iter().chain(FLOOR_PATHS) {
            report(progress, bench, target, (long, workload, variant, BIG_CALL));
            m.measure(long, workload, variant, BIG_CALL);
        }
    }
}

fn report(
    progress: &mut Progress,
    bench: &Bench,
    server: &Target,
    (regime, workload, variant, batch): (Regime, Workload, Variant, usize),
) {
    let label = bench.variant_label(Setup::plain(0), variant);
    let (server, regime, workload) = (server.describe(), regime.label(), workload.label());
    progress.report(&format!("{server}, {regime}, {workload} x{batch}, {label}"));
    progress.done += 1;
}

/// The phases `measure_server` runs on `servers`.
pub fn phase_count(servers: &[Target]) -> usize {
    let per_regime: usize = servers.iter().map(|s| variants(s).len()).sum();
    per_regime * REGIMES.len() * 2 + servers.len() * 6
}

/// callgrind_annotate's functions of a dump, self and inclusive, per key: (function, self, incl).
fn annotate(dump: &std::path::Path, keys: f64) -> Profile {
    let lines = |inclusive: &str| -> BTreeMap<String, f64> {
        let out = Command::new("callgrind_annotate")
            .args([&format!("--inclusive={inclusive}"), "--threshold=99.9"])
            .arg(dump)
            .output()
            .expect("run callgrind_annotate");
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
    let (own, inclusive) = (lines("no"), lines("yes"));
    inclusive
        .into_iter()
        .map(|(function, incl)| {
            let own = own.get(&function).copied().unwrap_or(0.0);
            (function, own, incl)
        })
        .collect()
}
