//! Headless front end: a progress line a second on stderr (a live bar when
//! stderr is a terminal) or JSON lines on stdout, then a summary of the crawl.
//! It drives the engine through the same [`EngineHandle`] as the TUI.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use serde::Serialize;
use tokio::task::JoinHandle;
use tokio::time::{Instant, MissedTickBehavior};

use crate::engine::telemetry::{AlertStatus, EngineEvent, Snapshot, StatusMix, TrapAlert};
use crate::engine::{EngineError, EngineHandle};
use crate::text::strip_control;

/// Distinct error kinds kept for the summary; further kinds count as "other".
const MAX_ERROR_KINDS: usize = 24;
const SPINNER: [char; 4] = ['|', '/', '-', '\\'];

#[derive(Debug, Clone, Default)]
pub struct HeadlessOptions {
    /// JSON lines on stdout instead of text on stderr.
    pub json: bool,
    /// stderr is a terminal: redraw one line instead of scrolling.
    pub live: bool,
    /// For the progress bar (0 = no limit: a spinner).
    pub max_pages: u64,
    pub data_dir: PathBuf,
}

/// The final report, printed as text or as `{"summary": …}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub pages: u64,
    pub bytes: u64,
    pub duplicates: u64,
    pub errors: u64,
    /// Fetch errors by kind, from the engine's fetch events.
    pub errors_by_kind: BTreeMap<String, u64>,
    /// Responses by status class, over the hosts in the final snapshot.
    pub responses: StatusMix,
    pub robots_denied: u64,
    pub blocked: u64,
    pub redirects: u64,
    pub not_modified: u64,
    pub frontier_left: u64,
    pub quarantined: u64,
    pub elapsed_secs: f64,
    pub data_dir: String,
    pub finish_reason: String,
    pub open_alerts: Vec<AlertSummary>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AlertSummary {
    pub id: u64,
    pub host: String,
    pub kind: String,
    pub evidence: u64,
    pub parked: u64,
    /// The suggested rule as the TUI's rule editor takes it: `kind:pattern`.
    pub suggested_rule: String,
    pub rule_host: Option<String>,
    pub samples: Vec<String>,
}

/// The per-second JSON line.
#[derive(Debug, Clone, PartialEq, Serialize)]
struct Progress {
    elapsed_secs: u64,
    state: &'static str,
    pages: u64,
    pages_per_sec: f64,
    frontier: u64,
    in_flight: u32,
    hosts: u32,
    errors: u64,
    bytes: u64,
    quarantined: u64,
    /// Hosts held back and why, so a crawl that is waiting says on what.
    hosts_breaker_open: u32,
    hosts_robots_pending: u32,
    hosts_paused: u32,
}

/// Runs until the engine task ends; returns its final snapshot.
pub async fn run(
    handle: EngineHandle,
    done: JoinHandle<Result<Snapshot, EngineError>>,
    opts: HeadlessOptions,
) -> anyhow::Result<Snapshot> {
    run_with(
        handle,
        done,
        opts,
        &mut std::io::stdout(),
        &mut std::io::stderr(),
    )
    .await
}

