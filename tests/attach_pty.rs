//! `crawldeck attach` in a real pseudo-terminal on a headless crawl process:
//! read-only says so, `kill -9` of the viewer leaves the crawl running, and
//! `q` then Enter detaches. Every process is killed by pid at the end.

mod common;

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use common::Killed;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crawldeck::demo::SiteKind;
use crawldeck::remote::StatusReport;
use portable_pty::{native_pty_system, CommandBuilder, PtySize};

const WAIT: Duration = Duration::from_secs(60);

/// A viewer in a pseudo-terminal, its screen parsed.
struct Viewer {
    child: Box<dyn portable_pty::Child + Send + Sync>,
    parser: Arc<Mutex<vt100::Parser>>,
    updates: mpsc::Receiver<()>,
    keys: Box<dyn Write + Send>,
    // The child's terminal lives as long as the viewer.
    _master: Box<dyn portable_pty::MasterPty + Send>,
}

impl Drop for Viewer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Viewer {
    fn attach(args: &[&str], dir: &Path) -> Viewer {
        let mut all = vec!["attach", dir.to_str().unwrap()];
        all.extend_from_slice(args);
        Viewer::spawn(&all)
    }

    fn spawn(args: &[&str]) -> Viewer {
        let pty = native_pty_system()
            .openpty(PtySize {
                rows: 40,
                cols: 120,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("a pseudo-terminal");
        let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_crawldeck"));
        cmd.args(args);
        cmd.env("TERM", "xterm-256color");
        let child = pty
            .slave
            .spawn_command(cmd)
            .expect("crawldeck attach starts");
        drop(pty.slave);
        let parser = Arc::new(Mutex::new(vt100::Parser::new(40, 120, 0)));
        let (tx, updates) = mpsc::channel();
        let mut reader = pty.master.try_clone_reader().unwrap();
        let feed = parser.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 || tx.send(()).is_err() {
                    break;
                }
                feed.lock().unwrap().process(&buf[..n]);
            }
        });
        let keys = pty.master.take_writer().unwrap();
        Viewer {
            child,
            parser,
            updates,
            keys,
            _master: pty.master,
        }
    }

    fn text(&self) -> String {
        self.parser.lock().unwrap().screen().contents()
    }

    fn press(&mut self, bytes: &[u8]) {
        self.keys.write_all(bytes).unwrap();
        self.keys.flush().unwrap();
    }

    /// Waits (on output from the program, not on a timer) until `pred` holds.
    fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) {
        let deadline = Instant::now() + WAIT;
        while !pred(&self.text()) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.updates.recv_timeout(left) {
                Ok(()) => {}
                Err(_) => panic!("no {what}; screen:\n{}", self.text()),
            }
        }
    }
}

