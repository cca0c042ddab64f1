//! `make install` / `make uninstall` / `make dist`, run into temporary
//! directories (the `-files` targets skip the build: `make test` built it).

use msetex_harness::*;
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

#[test]
fn dist_tarball_holds_the_release() {
    let dir = TempDir::new("dist");
    let out = make(&["dist-files", &format!("DISTDIR={}", dir.path().display())]);
    let version = env!("CARGO_PKG_VERSION");
    let tarball = std::fs::read_dir(dir.path())
        .expect("dist dir")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".tar.gz"))
        .unwrap_or_else(|| panic!("no tarball:\n{out}"));
    let name = tarball.file_name().unwrap().to_string_lossy().into_owned();
    let prefix = format!("msetex-{version}-");
    assert!(name.starts_with(&prefix), "{name}");
    let triple = name.trim_start_matches(&prefix).trim_end_matches(".tar.gz");
    assert!(triple.split('-').count() >= 3, "target triple in {name}");
    let listing = Command::new("tar")
        .arg("-tzf")
        .arg(&tarball)
        .output()
        .expect("tar");
    let listing = String::from_utf8_lossy(&listing.stdout);
    let stem = name.trim_end_matches(".tar.gz");
    for file in ["libmsetex.so", "README.md", "LICENSE", "msetex.conf"] {
        assert!(
            listing.contains(&format!("{stem}/{file}")),
            "{file} missing:\n{listing}"
        );
    }
}

/// `make deb`: the Debian package, built into a temporary directory (the
/// `deb-files` target skips the build: `make test` built the module),
/// inspected with dpkg-deb, unpacked with `dpkg -x`, and its library loaded
/// into a real server through the Valkey module path.
#[test]
fn the_debian_package_installs_the_module_for_redis_and_valkey() {
    let has_dpkg = Command::new("dpkg-deb").arg("--version").output().is_ok();
    if skip_unless(
        has_dpkg,
        "make deb needs dpkg-deb (Debian and its derivatives)",
    ) {
        return;
    }
    let dir = TempDir::new("deb");
    let out = make(&["deb-files", &format!("DEBDIR={}", dir.path().display())]);
    let arch = tool("dpkg", &["--print-architecture"]).trim().to_owned();
    let version = env!("CARGO_PKG_VERSION");
    let deb = dir.path().join(format!("msetex_{version}_{arch}.deb"));
    assert!(deb.is_file(), "no {} after make deb:\n{out}", deb.display());
    let deb_path = deb.to_string_lossy().into_owned();

    // Control fields, and no maintainer script: nothing runs at install.
    let info = tool("dpkg-deb", &["-I", &deb_path]);
    let field = |name: &str| tool("dpkg-deb", &["-f", &deb_path, name]).trim().to_owned();
    assert_eq!(field("Package"), "msetex");
    assert_eq!(field("Version"), version);
    assert_eq!(field("Architecture"), arch);
    assert!(field("Depends").contains("libc6"), "{info}");
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
        record_result("lintian on the .deb", "0 errors");
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
    // The library is the module under test, stripped.
    let stripped = root.path().join("stripped.so");
    tool(
        "strip",
        &[
            "--strip-unneeded",
            "--remove-section=.comment",
            "--remove-section=.note",
            "-o",
            &stripped.to_string_lossy(),
            &module_path().to_string_lossy(),
        ],
    );
    assert!(
        std::fs::read(&stripped).expect("stripped module")
            == std::fs::read(root.path().join("usr/lib/msetex/libmsetex.so")).expect("packaged"),
        "the package holds another build than {}",
        module_path().display()
    );
    let redis_path = root.path().join("usr/lib/redis/modules/libmsetex.so");
    let valkey_path = root.path().join("usr/lib/valkey/modules/libmsetex.so");
    assert_eq!(
        std::fs::canonicalize(&redis_path).expect("redis link"),
        std::fs::canonicalize(&valkey_path).expect("valkey link"),
        "one library for both servers"
    );

    // A real server loads the unpacked library and answers MSETEX.
    let server = ServerConfig::default().module_file(&valkey_path).start();
    let mut con = server.client();
    let name = target().command_name();
    assert_eq!(
        exec(&mut con, &[name, "90", "pkg:k", "v"]).unwrap(),
        Value::Okay
    );
    let ttl: i64 = q(&mut con, &["TTL", "pkg:k"]);
    assert!((1..=90).contains(&ttl), "TTL {ttl}");
}

