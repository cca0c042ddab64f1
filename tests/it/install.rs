//! `make install` / `make uninstall` / `make dist` / `make deb` / `make
//! rpm`, run into temporary directories (the `-files` targets skip the
//! build: `make test` built the native library and, where it could, the
//! portable one of each architecture, which dist, deb and rpm package).

use super::portable::{
    arm64_server, built_arches, elf_arch, newest_glibc, portable_library, serves_msetex,
    strip_command, tool,
};
use msetex_harness::*;
use std::path::Path;
use std::process::Command;

fn make(args: &[&str]) -> String {
    let output = Command::new("make")
        .arg("--no-print-directory")
        .arg("-C")
        .arg(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .output()
        .expect("run make");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "make {args:?} failed:\n{text}");
    text
}

#[test]
fn make_help_lists_targets_and_variables_with_their_values() {
    let help = make(&["help"]);
    assert!(!help.contains("$("), "unexpanded variables:\n{help}");
    for line in [
        "make test ",
        "make run ",
        "PORT=6379",
        "MODULEDIR=/usr/lib/redis/modules",
        "DESTDIR=",
        "DEBDIR=target/deb",
        "make rpm ",
        "RPMDIR=target/rpm",
        "PREFIX=/usr",
        "ARCH=\"x86_64 aarch64\"",
        "GLIBC=2.17",
        "PORTABLE=",
    ] {
        assert!(help.contains(line), "{line}:\n{help}");
    }
}

#[test]
fn install_and_uninstall_into_destdir() {
    let root = TempDir::new("install");
    let destdir = format!("DESTDIR={}", root.path().display());
    let out = make(&["install-files", &destdir]);
    let installed = root.path().join("usr/lib/redis/modules/libmsetex.so");
    assert_eq!(
        std::fs::read(&installed).expect("installed library"),
        std::fs::read(module_path()).expect("built library")
    );
    assert!(
        out.contains("loadmodule /usr/lib/redis/modules/libmsetex.so"),
        "{out}"
    );
    // The installed file is a module a server loads.
    let server = ServerConfig::default().module_file(&installed).start();
    assert_eq!(
        exec(&mut server.client(), &["MSETEX", "9", "k", "v"]).unwrap(),
        Value::Okay
    );

    let prefix = format!("PREFIX={}", "/opt/redis");
    make(&["install-files", &destdir, &prefix]);
    assert!(root
        .path()
        .join("opt/redis/lib/redis/modules/libmsetex.so")
        .is_file());

    make(&["uninstall", &destdir]);
    assert!(!installed.exists(), "uninstall must remove it");
}

/// `make dist`: a tarball per architecture holding the portable library,
/// and SHA256SUMS over them.
#[test]
fn dist_writes_a_tarball_per_architecture_and_their_sums() {
    let Some((dir, out, built, missing)) = make_packages("dist", "DISTDIR") else {
        return;
    };
    let version = env!("CARGO_PKG_VERSION");
    let mut names = Vec::new();
    for arch in &built {
        let stem = format!("msetex-{version}-{arch}-unknown-linux-gnu");
        let tarball = dir.path().join(format!("{stem}.tar.gz"));
        let tarball_path = tarball.to_string_lossy().into_owned();
        assert!(tarball.is_file(), "no {tarball_path}:\n{out}");
        let listing = tool("tar", &["-tzf", &tarball_path]);
        for file in ["libmsetex.so", "README.md", "LICENSE", "msetex.conf"] {
            assert!(
                listing.contains(&format!("{stem}/{file}")),
                "{file} missing:\n{listing}"
            );
        }
        // The library in it is the portable build, byte for byte.
        let packed = Command::new("tar")
            .args(["-xzOf", &tarball_path, &format!("{stem}/libmsetex.so")])
            .output()
            .expect("tar");
        assert!(
            packed.stdout == std::fs::read(portable_library(arch).unwrap()).unwrap(),
            "{tarball_path} holds another library than the {arch} build"
        );
        names.push(format!("{stem}.tar.gz"));
    }
    check_sums(dir.path(), &names);
    skip_unless(missing.is_empty(), &missing.join("; "));
}