/// [`run`] with the output streams given (tests pass buffers).
pub async fn run_with(
    mut handle: EngineHandle,
    mut done: JoinHandle<Result<Snapshot, EngineError>>,
    opts: HeadlessOptions,
    out: &mut (dyn Write + Send),
    err: &mut (dyn Write + Send),
) -> anyhow::Result<Snapshot> {
    let started = Instant::now();
    let mut ticker =
        tokio::time::interval_at(started + Duration::from_secs(1), Duration::from_secs(1));
    ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut tally = ErrorTally::default();
    let mut events_open = true;
    let mut ticks: usize = 0;

    let finished = loop {
        tokio::select! {
            result = &mut done => break result,
            _ = ticker.tick() => {
                let snapshot = handle.snapshots.borrow().clone();
                let progress = progress_of(&snapshot, started.elapsed());
                if opts.json {
                    writeln!(out, "{}", serde_json::to_string(&progress)?)?;
                    out.flush()?;
                } else if opts.live {
                    write!(err, "\r\x1b[2K{}", live_line(&progress, opts.max_pages, ticks))?;
                    err.flush()?;
                } else {
                    writeln!(err, "{}", progress_line(&progress))?;
                }
                ticks += 1;
            }
            event = handle.events.recv(), if events_open => match event {
                Some(event) => {
                    tally.record(&event);
                    if let (EngineEvent::Alert(alert), false) = (&event, opts.json) {
                        // Clear the live bar first; the next tick redraws it.
                        let clear = if opts.live { "\r\x1b[2K" } else { "" };
                        writeln!(err, "{clear}trap alert {}", alert_text(&alert_summary(alert)))?;
                    }
                }
                None => events_open = false,
            },
        }
    };
    while let Ok(event) = handle.events.try_recv() {
        tally.record(&event);
    }
    if opts.live && !opts.json && ticks > 0 {
        writeln!(err)?;
    }

    let snapshot = finished
        .context("the crawl engine stopped unexpectedly (see crawldeck.log)")?
        .context("the crawl engine failed")?;
    let summary = summarize(&snapshot, &tally, started.elapsed(), &opts);
    if opts.json {
        writeln!(out, "{}", serde_json::json!({ "summary": summary }))?;
        out.flush()?;
    } else {
        write!(err, "{}", summary_text(&summary))?;
        err.flush()?;
    }
    Ok(snapshot)
}

fn progress_of(s: &Snapshot, elapsed: Duration) -> Progress {
    Progress {
        elapsed_secs: elapsed.as_secs(),
        state: s.state.label(),
        pages: s.counters.pages_fetched,
        pages_per_sec: (s.pages_per_sec * 10.0).round() / 10.0,
        frontier: s.frontier_size,
        in_flight: s.in_flight,
        hosts: s.hosts_total,
        errors: s.counters.errors,
        bytes: s.counters.bytes,
        quarantined: s.quarantined,
        hosts_breaker_open: s.hosts_breaker_open,
        hosts_robots_pending: s.hosts_robots_pending,
        hosts_paused: s.hosts_paused,
    }
}

/// The figures both progress forms share.
fn figures(p: &Progress) -> String {
    let mut held = Vec::new();
    for (count, what) in [
        (p.hosts_breaker_open, "breaker open"),
        (p.hosts_robots_pending, "robots pending"),
        (p.hosts_paused, "paused"),
    ] {
        if count > 0 {
            held.push(format!("{count} {what}"));
        }
    }
    let held = if held.is_empty() {
        String::new()
    } else {
        format!(" ({})", held.join(", "))
    };
    format!(
        "frontier {} | in flight {} | hosts {}{held} | errors {} | {}",
        p.frontier,
        p.in_flight,
        p.hosts,
        p.errors,
        human_bytes(p.bytes)
    )
}

fn progress_line(p: &Progress) -> String {
    format!(
        "[{:>5}] {:<8} pages {} ({:.1}/s) | {}",
        clock(p.elapsed_secs),
        p.state,
        p.pages,
        p.pages_per_sec,
        figures(p)
    )
}

fn live_line(p: &Progress, max_pages: u64, tick: usize) -> String {
    const WIDTH: u128 = 20;
    // u128: pages × WIDTH cannot overflow; max_pages == 0 (no limit) gives a spinner.
    let filled = (u128::from(p.pages.min(max_pages)) * WIDTH).checked_div(u128::from(max_pages));
    let gauge = match filled {
        Some(filled) => format!(
            "[{}{}] {}/{}",
            "#".repeat(filled as usize),
            ".".repeat((WIDTH - filled) as usize),
            p.pages,
            max_pages
        ),
        None => format!("{} {} pages", SPINNER[tick % SPINNER.len()], p.pages),
    };
    format!(
        "{gauge} {:.1}/s | {} | {}",
        p.pages_per_sec,
        figures(p),
        clock(p.elapsed_secs)
    )
}

/// Counts fetch errors by their leading word ("timeout: …" → "timeout").
#[derive(Debug, Default)]
struct ErrorTally {
    kinds: BTreeMap<String, u64>,
}

