//! Colours, or none with --no-color. Meaning never depends on colour alone:
//! every coloured state is also written as a word.

use ratatui::style::{Color, Modifier, Style};

use crate::engine::telemetry::{BreakerPhase, CrawlState, Level};

/// The styles the panes draw with.
pub struct Theme {
    color: bool,
}

impl Theme {
    /// Colours unless `no_color`.
    pub fn new(no_color: bool) -> Self {
        Theme { color: !no_color }
    }

    /// Foreground `c`, or plain without colour.
    fn fg(&self, c: Color) -> Style {
        if self.color {
            Style::new().fg(c)
        } else {
            Style::new()
        }
    }

    /// A breaker phase: green, yellow, bold red.
    pub fn breaker(&self, phase: BreakerPhase) -> Style {
        match phase {
            BreakerPhase::Closed => self.fg(Color::Green),
            BreakerPhase::HalfOpen => self.fg(Color::Yellow),
            BreakerPhase::Open => self.fg(Color::Red).add_modifier(Modifier::BOLD),
        }
    }

    /// The crawl state in the header, bold.
    pub fn state(&self, state: CrawlState) -> Style {
        let style = match state {
            CrawlState::Running => self.fg(Color::Green),
            CrawlState::Paused | CrawlState::Draining => self.fg(Color::Yellow),
            CrawlState::Starting | CrawlState::Done => self.fg(Color::Cyan),
        };
        style.add_modifier(Modifier::BOLD)
    }

    /// A log or status level.
    pub fn level(&self, level: Level) -> Style {
        match level {
            Level::Info => Style::new(),
            Level::Warn => self.fg(Color::Yellow),
            Level::Error => self.fg(Color::Red),
        }
    }

    /// What needs the operator's eye.
    pub fn warn(&self) -> Style {
        self.fg(Color::Yellow)
    }

    /// Titles and graphs.
    pub fn accent(&self) -> Style {
        self.fg(Color::Cyan)
    }

    /// Secondary text (completion candidates).
    pub fn dim(&self) -> Style {
        if self.color {
            Style::new().add_modifier(Modifier::DIM)
        } else {
            Style::new()
        }
    }
}
