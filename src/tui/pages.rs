//! The Pages view's decisions: which band of the crawl's pages to read (off
//! the loop, through the crawl's read path), moving the selection, the order,
//! the filter typed as it is typed, and Enter / `l`, which open the page
//! inspector on the selected row (at its links for `l`).

use std::path::PathBuf;

use super::effect::Effect;
use super::inspector;
use super::model::{Model, Pane, PromptKind};
use super::pages_state::BAND_MARGIN;
use crate::engine::telemetry::Level;
use crate::results::window::{Band, BandRequest, PageFilter};

/// Snapshots between re-reads while the view is in front (~2 s): a read of
/// a large crawl is a pass over its rows.
pub(super) const SNAPSHOTS_PER_READ: u32 = 8;

/// Rows on screen: the main pane's height, as the hosts table's.
fn screen_rows(model: &Model) -> usize {
    model.host_rows.max(1)
}

/// The band the screen needs: its rows and a margin on each side, with
/// every row counted or (in URL order) read only up to the band.
pub(super) fn wanted(model: &Model, count: bool) -> BandRequest {
    let view = &model.pages;
    BandRequest {
        // The records fill it in: a data directory's, or none for a cluster's.
        data_dir: PathBuf::new(),
        filter: view.filter.clone(),
        sort: view.sort,
        reverse: view.reverse,
        first: view.top.saturating_sub(BAND_MARGIN),
        rows: screen_rows(model) + 2 * BAND_MARGIN,
        count,
    }
}

/// Asks for the band the screen needs, unless a read is under way (then
/// once it ends): quickly, not counting past the band, so rows show at
/// once; a band whose filter was never counted is followed by a count.
pub(super) fn refresh(model: &mut Model) -> Vec<Effect> {
    read(model, false)
}

/// Asks for a band with every row counted.
fn recount(model: &mut Model) -> Vec<Effect> {
    read(model, true)
}

fn read(model: &mut Model, count: bool) -> Vec<Effect> {
    if model.pages.reading.is_some() {
        model.pages.stale = true;
        return Vec::new();
    }
    let Some(records) = model.records.clone() else {
        model.pages.band = Some(Err("this view has no records to read pages from".into()));
        return Vec::new();
    };
    let request = wanted(model, count);
    let view = &mut model.pages;
    view.reading = Some(request.clone());
    view.stale = false;
    view.snapshots_since_read = 0;
    vec![Effect::ReadPages { records, request }]
}

/// Reads only if the screen shows ranks the band does not hold.
fn read_if_needed(model: &mut Model) -> Vec<Effect> {
    let view = &model.pages;
    let covered = view.band_is_current()
        && view
            .band()
            .is_some_and(|b| b.covers(view.top, screen_rows(model)));
    match covered {
        true => Vec::new(),
        false => read(model, false),
    }
}

/// Re-reads (and counts) now and then while the view is in front: the
/// crawl goes on. After a read that took N snapshots, not before 3N more.
pub(super) fn on_snapshot(model: &mut Model) -> Vec<Effect> {
    if model.pane != Pane::Pages || model.detail.is_some() || model.inspector.is_some() {
        return Vec::new();
    }
    let view = &mut model.pages;
    view.snapshots_since_read += 1;
    let wait = SNAPSHOTS_PER_READ.max(view.last_read_snapshots.saturating_mul(3));
    match view.reading.is_none() && view.snapshots_since_read >= wait {
        true => recount(model),
        false => Vec::new(),
    }
}

/// A band came back: kept, the selection kept within the list, and read
/// again if the screen moved meanwhile.
pub(super) fn on_read(model: &mut Model, answer: Result<Band, String>) -> Vec<Effect> {
    let view = &mut model.pages;
    view.reading = None;
    view.last_read_snapshots = view.snapshots_since_read;
    view.snapshots_since_read = 0;
    if let Ok(band) = &answer {
        if band.counted {
            view.remember_total(&band.request.filter, band.total);
        }
    }
    view.band = Some(answer);
    if view.band.as_ref().is_some_and(Result::is_err) {
        return Vec::new();
    }
    if view.band_is_current() {
        let total = view.total();
        view.selected = view.selected.min(total.saturating_sub(1));
        follow_selection(model);
    }
    if model.pages.stale {
        return refresh(model);
    }
    if !model.pages.total_is_counted() {
        return recount(model);
    }
    read_if_needed(model)
}

/// Scrolls as little as shows the selected row.
fn follow_selection(model: &mut Model) {
    let rows = screen_rows(model);
    let view = &mut model.pages;
    if view.selected < view.top {
        view.top = view.selected;
    } else if view.selected >= view.top + rows {
        view.top = view.selected + 1 - rows;
    }
    view.top = view.top.min(view.total().saturating_sub(rows));
}

