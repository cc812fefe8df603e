//! Alerts, rules and log panes.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Cell, Paragraph, Row, StatefulWidget, Table, TableState, Widget};

use super::{clock, count, level_word, strip, Theme};
use crate::engine::control::{PatternKind, RuleSpec};
use crate::engine::telemetry::AlertStatus;
use crate::tui::model::Model;

fn kind_word(spec: &RuleSpec) -> &'static str {
    match spec.kind {
        PatternKind::Regex => "regex",
        PatternKind::Glob => "glob",
    }
}

fn table<'a>(
    rows: Vec<Row<'a>>,
    header: &[&'a str],
    widths: Vec<Constraint>,
    title: String,
) -> Table<'a> {
    Table::new(rows, widths)
        .header(Row::new(header.iter().copied()).style(Style::new().add_modifier(Modifier::BOLD)))
        .block(Block::bordered().title(title))
        .row_highlight_style(Style::new().add_modifier(Modifier::REVERSED))
        .column_spacing(1)
}

pub fn alerts(model: &Model, theme: &Theme, area: Rect, buf: &mut Buffer) {
    let alerts = &model.shown.alerts;
    let rows = alerts
        .iter()
        .map(|a| {
            let status_style = if a.status == AlertStatus::Open {
                theme.warn()
            } else {
                Style::new()
            };
            Row::new(vec![
                Cell::from(format!("#{}", a.id)),
                Cell::from(strip(&a.host).into_owned()),
                Cell::from(a.kind.label()),
                Cell::from(count(a.evidence_count)),
                Cell::from(count(a.matching_queued)),
                Cell::from(Span::styled(a.status.label(), status_style)),
            ])
        })
        .collect();
    let widths = vec![
        Constraint::Length(4),
        Constraint::Min(18),
        Constraint::Length(17),
        Constraint::Length(6),
        Constraint::Length(6),
        Constraint::Length(9),
    ];
    let header = ["Id", "Host", "Kind", "Evid", "Parked", "Status"];
    // The selected alert's suggested rule and samples get full lines below the table.
    let [area, below] = Layout::vertical([Constraint::Fill(1), Constraint::Length(4)]).areas(area);
    let mut lines = Vec::new();
    if let Some(a) = alerts.get(model.alert_selected) {
        let rule = &a.suggested_rule;
        let scope = rule
            .host
            .as_deref()
            .map_or("all hosts".into(), |h| strip(h).into_owned());
        lines.push(Line::from(vec![
            Span::styled(format!("#{} suggests ", a.id), theme.accent()),
            Span::raw(format!(
                "{} {}  ({scope})",
                kind_word(rule),
                strip(&rule.pattern)
            )),
        ]));
        for sample in a.samples.iter().take(2) {
            lines.push(Line::from(format!("  e.g. {}", strip(sample))));
        }
    }
    Paragraph::new(lines)
        .block(Block::bordered())
        .render(below, buf);
    let title = format!(" Alerts {}  (a accept, e edit, d dismiss) ", alerts.len());
    let mut state =
        TableState::default().with_selected((!alerts.is_empty()).then_some(model.alert_selected));
    StatefulWidget::render(table(rows, &header, widths, title), area, buf, &mut state);
}

pub fn rules(model: &Model, _theme: &Theme, area: Rect, buf: &mut Buffer) {
    let rules = &model.shown.rules;
    let rows = rules
        .iter()
        .map(|r| {
            Row::new(vec![
                Cell::from(format!("#{}", r.id)),
                Cell::from(kind_word(&r.spec)),
                Cell::from(strip(&r.spec.pattern).into_owned()),
                Cell::from(
                    r.spec
                        .host
                        .as_deref()
                        .map_or("all hosts".into(), |h| strip(h).into_owned()),
                ),
                Cell::from(count(r.hits)),
                Cell::from(strip(&r.origin).into_owned()),
            ])
        })
        .collect();
    let widths = vec![
        Constraint::Length(4),
        Constraint::Length(5),
        Constraint::Fill(1),
        Constraint::Max(24),
        Constraint::Length(8),
        Constraint::Length(10),
    ];
    let title = format!(" Rules {}  (x remove) ", rules.len());
    let mut state =
        TableState::default().with_selected((!rules.is_empty()).then_some(model.rule_selected));
    StatefulWidget::render(
        table(
            rows,
            &["Id", "Kind", "Pattern", "Scope", "Hits", "Origin"],
            widths,
            title,
        ),
        area,
        buf,
        &mut state,
    );
}

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
