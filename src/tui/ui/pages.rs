//! The Pages view: the crawl's URLs as a table, one band of rows read at a
//! time; the Audit view: the audit's findings, one row per check.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Block, Cell, Paragraph, Row, StatefulWidget, Widget};

use super::{count, selection, strip, table, Theme};
use crate::results::rows::Row as PageRow;
use crate::results::window::PageColumn;
use crate::text::{cut_middle, human_bytes};
use crate::tui::model::Model;

/// The Pages view, or what it is waiting for.
pub fn render(model: &Model, _theme: &Theme, area: Rect, buf: &mut Buffer) {
    let view = &model.pages;
    let title = title(model);
    let band = match (&view.band, view.band_is_current()) {
        (Some(Ok(band)), true) => band,
        (Some(Err(why)), _) if view.reading.is_none() => {
            return message(
                &title,
                &format!("cannot read pages: {}", strip(why)),
                area,
                buf,
            )
        }
        _ => return message(&title, "reading pages…", area, buf),
    };
    if band.total == 0 {
        let text = match view.filter.is_empty() {
            true => "no pages yet".to_string(),
            false => format!("no pages match {}", strip(&view.filter)),
        };
        return message(&title, &text, area, buf);
    }
    let height = area.height.saturating_sub(3) as usize;
    let url_width = url_width(area.width);
    let shown: Vec<&PageRow> = (view.top..view.top + height)
        .map_while(|rank| band.row(rank))
        .collect();
    // Custom extractions in force, as the engine names them (`:extract`).
    let extracts: Vec<&str> = model
        .latest
        .extractions
        .iter()
        .take(MAX_EXTRACT_COLUMNS)
        .map(String::as_str)
        .collect();
    let rows = shown.iter().map(|r| page_row(r, url_width, &extracts));
    let header = Row::new(
        PageColumn::ALL
            .map(|c| heading(c, view.sort, view.reverse))
            .into_iter()
            .chain(extracts.iter().map(|name| strip(name).into_owned())),
    );
    let mut widths = vec![
        Constraint::Length(url_width as u16),
        Constraint::Length(7),
        Constraint::Length(14),
        Constraint::Length(8),
        Constraint::Length(7),
        Constraint::Length(5),
        Constraint::Fill(2),
        Constraint::Length(5),
        Constraint::Length(7),
        Constraint::Length(10),
    ];
    widths.extend(extracts.iter().map(|_| Constraint::Fill(1)));
    let selected = view.selected.saturating_sub(view.top);
    let mut state = selection(shown.len(), selected);
    StatefulWidget::render(table(rows, header, widths, title), area, buf, &mut state);
}

/// Cells of the fixed columns (status … fate) with the spaces between all ten.
const FIXED_CELLS: usize = 7 + 14 + 8 + 7 + 5 + 5 + 7 + 10 + 9;

/// Two thirds of what the fixed columns leave go to the URL, the rest to the title.
fn url_width(width: u16) -> usize {
    let free = (width as usize).saturating_sub(2 + FIXED_CELLS);
    (free * 2 / 3).max(20)
}

/// The title: rows, filter, order, and whether a read is under way.
fn title(model: &Model) -> String {
    let view = &model.pages;
    let total = match view.band() {
        Some(_) if view.band_is_current() && view.total_is_counted() => count(view.total() as u64),
        // Read up to the band only, and never counted with this filter.
        Some(_) if view.band_is_current() => format!("≥ {}", count(view.total() as u64)),
        _ => "…".into(),
    };
    let filter = match view.filter.is_empty() {
        true => String::new(),
        false => format!(" matching {}", strip(&view.filter)),
    };
    let reading = if view.reading.is_some() {
        " reading…"
    } else {
        ""
    };
    format!(" Pages {total}{filter}{reading}  (/ filter  s sort  enter inspect  l links) ")
}

fn heading(column: PageColumn, sort: PageColumn, reverse: bool) -> String {
    if column != sort {
        return column.label().to_string();
    }
    let down = reverse != column.largest_first();
    format!("{}{}", column.label(), if down { "▼" } else { "▲" })
}

/// Extraction columns shown at most (more are in `crawldeck pages --csv`).
const MAX_EXTRACT_COLUMNS: usize = 4;

fn page_row<'a>(row: &PageRow, url_width: usize, extracts: &[&str]) -> Row<'a> {
    let opt = |s: &Option<String>| s.as_deref().map(|s| strip(s).into_owned());
    let index = match row.facts.indexable {
        Some(true) => "yes",
        Some(false) => "no",
        None => "",
    };
    let fate = match &row.reason {
        Some(reason) => format!("{}: {}", row.fate, strip(reason)),
        None => row.fate.to_string(),
    };
    let values = extracts.iter().map(|name| {
        let values = row.values_of(name).unwrap_or_default();
        Cell::from(strip(&values.join(" | ")).into_owned())
    });
    let cells = vec![
        Cell::from(cut_middle(&strip(&row.url), url_width).into_owned()),
        Cell::from(row.status.map_or("-".into(), |s| s.to_string())),
        Cell::from(opt(&row.content_type).unwrap_or_default()),
        Cell::from(human_bytes(row.size)),
        Cell::from(
            row.facts
                .response_ms
                .map_or(String::new(), |ms| format!("{ms}ms")),
        ),
        Cell::from(row.depth.to_string()),
        Cell::from(opt(&row.title).unwrap_or_default()),
        Cell::from(index),
        Cell::from(row.facts.inlinks.to_string()),
        Cell::from(fate),
    ];
    Row::new(cells.into_iter().chain(values))
}

/// The Audit view, or what it is waiting for.
pub fn render_audit(model: &Model, _theme: &Theme, area: Rect, buf: &mut Buffer) {
    let view = &model.audit;
    let reading = if view.reading { " reading…" } else { "" };
    let title = format!(" Audit{reading}  (enter lists the pages of a finding) ");
    let findings = match &view.read {
        Some(Ok(findings)) => findings,
        Some(Err(why)) => {
            return message(&title, &format!("cannot audit: {}", strip(why)), area, buf)
        }
        None => return message(&title, "auditing…", area, buf),
    };
    if findings.is_empty() {
        return message(&title, "nothing found", area, buf);
    }
    let rows = findings.iter().map(|f| {
        Row::new(vec![
            Cell::from(count(f.urls)),
            Cell::from(f.priority),
            Cell::from(f.check),
            Cell::from(f.finding.clone()),
        ])
    });
    let header = Row::new(["URLs", "priority", "check", "finding"]);
    let widths = vec![
        Constraint::Length(8),
        Constraint::Length(8),
        Constraint::Length(24),
        Constraint::Fill(1),
    ];
    let mut state = selection(findings.len(), view.selected);
    StatefulWidget::render(table(rows, header, widths, title), area, buf, &mut state);
}

fn message(title: &str, text: &str, area: Rect, buf: &mut Buffer) {
    Paragraph::new(Line::from(text.to_string()))
        .block(Block::bordered().title(title.to_string()))
        .render(area, buf);
}
