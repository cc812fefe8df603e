//! The quarantine in a headless crawl's results, through the real binary: a
//! crawl of the demo's archive trap ends with only parked URLs, its summary
//! names per alert what it parked and the commands that decide it, `pages
//! --fate parked` lists them with their alert and found-on page, and the
//! printed release command, run as printed, fetches them. A crawl waiting
//! for the operator lists them through its control socket. Under `--traps
//! alert-only` the alerts show in `status` and in the summary.

use std::collections::HashSet;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crawldeck::demo::SiteKind;
use serde_json::Value;

/// A headless crawl of `args` in `dir`, fast but polite, text on stderr.
fn crawl(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_crawldeck"))
        .args([
            "crawl",
            "--headless",
            "--delay",
            "2ms",
            "--delay-factor",
            "0",
        ])
        .args(["--max-depth", "1000", "--data"])
        .arg(dir)
        .args(args)
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .expect("the binary runs")
}

/// Runs a command line the summary printed (its first word is `crawldeck`).
fn run_printed(line: &str, extra: &[&str]) -> Output {
    let words: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(words[0], "crawldeck", "{line}");
    Command::new(env!("CARGO_BIN_EXE_crawldeck"))
        .args(&words[1..])
        .args(extra)
        .env_remove("RUST_LOG")
        .output()
        .expect("the binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// What follows `label` on the line that holds it.
fn after<'a>(summary: &'a str, label: &str) -> &'a str {
    let line = summary
        .lines()
        .find(|l| l.contains(label))
        .unwrap_or_else(|| panic!("no {label:?} in\n{summary}"));
    line.split_once(label).unwrap().1.trim()
}

