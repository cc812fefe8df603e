//! Front queues per priority as bars, and where the hosts (back queues) stand.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Widget};

use super::{count, Theme};
use crate::tui::model::Model;

/// The queues pane: a bar per front queue, then the hosts by state.
pub fn render(model: &Model, theme: &Theme, area: Rect, buf: &mut Buffer) {
    let s = &model.shown;
    let block = Block::bordered().title(" Queues ");
    let inner = block.inner(area);
    block.render(area, buf);
    let max = s.front_queues.iter().copied().max().unwrap_or(0).max(1);
    // "P0 " + bar + " 12,345"
    let bar_width = (inner.width as usize).saturating_sub(12).max(1);
    let mut lines = vec![Line::from("front queues (priority)")];
    for (level, depth) in s.front_queues.iter().enumerate() {
        let filled = ((*depth as f64 / max as f64) * bar_width as f64).ceil() as usize;
        let filled = if *depth == 0 {
            0
        } else {
            filled.clamp(1, bar_width)
        };
        lines.push(Line::from(vec![
            Span::raw(format!("P{level} ")),
            Span::styled("█".repeat(filled), theme.accent()),
            Span::raw(format!(
                "{} {:>7}",
                " ".repeat(bar_width - filled),
                count(*depth)
            )),
        ]));
    }
    lines.push(Line::from(""));
    lines.push(Line::from("hosts (back queues)"));
    for (label, value) in [
        ("ready", s.hosts_ready),
        ("waiting (politeness)", s.hosts_waiting),
        ("paused", s.hosts_paused),
        ("breaker open", s.hosts_breaker_open),
        ("robots postponed", s.hosts_robots_pending),
        ("total", s.hosts_total),
    ] {
        lines.push(Line::from(format!(" {label:<21}{value:>5}")));
    }
    lines.push(Line::from(format!(
        " {:<21}{:>5}",
        "in flight", s.in_flight
    )));
    lines.push(Line::from(format!(
        " {:<21}{:>5}",
        "quarantined URLs", s.quarantined
    )));
    Paragraph::new(lines).render(inner, buf);
}
