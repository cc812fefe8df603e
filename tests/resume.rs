//! Stopping a crawl in the middle, then resuming it: the same pages are
//! reached and nothing is lost. After `kill -9` only what was leased (in
//! flight, or answered and not yet written) is fetched again; after Ctrl-C
//! (SIGINT) the crawl checkpoints and nothing is; after a write fails (a
//! real file-size limit) the run exits 1 with the reason.

use crate::common;

use std::collections::{HashMap, HashSet};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{crawl, start_demo, test_config};
use crawldeck::demo::{RequestRecord, SiteKind};

fn page_requests(records: &[RequestRecord]) -> Vec<(SiteKind, String)> {
    records
        .iter()
        .filter(|r| r.path_and_query != "/robots.txt")
        .map(|r| (r.site, r.path_and_query.clone()))
        .collect()
}

/// A headless crawl of `seeds` (none: resume) in `dir`, fast but polite.
pub(crate) fn crawl_command(dir: &std::path::Path, seeds: &[String]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_crawldeck"));
    cmd.args([
        "crawl",
        "--headless",
        "--delay",
        "20ms",
        "--delay-factor",
        "0",
    ])
    .arg("--data")
    .arg(dir)
    .args(seeds)
    .stdout(Stdio::null());
    cmd
}

#[derive(Clone, Copy, Debug)]
enum Stop {
    Kill,
    Interrupt,
}

/// The pages a clean, uninterrupted crawl of `sites` requests.
async fn reference_requests(sites: &[SiteKind]) -> HashSet<(SiteKind, String)> {
    let demo = start_demo(sites.to_vec()).await;
    let dir = tempfile::tempdir().unwrap();
    crawl(test_config(&demo), dir.path()).await;
    let reference = page_requests(&demo.log().records()).into_iter().collect();
    demo.shutdown().await;
    reference
}

/// Runs a command to its end, killed by its pid if it outlives `limit`.
pub(crate) async fn run_bounded(mut cmd: Command, limit: Duration) -> std::process::Output {
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts");
    let pid = child.id().to_string();
    let waited = tokio::task::spawn_blocking(move || child.wait_with_output());
    match tokio::time::timeout(limit, waited).await {
        Ok(output) => output.unwrap().expect("waits"),
        Err(_) => {
            let _ = Command::new("kill").args(["-KILL", &pid]).status();
            panic!("{cmd:?} ran past {limit:?}");
        }
    }
}

