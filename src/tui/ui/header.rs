//! The header (state, counters, rate sparkline) and the queues pane.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Sparkline, Widget};

use super::Theme;
use crate::engine::telemetry::{CrawlState, PRIORITY_LEVELS};
use crate::text::strip_control;
use crate::tui::model::Model;

pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

pub fn clock(d: std::time::Duration) -> String {
    let s = d.as_secs();
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

fn state_color(state: CrawlState) -> Color {
    match state {
        CrawlState::Running => Color::Green,
        CrawlState::Paused => Color::Yellow,
        CrawlState::Draining => Color::Magenta,
        CrawlState::Done => Color::Cyan,
        CrawlState::Starting => Color::Gray,
    }
}

pub fn render(model: &Model, theme: Theme, area: Rect, buf: &mut Buffer) {
    let s = model.shown();
    let [first, second, spark] = Layout::vertical([Constraint::Length(1); 3]).areas(area);
    let mut title = vec![
        Span::styled(" crawldeck ", theme.bold()),
        Span::styled(
            format!(" {} ", s.state.label()),
            theme
                .fg(state_color(s.state))
                .add_modifier(Modifier::BOLD | Modifier::REVERSED),
        ),
        Span::raw(format!("  {}  ", clock(s.elapsed))),
    ];
    if model.frozen.is_some() {
        title.push(Span::styled(
            "FROZEN  ",
            theme.fg(Color::Yellow).add_modifier(Modifier::BOLD),
        ));
    }
    title.push(Span::raw(format!("data {}", strip_control(&s.data_dir))));
    Paragraph::new(Line::from(title)).render(first, buf);
    let stats = format!(
        " pages {} · {:.1}/s · {} · err {} · dup {} · frontier {} · in flight {} · hosts {} · parked {}",
        s.counters.pages_fetched,
        s.pages_per_sec,
        bytes(s.counters.bytes),
        s.counters.errors,
        s.counters.duplicates,
        s.frontier_size,
        s.in_flight,
        s.hosts_total,
        s.quarantined,
    );
    Paragraph::new(stats).render(second, buf);
    let [label, line] =
        Layout::horizontal([Constraint::Length(10), Constraint::Min(1)]).areas(spark);
    Paragraph::new(" pages/s ").render(label, buf);
    let history: Vec<u64> = model
        .history
        .iter()
        .rev()
        .take(line.width as usize)
        .rev()
        .copied()
        .collect();
    Sparkline::default()
        .data(&history)
        .style(theme.fg(Color::Cyan))
        .render(line, buf);
}

fn back_queue_counts(model: &Model) -> [(&'static str, u32); 5] {
    let s = model.shown();
    [
        ("ready", s.hosts_ready),
        ("waiting", s.hosts_waiting),
        ("paused", s.hosts_paused),
        ("breaker open", s.hosts_breaker_open),
        ("robots pending", s.hosts_robots_pending),
    ]
}

pub fn render_queues(model: &Model, theme: Theme, area: Rect, buf: &mut Buffer) {
    let s = model.shown();
    let block = theme.block("Queues", false);
    let inner = block.inner(area);
    block.render(area, buf);
    let max = s.front_queues.iter().copied().max().unwrap_or(0).max(1);
    let bar_width = inner.width.saturating_sub(14) as u64;
    let mut lines = vec![Line::styled("front queues (priority)", theme.bold())];
    for (level, depth) in s.front_queues.iter().enumerate().take(PRIORITY_LEVELS) {
        let filled = (depth * bar_width).div_ceil(max).min(bar_width) as usize;
        lines.push(Line::from(vec![
            Span::raw(format!(" P{level} ")),
            Span::styled("█".repeat(filled), theme.fg(Color::Blue)),
            Span::raw(format!(" {depth}")),
        ]));
    }
    lines.push(Line::styled("back queues (hosts)", theme.bold()));
    for (label, count) in back_queue_counts(model) {
        lines.push(Line::from(format!(" {label:<15}{count:>6}")));
    }
    lines.push(Line::from(format!(
        " {:<15}{:>6}",
        "in flight", s.in_flight
    )));
    Paragraph::new(lines).render(inner, buf);
}

/// One line of queue figures for small terminals.
pub fn render_queues_line(model: &Model, theme: Theme, area: Rect, buf: &mut Buffer) {
    let s = model.shown();
    let front = s
        .front_queues
        .iter()
        .enumerate()
        .map(|(i, d)| format!("P{i} {d}"))
        .collect::<Vec<_>>()
        .join(" ");
    let hosts = back_queue_counts(model)
        .iter()
        .map(|(l, c)| format!("{} {c}", l.split(' ').next().unwrap_or(l)))
        .collect::<Vec<_>>()
        .join(" ");
    Paragraph::new(Line::styled(
        format!(" queues {front} | hosts {hosts}"),
        theme.fg(Color::Gray),
    ))
    .render(area, buf);
}
