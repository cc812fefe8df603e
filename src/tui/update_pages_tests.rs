use crate::engine::store::{PageOutcome, PageRecord};
use crate::engine::telemetry::Snapshot;
use crate::results::audit::Finding;
use crate::results::rows::{Row, RuleOrigins};
use crate::results::window::{Band, BandRequest, PageColumn};
use crate::tui::effect::Effect;
use crate::tui::keys::keymap_from_str;
use crate::tui::model::{Model, Pane};
use crate::tui::pages::SNAPSHOTS_PER_READ;
use crate::tui::pages_state::BAND_MARGIN;
use crate::tui::records::Records;
use crate::tui::update::{update, Msg};
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::sync::Arc;

const SCREEN: usize = 20;

fn key(code: KeyCode) -> Msg {
    Msg::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

fn typed(m: &mut Model, text: &str) -> Vec<Effect> {
    text.chars()
        .flat_map(|c| update(m, key(KeyCode::Char(c))))
        .collect()
}

/// Types `text`, then typing pauses (the timers the typing asked for end,
/// the last one's read goes out).
fn typed_then_pause(m: &mut Model, text: &str) -> Vec<Effect> {
    let timers: Vec<u64> = typed(m, text)
        .into_iter()
        .filter_map(|e| match e {
            Effect::PagesFilterAfter { generation, .. } => Some(generation),
            _ => None,
        })
        .collect();
    timers
        .into_iter()
        .flat_map(|generation| update(m, Msg::PagesFilterDue(generation)))
        .collect()
}

fn model() -> Model {
    let (keymap, _) = keymap_from_str("");
    let mut m = Model::new(keymap, false, false);
    m.records = Some(Records::Dir("/crawl".into()));
    update(&mut m, Msg::HostRows(SCREEN));
    m
}

/// The band requests among `effects`.
fn reads(effects: &[Effect]) -> Vec<BandRequest> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::ReadPages { request, .. } => Some(request.clone()),
            _ => None,
        })
        .collect()
}

fn row(rank: usize) -> Row {
    let record = PageRecord::without_fetch(
        &format!("http://a.example/p{rank:06}"),
        "a.example",
        1,
        1,
        PageOutcome::Fetched { status: 200 },
    );
    Row::of_page(record, &RuleOrigins::default())
}

/// The answer to `request` from a list of `total` rows, counted as asked
/// (in URL order, an uncounted band knows only that one more row exists).
fn answer(request: &BandRequest, total: usize) -> Msg {
    let first = request.first.min(total);
    let end = (request.first + request.rows).min(total);
    let in_url_order = request.sort == PageColumn::Url && !request.reverse;
    let counted = request.count || !in_url_order || end == total;
    Msg::PagesRead(Ok(Band {
        request: request.clone(),
        total: if counted { total } else { end + 1 },
        counted,
        first,
        rows: (first..end).map(row).collect(),
    }))
}

/// Answers the reads under way (one at a time, as the view asks) from a
/// list of `total` rows until none is left.
fn settle(m: &mut Model, total: usize) {
    while let Some(request) = m.pages.reading.clone() {
        update(m, answer(&request, total));
    }
}

/// The Pages view in front, its first band of `total` rows read.
fn pages_open(total: usize) -> Model {
    let mut m = model();
    let asked = reads(&update(&mut m, key(KeyCode::Char('8'))));
    assert_eq!(m.pane, Pane::Pages);
    assert_eq!(asked.len(), 1, "entering the view reads its first band");
    assert_eq!((asked[0].first, asked[0].filter.as_str()), (0, ""));
    // Its rows at once, then every row counted.
    settle(&mut m, total);
    assert!(m.pages.total_is_counted());
    m
}