/// `make <kind>-files` into a temporary directory (`<var>=dir`) for every
/// architecture whose portable library is built. None (the test skipped,
/// with the reasons) when none is; otherwise the directory, what make said,
/// the architectures and the reasons of those left out.
fn make_packages(
    kind: &str,
    var: &str,
) -> Option<(TempDir, String, Vec<&'static str>, Vec<String>)> {
    let (built, missing) = built_arches();
    if skip_unless(!built.is_empty(), &missing.join("; ")) {
        return None;
    }
    let dir = TempDir::new(kind);
    let out = make(&[
        &format!("{kind}-files"),
        &format!("{var}={}", dir.path().display()),
        &format!("ARCH={}", built.join(" ")),
    ]);
    Some((dir, out, built, missing))
}

/// DIR/SHA256SUMS lists exactly `names`, and `sha256sum -c` accepts them.
fn check_sums(dir: &Path, names: &[String]) {
    let sums = std::fs::read_to_string(dir.join("SHA256SUMS")).expect("SHA256SUMS");
    let listed: Vec<&str> = sums
        .lines()
        .filter_map(|line| line.split_whitespace().nth(1))
        .collect();
    assert_eq!(listed, names, "SHA256SUMS:\n{sums}");
    let check = Command::new("sha256sum")
        .args(["-c", "SHA256SUMS"])
        .current_dir(dir)
        .output()
        .expect("sha256sum");
    assert!(
        check.status.success(),
        "sha256sum -c: {}",
        String::from_utf8_lossy(&check.stdout)
    );
}

/// Loads a packaged library: into the server under test when it is this
/// machine's architecture, into the arm64 Redis under qemu when it is
/// aarch64. Returns why it could not (no arm64 server here).
fn load_packaged(arch: &str, library: &Path) -> Result<(), String> {
    let server = if arch == std::env::consts::ARCH {
        target()
    } else if arch == "aarch64" {
        arm64_server()?
    } else {
        return Err(format!("no {arch} server on this machine"));
    };
    serves_msetex(server, library);
    Ok(())
}

/// `make deb`: a Debian package per architecture (amd64, arm64), built
/// into a temporary directory (the `deb-files` target skips the build: `make
/// test` built the libraries), inspected with dpkg-deb, unpacked with `dpkg
/// -x`, and its library loaded into a real server of its architecture
/// through the Valkey module path.
#[test]
fn the_debian_package_installs_the_module_for_redis_and_valkey() {
    let has_dpkg = Command::new("dpkg-deb").arg("--version").output().is_ok();
    if skip_unless(
        has_dpkg,
        "make deb needs dpkg-deb (Debian and its derivatives)",
    ) {
        return;
    }
    let Some((dir, out, built, mut missing)) = make_packages("deb", "DEBDIR") else {
        return;
    };
    let version = env!("CARGO_PKG_VERSION");
    let mut names = Vec::new();
    for arch in &built {
        let deb_arch = if *arch == "aarch64" { "arm64" } else { "amd64" };
        let deb = dir.path().join(format!("msetex_{version}_{deb_arch}.deb"));
        assert!(deb.is_file(), "no {} after make deb:\n{out}", deb.display());
        if let Err(reason) = check_deb(&deb, arch, deb_arch) {
            missing.push(format!("loading the {deb_arch} package: {reason}"));
        }
        names.push(format!("msetex_{version}_{deb_arch}.deb"));
    }
    check_sums(dir.path(), &names);
    skip_unless(missing.is_empty(), &missing.join("; "));
}

