//! `crawldeck attach` in a real pseudo-terminal on a headless crawl process:
//! read-only says so, `kill -9` of the viewer leaves the crawl running, and
//! `q` then Enter detaches; `crawldeck URL` shows a finished or killed engine
//! as such and reaps it. Every process is killed by pid at the end.

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::term::{Term, WAIT};
use common::Killed;
use crawldeck::demo::SiteKind;
use crawldeck::remote::StatusReport;

/// A viewer in a pseudo-terminal, its screen parsed.
/// `crawldeck attach DIR ARGS` in a terminal.
fn attach(args: &[&str], dir: &Path) -> Term {
    let mut all = vec!["attach", dir.to_str().unwrap()];
    all.extend_from_slice(args);
    Term::spawn(&all, 40, 120)
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

        let mut watcher = attach(&["--read-only"], &data);
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

        let mut steerer = attach(&[], &data);
        steerer.wait_for("the paused crawl", |s| s.contains("PAUSED"));
        steerer.press(b"p");
        steerer.wait_for("the crawl resumed", |s| s.contains("RUNNING"));
        steerer.press(b"q");
        steerer.wait_for("the detach question", |s| s.contains("Detach"));
        steerer.press(b"\r");
        let exit = steerer.wait_exit("detach");
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
        let mut viewer = attach(&["--wait"], &data);
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
        viewer.wait_exit("detach");
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
fn in_terminal(args: &[&str], dir: &Path) -> Term {
    let mut all: Vec<&str> = args.to_vec();
    all.push("--data");
    all.push(dir.to_str().unwrap());
    Term::spawn(&all, 40, 120)
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
        ui.wait_exit("detach");
        wait_until("the crawl running on without its terminal", || {
            let now = status(&data);
            now.pid == engine_pid && now.state == "RUNNING" && now.pages > 0
        });

        // Attach again and stop it: the engine checkpoints and exits.
        let mut viewer = attach(&[], &data);
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

/// Whether `pid` is still a process, a zombie included (`kill -0` succeeds
/// on a zombie; its `/proc` entry stays until its parent reaps it).
fn in_process_table(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crawldeck_url_after_the_crawl_finished_says_so_and_reaps_its_engine() {
    let demo = common::start_demo(vec![SiteKind::Shop]).await;
    let seeds: Vec<String> = demo.seeds().iter().map(|u| u.to_string()).collect();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("c1");
    tokio::task::spawn_blocking(move || {
        let mut args: Vec<&str> = seeds.iter().map(|s| s.as_str()).collect();
        args.extend(["--paused", "--max-pages", "3", "--traps", "alert-only"]);
        let mut ui = in_terminal(&args, &data);
        ui.wait_for("the paused crawl", |s| s.contains("PAUSED"));
        let engine_pid = status(&data).pid;
        let _cleanup = KillPid(engine_pid);
        ui.press(b"p");
        ui.wait_for("the finished crawl", |s| s.contains(" FINISHED "));
        wait_until("the engine reaped by its parent", || {
            !in_process_table(engine_pid)
        });
        ui.press(b"p");
        ui.wait_for("the refusal", |s| {
            s.contains("the crawl has finished; nothing to steer")
        });
        ui.press(b"\x03");
        ui.wait_exit("Ctrl-C");
        ui.read_to_end();
        let said = ui.text();
        assert!(!said.contains("runs on"), "{said}");
        assert!(said.contains("the crawl finished"), "{said}");
    })
    .await
    .unwrap();
    demo.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crawldeck_url_after_kill_9_of_its_engine_shows_it_gone_and_refuses_commands() {
    let demo = common::start_demo(vec![SiteKind::Shop]).await;
    let seeds: Vec<String> = demo.seeds().iter().map(|u| u.to_string()).collect();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("c1");
    tokio::task::spawn_blocking(move || {
        let mut args: Vec<&str> = seeds.iter().map(|s| s.as_str()).collect();
        args.push("--paused");
        let mut ui = in_terminal(&args, &data);
        ui.wait_for("the paused crawl", |s| s.contains("PAUSED"));
        let engine_pid = status(&data).pid;
        drop(KillPid(engine_pid)); // kill -9
        ui.wait_for("the engine gone", |s| {
            s.contains(" GONE ") && s.contains("ENGINE GONE: ")
        });
        // The header's state word, not the log, which keeps "crawl PAUSED".
        let header = ui.text().lines().next().unwrap_or_default().to_string();
        assert!(!header.contains("PAUSED"), "{}", ui.text());
        wait_until("the engine reaped by its parent", || {
            !in_process_table(engine_pid)
        });
        ui.press(b":throttle * 1s\r");
        ui.wait_for("the refusal", |s| s.contains("ERROR engine gone: "));
        ui.press(b"\x03");
        ui.wait_exit("Ctrl-C");
        ui.read_to_end();
        let said = ui.text();
        assert!(!said.contains("runs on"), "{said}");
        assert!(said.contains("engine gone ("), "{said}");
        assert!(said.contains("signal: 9"), "{said}");
    })
    .await
    .unwrap();
    demo.shutdown().await;
}
