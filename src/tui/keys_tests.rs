use super::*;
use ratatui::crossterm::event::KeyEventKind;

fn key(code: KeyCode, mods: KeyModifiers) -> KeyEvent {
    KeyEvent::new_with_kind(code, mods, KeyEventKind::Press)
}

#[test]
fn default_file_parses_without_warnings() {
    let (map, warnings) = keymap_from_str("");
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(
        map.action(Mode::Normal, &key(KeyCode::Char('q'), KeyModifiers::NONE)),
        Some(Action::Quit)
    );
    assert_eq!(
        map.action(Mode::Normal, &key(KeyCode::Char('G'), KeyModifiers::SHIFT)),
        Some(Action::Bottom)
    );
    assert_eq!(
        map.action(Mode::Normal, &key(KeyCode::BackTab, KeyModifiers::SHIFT)),
        Some(Action::PrevPane)
    );
    assert_eq!(
        map.action(
            Mode::Normal,
            &key(KeyCode::Char('c'), KeyModifiers::CONTROL)
        ),
        Some(Action::ForceQuit)
    );
}

#[test]
fn every_action_has_a_description_and_a_default_key() {
    let (map, _) = keymap_from_str("");
    for &action in Action::ALL {
        assert!(!action.description().is_empty());
        let bound = Mode::ALL
            .iter()
            .any(|m| map.first_key(*m, action).is_some());
        assert!(bound, "{} has no default key", action.name());
    }
}

#[test]
fn user_entries_override_single_actions() {
    let (map, warnings) = keymap_from_str("[normal]\nquit = \"Q\"\nfreeze = [\"ctrl-z\", \"F\"]\n");
    assert!(warnings.is_empty(), "{warnings:?}");
    let n = KeyModifiers::NONE;
    assert_eq!(map.action(Mode::Normal, &key(KeyCode::Char('q'), n)), None);
    assert_eq!(
        map.action(Mode::Normal, &key(KeyCode::Char('Q'), n)),
        Some(Action::Quit)
    );
    assert_eq!(
        map.action(
            Mode::Normal,
            &key(KeyCode::Char('z'), KeyModifiers::CONTROL)
        ),
        Some(Action::Freeze)
    );
    // Untouched entries keep their defaults.
    assert_eq!(
        map.action(Mode::Normal, &key(KeyCode::Char('?'), n)),
        Some(Action::Help)
    );
}

#[test]
fn invalid_files_give_warnings_not_errors() {
    let (_, w) = keymap_from_str("[normal\nquit = ");
    assert_eq!(w.len(), 1);
    assert!(
        w[0].starts_with("user keybindings: not valid TOML, ignored"),
        "{w:?}"
    );

    let (_, w) = keymap_from_str("[visual]\nquit = \"q\"\n");
    assert_eq!(w, ["user keybindings: unknown mode [visual] (modes: normal, prompt, command, help, detail, inspector)"]);

    let (map, w) =
        keymap_from_str("[normal]\nlaunch-rockets = \"l\"\nquit = \"hyper-q\"\nhelp = 3\n");
    assert_eq!(
        w,
        [
            "user keybindings: [normal] help: expected a key or a list of keys",
            "user keybindings: [normal] unknown action \"launch-rockets\" (see `crawldeck keys`)",
            "user keybindings: [normal] quit: unknown key \"hyper-q\"",
        ]
    );
    // An entry whose keys are all invalid unbinds nothing else.
    assert_eq!(
        map.first_key(Mode::Normal, Action::Help)
            .map(|k| k.to_string()),
        Some("?".into())
    );
}

#[test]
fn conflicts_in_one_mode_are_reported() {
    let (map, w) = keymap_from_str("[normal]\nfreeze = \"q\"\n");
    assert_eq!(
        w,
        ["key \"q\" in [normal] is bound to both quit and freeze; quit wins"]
    );
    assert_eq!(
        map.action(Mode::Normal, &key(KeyCode::Char('q'), KeyModifiers::NONE)),
        Some(Action::Quit)
    );
    // The same key in different modes is fine.
    let (_, w) = keymap_from_str("[help]\nback = \"q\"\n");
    assert!(w.is_empty());
}

#[test]
fn chords_parse_and_print() {
    for (text, shown) in [
        ("ctrl-c", "ctrl-c"),
        ("shift-tab", "shift-tab"),
        ("shift-g", "G"),
        ("F5", "f5"),
        ("space", "space"),
        ("alt-x", "alt-x"),
        ("-", "-"),
    ] {
        assert_eq!(KeyChord::parse(text).unwrap().to_string(), shown, "{text}");
    }
    assert!(KeyChord::parse("f13").is_err());
    assert!(KeyChord::parse("").is_err());
}

#[test]
fn describe_lists_every_mode() {
    let (map, _) = keymap_from_str("");
    let text = describe(&map);
    for mode in Mode::ALL {
        assert!(text.contains(&format!("[{}]", mode.name())));
    }
    assert!(text.contains("add-regex-rule"));
    assert!(text.contains("add a blacklist rule (regex)"));
}