/// Crawls, stops the process a third of the way in, resumes it to the end,
/// and returns the pages fetched more than once.
async fn stop_and_resume(stop: Stop) -> Vec<((SiteKind, String), usize)> {
    let sites = vec![SiteKind::Shop, SiteKind::DeepFinite];
    let reference = reference_requests(&sites).await;

    let demo = start_demo(sites).await;
    let dir = tempfile::tempdir().unwrap();
    let seeds: Vec<String> = demo.seeds().iter().map(|u| u.to_string()).collect();
    let mut first = crawl_command(dir.path(), &seeds)
        .stderr(Stdio::null())
        .spawn()
        .expect("crawldeck starts");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while page_requests(&demo.log().records()).len() < reference.len() / 3 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "first run made no progress"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    match stop {
        Stop::Kill => first.kill().expect("SIGKILL"),
        Stop::Interrupt => {
            let sent = Command::new("kill")
                .args(["-INT", &first.id().to_string()])
                .status()
                .expect("kill -INT");
            assert!(sent.success());
        }
    }
    let status = tokio::task::spawn_blocking(move || first.wait().unwrap())
        .await
        .unwrap();
    if let Stop::Interrupt = stop {
        assert!(
            status.success(),
            "Ctrl-C checkpoints and exits 0: {status:?}"
        );
    }

    let resumed = tokio::task::spawn_blocking({
        let dir = dir.path().to_path_buf();
        move || {
            crawl_command(&dir, &[])
                .stderr(Stdio::piped())
                .output()
                .expect("resume runs")
        }
    });
    let output = tokio::time::timeout(Duration::from_secs(120), resumed)
        .await
        .expect("resumed crawl ends")
        .unwrap();
    assert!(
        output.status.success(),
        "resume failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let all = page_requests(&demo.log().records());
    demo.shutdown().await;

    let reached: HashSet<_> = all.iter().cloned().collect();
    let missing: Vec<_> = reference.difference(&reached).collect();
    assert!(
        missing.is_empty(),
        "{stop:?}: lost after resume: {missing:?}"
    );
    let mut counts: HashMap<(SiteKind, String), usize> = HashMap::new();
    for r in all {
        *counts.entry(r).or_default() += 1;
    }
    counts.into_iter().filter(|(_, n)| *n > 1).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_nine_then_resume_refetches_only_what_was_leased() {
    let again = stop_and_resume(Stop::Kill).await;
    // Two hosts, each with at most one request in flight and one answered
    // page waiting for its group's write: a small group waits only while a
    // request is in flight (group_commit.rs), and a host's next request
    // comes 20 ms after its answer.
    assert!(again.len() <= 4, "fetched again after resume: {again:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_checkpoints_and_resume_fetches_nothing_twice() {
    let again = stop_and_resume(Stop::Interrupt).await;
    assert!(again.is_empty(), "fetched again after resume: {again:?}");
}

/// The size of the largest file under `dir` in KiB, the index's preallocated
/// journals (`*.jnl`, written from their start) left out.
fn largest_file_kib(dir: &std::path::Path) -> u64 {
    let mut largest = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let meta = entry.metadata().unwrap();
        if meta.is_dir() {
            largest = largest.max(largest_file_kib(&entry.path()));
        } else if !entry.file_name().to_string_lossy().ends_with(".jnl") {
            largest = largest.max(meta.len().div_ceil(1024));
        }
    }
    largest
}

/// A write the disk refuses, for real: under `ulimit -f` a file cannot grow
/// past the limit (EFBIG; SIGXFSZ ignored, as the shell passes it on).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_the_disk_refuses_exits_1_with_the_reason_and_resume_loses_nothing() {
    let sites = vec![SiteKind::Shop, SiteKind::DeepFinite];
    let reference = reference_requests(&sites).await;
    let demo = start_demo(sites).await;
    let dir = tempfile::tempdir().unwrap();
    let seeds: Vec<String> = demo.seeds().iter().map(|u| u.to_string()).collect();
    // The index's journal is a 64 MiB (sparse) file made with the index: the
    // crawl starts without the limit, stops after a few pages, and goes on
    // with no file allowed past 1 MiB more than the largest holds (the WARC
    // file and the index's tables grow past it).
    let mut start = crawl_command(dir.path(), &seeds);
    start.args(["--max-pages", "5"]);
    let started = run_bounded(start, Duration::from_secs(120)).await;
    assert!(
        started.status.success(),
        "{}",
        String::from_utf8_lossy(&started.stderr)
    );
    let at_start = page_requests(&demo.log().records()).len();
    let mut crawl = crawl_command(dir.path(), &[]);
    crawl.args(["--max-pages", "0"]);
    let mut limited = Command::new("sh");
    limited
        .arg("-c")
        .arg(format!(
            r#"trap '' XFSZ; ulimit -f {}; exec "$0" "$@""#,
            largest_file_kib(dir.path()) + 1024
        ))
        .arg(crawl.get_program())
        .args(crawl.get_args());
    let first = run_bounded(limited, Duration::from_secs(120)).await;
    let err = String::from_utf8_lossy(&first.stderr);
    assert_eq!(first.status.code(), Some(1), "{err}");
    assert!(err.contains("storage fault"), "{err}");
    assert!(err.contains("File too large"), "names the error: {err}");
    assert!(
        err.contains(&dir.path().display().to_string()),
        "names the path: {err}"
    );
    let before = page_requests(&demo.log().records()).len();
    assert!(
        at_start < before && before < reference.len(),
        "refused mid-crawl: {at_start} pages before the limit, {before} when it stopped, of {}",
        reference.len()
    );

    let mut resume = crawl_command(dir.path(), &[]);
    resume.args(["--max-pages", "0"]);
    let resumed = run_bounded(resume, Duration::from_secs(120)).await;
    assert!(
        resumed.status.success(),
        "resume failed: {}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    let reached: HashSet<_> = page_requests(&demo.log().records()).into_iter().collect();
    demo.shutdown().await;
    let missing: Vec<_> = reference.difference(&reached).collect();
    assert!(missing.is_empty(), "lost after the fault: {missing:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_budget_holds_across_kill_nine() {
    const BUDGET: usize = 40;
    let demo = start_demo(vec![SiteKind::Shop, SiteKind::DeepFinite]).await;
    let dir = tempfile::tempdir().unwrap();
    let seeds: Vec<String> = demo.seeds().iter().map(|u| u.to_string()).collect();
    let pages = || {
        page_requests(&demo.log().records())
            .into_iter()
            .filter(|(_, path)| !path.contains("crawldeck-probe"))
            // A host's sitemap file is no page of the budget.
            .filter(|(_, path)| path != "/sitemap.xml")
            .count()
    };
    // Resource checks (the shop's images) are no pages of the budget, and
    // how many precede the budget's end varies: left out, so every request
    // counted is a page.
    let mut first = crawl_command(dir.path(), &seeds)
        .args(["--max-pages", &BUDGET.to_string(), "--resources", "off"])
        .stderr(Stdio::null())
        .spawn()
        .expect("crawldeck starts");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while pages() < BUDGET / 2 {
        assert!(tokio::time::Instant::now() < deadline, "no progress");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    first.kill().expect("SIGKILL");
    tokio::task::spawn_blocking(move || first.wait().unwrap())
        .await
        .unwrap();

    let mut resume = crawl_command(dir.path(), &[]);
    resume.args(["--resources", "off"]);
    let resumed = run_bounded(resume, Duration::from_secs(120)).await;
    let err = String::from_utf8_lossy(&resumed.stderr);
    assert!(resumed.status.success(), "{err}");
    assert!(err.contains("page limit reached (40)"), "{err}");
    // The pages leased at the kill (two a host at most: one in flight, one
    // answered and waiting for its group's write) may be fetched again.
    let fetched = pages();
    demo.shutdown().await;
    assert!(
        fetched <= BUDGET + 4,
        "{fetched} pages fetched for a budget of {BUDGET}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_resumes_a_paused_crawl_leaves_it_running() {
    use crawldeck::engine::{EngineOptions, RunOverrides};

    let demo = start_demo(vec![SiteKind::Shop]).await;
    let dir = tempfile::tempdir().unwrap();
    let mut starts = Vec::new();
    for paused in [Some(true), Some(false), None] {
        let options = EngineOptions {
            overrides: RunOverrides {
                paused,
                ..RunOverrides::default()
            },
            ..EngineOptions::default()
        };
        // Stopped as by a signal: no command, so no settings saved after one.
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let signal = async move {
            let _ = stopped.await;
        };
        let running =
            crawldeck::engine::start_with(test_config(&demo), dir.path(), signal, options)
                .await
                .expect("engine starts");
        starts.push(running.settings[0].clone());
        stop.send(()).unwrap();
        tokio::time::timeout(common::CRAWL_LIMIT, running.done)
            .await
            .expect("the engine stops")
            .unwrap()
            .unwrap();
    }
    demo.shutdown().await;
    assert_eq!(starts[0], "paused (given for this run)");
    assert!(
        starts[1].starts_with("running (the last run was left paused"),
        "{starts:?}"
    );
    assert_eq!(starts[2], "running", "the second run left it running");
}

/// A first start the disk refuses (the index's 64 MiB journal under `ulimit
/// -f 3000`) exits 1, and keeps the seeds it was given: the next run with
/// `--data` alone crawls them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_start_that_fails_keeps_its_seeds_for_the_next_run() {
    let demo = start_demo(vec![SiteKind::Shop]).await;
    let dir = tempfile::tempdir().unwrap();
    let seed = demo.seeds()[0].to_string();
    let crawl = crawl_command(dir.path(), std::slice::from_ref(&seed));
    let mut limited = Command::new("sh");
    limited
        .arg("-c")
        .arg(r#"trap '' XFSZ; ulimit -f 3000; exec "$0" "$@""#)
        .arg(crawl.get_program())
        .args(crawl.get_args());
    let first = run_bounded(limited, Duration::from_secs(60)).await;
    let err = String::from_utf8_lossy(&first.stderr);
    assert_eq!(first.status.code(), Some(1), "{err}");
    let stored = std::fs::read_to_string(dir.path().join("crawl.toml")).unwrap_or_default();
    assert!(
        stored.contains(&seed),
        "crawl.toml keeps the seed: {stored}"
    );

    let mut resume = crawl_command(dir.path(), &[]);
    resume.args(["--max-pages", "3"]);
    let resumed = run_bounded(resume, Duration::from_secs(60)).await;
    let err = String::from_utf8_lossy(&resumed.stderr);
    assert!(resumed.status.success(), "{err}");
    let fetched = page_requests(&demo.log().records()).len();
    demo.shutdown().await;
    assert!(fetched > 0, "the seed was crawled on resume: {err}");
    assert!(err.contains("page limit reached (3)"), "{err}");
}

/// A data directory with no seeds, nothing queued and nothing fetched (what
/// a failed first start left before its seeds were kept) is refused with the fix.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resuming_a_crawl_with_no_seeds_and_nothing_queued_exits_2_naming_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    crawldeck::engine::config::CrawlConfig::default()
        .save(&dir.path().join("crawl.toml"))
        .unwrap();
    let resumed = run_bounded(crawl_command(dir.path(), &[]), Duration::from_secs(60)).await;
    let err = String::from_utf8_lossy(&resumed.stderr);
    assert_eq!(resumed.status.code(), Some(2), "{err}");
    let fix = format!(
        "crawldeck crawl --headless URL --data {}",
        dir.path().display()
    );
    assert!(err.contains("no seeds and nothing queued"), "{err}");
    assert!(err.contains(&fix), "names the fix: {err}");
}

/// `pages fetched N` and `responses 2xx a | 3xx b | 4xx c | 5xx d | …` of a
/// headless summary.
fn summary_figures(summary: &str) -> (u64, u64) {
    let number = |line: &str, after: &str| -> u64 {
        let rest = &line[line.find(after).expect(after) + after.len()..];
        let digits: String = rest
            .trim_start()
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().expect("a number")
    };
    let pages = summary
        .lines()
        .find(|l| l.trim_start().starts_with("pages fetched"))
        .map(|l| number(l, "pages fetched"))
        .expect("pages line");
    let line = summary
        .lines()
        .find(|l| l.trim_start().starts_with("responses"))
        .expect("responses line");
    let answered = ["2xx", "3xx", "4xx", "5xx"]
        .iter()
        .map(|class| number(line, class))
        .sum();
    (pages, answered)
}

/// After `kill -9`, the resumed crawl lists every host it met with the
/// figures stored before the kill, before it fetches anything; host rows add
/// up to the crawl's figures, and so does the final summary.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_kill_nine_every_host_comes_back_with_figures_that_add_up() {
    use crawldeck::engine::telemetry::CrawlState;
    use crawldeck::engine::{EngineOptions, RunOverrides};

    let demo = start_demo(vec![SiteKind::Shop, SiteKind::DeepFinite]).await;
    let dir = tempfile::tempdir().unwrap();
    let seeds: Vec<String> = demo.seeds().iter().map(|u| u.to_string()).collect();
    let mut first = crawl_command(dir.path(), &seeds)
        .stderr(Stdio::null())
        .spawn()
        .expect("crawldeck starts");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while page_requests(&demo.log().records()).len() < 20 {
        assert!(tokio::time::Instant::now() < deadline, "no progress");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    first.kill().expect("SIGKILL");
    tokio::task::spawn_blocking(move || first.wait().unwrap())
        .await
        .unwrap();

    // Resumed paused: what it shows is what was stored.
    let options = EngineOptions {
        overrides: RunOverrides {
            paused: Some(true),
            ..RunOverrides::default()
        },
        ..EngineOptions::default()
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let signal = async move {
        let _ = stopped.await;
    };
    let mut running =
        crawldeck::engine::start_with(test_config(&demo), dir.path(), signal, options)
            .await
            .expect("engine starts");
    let snap = tokio::time::timeout(
        common::CRAWL_LIMIT,
        running
            .handle
            .snapshots
            .wait_for(|s| s.state == CrawlState::Paused),
    )
    .await
    .expect("a snapshot")
    .expect("the engine runs")
    .clone();
    stop.send(()).unwrap();
    tokio::time::timeout(common::CRAWL_LIMIT, running.done)
        .await
        .expect("the engine stops")
        .unwrap()
        .unwrap();
    let c = &snap.counters;
    let hosts: Vec<&str> = snap.hosts.iter().map(|h| h.host.as_str()).collect();
    for seed in demo.seeds() {
        let met = crawldeck::engine::url_norm::host_key(&seed);
        assert!(
            hosts.contains(&met.as_str()),
            "{met} is a row at once: {hosts:?}"
        );
    }
    assert!(c.pages_fetched > 0);
    let rows: u64 = snap.hosts.iter().map(|h| h.fetched).sum();
    assert_eq!(rows, c.pages_fetched, "host rows add up to the header");
    assert_eq!(c.responses.answered(), c.pages_fetched, "{c:?}");
    for h in &snap.hosts {
        assert_eq!(h.status.answered(), h.fetched, "{h:?}");
    }

    let resumed = run_bounded(crawl_command(dir.path(), &[]), Duration::from_secs(120)).await;
    let err = String::from_utf8_lossy(&resumed.stderr);
    demo.shutdown().await;
    assert!(resumed.status.success(), "{err}");
    let (pages, answered) = summary_figures(&err);
    assert!(pages > c.pages_fetched, "{err}");
    assert_eq!(pages, answered, "the summary's classes sum up: {err}");
}
