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
