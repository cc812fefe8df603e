//! Python tools for tests that check crawldeck's output with them (warcio,
//! pywb, …): installed from PyPI into a private virtualenv under `target/`,
//! once per set of packages, bounded in time. A tool that cannot be
//! installed fails the test: it is never skipped.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Creating the virtualenv and installing its packages may take this long.
const INSTALL_LIMIT: Duration = Duration::from_secs(300);
/// One run of a tool may take this long.
const TOOL_LIMIT: Duration = Duration::from_secs(120);

/// A virtualenv holding `packages` (pinned specs, `warcio==1.7.4`), made
/// under `target/python-venvs/` if it is not there yet. Tests running at
/// once each build a copy in a temp dir; the first to finish renames its
/// copy into place, the others use it.
pub fn venv(packages: &[&str]) -> Venv {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/python-venvs");
    let place = root.join(packages.join("+").replace(['/', ' ', '='], "_"));
    if place.join(INSTALLED).is_file() {
        return Venv(place);
    }
    std::fs::create_dir_all(&root).expect("target/python-venvs can be created");
    let building = tempfile::tempdir_in(&root).expect("a temp dir under target/python-venvs");
    let staging = building.path().join("venv");
    let started = Instant::now();
    let created = run_bounded(
        Command::new("python3").args(["-m", "venv"]).arg(&staging),
        INSTALL_LIMIT,
    );
    assert_ran(
        &created,
        "python3 -m venv (a test needs Python 3 with venv)",
    );
    let installed = run_bounded(
        Command::new(staging.join("bin/python"))
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .args(packages),
        INSTALL_LIMIT.saturating_sub(started.elapsed()),
    );
    assert_ran(&installed, &format!("pip install {packages:?} from PyPI"));
    std::fs::write(staging.join(INSTALLED), packages.join("\n")).unwrap();
    // Fails when another copy is in place already: that one serves.
    let _ = std::fs::rename(&staging, &place);
    assert!(
        place.join(INSTALLED).is_file(),
        "{} is in place",
        place.display()
    );
    Venv(place)
}

/// Marks a virtualenv whose packages are all installed.
const INSTALLED: &str = "installed";

/// A virtualenv under `target/python-venvs/`.
pub struct Venv(PathBuf);

impl Venv {
    /// The console script `name` as a command, run through the virtualenv's
    /// interpreter (the script's own first line names the temp dir it was
    /// installed in).
    pub fn command(&self, name: &str) -> Command {
        let bin = self.0.join("bin");
        let mut command = Command::new(bin.join("python"));
        command.arg(bin.join(name));
        command
    }

    /// Runs the console script `name` with `args`; killed by pid past its
    /// time limit.
    pub fn run(&self, name: &str, args: &[&std::ffi::OsStr]) -> Output {
        run(self.command(name).args(args))
    }
}

/// Runs a tool's `command` to its end; killed by pid past its time limit.
pub fn run(command: &mut Command) -> Output {
    run_bounded(command, TOOL_LIMIT)
}

fn assert_ran(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs `command` to its end, reading its output meanwhile; killed by pid
/// past `limit`.
fn run_bounded(command: &mut Command, limit: Duration) -> Output {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{command:?} cannot start: {e}"));
    let (stdout, stderr) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let out = std::thread::spawn(move || read_all(stdout));
    let err = std::thread::spawn(move || read_all(stderr));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("child state") {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{command:?} (pid {}) ran past {limit:?}", child.id());
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

fn read_all(mut from: impl std::io::Read) -> Vec<u8> {
    let mut bytes = Vec::new();
    let _ = from.read_to_end(&mut bytes);
    bytes
}
