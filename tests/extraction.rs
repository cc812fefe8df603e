//! Custom extraction end to end: `--extract` on a headless crawl of the demo
//! shop, listed by `pages`; `ctl extract` on a running crawl, which applies to
//! pages fetched afterwards only and outlives a `kill -9`. Every process
//! started here is killed by pid; waits poll with a deadline.

use crate::common;

use std::collections::HashSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{json_lines, ok_stdout, run_binary, start_demo, Killed};
use crawldeck::demo::SiteKind;
use crawldeck::remote::StatusReport;
use serde_json::Value;
use tokio::time::Instant;

const WAIT: Duration = Duration::from_secs(60);
const FAST: [&str; 6] = [
    "--delay",
    "20ms",
    "--delay-factor",
    "0",
    "--traps",
    "alert-only",
];

/// Fetched HTML 200 pages of a `pages --json` listing.
fn html_pages(rows: &[Value]) -> Vec<&Value> {
    rows.iter()
        .filter(|r| {
            r["status"] == 200 && r["fate"] == "fetched" && r["content_type"] == "text/html"
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extract_flags_are_listed_as_columns_and_bad_ones_exit_2() {
    let demo = start_demo(vec![SiteKind::Shop]).await;
    let shop = demo.base_url(SiteKind::Shop).to_string();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("c").display().to_string();
    tokio::task::spawn_blocking(move || {
        for (bad, says) in [
            ("price=div[", "bad CSS selector"),
            ("9price=.p", "extraction name"),
            ("price", "NAME=CSS"),
        ] {
            let out = run_binary(&[
                "crawl",
                "--headless",
                &shop,
                "--data",
                &data,
                "--extract",
                bad,
            ]);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{bad}: {err}");
            assert!(err.contains(says), "{bad}: {err}");
            assert!(!Path::new(&data).exists(), "a refused start leaves nothing");
        }
        let mut args = vec![
            "crawl",
            "--headless",
            &shop,
            "--data",
            &data,
            "--max-pages",
            "25",
        ];
        args.extend(FAST);
        args.extend(["--extract", "heading=h1", "--extract", "logo=img@src"]);
        ok_stdout(&args);

        let rows = json_lines(&["pages", &data, "--json"]);
        let pages = html_pages(&rows);
        assert!(pages.len() >= 10, "{} HTML pages", pages.len());
        for page in &pages {
            let h1: Vec<&Value> = page["h1"]
                .as_str()
                .map(|_| &page["h1"])
                .into_iter()
                .collect();
            let heading: Vec<&Value> = page["extract"]["heading"]
                .as_array()
                .unwrap()
                .iter()
                .collect();
            assert_eq!(heading, h1, "{page}");
        }
        let logos = pages
            .iter()
            .filter(|p| p["extract"]["logo"][0] == "/img/logo.jpg")
            .count();
        assert!(logos > 0, "the shop's logo is an img@src value");
        let none = serde_json::json!([]);
        let without = rows.iter().filter(|r| r["extract"]["logo"] == none).count();
        assert!(
            rows.iter()
                .filter(|r| r["status"] != 200)
                .all(|r| r.get("extract").is_none()),
            "only HTML 2xx pages are evaluated"
        );

        let csv = ok_stdout(&["pages", &data, "--csv"]);
        let mut reader = csv::Reader::from_reader(csv.as_bytes());
        let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
        let at = |name: &str| {
            header
                .iter()
                .position(|h| h == name)
                .unwrap_or_else(|| panic!("{name} in {header:?}"))
        };
        let (h1, heading) = (at("h1"), at("extract.heading"));
        assert_eq!(at("extract.logo"), heading + 1);
        assert_eq!(at("extract_cut"), heading + 2);
        for record in reader.records() {
            let record = record.unwrap();
            assert_eq!(record[h1], record[heading], "{record:?}");
        }

        let missing = json_lines(&["pages", &data, "--json", "--extract-missing", "logo"]);
        assert!(!missing.is_empty());
        assert!(missing
            .iter()
            .all(|r| r["extract"]["logo"] == serde_json::json!([])));
        assert_eq!(missing.len(), without);
        let unknown = run_binary(&["pages", &data, "--extract-missing", "price"]);
        assert_eq!(unknown.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&unknown.stderr).contains("the crawl has heading, logo"));
    })
    .await
    .expect("checks pass");
    demo.shutdown().await;
}

/// `crawldeck ctl DIR WORDS…`.
fn ctl(data: &Path, words: &[&str]) -> std::process::Output {
    let dir = data.display().to_string();
    let args: Vec<&str> = ["ctl", dir.as_str()]
        .into_iter()
        .chain(words.iter().copied())
        .collect();
    run_binary(&args)
}

/// Polls `pred` until it holds.
async fn poll(what: &str, pred: impl Fn() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !pred() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_extraction_added_with_ctl_applies_from_then_on_and_survives_kill_9() {
    let demo = start_demo(vec![SiteKind::Shop]).await;
    let shop = demo.base_url(SiteKind::Shop).to_string();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("c");
    let data_arg = data.display().to_string();

    // A first run without extractions.
    let mut first_run = vec![
        "crawl",
        "--headless",
        &shop,
        "--data",
        &data_arg,
        "--max-pages",
        "12",
    ];
    first_run.extend(FAST);
    ok_stdout(&first_run);
    let before: HashSet<String> = json_lines(&["pages", &data_arg, "--json"])
        .iter()
        .map(|r| r["url"].as_str().unwrap().to_string())
        .collect();

    // The crawl resumed, paused: the extraction is added while it runs.
    let child = Command::new(env!("CARGO_BIN_EXE_crawldeck"))
        .args([
            "crawl",
            "--headless",
            "--paused",
            "--max-pages",
            "24",
            "--data",
        ])
        .arg(&data)
        .args(FAST)
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("crawldeck starts");
    let engine = std::sync::Mutex::new(Killed(child));
    poll("the engine's control socket", || {
        ctl(&data, &["checkpoint"]).status.success()
    })
    .await;
    let added = ctl(&data, &["extract", "heading=h1"]);
    let said = String::from_utf8_lossy(&added.stdout);
    assert!(added.status.success(), "{added:?}");
    assert!(said.contains("extraction heading=h1 added"), "{said}");
    let again = ctl(&data, &["extract", "heading=h2"]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("an extraction named heading exists"));
    let bad = ctl(&data, &["extract", "price=div["]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("bad CSS selector"));
    let stored = std::fs::read_to_string(data.join("crawl.toml")).unwrap();
    assert!(
        stored.contains("[[extract]]\nname = \"heading\"\nselector = \"h1\""),
        "{stored}"
    );

    assert!(ctl(&data, &["resume"]).status.success());
    // Pages fetched with the extraction, or the run already at its page
    // budget and gone (on a slow machine the poll may miss it running).
    poll("pages fetched with the extraction", || {
        let exited = engine.lock().unwrap().0.try_wait().unwrap().is_some();
        let status = run_binary(&["status", &data_arg, "--json"]);
        exited
            || serde_json::from_slice::<StatusReport>(&status.stdout).is_ok_and(|r| r.pages >= 16)
    })
    .await;
    drop(engine); // kill -9, if it still runs

    // The next run reads the extraction from crawl.toml.
    ok_stdout(&[
        "crawl",
        "--headless",
        "--data",
        &data_arg,
        "--max-pages",
        "36",
    ]);
    let rows = json_lines(&["pages", &data_arg, "--json"]);
    let pages = html_pages(&rows);
    let (earlier, later): (Vec<&Value>, Vec<&Value>) = pages
        .iter()
        .partition(|p| before.contains(p["url"].as_str().unwrap()));
    assert!(
        !earlier.is_empty() && later.len() >= 12,
        "{} / {}",
        earlier.len(),
        later.len()
    );
    for page in earlier {
        assert!(page.get("extract").is_none(), "fetched before: {page}");
    }
    for page in later {
        assert_eq!(page["extract"]["heading"][0], page["h1"], "{page}");
    }
    demo.shutdown().await;
}
