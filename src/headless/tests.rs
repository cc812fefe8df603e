//! Progress lines, the summary and the headless loop over a scripted engine.

use super::*;
use crate::engine::control::{PatternKind, RuleSpec};
use crate::engine::telemetry::{AlertStatus, CrawlState, TrapAlert, TrapKind};

fn snapshot(pages: u64) -> Snapshot {
    let mut s = Snapshot {
        state: CrawlState::Running,
        pages_per_sec: 10.0,
        frontier_size: 100 - pages,
        in_flight: 2,
        hosts_total: 3,
        data_dir: "/tmp/crawl1".into(),
        product_token: "acmebot".into(),
        user_agent: "AcmeBot/2.0 (+https://acme.example/bot)\u{1b}[2J".into(),
        ..Default::default()
    };
    s.counters.pages_fetched = pages;
    s.counters.bytes = pages * 2048;
    s
}

fn final_snapshot() -> Snapshot {
    let mut s = snapshot(30);
    s.state = CrawlState::Done;
    s.finish_reason = Some("max pages reached\u{1b}[2J".into());
    s.counters.count_error("timeout");
    s.counters.count_error("timeout");
    s.counters.count_error("too-many-redirects");
    s.counters.duplicates = 4;
    s.counters.not_modified = 9;
    s.counters.revisits = 11;
    s.counters.revisit_bytes_saved = 2048;
    s.counters.robots_denied = 5;
    s.counters.blocked_by_rules = 6;
    s.counters.refused_private = 1;
    s.counters.links_cut = 1500;
    s.counters.bodies_cut = 4;
    s.counters.pages_cut = 2;
    s.counters.resources_fetched = 12;
    s.counters.resource_bytes = 3072;
    s.quarantined = 40;
    s.counters.responses.record(Some(200), false);
    s.counters.responses.record(Some(404), false);
    s.counters.responses.record(None, false);
    s.counters.responses.record(None, true);
    let alert = |id, status| TrapAlert {
        id,
        host: "cal.localhost:4000".into(),
        kind: TrapKind::Counter,
        evidence_count: 25,
        last_seen: 0,
        samples: vec!["http://cal.localhost:4000/day/\u{1b}]0;x\u{7}2".into()],
        suggested_rule: RuleSpec {
            kind: PatternKind::Regex,
            pattern: "^http://cal\\.localhost:4000/day/".into(),
            host: Some("cal.localhost:4000".into()),
        },
        matching_queued: 40,
        impact: None,
        status,
    };
    s.alerts = vec![
        alert(7, AlertStatus::Open),
        alert(8, AlertStatus::Dismissed),
    ];
    s
}

/// A failed attempt's event; the summary counts failed URLs from the
/// counters, never attempts from events.
fn fetched_error(error: &str) -> EngineEvent {
    EngineEvent::Fetched {
        host: "a".into(),
        url: "http://a/".into(),
        status: None,
        latency: Duration::ZERO,
        bytes: 0,
        error: Some(error.into()),
    }
}

/// A fake engine: 10 pages per second, published at x.5 s, done at 3.5 s.
fn fake_engine() -> (EngineHandle, JoinHandle<Result<Snapshot, EngineError>>) {
    let (handle, ends) = EngineHandle::channel();
    let done = tokio::spawn(async move {
        for pages in [10, 20, 30] {
            tokio::time::sleep(Duration::from_millis(if pages == 10 { 500 } else { 1000 })).await;
            ends.snapshots
                .send_replace(std::sync::Arc::new(snapshot(pages)));
        }
        ends.events
            .send(fetched_error("timeout: no answer in 20s"))
            .await
            .unwrap();
        ends.events
            .send(fetched_error("timeout: read"))
            .await
            .unwrap();
        let alert = final_snapshot().alerts.remove(0);
        ends.events.send(EngineEvent::Alert(alert)).await.unwrap();
        ends.events
            .send(fetched_error("\u{1b}[31m weird"))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(1000)).await;
        Ok(final_snapshot())
    });
    (handle, done)
}