impl ErrorTally {
    fn record(&mut self, event: &EngineEvent) {
        let EngineEvent::Fetched {
            error: Some(error), ..
        } = event
        else {
            return;
        };
        let kind = error_kind(error);
        let key = if self.kinds.contains_key(&kind) || self.kinds.len() < MAX_ERROR_KINDS {
            kind
        } else {
            "other".to_string()
        };
        *self.kinds.entry(key).or_default() += 1;
    }
}

fn error_kind(error: &str) -> String {
    let head = error.split([':', '(']).next().unwrap_or("").trim();
    let plausible = !head.is_empty()
        && head.len() <= 32
        && head
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || " -_".contains(c));
    if plausible {
        head.to_ascii_lowercase()
    } else {
        "other".to_string()
    }
}

fn summarize(
    s: &Snapshot,
    tally: &ErrorTally,
    elapsed: Duration,
    opts: &HeadlessOptions,
) -> Summary {
    let responses = s.hosts.iter().fold(StatusMix::default(), |mut sum, host| {
        sum.s2xx += host.status.s2xx;
        sum.s3xx += host.status.s3xx;
        sum.s4xx += host.status.s4xx;
        sum.s5xx += host.status.s5xx;
        sum.errors += host.status.errors;
        sum
    });
    let data_dir = if s.data_dir.is_empty() {
        opts.data_dir.display().to_string()
    } else {
        s.data_dir.clone()
    };
    Summary {
        pages: s.counters.pages_fetched,
        bytes: s.counters.bytes,
        duplicates: s.counters.duplicates,
        errors: s.counters.errors,
        errors_by_kind: tally.kinds.clone(),
        responses,
        robots_denied: s.counters.robots_denied,
        blocked: s.counters.blocked_by_rules,
        redirects: s.counters.redirects,
        not_modified: s.counters.not_modified,
        frontier_left: s.frontier_size,
        quarantined: s.quarantined,
        elapsed_secs: (elapsed.as_secs_f64() * 10.0).round() / 10.0,
        data_dir,
        finish_reason: s
            .finish_reason
            .as_deref()
            .map(|r| strip_control(r).into_owned())
            .unwrap_or_else(|| "the engine stopped without giving a reason".into()),
        open_alerts: s
            .alerts
            .iter()
            .filter(|a| a.status == AlertStatus::Open)
            .map(alert_summary)
            .collect(),
    }
}

fn alert_summary(a: &TrapAlert) -> AlertSummary {
    let kind = match a.suggested_rule.kind {
        crate::engine::control::PatternKind::Regex => "regex",
        crate::engine::control::PatternKind::Glob => "glob",
    };
    AlertSummary {
        id: a.id,
        host: strip_control(&a.host).into_owned(),
        kind: a.kind.label().to_string(),
        evidence: a.evidence_count,
        parked: a.matching_queued,
        suggested_rule: format!("{kind}:{}", strip_control(&a.suggested_rule.pattern)),
        rule_host: a
            .suggested_rule
            .host
            .as_deref()
            .map(|h| strip_control(h).into_owned()),
        samples: a
            .samples
            .iter()
            .take(3)
            .map(|u| strip_control(u).into_owned())
            .collect(),
    }
}

/// The human-readable summary, one fact a line.
pub fn summary_text(s: &Summary) -> String {
    let mut text = format!("crawl ended: {}\n", s.finish_reason);
    let mut line = |label: &str, value: String| text.push_str(&format!("  {label:<18}{value}\n"));
    line(
        "pages fetched",
        format!(
            "{} ({} in {})",
            s.pages,
            human_bytes(s.bytes),
            clock(s.elapsed_secs as u64)
        ),
    );
    line("duplicates", s.duplicates.to_string());
    let kinds: Vec<String> = s
        .errors_by_kind
        .iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    line(
        "errors",
        if kinds.is_empty() {
            s.errors.to_string()
        } else {
            format!("{} ({})", s.errors, kinds.join(", "))
        },
    );
    let r = &s.responses;
    line(
        "responses",
        format!(
            "2xx {} | 3xx {} | 4xx {} | 5xx {} | no response {}",
            r.s2xx, r.s3xx, r.s4xx, r.s5xx, r.errors
        ),
    );
    line("robots denied", s.robots_denied.to_string());
    line("blocked by rules", s.blocked.to_string());
    line("left in frontier", s.frontier_left.to_string());
    line("quarantined", s.quarantined.to_string());
    line("data", s.data_dir.clone());
    if !s.open_alerts.is_empty() {
        text.push_str(&format!(
            "open trap alerts: {} (their URLs are parked; decide with `crawldeck --data {}`)\n",
            s.open_alerts.len(),
            s.data_dir
        ));
        for a in &s.open_alerts {
            text.push_str(&format!("  {}\n", alert_text(a)));
            for sample in &a.samples {
                text.push_str(&format!("      e.g. {sample}\n"));
            }
        }
    }
    text
}

