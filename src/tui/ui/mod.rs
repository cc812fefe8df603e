//! Drawing. Every function takes the model by shared reference: rendering never
//! mutates. Network strings pass through `strip_control` before they reach a cell.

mod detail;
mod format;
mod header;
mod hosts;
mod inspector;
mod lists;
mod overlay;
mod pages;
mod quarantine;
mod queues;
mod theme;
mod workers;

pub use format::*;
pub use theme::Theme;

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Position, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Row, Table, TableState, Widget};

use super::action::Action;
use super::keys::Mode;
use super::model::{EngineLife, Model, Overlay, Pane, Prompt, PromptKind, Quitting};
use crate::engine::telemetry::{AlertStatus, CrawlState, Level};

/// Below this the UI shows only a notice.
pub const MIN_WIDTH: u16 = 60;
/// Below this the UI shows only a notice.
pub const MIN_HEIGHT: u16 = 16;

/// Wide layout: queues beside the main pane and the log below it.
fn is_wide(area: Rect) -> bool {
    area.width >= 110 && area.height >= 30
}

/// Below the minimum size only a notice is drawn.
fn too_small(area: Rect) -> bool {
    area.width < MIN_WIDTH || area.height < MIN_HEIGHT
}

/// Rows of hosts the hosts table shows on a screen of `area` (in the wide
/// layout or not), whether or not it is the pane in front right now.
pub fn host_rows(area: Rect) -> usize {
    if too_small(area) {
        return 0;
    }
    // Header 3, tabs 1, status 1; the wide layout's log 9; borders 2, titles 1.
    let chrome = if is_wide(area) { 5 + 9 + 3 } else { 5 + 3 };
    area.height.saturating_sub(chrome) as usize
}

/// Draws the whole screen from the model.
pub fn render(model: &Model, area: Rect, buf: &mut Buffer) {
    let theme = Theme::new(model.no_color);
    if too_small(area) {
        render_too_small(model, area, buf);
        return;
    }
    let [head, tabs, body, status] = Layout::vertical([
        Constraint::Length(3),
        Constraint::Length(1),
        Constraint::Fill(1),
        Constraint::Length(1),
    ])
    .areas(area);
    header::render(model, &theme, head, buf);
    render_tabs(model, &theme, tabs, buf);
    render_body(model, &theme, body, is_wide(area), buf);
    render_status(model, &theme, status, buf);
    if let Some(inspector) = &model.inspector {
        let extract_key = model
            .keymap
            .first_key(Mode::Inspector, Action::ExtractSelection)
            .map(|k| k.to_string());
        inspector::render(inspector, &theme, extract_key.as_deref(), body, buf);
    }
    if model.prompt.is_some() {
        overlay::rule_preview(model, &theme, body, buf);
    }
    match model.overlay {
        Overlay::Help => overlay::help(model, &theme, body, buf),
        Overlay::ConfirmQuit => overlay::confirm_quit(model, &theme, body, buf),
        Overlay::None => {}
    }
}

/// The notice for a terminal below the minimum size; quitting still shows.
fn render_too_small(model: &Model, area: Rect, buf: &mut Buffer) {
    let text = vec![
        Line::from("terminal too small"),
        Line::from(format!(
            "{}×{}, need at least {MIN_WIDTH}×{MIN_HEIGHT}",
            area.width, area.height
        )),
        Line::from(match (model.quitting, model.overlay) {
            (Quitting::Checkpointing, _) => "checkpointing…",
            (_, Overlay::ConfirmQuit) if model.attached => "detach (d) / stop the crawl (s) / n",
            (_, Overlay::ConfirmQuit) => "checkpoint and quit? (y / n)",
            _ => "q quits",
        }),
    ];
    Paragraph::new(text)
        .wrap(ratatui::widgets::Wrap { trim: true })
        .render(area, buf);
}

/// The body: the detail view, or the current pane; when `wide`, the queues
/// beside it and the log (or alerts) below it.
fn render_body(model: &Model, theme: &Theme, area: Rect, wide: bool, buf: &mut Buffer) {
    if let Some(host) = &model.detail {
        detail::render(model, theme, host, area, buf);
    } else if wide {
        let [top, bottom] =
            Layout::vertical([Constraint::Fill(1), Constraint::Length(9)]).areas(area);
        let [left, main] =
            Layout::horizontal([Constraint::Length(30), Constraint::Fill(1)]).areas(top);
        queues::render(model, theme, left, buf);
        let main_pane = if model.pane == Pane::Queues {
            Pane::Hosts
        } else {
            model.pane
        };
        render_pane(model, theme, main_pane, main, buf);
        let lower = if model.pane == Pane::Log {
            Pane::Alerts
        } else {
            Pane::Log
        };
        render_pane(model, theme, lower, bottom, buf);
    } else {
        render_pane(model, theme, model.pane, area, buf);
    }
}

/// Draws one pane into `area`.
fn render_pane(model: &Model, theme: &Theme, pane: Pane, area: Rect, buf: &mut Buffer) {
    match pane {
        Pane::Hosts => hosts::render(model, theme, area, buf),
        Pane::Alerts => lists::alerts(model, theme, area, buf),
        Pane::Rules => lists::rules(model, theme, area, buf),
        Pane::Log => lists::log(model, theme, area, buf),
        Pane::Queues => queues::render(model, theme, area, buf),
        Pane::Workers => workers::render(model, theme, area, buf),
        Pane::Quarantine => quarantine::render(model, theme, area, buf),
        Pane::Pages => pages::render(model, theme, area, buf),
        Pane::Audit => pages::render_audit(model, theme, area, buf),
    }
}