/// One .deb of `make deb`, for `arch`; Err when no server of that
/// architecture was there to load it.
fn check_deb(deb: &Path, arch: &str, deb_arch: &str) -> Result<(), String> {
    let version = env!("CARGO_PKG_VERSION");
    let deb_path = deb.to_string_lossy().into_owned();

    // Control fields, and no maintainer script: nothing runs at install.
    let info = tool("dpkg-deb", &["-I", &deb_path]);
    let field = |name: &str| tool("dpkg-deb", &["-f", &deb_path, name]).trim().to_owned();
    assert_eq!(field("Package"), "msetex");
    assert_eq!(field("Version"), version);
    assert_eq!(field("Architecture"), deb_arch);
    for script in ["preinst", "postinst", "prerm", "postrm", "conffiles"] {
        assert!(!info.contains(script), "{script} in the package:\n{info}");
    }
    // The description names every server the last matrix run passed on.
    let description = field("Description")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let matrix = std::fs::read_to_string(repo_root().join("docs/COMPATIBILITY.md"))
        .expect("docs/COMPATIBILITY.md");
    let passed: Vec<&str> = matrix
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            match cells.as_slice() {
                ["", server, _, "0", _, ""]
                    if server.starts_with("Redis ") || server.starts_with("Valkey ") =>
                {
                    Some(*server)
                }
                _ => None,
            }
        })
        .collect();
    assert!(passed.len() >= 2, "no passing server in COMPATIBILITY.md");
    for server in &passed {
        assert!(
            description.contains(server),
            "{server} missing:\n{description}"
        );
    }

    // The files: the library once, linked from each server's module dir;
    // the docs; nothing under /etc.
    let listing = tool("dpkg-deb", &["-c", &deb_path]);
    let entry = |path: &str| {
        listing
            .lines()
            .find(|line| line.contains(&format!(" ./{path}")))
            .unwrap_or_else(|| panic!("{path} not in the package:\n{listing}"))
            .to_owned()
    };
    assert!(entry("usr/lib/msetex/libmsetex.so").starts_with("-rwxr-xr-x"));
    for line in listing.lines().filter(|line| line.starts_with('d')) {
        assert!(line.starts_with("drwxr-xr-x root/root"), "{line}");
    }
    for server in ["redis", "valkey"] {
        let link = entry(&format!("usr/lib/{server}/modules/libmsetex.so"));
        assert!(
            link.starts_with('l') && link.ends_with("-> ../../msetex/libmsetex.so"),
            "{link}"
        );
    }
    for doc in [
        "README.md",
        "copyright",
        "changelog.gz",
        "examples/redis.conf",
        "examples/valkey.conf",
    ] {
        entry(&format!("usr/share/doc/msetex/{doc}"));
    }
    assert!(!listing.contains(" ./etc"), "{listing}");
    assert!(info.contains(" md5sums"), "{info}");
    assert!(!field("Description").starts_with("msetex"), "{info}");
    // Debian's own check of the package: no error.
    if Command::new("lintian").arg("--version").output().is_ok() {
        let report = Command::new("lintian")
            .args(["--no-tag-display-limit", &deb_path])
            .output()
            .expect("lintian");
        let report = String::from_utf8_lossy(&report.stdout).into_owned();
        let errors: Vec<&str> = report.lines().filter(|l| l.starts_with("E:")).collect();
        assert!(errors.is_empty(), "lintian:\n{report}");
        record_result(&format!("lintian on the {deb_arch} .deb"), "0 errors");
    }

    // Unpacked: the docs are this repository's, the samples only comment.
    let root = TempDir::new("deb-root");
    tool("dpkg", &["-x", &deb_path, &root.path().to_string_lossy()]);
    let doc = root.path().join("usr/share/doc/msetex");
    let read = |path: &str| std::fs::read_to_string(doc.join(path)).expect(path);
    assert_eq!(
        read("README.md"),
        std::fs::read_to_string(repo_root().join("README.md")).expect("README.md")
    );
    let licence = std::fs::read_to_string(repo_root().join("LICENSE")).expect("LICENSE");
    let copyright = read("copyright");
    for line in licence.lines().filter(|line| !line.is_empty()) {
        assert!(copyright.contains(line), "licence line missing: {line}");
    }
    for server in ["redis", "valkey"] {
        let sample = read(&format!("examples/{server}.conf"));
        assert!(
            sample.contains(&format!(
                "# loadmodule /usr/lib/{server}/modules/libmsetex.so"
            )),
            "{sample}"
        );
        assert!(
            sample
                .lines()
                .all(|line| line.is_empty() || line.starts_with('#')),
            "the {server} sample must only comment:\n{sample}"
        );
    }
    // The library is the portable build of its architecture, stripped, and
    // the package depends on the glibc its symbols need.
    let packaged = root.path().join("usr/lib/msetex/libmsetex.so");
    assert_eq!(elf_arch(&packaged), arch);
    let stripped = root.path().join("stripped.so");
    let built = portable_library(arch).expect("built");
    tool(
        &strip_command(arch),
        &[
            "--strip-unneeded",
            "--remove-section=.comment",
            "--remove-section=.note",
            "-o",
            &stripped.to_string_lossy(),
            &built.to_string_lossy(),
        ],
    );
    assert!(
        std::fs::read(&stripped).expect("stripped module")
            == std::fs::read(&packaged).expect("packaged"),
        "the package holds another build than {}",
        built.display()
    );
    assert_eq!(
        field("Depends"),
        format!("libc6 (>= {})", newest_glibc(&packaged)),
        "{info}"
    );
    let redis_path = root.path().join("usr/lib/redis/modules/libmsetex.so");
    let valkey_path = root.path().join("usr/lib/valkey/modules/libmsetex.so");
    assert_eq!(
        std::fs::canonicalize(&redis_path).expect("redis link"),
        std::fs::canonicalize(&valkey_path).expect("valkey link"),
        "one library for both servers"
    );

    // A real server of its architecture loads the unpacked library and
    // answers MSETEX.
    load_packaged(arch, &valkey_path)
}

