//! One host up close: settings, robots, breaker, queue head and recent fetches.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Widget};

use super::hosts::breaker_cell;
use super::{bytes, count, short, strip, Theme};
use crate::tui::model::Model;

pub fn render(model: &Model, theme: &Theme, host: &str, area: Rect, buf: &mut Buffer) {
    let block = Block::bordered().title(format!(" {} ", strip(host)));
    let inner = block.inner(area);
    block.render(area, buf);
    let mut lines: Vec<Line> = Vec::new();
    match model.shown.hosts.iter().find(|h| h.host == host) {
        None => lines.push(Line::from(
            "this host is not in the current snapshot (idle hosts may be left out)",
        )),
        Some(h) => {
            let state = if h.paused {
                "paused"
            } else {
                h.activity.label()
            };
            lines.push(Line::from(format!(
                "state {state}   queued {}   in flight {}/{}   fetched {}   quarantined {}",
                count(h.queued),
                h.in_flight,
                h.max_in_flight,
                count(h.fetched),
                count(h.quarantined)
            )));
            let overrides = match (h.delay_override, h.concurrency_override) {
                (None, None) => "none".to_string(),
                (d, c) => {
                    let d = d.map_or("-".into(), short);
                    let c = c.map_or("-".into(), |c| c.to_string());
                    format!("delay {d}, concurrency {c}")
                }
            };
            lines.push(Line::from(format!(
                "delay {} ({})   req/s {:.2}   mean latency {}   overrides: {overrides}",
                short(h.delay),
                h.delay_source.label(),
                h.req_per_sec,
                short(h.mean_latency)
            )));
            let m = &h.status;
            lines.push(Line::from(format!(
                "responses 2xx {}  3xx {}  4xx {}  5xx {}  errors {}",
                m.s2xx, m.s3xx, m.s4xx, m.s5xx, m.errors
            )));
            let summary = h.robots_summary.as_deref().map(strip).unwrap_or_default();
            lines.push(Line::from(format!(
                "robots {}  {summary}",
                h.robots.label()
            )));
            let b = &h.breaker;
            let mut breaker = vec![Span::raw("breaker "), breaker_cell(h, theme)];
            breaker.push(Span::raw(format!(
                "  consecutive failures {}  window failures {}  opened {}×",
                b.consecutive_failures, b.window_failures, b.opens
            )));
            if let Some(err) = &b.last_error {
                breaker.push(Span::raw(format!("  last error: {}", strip(err))));
            }
            lines.push(Line::from(breaker));
            lines.push(Line::from(""));
            lines.push(Line::styled("queue head", theme.accent()));
            if h.queue_head.is_empty() {
                lines.push(Line::from("  (empty)"));
            }
            for url in &h.queue_head {
                lines.push(Line::from(format!("  {}", strip(url))));
            }
        }
    }
    lines.push(Line::from(""));
    lines.push(Line::styled(
        "recent fetches (newest first)",
        theme.accent(),
    ));
    match model.recent.get(host) {
        Some(fetches) if !fetches.is_empty() => {
            for f in fetches.iter().rev() {
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
                lines.push(Line::from(text));
            }
        }
        _ => lines.push(Line::from("  (none yet)")),
    }
    let scroll = model.detail_scroll.min(lines.len().saturating_sub(1)) as u16;
    Paragraph::new(lines).scroll((scroll, 0)).render(inner, buf);
}
