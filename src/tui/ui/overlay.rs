//! What is drawn over the panes: help, host detail, prompts.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Color;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Widget, Wrap};

use super::{hosts, Theme};
use crate::tui::command::COMMANDS;
use crate::tui::keys::Mode;
use crate::tui::model::{Model, Overlay, Prompt};

pub fn render(model: &Model, theme: Theme, body: Rect, buf: &mut Buffer) {
    match &model.overlay {
        Overlay::None | Overlay::ConfirmQuit => {}
        Overlay::Help { scroll } => help(model, theme, *scroll, body, buf),
        Overlay::Detail(host) => hosts::render_detail(model, theme, host, body, buf),
        Overlay::Prompt(prompt) => render_prompt(prompt, theme, body, buf),
    }
}

/// Help from the live key map, so it cannot drift from it.
pub fn help_lines(model: &Model) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    for (mode, title) in [
        (Mode::Normal, "Keys"),
        (Mode::Detail, "Host detail"),
        (Mode::Prompt, "Prompts"),
    ] {
        lines.push(Line::from(Span::raw(format!("{title}:"))));
        for (chord, action) in model.keymap.bindings(mode) {
            lines.push(Line::from(format!(
                "  {:<10} {}",
                chord.to_string(),
                action.description()
            )));
        }
    }
    lines.push(Line::from(
        "Command line (:), Tab completes commands and hosts:",
    ));
    for (name, args, what) in COMMANDS {
        lines.push(Line::from(format!("  :{name} {args:<22} {what}")));
    }
    lines
}

fn help(model: &Model, theme: Theme, scroll: u16, body: Rect, buf: &mut Buffer) {
    let area = centered(body, 84, body.height.saturating_sub(2));
    Clear.render(area, buf);
    Paragraph::new(help_lines(model))
        .block(theme.block("Help (Esc closes, j/k scroll)", true))
        .scroll((scroll, 0))
        .render(area, buf);
}

fn render_prompt(prompt: &Prompt, theme: Theme, body: Rect, buf: &mut Buffer) {
    let height = if prompt.error.is_some() { 4 } else { 3 };
    let [_, area] = Layout::vertical([Constraint::Min(0), Constraint::Length(height)]).areas(body);
    Clear.render(area, buf);
    let label = prompt.kind.label();
    let mut lines = vec![Line::from(vec![
        Span::styled(label, theme.bold()),
        Span::raw(prompt.input.value().to_string()),
        Span::styled("█", theme.fg(Color::Cyan)),
    ])];
    if let Some(error) = &prompt.error {
        lines.push(Line::styled(error.clone(), theme.fg(Color::Red)));
    }
    Paragraph::new(lines)
        .wrap(Wrap { trim: false })
        .block(theme.block("Enter runs · Esc cancels", true))
        .render(area, buf);
}

fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let width = width.min(area.width);
    let height = height.min(area.height);
    Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    }
}
