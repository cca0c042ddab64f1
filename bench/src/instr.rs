//! `--instr` (`make bench-instr`, `make bench-gate`): instructions per key of the whole server
//! process under valgrind's callgrind, in steady state, on every server, setup (`plan::
//! instr_setups`: no persistence, the AOF, one replica, cluster mode) and variant; a replica's
//! and an AOF load's instructions applying what each variant propagated; what each variant leaves
//! in a key, against SET EX; the call of 100,000 pairs in and out of cluster mode; where MSETEX
//! reads and declares keys in cluster mode, from the dumps. Verdicts, tables, README: `report`.

pub mod report;

use crate::plan::*;
use crate::run::{flush_now, Bench, Progress, Running};
use msetex_harness::{eventually, info_field, q, wait_for_replicas, Connection, Replicate};
use msetex_harness::{Target, TempDir};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use Variant::{FloorEvents, FloorMset, Module};

/// Calls of a measured phase (or pipelines of 100 SETEX), 100 keys each; keys of an AOF loaded.
pub const CALLS: usize = 20;
const RELOADED: usize = 10_000;
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
pub const FLOOR_PATHS: [Variant; 2] = [FloorEvents, FloorMset];
/// Whose keys are checked against SET EX's (None); also the variants of the 10,000-key call.
const STORED: [Option<Variant>; 4] = [None, Some(Module), Some(FloorEvents), Some(FloorMset)];

/// The variants measured on `server` without persistence (in other setups: `Measured::setup`).
pub fn variants(server: &Target) -> Vec<Variant> {
    let mut list = vec![Variant::Module, Variant::Floor, Variant::FloorEvents];
    list.extend([Variant::FloorMset, Variant::Mset, Variant::Setex]);
    list.extend(server.has_builtin_msetex().then_some(Variant::Builtin));
    list
}

/// What the instruction bench measured, by row (its setup is the regime) and variant.
#[derive(Default)]
pub struct Instr {
    /// Instructions per key.
    pub counts: BTreeMap<(Row, Variant), f64>,
    /// Instructions per key applying what the variant propagated: the replica's (a replica row)
    /// or a server's loading the AOF it wrote (an AOF row, new keys).
    pub applied: BTreeMap<(Row, Variant), f64>,
    /// OBJECT ENCODING and MEMORY USAGE of a key the variant wrote (None: SET EX; overwrite: the
    /// third write).
    pub stored: BTreeMap<(Row, Option<Variant>), String>,
    /// In cluster mode, per key of MSETEX: reading and declaring the keys, counted once: the
    /// command filter, the server's key extraction, `msetex::keys` elsewhere; and of the filter's,
    /// the server's filter API.
    pub keys: BTreeMap<Row, [f64; 4]>,
    /// INFO msetex's `msetex_keys` in cluster mode, by server.
    pub reading: BTreeMap<usize, String>,
}

impl Instr {
    pub fn count(&self, row: Row, variant: Variant) -> f64 {
        *self.counts.get(&(row, variant)).unwrap_or(&f64::NAN)
    }

    /// What a key written by `variant` (None: SET EX) holds in the row's regime (100 keys a call).
    pub fn stored(&self, row: Row, variant: Option<Variant>) -> Option<&str> {
        self.stored
            .get(&(row.batch(100), variant))
            .map(String::as_str)
    }

    /// Whether `variant` leaves, in the row's regime, the OBJECT ENCODING MSETEX leaves.
    pub fn fits(&self, row: Row, variant: Variant) -> bool {
        let encoding = |v| self.stored(row, Some(v)).and_then(|s| s.split(' ').next());
        encoding(Variant::Module).is_some() && encoding(variant) == encoding(Variant::Module)
    }

    /// A row's floor: the cheaper of the floor paths measured that leave each key with the
    /// encoding MSETEX leaves (one rule for the module and its floors; how close both come to
    /// SET EX's is checked apart, in `report`).
    pub fn floor(&self, row: Row) -> Option<Variant> {
        let fair = |v: &Variant| self.fits(row, *v) && self.count(row, *v).is_finite();
        let cheaper =
            |a: &Variant, b: &Variant| self.count(row, *a).total_cmp(&self.count(row, *b));
        FLOOR_PATHS.into_iter().filter(fair).min_by(cheaper)
    }

    /// MSETEX's instructions per key over `den`'s (None: the row's floor's).
    pub fn ratio(&self, row: Row, den: Option<Variant>) -> f64 {
        let module = self.count(row, Variant::Module);
        den.or_else(|| self.floor(row))
            .map_or(f64::NAN, |den| module / self.count(row, den))
    }
}