fn json_lines(out: &Output) -> Vec<Value> {
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parked_urls_are_listed_with_their_alert_and_released_by_the_printed_command() {
    let demo = crate::common::start_demo(vec![SiteKind::Archive]).await;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("c1");
    let seed = demo.base_url(SiteKind::Archive).to_string();
    let (first, data2) = (data.clone(), data.clone());
    let out = tokio::task::spawn_blocking(move || crawl(&first, &[&seed]))
        .await
        .unwrap();
    let summary = text(&out.stderr);
    assert!(out.status.success(), "{summary}");
    assert!(
        summary.contains("only quarantined URLs remain"),
        "{summary}"
    );

    let list = after(&summary, "parked URL(s): ").to_string();
    let release = after(&summary, "release them (fetch): ").to_string();
    let id: u64 = release.rsplit(' ').next().unwrap().parse().unwrap();
    let count: usize = after(&summary, "      its ")
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(count > 0, "{summary}");
    assert!(list.ends_with(&format!("--by alert:{id}")), "{list}");

    let parked = tokio::task::spawn_blocking(move || {
        let parked = json_lines(&run_printed(&list, &["--json"]));
        let all = json_lines(&run_printed(
            &format!("crawldeck pages {}", data2.display()),
            &["--json"],
        ));
        (parked, all)
    })
    .await
    .unwrap();
    let (parked, all) = parked;
    assert_eq!(parked.len(), count, "{parked:?}");
    for row in &parked {
        assert_eq!(row["fate"], "parked", "{row}");
        assert_eq!(row["alert"], id, "{row}");
        assert_eq!(row["reason"], format!("trap alert {id}"), "{row}");
        let found_on = row["referrers"][0].as_str().expect("a found-on page");
        assert!(found_on.contains("/archive/"), "{row}");
        assert!(
            row["url"].as_str().unwrap().contains("/archive/tag-"),
            "{row}"
        );
    }
    let parked_in_all = all.iter().filter(|r| r["fate"] == "parked").count();
    assert_eq!(parked_in_all, count, "the plain listing has them too");
    let parked_urls: HashSet<String> = parked
        .iter()
        .map(|r| r["url"].as_str().unwrap().to_string())
        .collect();

    // The trap is endless once released: a page budget bounds the test's run.
    let pages = all.iter().filter(|r| r["fate"] == "fetched").count();
    let budget = (pages + 20).to_string();
    let released =
        tokio::task::spawn_blocking(move || run_printed(&release, &["--max-pages", &budget]))
            .await
            .unwrap();
    let said = text(&released.stderr);
    assert!(released.status.success(), "{said}");
    assert!(said.contains(&format!("alert #{id} dismissed")), "{said}");
    let base = demo.base_url(SiteKind::Archive);
    let fetched_after: Vec<String> = demo
        .log()
        .for_site(SiteKind::Archive)
        .iter()
        .map(|r| base.join(&r.path_and_query).unwrap().to_string())
        .filter(|u| parked_urls.contains(u))
        .collect();
    assert!(
        !fetched_after.is_empty(),
        "no parked URL was fetched: {said}"
    );
    demo.shutdown().await;
}

/// `status DIR --json` of the running crawl in `dir`, once it answers.
fn status(dir: &Path) -> Option<Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_crawldeck"))
        .args(["status", "--json"])
        .arg(dir)
        .output()
        .expect("the binary runs");
    out.status
        .success()
        .then(|| serde_json::from_slice(&out.stdout).expect("status is JSON"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alert_only_alerts_show_in_status_and_in_the_summary() {
    let demo = crate::common::start_demo(vec![SiteKind::Archive]).await;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("c1");
    let seed = demo.base_url(SiteKind::Archive).to_string();
    let checked = tokio::task::spawn_blocking(move || {
        // Slow enough to be asked while it runs; the trap is endless, so a budget ends it.
        let child = Command::new(env!("CARGO_BIN_EXE_crawldeck"))
            .args([
                "crawl",
                "--headless",
                "--traps",
                "alert-only",
                "--delay",
                "5ms",
            ])
            .args([
                "--delay-factor",
                "0",
                "--max-depth",
                "1000",
                "--max-pages",
                "600",
            ])
            .arg("--data")
            .arg(&data)
            .arg(&seed)
            .env_remove("RUST_LOG")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the binary runs");
        let started = std::time::Instant::now();
        let noted = loop {
            let noted = status(&data).map(|s| s["noted_alerts"].clone());
            if let Some(Value::Array(list)) =
                noted.filter(|n| n.as_array().is_some_and(|a| !a.is_empty()))
            {
                break list;
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "no noted alert"
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        let out = child.wait_with_output().expect("the crawl ends");
        (noted, text(&out.stderr), out.status.success())
    })
    .await
    .unwrap();
    let (noted, summary, ok) = checked;
    assert!(ok, "{summary}");
    assert_eq!(noted[0]["kind"], "near duplicates", "{noted:?}");
    let heading =
        "trap alerts noted: 1 (--traps alert-only: nothing parked; their URLs were crawled)";
    assert!(summary.contains(heading), "{summary}");
    assert!(summary.contains("  #1 archive.localhost:"), "{summary}");
    assert!(!summary.contains("open trap alerts"), "{summary}");
    demo.shutdown().await;
}

/// While a crawl waits for the operator, its parked URLs are listed through
/// the engine's control socket, the store being locked by the engine.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_crawls_parked_urls_are_listed_through_its_engine() {
    use crawldeck::engine::control::Command as EngineCommand;
    let demo = crate::common::start_demo(vec![SiteKind::Archive]).await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = crate::common::test_config(&demo);
    cfg.politeness.min_delay = Duration::from_millis(2);
    cfg.max_depth = 1000;
    let options = crawldeck::engine::EngineOptions {
        wait_for_operator: true,
        ..Default::default()
    };
    let mut running =
        crawldeck::engine::start_with(cfg, dir.path(), std::future::pending(), options)
            .await
            .expect("engine starts");
    let _served = crate::common::serve_control(dir.path(), &mut running);
    let mut snapshots = running.handle.snapshots.clone();
    let waiting = |s: &crawldeck::engine::telemetry::Snapshot| {
        s.quarantined > 0 && s.frontier_size == 0 && s.in_flight == 0
    };
    tokio::time::timeout(crate::common::CRAWL_LIMIT, async {
        while !waiting(&snapshots.borrow()) {
            snapshots.changed().await.expect("engine runs");
        }
    })
    .await
    .expect("only parked URLs left within the limit");
    let parked_count = snapshots.borrow().quarantined as usize;
    let data = dir.path().to_path_buf();
    let listed = tokio::task::spawn_blocking(move || {
        assert!(
            data.join("control.sock").exists(),
            "the engine serves reads"
        );
        let line = format!("crawldeck pages {} --fate parked", data.display());
        json_lines(&run_printed(&line, &["--json"]))
    })
    .await
    .unwrap();
    assert_eq!(listed.len(), parked_count);
    assert!(listed
        .iter()
        .all(|r| r["fate"] == "parked" && r["referrers"][0].is_string()));

    running.handle.control.send(EngineCommand::Shutdown);
    tokio::time::timeout(crate::common::CRAWL_LIMIT, running.done)
        .await
        .expect("the crawl stops")
        .expect("no panic")
        .expect("no engine error");
    demo.shutdown().await;
}
