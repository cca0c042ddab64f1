//! Client libraries of other languages, installed for the tests that run them: a
//! Python virtual environment per pinned requirements file, an npm project per lock
//! file. Each is installed once into a directory the caller picks (under target/) and
//! reused while what it was installed from is unchanged. Where a client cannot be had
//! here (no `python3 -m venv`, no Node.js, a registry out of reach) the installer says
//! why, for the test to skip with that reason.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// What pip and npm print when they cannot reach their registry.
const UNREACHABLE: [&str; 14] = [
    "npm error network",
    "npm ERR! network",
    "ECONNREFUSED",
    "ENOTFOUND",
    "EAI_AGAIN",
    "ETIMEDOUT",
    "ECONNRESET",
    "ENETUNREACH",
    "EHOSTUNREACH",
    "NewConnectionError",
    "Temporary failure in name resolution",
    "Network is unreachable",
    "ProxyError",
    "ReadTimeoutError",
];

/// The file recording what a directory was installed from.
const STAMP: &str = ".installed-from";

/// A Python virtual environment at `dir` with `requirements` (a pinned requirements file)
/// installed by pip; returns its interpreter. Reused while the requirements file is the
/// one it was installed from. Err: why this client cannot run here.
pub fn python_venv(dir: &Path, requirements: &Path) -> Result<PathBuf, String> {
    let wanted = std::fs::read_to_string(requirements)
        .unwrap_or_else(|e| panic!("{}: {e}", requirements.display()));
    let python = dir.join("bin/python");
    if python.is_file() && read_stamp(dir).as_deref() == Some(wanted.as_str()) {
        return Ok(python);
    }
    let _ = std::fs::remove_dir_all(dir);
    let venv = run(Command::new("python3").arg("-m").arg("venv").arg(dir))
        .map_err(|e| format!("needs `python3` on PATH ({e})"))?;
    if !venv.status.success() {
        let said = last_line(&venv);
        return Err(format!(
            "`python3 -m venv` cannot make an environment here ({said}; Debian: apt-get install python3-venv)"
        ));
    }
    let pip = run(Command::new(&python)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
        ])
        .args(["--retries", "2", "--timeout", "30", "-r"])
        .arg(requirements))
    .unwrap_or_else(|e| panic!("run pip in {}: {e}", dir.display()));
    if !pip.status.success() {
        let stderr = String::from_utf8_lossy(&pip.stderr);
        let _ = std::fs::remove_dir_all(dir);
        let name = requirements
            .file_name()
            .unwrap_or_default()
            .to_string_lossy();
        if let Some(line) = unreachable_line(&stderr) {
            return Err(format!(
                "`pip install -r {name}` cannot reach the registry: {line}"
            ));
        }
        if stderr.contains("No matching distribution found") {
            return Err(format!(
                "`pip install -r {name}`: no build for this Python or platform: {}",
                last_line(&pip)
            ));
        }
        panic!(
            "pip install -r {} failed:\n{stderr}",
            requirements.display()
        );
    }
    write_stamp(dir, &wanted);
    Ok(python)
}

/// `files` of the npm project `source` (package.json, package-lock.json and the scripts
/// that use them) copied into `dir`, and `npm ci` run there; returns `dir`. The packages
/// are reused while package-lock.json is the one they were installed from; the other
/// files are copied every time. `node_major` is the oldest Node.js the packages run on.
/// Err: why these clients cannot run here.
pub fn npm_project(
    source: &Path,
    files: &[&str],
    dir: &Path,
    node_major: u32,
) -> Result<PathBuf, String> {
    let version = run(Command::new("node").arg("--version"))
        .ok()
        .filter(|out| out.status.success())
        .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_owned())
        .ok_or_else(|| format!("needs `node` on PATH (Node.js {node_major}+ with npm)"))?;
    let major: u32 = version
        .trim_start_matches('v')
        .split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .unwrap_or(0);
    if major < node_major {
        return Err(format!(
            "needs Node.js {node_major}+, this machine has {version}"
        ));
    }
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for file in files {
        std::fs::copy(source.join(file), dir.join(file))
            .unwrap_or_else(|e| panic!("copy {}/{file}: {e}", source.display()));
    }
    let lock = std::fs::read_to_string(dir.join("package-lock.json"))
        .unwrap_or_else(|e| panic!("{}/package-lock.json: {e}", source.display()));
    if dir.join("node_modules").is_dir() && read_stamp(dir).as_deref() == Some(lock.as_str()) {
        return Ok(dir.to_path_buf());
    }
    let npm = run(Command::new("npm")
        .args([
            "ci",
            "--no-audit",
            "--no-fund",
            "--ignore-scripts",
            "--prefer-offline",
            // One retry, within seconds: a registry out of reach is a skip, not a wait.
            "--fetch-retries=1",
            "--fetch-retry-mintimeout=2000",
            "--fetch-retry-maxtimeout=10000",
        ])
        .current_dir(dir))
    .map_err(|e| format!("needs `npm` on PATH ({e})"))?;
    if !npm.status.success() {
        let stderr = String::from_utf8_lossy(&npm.stderr);
        if unreachable_line(&stderr).is_some() {
            let code = stderr
                .lines()
                .find(|line| line.contains(" code "))
                .unwrap_or("a network error")
                .trim();
            return Err(format!("`npm ci` cannot reach the registry: {code}"));
        }
        panic!(
            "npm ci in {} failed:\n{}{stderr}",
            dir.display(),
            String::from_utf8_lossy(&npm.stdout)
        );
    }
    write_stamp(dir, &lock);
    Ok(dir.to_path_buf())
}

/// The first line of `stderr` that says a registry could not be reached, shortened.
fn unreachable_line(stderr: &str) -> Option<String> {
    let line = stderr
        .lines()
        .find(|line| UNREACHABLE.iter().any(|sign| line.contains(sign)))?;
    Some(line.trim().chars().take(200).collect())
}

fn run(command: &mut Command) -> std::io::Result<Output> {
    command.stdin(std::process::Stdio::null()).output()
}

fn last_line(output: &Output) -> String {
    let last = |bytes: &[u8]| {
        String::from_utf8_lossy(bytes)
            .lines()
            .map(str::trim)
            .rfind(|line| !line.is_empty())
            .map(str::to_owned)
    };
    last(&output.stderr)
        .or_else(|| last(&output.stdout))
        .unwrap_or_else(|| "no output".to_owned())
}

fn read_stamp(dir: &Path) -> Option<String> {
    std::fs::read_to_string(dir.join(STAMP)).ok()
}

fn write_stamp(dir: &Path, text: &str) {
    std::fs::write(dir.join(STAMP), text)
        .unwrap_or_else(|e| panic!("{}/{STAMP}: {e}", dir.display()));
}
