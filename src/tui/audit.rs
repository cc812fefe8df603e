//! The Audit view: the findings of `crawldeck audit`, one row per check with
//! how many URLs it touches, re-read now and then while in front (off the
//! loop: an audit is a pass over the crawl's pages); Enter lists a finding's
//! pages in the Pages view.

use super::effect::Effect;
use super::model::{Model, Pane};
use super::pages;
use crate::results::audit::Finding;

/// Snapshots between re-reads while the view is in front (~10 s).
pub(super) const SNAPSHOTS_PER_READ: u32 = 40;

/// Asks for a fresh audit unless one is under way.
pub(super) fn refresh(model: &mut Model) -> Vec<Effect> {
    let view = &mut model.audit;
    if view.reading {
        return Vec::new();
    }
    let Some(records) = model.records.clone() else {
        view.read = Some(Err("this view has no records to audit".into()));
        return Vec::new();
    };
    view.reading = true;
    view.snapshots_since_read = 0;
    vec![Effect::ReadAudit { records }]
}

/// Re-reads now and then while the view is in front.
pub(super) fn on_snapshot(model: &mut Model) -> Vec<Effect> {
    if model.pane != Pane::Audit || model.detail.is_some() || model.inspector.is_some() {
        return Vec::new();
    }
    model.audit.snapshots_since_read += 1;
    match model.audit.snapshots_since_read >= SNAPSHOTS_PER_READ {
        true => refresh(model),
        false => Vec::new(),
    }
}

/// The audit came back: kept, the selection within its rows.
pub(super) fn on_read(model: &mut Model, read: Result<Vec<Finding>, String>) {
    let view = &mut model.audit;
    view.reading = false;
    view.read = Some(read);
    view.selected = view.selected.min(view.findings().len().saturating_sub(1));
}

/// Enter: the Pages view filtered to the selected finding's URLs.
pub(super) fn open(model: &mut Model) -> Vec<Effect> {
    let Some(finding) = model.audit.findings().get(model.audit.selected) else {
        return Vec::new();
    };
    let filter = format!("audit:{}", finding.check);
    model.pane = Pane::Pages;
    let mut effects = pages::set_filter(model, filter);
    if effects.is_empty() {
        effects = pages::refresh(model);
    }
    effects
}
