//! The page inspector, drawn over the body: one page of its list with its
//! fields, the last `:select` and, for near duplicates, the text diff with
//! the next page. Lines come from `results::page`, which strips every
//! network string of control characters.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::Line;
use ratatui::widgets::{Block, Clear, Paragraph, Widget};

use super::{strip, Theme};
use crate::results::page::{diff_lines, inspection_lines};
use crate::tui::inspector_state::Inspector;

/// The inspector over `area`, scrolled as it says; `extract_key` is the key
/// that makes the last `:select` an extraction, if one is bound.
pub fn render(
    inspector: &Inspector,
    theme: &Theme,
    extract_key: Option<&str>,
    area: Rect,
    buf: &mut Buffer,
) {
    Clear.render(area, buf);
    let title = format!(
        " {} {}/{}  (n/N next/prev, :select CSS, esc closes) ",
        strip(&inspector.origin),
        inspector.at + 1,
        inspector.urls.len()
    );
    let block = Block::bordered().title(title).border_style(theme.accent());
    let inner = block.inner(area);
    block.render(area, buf);
    let lines = lines(inspector, extract_key, inner.width);
    let scroll = inspector.scroll.min(lines.len().saturating_sub(1));
    let shown: Vec<Line> = lines
        .into_iter()
        .skip(scroll)
        .take(inner.height as usize)
        .map(|l| {
            if l.starts_with('|') {
                Line::styled(l, theme.warn())
            } else {
                Line::styled(l, Style::new())
            }
        })
        .collect();
    Paragraph::new(shown).render(inner, buf);
}

/// Every line of the inspector for a width of `width` cells.
fn lines(inspector: &Inspector, extract_key: Option<&str>, width: u16) -> Vec<String> {
    let url = strip(inspector.url()).into_owned();
    let mut lines = match inspector.page() {
        None => return vec![format!("reading {url}…")],
        Some(Err(e)) => return vec![format!("cannot inspect {url}: {}", strip(e))],
        Some(Ok(page)) => inspection_lines(page),
    };
    if let Some((css, found)) = &inspector.selected {
        lines.push(String::new());
        match found {
            None => lines.push(format!("selecting `{}`…", strip(css))),
            Some(found) => {
                lines.extend(found.iter().cloned());
                let usable = crate::engine::inspect::check_selector(css).is_ok();
                if let (Some(key), true) = (extract_key, usable) {
                    lines.push(format!(
                        "{key}: extract `{}` from every page fetched from now on (a column of crawldeck pages)",
                        strip(css)
                    ));
                }
            }
        }
    }
    if let Some(partner) = inspector.partner() {
        lines.push(String::new());
        match (
            inspector.page(),
            inspector.pages.get(partner),
            &inspector.diff_rows,
        ) {
            (Some(Ok(page)), Some(Ok(other)), Some(rows)) => {
                let side = (usize::from(width).saturating_sub(5) / 2).max(10);
                lines.extend(diff_lines(page, other, rows, side));
            }
            (_, Some(Err(e)), _) => lines.push(format!("no diff: {}", strip(e))),
            _ => lines.push(format!("reading {} for the diff…", strip(partner))),
        }
    }
    lines
}
