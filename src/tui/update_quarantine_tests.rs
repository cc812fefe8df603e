use crate::engine::control::{PatternKind, RuleSpec};
use crate::engine::inspect::quarantine::{ParkedByAlert, ParkedUrl, Quarantine};
use crate::engine::telemetry::{AlertStatus, Snapshot, TrapAlert, TrapKind};
use crate::tui::effect::Effect;
use crate::tui::keys::keymap_from_str;
use crate::tui::model::{Model, Pane};
use crate::tui::quarantine::SNAPSHOTS_PER_READ;
use crate::tui::records::Records;
use crate::tui::update::{update, Msg};
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::sync::Arc;

fn key(code: KeyCode) -> Msg {
    Msg::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

fn model() -> Model {
    let (keymap, _) = keymap_from_str("");
    let mut m = Model::new(keymap, false, false);
    m.records = Some(Records::Dir("/crawl".into()));
    let mut snap = Snapshot::default();
    snap.alerts.push(TrapAlert {
        id: 5,
        host: "trap.localhost:8080".into(),
        kind: TrapKind::Counter,
        evidence_count: 40,
        last_seen: 0,
        samples: vec![],
        suggested_rule: RuleSpec {
            kind: PatternKind::Regex,
            pattern: "/n/\\d+".into(),
            host: None,
        },
        matching_queued: 0,
        impact: None,
        status: AlertStatus::Open,
    });
    update(&mut m, Msg::Snapshot(Arc::new(snap)));
    m
}

fn parked(url: &str, referrer: Option<&str>, fetched: bool) -> ParkedUrl {
    ParkedUrl {
        url: url.into(),
        referrer: referrer.map(str::to_string),
        referrer_fetched: fetched,
    }
}

fn answer() -> Quarantine {
    Quarantine {
        alerts: vec![ParkedByAlert {
            alert_id: 5,
            count: 120,
            urls: vec![
                parked(
                    "http://trap.localhost:8080/n/7",
                    Some("http://trap.localhost:8080/n/6"),
                    true,
                ),
                parked(
                    "http://trap.localhost:8080/n/9",
                    Some("http://trap.localhost:8080/n/8"),
                    false,
                ),
                parked("http://trap.localhost:8080/n/\x1b[2J", None, false),
            ],
        }],
        cut: false,
    }
}

/// Key 7 reads, the answer becomes rows, Enter expands, Enter on a URL inspects its referrer.
#[test]
fn parked_urls_become_rows_and_enter_inspects_the_found_on_page() {
    let mut m = model();
    let effects = update(&mut m, key(KeyCode::Char('7')));
    assert_eq!(m.pane, Pane::Quarantine);
    assert_eq!(
        effects,
        [Effect::ReadQuarantine {
            records: Records::Dir("/crawl".into())
        }]
    );
    // A second read is not asked for while one is under way.
    assert!(update(&mut m, key(KeyCode::Char('7'))).is_empty());
    update(&mut m, Msg::QuarantineRead(Ok(answer())));
    assert_eq!(m.quarantine.rows().len(), 1, "folded: the alert only");

    assert!(update(&mut m, key(KeyCode::Enter)).is_empty());
    assert_eq!(
        m.quarantine.rows().len(),
        4,
        "expanded: the alert and its URLs"
    );
    update(&mut m, key(KeyCode::Down));
    let effects = update(&mut m, key(KeyCode::Enter));
    assert_eq!(
        effects,
        [Effect::Inspect {
            records: Records::Dir("/crawl".into()),
            url: "http://trap.localhost:8080/n/6".into(),
        }]
    );
    let inspector = m.inspector.as_ref().expect("the inspector opens");
    assert!(
        inspector.origin.contains("alert #5"),
        "{}",
        inspector.origin
    );
}

#[test]
fn a_parked_url_found_on_an_unfetched_or_unknown_page_says_so_plainly() {
    let mut m = model();
    update(&mut m, key(KeyCode::Char('7')));
    update(&mut m, Msg::QuarantineRead(Ok(answer())));
    update(&mut m, key(KeyCode::Enter));
    for (down, found_on) in [(2, "http://trap.localhost:8080/n/8"), (3, "unknown")] {
        m.inspector = None;
        m.quarantine.selected = down;
        assert!(
            update(&mut m, key(KeyCode::Enter)).is_empty(),
            "nothing to read"
        );
        let inspector = m.inspector.as_ref().unwrap();
        let Some(Err(note)) = inspector.page() else {
            panic!("a note, not a page")
        };
        assert_eq!(
            note,
            &format!("never fetched: parked by alert #5; found on {found_on}")
        );
    }
}

#[test]
fn the_pane_is_drawn_sanitised_with_host_kind_and_count() {
    use ratatui::buffer::Buffer;
    use ratatui::layout::Rect;
    let mut m = model();
    update(&mut m, key(KeyCode::Char('7')));
    update(&mut m, Msg::QuarantineRead(Ok(answer())));
    update(&mut m, key(KeyCode::Enter));
    let area = Rect::new(0, 0, 100, 24);
    let mut buf = Buffer::empty(area);
    crate::tui::ui::render(&m, area, &mut buf);
    let text: String = (0..area.height)
        .map(|y| {
            (0..area.width)
                .map(|x| buf[(x, y)].symbol())
                .collect::<String>()
                + "\n"
        })
        .collect();
    assert!(text.contains("Quarantine"), "{text}");
    assert!(text.contains("#5"), "{text}");
    assert!(text.contains("trap.localhost:8080"), "{text}");
    assert!(text.contains("120 parked"), "{text}");
    assert!(text.contains("found on unknown"), "{text}");
    assert!(!text.contains('\x1b'), "control characters are stripped");
}

#[test]
fn a_failed_read_is_shown_and_a_later_snapshot_reads_again() {
    let mut m = model();
    update(&mut m, key(KeyCode::Char('7')));
    update(&mut m, Msg::QuarantineRead(Err("no db".into())));
    assert_eq!(m.quarantine.read, Some(Err("no db".into())));
    let mut asked = Vec::new();
    for _ in 0..SNAPSHOTS_PER_READ {
        let snap = m.latest.clone();
        asked.extend(update(&mut m, Msg::Snapshot(snap)));
    }
    assert!(asked.contains(&Effect::ReadQuarantine {
        records: Records::Dir("/crawl".into())
    }));
}
