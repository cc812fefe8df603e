//! Pop-ups drawn over the body: help (from the live key map), quit
//! confirmation and the rule preview.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Clear, Paragraph, Widget, Wrap};

use super::{strip, Theme};
use crate::engine::telemetry::Level;
use crate::tui::action::Action;
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

/// Width of the help pop-up, borders included.
const HELP_WIDTH: u16 = 72;
/// Where a key's description starts: continuation lines start there too.
const DESCRIPTION_AT: usize = 17;

/// The lines of the help overlay: the view's own mode first, then the
/// prompts; each wrapped at a word to fit `width` columns.
pub fn help_lines(model: &Model, width: usize) -> Vec<Line<'static>> {
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
            // Attached, the quit keys leave the crawl running.
            let description = match action {
                Action::ForceQuit if model.attached => "detach now (the crawl runs on)",
                _ => action.description(),
            };
            let text = format!("  {:<14} {description}", keys.join(" "));
            lines.extend(wrapped(&text, width, DESCRIPTION_AT).map(Line::from));
        }
    }
    lines.push(Line::styled(
        "[: commands]",
        Style::new().add_modifier(Modifier::BOLD),
    ));
    for l in crate::tui::command::help_lines() {
        lines.extend(wrapped(&format!("  {l}"), width, 4).map(Line::from));
    }
    lines
}

/// `text` in lines of at most `width` characters, broken between words;
/// continuation lines are indented by `indent`. A word longer than a line is
/// cut, as nothing else fits.
fn wrapped(text: &str, width: usize, indent: usize) -> impl Iterator<Item = String> {
    let width = width.max(indent + 8);
    let mut lines = Vec::new();
    let (mut line, mut len) = (String::new(), 0);
    for (i, word) in text.split(' ').enumerate() {
        let word_len = word.chars().count();
        if i > 0 {
            if len > indent && len + 1 + word_len > width {
                lines.push(std::mem::replace(&mut line, " ".repeat(indent)));
                len = indent;
            } else {
                line.push(' ');
                len += 1;
            }
        }
        line.push_str(word);
        len += word_len;
    }
    lines.push(line);
    lines.into_iter().flat_map(move |l| {
        let chars: Vec<char> = l.chars().collect();
        chars
            .chunks(width)
            .map(|c| c.iter().collect::<String>())
            .collect::<Vec<_>>()
    })
}

/// The help pop-up, scrolled as the model says.
pub fn help(model: &Model, _theme: &Theme, area: Rect, buf: &mut Buffer) {
    let popup = centered(area, HELP_WIDTH, area.height.saturating_sub(2).max(8));
    Clear.render(popup, buf);
    let lines = help_lines(model, usize::from(popup.width.saturating_sub(2)));
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

#[cfg(test)]
mod tests {
    use super::wrapped;

    #[test]
    fn help_lines_break_between_words_with_a_hanging_indent() {
        let text = format!("  {:<14} {}", "ctrl-c", "word ".repeat(30).trim_end());
        let lines: Vec<String> = wrapped(&text, 40, 17).collect();
        assert!(lines.len() > 1);
        for l in &lines {
            assert!(l.chars().count() <= 40, "{l:?}");
            assert!(!l.ends_with(' '), "{l:?}");
            assert!(l.trim_end().ends_with("word"), "cut mid-word: {l:?}");
        }
        assert!(lines[0].starts_with("  ctrl-c         word"));
        assert!(lines[1].starts_with(&format!("{}word", " ".repeat(17))));
        assert_eq!(wrapped("  short", 40, 17).collect::<Vec<_>>(), ["  short"]);
    }

    #[test]
    fn attached_the_force_quit_key_is_said_to_detach() {
        use crate::tui::keys::keymap_from_str;
        use crate::tui::model::Model;
        let text = |attached: bool| {
            let mut model = Model::new(keymap_from_str("").0, false, true);
            model.attached = attached;
            super::help_lines(&model, 70)
                .iter()
                .map(|l| l.to_string())
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert!(text(false).contains("checkpoint and exit now"));
        let attached = text(true);
        assert!(
            attached.contains("detach now (the crawl runs on)"),
            "{attached}"
        );
        assert!(!attached.contains("checkpoint and exit now"));
    }
}