/// `server` through scripts that exec it under callgrind (the same process id, dumps named by
/// it): `server` counts every instruction but those of `serverCron`, `loader` only those of
/// loading the AOF; with their directory.
pub fn under_callgrind(server: &Target) -> ([Target; 2], TempDir) {
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
    // The module's entry splits by caller: a key request (getkeys) apart from a call.
    let script = |collect: &str| {
        format!(
            "#!/bin/sh\nexport MALLOC_CONF={MALLOC_CONF} JE_MALLOC_CONF={MALLOC_CONF} \
             LD_PRELOAD={so} FIXED_URANDOM={urandom}\nexec setarch -R valgrind \
             --tool=callgrind --callgrind-out-file={out}.%p --dump-line=no {collect} \
             --separate-callers1=msetex::ffi::callbacks::command_entry --log-file={out}.log \
             {} \"$@\"\n",
            server.binary
        )
    };
    // The server runs uninstrumented (about 4 times slower than natively, not 50) but while a
    // phase is measured; the loader instrumented, collecting only while it loads.
    let server_role = "--toggle-collect=serverCron --collect-atstart=yes --instr-atstart=no";
    let loader_role = "--toggle-collect=loadAppendOnlyFile* --collect-atstart=no";
    let roles = [("server", server_role), ("loader", loader_role)];
    let wrapped = roles.map(|(name, collect)| {
        std::fs::write(at(name), script(collect)).expect("write a callgrind script");
        let executable = std::fs::Permissions::from_mode(0o755);
        std::fs::set_permissions(at(name), executable).expect("chmod");
        Target {
            binary: at(name),
            ..server.clone()
        }
    });
    (wrapped, dir)
}

/// `callgrind_control flag` of the server on `con` (`--instr=on` and `-z`: instrument and zero the
/// counters; `-d` and `-i off`: dump them, and instrument no more); after a dump, the dump's
/// text (removed).
fn control(dir: &Path, con: &mut Connection, flag: &str) -> String {
    let pid = info_field(con, "server", "process_id").expect("process_id");
    let steps: [&[&str]; 2] = match flag {
        "-z" => [&["--instr=on"], &["-z"]],
        _ => [&["-d"], &["--instr=off"]],
    };
    // vgdb, which callgrind_control runs, can hang (once in some 3,000 calls): fail, not wait.
    for step in steps {
        let command = Command::new("timeout")
            .args(["120", "callgrind_control"])
            .args(step)
            .arg(&pid)
            .output();
        assert!(
            command.is_ok_and(|out| out.status.success()),
            "callgrind_control {step:?} {pid}"
        );
    }
    if flag != "-d" {
        return String::new();
    }
    let prefix = format!("callgrind.out.{pid}.");
    let entries = std::fs::read_dir(dir).expect("the callgrind directory");
    let dump = entries
        .filter_map(Result::ok)
        .find(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .expect("the callgrind dump")
        .path();
    let text = std::fs::read_to_string(&dump).expect("read the callgrind dump");
    let _ = std::fs::remove_file(dump);
    text
}

/// A dump's total instructions.
fn total(dump: &str) -> f64 {
    let total = dump.lines().find_map(|line| line.strip_prefix("summary: "));
    total
        .and_then(|n| n.trim().parse().ok())
        .expect("summary: in the dump")
}

/// The keys of a row: `k:N`, or `k:` and 12 digits; of one hash tag in cluster mode and in the
/// call of 100,000 pairs (in and out of cluster mode alike).
fn key(row: Row, prefix: &str, i: usize) -> String {
    let tag = match row.setup.persistence.cluster() || row.batch == HUGE_CALL {
        true => "{t}",
        false => "",
    };
    match row.values {
        Values::ShortKeys => format!("{tag}{prefix}{i}"),
        _ => format!("{tag}{prefix}{i:012}"),
    }
}

/// Writes keys `prefix`0.. of the row's regime with `variant`, `per_call` a call (SETEX: a
/// pipeline of as many), each call sent in one write.
fn write(bench: &Bench, con: &mut Connection, row: Row, variant: Variant, prefix: &str, n: usize) {
    let value = row.values.value();
    for start in (0..n).step_by(row.batch) {
        let mut pipe = redis::pipe();
        let keys: Vec<String> = (start..n.min(start + row.batch))
            .map(|i| key(row, prefix, i))
            .collect();
        // Pipelined SETEX: one command per key.
        let calls: Vec<&[String]> = match variant {
            Variant::Setex => keys.chunks(1).collect(),
            _ => vec![&keys],
        };
        for keys in calls {
            let args = bench.command(row.setup, variant, keys, &value);
            pipe.add_command(redis::cmd(&args[0]).arg(&args[1..]).clone());
        }
        let written = pipe.query::<()>(con);
        written.unwrap_or_else(|e| panic!("{variant:?}: {e}"));
    }
}

/// A setup's servers under callgrind: what they measured goes to `instr`.
struct Measured<'b> {
    bench: &'b Bench,
    instr: &'b mut Instr,
    running: Running,
    /// The replica's connection, in a replica setup.
    replica: Option<Connection>,
    dir: PathBuf,
}

