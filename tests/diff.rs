//! `crawldeck diff` through the real binary: the demo `Audit` site crawled
//! twice unchanged, then once more after `DemoWeb::change_sites` removed a
//! page, retitled one and broke a link; the diff lists exactly those changes
//! in every format, exits 0 and 1 for them, 2 for bad usage, reads a running
//! crawl through its engine and compares a recrawl with a copy taken before,
//! and, with `diff DIR`, with the pass before kept in the same directory.

use crate::common;

use std::path::{Path, PathBuf};

use crawldeck::demo::{SiteKind, AUDIT_CHANGED_BROKEN, AUDIT_CHANGED_REMOVED, AUDIT_CHANGED_TITLE};
use crawldeck::engine::{EngineOptions, RunOverrides};

use common::run_binary as crawldeck;

fn path(url: &str) -> String {
    url::Url::parse(url).expect("a URL").path().to_string()
}

/// `(change, path, old, new)` of each JSON line, in listing order.
type Listed = Vec<(String, String, Option<String>, Option<String>)>;

fn listed(lines: &[serde_json::Value]) -> Listed {
    let text = |v: &serde_json::Value| v.as_str().map(str::to_string);
    lines
        .iter()
        .map(|c| {
            (
                c["change"].as_str().unwrap().to_string(),
                path(c["url"].as_str().unwrap()),
                text(&c["old"]),
                text(&c["new"]),
            )
        })
        .collect()
}

fn expected() -> Listed {
    let (about, old_title, new_title) = AUDIT_CHANGED_TITLE;
    let s = |v: &str| Some(v.to_string());
    let mut rows: Listed = vec![
        ("title".into(), about.into(), s(old_title), s(new_title)),
        (
            "broken".into(),
            AUDIT_CHANGED_BROKEN.into(),
            s("200"),
            s("404"),
        ),
        (
            "removed".into(),
            AUDIT_CHANGED_REMOVED.into(),
            s("200"),
            None,
        ),
    ];
    rows.sort_by(|a, b| a.1.cmp(&b.1));
    rows
}

