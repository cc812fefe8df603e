//! The page inspector's decisions: which pages it shows (an alert's
//! evidence, a host's recent fetches), stepping through them, `:select`, and
//! the answers read off the loop. Pages are read through the crawl's read
//! path (`Results`: the store, or the running engine's control socket), never
//! by the UI loop itself.

use std::collections::HashMap;
use std::sync::Arc;

use super::effect::Effect;
use super::inspector_state::Inspector;
use super::model::{Model, Pane, PromptKind};
use crate::engine::inspect::PageInspection;
use crate::engine::telemetry::{Level, TrapAlert, TrapKind};

/// Whether an alert's evidence pages are compared with each other.
fn compares_pages(kind: TrapKind) -> bool {
    kind == TrapKind::NearDuplicates || kind.label() == "soft 404"
}

/// Enter: the inspector on the selected alert's evidence, or in a host's
/// detail view on its recent fetches (newest first).
pub(super) fn open(model: &mut Model) -> Vec<Effect> {
    let opened = if let Some(host) = model.detail.clone() {
        let urls: Vec<String> = model
            .recent
            .get(&host)
            .map(|fetches| fetches.iter().rev().map(|f| f.url.clone()).collect())
            .unwrap_or_default();
        (format!("recent fetches of {host}"), urls, false)
    } else if model.pane == Pane::Alerts {
        match model.shown.alerts.get(model.alert_selected) {
            Some(alert) => alert_evidence(alert),
            None => return Vec::new(),
        }
    } else {
        return Vec::new();
    };
    let (origin, urls, diff) = opened;
    if urls.is_empty() {
        model.set_status(Level::Warn, format!("{origin}: no pages to inspect yet"));
        return Vec::new();
    }
    open_on(model, origin, urls, diff)
}

/// The inspector on `urls` under the title `origin`, reading the first.
pub(super) fn open_on(
    model: &mut Model,
    origin: String,
    urls: Vec<String>,
    diff: bool,
) -> Vec<Effect> {
    model.inspector = Some(Inspector {
        origin,
        urls,
        at: 0,
        diff,
        pages: HashMap::new(),
        selected: None,
        scroll: 0,
        diff_rows: None,
        jump_to: None,
    });
    read_shown(model)
}

/// The inspector on `urls[at]` (`n`/`N` step through the others), scrolled
/// to the first line starting with `jump_to` once it is read.
pub(super) fn open_at(
    model: &mut Model,
    origin: String,
    urls: Vec<String>,
    at: usize,
    jump_to: Option<&'static str>,
) -> Vec<Effect> {
    let effects = open_on(model, origin, urls, false);
    let Some(inspector) = model.inspector.as_mut() else {
        return effects;
    };
    inspector.at = at.min(inspector.urls.len().saturating_sub(1));
    inspector.jump_to = jump_to;
    read_shown(model)
}

/// The inspector on `url` with nothing to read, saying `note` instead (a
/// parked URL whose found-on page was never fetched).
pub(super) fn open_note(model: &mut Model, origin: String, url: String, note: String) {
    let pages = HashMap::from([(url.clone(), Err(note))]);
    model.inspector = Some(Inspector {
        origin,
        urls: vec![url],
        at: 0,
        diff: false,
        pages,
        selected: None,
        scroll: 0,
        diff_rows: None,
        jump_to: None,
    });
}

fn alert_evidence(alert: &TrapAlert) -> (String, Vec<String>, bool) {
    (
        format!("alert #{} evidence ({})", alert.id, alert.kind.label()),
        alert.samples.clone(),
        compares_pages(alert.kind),
    )
}

/// `n` / `N`: the next or previous URL of the list.
pub(super) fn step(model: &mut Model, forward: bool) -> Vec<Effect> {
    let Some(inspector) = model.inspector.as_mut() else {
        return Vec::new();
    };
    let n = inspector.urls.len();
    inspector.at = if forward {
        (inspector.at + 1) % n
    } else {
        (inspector.at + n - 1) % n
    };
    inspector.scroll = 0;
    inspector.selected = None;
    inspector.diff_rows = None;
    read_shown(model)
}

