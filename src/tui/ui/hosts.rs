//! The hosts table and a host's detail view.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Color;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Clear, Paragraph, Row, StatefulWidget, Table, TableState, Widget};

use super::header::bytes;
use super::Theme;
use crate::engine::telemetry::{BreakerPhase, BreakerView, DelaySource, HostView};
use crate::text::strip_control;
use crate::tui::model::{Model, Pane};

fn millis(d: std::time::Duration) -> String {
    if d.as_millis() >= 10_000 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}

/// The breaker as a word, with the time to the next probe when OPEN.
pub fn breaker_word(b: &BreakerView) -> String {
    match (b.phase, b.next_probe_in) {
        (BreakerPhase::Open, Some(t)) => format!("OPEN {}s", t.as_secs()),
        (phase, _) => phase.label().to_string(),
    }
}

/// Delay sources in the table's narrow column (the detail view spells them out).
fn short_source(source: DelaySource) -> &'static str {
    match source {
        DelaySource::Config => "cfg",
        DelaySource::CrawlDelay => "robots",
        DelaySource::Adaptive => "adapt",
        DelaySource::RetryAfter => "retry",
        DelaySource::Operator => "oper",
    }
}

fn row<'a>(h: &'a HostView, theme: Theme, compact: bool) -> Row<'a> {
    let mix = format!(
        "{}/{}/{}/{}/{}",
        h.status.s2xx, h.status.s3xx, h.status.s4xx, h.status.s5xx, h.status.errors
    );
    let delay = format!("{} {}", millis(h.delay), short_source(h.delay_source));
    let host = if h.paused {
        format!("{} (paused)", strip_control(&h.host))
    } else {
        strip_control(&h.host).into_owned()
    };
    let breaker = Cell::from(Span::styled(
        breaker_word(&h.breaker),
        theme.breaker(h.breaker.phase),
    ));
    if compact {
        return Row::new(vec![
            Cell::from(host),
            Cell::from(h.queued.to_string()),
            Cell::from(format!("{}/{}", h.in_flight, h.max_in_flight)),
            Cell::from(format!("{:.1}", h.req_per_sec)),
            Cell::from(delay),
            Cell::from((h.status.s5xx + h.status.errors).to_string()),
            breaker,
        ]);
    }
    Row::new(vec![
        Cell::from(host),
        Cell::from(h.queued.to_string()),
        Cell::from(format!("{}/{}", h.in_flight, h.max_in_flight)),
        Cell::from(format!("{:.1}", h.req_per_sec)),
        Cell::from(millis(h.mean_latency)),
        Cell::from(delay),
        Cell::from(mix),
        Cell::from(h.robots.label()),
        breaker,
    ])
}

pub fn render_table(model: &Model, theme: Theme, area: Rect, buf: &mut Buffer) {
    let rows = model.host_rows();
    let arrow = if model.sort_desc { "↓" } else { "↑" };
    let title = format!(
        "Hosts ({}{}) sorted by {} {arrow}",
        rows.len(),
        if model.filter.is_empty() {
            String::new()
        } else {
            format!(", filter \"{}\"", model.filter)
        },
        model.sort.title()
    );
    // Small terminals drop latency, the status mix and robots (the detail view has them).
    let compact = area.width < 100;
    let (names, widths): (&[&str], Vec<Constraint>) = if compact {
        (
            &[
                "host", "queue", "infl", "req/s", "delay", "5xx+err", "breaker",
            ],
            vec![
                Constraint::Fill(1),
                Constraint::Length(6),
                Constraint::Length(4),
                Constraint::Length(5),
                Constraint::Length(13),
                Constraint::Length(7),
                Constraint::Length(8),
            ],
        )
    } else {
        (
            &[
                "host",
                "queue",
                "infl",
                "req/s",
                "latency",
                "delay",
                "2xx/3/4/5/err",
                "robots",
                "breaker",
            ],
            vec![
                Constraint::Fill(1),
                Constraint::Length(6),
                Constraint::Length(4),
                Constraint::Length(5),
                Constraint::Length(7),
                Constraint::Length(13),
                Constraint::Length(15),
                Constraint::Length(9),
                Constraint::Length(8),
            ],
        )
    };
    let sorted_title = model.sort.title();
    let header = Row::new(names.iter().map(|h| {
        let sorted = *h == sorted_title || (sorted_title == "in flight" && *h == "infl");
        Cell::from(*h).style(if sorted {
            theme.bold().fg(Color::Cyan)
        } else {
            theme.bold()
        })
    }));
    let table = Table::new(rows.iter().map(|h| row(h, theme, compact)), widths)
        .header(header)
        .block(theme.block(&title, model.pane == Pane::Hosts))
        .column_spacing(1)
        .row_highlight_style(theme.selected());
    let mut state = TableState::default().with_selected(Some(model.selected[Pane::Hosts.index()]));
    StatefulWidget::render(table, area, buf, &mut state);
}

