//! Pop-ups drawn over the body: help (from the live key map), quit
//! confirmation and the rule preview.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Clear, Paragraph, Widget, Wrap};

use super::{strip, Theme};
use crate::engine::telemetry::Level;
use crate::tui::keys::Mode;
use crate::tui::model::Model;

/// A `width`×`height` box centred in `area` (clipped to it).
fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let [v] = Layout::vertical([Constraint::Length(height.min(area.height))])
        .flex(Flex::Center)
        .areas(area);
    let [h] = Layout::horizontal([Constraint::Length(width.min(area.width))])
        .flex(Flex::Center)
        .areas(v);
    h
}

/// The lines of the help overlay: the view's own mode first, then the prompts.
pub fn help_lines(model: &Model) -> Vec<Line<'static>> {
    let first = if model.inspector.is_some() {
        Mode::Inspector
    } else if model.detail.is_some() {
        Mode::Detail
    } else {
        Mode::Normal
    };
    let mut lines = Vec::new();
    for mode in [first, Mode::Prompt, Mode::Command] {
        lines.push(Line::styled(
            format!("[{}]", mode.name()),
            Style::new().add_modifier(Modifier::BOLD),
        ));
        for (action, keys) in model.keymap.bindings(mode) {
            let keys: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
            lines.push(Line::from(format!(
                "  {:<14} {}",
                keys.join(" "),
                action.description()
            )));
        }
    }
    lines.push(Line::styled(
        "[: commands]",
        Style::new().add_modifier(Modifier::BOLD),
    ));
    lines.extend(
        crate::tui::command::help_lines()
            .into_iter()
            .map(|l| Line::from(format!("  {l}"))),
    );
    lines
}

/// The help pop-up, scrolled as the model says.
pub fn help(model: &Model, _theme: &Theme, area: Rect, buf: &mut Buffer) {
    let popup = centered(area, 72, area.height.saturating_sub(2).max(8));
    Clear.render(popup, buf);
    let lines = help_lines(model);
    let scroll = model.help_scroll.min(lines.len().saturating_sub(1)) as u16;
    Paragraph::new(lines)
        .block(Block::bordered().title(" Help (j/k scroll, esc closes) "))
        .scroll((scroll, 0))
        .render(popup, buf);
}

/// The "checkpoint and quit?" pop-up; attached, "detach or stop the crawl?".
pub fn confirm_quit(model: &Model, theme: &Theme, area: Rect, buf: &mut Buffer) {
    let popup = centered(area, 46, 5);
    Clear.render(popup, buf);
    let question = if model.attached {
        "Detach (d, Enter) / stop the crawl (s) / n"
    } else {
        "Checkpoint and quit? (y / n)"
    };
    let running = if model.attached {
        "The crawl runs on when you detach."
    } else {
        "The crawl is running."
    };
    Paragraph::new(vec![
        Line::from(running),
        Line::styled(question, theme.warn()),
    ])
    .wrap(Wrap { trim: true })
    .block(Block::bordered().title(" Quit "))
    .render(popup, buf);
}

/// The rule preview, docked at the bottom of the body just above the prompt:
/// what the typed rule would match, or why the pattern is refused.
pub fn rule_preview(model: &Model, theme: &Theme, area: Rect, buf: &mut Buffer) {
    let Some(shown) = &model.rule_preview.shown else {
        return;
    };
    let lines: Vec<Line> = match shown {
        Ok(lines) => lines
            .iter()
            .map(|l| Line::from(strip(l).into_owned()))
            .collect(),
        Err(why) => vec![Line::styled(
            format!("error: {}", strip(why)),
            theme.level(Level::Error),
        )],
    };
    let height = (lines.len() as u16 + 2).min(area.height);
    let [_, dock] = Layout::vertical([Constraint::Fill(1), Constraint::Length(height)]).areas(area);
    Clear.render(dock, buf);
    Paragraph::new(lines)
        .block(Block::bordered().title(" Rule preview (Enter applies, Esc cancels) "))
        .render(dock, buf);
}