/// The binary's JSON lines and exit code.
fn diff_json(args: &[&str]) -> (Vec<serde_json::Value>, Option<i32>, String) {
    let out = crawldeck(args);
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
        .collect();
    let stderr = String::from_utf8(out.stderr).unwrap();
    (lines, out.status.code(), stderr)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diff_lists_what_changed_between_two_crawls_of_the_demo() {
    let demo = common::start_demo(vec![SiteKind::Audit]).await;
    let root = tempfile::tempdir().expect("temp dir");
    let [old, again, new]: [PathBuf; 3] = ["old", "again", "new"].map(|d| root.path().join(d));
    common::crawl(common::test_config(&demo), &old).await;
    common::crawl(common::test_config(&demo), &again).await;
    demo.change_sites();
    common::crawl(common::test_config(&demo), &new).await;

    let dirs = (old.clone(), again.clone(), new.clone());
    let scratch = root.path().to_path_buf();
    tokio::task::spawn_blocking(move || {
        let (old, again, new) = dirs;
        identical_crawls_exit_0(&old, &again);
        the_changes_are_listed_in_every_format(&old, &new);
        filters_keep_their_changes_and_the_exit_code_follows(&old, &new);
        bad_usage_exits_2(&old, &new, &scratch);
    })
    .await
    .expect("checks pass");

    a_running_crawl_is_compared_through_its_engine(&demo, &old, &new).await;
    a_recrawl_is_compared_with_a_copy_taken_before(&demo, &again).await;
    drop((demo, root));
}

fn identical_crawls_exit_0(old: &Path, again: &Path) {
    let (lines, code, stderr) = diff_json(&["diff", s(old), s(again), "--json"]);
    assert_eq!((lines.len(), code), (0, Some(0)), "{lines:?} {stderr}");
    assert!(stderr.contains("no changes"), "{stderr}");
}

fn the_changes_are_listed_in_every_format(old: &Path, new: &Path) {
    let (lines, code, stderr) = diff_json(&["diff", s(old), s(new), "--json"]);
    assert_eq!(listed(&lines), expected(), "{stderr}");
    assert_eq!(code, Some(1), "differences exit 1");
    assert!(
        stderr.contains("3 changes: 1 removed, 1 broken, 1 title"),
        "{stderr}"
    );
    let home = |c: &serde_json::Value| c["linked_from"].as_str().map(path);
    for change in &lines {
        match change["change"].as_str().unwrap() {
            "title" => assert!(change["linked_from"].is_null()),
            _ => assert_eq!(home(change).as_deref(), Some("/"), "{change}"),
        }
    }

    let out = crawldeck(&["diff", s(old), s(new), "--csv"]);
    assert_eq!(out.status.code(), Some(1));
    let mut csv = csv::Reader::from_reader(out.stdout.as_slice());
    let header: Vec<String> = csv.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(header, ["url", "change", "old", "new", "linked_from"]);
    let from_csv: Listed = csv
        .records()
        .map(|r| {
            let r = r.unwrap();
            let opt = |v: &str| (!v.is_empty()).then(|| v.to_string());
            (r[1].to_string(), path(&r[0]), opt(&r[2]), opt(&r[3]))
        })
        .collect();
    assert_eq!(from_csv, expected());

    // Piped without a format flag: TSV, one line per change.
    let out = crawldeck(&["diff", s(old), s(new)]);
    assert_eq!(out.status.code(), Some(1));
    let tsv = String::from_utf8(out.stdout).unwrap();
    let mut lines = tsv.lines();
    assert_eq!(lines.next(), Some("url\tchange\told\tnew\tlinked_from"));
    let kinds: Vec<&str> = lines.map(|l| l.split('\t').nth(1).unwrap()).collect();
    let want: Vec<String> = expected().into_iter().map(|e| e.0).collect();
    assert_eq!(kinds, want);
}

fn filters_keep_their_changes_and_the_exit_code_follows(old: &Path, new: &Path) {
    let (lines, code, _) = diff_json(&["diff", s(old), s(new), "--json", "--only", "broken,title"]);
    let kinds: Vec<String> = listed(&lines).into_iter().map(|l| l.0).collect();
    assert_eq!(
        (kinds, code),
        (vec!["title".into(), "broken".into()], Some(1))
    );
    let (lines, code, stderr) =
        diff_json(&["diff", s(old), s(new), "--json", "--only", "h1,status"]);
    assert_eq!(
        (lines.len(), code),
        (0, Some(0)),
        "nothing of those: exit 0"
    );
    assert!(stderr.contains("no changes"), "{stderr}");
    let (lines, code, stderr) = diff_json(&["diff", s(old), s(new), "--json", "--limit", "1"]);
    assert_eq!((lines.len(), code), (1, Some(1)));
    assert!(
        stderr.contains("3 changes"),
        "every change counted: {stderr}"
    );
    let (lines, code, _) = diff_json(&[
        "diff",
        s(old),
        s(new),
        "--json",
        "--host",
        "elsewhere.localhost",
    ]);
    assert_eq!((lines.len(), code), (0, Some(0)));
    let host = url::Url::parse(a_url_of(old).as_str()).unwrap();
    let host = format!("{}:{}", host.host_str().unwrap(), host.port().unwrap());
    let (lines, code, _) = diff_json(&["diff", s(old), s(new), "--json", "--host", &host]);
    assert_eq!((listed(&lines), code), (expected(), Some(1)));
}

/// A URL of the crawl in `dir`.
fn a_url_of(dir: &Path) -> String {
    let pages = common::json_lines(&["pages", s(dir), "--json", "--limit", "1"]);
    pages[0]["url"].as_str().unwrap().to_string()
}

fn bad_usage_exits_2(old: &Path, new: &Path, root: &Path) {
    let missing = root.join("missing");
    let empty = root.join("empty");
    std::fs::create_dir(&empty).unwrap();
    let same_by_another_name = format!(
        "{}/../{}",
        s(old),
        old.file_name().unwrap().to_str().unwrap()
    );
    let cases: &[(Vec<&str>, &str)] = &[
        (vec!["diff", s(old), s(old)], "same data directory"),
        (vec!["diff", s(old), &same_by_another_name], "cp -a"),
        (vec!["diff", s(new)], "was never recrawled"),
        (
            vec!["diff", s(old), s(&missing)],
            "does not exist; give the --data directory",
        ),
        (vec!["diff", s(&empty), s(new)], "holds no crawl"),
        (
            vec!["diff", s(old), s(new), "--only", "titles"],
            "added, removed",
        ),
        (vec!["diff", s(old), s(new), "--limit", "0"], "at least 1"),
    ];
    for (args, says) in cases {
        let out = crawldeck(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    assert!(!missing.exists(), "a diff creates nothing");
}

/// A crawl holding the store answers through its control socket.
async fn a_running_crawl_is_compared_through_its_engine(
    demo: &crawldeck::demo::DemoWeb,
    old: &Path,
    new: &Path,
) {
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    // A recrawl pass queued and paused: the engine runs, fetching nothing.
    let options = EngineOptions {
        recrawl: true,
        overrides: RunOverrides {
            paused: Some(true),
            ..RunOverrides::default()
        },
        ..EngineOptions::default()
    };
    let shutdown = async {
        let _ = stop_rx.await;
    };
    let running = crawldeck::engine::start_with(common::test_config(demo), new, shutdown, options)
        .await
        .expect("engine starts");
    let crawl = common::LiveCrawl::serve(new, running, stop_tx);
    assert!(new.join("control.sock").exists(), "served while it runs");
    assert!(!new.join("results.sock").exists(), "on its one socket");
    let args = [old.to_path_buf(), new.to_path_buf()];
    let (lines, code, stderr) = tokio::task::spawn_blocking(move || {
        diff_json(&["diff", s(&args[0]), s(&args[1]), "--json"])
    })
    .await
    .unwrap();
    assert_eq!((listed(&lines), code), (expected(), Some(1)), "{stderr}");
    assert!(stderr.contains("a running crawl"), "{stderr}");
    // Its recrawl pass has fetched nothing yet: every URL as the pass before.
    let dir = new.to_path_buf();
    let (lines, code, stderr) =
        tokio::task::spawn_blocking(move || diff_json(&["diff", s(&dir), "--json"]))
            .await
            .unwrap();
    assert_eq!((lines.len(), code), (0, Some(0)), "{lines:?} {stderr}");
    assert!(
        stderr.contains("no changes (recrawl pass 1, running"),
        "{stderr}"
    );
    crawl.stop().await;
}

/// The documented way to compare recrawl passes: copy, recrawl, diff. A
/// recrawl asks again for every page it knew, so the page taken off the
/// site is a new broken link (404) there, not a URL removed.
async fn a_recrawl_is_compared_with_a_copy_taken_before(
    demo: &crawldeck::demo::DemoWeb,
    dir: &Path,
) {
    let before = dir.with_extension("before");
    let copied = std::process::Command::new("cp")
        .args(["-a", s(dir), s(&before)])
        .status()
        .expect("cp runs");
    assert!(copied.success());
    recrawl(demo, dir).await;
    let args = [before, dir.to_path_buf()];
    let (lines, code, stderr) = tokio::task::spawn_blocking(move || {
        diff_json(&["diff", s(&args[0]), s(&args[1]), "--json"])
    })
    .await
    .unwrap();
    let mut want: Listed = expected()
        .into_iter()
        .map(|(kind, p, old, new)| match kind.as_str() {
            "removed" => ("broken".into(), p, old, Some("404".into())),
            _ => (kind, p, old, new),
        })
        .collect();
    want.sort_by(|a, b| a.1.cmp(&b.1));
    assert_eq!((listed(&lines), code), (want.clone(), Some(1)), "{stderr}");

    a_recrawl_is_compared_with_its_pass_before(demo, dir, want).await;
}

/// `diff DIR` lists what the copy-then-recrawl workflow lists, without the
/// copy; a pass that changed nothing lists nothing (the pass before last is
/// dropped, not compared).
async fn a_recrawl_is_compared_with_its_pass_before(
    demo: &crawldeck::demo::DemoWeb,
    dir: &Path,
    want: Listed,
) {
    let diff_dir =
        |dir: PathBuf| tokio::task::spawn_blocking(move || diff_json(&["diff", s(&dir), "--json"]));
    let (lines, code, stderr) = diff_dir(dir.to_path_buf()).await.unwrap();
    assert_eq!((listed(&lines), code), (want, Some(1)), "{stderr}");
    assert!(
        stderr.contains("(recrawl pass 1 against the pass before)"),
        "{stderr}"
    );
    let home = |c: &serde_json::Value| c["linked_from"].as_str().map(path);
    let broken: Vec<_> = lines.iter().filter(|c| c["change"] == "broken").collect();
    assert!(
        broken.iter().all(|c| home(c).as_deref() == Some("/")),
        "{broken:?}"
    );

    recrawl(demo, dir).await;
    let (lines, code, stderr) = diff_dir(dir.to_path_buf()).await.unwrap();
    assert_eq!((lines.len(), code), (0, Some(0)), "{lines:?} {stderr}");
    assert!(stderr.contains("no changes (recrawl pass 2"), "{stderr}");
}

/// Runs a `--recrawl` pass of `dir` to its end.
async fn recrawl(demo: &crawldeck::demo::DemoWeb, dir: &Path) {
    let options = EngineOptions {
        recrawl: true,
        ..EngineOptions::default()
    };
    let running = crawldeck::engine::start_with(
        common::test_config(demo),
        dir,
        std::future::pending(),
        options,
    )
    .await
    .expect("the recrawl starts");
    tokio::time::timeout(common::CRAWL_LIMIT, running.done)
        .await
        .expect("the recrawl ends")
        .expect("no panic")
        .expect("no engine error");
}