impl Measured<'_> {
    /// Starts `setup`: once the module says who listens as the setup should (a cron probe proves
    /// "nobody"), serverCron returns at once, so that no timer work changes a phase's start.
    fn start(bench: &Bench, setup: Setup) -> (Running, Option<Connection>) {
        let mut running = bench.start(setup);
        let listeners = match setup.persistence {
            // A fresh single-node cluster: no replica, no slot export, so nobody.
            Persistence::None | Persistence::Cluster => "none",
            Persistence::Aof | Persistence::ClusterAof => "aof",
            _ => "possible",
        };
        let field = "msetex_replication_listeners";
        let ok = eventually(Duration::from_secs(20), || {
            info_field(&mut running.con, "msetex", field).as_deref() == Some(listeners)
        });
        assert!(ok, "{field} is not {listeners}");
        // A replica's full sync forked the primary: its child reaped by serverCron, before that
        // stops (a zombie child stayed, and a callgrind_control of the primary once hung).
        let mut forked = || info_field(&mut running.con, "persistence", "rdb_bgsave_in_progress");
        assert!(eventually(Duration::from_secs(20), || forked().as_deref() == Some("0")));
        let mut replica = running.replica.as_ref().map(|replica| replica.client());
        for con in std::iter::once(&mut running.con).chain(replica.as_mut()) {
            q::<(), _>(con, &["DEBUG", "PAUSE-CRON", "1"]);
        }
        (running, replica)
    }

    /// Instructions per key of `variant` writing `row.batch` keys a call, in steady state: keys
    /// it wrote twice before (overwrite: a first rewrite moves a value SET embedded out of its
    /// key), or new keys on a server that has just written as many (fresh); with a replica, the
    /// replica's applying them.
    fn measure(&mut self, row: Row, variant: Variant, reading_keys: bool) {
        let per_call = row.batch;
        let keys = per_call * if per_call == 100 { CALLS } else { 1 };
        // Keys when the phase starts: no hash table of any server resizes during it (Redis and
        // Valkey before 8.1 grow at powers of two, Valkey 8.1+ at 7 times one: 7,168, 8,192 |
        // 14,336, 16,384 | 28,672), and a lookup of each (a rehash step) ends the last resize.
        let fillers = if per_call == BIG_CALL { 17_000 } else { 8_500 } - keys;
        let (bench, con) = (self.bench, &mut self.running.con);
        flush_now(con);
        let small = if row.values == Values::ShortKeys {
            row.values
        } else {
            Values::Small
        };
        let filler = row.setup.rows(small)[row.workload as usize];
        write(bench, con, filler, Variant::Floor, "f:", fillers);
        let overwrite = row.workload == Workload::Overwrite;
        let warm = if overwrite { "k:" } else { "w:" };
        for _ in 0..1 + overwrite as usize {
            write(bench, con, row, variant, warm, keys);
        }
        for (prefix, count) in [("f:", fillers), (warm, keys)] {
            for start in (0..count).step_by(200) {
                let mut exists = redis::cmd("EXISTS");
                for i in start..count.min(start + 200) {
                    exists.arg(key(row, prefix, i));
                }
                exists.query::<i64>(con).expect("EXISTS");
            }
        }
        if self.replica.is_some() {
            wait_for_replicas(con, 1);
        }
        for con in std::iter::once(&mut *con).chain(self.replica.as_mut()) {
            control(&self.dir, con, "-z");
        }
        write(bench, con, row, variant, "k:", keys);
        let dump = control(&self.dir, con, "-d");
        let (keys, count) = (keys as f64, total(&dump));
        self.instr.counts.insert((row, variant), count / keys);
        if let Some(replica) = self.replica.as_mut() {
            wait_for_replicas(con, 1);
            let applied = total(&control(&self.dir, replica, "-d")) / keys;
            self.instr.applied.insert((row, variant), applied);
        }
        if reading_keys {
            let parts = keys_read(&calls(&dump)).map(|n| n / keys);
            self.instr.keys.insert(row, parts);
        }
    }

    /// OBJECT ENCODING and MEMORY USAGE of a key written by `variant` (None: SET EX), three
    /// times for overwrite.
    fn stored(&mut self, row: Row, variant: Option<Variant>) {
        let con = &mut self.running.con;
        flush_now(con);
        let (k, value) = (key(row, "k:", 0), row.values.value());
        for _ in 0..1 + 2 * (row.workload == Workload::Overwrite) as usize {
            match variant {
                Some(v) => write(self.bench, con, row.batch(1), v, "k:", 1),
                None => q(con, &["SET", &k, &value, "EX", TTL]),
            }
        }
        let encoding: String = q(con, &["OBJECT", "ENCODING", &k]);
        let memory: i64 = q(con, &["MEMORY", "USAGE", &k]);
        let stored = format!("{encoding} {memory}");
        self.instr.stored.insert((row, variant), stored);
    }
}