#[test]
fn scrolling_within_the_band_reads_nothing_and_past_it_reads_the_band_around_the_screen() {
    let mut m = pages_open(1_000_000);
    for _ in 0..BAND_MARGIN {
        assert!(reads(&update(&mut m, key(KeyCode::Char('j')))).is_empty());
    }
    assert_eq!(m.pages.selected, BAND_MARGIN);
    // The end of a million rows: one read, of the band around the last screen.
    let asked = reads(&update(&mut m, key(KeyCode::Char('G'))));
    assert_eq!(asked.len(), 1);
    assert_eq!(m.pages.selected, 999_999);
    assert_eq!(m.pages.top, 1_000_000 - SCREEN);
    assert_eq!(asked[0].first, 1_000_000 - SCREEN - BAND_MARGIN);
    assert_eq!(asked[0].rows, SCREEN + 2 * BAND_MARGIN);
    // Moving again while it is read asks once more only after the answer.
    assert!(reads(&update(&mut m, key(KeyCode::Char('g')))).is_empty());
    let again = reads(&update(&mut m, answer(&asked[0], 1_000_000)));
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].first, 0);
    // What the view holds is the band, not the list.
    update(&mut m, answer(&again[0], 1_000_000));
    assert_eq!(m.pages.band().unwrap().rows.len(), SCREEN + 2 * BAND_MARGIN);
    assert_eq!(
        m.pages.band().unwrap().row(m.pages.selected).unwrap().url,
        "http://a.example/p000000"
    );
}

#[test]
fn the_filter_applies_once_typing_pauses_if_it_parses_and_esc_restores_the_one_before() {
    let mut m = pages_open(50);
    update(&mut m, key(KeyCode::Char('/')));
    // Typing reads nothing: each change asks for a timer.
    let effects = typed(&mut m, "status:4");
    assert!(reads(&effects).is_empty());
    assert!(effects
        .iter()
        .all(|e| matches!(e, Effect::PagesFilterAfter { .. })));
    // "status:4" is not a status yet: its error shows, and the last text that
    // parsed ("status:", no status given) is the filter.
    let error = m.prompt.as_ref().unwrap().error.clone().unwrap();
    assert!(error.contains("bad status"), "{error}");
    assert_eq!(m.pages.filter, "status:");
    // Only the last timer reads, the filter typed last.
    let asked = reads(&typed_then_pause(&mut m, "04"));
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].filter, "status:404");
    update(&mut m, answer(&asked[0], 3));
    assert!(m.pages.band_is_current());
    // Esc on the prompt: the filter before it opened, read again.
    let asked = reads(&update(&mut m, key(KeyCode::Esc)));
    assert_eq!(m.pages.filter, "");
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].filter, "");
}

#[test]
fn enter_reads_the_filter_typed_at_once() {
    let mut m = pages_open(50);
    update(&mut m, key(KeyCode::Char('/')));
    let timers = typed(&mut m, "fate:error");
    let asked = reads(&update(&mut m, key(KeyCode::Enter)));
    assert_eq!(asked[0].filter, "fate:error");
    // The timers typing asked for read nothing more.
    for e in timers {
        if let Effect::PagesFilterAfter { generation, .. } = e {
            assert!(reads(&update(&mut m, Msg::PagesFilterDue(generation))).is_empty());
        }
    }
}

#[test]
fn a_submitted_filter_stays_and_esc_in_the_view_clears_it() {
    let mut m = pages_open(50);
    update(&mut m, key(KeyCode::Char('/')));
    typed_then_pause(&mut m, "fate:error");
    settle(&mut m, 2);
    update(&mut m, key(KeyCode::Enter));
    assert!(m.prompt.is_none());
    assert_eq!(m.pages.filter, "fate:error");
    let asked = reads(&update(&mut m, key(KeyCode::Esc)));
    assert_eq!(m.pages.filter, "");
    assert_eq!(asked[0].filter, "");
}

