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