/// `make rpm`: an RPM per architecture (x86_64, aarch64) for the RHEL
/// family, built into a temporary directory (the `rpm-files` target skips the
/// build), inspected with `rpm -qp`, checked with rpmlint, installed with
/// `rpm --root` into a scratch root, and its installed library loaded through
/// the module directories: the x86_64 one into Redis 6.2.16 (RHEL 9's) and
/// Valkey 8.0.1 (EPEL 9's, RHEL 10's) from ../shared/servers, the aarch64 one
/// into the arm64 Redis under qemu. Every rpm call names its own database:
/// this machine's stays untouched.
#[test]
fn the_rpm_installs_the_module_for_redis_and_valkey_on_the_rhel_family() {
    if skip_unless(
        runs("rpm") && runs("rpmbuild"),
        "make rpm needs rpm and rpmbuild (Debian: apt-get install rpm)",
    ) {
        return;
    }
    let Some((dir, out, built, mut missing)) = make_packages("rpm", "RPMDIR") else {
        return;
    };
    let version = env!("CARGO_PKG_VERSION");
    let mut names = Vec::new();
    for arch in &built {
        let name = format!("msetex-{version}-1.{arch}.rpm");
        let rpm = dir.path().join(&name);
        assert!(rpm.is_file(), "no {} after make rpm:\n{out}", rpm.display());
        if let Err(reason) = check_rpm(&rpm, arch) {
            missing.push(format!("loading the {arch} RPM: {reason}"));
        }
        names.push(name);
    }
    check_sums(dir.path(), &names);
    skip_unless(missing.is_empty(), &missing.join("; "));
}

