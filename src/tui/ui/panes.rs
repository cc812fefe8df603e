//! Alerts, rules and log panes.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::Color;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, StatefulWidget, Table, TableState, Widget};

use super::Theme;
use crate::engine::control::{PatternKind, RuleSpec};
use crate::engine::telemetry::AlertStatus;
use crate::text::strip_control;
use crate::tui::model::{Model, Pane};

pub fn rule_label(spec: &RuleSpec) -> String {
    let kind = match spec.kind {
        PatternKind::Regex => "regex",
        PatternKind::Glob => "glob",
    };
    format!("{kind} {}", strip_control(&spec.pattern))
}

fn alert_style(theme: Theme, status: AlertStatus) -> ratatui::style::Style {
    match status {
        AlertStatus::Open => theme.fg(Color::Red),
        AlertStatus::Accepted => theme.fg(Color::Green),
        AlertStatus::Dismissed | AlertStatus::Noted => theme.fg(Color::Gray),
    }
}

pub fn render_alerts(model: &Model, theme: Theme, area: Rect, buf: &mut Buffer) {
    let alerts = &model.shown().alerts;
    let open = alerts
        .iter()
        .filter(|a| a.status == AlertStatus::Open)
        .count();
    let title = format!("Alerts ({open} open) a accept · e edit · d dismiss");
    let header = Row::new(
        [
            "#",
            "status",
            "host",
            "kind",
            "seen",
            "parked",
            "suggested rule",
        ]
        .map(|h| Cell::from(h).style(theme.bold())),
    );
    let rows = alerts.iter().map(|a| {
        Row::new(vec![
            Cell::from(a.id.to_string()),
            Cell::from(Span::styled(
                a.status.label().to_uppercase(),
                alert_style(theme, a.status),
            )),
            Cell::from(strip_control(&a.host).into_owned()),
            Cell::from(a.kind.label()),
            Cell::from(a.evidence_count.to_string()),
            Cell::from(a.matching_queued.to_string()),
            Cell::from(rule_label(&a.suggested_rule)),
        ])
    });
    let widths = [
        Constraint::Length(3),
        Constraint::Length(9),
        Constraint::Fill(2),
        Constraint::Length(17),
        Constraint::Length(5),
        Constraint::Length(6),
        Constraint::Fill(3),
    ];
    let table = Table::new(rows, widths)
        .header(header)
        .block(theme.block(&title, model.pane == Pane::Alerts))
        .row_highlight_style(theme.selected());
    let selected = (!alerts.is_empty()).then_some(model.selected[Pane::Alerts.index()]);
    StatefulWidget::render(
        table,
        area,
        buf,
        &mut TableState::default().with_selected(selected),
    );
}

pub fn render_rules(model: &Model, theme: Theme, area: Rect, buf: &mut Buffer) {
    let rules = &model.shown().rules;
    let header =
        Row::new(["#", "rule", "scope", "hits", "from"].map(|h| Cell::from(h).style(theme.bold())));
    let rows = rules.iter().map(|r| {
        Row::new(vec![
            Cell::from(r.id.to_string()),
            Cell::from(rule_label(&r.spec)),
            Cell::from(
                r.spec
                    .host
                    .as_deref()
                    .map(strip_control)
                    .unwrap_or("all hosts".into())
                    .into_owned(),
            ),
            Cell::from(r.hits.to_string()),
            Cell::from(strip_control(&r.origin).into_owned()),
        ])
    });
    let widths = [
        Constraint::Length(3),
        Constraint::Fill(3),
        Constraint::Fill(2),
        Constraint::Length(6),
        Constraint::Fill(1),
    ];
    let table = Table::new(rows, widths)
        .header(header)
        .block(theme.block(
            &format!("Rules ({}) x remove", rules.len()),
            model.pane == Pane::Rules,
        ))
        .row_highlight_style(theme.selected());
    let selected = (!rules.is_empty()).then_some(model.selected[Pane::Rules.index()]);
    StatefulWidget::render(
        table,
        area,
        buf,
        &mut TableState::default().with_selected(selected),
    );
}

pub fn render_log(model: &Model, theme: Theme, area: Rect, buf: &mut Buffer) {
    let block = theme.block("Log", model.pane == Pane::Log);
    let inner = block.inner(area);
    block.render(area, buf);
    let height = inner.height as usize;
    // Newest at the bottom; moving up in the log pane scrolls back.
    let back = if model.pane == Pane::Log {
        model
            .log
            .len()
            .saturating_sub(1 + model.selected[Pane::Log.index()])
    } else {
        0
    };
    let end = model.log.len().saturating_sub(back);
    let start = end.saturating_sub(height);
    let lines: Vec<Line> = model
        .log
        .range(start..end)
        .map(|l| Line::styled(format!(" {}", l.text), theme.level(l.level)))
        .collect();
    Paragraph::new(lines).render(inner, buf);
}
