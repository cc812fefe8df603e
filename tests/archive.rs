//! The WARC archive of a crawl and of its recrawl, read back: byte-identical
//! pages after the first are identical-payload revisits of it, a recrawl's
//! 304s are revisits of the earlier records, robots.txt is archived as a
//! request/response pair, files rotate at `--warc-max-size` each starting
//! with its warcinfo, and warcio reads and checks every file.

use crate::common;

use std::path::Path;

use common::warc::{all_records, files, records, Record};
use crawldeck::demo::SiteKind;

const REVISIT_IDENTICAL: &str = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest";
const REVISIT_NOT_MODIFIED: &str = "http://netpreserve.org/warc/1.1/revisit/server-not-modified";
/// The Dupes site serves one body under this many URLs.
const COPIES: usize = 30;

/// Runs the binary (it blocks: off the runtime the demo web runs on) and
/// returns its summary.
async fn crawl(args: Vec<String>) -> serde_json::Value {
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let lines = common::json_lines(&args);
        let last = lines.last().expect("a summary line").clone();
        last["summary"].clone()
    })
    .await
    .unwrap()
}

/// The record each revisit names exists: a response with that URI and date
/// (and payload digest, when the revisit gives one).
fn assert_refers_to_a_response(revisit: &Record, all: &[Record]) {
    let uri = revisit
        .get("WARC-Refers-To-Target-URI")
        .expect("Refers-To-Target-URI");
    let date = revisit.get("WARC-Refers-To-Date").expect("Refers-To-Date");
    let target = all
        .iter()
        .find(|r| r.is("response") && r.get("WARC-Target-URI") == Some(uri))
        .unwrap_or_else(|| panic!("no response record of {uri}"));
    assert_eq!(target.get("WARC-Date"), Some(date), "{uri}");
    if let Some(digest) = revisit.get("WARC-Payload-Digest") {
        assert_eq!(target.get("WARC-Payload-Digest"), Some(digest), "{uri}");
    }
}

