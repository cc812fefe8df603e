//! The key map: `keybindings.toml` embedded as the default, a user file merged
//! over it entry by entry. Problems in a user file are warnings, never errors.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::action::Action;

pub const DEFAULT_KEYMAP: &str = include_str!("../../keybindings.toml");

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mode {
    Normal,
    Prompt,
    Command,
    Help,
    Detail,
}

impl Mode {
    pub const ALL: [Mode; 5] = [
        Mode::Normal,
        Mode::Prompt,
        Mode::Command,
        Mode::Help,
        Mode::Detail,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Mode::Normal => "normal",
            Mode::Prompt => "prompt",
            Mode::Command => "command",
            Mode::Help => "help",
            Mode::Detail => "detail",
        }
    }

    fn from_name(name: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.name() == name)
    }
}

/// A key with its modifiers, as written in the file (`ctrl-c`, `G`, `pgup`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Chord {
    code: ChordCode,
    ctrl: bool,
    alt: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum ChordCode {
    Char(char),
    Named(&'static str),
    F(u8),
}

const NAMED: &[(&str, KeyCode)] = &[
    ("enter", KeyCode::Enter),
    ("esc", KeyCode::Esc),
    ("tab", KeyCode::Tab),
    ("shift-tab", KeyCode::BackTab),
    ("backspace", KeyCode::Backspace),
    ("delete", KeyCode::Delete),
    ("up", KeyCode::Up),
    ("down", KeyCode::Down),
    ("left", KeyCode::Left),
    ("right", KeyCode::Right),
    ("pgup", KeyCode::PageUp),
    ("pgdown", KeyCode::PageDown),
    ("home", KeyCode::Home),
    ("end", KeyCode::End),
    ("space", KeyCode::Char(' ')),
];

impl Chord {
    pub fn parse(text: &str) -> Result<Chord, String> {
        let mut rest = text;
        let (mut ctrl, mut alt) = (false, false);
        loop {
            if let Some(r) = rest.strip_prefix("ctrl-").filter(|r| !r.is_empty()) {
                ctrl = true;
                rest = r;
            } else if let Some(r) = rest.strip_prefix("alt-").filter(|r| !r.is_empty()) {
                alt = true;
                rest = r;
            } else {
                break;
            }
        }
        let code = if let Some((name, _)) = NAMED.iter().find(|(n, _)| *n == rest) {
            if *name == "space" {
                ChordCode::Char(' ')
            } else {
                ChordCode::Named(name)
            }
        } else if let Some(n) = rest.strip_prefix('f').and_then(|n| n.parse::<u8>().ok()) {
            ChordCode::F(n)
        } else {
            let mut chars = rest.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) => ChordCode::Char(if ctrl { c.to_ascii_lowercase() } else { c }),
                _ => {
                    return Err(format!(
                        "unknown key {text:?} (write e.g. \"q\", \"G\", \"ctrl-c\", \"shift-tab\", \"pgup\", \"f1\")"
                    ))
                }
            }
        };
        Ok(Chord { code, ctrl, alt })
    }

    /// The chord a terminal key event stands for.
    pub fn from_event(key: KeyEvent) -> Option<Chord> {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let code = match key.code {
            KeyCode::Char(c) => ChordCode::Char(if ctrl { c.to_ascii_lowercase() } else { c }),
            KeyCode::F(n) => ChordCode::F(n),
            other => ChordCode::Named(NAMED.iter().find(|(_, k)| *k == other)?.0),
        };
        Some(Chord { code, ctrl, alt })
    }
}

