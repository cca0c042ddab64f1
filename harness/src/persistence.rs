//! Data directories and AOF files.

use std::fs;
use std::path::{Path, PathBuf};

use crate::*;

/// Copies the persistence files of a server directory (the AOF directory
/// or file, and dump.rdb) into a fresh one.
pub fn copy_data(from: &Path) -> TempDir {
    let to = TempDir::new("copy");
    let copy_file = |name: &str, into: &Path| {
        let source = from.join(name);
        if source.is_file() {
            fs::copy(&source, into.join(name)).expect("copy a data file");
        }
    };
    copy_file("appendonly.aof", to.path());
    copy_file("dump.rdb", to.path());
    if let Ok(entries) = fs::read_dir(from.join("appendonlydir")) {
        let dir = to.path().join("appendonlydir");
        fs::create_dir_all(&dir).expect("create appendonlydir");
        for entry in entries.filter_map(Result::ok) {
            fs::copy(entry.path(), dir.join(entry.file_name())).expect("copy an AOF file");
        }
    }
    to
}

/// The text of every AOF file of a server directory, in order: the base
/// and increments of a multi-part AOF (Redis 7.0+), or appendonly.aof.
pub fn aof_text(dir: &Path) -> String {
    let aof_dir = dir.join("appendonlydir");
    let mut files: Vec<PathBuf> = match fs::read_dir(&aof_dir) {
        Ok(entries) => entries
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "aof"))
            .collect(),
        Err(_) => vec![dir.join("appendonly.aof")],
    };
    files.sort();
    let mut text = Vec::new();
    for file in files {
        text.extend(fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display())));
    }
    String::from_utf8_lossy(&text).into_owned()
}