/// Reads the shown page and its diff partner unless already read; forgets
/// the others, so at most two pages are held.
fn read_shown(model: &mut Model) -> Vec<Effect> {
    let Some(inspector) = model.inspector.as_mut() else {
        return Vec::new();
    };
    let wanted: Vec<String> = std::iter::once(inspector.url().to_string())
        .chain(inspector.partner().map(str::to_string))
        .collect();
    inspector.pages.retain(|url, _| wanted.contains(url));
    let Some(records) = model.records.clone() else {
        for url in wanted {
            let why = "this view has no records to read pages from".to_string();
            inspector.pages.insert(url, Err(why));
        }
        return Vec::new();
    };
    wanted
        .into_iter()
        .filter(|url| !inspector.pages.contains_key(url))
        .map(|url| Effect::Inspect {
            records: records.clone(),
            url,
        })
        .collect()
}

/// A page read for the inspector (or why it could not be).
pub(super) fn inspected(model: &mut Model, url: String, page: Result<Arc<PageInspection>, String>) {
    if let Some(inspector) = model.inspector.as_mut() {
        let wanted = inspector.url() == url || inspector.partner() == Some(url.as_str());
        if wanted {
            inspector.pages.insert(url, page);
            diff_when_read(inspector);
            jump_when_read(inspector);
        }
    }
}

/// Scrolls to the line asked for once the shown page is read.
fn jump_when_read(inspector: &mut Inspector) {
    let Some(prefix) = inspector.jump_to else {
        return;
    };
    let Some(Ok(page)) = inspector.page() else {
        return;
    };
    let lines = crate::results::page::inspection_lines(page);
    inspector.scroll = lines
        .iter()
        .position(|l| l.starts_with(prefix))
        .unwrap_or(0);
    inspector.jump_to = None;
}

/// Diffs the shown page with its partner once both are read: once, not per
/// frame (the diff has a time budget of its own).
fn diff_when_read(inspector: &mut Inspector) {
    let Some(partner) = inspector.partner() else {
        return;
    };
    if let (Some(Ok(page)), Some(Ok(other))) = (inspector.page(), inspector.pages.get(partner)) {
        let rows = crate::engine::inspect::side_by_side(&page.text, &other.text);
        inspector.diff_rows = Some(rows);
    }
}

/// `:select CSS` on the shown page.
pub(super) fn select(model: &mut Model, css: String) -> Vec<Effect> {
    let Some(inspector) = model.inspector.as_mut() else {
        model.set_status(
            Level::Warn,
            ":select works in the page inspector (Enter on an alert or a recent fetch)",
        );
        return Vec::new();
    };
    let Some(Ok(page)) = inspector.page() else {
        model.set_status(Level::Warn, "the page is not read yet");
        return Vec::new();
    };
    let page = page.clone();
    inspector.selected = Some((css.clone(), None));
    vec![Effect::Select { page, css }]
}

/// `x` after a `:select`: a prompt for the name of an extraction of that
/// selector, which the engine runs on every page fetched from then on.
pub(super) fn extract_selection(model: &mut Model) {
    let selector = model
        .inspector
        .as_ref()
        .and_then(|i| i.selected.as_ref())
        .map(|(css, _)| css.clone());
    match selector {
        Some(selector) => model.open_prompt(PromptKind::Extraction { selector }, String::new()),
        None => model.set_status(
            Level::Warn,
            "try a selector with :select CSS first; then this makes it an extraction",
        ),
    }
}

/// The lines `:select` found (for the shown page and the selector last asked).
pub(super) fn selected(model: &mut Model, url: String, css: String, lines: Vec<String>) {
    if let Some(inspector) = model.inspector.as_mut() {
        let current = inspector.url() == url
            && inspector
                .selected
                .as_ref()
                .is_some_and(|(asked, _)| *asked == css);
        if current {
            inspector.selected = Some((css, Some(lines)));
        }
    }
}