/// About how many phases `measure_server` runs on `server` (for the progress line).
pub fn phases(server: &Target, gate: bool) -> usize {
    let n = variants(server).len();
    let per_row = |s: Setup| {
        if s.persistence == Persistence::None {
            n + 1
        } else {
            n - 2
        }
    };
    let setups = instr_setups(0, server, gate).into_iter();
    setups
        .map(|(s, values)| values.len() * 2 * per_row(s))
        .sum::<usize>()
        + 8
}

/// Every measurement on one server (`bench.servers[index]` and `loader`: from [`under_callgrind`],
/// `dir` theirs; `server` itself writes the AOFs the loader loads).
pub fn measure_server(
    bench: &Bench,
    instr: &mut Instr,
    p: &mut Progress,
    index: usize,
    (server, loader, dir): (&'static Target, &'static Target, &TempDir),
) {
    let gate = bench.options.gate;
    let mut measure = |m: &mut Measured, row: Row, variants: &[Variant]| {
        let describe = bench.describe_setup(row.setup);
        let (values, workload) = (row.values.regime(), row.workload.label());
        // A phase of the first variant first, measured again after: every variant's phase then
        // follows the FLUSHALL of a whole phase of this row (the first variant had half as many
        // values of the row's size cached, and paid the refills: 7% on Redis 7.2.6, 1 KB new).
        for (i, &variant) in variants.iter().enumerate() {
            let label = bench.variant_label(row.setup, variant);
            p.report(&format!(
                "{describe}, {values}, {workload} x{}, {label}",
                row.batch
            ));
            // In cluster mode (REPLICATE SET): where MSETEX reads and declares keys.
            let cluster = (row.setup.persistence, row.setup.replicate);
            let keys = cluster == (Persistence::Cluster, Replicate::Set);
            m.measure(row, variant, keys && i > 0 && variant == Variant::Module);
            p.done += 1;
        }
    };
    let (target, dir, plain) = (
        &bench.servers[index],
        dir.path().to_owned(),
        Setup::plain(index),
    );
    let mut runs: Vec<(Setup, Vec<Row>)> = Vec::new();
    for (setup, values) in instr_setups(index, target, gate) {
        runs.push((setup, values.iter().flat_map(|v| setup.rows(*v)).collect()));
    }
    // A new server for the 10,000-key call: the large allocations it meets depended on how the
    // reads of earlier calls had split (1% from one run to the next).
    runs.push((
        plain,
        plain
            .rows(Values::Small)
            .map(|row| row.batch(BIG_CALL))
            .into(),
    ));
    for (setup, rows) in runs {
        let (mut running, replica) = Measured::start(bench, setup);
        if setup.persistence == Persistence::Cluster {
            let reading = info_field(&mut running.con, "msetex", "msetex_keys");
            instr.reading.insert(index, reading.unwrap_or_default());
        }
        let instr = &mut *instr;
        let (dir, bench) = (dir.clone(), bench);
        let mut m = Measured {
            bench,
            instr,
            running,
            replica,
            dir,
        };
        for &row in &rows {
            let mut list = variants(target);
            if row.batch == BIG_CALL {
                list = STORED.into_iter().flatten().collect();
            } else {
                STORED
                    .into_iter()
                    .for_each(|variant| m.stored(row, variant));
            }
            if setup.persistence != Persistence::None {
                // Beside pipelined SETEX and the built-in, the floor paths of MSETEX's encoding.
                let floor = |v: &Variant| !FLOOR_PATHS.contains(v) || m.instr.fits(row, *v);
                list.retain(|v| !matches!(v, Variant::Floor | Variant::Mset) && floor(v));
            }
            list.insert(0, list[0]);
            measure(&mut m, row, &list);
        }
        let aof = setup.persistence == Persistence::Aof;
        for &row in rows.iter().filter(|r| aof && r.workload == Workload::Fresh) {
            reload(bench, m.instr, row, (server, loader, &m.dir));
        }
    }
    // Issue #48: the call of 100,000 pairs, on a new server each, in and out of cluster mode, as
    // configured by default and with the AOF and REPLICATE MSETEX in both (one command per call).
    let valkey91 = !gate && target.is_valkey() && target.version >= (9, 1, 0);
    for row in huge_rows(index).into_iter().filter(|_| valkey91) {
        p.report(&format!(
            "{}, 100,000 pairs",
            bench.describe_setup(row.setup)
        ));
        let (mut running, _) = Measured::start(bench, row.setup);
        let con = &mut running.con;
        control(&dir, con, "-z");
        write(bench, con, row, Variant::Module, "k:", HUGE_CALL);
        let per_key = total(&control(&dir, con, "-d")) / HUGE_CALL as f64;
        instr.counts.insert((row, Variant::Module), per_key);
    }
}