/// Moves the selection `delta` rows, reading the band it reaches.
pub(super) fn scroll(model: &mut Model, delta: isize) -> Vec<Effect> {
    let view = &mut model.pages;
    let max = view.total().saturating_sub(1) as isize;
    view.selected = (view.selected as isize).saturating_add(delta).clamp(0, max) as usize;
    follow_selection(model);
    read_if_needed(model)
}

/// `s`: orders by the next column, from the top.
pub(super) fn sort_next(model: &mut Model) -> Vec<Effect> {
    let view = &mut model.pages;
    view.sort = view.sort.next();
    view.reverse = false;
    reordered(model)
}

/// `S`: the other way round.
pub(super) fn sort_reverse(model: &mut Model) -> Vec<Effect> {
    model.pages.reverse = !model.pages.reverse;
    reordered(model)
}

fn reordered(model: &mut Model) -> Vec<Effect> {
    let view = &mut model.pages;
    view.selected = 0;
    view.top = 0;
    let direction = match view.reverse != view.sort.largest_first() {
        true => "largest first",
        false => "smallest first",
    };
    let text = format!("pages sorted by {} ({direction})", view.sort.label());
    model.set_status(Level::Info, text);
    refresh(model)
}

/// `/` in the view: the filter prompt, holding the filter in force.
pub(super) fn open_filter(model: &mut Model) {
    model.pages.filter_before = Some(model.pages.filter.clone());
    let text = model.pages.filter.clone();
    model.open_prompt(PromptKind::PagesFilter, text);
}

/// How long typing must pause before the filter typed is read.
pub const TYPING_PAUSE: std::time::Duration = std::time::Duration::from_millis(300);

/// The filter as typed so far: in force once typing pauses if it parses,
/// else its error under the prompt (the last good filter stays).
pub(super) fn filter_typed(model: &mut Model, text: &str) -> Vec<Effect> {
    if let Err(e) = PageFilter::parse(text, std::path::Path::new("")) {
        if let Some(prompt) = model.prompt.as_mut() {
            prompt.error = Some(e);
        }
        return Vec::new();
    }
    let view = &mut model.pages;
    let filter = text.trim().to_string();
    if view.filter == filter {
        return Vec::new();
    }
    view.filter = filter;
    view.selected = 0;
    view.top = 0;
    view.typed += 1;
    vec![Effect::PagesFilterAfter {
        generation: view.typed,
        delay: TYPING_PAUSE,
    }]
}

/// Typing paused: the filter typed last is read, unless more came since.
pub(super) fn typing_paused(model: &mut Model, generation: u64) -> Vec<Effect> {
    match generation == model.pages.typed {
        true => refresh(model),
        false => Vec::new(),
    }
}

/// Esc on the filter prompt: the filter before it opened.
pub(super) fn filter_cancelled(model: &mut Model) -> Vec<Effect> {
    match model.pages.filter_before.take() {
        Some(before) => set_filter(model, before),
        None => Vec::new(),
    }
}

/// Puts `filter` in force (from the top) and reads its first band.
pub(super) fn set_filter(model: &mut Model, filter: String) -> Vec<Effect> {
    let view = &mut model.pages;
    // A read waiting for typing to pause is this one, now.
    view.typed += 1;
    if view.filter == filter && view.band_is_current() {
        return Vec::new();
    }
    if view.filter != filter {
        view.filter = filter;
        view.selected = 0;
        view.top = 0;
    }
    refresh(model)
}

/// Enter: the inspector on the selected row (`n`/`N` step through the band).
pub(super) fn open(model: &mut Model) -> Vec<Effect> {
    inspect_selected(model, None)
}

/// `l`: the same, at the page's links out and the pages linking in.
pub(super) fn links(model: &mut Model) -> Vec<Effect> {
    inspect_selected(model, Some("links ("))
}

fn inspect_selected(model: &mut Model, jump_to: Option<&'static str>) -> Vec<Effect> {
    let view = &model.pages;
    let Some(band) = view.band().filter(|_| view.band_is_current()) else {
        return Vec::new();
    };
    if band.row(view.selected).is_none() {
        return Vec::new();
    }
    let urls: Vec<String> = band.rows.iter().map(|r| r.url.clone()).collect();
    let at = view.selected - band.first;
    let origin = match view.filter.is_empty() {
        true => "pages".to_string(),
        false => format!("pages matching {}", view.filter),
    };
    inspector::open_at(model, origin, urls, at, jump_to)
}
