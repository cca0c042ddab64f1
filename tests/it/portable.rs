//! The portable libraries (`make portable`: one per architecture, built with
//! cargo-zigbuild against glibc 2.17) and the arm64 server they are tested
//! in. `make test` builds them first (`make cross`: scripts/portable.sh and
//! scripts/arm64-server.sh with `--soft`); where the toolchain, qemu or the
//! arm64 package could not be installed, the reason is in target/cross/*.skip
//! and the tests that need it skip with it.

use msetex_harness::*;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The architectures of `make portable` (the Makefile's ARCH).
pub const ARCHES: [&str; 2] = ["x86_64", "aarch64"];
/// The newest glibc a portable library may need (the Makefile's GLIBC).
const GLIBC_FLOOR: (u32, u32) = (2, 17);

fn cross_dir() -> PathBuf {
    repo_root().join("target/cross")
}

/// What `make cross` left for `name`: Ok(path), or Err(why not).
fn cross_output(name: &str, path: PathBuf) -> Result<PathBuf, String> {
    let skip = cross_dir().join(format!("{name}.skip"));
    if let Ok(reason) = std::fs::read_to_string(&skip) {
        return Err(reason.trim().to_owned());
    }
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!(
            "{} is not built: run make test (or make portable)",
            path.display()
        ))
    }
}

/// The portable library of `arch`, or why it is not there.
pub fn portable_library(arch: &str) -> Result<PathBuf, String> {
    cross_output(
        arch,
        repo_root().join(format!(
            "target/{arch}-unknown-linux-gnu/release/libmsetex.so"
        )),
    )
}

/// The architectures whose portable library is built, and the reasons of
/// those that are not.
pub fn built_arches() -> (Vec<&'static str>, Vec<String>) {
    let mut built = Vec::new();
    let mut missing = Vec::new();
    for arch in ARCHES {
        match portable_library(arch) {
            Ok(_) => built.push(arch),
            Err(reason) => missing.push(format!("{arch}: {reason}")),
        }
    }
    (built, missing)
}

/// Debian's arm64 redis-server under qemu (scripts/arm64-server.sh), or why
/// it is not there.
pub fn arm64_server() -> Result<&'static Target, String> {
    let wrapper = cross_output("arm64-server", cross_dir().join("arm64-redis-server"))?;
    let server = targets_at(&[wrapper.display().to_string()])
        .into_iter()
        .next()
        .ok_or_else(|| format!("{} does not run", wrapper.display()))?;
    Ok(Box::leak(Box::new(server)))
}

/// How `uname -m` names the architecture of an ELF file (readelf -h).
pub fn elf_arch(file: &Path) -> String {
    let header = tool("readelf", &["-h", &file.to_string_lossy()]);
    let machine = header
        .lines()
        .find_map(|line| line.trim().strip_prefix("Machine:"))
        .unwrap_or_else(|| panic!("no Machine in readelf -h {}", file.display()))
        .trim();
    match machine {
        "Advanced Micro Devices X86-64" => "x86_64",
        "AArch64" => "aarch64",
        other => panic!("{}: a library for {other}", file.display()),
    }
    .to_owned()
}

/// The newest `GLIBC_x.y` symbol version a library needs (`objdump -T`):
/// the oldest glibc it runs on.
pub fn newest_glibc(library: &Path) -> String {
    glibc_versions(library)
        .into_iter()
        .max()
        .map(|(_, version)| version)
        .unwrap_or_else(|| panic!("no GLIBC_ symbol version in {}", library.display()))
}

fn glibc_versions(library: &Path) -> Vec<(Vec<u32>, String)> {
    let symbols = tool("objdump", &["-T", &library.to_string_lossy()]);
    symbols
        .split(|c: char| c.is_whitespace() || c == '(' || c == ')')
        .filter_map(|word| word.strip_prefix("GLIBC_"))
        .filter_map(|version| {
            let parts: Option<Vec<u32>> = version.split('.').map(|p| p.parse().ok()).collect();
            parts.map(|parts| (parts, version.to_owned()))
        })
        .collect()
}

/// The strip that reads `arch`'s files (as scripts/release.sh picks it).
pub fn strip_command(arch: &str) -> String {
    if arch == std::env::consts::ARCH {
        "strip".to_owned()
    } else {
        format!("{arch}-linux-gnu-strip")
    }
}

