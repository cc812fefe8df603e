//! Rendering: `render(&Model, Rect, &mut Buffer)` draws the whole screen from
//! the model and never changes it. One file per pane.

mod header;
mod hosts;
mod overlay;

#[cfg(test)]
pub use overlay::help_lines as overlay_help_lines;
mod panes;

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget};

use super::model::{Model, Overlay, Pane};
use crate::engine::telemetry::{BreakerPhase, Level};

/// Below this the layout cannot show what matters; a notice says so.
pub const MIN_WIDTH: u16 = 60;
pub const MIN_HEIGHT: u16 = 16;
/// From this size on, all panes are shown at once; below, panes become tabs.
const WIDE: (u16, u16) = (110, 34);

/// Colours only when they are on; states are always written as words too.
#[derive(Clone, Copy)]
pub struct Theme {
    color: bool,
}

impl Theme {
    pub fn new(color: bool) -> Self {
        Theme { color }
    }

    pub fn fg(self, color: Color) -> Style {
        if self.color {
            Style::default().fg(color)
        } else {
            Style::default()
        }
    }

    pub fn bold(self) -> Style {
        Style::default().add_modifier(Modifier::BOLD)
    }

    pub fn selected(self) -> Style {
        if self.color {
            Style::default()
                .bg(Color::DarkGray)
                .add_modifier(Modifier::BOLD)
        } else {
            Style::default().add_modifier(Modifier::REVERSED)
        }
    }

    pub fn level(self, level: Level) -> Style {
        match level {
            Level::Info => Style::default(),
            Level::Warn => self.fg(Color::Yellow),
            Level::Error => self.fg(Color::Red),
        }
    }

    pub fn breaker(self, phase: BreakerPhase) -> Style {
        match phase {
            BreakerPhase::Closed => self.fg(Color::Green),
            BreakerPhase::HalfOpen => self.fg(Color::Yellow),
            BreakerPhase::Open => self.fg(Color::Red).add_modifier(Modifier::BOLD),
        }
    }

    pub fn block(self, title: &str, focused: bool) -> Block<'static> {
        let style = if focused {
            self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
        } else {
            Style::default()
        };
        let title = if focused {
            format!(" {title} ◆ ")
        } else {
            format!(" {title} ")
        };
        Block::default()
            .borders(Borders::ALL)
            .border_style(style)
            .title(title)
    }
}

pub fn render(model: &Model, area: Rect, buf: &mut Buffer) {
    let theme = Theme::new(model.options.color);
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        let text = vec![
            Line::from("terminal too small"),
            Line::from(format!(
                "{}×{} here; crawldeck needs at least {MIN_WIDTH}×{MIN_HEIGHT}",
                area.width, area.height
            )),
            Line::from("the crawl goes on — enlarge the window or press q"),
        ];
        Paragraph::new(text).render(area, buf);
        return;
    }
    let [head, body, status] = Layout::vertical([
        Constraint::Length(3),
        Constraint::Min(8),
        Constraint::Length(1),
    ])
    .areas(area);
    header::render(model, theme, head, buf);
    if area.width >= WIDE.0 && area.height >= WIDE.1 {
        wide(model, theme, body, buf);
    } else {
        narrow(model, theme, body, buf);
    }
    status_line(model, theme, status, buf);
    overlay::render(model, theme, body, buf);
}

/// Everything at once: the hosts table across the top; alerts and rules,
/// queues and the log below.
fn wide(model: &Model, theme: Theme, area: Rect, buf: &mut Buffer) {
    let [top, bottom] =
        Layout::vertical([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(area);
    hosts::render_table(model, theme, top, buf);
    let [left, queues_area, log_area] = Layout::horizontal([
        Constraint::Percentage(55),
        Constraint::Length(26),
        Constraint::Fill(1),
    ])
    .areas(bottom);
    let [alerts_area, rules_area] =
        Layout::vertical([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(left);
    panes::render_alerts(model, theme, alerts_area, buf);
    panes::render_rules(model, theme, rules_area, buf);
    header::render_queues(model, theme, queues_area, buf);
    panes::render_log(model, theme, log_area, buf);
}

/// Small terminals: a tab bar, the queues on one line, one pane at a time.
fn narrow(model: &Model, theme: Theme, area: Rect, buf: &mut Buffer) {
    let [tabs, queues, pane] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Min(4),
    ])
    .areas(area);
    let mut spans = Vec::new();
    for (i, p) in Pane::ALL.iter().enumerate() {
        let count = match p {
            Pane::Alerts => format!(" ({})", model.shown().alerts.len()),
            Pane::Rules => format!(" ({})", model.shown().rules.len()),
            _ => String::new(),
        };
        let label = format!(" {} {}{count} ", i + 1, p.title());
        let style = if *p == model.pane {
            theme.selected()
        } else {
            Style::default()
        };
        spans.push(Span::styled(label, style));
    }
    Paragraph::new(Line::from(spans)).render(tabs, buf);
    header::render_queues_line(model, theme, queues, buf);
    match model.pane {
        Pane::Hosts => hosts::render_table(model, theme, pane, buf),
        Pane::Alerts => panes::render_alerts(model, theme, pane, buf),
        Pane::Rules => panes::render_rules(model, theme, pane, buf),
        Pane::Log => panes::render_log(model, theme, pane, buf),
    }
}

fn status_line(model: &Model, theme: Theme, area: Rect, buf: &mut Buffer) {
    let line = match (&model.overlay, &model.status) {
        (Overlay::ConfirmQuit, _) => Line::styled(
            "Quit? The crawl is checkpointed and can be resumed with --data. y = quit, any other key = stay",
            theme.fg(Color::Yellow).add_modifier(Modifier::BOLD),
        ),
        (_, Some((level, text))) => Line::styled(crate::text::strip_control(text).into_owned(), theme.level(*level)),
        _ => Line::from(hints(model)),
    };
    Paragraph::new(line).render(area, buf);
}

fn hints(model: &Model) -> String {
    use super::action::Action;
    use super::keys::Mode;
    let key = |a: Action| {
        model
            .keymap
            .key_for(Mode::Normal, a)
            .map(|c| c.to_string())
            .unwrap_or_else(|| "-".into())
    };
    format!(
        "{} help  {} quit  {} pause  {} blacklist  {} command  {} filter  Tab pane{}",
        key(Action::Help),
        key(Action::Quit),
        key(Action::PauseCrawl),
        key(Action::Blacklist),
        key(Action::CommandLine),
        key(Action::Filter),
        if model.frozen.is_some() {
            "  [FROZEN]"
        } else {
            ""
        }
    )
}
