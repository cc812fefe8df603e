//! Alerts, rules and log panes.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Cell, Paragraph, Row, StatefulWidget, Widget};

use super::{clock, count, level_word, selection, strip, table, Theme};
use crate::engine::control::{PatternKind, RuleSpec};
use crate::engine::telemetry::{AlertStatus, TrapAlert};
use crate::tui::model::Model;

/// A rule's pattern kind as a word.
fn kind_word(spec: &RuleSpec) -> &'static str {
    match spec.kind {
        PatternKind::Regex => "regex",
        PatternKind::Glob => "glob",
    }
}

/// Where a rule applies: its host, or all hosts.
fn scope(spec: &RuleSpec) -> String {
    spec.host
        .as_deref()
        .map_or("all hosts".into(), |h| strip(h).into_owned())
}

/// A table header of plain titles.
fn header<'a>(titles: &[&'a str]) -> Row<'a> {
    Row::new(titles.iter().copied())
}

/// The alerts table, with the selected alert's suggestion in a box below it.
pub fn alerts(model: &Model, theme: &Theme, area: Rect, buf: &mut Buffer) {
    let alerts = &model.shown.alerts;
    // Over a shared crawl each alert belongs to the worker that raised it.
    let workers = model.shown.cluster.as_ref().map(|c| &c.alert_workers);
    let rows = alerts.iter().map(|a| {
        let host = match workers.and_then(|w| w.get(&a.id)) {
            Some(worker) => format!("{} ({})", strip(&a.host), strip(worker)),
            None => strip(&a.host).into_owned(),
        };
        alert_row(a, host, theme)
    });
    let widths = vec![
        Constraint::Length(4),
        Constraint::Min(18),
        Constraint::Length(17),
        Constraint::Length(6),
        Constraint::Length(6),
        Constraint::Length(9),
    ];
    let header = header(&["Id", "Host", "Kind", "Evid", "Parked", "Status"]);
    // The selected alert's suggested rule and samples get full lines below the table.
    let [area, below] = Layout::vertical([Constraint::Fill(1), Constraint::Length(6)]).areas(area);
    let lines = alerts
        .get(model.alert_selected)
        .map_or_else(Vec::new, |a| suggestion_lines(a, theme));
    Paragraph::new(lines)
        .block(Block::bordered())
        .render(below, buf);
    // Counted as the tab counts them: the open ones wait for a decision.
    let open = alerts
        .iter()
        .filter(|a| a.status == AlertStatus::Open)
        .count();
    let title = format!(
        " Alerts: {open} open of {}  (a accept, e edit, d dismiss) ",
        alerts.len()
    );
    let mut state = selection(alerts.len(), model.alert_selected);
    StatefulWidget::render(table(rows, header, widths, title), area, buf, &mut state);
}

/// One alert's row; an open alert's status stands out.
fn alert_row<'a>(a: &TrapAlert, host: String, theme: &Theme) -> Row<'a> {
    let status_style = if a.status == AlertStatus::Open {
        theme.warn()
    } else {
        Style::new()
    };
    Row::new(vec![
        Cell::from(format!("#{}", a.id)),
        Cell::from(host),
        Cell::from(a.kind.label()),
        Cell::from(count(a.evidence_count)),
        Cell::from(count(a.matching_queued)),
        Cell::from(Span::styled(a.status.label(), status_style)),
    ])
}

/// The alert's suggested rule, what it would block and two sample URLs.
fn suggestion_lines<'a>(a: &TrapAlert, theme: &Theme) -> Vec<Line<'a>> {
    let rule = &a.suggested_rule;
    let mut lines = vec![Line::from(vec![
        Span::styled(format!("#{} suggests ", a.id), theme.accent()),
        Span::raw(format!(
            "{} {}  ({})",
            kind_word(rule),
            strip(&rule.pattern),
            scope(rule)
        )),
    ])];
    if let Some(impact) = &a.impact {
        let style = if impact.good_fetched > 0 {
            theme.warn()
        } else {
            Style::new()
        };
        lines.push(Line::from(Span::styled(
            format!("  {}", impact.summary()),
            style,
        )));
    }
    if a.last_seen > 0 {
        let secs = a.last_seen % 86_400;
        lines.push(Line::from(format!(
            "  {} URLs of evidence, last seen {:02}:{:02}:{:02} UTC",
            count(a.evidence_count),
            secs / 3600,
            secs % 3600 / 60,
            secs % 60
        )));
    }
    for sample in a.samples.iter().take(2) {
        lines.push(Line::from(format!("  e.g. {}", strip(sample))));
    }
    lines
}

/// The operator's rules with their hit counts.
pub fn rules(model: &Model, _theme: &Theme, area: Rect, buf: &mut Buffer) {
    let rules = &model.shown.rules;
    let rows = rules.iter().map(|r| {
        Row::new(vec![
            Cell::from(format!("#{}", r.id)),
            Cell::from(kind_word(&r.spec)),
            Cell::from(strip(&r.spec.pattern).into_owned()),
            Cell::from(scope(&r.spec)),
            Cell::from(count(r.hits)),
            Cell::from(strip(&r.origin).into_owned()),
        ])
    });
    let widths = vec![
        Constraint::Length(4),
        Constraint::Length(5),
        Constraint::Fill(1),
        Constraint::Max(24),
        Constraint::Length(8),
        Constraint::Length(10),
    ];
    let header = header(&["Id", "Kind", "Pattern", "Scope", "Hits", "Origin"]);
    let title = format!(" Rules {}  (x remove) ", rules.len());
    let mut state = selection(rules.len(), model.rule_selected);
    StatefulWidget::render(table(rows, header, widths, title), area, buf, &mut state);
}

/// The newest log lines that fit, or older ones when scrolled back.
pub fn log(model: &Model, theme: &Theme, area: Rect, buf: &mut Buffer) {
    let block = Block::bordered().title(if model.log_scroll > 0 {
        format!(" Log (scrolled back {}) ", model.log_scroll)
    } else {
        " Log ".to_string()
    });
    let inner = block.inner(area);
    block.render(area, buf);
    let height = inner.height as usize;
    let end = model.log.len().saturating_sub(model.log_scroll);
    let start = end.saturating_sub(height);
    let lines: Vec<Line> = model
        .log
        .range(start..end)
        .map(|l| {
            Line::from(vec![
                Span::raw(format!("{} ", clock(l.at))),
                Span::styled(format!("{:<5} ", level_word(l.level)), theme.level(l.level)),
                Span::raw(strip(&l.text).into_owned()),
            ])
        })
        .collect();
    Paragraph::new(lines).render(inner, buf);
}
