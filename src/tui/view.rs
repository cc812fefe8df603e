//! What the operator looks at: scrolling, panes, the help overlay, the detail
//! view, sorting and freezing. These change the model only, never the crawl.

use super::action::Action;
use super::model::{Model, Overlay, Pane, SortColumn};
use crate::engine::telemetry::Level;

/// How far help and the detail view scroll at most (lines).
const SCROLL_LIMIT: usize = 200;

/// Applies a view action; any other action is left alone.
pub(super) fn apply(model: &mut Model, action: Action) {
    match action {
        Action::Up => scroll(model, -1),
        Action::Down => scroll(model, 1),
        Action::PageUp => scroll(model, -page(model)),
        Action::PageDown => scroll(model, page(model)),
        Action::Top => scroll(model, isize::MIN / 2),
        Action::Bottom => scroll(model, isize::MAX / 2),
        Action::Help => toggle_help(model),
        Action::Back => back(model),
        Action::NextPane => step_pane(model, 1),
        Action::PrevPane => step_pane(model, model.panes().len() - 1),
        Action::PaneHosts => model.pane = Pane::Hosts,
        Action::PaneAlerts => model.pane = Pane::Alerts,
        Action::PaneRules => model.pane = Pane::Rules,
        Action::PaneLog => model.pane = Pane::Log,
        Action::PaneQueues => model.pane = Pane::Queues,
        Action::PaneWorkers if model.panes().contains(&Pane::Workers) => {
            model.pane = Pane::Workers
        }
        Action::PaneWorkers => model.set_status(
            Level::Info,
            "the workers pane belongs to a shared crawl: `crawldeck attach --redis URL --crawl NAME`",
        ),
        Action::PaneQuarantine => model.pane = Pane::Quarantine,
        Action::PanePages => model.pane = Pane::Pages,
        Action::PaneAudit => model.pane = Pane::Audit,
        Action::Open => open_detail(model),
        Action::SortNext => sort_next(model),
        Action::SortReverse => model.sort_reverse = !model.sort_reverse,
        Action::Freeze => toggle_freeze(model),
        _ => {}
    }
}

/// Rows a page-up/down moves.
fn page(model: &Model) -> isize {
    model.page_rows.max(1) as isize
}

/// Moves `index` by `delta`, kept within `0..len`.
fn move_selection(index: &mut usize, len: usize, delta: isize) {
    let max = len.saturating_sub(1) as isize;
    *index = (*index as isize + delta).clamp(0, max) as usize;
}

/// Scrolls what is in front: help, the detail view, or the pane's selection.
fn scroll(model: &mut Model, delta: isize) {
    if model.overlay == Overlay::Help {
        move_selection(&mut model.help_scroll, SCROLL_LIMIT, delta);
    } else if let Some(inspector) = model.inspector.as_mut() {
        let lines = inspector.line_count();
        move_selection(&mut inspector.scroll, lines, delta);
    } else if model.detail.is_some() {
        move_selection(&mut model.detail_scroll, SCROLL_LIMIT, delta);
    } else {
        match model.pane {
            Pane::Hosts => {
                let len = model.host_count();
                move_selection(&mut model.host_selected, len, delta);
            }
            Pane::Alerts => {
                move_selection(&mut model.alert_selected, model.shown.alerts.len(), delta)
            }
            Pane::Rules => move_selection(&mut model.rule_selected, model.shown.rules.len(), delta),
            // The log scrolls back from its newest line.
            Pane::Log => move_selection(&mut model.log_scroll, model.log.len(), -delta),
            Pane::Quarantine => {
                let len = model.quarantine.rows().len();
                move_selection(&mut model.quarantine.selected, len, delta)
            }
            Pane::Audit => {
                let len = model.audit.findings().len();
                move_selection(&mut model.audit.selected, len, delta)
            }
            // The Pages view moves in `pages`, which reads as it goes.
            Pane::Queues | Pane::Workers | Pane::Pages => {}
        }
    }
}

/// Shows or hides help, from its top.
fn toggle_help(model: &mut Model) {
    model.overlay = if model.overlay == Overlay::Help {
        Overlay::None
    } else {
        Overlay::Help
    };
    model.help_scroll = 0;
}

/// Closes the innermost thing open: help, the detail view, the filter, the status line.
fn back(model: &mut Model) {
    if model.overlay == Overlay::Help {
        model.overlay = Overlay::None;
    } else if model.inspector.is_some() {
        model.inspector = None;
    } else if model.host_listing.is_some() {
        model.host_listing = None;
        model.detail_scroll = 0;
    } else if model.detail.is_some() {
        model.detail = None;
    } else if !model.filter.is_empty() {
        model.filter.clear();
    } else {
        model.status = None;
    }
}

/// Moves `steps` panes forward in tab order, wrapping around.
fn step_pane(model: &mut Model, steps: usize) {
    let panes = model.panes();
    let i = panes.iter().position(|p| *p == model.pane).unwrap_or(0);
    model.pane = panes[(i + steps) % panes.len()];
}

/// Opens the detail view of the selected host (from the hosts pane only).
fn open_detail(model: &mut Model) {
    if model.pane == Pane::Hosts {
        if let Some(h) = model.selected_host() {
            model.detail = Some(h.host.clone());
            model.detail_scroll = 0;
        }
    }
}

/// Sorts the hosts by the next column and says which.
fn sort_next(model: &mut Model) {
    let i = SortColumn::ALL
        .iter()
        .position(|c| *c == model.sort)
        .unwrap_or(0);
    model.sort = SortColumn::ALL[(i + 1) % SortColumn::ALL.len()];
    model.set_status(
        Level::Info,
        format!("hosts sorted by {}", model.sort.label()),
    );
}

/// Holds the display still, or lets it catch up with the newest snapshot.
fn toggle_freeze(model: &mut Model) {
    model.frozen = !model.frozen;
    if !model.frozen {
        model.shown = model.latest.clone();
        model.clamp_selection();
    }
}
