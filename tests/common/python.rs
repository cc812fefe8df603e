//! Python tools for tests: a virtualenv per package set under the target
//! directory, installed from PyPI once (bounded in time) and reused. A tool
//! that cannot be installed fails the test: it is never skipped.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// How long creating the virtualenv and installing its packages may take.
const INSTALL_LIMIT: Duration = Duration::from_secs(600);

/// A virtualenv holding `packages` (pip requirement specifiers, pinned);
/// its tools are in `bin/`.
pub fn venv(packages: &[&str]) -> PathBuf {
    // A virtualenv's scripts name its path, so it is built in place: one
    // build at a time, and a build cut short is started again.
    static BUILDING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = BUILDING.lock().unwrap_or_else(|e| e.into_inner());
    let name = packages.join(" ");
    let key = format!("{:016x}", xxhash_rust::xxh3::xxh3_64(name.as_bytes()));
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("venvs")
        .join(key);
    let stamp = dir.join("installed");
    if stamp.is_file() {
        return dir;
    }
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("the virtualenv's directory");
    run_bounded(Command::new("python3").args(["-m", "venv"]).arg(&dir));
    run_bounded(
        Command::new(dir.join("bin/pip"))
            .args(["install", "--quiet", "--disable-pip-version-check"])
            .args(packages),
    );
    std::fs::write(&stamp, &name).expect("the stamp file");
    dir
}

/// Runs `command`, killing it by pid past [`INSTALL_LIMIT`]; it must succeed.
fn run_bounded(command: &mut Command) {
    let mut child = command
        .spawn()
        .unwrap_or_else(|e| panic!("{command:?} cannot start: {e}"));
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("child state") {
            assert!(status.success(), "{command:?} failed: {status}");
            return;
        }
        if started.elapsed() > INSTALL_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{command:?} (pid {}) took over {INSTALL_LIMIT:?}",
                child.id()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Runs a tool of a virtualenv to its end, killed by pid past [`INSTALL_LIMIT`].
pub fn run(command: &mut Command) -> std::process::Output {
    let child = command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{command:?} cannot start: {e}"));
    let pid = child.id();
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done_tx.send(child.wait_with_output());
    });
    match done_rx.recv_timeout(INSTALL_LIMIT) {
        Ok(output) => output.expect("the tool's output"),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("{command:?} (pid {pid}) took over {INSTALL_LIMIT:?}");
        }
    }
}
