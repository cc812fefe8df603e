//! The hosts table: one row per host, sortable and filterable.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::Span;
use ratatui::widgets::{Cell, Row, StatefulWidget, TableState};

use super::{count, short, strip, table, Theme};
use crate::engine::telemetry::{BreakerPhase, DelaySource, HostView};
use crate::text::cut_middle;
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

/// Where the delay comes from, in a few letters for the table.
fn delay_source_short(source: DelaySource) -> &'static str {
    match source {
        DelaySource::Config => "cfg",
        DelaySource::CrawlDelay => "robots",
        DelaySource::Adaptive => "adapt",
        DelaySource::RetryAfter => "retry",
        DelaySource::Operator => "op",
    }
}

/// The host's activity as a word, "paused" when the operator paused it.
pub fn host_state(host: &HostView) -> &'static str {
    if host.paused {
        "paused"
    } else {
        host.activity.label()
    }
}

/// Which optional columns fit, and how wide the host column is.
#[derive(Clone, Copy)]
struct Columns {
    /// Where the delay comes from, beside the delay.
    source: bool,
    state: bool,
    robots: bool,
    /// Which worker holds the host (a shared crawl).
    worker: bool,
    /// Cells for host names: the longest one shown, at least 20, at most
    /// what the other columns leave (and never over half the table).
    host: u16,
}

/// Cells the host column always gets.
const MIN_HOST_WIDTH: u16 = 20;

impl Columns {
    /// Optional columns appear as width allows (counted with a 20-cell host
    /// column); the host column then grows to the longest visible name.
    fn fitting(area: Rect, longest_host: usize, cluster: bool) -> Self {
        let avail = area.width.saturating_sub(2);
        let mut cols = Columns {
            source: avail >= 85,
            state: avail >= 94,
            robots: avail >= 104,
            worker: cluster,
            host: MIN_HOST_WIDTH,
        };
        let others: u16 = widths(cols)
            .iter()
            .skip(1)
            .map(|c| match c {
                Constraint::Length(n) | Constraint::Min(n) => n + 1,
                _ => 1,
            })
            .sum();
        let room = avail
            .saturating_sub(others)
            .min(avail / 2)
            .max(MIN_HOST_WIDTH);
        let longest = u16::try_from(longest_host).unwrap_or(u16::MAX);
        cols.host = longest.clamp(MIN_HOST_WIDTH, room);
        cols
    }
}

/// The hosts table, filtered and sorted as the model says, the selected row highlighted.
pub fn render(model: &Model, theme: &Theme, area: Rect, buf: &mut Buffer) {
    let hosts = model.visible_hosts();
    let longest = hosts.iter().map(|h| strip(&h.host).chars().count()).max();
    let held_by = model.shown.cluster.as_ref().map(|c| &c.held_by);
    let cols = Columns::fitting(area, longest.unwrap_or(0), held_by.is_some());
    let first = model.hosts_first();
    let rows = model.table_rows(|| hosts.len());
    let mut title = format!(" Hosts {rows}/{} ", model.hosts_listed());
    if !model.filter.is_empty() {
        title.push_str(&format!("filter \"{}\" ", strip(&model.filter)));
    }
    let rows = hosts.iter().map(|h| {
        let holder = held_by.and_then(|held| held.get(&h.host));
        row(h, holder.map(String::as_str), theme, cols)
    });
    let table = table(rows, Row::new(header(model, cols)), widths(cols), title);
    // Over the control socket the snapshot holds the rows from `first` on.
    let selected = model
        .host_selected
        .checked_sub(first)
        .filter(|row| *row < hosts.len());
    let mut state = TableState::default()
        .with_selected(selected)
        .with_offset(model.host_top.saturating_sub(first));
    StatefulWidget::render(table, area, buf, &mut state);
}

/// Column titles; the sort column carries an arrow for its direction.
fn header(model: &Model, cols: Columns) -> Vec<String> {
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
    if cols.robots {
        header.push("Robots".into());
    }
    header.push(head("Breaker", SortColumn::Breaker));
    if cols.state {
        header.push("State".into());
    }
    if cols.worker {
        header.push("Worker".into());
    }
    header
}

/// One host's row; `holder`: the worker holding it.
fn row<'a>(h: &HostView, holder: Option<&str>, theme: &Theme, cols: Columns) -> Row<'a> {
    let m = &h.status;
    let mut cells = vec![
        Cell::from(cut_middle(&strip(&h.host), usize::from(cols.host)).into_owned()),
        Cell::from(count(h.queued)),
        Cell::from(format!("{}/{}", h.in_flight, h.max_in_flight)),
        Cell::from(format!("{:.1}", h.req_per_sec)),
        Cell::from(short(h.mean_latency)),
        Cell::from(if cols.source {
            format!("{} {}", short(h.delay), delay_source_short(h.delay_source))
        } else {
            short(h.delay)
        }),
        Cell::from(format!(
            "{}/{}/{}/{}/{}",
            m.s2xx, m.s3xx, m.s4xx, m.s5xx, m.errors
        )),
    ];
    if cols.robots {
        cells.push(Cell::from(h.robots.label()));
    }
    cells.push(Cell::from(breaker_cell(h, theme)));
    if cols.state {
        cells.push(Cell::from(host_state(h)));
    }
    if cols.worker {
        cells.push(Cell::from(strip(holder.unwrap_or("-")).into_owned()));
    }
    Row::new(cells)
}

/// Column widths, matching `header` and `row`.
fn widths(cols: Columns) -> Vec<Constraint> {
    let mut widths = vec![
        Constraint::Min(cols.host),
        Constraint::Length(6),
        Constraint::Length(5),
        Constraint::Length(5),
        Constraint::Length(6),
        Constraint::Length(if cols.source { 12 } else { 6 }),
        Constraint::Length(14),
    ];
    if cols.robots {
        widths.push(Constraint::Length(9));
    }
    widths.push(Constraint::Length(9));
    if cols.state {
        widths.push(Constraint::Length(8));
    }
    if cols.worker {
        widths.push(Constraint::Length(12));
    }
    widths
}
