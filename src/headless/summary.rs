//! The end-of-crawl summary: counts, errors by kind and the open trap
//! alerts, as text for stderr or as the `{"summary": …}` JSON line.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use super::HeadlessOptions;
use crate::engine::telemetry::{AlertStatus, Snapshot, StatusMix, TrapAlert};
pub(super) use crate::text::human_bytes;
use crate::text::strip_control;

/// The final report, printed as text or as `{"summary": …}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub pages: u64,
    pub bytes: u64,
    pub duplicates: u64,
    pub errors: u64,
    /// Failed URLs by kind, as the engine counted them (one per URL).
    pub errors_by_kind: BTreeMap<String, u64>,
    /// Recorded URLs by status class (summing to `pages`), and those with no response.
    pub responses: StatusMix,
    pub robots_denied: u64,
    pub blocked: u64,
    /// URLs not connected to because their address is private (of the errors).
    pub refused_private: u64,
    /// Whether private addresses were allowed (`--allow-private`).
    pub allow_private: bool,
    pub redirects: u64,
    pub not_modified: u64,
    /// WARC revisit records written, and the body bytes they did not store again.
    pub revisits: u64,
    pub revisit_bytes_saved: u64,
    /// Links past a page's caps, not followed, and the pages that had them.
    pub links_cut: u64,
    pub pages_cut: u64,
    /// Pages whose body was cut at `fetch.max_body`.
    pub bodies_cut: u64,
    /// Resources and external URLs requested for their status (not pages).
    pub checked: u64,
    /// Resource references past a page's cap, not checked.
    pub resources_cut: u64,
    /// Resources fetched and archived (`--resources fetch`), and their body bytes.
    pub resources_fetched: u64,
    pub resource_bytes: u64,
    pub frontier_left: u64,
    pub quarantined: u64,
    pub elapsed_secs: f64,
    pub data_dir: String,
    /// The product token robots.txt groups and meta robots were matched against.
    pub product_token: String,
    /// The User-Agent header the crawl was sent with.
    pub user_agent: String,
    pub finish_reason: String,
    pub open_alerts: Vec<AlertSummary>,
    /// Alerts of `--traps alert-only`: raised, nothing parked.
    pub noted_alerts: Vec<AlertSummary>,
    /// How to decide open alerts of a worker of a shared crawl, whose URLs
    /// are parked in Redis (the per-alert commands need the data directory's own).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shared_decide: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AlertSummary {
    pub id: u64,
    /// `open` (its URLs parked) or `noted` (`--traps alert-only`).
    pub status: String,
    pub host: String,
    pub kind: String,
    pub evidence: u64,
    pub parked: u64,
    /// The suggested rule as the TUI's rule editor takes it: `kind:pattern`.
    pub suggested_rule: String,
    pub rule_host: Option<String>,
    pub samples: Vec<String>,
    /// `would block N queued, M parked; K fetched good pages match`, when measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub impact: Option<String>,
    /// What to run about an open alert once the crawl has ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commands: Option<AlertCommands>,
}

/// Commands that work on the ended crawl's data directory.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AlertCommands {
    /// Lists the URLs the alert parked.
    pub list: String,
    /// Dismisses the alert: its parked URLs go back to the frontier and are fetched.
    pub release: String,
    /// Accepts the alert: its parked URLs are blocked under its rule.
    pub block: String,
}

impl AlertCommands {
    fn of(id: u64, data_dir: &str) -> AlertCommands {
        let dir = shell_word(data_dir);
        AlertCommands {
            list: format!("crawldeck pages {dir} --fate parked --by alert:{id}"),
            release: format!("crawldeck crawl --headless --data {dir} --dismiss {id}"),
            block: format!("crawldeck crawl --headless --data {dir} --accept {id}"),
        }
    }
}