fn alert_text(a: &AlertSummary) -> String {
    let scope = a
        .rule_host
        .as_deref()
        .map(|h| format!(" on {h}"))
        .unwrap_or_default();
    format!(
        "#{} {}: {}, {} URLs seen, {} parked — suggested rule {}{}",
        a.id, a.host, a.kind, a.evidence, a.parked, a.suggested_rule, scope
    )
}

fn clock(secs: u64) -> String {
    if secs >= 3600 {
        format!("{}h{:02}m", secs / 3600, secs % 3600 / 60)
    } else {
        format!("{}:{:02}", secs / 60, secs % 60)
    }
}

fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::control::{PatternKind, RuleSpec};
    use crate::engine::telemetry::{CrawlState, HostView, TrapKind};

    fn snapshot(pages: u64) -> Snapshot {
        let mut s = Snapshot {
            state: CrawlState::Running,
            pages_per_sec: 10.0,
            frontier_size: 100 - pages,
            in_flight: 2,
            hosts_total: 3,
            data_dir: "/tmp/crawl1".into(),
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
        s.counters.errors = 3;
        s.counters.duplicates = 4;
        s.counters.robots_denied = 5;
        s.counters.blocked_by_rules = 6;
        s.quarantined = 40;
        let mut host = HostView::default();
        host.status.record_status(200);
        host.status.record_status(404);
        host.status.errors = 2;
        s.hosts = vec![host];
        let alert = |id, status| TrapAlert {
            id,
            host: "cal.localhost:4000".into(),
            kind: TrapKind::Counter,
            evidence_count: 25,
            samples: vec!["http://cal.localhost:4000/day/\u{1b}]0;x\u{7}2".into()],
            suggested_rule: RuleSpec {
                kind: PatternKind::Regex,
                pattern: "^http://cal\\.localhost:4000/day/".into(),
                host: Some("cal.localhost:4000".into()),
            },
            matching_queued: 40,
            status,
        };
        s.alerts = vec![
            alert(7, AlertStatus::Open),
            alert(8, AlertStatus::Dismissed),
        ];
        s
    }

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
                tokio::time::sleep(Duration::from_millis(if pages == 10 { 500 } else { 1000 }))
                    .await;
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
            err.contains("errors            3 (other 1, timeout 2)"),
            "{err}"
        );
        assert!(
            err.contains("2xx 1 | 3xx 0 | 4xx 1 | 5xx 0 | no response 2"),
            "{err}"
        );
        assert!(err.contains("robots denied     5"), "{err}");
        assert!(err.contains("open trap alerts: 1"), "{err}");
        let raised = err
            .find("\ntrap alert #7 cal.localhost:4000: calendar/counter")
            .unwrap();
        assert!(raised < err.find("crawl ended").unwrap(), "{err}");
        assert!(
            err.contains("#7 cal.localhost:4000: calendar/counter, 25 URLs seen, 40 parked"),
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
        assert_eq!(summary["errors_by_kind"]["timeout"], 2);
        assert_eq!(summary["data_dir"], "/tmp/crawl1");
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
            alert.ends_with("\r\u{1b}[2Ktrap alert #7 cal.localhost:4000: calendar/counter, 25 URLs seen, 40 parked — suggested rule regex:^http://cal\\.localhost:4000/day/ on cal.localhost:4000"),
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
}