/// `make rpm`: the RPM for the RHEL family, built into a temporary directory
/// (the `rpm-files` target skips the build), inspected with `rpm -qp`,
/// checked with rpmlint, installed with `rpm --root` into a scratch root, and
/// its installed library loaded through the Redis and Valkey module
/// directories into Redis 6.2.16 (RHEL 9's) and Valkey 8.0.1 (EPEL 9's,
/// RHEL 10's) from ../shared/servers. Every rpm call names its own
/// database: this machine's stays untouched.
#[test]
fn the_rpm_installs_the_module_for_redis_and_valkey_on_the_rhel_family() {
    let runs = |program: &str| {
        Command::new(program)
            .arg("--version")
            .output()
            .is_ok_and(|output| output.status.success())
    };
    if skip_unless(
        runs("rpm") && runs("rpmbuild"),
        "make rpm needs rpm and rpmbuild (Debian: apt-get install rpm)",
    ) {
        return;
    }
    let dir = TempDir::new("rpm");
    let out = make(&["rpm-files", &format!("RPMDIR={}", dir.path().display())]);
    let version = env!("CARGO_PKG_VERSION");
    let eval = |expr: &str| tool("rpm", &["--eval", expr]).trim().to_owned();
    let (arch, isa, libdir) = (eval("%{_arch}"), eval("%{?_isa}"), eval("%{_libdir}"));
    let rpm = dir.path().join(format!("msetex-{version}-1.{arch}.rpm"));
    assert!(rpm.is_file(), "no {} after make rpm:\n{out}", rpm.display());
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

    // Requires: either server's module ABI, as the family's module packages
    // word it, and the glibc that the library's symbols need, which the
    // README states too.
    let glibc = newest_glibc(&module_path());
    let requires = query(&["--requires"]);
    for line in [
        format!("(valkey(modules_abi){isa} = 1 or redis(modules_abi){isa} = 1)"),
        format!("glibc{isa} >= {glibc}"),
    ] {
        assert!(requires.lines().any(|l| l == line), "{line}:\n{requires}");
    }
    let readme = std::fs::read_to_string(repo_root().join("README.md")).expect("README.md");
    assert!(
        readme.contains(&format!("glibc {glibc} or newer")),
        "README.md must say the library needs glibc {glibc} or newer"
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
            .arg(&rpm)
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
        record_result("rpmlint on the .rpm", "0 errors");
    }

    // Installed into a scratch root, with its own database.
    let root = TempDir::new("rpm-root");
    let root_path = root.path().to_string_lossy().into_owned();
    let in_root = ["--root", &root_path, "--dbpath", "/var/lib/rpm"];
    tool(
        "rpm",
        &[&in_root[..], &["--nodeps", "-i", &rpm_path]].concat(),
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
    // The library is the module under test (same build id), stripped.
    assert_eq!(build_id(&library), build_id(&module_path()));
    assert!(
        !tool("objdump", &["-h", &library.to_string_lossy()]).contains(".symtab"),
        "the installed library is stripped"
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

    // Redis 6.2.16 and Valkey 8.0.1 load the installed library through their
    // module directory's link, and MSETEX sets the key with its TTL.
    let shared = shared_servers_dir();
    let servers: Vec<Option<Target>> = ["redis-6.2.16/redis-server", "valkey-8.0.1/valkey-server"]
        .iter()
        .map(|path| {
            targets_at(&[shared.join(path).display().to_string()])
                .into_iter()
                .next()
        })
        .collect();
    if skip_unless(
        servers.iter().all(Option::is_some),
        "loading the installed RPM needs redis-6.2.16 and valkey-8.0.1 in ../shared/servers",
    ) {
        return;
    }
    for (server, link) in servers.into_iter().flatten().zip(&links) {
        let server: &'static Target = Box::leak(Box::new(server));
        let args = server.default_module_args();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let running = ServerConfig::default()
            .binary(server)
            .module_file(link)
            .module_args(&args)
            .start();
        let mut con = running.client();
        let what = server.describe();
        // Exactly the name that server's module answers to (`exec` would rename MSETEX as the
        // server under test names it).
        let call = [server.command_name(), "100", "rpm:k", "v"];
        assert_eq!(
            raw_command(&call).query::<Value>(&mut con).unwrap(),
            Value::Okay,
            "{what}"
        );
        let ttl: i64 = q(&mut con, &["TTL", "rpm:k"]);
        assert!((90..=100).contains(&ttl), "{what}: TTL {ttl}");
        let value: String = q(&mut con, &["GET", "rpm:k"]);
        assert_eq!(value, "v", "{what}");
        // MODULE LIST names the file from Redis 7.0 and on every Valkey.
        if server.is_7_0_or_later() {
            let modules = exec(&mut con, &["MODULE", "LIST"]).unwrap();
            assert!(
                format!("{modules:?}").contains(&link.display().to_string()),
                "{what} loaded another file: {modules:?}"
            );
        }
    }
}

/// The newest `GLIBC_x.y` symbol version a library needs (`objdump -T`):
/// the oldest glibc it runs on.
fn newest_glibc(library: &std::path::Path) -> String {
    let symbols = tool("objdump", &["-T", &library.to_string_lossy()]);
    symbols
        .split(|c: char| c.is_whitespace() || c == '(' || c == ')')
        .filter_map(|word| word.strip_prefix("GLIBC_"))
        .filter_map(|version| {
            let parts: Option<Vec<u32>> = version.split('.').map(|p| p.parse().ok()).collect();
            parts.map(|parts| (parts, version.to_owned()))
        })
        .max()
        .map(|(_, version)| version)
        .unwrap_or_else(|| panic!("no GLIBC_ symbol version in {}", library.display()))
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

/// Runs a tool to completion and returns its stdout (it must succeed).
fn tool(program: &str, args: &[&str]) -> String {
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
