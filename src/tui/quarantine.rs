//! The quarantine pane's state and decisions: the parked URLs by alert (read
//! off the loop through the crawl's read path), which alerts are expanded,
//! and Enter, which expands an alert or opens the inspector on the page a
//! parked URL was found on.

use super::effect::Effect;
use super::inspector;
use super::model::{Model, Pane};
use super::quarantine_state::QuarantineRow;
use crate::engine::inspect::quarantine::{ParkedUrl, Quarantine};
use crate::engine::telemetry::Level;

/// Snapshots between re-reads while the pane is in front (a read walks the
/// parked URLs, so not on every snapshot).
pub(super) const SNAPSHOTS_PER_READ: u32 = 8;

/// Asks for a fresh read unless one is under way.
pub(super) fn refresh(model: &mut Model) -> Vec<Effect> {
    let view = &mut model.quarantine;
    if view.reading {
        return Vec::new();
    }
    let Some(records) = model.records.clone() else {
        view.read = Some(Err(
            "this view has no records to read parked URLs from".into()
        ));
        return Vec::new();
    };
    view.reading = true;
    view.snapshots_since_read = 0;
    vec![Effect::ReadQuarantine { records }]
}

/// Re-reads now and then while the pane is in front.
pub(super) fn on_snapshot(model: &mut Model) -> Vec<Effect> {
    if model.pane != Pane::Quarantine || model.detail.is_some() {
        return Vec::new();
    }
    model.quarantine.snapshots_since_read += 1;
    match model.quarantine.snapshots_since_read >= SNAPSHOTS_PER_READ {
        true => refresh(model),
        false => Vec::new(),
    }
}

/// A read came back: keep it and the selection within the rows.
pub(super) fn on_read(model: &mut Model, read: Result<Quarantine, String>) {
    let view = &mut model.quarantine;
    view.reading = false;
    view.read = Some(read);
    view.selected = view.selected.min(view.rows().len().saturating_sub(1));
}

/// Enter: expands or folds an alert; on a URL, the inspector on its found-on page.
pub(super) fn open(model: &mut Model) -> Vec<Effect> {
    let view = &mut model.quarantine;
    let opened = match view.rows().get(view.selected) {
        Some(QuarantineRow::Alert(alert)) => Err(alert.alert_id),
        Some(QuarantineRow::Url(alert_id, parked)) => Ok((*alert_id, (*parked).clone())),
        None => return Vec::new(),
    };
    match opened {
        Err(alert_id) => {
            if !view.expanded.remove(&alert_id) {
                view.expanded.insert(alert_id);
            }
            Vec::new()
        }
        Ok((alert_id, parked)) => inspect_referrer(model, alert_id, parked),
    }
}

fn inspect_referrer(model: &mut Model, alert_id: u64, parked: ParkedUrl) -> Vec<Effect> {
    let origin = format!("found-on page of a URL parked by alert #{alert_id}");
    match parked.referrer {
        Some(page) if parked.referrer_fetched => {
            model.set_status(
                Level::Info,
                format!("the parked link is in the links list: parked by alert #{alert_id}"),
            );
            inspector::open_on(model, origin, vec![page], false)
        }
        referrer => {
            let note = format!(
                "never fetched: parked by alert #{alert_id}; found on {}",
                referrer.as_deref().unwrap_or("unknown")
            );
            inspector::open_note(model, origin, parked.url, note);
            Vec::new()
        }
    }
}