impl fmt::Display for Chord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.ctrl {
            f.write_str("ctrl-")?;
        }
        if self.alt {
            f.write_str("alt-")?;
        }
        match self.code {
            ChordCode::Char(' ') => f.write_str("space"),
            ChordCode::Char(c) => write!(f, "{c}"),
            ChordCode::Named(n) => f.write_str(n),
            ChordCode::F(n) => write!(f, "f{n}"),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct KeyMap {
    modes: BTreeMap<Mode, BTreeMap<Chord, Action>>,
}

impl KeyMap {
    pub fn action(&self, mode: Mode, key: KeyEvent) -> Option<Action> {
        let chord = Chord::from_event(key)?;
        self.modes.get(&mode)?.get(&chord).copied()
    }

    /// Bindings of a mode, for the help overlay.
    pub fn bindings(&self, mode: Mode) -> Vec<(Chord, Action)> {
        self.modes
            .get(&mode)
            .map(|m| m.iter().map(|(c, a)| (*c, *a)).collect())
            .unwrap_or_default()
    }

    /// The first key bound to an action in a mode ("?" for help…).
    pub fn key_for(&self, mode: Mode, action: Action) -> Option<Chord> {
        self.bindings(mode)
            .into_iter()
            .find(|(_, a)| *a == action)
            .map(|(c, _)| c)
    }

    /// Merges a keybindings file over this map; returns the warnings.
    pub fn merge_toml(&mut self, text: &str, origin: &str) -> Vec<String> {
        match toml::from_str::<toml::Table>(text) {
            Ok(table) => self.merge_table(table, origin),
            Err(e) => vec![format!(
                "{origin}: not valid TOML ({}); its bindings are ignored",
                e.message()
            )],
        }
    }

    fn merge_table(&mut self, table: toml::Table, origin: &str) -> Vec<String> {
        let mut warnings = Vec::new();
        for (mode_name, entries) in table {
            let Some(mode) = Mode::from_name(&mode_name) else {
                warnings.push(format!(
                    "{origin}: unknown mode [{mode_name}] (modes: normal, prompt, command, help, detail)"
                ));
                continue;
            };
            let Some(entries) = entries.as_table() else {
                warnings.push(format!(
                    "{origin}: [{mode_name}] must be a table of key = \"action\""
                ));
                continue;
            };
            let bindings = self.modes.entry(mode).or_default();
            for (key, value) in entries {
                let chord = match Chord::parse(key) {
                    Ok(c) => c,
                    Err(e) => {
                        warnings.push(format!("{origin}: [{mode_name}] {e}"));
                        continue;
                    }
                };
                match value.as_str().map(|name| (name, Action::from_name(name))) {
                    Some((_, Some(action))) => {
                        bindings.insert(chord, action);
                    }
                    Some(("none", None)) => {
                        bindings.remove(&chord);
                    }
                    Some((name, None)) => warnings.push(format!(
                        "{origin}: [{mode_name}] \"{key}\": unknown action {name:?} (`crawldeck keys` lists them)"
                    )),
                    None => warnings.push(format!(
                        "{origin}: [{mode_name}] \"{key}\" must name an action as a string"
                    )),
                }
            }
        }
        warnings
    }

    /// Keys of one mode written twice for different actions in `text`
    /// (TOML itself rejects exact duplicates; this catches aliases like
    /// "ctrl-C" and "ctrl-c").
    pub fn conflicts(text: &str) -> Vec<String> {
        let Ok(table) = toml::from_str::<toml::Table>(text) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (mode, entries) in table {
            let Some(entries) = entries.as_table() else {
                continue;
            };
            let mut seen: HashMap<Chord, (&str, &str)> = HashMap::new();
            for (key, value) in entries {
                let (Ok(chord), Some(action)) = (Chord::parse(key), value.as_str()) else {
                    continue;
                };
                if let Some((other_key, other)) = seen.insert(chord, (key, action)) {
                    if other != action {
                        out.push(format!(
                            "[{mode}] \"{key}\" and \"{other_key}\" are the same key bound to {action} and {other}"
                        ));
                    }
                }
            }
        }
        out
    }
}

/// Where a user's key file lives when `--keys` is not given.
pub fn user_keys_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("crawldeck").join("keybindings.toml"))
}

/// The embedded defaults with the user's file merged over them, and every
/// warning about that file (unknown keys or actions, conflicts, unreadable).
pub fn effective_keymap(user_file: Option<&Path>) -> (KeyMap, Vec<String>) {
    let mut map = KeyMap::default();
    let defaults = map.merge_toml(DEFAULT_KEYMAP, "built-in keybindings.toml");
    debug_assert!(defaults.is_empty(), "{defaults:?}");
    let explicit = user_file.is_some();
    let Some(path) = user_file.map(Path::to_path_buf).or_else(user_keys_path) else {
        return (map, Vec::new());
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if !explicit && e.kind() == std::io::ErrorKind::NotFound => {
            return (map, Vec::new())
        }
        Err(e) => {
            return (
                map,
                vec![format!(
                    "cannot read {}: {e}; using the default keys",
                    path.display()
                )],
            )
        }
    };
    let origin = path.display().to_string();
    let mut warnings = KeyMap::conflicts(&text)
        .into_iter()
        .map(|c| format!("{origin}: {c}"))
        .collect::<Vec<_>>();
    warnings.extend(map.merge_toml(&text, &origin));
    (map, warnings)
}