fn status(dir: &Path) -> StatusReport {
    let out = Command::new(env!("CARGO_BIN_EXE_crawldeck"))
        .arg("status")
        .arg(dir)
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn wait_until(what: &str, pred: impl Fn() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !pred() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_viewer_in_a_terminal_watches_is_killed_and_detaches_while_the_crawl_runs_on() {
    let demo = common::start_demo(vec![SiteKind::Shop, SiteKind::Calendar]).await;
    let seeds: Vec<String> = demo.seeds().iter().map(|u| u.to_string()).collect();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("c1");
    let engine = Killed(
        Command::new(env!("CARGO_BIN_EXE_crawldeck"))
            .args(["crawl", "--headless", "--paused", "--delay", "50ms"])
            .args(["--traps", "alert-only", "--data"])
            .arg(&data)
            .args(&seeds)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let engine_pid = engine.0.id();
    tokio::task::spawn_blocking(move || {
        wait_until("the control socket", || data.join("control.sock").exists());

        let mut watcher = Viewer::attach(&["--read-only"], &data);
        watcher.wait_for("the paused crawl", |s| s.contains("PAUSED"));
        watcher.press(b"p");
        watcher.wait_for("the read-only notice", |s| s.contains("read-only"));
        let pid = watcher.child.process_id().expect("a pid");
        let killed = Command::new("kill").args(["-9", &pid.to_string()]).status();
        assert!(killed.unwrap().success());
        let _ = watcher.child.wait();
        assert_eq!(
            status(&data).pid,
            engine_pid,
            "the crawl outlives its viewer"
        );

        let mut steerer = Viewer::attach(&[], &data);
        steerer.wait_for("the paused crawl", |s| s.contains("PAUSED"));
        steerer.press(b"p");
        steerer.wait_for("the crawl resumed", |s| s.contains("RUNNING"));
        steerer.press(b"q");
        steerer.wait_for("the detach question", |s| s.contains("Detach"));
        steerer.press(b"\r");
        let deadline = Instant::now() + WAIT;
        let exit = loop {
            if let Some(exit) = steerer.child.try_wait().unwrap() {
                break exit;
            }
            assert!(Instant::now() < deadline, "attach did not exit on detach");
            let _ = steerer.updates.recv_timeout(Duration::from_millis(100));
        };
        assert!(exit.success());
        // Snapshots are published a few times a second: the next one shows it.
        wait_until("the crawl running on after the detach", || {
            let after = status(&data);
            after.pid == engine_pid && after.state == "RUNNING"
        });
    })
    .await
    .unwrap();
    drop(engine);
    demo.shutdown().await;
}

fn paused_engine(data: &Path, seeds: &[String]) -> Killed {
    Killed(
        Command::new(env!("CARGO_BIN_EXE_crawldeck"))
            .args(["crawl", "--headless", "--paused", "--data"])
            .arg(data)
            .args(seeds)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attach_wait_shows_the_engine_gone_and_comes_back_with_it() {
    let demo = common::start_demo(vec![SiteKind::Shop]).await;
    let seeds: Vec<String> = demo.seeds().iter().map(|u| u.to_string()).collect();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("c1");
    tokio::task::spawn_blocking(move || {
        let engine = paused_engine(&data, &seeds);
        wait_until("the control socket", || data.join("control.sock").exists());
        let mut viewer = Viewer::attach(&["--wait"], &data);
        viewer.wait_for("the paused crawl", |s| s.contains("PAUSED"));
        drop(engine); // kill -9
        viewer.wait_for("the engine gone", |s| {
            s.contains("engine gone") && s.contains("waiting for it to come back")
        });
        let engine = paused_engine(&data, &[]);
        viewer.wait_for("the UI on the new engine", |s| s.contains("PAUSED"));
        viewer.press(b"q");
        viewer.wait_for("the detach question", |s| s.contains("Detach"));
        viewer.press(b"\r");
        let deadline = Instant::now() + WAIT;
        while viewer.child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "attach did not exit on detach");
            let _ = viewer.updates.recv_timeout(Duration::from_millis(100));
        }
        drop(engine);
    })
    .await
    .unwrap();
    demo.shutdown().await;
}

/// Kills a background engine by its pid when the test ends.
struct KillPid(u32);

impl Drop for KillPid {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-9", &self.0.to_string()])
            .stderr(Stdio::null())
            .status();
    }
}

fn alive(pid: u32) -> bool {
    Command::new("kill")
        .args(["-0", &pid.to_string()])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs the binary in a pseudo-terminal with `args` and `--data dir`.
fn in_terminal(args: &[&str], dir: &Path) -> Viewer {
    let mut all: Vec<&str> = args.to_vec();
    all.push("--data");
    all.push(dir.to_str().unwrap());
    Viewer::spawn(&all)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crawldeck_url_runs_the_engine_in_the_background_and_quitting_detaches() {
    let demo = common::start_demo(vec![SiteKind::Shop, SiteKind::Calendar]).await;
    let seeds: Vec<String> = demo.seeds().iter().map(|u| u.to_string()).collect();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("c1");
    tokio::task::spawn_blocking(move || {
        let mut args: Vec<&str> = seeds.iter().map(|s| s.as_str()).collect();
        args.extend(["--paused", "--traps", "alert-only"]);
        let mut ui = in_terminal(&args, &data);
        ui.wait_for("the paused crawl", |s| s.contains("PAUSED"));
        let engine_pid = status(&data).pid;
        let _cleanup = KillPid(engine_pid);
        assert_ne!(Some(engine_pid), ui.child.process_id());
        ui.press(b"p");
        ui.wait_for("the crawl running", |s| s.contains("RUNNING"));
        ui.press(b"q");
        ui.wait_for("the detach question", |s| s.contains("Detach"));
        ui.press(b"\r");
        let deadline = Instant::now() + WAIT;
        while ui.child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "the UI did not exit on detach");
            let _ = ui.updates.recv_timeout(Duration::from_millis(100));
        }
        wait_until("the crawl running on without its terminal", || {
            let now = status(&data);
            now.pid == engine_pid && now.state == "RUNNING" && now.pages > 0
        });

        // Attach again and stop it: the engine checkpoints and exits.
        let mut viewer = Viewer::attach(&[], &data);
        viewer.wait_for("the running crawl", |s| s.contains("RUNNING"));
        viewer.press(b"q");
        viewer.wait_for("the detach question", |s| s.contains("Detach"));
        viewer.press(b"s");
        wait_until("the engine process to exit", || !alive(engine_pid));
        assert!(
            !data.join("control.sock").exists(),
            "the socket goes with the engine"
        );
    })
    .await
    .unwrap();
    demo.shutdown().await;
}
