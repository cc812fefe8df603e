//! Three header lines: gauges, the pages/s sparkline, settings.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Sparkline, Widget};

use super::{bytes, clock, count, short, strip, Theme};
use crate::engine::telemetry::{CrawlState, Level, Snapshot};
use crate::tui::model::{EngineLife, Model};

/// The header: gauges, the pages/s sparkline, then the settings.
pub fn render(model: &Model, theme: &Theme, area: Rect, buf: &mut Buffer) {
    let [top, spark, bottom] = Layout::vertical([Constraint::Length(1); 3]).areas(area);
    gauges(model, theme, area.width >= 100).render(top, buf);
    sparkline(model, theme, spark, buf);
    if let EngineLife::Gone(why) = &model.engine {
        // Nothing on screen changes any more: say why before anything else.
        return Line::from(Span::styled(
            format!(" ENGINE GONE: {}  (q leaves)", strip(why)),
            theme.level(Level::Error),
        ))
        .render(bottom, buf);
    }
    if let Some(outage) = &model.shown.outage {
        // The crawl waits for the shared frontier and resumes by itself.
        return Line::from(Span::styled(
            format!(" PAUSED, shared frontier unreachable: {}", strip(outage)),
            theme.level(Level::Error),
        ))
        .render(bottom, buf);
    }
    match &model.shown.fault {
        // A failed write outranks the settings: the crawl waits on the operator.
        Some(fault) => Line::from(Span::styled(
            format!(
                " STORAGE FAULT, paused: {}  (free space, then p resumes)",
                strip(fault)
            ),
            theme.level(Level::Error),
        ))
        .render(bottom, buf),
        None => Line::from(settings(&model.shown)).render(bottom, buf),
    }
}

/// State, clock and counters; `wide` adds the brand and longer words.
fn gauges<'a>(model: &Model, theme: &Theme, wide: bool) -> Line<'a> {
    let s = &model.shown;
    let brand = if wide { " crawldeck " } else { "" };
    let in_flight = if wide { "in-flight" } else { "fly" };
    // The engine's own state, not the last snapshot's, once it has ended.
    let state = match &model.engine {
        EngineLife::Running => Span::styled(format!(" {} ", s.state.label()), theme.state(s.state)),
        EngineLife::Finished(_) => Span::styled(" FINISHED ", theme.state(CrawlState::Done)),
        EngineLife::Gone(_) => Span::styled(
            " GONE ",
            theme.level(Level::Error).add_modifier(Modifier::BOLD),
        ),
    };
    Line::from(vec![
        Span::styled(brand, theme.accent()),
        state,
        Span::raw(format!(
            " {}  pages {}  {:.1}/s  {}  err {}  frontier {}  {in_flight} {}",
            clock(s.elapsed),
            count(s.counters.pages_fetched),
            s.pages_per_sec,
            bytes(s.counters.bytes),
            count(s.counters.errors),
            count(s.frontier_size),
            s.in_flight
        )),
    ])
}

/// Pages per second over the last seconds, newest at the right edge; the
/// identity in use at the right, so the lines above and below keep their room.
fn sparkline(model: &Model, theme: &Theme, area: Rect, buf: &mut Buffer) {
    let who = identity(&model.shown, area.width as usize / 2);
    let [label, graph, ident] = Layout::horizontal([
        Constraint::Length(10),
        Constraint::Fill(1),
        Constraint::Length(who.chars().count() as u16),
    ])
    .areas(area);
    Span::raw(" pages/s ").render(label, buf);
    Span::styled(who, theme.accent()).render(ident, buf);
    let width = graph.width as usize;
    let data: Vec<u64> = model
        .history
        .iter()
        .rev()
        .take(width)
        .rev()
        .copied()
        .collect();
    Sparkline::default()
        .data(&data)
        .style(theme.accent())
        .render(graph, buf);
}

/// ` acmebot · AcmeBot/2.0 (+https://…) `, cut to `max` characters; empty
/// before the first snapshot names it.
fn identity(s: &Snapshot, max: usize) -> String {
    if s.product_token.is_empty() {
        return String::new();
    }
    let full = format!(" {} · {} ", strip(&s.product_token), strip(&s.user_agent));
    if full.chars().count() <= max {
        return full;
    }
    let mut cut: String = full.chars().take(max.saturating_sub(2)).collect();
    cut.push_str("… ");
    cut
}

/// The crawl's settings and totals, and what went wrong or how it finished.
fn settings(s: &Snapshot) -> String {
    let rate = s
        .global_rate
        .map_or("off".to_string(), |r| format!("{r}/s"));
    let mut text = format!(
        " data {}  delay {}  concurrency {}  rate {}  hosts {}  dup {}  blocked {}",
        strip(&s.data_dir),
        short(s.global_delay),
        s.global_concurrency,
        rate,
        s.hosts_total,
        count(s.counters.duplicates),
        count(s.counters.blocked_by_rules)
    );
    if s.dropped_events > 0 {
        text.push_str(&format!("  dropped events {}", count(s.dropped_events)));
    }
    if let Some(reason) = &s.finish_reason {
        text.push_str(&format!("  finished: {}", strip(reason)));
    }
    text
}