/// Runs a tool to completion and returns its stdout (it must succeed).
pub fn tool(program: &str, args: &[&str]) -> String {
    let output = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("run {program}: {e}"));
    assert!(
        output.status.success(),
        "{program} {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Loads `library` into `server` (its own module arguments, so the command
/// is reached by the name that server gives it), then checks what a user of
/// that architecture would: MSETEX with a TTL, the TTL read back, MSETEX NX
/// refused on an existing key and accepted on new ones, the server's log
/// line for the load and its MODULE LIST. Returns the server's `INFO server` `os` line.
pub fn serves_msetex(server: &'static Target, library: &Path) -> String {
    let args = server.default_module_args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let running = ServerConfig::default()
        .binary(server)
        .module_file(library)
        .module_args(&args)
        .start();
    let mut con = running.client();
    let what = format!("{} with {}", server.describe(), library.display());
    let name = server.command_name();
    let call = |con: &mut Connection, args: &[&str]| {
        let mut all = vec![name];
        all.extend(args);
        raw_command(&all).query::<Value>(con).unwrap()
    };
    assert_eq!(
        call(&mut con, &["60", "port:a", "1", "port:b", "2"]),
        Value::Okay,
        "{what}"
    );
    let ttl: i64 = q(&mut con, &["TTL", "port:b"]);
    assert!((50..=60).contains(&ttl), "{what}: TTL {ttl}");
    // NX: nothing is written when one key exists, everything when none does.
    assert_eq!(
        call(&mut con, &["NX", "120", "port:a", "9", "port:c", "3"]),
        Value::Int(0),
        "{what}"
    );
    assert_eq!(q::<String, _>(&mut con, &["GET", "port:a"]), "1", "{what}");
    assert_eq!(q::<i64, _>(&mut con, &["EXISTS", "port:c"]), 0, "{what}");
    assert_eq!(
        call(&mut con, &["NX", "120", "port:c", "3", "port:d", "4"]),
        Value::Int(1),
        "{what}"
    );
    let ttl: i64 = q(&mut con, &["TTL", "port:d"]);
    assert!((110..=120).contains(&ttl), "{what}: TTL {ttl}");
    let log = running.log();
    let loaded = format!("Module 'msetex' loaded from {}", library.display());
    assert!(
        log.contains(&loaded),
        "{what}: no '{loaded}' in its log:\n{log}"
    );
    info_field(&mut con, "server", "os").unwrap_or_default()
}

/// `make portable`'s libraries need glibc 2.17 at most, as `objdump -T`
/// reads them, and are built for their architecture (ELF header).
#[test]
fn each_portable_library_needs_glibc_2_17_at_most() {
    let (built, missing) = built_arches();
    let mut needs = Vec::new();
    for arch in &built {
        let library = portable_library(arch).expect("built");
        assert_eq!(elf_arch(&library), *arch, "{}", library.display());
        let (newest, version) = glibc_versions(&library)
            .into_iter()
            .max()
            .unwrap_or_else(|| panic!("no GLIBC_ version in {}", library.display()));
        assert!(
            newest <= vec![GLIBC_FLOOR.0, GLIBC_FLOOR.1],
            "{} needs GLIBC_{version}, above {}.{}",
            library.display(),
            GLIBC_FLOOR.0,
            GLIBC_FLOOR.1
        );
        record_result(&format!("{arch} library"), &format!("GLIBC_{version}"));
        needs.push(version);
    }
    // README's Install table says what they need, as read here.
    if built == ARCHES {
        let readme = std::fs::read_to_string(repo_root().join("README.md")).expect("README.md");
        let cell = format!("| {} |", needs.join(" / "));
        let rows = readme.lines().filter(|line| line.ends_with(&cell)).count();
        assert!(rows >= 3, "README.md's Install table must say {cell}");
    }
    skip_unless(missing.is_empty(), &missing.join("; "));
}

/// The portable library of this machine's architecture serves MSETEX on
/// the server under test (under `make test-matrix`, on every server).
#[test]
fn the_portable_library_serves_msetex_on_the_server_under_test() {
    let library = portable_library(std::env::consts::ARCH);
    if skip_unless(
        library.is_ok(),
        library.as_ref().err().map_or("", String::as_str),
    ) {
        return;
    }
    serves_msetex(target(), &library.unwrap());
}

/// The aarch64 library in an arm64 Redis: Debian 12's arm64 redis-server,
/// unpacked (never installed), run under qemu-aarch64 user-mode emulation.
#[test]
fn the_aarch64_library_serves_msetex_in_arm64_redis_under_qemu() {
    let library = portable_library("aarch64");
    let server = arm64_server();
    let reasons: Vec<&str> = [library.as_ref().err(), server.as_ref().err()]
        .into_iter()
        .flatten()
        .map(String::as_str)
        .collect();
    if skip_unless(reasons.is_empty(), &reasons.join("; ")) {
        return;
    }
    let os = serves_msetex(server.unwrap(), &library.unwrap());
    // The server is the arm64 build: uname under qemu-aarch64 says aarch64.
    assert!(os.ends_with(" aarch64"), "INFO os: {os}");
}
