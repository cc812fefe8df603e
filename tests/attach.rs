//! Attach and detach, end to end: a real headless crawl process of the demo
//! web, steered by viewers over its control socket and by `status`/`ctl`.
//! Every process started here is killed by pid when the test ends; waits
//! poll with a deadline.

use crate::common;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::Killed;
use std::sync::Arc;
use std::time::Duration;

use common::start_demo;
use crawldeck::control::client::{self, Connection};
use crawldeck::demo::SiteKind;
use crawldeck::engine::control::{Command as EngineCommand, Target};
use crawldeck::engine::host_window::{HostWindow, MAX_WINDOW_ROWS};
use crawldeck::engine::telemetry::{CrawlState, EngineEvent, Snapshot};
use crawldeck::engine::url_norm::host_key;
use crawldeck::remote::StatusReport;
use tokio::sync::watch;
use tokio::time::Instant;

const WAIT: Duration = Duration::from_secs(60);

fn binary() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_crawldeck"));
    cmd.env_remove("RUST_LOG");
    cmd
}

/// A paused headless crawl of `seeds` in `dir`, fast but polite.
fn start_engine(dir: &Path, seeds: &[String]) -> Killed {
    let child = binary()
        .args(["crawl", "--headless", "--paused", "--delay", "20ms"])
        .args(["--delay-factor", "0", "--traps", "alert-only", "--data"])
        .arg(dir)
        .args(seeds)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("crawldeck starts");
    Killed(child)
}

fn run(args: &[&str], dir: &Path) -> Output {
    binary()
        .args(&args[..1])
        .arg(dir)
        .args(&args[1..])
        .output()
        .expect("the binary runs")
}

