//! Key binding files as the operator writes them: merge, warnings, help text.

use std::io::Write;

use crawldeck::tui::action::Action;
use crawldeck::tui::keys::{describe, effective_keymap, Mode};
use crawldeck::tui::model::Model;
use crawldeck::tui::ui;
use ratatui::buffer::Buffer;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::Rect;

fn file(text: &str) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(text.as_bytes()).unwrap();
    f
}

#[test]
fn a_user_file_overrides_entries_and_help_follows_it() {
    let f = file("[normal]\nfreeze = \"F\"\nhelp = [\"h\", \"?\"]\n");
    let (map, warnings) = effective_keymap(Some(f.path()));
    assert!(warnings.is_empty(), "{warnings:?}");
    let key = KeyEvent::new(KeyCode::Char('F'), KeyModifiers::SHIFT);
    assert_eq!(map.action(Mode::Normal, &key), Some(Action::Freeze));
    assert!(describe(&map).contains("F                  freeze"));

    let mut model = Model::new(map, false, true);
    model.overlay = crawldeck::tui::model::Overlay::Help;
    let area = Rect::new(0, 0, 100, 80);
    let mut buf = Buffer::empty(area);
    ui::render(&model, area, &mut buf);
    let screen: String = buf.content().iter().map(|c| c.symbol()).collect();
    assert!(
        screen.contains("h ?            show or hide this help"),
        "{screen}"
    );
    assert!(
        screen.contains("F              freeze or unfreeze the display"),
        "{screen}"
    );
}

#[test]
fn an_explicit_missing_file_is_a_warning_with_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nope.toml");
    let (map, warnings) = effective_keymap(Some(&path));
    assert_eq!(warnings.len(), 1);
    assert!(
        warnings[0].starts_with(&format!("{}: cannot read (", path.display())),
        "{warnings:?}"
    );
    assert!(warnings[0].ends_with("); using the default keys"));
    // Defaults still work.
    let q = KeyEvent::new(KeyCode::Char('q'), KeyModifiers::NONE);
    assert_eq!(map.action(Mode::Normal, &q), Some(Action::Quit));
}

#[test]
fn a_broken_file_names_itself_in_every_warning() {
    let f = file("[normal]\nquit = \"q\"\nfreeze = \"q\"\n[detail]\nzoom = \"z\"\n");
    let (_, warnings) = effective_keymap(Some(f.path()));
    let shown = f.path().display().to_string();
    assert_eq!(
        warnings,
        [
            format!("{shown}: [detail] unknown action \"zoom\" (see `crawldeck keys`)"),
            "key \"q\" in [normal] is bound to both quit and freeze; quit wins".to_string(),
        ]
    );
}