async fn run_fake(opts: HeadlessOptions) -> (anyhow::Result<Snapshot>, String, String) {
    let (handle, done) = fake_engine();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let result = run_with(handle, done, opts, &mut out, &mut err).await;
    (
        result,
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

#[tokio::test(start_paused = true)]
async fn prints_one_line_a_second_then_the_summary() {
    let (result, out, err) = run_fake(HeadlessOptions::default()).await;
    assert_eq!(result.unwrap(), final_snapshot());
    assert!(out.is_empty());
    let progress: Vec<&str> = err.lines().filter(|l| l.starts_with('[')).collect();
    assert_eq!(progress.len(), 3, "{err}");
    assert!(
        progress[0].starts_with("[ 0:01] RUNNING  pages 10 (10.0/s) | frontier 90"),
        "{err}"
    );
    assert!(
        progress[2].contains("pages 30") && progress[2].contains("60.0 KiB"),
        "{err}"
    );
    assert!(err.contains("crawl ended: max pages reached[2J\n"), "{err}");
    assert!(
        err.contains("errors            3 (timeout 2, too-many-redirects 1)"),
        "{err}"
    );
    assert!(
        err.contains("2xx 1 | 3xx 0 | 4xx 1 | 5xx 0 | no response 2"),
        "{err}"
    );
    assert!(err.contains("robots denied     5"), "{err}");
    assert!(
        err.contains(
            "private refused   1 (private addresses no seed is on; --allow-private allows them)"
        ),
        "{err}"
    );
    assert!(
        err.contains(
            "identity          acmebot (User-Agent: AcmeBot/2.0 (+https://acme.example/bot)[2J)"
        ),
        "{err}"
    );
    assert!(err.contains("not modified      9"), "{err}");
    assert!(
        err.contains("WARC revisits     11 records (2.0 KiB of bodies not stored again)"),
        "{err}"
    );
    assert!(
        err.contains("links cut         1500 on 2 pages, not followed: past the per-page cap"),
        "{err}"
    );
    assert!(
        err.contains("bodies cut        4 pages kept up to fetch.max_body"),
        "{err}"
    );
    assert!(
        err.contains("resources fetched 12 (3.0 KiB), archived in the WARC, not pages"),
        "{err}"
    );
    assert!(err.contains("open trap alerts: 1"), "{err}");
    let raised = err
        .find("\ntrap alert #7 cal.localhost:4000: calendar")
        .unwrap();
    assert!(raised < err.find("crawl ended").unwrap(), "{err}");
    assert!(
        err.contains("#7 cal.localhost:4000: calendar, 25 URLs seen, 40 parked"),
        "{err}"
    );
    assert!(
        err.contains("regex:^http://cal\\.localhost:4000/day/ on cal.localhost:4000"),
        "{err}"
    );
    assert!(!err.contains("#8"), "dismissed alerts are not open: {err}");
    assert!(!err.contains('\u{1b}') && !err.contains('\u{7}'), "{err:?}");
}

#[tokio::test(start_paused = true)]
async fn json_lines_then_a_summary_object() {
    let opts = HeadlessOptions {
        json: true,
        allow_private: true,
        ..Default::default()
    };
    let (result, out, err) = run_fake(opts).await;
    result.unwrap();
    assert!(err.is_empty(), "{err}");
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4, "{out}");
    for (i, line) in lines[..3].iter().enumerate() {
        assert_eq!(line["elapsed_secs"], i as u64 + 1);
        assert_eq!(line["pages"], 10 * (i as u64 + 1));
        assert_eq!(line["state"], "RUNNING");
        for key in [
            "pages_per_sec",
            "frontier",
            "in_flight",
            "hosts",
            "errors",
            "bytes",
        ] {
            assert!(line.get(key).is_some(), "{key} missing in {line}");
        }
    }
    let summary = &lines[3]["summary"];
    assert_eq!(summary["pages"], 30);
    assert_eq!(summary["duplicates"], 4);
    assert_eq!(summary["blocked"], 6);
    assert_eq!(summary["refused_private"], 1);
    assert_eq!(summary["links_cut"], 1500);
    assert_eq!(summary["bodies_cut"], 4);
    assert_eq!(summary["pages_cut"], 2);
    assert_eq!(summary["resources_fetched"], 12);
    assert_eq!(summary["resource_bytes"], 3072);
    assert_eq!(summary["revisits"], 11);
    assert_eq!(summary["revisit_bytes_saved"], 2048);
    assert_eq!(summary["allow_private"], true);
    assert_eq!(summary["errors_by_kind"]["timeout"], 2);
    assert_eq!(summary["data_dir"], "/tmp/crawl1");
    assert_eq!(summary["product_token"], "acmebot");
    assert_eq!(
        summary["user_agent"], "AcmeBot/2.0 (+https://acme.example/bot)[2J",
        "control characters stripped"
    );
    assert_eq!(summary["open_alerts"][0]["id"], 7);
    assert_eq!(
        summary["open_alerts"][0]["samples"][0],
        "http://cal.localhost:4000/day/]0;x2"
    );
    assert_eq!(summary["elapsed_secs"], 3.5);
}

#[tokio::test(start_paused = true)]
async fn terminal_gets_one_redrawn_bar() {
    let opts = HeadlessOptions {
        live: true,
        max_pages: 100,
        ..Default::default()
    };
    let (_, _, err) = run_fake(opts).await;
    let (alert, rest) = err.split_once('\n').unwrap();
    assert!(
        alert.ends_with("\r\u{1b}[2Ktrap alert #7 cal.localhost:4000: calendar, 25 URLs seen, 40 parked — suggested rule regex:^http://cal\\.localhost:4000/day/ on cal.localhost:4000"),
        "the alert line replaces the bar: {alert:?}"
    );
    let (bar, summary) = rest.split_once('\n').unwrap();
    assert_eq!(bar.matches("\r\u{1b}[2K").count(), 1, "{bar:?}");
    assert!(bar.ends_with("[######..............] 30/100 10.0/s | frontier 70 | in flight 2 | hosts 3 | errors 0 | 60.0 KiB | 0:03"), "{bar:?}");
    assert!(summary.starts_with("crawl ended:"), "{summary}");
    let spinner = HeadlessOptions {
        live: true,
        ..Default::default()
    };
    let (_, _, err) = run_fake(spinner).await;
    assert!(
        err.contains("| 10 pages") && err.contains("/ 20 pages"),
        "{err:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn engine_failure_is_an_error() {
    let (handle, _ends) = EngineHandle::channel();
    let done = tokio::spawn(async { Err(EngineError::Store("db is locked".into())) });
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let error = run_with(handle, done, HeadlessOptions::default(), &mut out, &mut err)
        .await
        .unwrap_err();
    assert!(format!("{error:#}").contains("db is locked"), "{error:#}");
}

#[test]
fn the_summary_gives_each_open_alerts_commands_and_lists_noted_alerts() {
    let mut s = final_snapshot();
    let mut noted = s.alerts[0].clone();
    (noted.id, noted.status) = (9, AlertStatus::Noted);
    s.alerts.push(noted);
    s.data_dir = "/tmp/my crawl".into();
    let summary = summarize(&s, Duration::from_secs(3), &HeadlessOptions::default());
    let text = summary_text(&summary);
    let dir = "'/tmp/my crawl'";
    for line in [
        format!("      its 40 parked URL(s): crawldeck pages {dir} --fate parked --by alert:7\n"),
        format!(
            "      release them (fetch): crawldeck crawl --headless --data {dir} --dismiss 7\n"
        ),
        format!("      or block them:        crawldeck crawl --headless --data {dir} --accept 7\n"),
        "trap alerts noted: 1 (--traps alert-only: nothing parked; their URLs were crawled)\n"
            .into(),
        "  #9 cal.localhost:4000: calendar, 25 URLs seen, 40 matching queued — suggested rule"
            .into(),
    ] {
        assert!(text.contains(&line), "{line:?} missing in\n{text}");
    }
    assert!(
        !text.contains("#8 "),
        "dismissed alerts are not listed: {text}"
    );
    let json = serde_json::to_value(&summary).unwrap();
    assert_eq!(json["noted_alerts"][0]["id"], 9);
    assert_eq!(json["noted_alerts"][0]["status"], "noted");
    assert!(json["noted_alerts"][0].get("commands").is_none());
    assert_eq!(
        json["open_alerts"][0]["commands"]["release"],
        format!("crawldeck crawl --headless --data {dir} --dismiss 7")
    );
}

#[test]
fn a_shared_crawls_worker_is_told_to_decide_over_redis() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("cluster-crawl"),
        "redis://127.0.0.1:7/0\nc1\n",
    )
    .unwrap();
    let mut s = final_snapshot();
    s.data_dir = dir.path().display().to_string();
    let summary = summarize(&s, Duration::from_secs(3), &HeadlessOptions::default());
    assert_eq!(summary.open_alerts[0].commands, None);
    let text = summary_text(&summary);
    assert!(
        text.contains("(their URLs are parked in Redis; decide with `crawldeck attach --redis redis://127.0.0.1:7/0 --crawl c1` while a worker of it runs)"),
        "{text}"
    );
    assert!(!text.contains("--dismiss"), "{text}");
}