/// `s` as one word for a POSIX shell: quoted unless plainly safe.
fn shell_word(s: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "/._-+:,@%=".contains(c);
    if !s.is_empty() && s.chars().all(safe) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

pub(super) fn summarize(s: &Snapshot, elapsed: Duration, opts: &HeadlessOptions) -> Summary {
    let data_dir = if s.data_dir.is_empty() {
        opts.data_dir.display().to_string()
    } else {
        s.data_dir.clone()
    };
    let shared = crate::engine::frontier::shared_crawl(std::path::Path::new(&data_dir));
    Summary {
        pages: s.counters.pages_fetched,
        bytes: s.counters.bytes,
        duplicates: s.counters.duplicates,
        errors: s.counters.errors,
        errors_by_kind: s.counters.errors_by_kind.clone(),
        responses: s.counters.responses,
        robots_denied: s.counters.robots_denied,
        blocked: s.counters.blocked_by_rules,
        refused_private: s.counters.refused_private,
        allow_private: opts.allow_private,
        redirects: s.counters.redirects,
        not_modified: s.counters.not_modified,
        revisits: s.counters.revisits,
        revisit_bytes_saved: s.counters.revisit_bytes_saved,
        links_cut: s.counters.links_cut,
        pages_cut: s.counters.pages_cut,
        bodies_cut: s.counters.bodies_cut,
        checked: s.counters.checked,
        resources_cut: s.counters.resources_cut,
        resources_fetched: s.counters.resources_fetched,
        resource_bytes: s.counters.resource_bytes,
        frontier_left: s.frontier_size,
        quarantined: s.quarantined,
        elapsed_secs: (elapsed.as_secs_f64() * 10.0).round() / 10.0,
        product_token: strip_control(&s.product_token).into_owned(),
        user_agent: strip_control(&s.user_agent).into_owned(),
        finish_reason: s
            .finish_reason
            .as_deref()
            .map(|r| strip_control(r).into_owned())
            .unwrap_or_else(|| "the engine stopped without giving a reason".into()),
        open_alerts: s
            .alerts
            .iter()
            .filter(|a| a.status == AlertStatus::Open)
            .map(|a| AlertSummary {
                commands: shared.is_none().then(|| AlertCommands::of(a.id, &data_dir)),
                ..alert_summary(a)
            })
            .collect(),
        noted_alerts: s
            .alerts
            .iter()
            .filter(|a| a.status == AlertStatus::Noted)
            .map(alert_summary)
            .collect(),
        data_dir,
        shared_decide: shared.map(|(url, crawl)| {
            format!("`crawldeck attach --redis {url} --crawl {crawl}` while a worker of it runs")
        }),
    }
}

pub(super) fn alert_summary(a: &TrapAlert) -> AlertSummary {
    let kind = match a.suggested_rule.kind {
        crate::engine::control::PatternKind::Regex => "regex",
        crate::engine::control::PatternKind::Glob => "glob",
    };
    AlertSummary {
        id: a.id,
        status: a.status.label().to_string(),
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
        impact: a.impact.as_ref().map(|i| i.summary()),
        commands: None,
    }
}

/// `12 records (340 KiB of bodies not stored again)`.
pub(crate) fn revisits_value(records: u64, saved: u64) -> String {
    format!(
        "{records} records ({} of bodies not stored again)",
        human_bytes(saved)
    )
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
    if s.not_modified > 0 {
        // A recrawl pass: unchanged pages answered 304.
        line("not modified", s.not_modified.to_string());
    }
    if s.revisits > 0 {
        line(
            "WARC revisits",
            revisits_value(s.revisits, s.revisit_bytes_saved),
        );
    }
    line("errors", errors_value(s));
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
    if s.refused_private > 0 {
        line(
            "private refused",
            format!(
                "{} (private addresses no seed is on; --allow-private allows them)",
                s.refused_private
            ),
        );
    }
    if s.links_cut > 0 {
        line(
            "links cut",
            format!(
                "{} on {} pages, not followed: past the per-page cap (scope.max_links_per_page or max_link_bytes_per_page)",
                s.links_cut, s.pages_cut
            ),
        );
    }
    if s.bodies_cut > 0 {
        line(
            "bodies cut",
            format!(
                "{} pages kept up to fetch.max_body (their start archived and read for links)",
                s.bodies_cut
            ),
        );
    }
    if s.checked > 0 || s.resources_cut > 0 {
        line(
            "checked",
            format!(
                "{} resources and external URLs (HEAD, not pages); {} resources past the per-page cap",
                s.checked, s.resources_cut
            ),
        );
    }
    if s.resources_fetched > 0 {
        line(
            "resources fetched",
            format!(
                "{} ({}), archived in the WARC, not pages",
                s.resources_fetched,
                human_bytes(s.resource_bytes)
            ),
        );
    }
    line("left in frontier", s.frontier_left.to_string());
    line("quarantined", s.quarantined.to_string());
    line("data", s.data_dir.clone());
    if !s.product_token.is_empty() {
        line(
            "identity",
            format!("{} (User-Agent: {})", s.product_token, s.user_agent),
        );
    }
    if !s.open_alerts.is_empty() {
        text.push_str(&open_alerts_text(s));
    }
    if !s.noted_alerts.is_empty() {
        text.push_str(&noted_alerts_text(s));
    }
    text
}

/// The error count, followed by the kinds the engine counted them under.
fn errors_value(s: &Summary) -> String {
    let kinds: Vec<String> = s
        .errors_by_kind
        .iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    if kinds.is_empty() {
        s.errors.to_string()
    } else {
        format!("{} ({})", s.errors, kinds.join(", "))
    }
}

/// The open trap alerts with their impact and samples, and where to decide them.
fn open_alerts_text(s: &Summary) -> String {
    let decide = match &s.shared_decide {
        Some(shared) => format!("parked in Redis; decide with {shared}"),
        None => format!("parked; decide with `crawldeck --data {}`", s.data_dir),
    };
    let mut text = format!(
        "open trap alerts: {} (their URLs are {decide})\n",
        s.open_alerts.len()
    );
    for a in &s.open_alerts {
        text.push_str(&alert_lines(a));
        if let Some(c) = &a.commands {
            text.push_str(&format!(
                "      its {} parked URL(s): {}\n      release them (fetch): {}\n      or block them:        {}\n",
                a.parked, c.list, c.release, c.block
            ));
        }
    }
    text
}

/// Alerts of `--traps alert-only`: nothing was parked, the crawl went on.
fn noted_alerts_text(s: &Summary) -> String {
    let mut text = format!(
        "trap alerts noted: {} (--traps alert-only: nothing parked; their URLs were crawled)\n",
        s.noted_alerts.len()
    );
    for a in &s.noted_alerts {
        text.push_str(&alert_lines(a));
    }
    text
}

/// An alert, its impact and samples, indented under a heading.
fn alert_lines(a: &AlertSummary) -> String {
    let mut text = format!("  {}\n", alert_text(a));
    if let Some(impact) = &a.impact {
        text.push_str(&format!("      {impact}\n"));
    }
    for sample in &a.samples {
        text.push_str(&format!("      e.g. {sample}\n"));
    }
    text
}

pub(super) fn alert_text(a: &AlertSummary) -> String {
    let scope = a
        .rule_host
        .as_deref()
        .map(|h| format!(" on {h}"))
        .unwrap_or_default();
    // Under alert-only nothing is parked: the count is of matching queued URLs.
    let held = if a.status == AlertStatus::Noted.label() {
        "matching queued"
    } else {
        "parked"
    };
    format!(
        "#{} {}: {}, {} URLs seen, {} {held} — suggested rule {}{}",
        a.id, a.host, a.kind, a.evidence, a.parked, a.suggested_rule, scope
    )
}

pub(super) fn clock(secs: u64) -> String {
    if secs >= 3600 {
        format!("{}h{:02}m", secs / 3600, secs % 3600 / 60)
    } else {
        format!("{}:{:02}", secs / 60, secs % 60)
    }
}
