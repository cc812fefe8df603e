//! `crawldeck export` on a crawl of the demo web: the WACZ passes py-wacz's
//! validator, the CDXJ is line for line what cdxj-indexer writes for the
//! same WARC files, and pywb replays a page from the WACZ; the compressed
//! index is checked the same way; a running crawl exports a consistent
//! point in time.

use crate::common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crawldeck::demo::SiteKind;
use serde_json::Value;

use common::python::Venv;
use common::run_binary as crawldeck;

/// Versions that work together on Python 3.11.
const PYTHON_TOOLS: [&str; 3] = ["wacz==0.6.0", "pywb==2.10.0", "cdxj-indexer==1.5.0"];
/// How long pywb may take to start answering.
const WAYBACK_START: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crawl_exports_to_a_wacz_pywb_replays() {
    let demo = common::start_demo(vec![SiteKind::Shop, SiteKind::Links]).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let mut cfg = common::test_config(&demo);
    // Stylesheets and images archived for replay, in several WARC files.
    cfg.checks.resources = crawldeck::engine::config::ResourcesMode::Fetch;
    cfg.storage.warc_max_bytes = 64 * 1024;
    common::crawl(cfg, dir.path()).await;
    let data = dir.path().to_path_buf();
    let stylesheet = demo
        .base_url(SiteKind::Links)
        .join("/style.css")
        .unwrap()
        .to_string();
    tokio::task::spawn_blocking(move || {
        let venv = common::python::venv(&PYTHON_TOOLS);
        let out = tempfile::tempdir().expect("output dir");
        let wacz = out.path().join("crawl.wacz");
        let cdxj = out.path().join("crawl.cdxj");
        export(&data, &wacz, Some(&cdxj), &[]);
        validate(&venv, &wacz);
        the_index_is_cdxj_indexers(&venv, &data, &cdxj);
        let entries = zip_entries(&wacz);
        assert!(
            entries.contains(&"indexes/index.cdx".to_string()),
            "{entries:?}"
        );
        let warcs = std::fs::read_dir(data.join("warc")).unwrap().count();
        let archived = entries.iter().filter(|e| e.starts_with("archive/")).count();
        assert!(warcs >= 2, "the crawl rotated its WARC files: {warcs}");
        assert_eq!(archived, warcs, "every WARC file is exported: {entries:?}");
        let pages = pages_of(&wacz);
        assert!(pages.len() >= 20, "{} pages", pages.len());
        let package: Value = serde_json::from_str(&entry_text(&wacz, "datapackage.json")).unwrap();
        let main = pages.iter().find(|p| p["url"] == package["mainPageUrl"]);
        let main = main.unwrap_or_else(|| panic!("the main page is listed: {package}"));
        assert_eq!(main["ts"], package["mainPageDate"]);
        let css = capture_of(&cdxj, &stylesheet);
        replay_in_pywb(
            &venv,
            &wacz,
            &[page_replay(&pages[1]), (css, "@font-face".into())],
        );

        let refused = crawldeck(&["export", path(&data), "--wacz", path(&wacz)]);
        assert_eq!(refused.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&refused.stderr).contains("add --force"));

        let blocks = out.path().join("blocks.wacz");
        export(&data, &blocks, None, &["--compressed-index-from", "10"]);
        validate(&venv, &blocks);
        let entries = zip_entries(&blocks);
        for entry in ["indexes/index.cdx.gz", "indexes/index.idx"] {
            assert!(entries.contains(&entry.to_string()), "{entries:?}");
        }
        assert!(!entries.contains(&"indexes/index.cdx".to_string()));
        replay_in_pywb(&venv, &blocks, &[page_replay(&pages[2])]);
    })
    .await
    .expect("checks pass");
    drop(demo);
}