pub fn render_detail(model: &Model, theme: Theme, host: &str, area: Rect, buf: &mut Buffer) {
    Clear.render(area, buf);
    let block = theme.block(&format!("Host {} (Esc back)", strip_control(host)), true);
    let inner = block.inner(area);
    block.render(area, buf);
    let Some(h) = model.shown().hosts.iter().find(|h| h.host == host) else {
        Paragraph::new("this host is no longer in the snapshot").render(inner, buf);
        return;
    };
    let [facts, lists] = Layout::vertical([Constraint::Length(9), Constraint::Min(3)]).areas(inner);
    let b = &h.breaker;
    let overrides = match (h.delay_override, h.concurrency_override) {
        (None, None) => "none".to_string(),
        (d, c) => format!(
            "delay {} · concurrency {}",
            d.map(millis).unwrap_or_else(|| "default".into()),
            c.map(|c| c.to_string()).unwrap_or_else(|| "default".into())
        ),
    };
    let lines = vec![
        Line::from(format!(
            " queue {}  in flight {}/{}  fetched {}  quarantined {}  {}",
            h.queued,
            h.in_flight,
            h.max_in_flight,
            h.fetched,
            h.quarantined,
            h.activity.label()
        )),
        Line::from(format!(
            " req/s {:.2}  mean latency {}  delay {} ({})",
            h.req_per_sec,
            millis(h.mean_latency),
            millis(h.delay),
            h.delay_source.label()
        )),
        Line::from(format!(
            " operator overrides: {overrides}{}",
            if h.paused { " · PAUSED" } else { "" }
        )),
        Line::from(format!(
            " responses 2xx {} · 3xx {} · 4xx {} · 5xx {} · errors {}",
            h.status.s2xx, h.status.s3xx, h.status.s4xx, h.status.s5xx, h.status.errors
        )),
        Line::from(format!(
            " robots.txt: {} — {}",
            h.robots.label(),
            h.robots_summary
                .as_deref()
                .map(strip_control)
                .unwrap_or_default()
        )),
        Line::from(vec![
            Span::raw(" breaker: "),
            Span::styled(breaker_word(b), theme.breaker(b.phase)),
            Span::raw(format!(
                "  consecutive failures {}  in window {}  opened {}×",
                b.consecutive_failures, b.window_failures, b.opens
            )),
        ]),
        Line::from(format!(
            " last error: {}",
            b.last_error
                .as_deref()
                .map(strip_control)
                .unwrap_or("none".into())
        )),
    ];
    Paragraph::new(lines).render(facts, buf);
    let [head, recent] =
        Layout::horizontal([Constraint::Percentage(45), Constraint::Percentage(55)]).areas(lists);
    let head_lines: Vec<Line> = h
        .queue_head
        .iter()
        .map(|u| Line::from(format!(" {}", strip_control(u))))
        .collect();
    Paragraph::new(head_lines)
        .block(theme.block("Next in queue", false))
        .render(head, buf);
    let fetches: Vec<Line> = model
        .recent
        .get(host)
        .map(|lines| {
            lines
                .iter()
                .rev()
                .map(|f| {
                    let status = match (f.status, &f.error) {
                        (Some(s), _) => s.to_string(),
                        (None, Some(_)) => "err".into(),
                        (None, None) => "-".into(),
                    };
                    Line::from(format!(
                        " {status:>3} {:>7} {:>9} {}",
                        millis(f.latency),
                        bytes(f.bytes),
                        strip_control(&f.url)
                    ))
                })
                .collect()
        })
        .unwrap_or_default();
    Paragraph::new(fetches)
        .block(theme.block("Recent fetches", false))
        .render(recent, buf);
}