/// Connects once the engine listens.
async fn connect(dir: &Path, read_only: bool) -> Connection {
    let deadline = Instant::now() + WAIT;
    loop {
        match client::connect(dir, read_only).await {
            Ok(c) => return c,
            Err(e) => assert!(Instant::now() < deadline, "engine never listened: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A window on the whole hosts list.
fn every_host() -> HostWindow {
    HostWindow {
        rows: MAX_WINDOW_ROWS,
        ..HostWindow::default()
    }
}

/// Waits until a viewer's snapshot satisfies `pred`.
async fn until(
    snapshots: &mut watch::Receiver<Arc<Snapshot>>,
    what: &str,
    pred: impl Fn(&Snapshot) -> bool,
) {
    let wait = snapshots.wait_for(|s| pred(s));
    match tokio::time::timeout(WAIT, wait).await {
        Ok(Ok(_)) => {}
        Ok(Err(_)) => panic!("engine gone before {what}"),
        Err(_) => panic!("timed out waiting for {what}"),
    }
}

/// Polls `pred` until it holds.
async fn poll(what: &str, pred: impl Fn() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !pred() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_viewers_steer_one_crawl_and_it_outlives_them() {
    let demo = start_demo(vec![SiteKind::Shop, SiteKind::Calendar]).await;
    let seeds: Vec<String> = demo.seeds().iter().map(|u| u.to_string()).collect();
    let shop = host_key(&demo.seeds()[0]);
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("c1");
    let engine = start_engine(&data, &seeds);
    let engine_pid = engine.0.id();

    let a = connect(&data, false).await;
    let b = connect(&data, false).await;
    assert_eq!((a.pid, b.pid), (engine_pid, engine_pid));
    let (a_viewer, b_viewer) = (a.viewer, b.viewer);
    let (a, _) = a.into_handle();
    let (mut b, _) = b.into_handle();
    // Each asks for every host: snapshots carry only the hosts a viewer shows.
    a.control.set_window(every_host());
    b.control.set_window(every_host());
    let mut a_snaps = a.snapshots.clone();
    until(&mut b.snapshots, "the paused start", |s| {
        s.state == CrawlState::Paused
    })
    .await;

    // One viewer blacklists and throttles; both see it.
    let rule = crawldeck::tui::command::parse(r"blacklist calendar/\d{4}").unwrap();
    let crawldeck::tui::command::CommandLine::Engine(rule) = rule else {
        panic!("a command")
    };
    a.control.send(rule);
    a.control.send(EngineCommand::SetHostDelay {
        host: shop.clone(),
        delay: Some(Duration::from_millis(300)),
    });
    let steered = |s: &Snapshot| {
        s.rules.iter().any(|r| r.spec.pattern == r"calendar/\d{4}")
            && s.hosts
                .iter()
                .any(|h| h.host == shop && h.delay_override == Some(Duration::from_millis(300)))
    };
    until(&mut a_snaps, "the rule and throttle, viewer a", steered).await;
    until(&mut b.snapshots, "the rule and throttle, viewer b", steered).await;
    // The other viewer's log names who did it.
    let announced = format!("viewer {a_viewer}: add rule calendar/\\d{{4}}");
    let deadline = Instant::now() + WAIT;
    loop {
        let event = tokio::time::timeout_at(deadline, b.events.recv()).await;
        match event
            .expect("the announcement arrives")
            .expect("events open")
        {
            EngineEvent::Log { message, .. } if message == announced => break,
            _ => {}
        }
    }
    assert_ne!(a_viewer, b_viewer);

    // Resume; the request log shows the rule and the throttle at work.
    a.control.send(EngineCommand::Resume(Target::Global));
    until(&mut b.snapshots, "running", |s| {
        s.state == CrawlState::Running
    })
    .await;
    let shop_pages = || {
        demo.log()
            .for_site(SiteKind::Shop)
            .into_iter()
            .filter(|r| r.path_and_query != "/robots.txt")
            .collect::<Vec<_>>()
    };
    poll("calendar index and four shop pages", || {
        demo.log()
            .paths(SiteKind::Calendar)
            .iter()
            .any(|p| p == "/")
            && shop_pages().len() >= 4
    })
    .await;
    a.control.send(EngineCommand::Pause(Target::Global));
    until(&mut b.snapshots, "paused again", |s| {
        s.state == CrawlState::Paused
    })
    .await;
    let calendar = demo.log().paths(SiteKind::Calendar);
    assert!(
        !calendar.iter().any(|p| p.starts_with("/calendar/")),
        "blacklisted URLs were fetched: {calendar:?}"
    );
    let starts: Vec<_> = shop_pages().iter().map(|r| r.started).collect();
    for pair in starts.windows(2) {
        let gap = pair[1] - pair[0];
        assert!(
            gap >= Duration::from_millis(290),
            "shop requests {gap:?} apart"
        );
    }

    // `status --json` from another process says the same.
    let out = run(&["status", "--json"], &data);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: StatusReport = serde_json::from_slice(&out.stdout).expect("status --json parses");
    assert_eq!(report.state, "PAUSED");
    assert_eq!(report.pid, engine_pid);
    let rules: Vec<_> = report
        .rules
        .iter()
        .map(|r| (r.kind.as_str(), r.pattern.as_str(), r.host.as_deref()))
        .collect();
    assert_eq!(rules, vec![("regex", r"calendar/\d{4}", None)]);
    assert!(report.rules[0].id >= 1, "the number unrule takes");
    let seen = b.snapshots.borrow().clone();
    assert!(
        report.pages >= shop_pages().len() as u64 - 1
            && report.pages <= seen.counters.pages_fetched + 1
    );

    // `ctl` with a bad regex exits non-zero with the regex error; a good one prints the answer.
    let out = run(&["ctl", "blacklist", "cal("], &data);
    assert_ne!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("invalid regex \"cal(\""), "{err}");
    // `ctl preview` answers what a rule would match, one fact per line, adding nothing.
    let out = run(&["ctl", "preview", "glob:*/*", &shop], &data);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let mut lines = text.lines();
    let head = lines.next().unwrap_or_default();
    assert!(head.starts_with("glob */* on "), "{text}");
    assert!(
        head.contains(" fetched URL(s)") && !head.contains(" 0 fetched"),
        "{text}"
    );
    assert!(
        lines.any(|l| l.starts_with(&format!("  {shop}: "))),
        "{text}"
    );
    let out = run(&["ctl", "pause", &shop], &data);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.stdout.is_empty());

    // A viewer that leaves changes nothing; coming back shows the current state.
    drop(b);
    let again = connect(&data, true).await;
    let (mut again, _) = again.into_handle();
    again.control.set_window(every_host());
    until(&mut again.snapshots, "the state after re-attaching", |s| {
        s.state == CrawlState::Paused
            && steered(s)
            && s.hosts.iter().any(|h| h.host == shop && h.paused)
    })
    .await;

    // A second crawl on the same directory is refused, naming the running one.
    let out = binary()
        .args(["crawl", "--headless", "--data"])
        .arg(&data)
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    let expected = format!(
        "a crawl is running in {0} (pid {engine_pid}); attach with `crawldeck attach {0}`",
        data.display()
    );
    assert!(err.contains(&expected), "{err}");
    drop(a);
    drop(again);
    drop(engine);
    demo.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_engine_leaves_nothing_that_blocks_the_next_start() {
    let demo = start_demo(vec![SiteKind::Shop]).await;
    let seeds: Vec<String> = demo.seeds().iter().map(|u| u.to_string()).collect();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("c1");
    let engine = start_engine(&data, &seeds);
    let pid = engine.0.id();
    drop(connect(&data, true).await);
    drop(engine); // SIGKILL: no chance to clean up.
    assert!(
        data.join("control.sock").exists(),
        "the dead engine's socket is left"
    );

    let out = run(&["status"], &data);
    assert_ne!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("its engine (pid {pid}) has exited")),
        "{err}"
    );

    // The next engine on the directory starts, and answers on a fresh socket.
    let engine = start_engine(&data, &[]);
    let c = connect(&data, true).await;
    assert_eq!(c.pid, engine.0.id());
    let (mut c, _) = c.into_handle();
    until(&mut c.snapshots, "the resumed crawl, paused", |s| {
        s.state == CrawlState::Paused
    })
    .await;
    drop(engine);
    demo.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crawl_deeper_than_a_socket_address_holds_is_steered_and_listed() {
    let demo = start_demo(vec![SiteKind::Shop]).await;
    let seeds: Vec<String> = demo.seeds().iter().map(|u| u.to_string()).collect();
    let dir = tempfile::tempdir().unwrap();
    let mut data = dir.path().to_path_buf();
    while data.join("control.sock").as_os_str().len() <= 108 {
        data.push("a-directory-with-a-long-name");
    }
    let engine = start_engine(&data, &seeds);
    assert_eq!(connect(&data, true).await.pid, engine.0.id());

    let out = run(&["ctl", "resume"], &data);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    poll("pages fetched", || {
        let out = run(&["status", "--json"], &data);
        serde_json::from_slice::<StatusReport>(&out.stdout).is_ok_and(|r| r.pages >= 3)
    })
    .await;
    // Listings of the running crawl go through its control socket.
    let out = run(&["pages", "--json"], &data);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).lines().count() >= 3);
    drop(engine);
    demo.shutdown().await;
}

#[test]
fn ctl_speaks_the_command_line_grammar_and_names_a_missing_engine() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&["ctl", "help"], dir.path());
    assert_eq!(out.status.code(), Some(0));
    let help = String::from_utf8_lossy(&out.stdout);
    for line in [
        "blacklist REGEX [HOST]",
        "throttle HOST|* DURATION|off",
        "stop",
    ] {
        assert!(help.lines().any(|l| l == line), "{line} missing:\n{help}");
    }
    let out = run(&["ctl", "freeze"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    let out = run(&["ctl", "pause"], dir.path());
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no crawl is running in"), "{err}");
    assert!(err.contains("crawldeck crawl --headless --data"), "{err}");
}