#[test]
fn sorting_reads_from_the_top_in_the_new_order() {
    let mut m = pages_open(500);
    update(&mut m, key(KeyCode::Char('j')));
    let asked = reads(&update(&mut m, key(KeyCode::Char('s'))));
    assert_eq!(asked[0].sort, PageColumn::Status);
    assert_eq!((asked[0].first, m.pages.selected), (0, 0));
    // A band of the old order is not shown as the new one's.
    assert!(!m.pages.band_is_current());
    update(&mut m, answer(&asked[0], 500));
    let asked = reads(&update(&mut m, key(KeyCode::Char('S'))));
    assert!(asked[0].reverse);
}

#[test]
fn enter_inspects_the_selected_row_and_l_opens_it_at_its_links() {
    let mut m = pages_open(500);
    update(&mut m, key(KeyCode::Char('j')));
    update(&mut m, key(KeyCode::Char('j')));
    let effects = update(&mut m, key(KeyCode::Enter));
    let inspector = m.inspector.as_ref().unwrap();
    assert_eq!(inspector.url(), "http://a.example/p000002");
    assert!(matches!(&effects[..], [Effect::Inspect { url, .. }] if url.ends_with("p000002")));
    assert_eq!(inspector.jump_to, None);
    update(&mut m, key(KeyCode::Esc));
    update(&mut m, key(KeyCode::Char('l')));
    assert_eq!(m.inspector.as_ref().unwrap().jump_to, Some("links ("));
}

#[test]
fn the_view_rereads_while_in_front_only() {
    let mut m = pages_open(10);
    let mut asked = 0;
    for _ in 0..SNAPSHOTS_PER_READ {
        asked += reads(&update(
            &mut m,
            Msg::Snapshot(Arc::new(Snapshot::default())),
        ))
        .len();
    }
    assert_eq!(asked, 1);
    update(&mut m, key(KeyCode::Char('1')));
    let pending = m.pages.reading.clone().unwrap();
    update(&mut m, answer(&pending, 10));
    for _ in 0..SNAPSHOTS_PER_READ * 2 {
        assert!(reads(&update(
            &mut m,
            Msg::Snapshot(Arc::new(Snapshot::default()))
        ))
        .is_empty());
    }
}

#[test]
fn enter_on_a_finding_lists_its_pages() {
    let mut m = model();
    let effects = update(&mut m, key(KeyCode::Char('9')));
    assert!(matches!(&effects[..], [Effect::ReadAudit { .. }]));
    let finding = Finding {
        check: "broken-links",
        priority: "high",
        urls: 3,
        finding: "internal URLs answering 4xx/5xx".into(),
        command: String::new(),
    };
    update(&mut m, Msg::AuditRead(Ok(vec![finding])));
    let asked = reads(&update(&mut m, key(KeyCode::Enter)));
    assert_eq!(m.pane, Pane::Pages);
    assert_eq!(asked[0].filter, "audit:broken-links");
}

#[test]
fn bands_are_read_quickly_and_a_filter_never_counted_is_counted_after() {
    let mut m = pages_open(100_000);
    assert_eq!(m.pages.known_total_of(""), Some(100_000));
    // A new filter: its band at once, then a count (nothing is known of it).
    update(&mut m, key(KeyCode::Char('/')));
    let asked = reads(&typed_then_pause(&mut m, "x"));
    assert!(!asked[0].count);
    let recount = reads(&update(&mut m, answer(&asked[0], 5_000)));
    assert!(recount[0].count);
    assert!(!m.pages.total_is_counted());
    update(&mut m, answer(&recount[0], 5_000));
    assert!(m.pages.total_is_counted());
    update(&mut m, key(KeyCode::Enter));
    // Back to no filter, counted before: a quick band, the known total kept.
    let asked = reads(&update(&mut m, key(KeyCode::Esc)));
    assert!(!asked[0].count);
    let recount = reads(&update(&mut m, answer(&asked[0], 100_000)));
    assert!(recount.is_empty(), "the known count stands");
    assert_eq!(m.pages.total(), 100_000);
    // Scrolling past the band reads quickly too.
    let asked = reads(&update(&mut m, key(KeyCode::Char('G'))));
    assert!(!asked[0].count);
}
