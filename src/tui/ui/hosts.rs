//! The hosts table: one row per host, sortable and filterable.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::Span;
use ratatui::widgets::{Block, Cell, Row, StatefulWidget, Table, TableState};

use super::{count, short, strip, Theme};
use crate::engine::telemetry::{BreakerPhase, DelaySource, HostView};
use crate::tui::model::{Model, SortColumn};

/// The breaker as a word (with time to the next probe while OPEN), in its colour.
pub fn breaker_cell<'a>(host: &HostView, theme: &Theme) -> Span<'a> {
    let phase = host.breaker.phase;
    let text = match (phase, host.breaker.next_probe_in) {
        (BreakerPhase::Open, Some(d)) => format!("OPEN {}", short(d)),
        _ => phase.label().to_string(),
    };
    Span::styled(text, theme.breaker(phase))
}

fn delay_source_short(source: DelaySource) -> &'static str {
    match source {
        DelaySource::Config => "cfg",
        DelaySource::CrawlDelay => "robots",
        DelaySource::Adaptive => "adapt",
        DelaySource::RetryAfter => "retry",
        DelaySource::Operator => "op",
    }
}

pub fn render(model: &Model, theme: &Theme, area: Rect, buf: &mut Buffer) {
    // Optional columns appear as width allows; the host column keeps >= 20 cells.
    let avail = area.width.saturating_sub(2);
    let (show_source, show_state, show_robots) = (avail >= 85, avail >= 94, avail >= 104);
    let hosts = model.visible_hosts();
    let mut title = format!(" Hosts {}/{} ", hosts.len(), model.shown.hosts.len());
    if !model.filter.is_empty() {
        title.push_str(&format!("filter \"{}\" ", strip(&model.filter)));
    }
    let arrow = if model.sort_reverse { "▲" } else { "▼" };
    let head = |label: &str, col: SortColumn| {
        if model.sort == col {
            format!("{label}{arrow}")
        } else {
            label.to_string()
        }
    };
    let mut header = vec![
        head("Host", SortColumn::Host),
        head("Queue", SortColumn::Queued),
        head("Fly", SortColumn::InFlight),
        head("Req/s", SortColumn::ReqPerSec),
        head("Lat", SortColumn::Latency),
        head("Delay", SortColumn::Delay),
        head("2xx/3/4/5/err", SortColumn::Errors),
    ];
    if show_robots {
        header.push("Robots".into());
    }
    header.push(head("Breaker", SortColumn::Breaker));
    if show_state {
        header.push("State".into());
    }
    let rows = hosts.iter().map(|h| {
        let m = &h.status;
        let mut cells = vec![
            Cell::from(strip(&h.host).into_owned()),
            Cell::from(count(h.queued)),
            Cell::from(format!("{}/{}", h.in_flight, h.max_in_flight)),
            Cell::from(format!("{:.1}", h.req_per_sec)),
            Cell::from(short(h.mean_latency)),
            Cell::from(if show_source {
                format!("{} {}", short(h.delay), delay_source_short(h.delay_source))
            } else {
                short(h.delay)
            }),
            Cell::from(format!(
                "{}/{}/{}/{}/{}",
                m.s2xx, m.s3xx, m.s4xx, m.s5xx, m.errors
            )),
        ];
        if show_robots {
            cells.push(Cell::from(h.robots.label()));
        }
        cells.push(Cell::from(breaker_cell(h, theme)));
        if show_state {
            let state = if h.paused {
                "paused"
            } else {
                h.activity.label()
            };
            cells.push(Cell::from(state));
        }
        Row::new(cells)
    });
    let mut widths = vec![
        Constraint::Min(20),
        Constraint::Length(6),
        Constraint::Length(5),
        Constraint::Length(5),
        Constraint::Length(6),
        Constraint::Length(if show_source { 12 } else { 6 }),
        Constraint::Length(14),
    ];
    if show_robots {
        widths.push(Constraint::Length(9));
    }
    widths.push(Constraint::Length(9));
    if show_state {
        widths.push(Constraint::Length(8));
    }
    let table = Table::new(rows, widths)
        .header(Row::new(header).style(Style::new().add_modifier(Modifier::BOLD)))
        .block(Block::bordered().title(title))
        .row_highlight_style(Style::new().add_modifier(Modifier::REVERSED))
        .column_spacing(1);
    let mut state =
        TableState::default().with_selected((!hosts.is_empty()).then_some(model.host_selected));
    StatefulWidget::render(table, area, buf, &mut state);
}