/// A revisit's block is the HTTP head and nothing after it.
fn assert_head_only(revisit: &Record) {
    let end = revisit.block.windows(4).position(|w| w == b"\r\n\r\n");
    assert_eq!(
        end.map(|at| at + 4),
        Some(revisit.block.len()),
        "{:?} holds more than its HTTP head",
        revisit.get("WARC-Target-URI")
    );
    assert!(revisit.block.starts_with(b"HTTP/1.1 "));
    assert_eq!(revisit.get("WARC-Truncated"), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copies_and_304s_are_revisits_and_robots_txt_is_archived() {
    let demo = common::start_demo(vec![SiteKind::Dupes]).await;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("c");
    let data_arg = data.to_str().unwrap().to_string();
    let seed = demo.base_url(SiteKind::Dupes).to_string();
    let args = |extra: &[&str]| -> Vec<String> {
        let mut args: Vec<String> = ["crawl", "--headless", "--json", "--delay", "5ms"]
            .iter()
            .chain(extra)
            .map(|s| s.to_string())
            .collect();
        args.extend(["--data".to_string(), data_arg.clone()]);
        args
    };

    let mut first_args = args(&["--warc-max-size", "20KB"]);
    first_args.push(seed.clone());
    let first = crawl(first_args).await;
    let first_files = files(&data);
    let first_records: Vec<Record> = first_files.iter().flat_map(|f| records(f)).collect();
    let identical: Vec<&Record> = first_records.iter().filter(|r| r.is("revisit")).collect();
    assert_eq!(identical.len(), COPIES - 1, "each copy after the first");
    let copy_body = first_records
        .iter()
        .find(|r| r.is("response") && r.get("WARC-Target-URI").unwrap().contains("/copy/"))
        .map(|r| {
            let at = r.block.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
            r.block.len() - at - 4
        })
        .expect("one copy archived whole");
    for revisit in &identical {
        assert_eq!(revisit.get("WARC-Profile"), Some(REVISIT_IDENTICAL));
        assert!(revisit.get("WARC-Target-URI").unwrap().contains("/copy/"));
        assert!(revisit.get("WARC-Payload-Digest").is_some());
        assert_head_only(revisit);
        assert_refers_to_a_response(revisit, &first_records);
    }
    assert_eq!(first["revisits"], (COPIES - 1) as u64);
    assert_eq!(
        first["revisit_bytes_saved"],
        ((COPIES - 1) * copy_body) as u64
    );

    // robots.txt: a request and its response, like a page's.
    let robots = format!("{seed}robots.txt");
    for kind in ["request", "response"] {
        assert!(
            first_records
                .iter()
                .any(|r| r.is(kind) && r.get("WARC-Target-URI") == Some(robots.as_str())),
            "no {kind} record of {robots}"
        );
    }

    // Rotation: several files, each opening with its own warcinfo.
    assert!(first_files.len() >= 3, "{first_files:?}");
    for file in &first_files {
        let opening = &records(file)[0];
        assert!(opening.is("warcinfo"), "{}", opening.file);
        assert_eq!(opening.get("WARC-Filename"), Some(opening.file.as_str()));
    }

    let second = crawl(args(&["--recrawl"])).await;
    let all = all_records(&data);
    let not_modified: Vec<&Record> = all
        .iter()
        .filter(|r| r.get("WARC-Profile") == Some(REVISIT_NOT_MODIFIED))
        .collect();
    let pages = second["not_modified"].as_u64().unwrap() as usize;
    assert!(pages > COPIES, "every page answered 304: {second}");
    assert_eq!(not_modified.len(), pages);
    for revisit in &not_modified {
        assert!(revisit.block.starts_with(b"HTTP/1.1 304"));
        assert_refers_to_a_response(revisit, &all);
        assert!(revisit.get("WARC-Payload-Digest").is_some());
    }
    assert_eq!(second["revisits"], pages as u64);
    assert!(second["revisit_bytes_saved"].as_u64().unwrap() >= (COPIES * copy_body) as u64);
    let robots_answers = all
        .iter()
        .filter(|r| r.is("response") && r.get("WARC-Target-URI") == Some(robots.as_str()))
        .count();
    assert_eq!(robots_answers, 2, "robots.txt archived in each pass");

    warcio_reads_every_record(&data, all.len());
    demo.shutdown().await;
}

/// `warcio check` verifies each file's digests; `warcio index` reads every
/// record, and finds as many as we did.
fn warcio_reads_every_record(data: &Path, expected: usize) {
    let venv = common::python::venv(&["warcio==1.7.4"]);
    let mut indexed = 0;
    for file in files(data) {
        let check = venv.run(
            "warcio",
            &["check".as_ref(), "-v".as_ref(), file.as_os_str()],
        );
        assert!(
            check.status.success(),
            "warcio check {}: {}{}",
            file.display(),
            String::from_utf8_lossy(&check.stdout),
            String::from_utf8_lossy(&check.stderr)
        );
        let index = venv.run("warcio", &["index".as_ref(), file.as_os_str()]);
        assert!(index.status.success(), "warcio index {}", file.display());
        indexed += String::from_utf8_lossy(&index.stdout).lines().count();
    }
    assert_eq!(indexed, expected, "warcio reads every record");
}

/// The first record of each body is known after `kill -9`: the resumed run
/// archives the copies left as revisits of the one whole copy written before,
/// and every page stored before the kill reads back from its record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_record_of_a_body_survives_kill_nine() {
    let demo = common::start_demo(vec![SiteKind::Dupes]).await;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("c");
    let run = |seed: Option<String>| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_crawldeck"));
        cmd.args(["crawl", "--headless", "--delay", "50ms", "--data"])
            .arg(&data)
            .args(seed)
            .env_remove("RUST_LOG")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        cmd
    };
    let copies_served = || {
        let log = demo.log().records();
        log.iter()
            .filter(|r| r.path_and_query.starts_with("/copy/"))
            .count()
    };
    let first = run(Some(demo.base_url(SiteKind::Dupes).to_string()))
        .spawn()
        .expect("crawldeck starts");
    let mut first = common::Killed(first);
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
    while copies_served() < COPIES / 3 {
        assert!(tokio::time::Instant::now() < deadline, "no progress");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    first.0.kill().expect("SIGKILL");
    drop(first);
    assert!(copies_served() < COPIES, "killed before the last copy");

    let mut resume = run(None);
    let resumed = tokio::task::spawn_blocking(move || {
        let mut child = common::Killed(resume.spawn().expect("resume starts"));
        let started = std::time::Instant::now();
        loop {
            if let Some(status) = child.0.try_wait().unwrap() {
                return status;
            }
            assert!(started.elapsed() < common::RUN_LIMIT, "the resume hangs");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    });
    assert!(resumed.await.unwrap().success(), "the resume ends well");
    // Every page stored before the kill names a record that reached its file.
    for page in common::pages(&data) {
        if let Some(at) = &page.warc {
            if let Err(e) = crawldeck::engine::store::read_response(&data, at, 1 << 20) {
                panic!("{}: its WARC record is gone after kill -9: {e}", page.url);
            }
        }
    }
    let all = all_records(&dir.path().join("c"));
    let is_copy = |r: &&Record| r.get("WARC-Target-URI").unwrap_or("").contains("/copy/");
    let whole: Vec<&Record> = all
        .iter()
        .filter(|r| r.is("response"))
        .filter(is_copy)
        .collect();
    assert_eq!(whole.len(), 1, "one copy stored whole across the kill");
    let revisits: Vec<&Record> = all
        .iter()
        .filter(|r| r.is("revisit"))
        .filter(is_copy)
        .collect();
    // A copy in flight at the kill may have been archived twice.
    assert!(revisits.len() >= COPIES - 1, "{}", revisits.len());
    for revisit in revisits {
        assert_eq!(
            revisit.get("WARC-Refers-To-Target-URI"),
            whole[0].get("WARC-Target-URI")
        );
        assert_refers_to_a_response(revisit, &all);
    }
    demo.shutdown().await;
}