#[test]
fn bad_exports_are_refused_with_the_fix() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = path(dir.path());
    let cases: [(&[&str], &str); 3] = [
        (&["export", d, "--wacz", "x.wacz"], "holds no crawl"),
        (
            &["export", d],
            "give --wacz OUT.wacz and/or --cdxj OUT.cdxj",
        ),
        (&["export", d, "--wacz", "x.zip"], "must end in .wacz"),
    ];
    std::fs::create_dir_all(dir.path().join("db/x")).unwrap();
    std::fs::create_dir_all(dir.path().join("warc")).unwrap();
    let (args, _) = cases[0];
    let out = crawldeck(args);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("holds no WARC files"));
    for (args, message) in &cases[1..] {
        let out = crawldeck(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
    let missing = crawldeck(&["export", "/nonexistent/crawl", "--wacz", "x.wacz"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("holds no crawl"));
}

fn path(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

fn export(data: &Path, wacz: &Path, cdxj: Option<&Path>, extra: &[&str]) {
    let mut args = vec!["export", path(data), "--wacz", path(wacz)];
    if let Some(cdxj) = cdxj {
        args.extend(["--cdxj", path(cdxj)]);
    }
    args.extend(extra);
    let out = crawldeck(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {stderr}");
    assert!(
        stderr.contains("records indexed") && stderr.contains("pages") && stderr.contains(" s"),
        "{stderr}"
    );
}

fn tool(venv: &Venv, name: &str, args: &[&str], cwd: &Path) -> String {
    let out = common::python::run(venv.command(name).args(args).current_dir(cwd));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{name} {args:?}: {text}");
    text
}

fn validate(venv: &Venv, wacz: &Path) {
    let said = tool(
        venv,
        "wacz",
        &["validate", "-f", path(wacz)],
        Path::new("."),
    );
    assert!(said.contains("Validation succeeded"), "{said}");
}

/// Our index against cdxj-indexer's for the same WARC files (its command
/// line leaves out py-wacz's recordDigest).
fn the_index_is_cdxj_indexers(venv: &Venv, data: &Path, cdxj: &Path) {
    let mut warcs: Vec<String> = std::fs::read_dir(data.join("warc"))
        .unwrap()
        .map(|e| e.unwrap().path().to_str().unwrap().to_string())
        .collect();
    warcs.sort();
    let mut args = vec!["--sort"];
    args.extend(warcs.iter().map(String::as_str));
    let theirs = tool(venv, "cdxj-indexer", &args, Path::new("."));
    let ours: Vec<String> = std::fs::read_to_string(cdxj)
        .unwrap()
        .lines()
        .map(|line| {
            let at = line.find(", \"recordDigest\"").expect("a record digest");
            format!("{}}}", &line[..at])
        })
        .collect();
    assert!(ours.len() >= 20);
    assert_eq!(ours, theirs.lines().collect::<Vec<_>>());
}

fn zip_entries(wacz: &Path) -> Vec<String> {
    let archive = zip::ZipArchive::new(std::fs::File::open(wacz).unwrap()).unwrap();
    archive
        .file_names()
        .map(|name| name.expect("an entry name").into_owned())
        .collect()
}

/// The text of the entry `name` of the package.
fn entry_text(wacz: &Path, name: &str) -> String {
    let mut archive = zip::ZipArchive::new(std::fs::File::open(wacz).unwrap()).unwrap();
    let mut text = String::new();
    archive
        .by_name(name)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .read_to_string(&mut text)
        .unwrap();
    text
}

fn pages_of(wacz: &Path) -> Vec<Value> {
    let text = entry_text(wacz, "pages/pages.jsonl");
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some(r#"{"format": "json-pages-1.0", "id": "pages", "title": "All Pages"}"#)
    );
    lines.map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// A capture to replay, as its URL and timestamp (14 digits).
type Capture = (String, String);

/// A page of `pages.jsonl` to replay, and its title, which its body must hold.
fn page_replay(page: &Value) -> (Capture, String) {
    let url = page["url"].as_str().unwrap().to_string();
    let ts = page["ts"]
        .as_str()
        .unwrap()
        .chars()
        .filter(char::is_ascii_digit)
        .collect();
    let title = page["title"].as_str().unwrap().replace('&', "&amp;");
    ((url, ts), format!("<title>{title}</title>"))
}

/// The capture of `url` in a CDXJ index: its URL and timestamp.
fn capture_of(cdxj: &Path, url: &str) -> Capture {
    let index = std::fs::read_to_string(cdxj).unwrap();
    let line = index
        .lines()
        .find(|l| l.contains(&format!("\"url\": \"{url}\"")))
        .unwrap_or_else(|| panic!("{url} is indexed:\n{index}"));
    let ts = line.split(' ').nth(1).unwrap().to_string();
    (url.to_string(), ts)
}

/// Imports the WACZ into a pywb collection, serves it on a free loopback
/// port and fetches each capture's original bytes from it: status 200 and
/// the text expected in the body.
fn replay_in_pywb(venv: &Venv, wacz: &Path, captures: &[(Capture, String)]) {
    let root = tempfile::tempdir().unwrap();
    tool(venv, "wb-manager", &["init", "crawl"], root.path());
    let said = tool(
        venv,
        "wb-manager",
        &["add", "--unpack-wacz", "crawl", path(wacz)],
        root.path(),
    );
    // An index it does not take is only a warning, and an empty collection.
    assert!(!said.contains("WARNING"), "{said}");
    let (_wayback, port) = start_wayback(venv, root.path());
    for ((url, ts), expected) in captures {
        // `start_wayback` saw it answer: no retry.
        let target = format!("/crawl/{ts}id_/{url}");
        let (status, body) = ask(port, &target).expect("pywb answers");
        assert_eq!(status, 200, "{url}: {body}");
        assert!(
            body.contains(expected.as_str()),
            "{expected} in {url}: {body}"
        );
    }
}

/// Starts pywb's `wayback` on a free loopback port and waits until it
/// answers for the collection. The port is free when picked but released
/// before `wayback` binds it: under load another test's server may take it
/// first (its own 404 then answered the captures), so a `wayback` that
/// exits, or a port answered by something else, is tried again elsewhere.
fn start_wayback(venv: &Venv, root: &Path) -> (common::Killed, u16) {
    for _ in 0..5 {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = venv
            .command("wayback")
            .args(["-b", "127.0.0.1", "-p", &port.to_string()])
            .current_dir(root)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("wayback starts");
        let mut wayback = common::Killed(child);
        let started = Instant::now();
        while started.elapsed() < WAYBACK_START {
            if wayback.0.try_wait().unwrap().is_some() {
                break;
            }
            if let Some((status, _)) = ask(port, "/crawl/") {
                if status == 200 {
                    return (wayback, port);
                }
                // Something else holds the port: wayback cannot bind it.
                break;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    panic!("pywb did not start on a free port in five tries");
}

/// The status and body of one GET, if anything answers on `port`.
fn ask(port: u16, target: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        stream,
        "GET {target} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n"
    )
    .ok()?;
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let status = answer.split(' ').nth(1).and_then(|s| s.parse().ok())?;
    let body = answer.split_once("\r\n\r\n").map(|(_, b)| b.to_string());
    Some((status, body.unwrap_or_default()))
}

/// While the crawl runs, an export reads a point in time: every page it
/// lists has its record in the package's index, and the package validates.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_crawl_exports_a_consistent_point_in_time() {
    let demo = common::start_demo(vec![SiteKind::Shop]).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let crawl = common::crawl_until(&demo, dir.path(), 20).await;
    let data = dir.path().to_path_buf();
    let out = tempfile::tempdir().expect("output dir");
    let wacz = out.path().join("live.wacz");
    let exported = wacz.clone();
    tokio::task::spawn_blocking(move || export(&data, &exported, None, &[]))
        .await
        .expect("export runs");
    assert!(
        dir.path().join("control.sock").exists(),
        "the crawl was still running during the export"
    );
    crawl.stop().await;
    tokio::task::spawn_blocking(move || {
        let venv = common::python::venv(&PYTHON_TOOLS);
        validate(&venv, &wacz);
        let index = entry_text(&wacz, "indexes/index.cdx");
        let pages = pages_of(&wacz);
        assert!(!pages.is_empty());
        for page in &pages {
            let url = page["url"].as_str().unwrap();
            assert!(
                index.contains(&format!("{{\"url\": \"{url}\", \"mime\": \"text/html\"")),
                "{url} is indexed"
            );
        }
    })
    .await
    .expect("checks pass");
    drop(demo);
}