/// What `crawldeck keys` prints: every mode's bindings with descriptions.
pub fn describe(map: &KeyMap) -> String {
    let mut out = String::new();
    for mode in Mode::ALL {
        out.push_str(&format!("[{}]\n", mode.name()));
        for (chord, action) in map.bindings(mode) {
            out.push_str(&format!(
                "  {:<12} {:<16} {}\n",
                chord.to_string(),
                action.name(),
                action.description()
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode, mods: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, mods)
    }

    #[test]
    fn default_file_parses_without_warnings_and_covers_every_action() {
        let mut map = KeyMap::default();
        assert_eq!(
            map.merge_toml(DEFAULT_KEYMAP, "default"),
            Vec::<String>::new()
        );
        assert!(KeyMap::conflicts(DEFAULT_KEYMAP).is_empty());
        for action in Action::ALL {
            let bound = Mode::ALL.iter().any(|m| map.key_for(*m, *action).is_some());
            assert!(bound, "{} has no default key", action.name());
        }
        assert_eq!(
            map.action(Mode::Normal, key(KeyCode::Char('q'), KeyModifiers::NONE)),
            Some(Action::Quit)
        );
        assert_eq!(
            map.action(Mode::Normal, key(KeyCode::Char('c'), KeyModifiers::CONTROL)),
            Some(Action::ForceQuit)
        );
        assert_eq!(
            map.action(Mode::Normal, key(KeyCode::BackTab, KeyModifiers::SHIFT)),
            Some(Action::PrevPane)
        );
        assert_eq!(
            map.action(Mode::Normal, key(KeyCode::Char('G'), KeyModifiers::SHIFT)),
            Some(Action::Bottom)
        );
    }

    #[test]
    fn user_file_overrides_single_entries() {
        let mut map = KeyMap::default();
        map.merge_toml(DEFAULT_KEYMAP, "default");
        let warnings = map.merge_toml("[normal]\n\"Q\" = \"quit\"\n\"x\" = \"none\"\n", "user");
        assert!(warnings.is_empty(), "{warnings:?}");
        let q = |c| map.action(Mode::Normal, key(KeyCode::Char(c), KeyModifiers::NONE));
        assert_eq!(q('Q'), Some(Action::Quit));
        assert_eq!(q('q'), Some(Action::Quit), "other defaults stay");
        assert_eq!(q('x'), None, "\"none\" unbinds");
    }

    #[test]
    fn invalid_files_give_warnings_naming_the_problem() {
        let cases = [
            ("[normal]\n\"q\" = \"qiut\"\n", "unknown action \"qiut\""),
            ("[normal]\n\"ctrl-\" = \"quit\"\n", "unknown key \"ctrl-\""),
            ("[nromal]\n\"q\" = \"quit\"\n", "unknown mode [nromal]"),
            ("[normal]\n\"q\" = 3\n", "must name an action"),
            ("[normal\n", "not valid TOML"),
        ];
        for (text, expected) in cases {
            let mut map = KeyMap::default();
            map.merge_toml(DEFAULT_KEYMAP, "default");
            let warnings = map.merge_toml(text, "keys.toml");
            assert!(
                warnings
                    .iter()
                    .any(|w| w.contains(expected) && w.starts_with("keys.toml")),
                "{text:?}: {warnings:?}"
            );
        }
    }

    #[test]
    fn conflicting_bindings_in_one_mode_are_reported() {
        let text = "[normal]\n\"ctrl-c\" = \"quit\"\n\"ctrl-C\" = \"help\"\n";
        let conflicts = KeyMap::conflicts(text);
        assert_eq!(conflicts.len(), 1, "{conflicts:?}");
        assert!(conflicts[0].contains("same key"));
    }

    #[test]
    fn effective_map_reads_a_user_file_and_reports_a_missing_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys.toml");
        std::fs::write(&path, "[normal]\n\"Z\" = \"help\"\n").unwrap();
        let (map, warnings) = effective_keymap(Some(&path));
        assert!(warnings.is_empty());
        assert_eq!(
            map.action(Mode::Normal, key(KeyCode::Char('Z'), KeyModifiers::SHIFT)),
            Some(Action::Help)
        );
        let (_, warnings) = effective_keymap(Some(&dir.path().join("missing.toml")));
        assert!(warnings[0].contains("cannot read"), "{warnings:?}");
        assert!(describe(&map).contains("help"));
    }
}