/// Instructions per key of loading (`loader`) the AOF into which `server`, not under callgrind,
/// wrote [`RELOADED`] new keys, 100 a call, with MSETEX, with pipelined SETEX and with the row's
/// floor, in the row's setup.
fn reload(bench: &Bench, instr: &mut Instr, row: Row, (server, loader, dir): Roles) {
    let floor = instr.floor(row);
    for variant in [Variant::Module, Variant::Setex].into_iter().chain(floor) {
        // The writer writes its AOF before it replies (everysec may postpone a write).
        let mut config = bench.config(row.setup);
        config.binary = Some(server);
        let mut writer = config.clone().line("appendfsync always").start();
        write(bench, &mut writer.client(), row, variant, "k:", RELOADED);
        config.binary = Some(loader);
        writer.set_config(config);
        writer.restart();
        let mut con = writer.client();
        let loaded: usize = q(&mut con, &["DBSIZE"]);
        assert_eq!(loaded, RELOADED, "keys loaded");
        let per_key = total(&control(dir, &mut con, "-d")) / RELOADED as f64;
        instr.applied.insert((row, variant), per_key);
    }
}

/// A server, its AOF loader under callgrind, the loader's directory.
type Roles<'a> = (&'static Target, &'static Target, &'a Path);

/// A callgrind dump's calls: (caller, callee, instructions with the callee's callees), each
/// function as `name (object)`.
fn calls(dump: &str) -> Vec<(String, String, f64)> {
    let mut calls = Vec::new();
    // Names compressed to `(id)` after their first use: objects, functions.
    let mut names: BTreeMap<(bool, String), String> = BTreeMap::new();
    let (mut ob, mut function, mut cob, mut cfn) = (String::new(), String::new(), None, None);
    let mut call = false;
    for line in dump.lines() {
        if let Some((field, value)) = line.split_once('=') {
            let object = matches!(field, "ob" | "cob");
            let name = match value.strip_prefix('(').and_then(|v| v.split_once(')')) {
                Some((id, rest)) => {
                    let id = (object, id.to_owned());
                    if !rest.trim().is_empty() {
                        names.insert(id.clone(), rest.trim().to_owned());
                    }
                    names.get(&id).cloned().unwrap_or_default()
                }
                None => value.to_owned(),
            };
            let file = || name.rsplit('/').next().unwrap_or_default().to_owned();
            match field {
                "ob" => ob = file(),
                "cob" => cob = Some(file()),
                "fn" => function = format!("{name} ({ob})"),
                "cfn" => cfn = Some(name),
                "calls" => call = true,
                _ => {}
            }
            continue;
        }
        // A call's cost line: the last figure, instructions with callees.
        let cost = line
            .split_whitespace()
            .last()
            .and_then(|n| n.parse::<f64>().ok());
        if let (Some(cost), true) = (cost, std::mem::take(&mut call)) {
            let object = cob.take().unwrap_or_else(|| ob.clone());
            let callee = format!("{} ({object})", cfn.take().unwrap_or_default());
            calls.push((function.clone(), callee, cost));
        }
    }
    calls
}

