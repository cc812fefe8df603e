//! The live rule preview through `update`: debounce, answers, errors, drawing.

use ratatui::buffer::Buffer;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::Rect;

use super::*;
use crate::engine::control::{PatternKind, RuleSpec};
use crate::tui::keys::keymap_from_str;
use crate::tui::preview::PREVIEW_DEBOUNCE;

fn model() -> Model {
    Model::new(keymap_from_str("").0, false, true)
}

fn typed(m: &mut Model, text: &str) -> Vec<Effect> {
    let key = |c| Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
    text.chars().flat_map(|c| update(m, key(c))).collect()
}

/// The generation of the last wait `effects` start.
fn waits(effects: &[Effect]) -> Option<u64> {
    effects.iter().rev().find_map(|e| match e {
        Effect::PreviewAfter { generation, delay } => {
            assert_eq!(*delay, PREVIEW_DEBOUNCE);
            Some(*generation)
        }
        _ => None,
    })
}

fn screen(m: &Model) -> String {
    let area = Rect::new(0, 0, 100, 30);
    let mut buf = Buffer::empty(area);
    crate::tui::ui::render(m, area, &mut buf);
    buf.content().iter().map(|c| c.symbol()).collect()
}

fn done(id: CommandId, outcome: Result<String, String>) -> Msg {
    Msg::Event(crate::engine::telemetry::EngineEvent::CommandDone(
        CommandResult { id, outcome },
    ))
}

#[test]
fn the_engine_is_asked_once_typing_pauses_and_its_answer_shows_under_the_prompt() {
    let mut m = model();
    typed(&mut m, "b");
    let first = waits(&typed(&mut m, "/ca")).unwrap();
    let last = waits(&typed(&mut m, "l/")).unwrap();
    assert!(last > first);
    assert!(
        update(&mut m, Msg::PreviewDue(first)).is_empty(),
        "stale wait"
    );
    let spec = RuleSpec {
        kind: PatternKind::Regex,
        pattern: "/cal/".into(),
        host: None,
    };
    assert_eq!(
        update(&mut m, Msg::PreviewDue(last)),
        [Effect::SendPreview {
            generation: last,
            spec
        }]
    );
    let id = CommandId(7);
    update(
        &mut m,
        Msg::PreviewSent {
            generation: last,
            id,
        },
    );
    let answer = "regex /cal/ matches 3 queued, 0 parked, 0 fetched URL(s)\n  a.test: 3 queued, 0 parked, 0 fetched";
    update(&mut m, done(id, Ok(answer.into())));
    let shown = screen(&m);
    assert!(shown.contains("blacklist regex: /cal/"), "{shown}");
    for line in answer.lines() {
        assert!(shown.contains(line), "{line:?}: {shown}");
    }
    assert!(m.log.is_empty(), "a preview's answer is not logged");
}

#[test]
fn an_answer_for_older_text_is_dropped_and_an_invalid_pattern_shows_its_error() {
    let mut m = model();
    typed(&mut m, "b");
    let old = waits(&typed(&mut m, "cal")).unwrap();
    update(&mut m, Msg::PreviewDue(old));
    update(
        &mut m,
        Msg::PreviewSent {
            generation: old,
            id: CommandId(1),
        },
    );
    let new = waits(&typed(&mut m, "(")).unwrap();
    update(
        &mut m,
        done(CommandId(1), Ok("regex cal matches 1 queued".into())),
    );
    assert!(
        m.rule_preview.shown.is_none() && m.log.is_empty(),
        "dropped"
    );
    assert!(
        update(&mut m, Msg::PreviewDue(new)).is_empty(),
        "nothing asked"
    );
    let shown = screen(&m);
    assert!(shown.contains("error: invalid regex \"cal(\""), "{shown}");
}

#[test]
fn the_command_line_previews_blacklist_glob_and_preview_and_nothing_else() {
    for (line, pattern) in [
        ("blacklist /x/ a.test", Some("/x/")),
        ("glob */x/*", Some("*/x/*")),
        ("preview glob:*/y/*", Some("*/y/*")),
        ("pause a.test", None),
        ("blacklist", None),
    ] {
        let mut m = model();
        typed(&mut m, ":");
        let generation = waits(&typed(&mut m, line)).unwrap();
        let effects = update(&mut m, Msg::PreviewDue(generation));
        let asked = effects.iter().find_map(|e| match e {
            Effect::SendPreview { spec, .. } => Some(spec.pattern.as_str()),
            _ => None,
        });
        assert_eq!(asked, pattern, "{line}");
    }
}

#[test]
fn closing_the_prompt_clears_the_preview() {
    let mut m = model();
    typed(&mut m, "b");
    let generation = waits(&typed(&mut m, "x(")).unwrap();
    update(&mut m, Msg::PreviewDue(generation));
    assert!(m.rule_preview.shown.is_some());
    update(
        &mut m,
        Msg::Key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE)),
    );
    assert!(m.prompt.is_none() && m.rule_preview.shown.is_none());
    assert!(!screen(&m).contains("error:"));
}