/// The pane tabs (the current one reversed, open alerts counted), the detail
/// view's host, and the FROZEN and READ-ONLY marks.
fn render_tabs(model: &Model, theme: &Theme, area: Rect, buf: &mut Buffer) {
    let open = model
        .shown
        .alerts
        .iter()
        .filter(|a| a.status == AlertStatus::Open)
        .count();
    let mut spans = Vec::new();
    for pane in model.panes().iter() {
        // Numbered as the default keys 1-9 pick them, the hidden workers pane included.
        let number = Pane::ALL.iter().position(|p| p == pane).unwrap_or(0) + 1;
        let mut label = format!(" {number} {}", pane.title());
        if *pane == Pane::Alerts && open > 0 {
            label.push_str(&format!(" ({open})"));
        }
        label.push(' ');
        let style = if *pane == model.pane && model.detail.is_none() {
            Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD)
        } else {
            Style::new()
        };
        spans.push(Span::styled(label, style));
    }
    if let Some(host) = &model.detail {
        spans.push(Span::raw(format!("  > {}", strip(host))));
    }
    if model.frozen {
        spans.push(Span::styled(
            "  FROZEN",
            theme.warn().add_modifier(Modifier::BOLD),
        ));
    }
    if model.readonly {
        spans.push(Span::raw("  READ-ONLY"));
    }
    Line::from(spans).render(area, buf);
}

/// The bottom line: the open prompt, else the last status, else a hint.
fn render_status(model: &Model, theme: &Theme, area: Rect, buf: &mut Buffer) {
    let line = if let Some(prompt) = &model.prompt {
        prompt_line(prompt, theme)
    } else if let Some(status) = &model.status {
        Line::from(vec![
            Span::styled(
                format!("{} ", level_word(status.level)),
                theme.level(status.level),
            ),
            Span::raw(strip(&status.text).into_owned()),
        ])
    } else if let EngineLife::Gone(_) = model.engine {
        Line::from("engine gone: q exits (the log and panes stay readable until then)")
    } else if model.engine_closed() || model.shown.state == CrawlState::Done {
        Line::from("crawl finished: q exits (the log and panes stay readable until then)")
    } else {
        Line::from(key_hints(model))
    };
    line.render(area, buf);
}

/// What stands before a prompt's text: its label, or `:` for the command line.
fn prompt_lead(kind: &PromptKind) -> String {
    let label = kind.label();
    if label.is_empty() {
        ":".to_string()
    } else {
        format!("{label}: ")
    }
}

/// The prompt with its text, its error and its completion candidates.
fn prompt_line<'a>(prompt: &Prompt, theme: &Theme) -> Line<'a> {
    let mut spans = vec![
        Span::styled(
            prompt_lead(&prompt.kind),
            Style::new().add_modifier(Modifier::BOLD),
        ),
        Span::raw(prompt.input.value().to_string()),
    ];
    if let Some(err) = &prompt.error {
        spans.push(Span::styled(
            format!("  error: {}", strip(err)),
            theme.level(Level::Error),
        ));
    }
    if let Some(hint) = &prompt.hint {
        spans.push(Span::styled(format!("  [{}]", strip(hint)), theme.dim()));
    }
    Line::from(spans)
}

/// The keys of the main actions, as the key map binds them now.
fn key_hints(model: &Model) -> String {
    let key = |a| {
        model
            .keymap
            .first_key(Mode::Normal, a)
            .map(|k| k.to_string())
            .unwrap_or_default()
    };
    format!(
        "{} help  {} command  {} filter  {} pause  {} rule  {} quit",
        key(Action::Help),
        key(Action::CommandLine),
        key(Action::Filter),
        key(Action::TogglePause),
        key(Action::AddRegexRule),
        key(Action::Quit)
    )
}

/// Where the terminal cursor goes: at the insertion point of an open prompt.
pub fn cursor(model: &Model, area: Rect) -> Option<Position> {
    let prompt = model.prompt.as_ref()?;
    if too_small(area) {
        return None;
    }
    let lead = prompt_lead(&prompt.kind).chars().count();
    let x = (lead + prompt.input.visual_cursor()).min(area.width.saturating_sub(1) as usize) as u16;
    Some(Position::new(area.x + x, area.y + area.height - 1))
}

/// A pane's table: bold header, bordered with `title`, the selected row reversed.
fn table<'a>(
    rows: impl IntoIterator<Item = Row<'a>>,
    header: Row<'a>,
    widths: Vec<Constraint>,
    title: String,
) -> Table<'a> {
    Table::new(rows, widths)
        .header(header.style(Style::new().add_modifier(Modifier::BOLD)))
        .block(Block::bordered().title(title))
        .row_highlight_style(Style::new().add_modifier(Modifier::REVERSED))
        .column_spacing(1)
}

/// A table's selection: row `selected`, or none when the table is empty.
fn selection(len: usize, selected: usize) -> TableState {
    TableState::default().with_selected((len > 0).then_some(selected))
}

/// A log level as the word shown before its text.
pub fn level_word(level: Level) -> &'static str {
    match level {
        Level::Info => "INFO",
        Level::Warn => "WARN",
        Level::Error => "ERROR",
    }
}
