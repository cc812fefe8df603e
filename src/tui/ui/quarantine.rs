//! The quarantine pane: open alerts' parked URLs, an alert per row, its URLs
//! (with the page each was found on) below it once expanded.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Block, Cell, Paragraph, Row, StatefulWidget, Widget};

use super::{count, selection, strip, table, Theme};
use crate::tui::model::Model;
use crate::tui::quarantine_state::QuarantineRow;

/// The pane, or what it is waiting for.
pub fn render(model: &Model, _theme: &Theme, area: Rect, buf: &mut Buffer) {
    let view = &model.quarantine;
    let read = match &view.read {
        Some(Ok(read)) => read,
        Some(Err(why)) => return message(&format!("cannot read parked URLs: {why}"), area, buf),
        None => return message("reading parked URLs…", area, buf),
    };
    if read.alerts.is_empty() {
        return message(
            "no URLs are parked in this crawl's store (a Redis frontier's are not listed here)",
            area,
            buf,
        );
    }
    let rows = view.rows();
    let table_rows = rows.iter().map(|row| match row {
        QuarantineRow::Alert(parked) => alert_row(model, parked, read.cut, view),
        QuarantineRow::Url(_, url) => Row::new(vec![
            Cell::from(""),
            Cell::from(format!("  {}", strip(&url.url))),
            Cell::from(format!(
                "found on {}",
                url.referrer.as_deref().map_or("unknown".into(), strip)
            )),
        ]),
    });
    let widths = vec![
        Constraint::Length(10),
        Constraint::Fill(3),
        Constraint::Fill(2),
    ];
    let header = Row::new(["Alert", "Host · kind / parked URL", "Parked / found on"]);
    let title = format!(
        " Quarantine {}  (enter expand / inspect) ",
        count(read.alerts.iter().map(|a| a.count).sum())
    );
    let mut state = selection(rows.len(), view.selected);
    StatefulWidget::render(
        table(table_rows, header, widths, title),
        area,
        buf,
        &mut state,
    );
}

fn alert_row<'a>(
    model: &Model,
    parked: &crate::engine::inspect::quarantine::ParkedByAlert,
    cut: bool,
    view: &crate::tui::quarantine_state::QuarantineView,
) -> Row<'a> {
    let mark = if view.expanded.contains(&parked.alert_id) {
        "▾"
    } else {
        "▸"
    };
    let about = match model.shown.alerts.iter().find(|a| a.id == parked.alert_id) {
        Some(alert) => format!("{} · {}", strip(&alert.host), alert.kind.label()),
        None => "(alert no longer listed)".into(),
    };
    let more = if cut { "≥ " } else { "" };
    Row::new(vec![
        Cell::from(format!("{mark} #{}", parked.alert_id)),
        Cell::from(about),
        Cell::from(format!(
            "{more}{} parked, {} listed",
            count(parked.count),
            parked.urls.len()
        )),
    ])
}

fn message(text: &str, area: Rect, buf: &mut Buffer) {
    Paragraph::new(Line::from(text.to_string()))
        .block(Block::bordered().title(" Quarantine "))
        .render(area, buf);
}
