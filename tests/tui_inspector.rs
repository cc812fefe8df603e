//! The page inspector in the TUI, on a real crawl of the demo's duplicates
//! site: Enter on an alert opens its evidence with the text diff, `:select`
//! lists elements or says none match, Enter in a host's detail view opens its
//! recent fetches, Esc closes. The reads the run loop would do off the loop
//! (`Effect::Inspect`, `Effect::Select`) are done here by the same functions.

use crate::common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crawldeck::demo::SiteKind;
use crawldeck::engine::control::{Command as EngineCommand, ExtractionSpec};
use crawldeck::engine::telemetry::{EngineEvent, TrapKind};
use crawldeck::tui::effect::Effect;
use crawldeck::tui::keys::keymap_from_str;
use crawldeck::tui::model::{Model, Pane};
use crawldeck::tui::ui;
use crawldeck::tui::update::{update, Msg};
use crawldeck::tui::Records;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent};
use ratatui::Terminal;

fn screen(model: &Model) -> String {
    let mut terminal = Terminal::new(TestBackend::new(140, 60)).unwrap();
    terminal
        .draw(|frame| ui::render(model, frame.area(), frame.buffer_mut()))
        .unwrap();
    let buffer = terminal.backend().buffer();
    let mut text = String::new();
    for y in 0..buffer.area.height {
        for x in 0..buffer.area.width {
            text.push_str(buffer[(x, y)].symbol());
        }
        text.push('\n');
    }
    text
}

fn press(model: &mut Model, code: KeyCode) -> Vec<Effect> {
    update(model, Msg::Key(KeyEvent::from(code)))
}

fn type_line(model: &mut Model, text: &str) -> Vec<Effect> {
    let mut effects = press(model, KeyCode::Char(':'));
    for c in text.chars() {
        effects.extend(press(model, KeyCode::Char(c)));
    }
    effects.extend(press(model, KeyCode::Enter));
    effects
}

/// Does what the run loop does with the inspector's effects, feeding the answers back.
fn perform(model: &mut Model, effects: Vec<Effect>) -> usize {
    let mut done = 0;
    for effect in effects {
        let msg = match effect {
            Effect::Inspect { records, url } => {
                let page = records.page(&url).map(Arc::new);
                Msg::Inspected { url, page }
            }
            Effect::Select { page, css } => {
                let found = crawldeck::engine::inspect::select(&page.html, &css);
                let lines = crawldeck::results::page::select_lines(&css, &found);
                Msg::Selected {
                    url: page.url.clone(),
                    css,
                    lines,
                }
            }
            _ => continue,
        };
        done += 1;
        update(model, msg);
    }
    done
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enter_on_evidence_opens_the_inspector_with_title_diff_and_select() {
    let demo = common::start_demo(vec![SiteKind::Dupes]).await;
    let dir = tempfile::tempdir().unwrap();
    let snapshot = common::crawl(common::test_config(&demo), dir.path()).await;
    drop(demo);
    let data_dir = dir.path().to_path_buf();
    tokio::task::spawn_blocking(move || inspect_in_the_ui(snapshot, &data_dir))
        .await
        .expect("checks pass");
}

fn inspect_in_the_ui(snapshot: crawldeck::engine::telemetry::Snapshot, data_dir: &Path) {
    let near = snapshot
        .alerts
        .iter()
        .position(|a| a.kind == TrapKind::NearDuplicates && a.samples.len() > 1)
        .unwrap_or_else(|| panic!("a near-duplicates alert: {:#?}", snapshot.alerts));
    let host = snapshot.alerts[near].host.clone();
    let mut model = Model::new(keymap_from_str("").0, false, true);
    model.records = Some(Records::Dir(data_dir.to_path_buf()));
    model.set_snapshot(Arc::new(snapshot));
    model.pane = Pane::Alerts;
    model.alert_selected = near;

    let effects = press(&mut model, KeyCode::Enter);
    assert!(
        model.inspector.is_some(),
        "Enter on an alert opens the inspector"
    );
    assert!(screen(&model).contains("reading "), "shown while reading");
    assert_eq!(
        perform(&mut model, effects),
        2,
        "the page and its diff partner"
    );
    let shown = screen(&model);
    assert!(shown.contains("alert #"), "{shown}");
    assert!(shown.contains("status   200"), "{shown}");
    assert!(
        shown.contains("title    Almost the same page"),
        "the evidence page's title: {shown}"
    );
    assert!(shown.contains("diff of the text:"), "{shown}");

    let effects = type_line(&mut model, "select h1");
    assert_eq!(perform(&mut model, effects), 1);
    let shown = screen(&model);
    assert!(shown.contains("`h1`: 1 element"), "{shown}");
    assert!(shown.contains("<h1> Almost the same page"), "{shown}");
    // x offers the tried selector as an extraction: named, then sent.
    assert!(
        shown.contains("x: extract `h1` from every page fetched from now on"),
        "{shown}"
    );
    press(&mut model, KeyCode::Char('x'));
    assert!(screen(&model).contains("extract `h1` as NAME (or NAME@attr)"));
    for c in "9".chars() {
        press(&mut model, KeyCode::Char(c));
    }
    assert!(
        press(&mut model, KeyCode::Enter).is_empty(),
        "a bad name is refused"
    );
    assert!(screen(&model).contains("extraction name \"9\""));
    press(&mut model, KeyCode::Backspace);
    for c in "heading".chars() {
        press(&mut model, KeyCode::Char(c));
    }
    let sent = press(&mut model, KeyCode::Enter);
    let wanted = EngineCommand::AddExtraction(ExtractionSpec {
        name: "heading".into(),
        selector: "h1".into(),
        attribute: None,
    });
    assert!(
        sent.iter()
            .any(|e| matches!(e, Effect::Send(c) if *c == wanted)),
        "{sent:?}"
    );
    let effects = type_line(&mut model, "select table.none");
    perform(&mut model, effects);
    assert!(screen(&model).contains("no element matches `table.none`"));
    let effects = type_line(&mut model, "select a[");
    perform(&mut model, effects);
    let shown = screen(&model);
    assert!(shown.contains("bad CSS selector `a[`"));
    assert!(!shown.contains("x: extract"), "no offer for a bad selector");

    // n steps to the next evidence page.
    let effects = press(&mut model, KeyCode::Char('n'));
    perform(&mut model, effects);
    assert_eq!(model.inspector.as_ref().unwrap().at, 1);
    assert!(screen(&model).contains("title    Almost the same page"));

    press(&mut model, KeyCode::Esc);
    assert!(model.inspector.is_none(), "Esc closes");
    assert!(!screen(&model).contains("status   200"));

    recent_fetches_open_from_the_detail_view(&mut model, &host);
}

fn recent_fetches_open_from_the_detail_view(model: &mut Model, host: &str) {
    let url = format!("http://{host}/");
    update(
        model,
        Msg::Event(EngineEvent::Fetched {
            host: host.to_string(),
            url: url.clone(),
            status: Some(200),
            latency: Duration::from_millis(5),
            bytes: 10,
            error: None,
        }),
    );
    model.pane = Pane::Hosts;
    model.detail = Some(host.to_string());
    let effects = press(model, KeyCode::Enter);
    assert!(
        effects
            .iter()
            .any(|e| matches!(e, Effect::Inspect { url: u, .. } if *u == url)),
        "{effects:?}"
    );
    perform(model, effects);
    let shown = screen(model);
    assert!(
        shown.contains(&format!("recent fetches of {host}")),
        "{shown}"
    );
    assert!(shown.contains("links ("), "{shown}");
}
