//! One host up close: settings, robots, breaker, queue head and recent fetches.

use std::collections::VecDeque;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Widget};

use super::hosts::{breaker_cell, host_state};
use super::{bytes, count, short, strip, Theme};
use crate::engine::telemetry::HostView;
use crate::tui::model::{FetchLine, HostListing, Model};

/// The detail view of `host`: its figures, then its recent fetches.
pub fn render(model: &Model, theme: &Theme, host: &str, area: Rect, buf: &mut Buffer) {
    let block = Block::bordered().title(format!(" {} ", strip(host)));
    let inner = block.inner(area);
    block.render(area, buf);
    let mut lines = match model.shown.host_detail(host) {
        None => vec![Line::from(
            "this host is not in the current snapshot (idle hosts may be left out)",
        )],
        Some(h) => host_lines(h, theme),
    };
    if let Some(cluster) = &model.shown.cluster {
        lines.insert(
            0,
            Line::from(match cluster.held_by.get(host) {
                Some(worker) => format!("held by worker {}", strip(worker)),
                None => "held by no worker now (a host is given back between fetches)".into(),
            }),
        );
    }
    lines.push(Line::from(""));
    match model.host_listing.as_ref().filter(|l| l.host == host) {
        Some(listing) => lines.extend(listing_lines(listing, theme)),
        None => {
            lines.push(Line::styled(
                "recent fetches (newest first)   enter: inspect  e: errors  w: redirects  b: not fetched",
                theme.accent(),
            ));
            lines.extend(fetch_lines(model.recent.get(host)));
        }
    }
    let scroll = model.detail_scroll.min(lines.len().saturating_sub(1)) as u16;
    Paragraph::new(lines).scroll((scroll, 0)).render(inner, buf);
}

/// A host list read from the store, under its title.
fn listing_lines<'a>(listing: &HostListing, theme: &Theme) -> Vec<Line<'a>> {
    let mut lines = vec![Line::styled(
        format!("{} (esc: back to recent fetches)", listing.list.label()),
        theme.accent(),
    )];
    match &listing.lines {
        None => lines.push(Line::from("reading the crawl's store…")),
        Some(Err(why)) => lines.push(Line::from(format!("cannot read it: {}", strip(why)))),
        Some(Ok(rows)) if rows.len() <= 1 => lines.push(Line::from("  (none)")),
        Some(Ok(rows)) => lines.extend(rows.iter().map(|r| Line::from(strip(r).into_owned()))),
    }
    lines
}

/// What the snapshot says of the host: counts, settings, responses, robots,
/// breaker and the head of its queue.
fn host_lines<'a>(h: &HostView, theme: &Theme) -> Vec<Line<'a>> {
    let m = &h.status;
    let summary = h.robots_summary.as_deref().map(strip).unwrap_or_default();
    let mut lines = vec![
        Line::from(format!(
            "state {}   queued {}   in flight {}/{}   fetched {}   quarantined {}",
            host_state(h),
            count(h.queued),
            h.in_flight,
            h.max_in_flight,
            count(h.fetched),
            count(h.quarantined)
        )),
        Line::from(format!(
            "delay {} ({})   req/s {:.2}   mean latency {}   overrides: {}",
            short(h.delay),
            h.delay_source.label(),
            h.req_per_sec,
            short(h.mean_latency),
            overrides(h)
        )),
        Line::from(format!(
            "responses 2xx {}  3xx {}  4xx {}  5xx {}  errors {}",
            m.s2xx, m.s3xx, m.s4xx, m.s5xx, m.errors
        )),
        Line::from(format!("robots {}  {summary}", h.robots.label())),
        breaker_line(h, theme),
    ];
    if let Some(why) = &h.last_refusal {
        lines.push(Line::from(format!(
            "refused {} (private address), latest: {}",
            count(m.refused),
            strip(why)
        )));
    }
    lines.push(Line::from(""));
    lines.push(Line::styled("queue head", theme.accent()));
    if h.queue_head.is_empty() {
        lines.push(Line::from("  (empty)"));
    }
    for url in &h.queue_head {
        lines.push(Line::from(format!("  {}", strip(url))));
    }
    lines
}

/// The operator's overrides of the host's delay and concurrency, or "none".
fn overrides(h: &HostView) -> String {
    match (h.delay_override, h.concurrency_override) {
        (None, None) => "none".to_string(),
        (d, c) => {
            let d = d.map_or("-".into(), short);
            let c = c.map_or("-".into(), |c| c.to_string());
            format!("delay {d}, concurrency {c}")
        }
    }
}

/// The breaker's phase in colour, its failure counts and its last error.
fn breaker_line<'a>(h: &HostView, theme: &Theme) -> Line<'a> {
    let b = &h.breaker;
    let mut breaker = vec![Span::raw("breaker "), breaker_cell(h, theme)];
    breaker.push(Span::raw(format!(
        "  consecutive failures {}  window failures {}  opened {}×",
        b.consecutive_failures, b.window_failures, b.opens
    )));
    if let Some(err) = &b.last_error {
        breaker.push(Span::raw(format!("  last error: {}", strip(err))));
    }
    Line::from(breaker)
}

/// One line per recent fetch, newest first.
fn fetch_lines<'a>(fetches: Option<&VecDeque<FetchLine>>) -> Vec<Line<'a>> {
    let Some(fetches) = fetches.filter(|f| !f.is_empty()) else {
        return vec![Line::from("  (none yet)")];
    };
    fetches
        .iter()
        .rev()
        .map(|f| {
            let status = match (f.status, &f.error) {
                (Some(s), _) => s.to_string(),
                (None, Some(_)) => "ERR".into(),
                (None, None) => "-".into(),
            };
            let mut text = format!(
                "  {status:>3} {:>7} {:>9}  {}",
                short(f.latency),
                bytes(f.bytes),
                strip(&f.url)
            );
            if let Some(err) = &f.error {
                text.push_str(&format!("  ({})", strip(err)));
            }
            Line::from(text)
        })
        .collect()
}
