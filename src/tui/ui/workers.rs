//! The workers pane of a shared crawl: each worker's heartbeat.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::Style;
use ratatui::widgets::{Cell, Row, StatefulWidget};

use super::{count, strip, table, Theme};
use crate::engine::cluster_view::WorkerView;
use crate::tui::model::Model;

/// One row per worker: alive, serving (the crawl over) or gone, pages, pages/s, hosts held, requests
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
        Constraint::Length(7),
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
    let (state, style) = match (w.alive, w.serving) {
        (false, _) => ("gone", theme.warn()),
        (true, true) => ("serving", Style::new()),
        (true, false) => ("alive", Style::new()),
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use ratatui::buffer::Buffer;

    use super::*;
    use crate::engine::cluster_view::ClusterView;
    use crate::engine::telemetry::Snapshot;
    use crate::tui::keys::keymap_from_str;

    #[test]
    fn each_worker_says_whether_it_crawls_serves_or_is_gone() {
        let worker = |name: &str, alive, serving| WorkerView {
            worker: name.into(),
            alive,
            serving,
            ..WorkerView::default()
        };
        let mut model = Model::new(keymap_from_str("").0, false, true);
        model.shown = Arc::new(Snapshot {
            cluster: Some(ClusterView {
                crawl: "news".into(),
                workers: vec![
                    worker("w-crawls", true, false),
                    worker("w-serves", true, true),
                    worker("w-gone", false, false),
                ],
                ..ClusterView::default()
            }),
            ..Snapshot::default()
        });
        let area = Rect::new(0, 0, 90, 8);
        let mut buf = Buffer::empty(area);
        render(&model, &Theme::new(true), area, &mut buf);
        let lines: Vec<String> = (0..area.height)
            .map(|y| (0..area.width).map(|x| buf[(x, y)].symbol()).collect())
            .collect();
        let state_of = |name: &str| {
            let line = lines.iter().find(|l| l.contains(name)).unwrap();
            let after = &line[line.find(name).unwrap() + name.len()..];
            after.split_whitespace().next().unwrap().to_string()
        };
        assert_eq!(state_of("w-crawls"), "alive");
        assert_eq!(state_of("w-serves"), "serving");
        assert_eq!(state_of("w-gone"), "gone");
        assert!(lines.iter().any(|l| l.contains("Workers: 2 alive of 3")));
    }
}
