//! The workers pane of a shared crawl: each worker's heartbeat.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::Style;
use ratatui::widgets::{Cell, Row, StatefulWidget};

use super::{count, strip, table, Theme};
use crate::engine::cluster_view::WorkerView;
use crate::tui::model::Model;

/// One row per worker: alive or gone, pages, pages/s, hosts held, requests
/// in flight, time since its heartbeat, version.
pub fn render(model: &Model, theme: &Theme, area: Rect, buf: &mut Buffer) {
    let Some(cluster) = &model.shown.cluster else {
        return;
    };
    let alive = cluster.workers.iter().filter(|w| w.alive).count();
    let title = format!(
        " Workers: {alive} alive of {}, crawl {} ",
        cluster.workers.len(),
        strip(&cluster.crawl)
    );
    let header = Row::new([
        "Worker", "State", "Pages", "Pages/s", "Held", "Fly", "Beat", "Version",
    ]);
    let widths = vec![
        Constraint::Min(14),
        Constraint::Length(5),
        Constraint::Length(9),
        Constraint::Length(7),
        Constraint::Length(5),
        Constraint::Length(4),
        Constraint::Length(7),
        Constraint::Length(10),
    ];
    let rows = cluster.workers.iter().map(|w| row(w, theme));
    let mut state = Default::default();
    StatefulWidget::render(table(rows, header, widths, title), area, buf, &mut state);
}

fn row<'a>(w: &WorkerView, theme: &Theme) -> Row<'a> {
    let (state, style) = if w.alive {
        ("alive", Style::new())
    } else {
        ("gone", theme.warn())
    };
    Row::new(vec![
        Cell::from(strip(&w.worker).into_owned()),
        Cell::from(state).style(style),
        Cell::from(count(w.pages)),
        Cell::from(format!("{:.1}", w.pages_per_s)),
        Cell::from(count(w.hosts_held)),
        Cell::from(count(w.in_flight)),
        Cell::from(format!("{:.1}s", w.last_beat_ms_ago as f64 / 1000.0)),
        Cell::from(strip(&w.version).into_owned()),
    ])
}