/// One RPM of `make rpm`, for `arch`; Err when no server of that
/// architecture was there to load it.
fn check_rpm(rpm: &Path, arch: &str) -> Result<(), String> {
    let version = env!("CARGO_PKG_VERSION");
    // As the family's rpm macros name them (%{_isa}, %{_libdir}).
    let isa = if arch == "aarch64" {
        "(aarch-64)"
    } else {
        "(x86-64)"
    };
    let libdir = "/usr/lib64";
    let rpm_path = rpm.to_string_lossy().into_owned();
    let db = TempDir::new("rpmdb");
    let db_path = db.path().to_string_lossy().into_owned();
    let query = |args: &[&str]| {
        let mut all = vec!["--dbpath", &db_path, "-qp"];
        all.extend(args);
        all.push(&rpm_path);
        tool("rpm", &all)
    };
    let tag = |name: &str| query(&["--qf", &format!("%{{{name}}}")]);
    assert_eq!(tag("NAME"), "msetex");
    assert_eq!(tag("VERSION"), version);
    assert_eq!(tag("RELEASE"), "1");
    assert_eq!(tag("ARCH"), arch);
    // The licence: the crate's, then those of the crates linked into it.
    assert!(tag("LICENSE").starts_with("MIT AND "), "{}", tag("LICENSE"));
    assert!(
        tag("LICENSE").contains(" BSD-3-Clause"),
        "redis-module's licence"
    );

    // Nothing runs at install, and nothing goes to /etc.
    assert_eq!(query(&["--scripts"]).trim(), "");
    assert_eq!(query(&["--triggers"]).trim(), "");

    // The files: the library once, linked from each server's module
    // directory, the docs and the licences (and the build-id link rpmbuild
    // adds for the library, as on Fedora).
    let files: Vec<String> = query(&["-l"])
        .lines()
        .filter(|line| !line.starts_with("/usr/lib/.build-id"))
        .map(str::to_owned)
        .collect();
    let mut expected: Vec<String> = [
        "msetex",
        "msetex/msetex.so",
        "redis",
        "redis/modules",
        "redis/modules/msetex.so",
        "valkey",
        "valkey/modules",
        "valkey/modules/msetex.so",
    ]
    .iter()
    .map(|path| format!("{libdir}/{path}"))
    .chain(
        [
            "/usr/share/doc/msetex",
            "/usr/share/doc/msetex/README.md",
            "/usr/share/doc/msetex/examples",
            "/usr/share/doc/msetex/examples/redis.conf",
            "/usr/share/doc/msetex/examples/valkey.conf",
            "/usr/share/licenses/msetex",
            "/usr/share/licenses/msetex/LICENSE",
            "/usr/share/licenses/msetex/LICENSE.dependencies",
        ]
        .map(str::to_owned),
    )
    .collect();
    expected.sort();
    assert_eq!(files, expected);

    // rpmlint: no error; every warning left is explained in OPERATIONS.md.
    if runs("rpmlint") {
        let home = TempDir::new("rpmlint-home");
        let report = Command::new("rpmlint")
            .env("HOME", home.path())
            .arg("-r")
            .arg(repo_root().join("packaging/msetex.rpmlintrc"))
            .arg(rpm)
            .output()
            .expect("rpmlint");
        let report = String::from_utf8_lossy(&report.stdout).into_owned();
        assert!(report.contains(" 0 errors, "), "rpmlint:\n{report}");
        let operations = std::fs::read_to_string(repo_root().join("docs/OPERATIONS.md"))
            .expect("docs/OPERATIONS.md");
        for line in report.lines().filter(|line| line.contains(": W: ")) {
            let warning = line
                .split(": W: ")
                .nth(1)
                .and_then(|text| text.split_whitespace().next())
                .unwrap_or(line);
            assert!(
                operations.contains(&format!("`{warning}`")),
                "rpmlint warning {warning} is not explained in docs/OPERATIONS.md:\n{report}"
            );
        }
        record_result(&format!("rpmlint on the {arch} .rpm"), "0 errors");
    }

    // Installed into a scratch root, with its own database.
    let root = TempDir::new("rpm-root");
    let root_path = root.path().to_string_lossy().into_owned();
    let in_root = ["--root", &root_path, "--dbpath", "/var/lib/rpm"];
    tool(
        "rpm",
        &[&in_root[..], &["--nodeps", "--ignorearch", "-i", &rpm_path]].concat(),
    );
    assert!(
        tool("rpm", &[&in_root[..], &["-q", "msetex"]].concat())
            .starts_with(&format!("msetex-{version}-1")),
        "the scratch root's database lists the package"
    );
    let installed = |path: &str| root.path().join(path.trim_start_matches('/'));
    let library = installed(&format!("{libdir}/msetex/msetex.so"));
    {
        use std::os::unix::fs::PermissionsExt;
        let meta = std::fs::symlink_metadata(&library).expect("installed library");
        assert!(meta.is_file(), "{}", library.display());
        assert_eq!(meta.permissions().mode() & 0o777, 0o755);
    }
    // The library is the portable build of its architecture (same build
    // id), stripped.
    assert_eq!(elf_arch(&library), arch);
    assert_eq!(
        build_id(&library),
        build_id(&portable_library(arch).expect("built"))
    );
    assert!(
        !tool("objdump", &["-h", &library.to_string_lossy()]).contains(".symtab"),
        "the installed library is stripped"
    );
    // Requires: either server's module ABI, as the family's module packages
    // word it, and the glibc that the installed library's symbols need,
    // which the README states too.
    let glibc = newest_glibc(&library);
    let requires = query(&["--requires"]);
    for line in [
        format!("(valkey(modules_abi){isa} = 1 or redis(modules_abi){isa} = 1)"),
        format!("glibc{isa} >= {glibc}"),
    ] {
        assert!(requires.lines().any(|l| l == line), "{line}:\n{requires}");
    }
    let readme = std::fs::read_to_string(repo_root().join("README.md")).expect("README.md");
    let readme = readme.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        readme.contains(&format!("glibc {glibc} or newer on {arch}")),
        "README.md must say the {arch} library needs glibc {glibc} or newer on {arch}"
    );
    let links = ["redis", "valkey"].map(|server| {
        let link = installed(&format!("{libdir}/{server}/modules/msetex.so"));
        assert_eq!(
            std::fs::read_link(&link).expect("a link"),
            std::path::Path::new("../../msetex/msetex.so")
        );
        assert_eq!(
            std::fs::canonicalize(&link).expect("link target"),
            std::fs::canonicalize(&library).expect("library")
        );
        link
    });
    // The samples name those links, and only comment.
    for server in ["redis", "valkey"] {
        let sample = std::fs::read_to_string(installed(&format!(
            "/usr/share/doc/msetex/examples/{server}.conf"
        )))
        .expect("sample");
        assert!(
            sample.contains(&format!(
                "\n# loadmodule {libdir}/{server}/modules/msetex.so\n"
            )),
            "{sample}"
        );
        assert!(!sample.contains("libmsetex.so"), "{sample}");
        assert!(
            sample
                .lines()
                .all(|line| line.is_empty() || line.starts_with('#')),
            "the {server} sample must only comment:\n{sample}"
        );
    }
    assert!(!installed("/etc").exists(), "nothing under /etc");

    // A server of its architecture loads the installed library through the
    // module directory's link, and MSETEX sets the keys with their TTL.
    if arch != "x86_64" {
        return load_packaged(arch, &links[0]);
    }
    // Redis 6.2.16 and Valkey 8.0.1, each through its own link.
    let shared = shared_servers_dir();
    let servers: Vec<Option<Target>> = ["redis-6.2.16/redis-server", "valkey-8.0.1/valkey-server"]
        .iter()
        .map(|path| {
            targets_at(&[shared.join(path).display().to_string()])
                .into_iter()
                .next()
        })
        .collect();
    if !servers.iter().all(Option::is_some) {
        return Err(
            "loading the installed RPM needs redis-6.2.16 and valkey-8.0.1 in ../shared/servers"
                .to_owned(),
        );
    }
    for (server, link) in servers.into_iter().flatten().zip(&links) {
        serves_msetex(Box::leak(Box::new(server)), link);
    }
    Ok(())
}

/// True when `program --version` runs and succeeds.
fn runs(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success())
}

/// The GNU build id of an ELF file (`readelf -n`), which strip keeps.
fn build_id(file: &std::path::Path) -> String {
    let notes = tool("readelf", &["-n", &file.to_string_lossy()]);
    notes
        .lines()
        .find_map(|line| line.trim().strip_prefix("Build ID: "))
        .unwrap_or_else(|| panic!("no build id in {}:\n{notes}", file.display()))
        .to_owned()
}