/// Reading and declaring keys, with callees, each instruction counted once: [the command filter,
/// the server's key extraction, `msetex::keys` elsewhere, and of the filter's the server's filter
/// API it calls (`CommandFilterArg*`, the retained strings)]. A call into one of the first three is
/// counted by the share of its caller that runs outside them (0 for a call from one of them, or
/// from a function only they call; the module's entry splits by caller).
fn keys_read(calls: &[(String, String, f64)]) -> [f64; 4] {
    let name = |function: &str| function.split(" (").next().unwrap_or_default().to_owned();
    let part = |function: &str| {
        let name = name(function);
        match name.as_str() {
            _ if name.starts_with("msetex::ffi::callbacks::command_filter") => Some(0),
            _ if name.starts_with("getKeys") || name == "clusterSlotByCommand" => Some(1),
            _ if name.trim_start_matches('<').starts_with("msetex::keys::") => Some(2),
            _ => None,
        }
    };
    // The filter API: what any command filter that moves a call's arguments pays the server.
    let api = |f: &str| {
        let name = name(f);
        let name = name.trim_start_matches("VM_").trim_start_matches("RM_");
        name.starts_with("CommandFilterArg") || name == "RetainString"
    };
    let (share, in_filter) = (
        shares(calls, |f| part(f).is_some()),
        shares(calls, |f| part(f) == Some(0)),
    );
    let mut parts = [0.0; 4];
    for (caller, callee, cost) in calls {
        if let (Some(p), None) = (part(callee), part(caller)) {
            parts[p] += cost * (1.0 - share(caller));
        }
        parts[3] += if api(callee) {
            cost * in_filter(caller)
        } else {
            0.0
        };
    }
    parts
}

/// The share of each function's instructions that runs inside the functions `within` (all of
/// theirs) or their callees, from the dump's calls.
fn shares<'a>(
    calls: &'a [(String, String, f64)],
    within: impl Fn(&str) -> bool + 'a,
) -> impl Fn(&str) -> f64 + 'a {
    let share = move |inside: &BTreeMap<&str, f64>, f: &str| match within(f) {
        true => 1.0,
        false => inside.get(f).copied().unwrap_or(0.0),
    };
    let mut inside: BTreeMap<&str, f64> = BTreeMap::new();
    for _ in 0..64 {
        let mut into: BTreeMap<&str, (f64, f64)> = BTreeMap::new();
        for (caller, callee, cost) in calls {
            let sums = into.entry(callee).or_default();
            *sums = (sums.0 + cost * share(&inside, caller), sums.1 + cost);
        }
        inside = into
            .into_iter()
            .map(|(f, (i, all))| (f, i / all.max(1.0)))
            .collect();
    }
    move |f| share(&inside, f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dump_read_and_its_keys_counted_once() {
        // main calls the filter (40, of which msetex::keys 10) and the command (60), whose
        // getKeysFromCommand (20) calls `shared` (5), which `call` calls too (7); `shared` calls
        // msetex::keys (10).
        let text = "summary: 100\nob=(1) /bin/server\nfn=(1) main\n0 0\n\
            cfn=(2) msetex::ffi::callbacks::command_filter\ncalls=1 0\n0 40\n\
            cfn=(3) call\ncalls=1 0\n0 60\nfn=(2)\n0 30\ncob=(2) /lib/m.so\n\
            cfn=(4) msetex::keys::rewrite\ncalls=1 0\n0 10\nfn=(3)\n0 33\n\
            cfn=(5) getKeysFromCommand\ncalls=1 0\n0 20\ncfn=(6) shared\ncalls=1 0\n0 7\n\
            fn=(5)\n0 15\ncfn=(6)\ncalls=1 0\n0 5\nfn=(6)\n0 2\ncfn=(4)\ncalls=2 0\n0 10\n";
        let calls = calls(text);
        let last = (
            "shared (server)".into(),
            "msetex::keys::rewrite (server)".into(),
            10.0,
        );
        assert_eq!((calls.len(), calls.last()), (7, Some(&last)));
        assert_eq!(calls[2].1, "msetex::keys::rewrite (m.so)");
        // `shared` runs 5 of its 12 under getKeysFromCommand: 7/12 of its 10 are counted.
        let [filter, server, elsewhere, api] = keys_read(&calls);
        assert_eq!(api, 0.0);
        assert_eq!((filter, server), (40.0, 20.0));
        assert!((elsewhere - 70.0 / 12.0).abs() < 1e-9, "{elsewhere}");
    }
}
