//! Key bindings: the embedded default `keybindings.toml`, a user file merged
//! over it entry by entry, and lookups by mode. Problems become warnings.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::action::Action;

/// The built-in bindings; a user file is merged over them.
pub const DEFAULT_KEYS: &str = include_str!("../../keybindings.toml");

/// Where keys are looked up: each mode has its own bindings table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mode {
    Normal,
    Prompt,
    Command,
    Help,
    Detail,
    Inspector,
}

impl Mode {
    /// Every mode, in the order `crawldeck keys` prints them.
    pub const ALL: [Mode; 6] = [
        Mode::Normal,
        Mode::Prompt,
        Mode::Command,
        Mode::Help,
        Mode::Detail,
        Mode::Inspector,
    ];

    /// The table name in keybindings.toml.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Normal => "normal",
            Mode::Prompt => "prompt",
            Mode::Command => "command",
            Mode::Help => "help",
            Mode::Detail => "detail",
            Mode::Inspector => "inspector",
        }
    }

    /// The mode a keybindings.toml table name stands for.
    fn from_name(name: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.name() == name)
    }
}

/// A key with its modifiers, normalised so `G` and `shift-g` are the same chord.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyChord {
    pub code: KeyCode,
    pub mods: KeyModifiers,
}

impl KeyChord {
    /// A chord with only ctrl, alt and shift kept, and shift dropped where the key already says it.
    pub fn new(code: KeyCode, mods: KeyModifiers) -> Self {
        // The character (or BackTab) already says whether shift was held.
        let mut mods = mods & (KeyModifiers::CONTROL | KeyModifiers::ALT | KeyModifiers::SHIFT);
        if matches!(code, KeyCode::Char(_) | KeyCode::BackTab) {
            mods.remove(KeyModifiers::SHIFT);
        }
        KeyChord { code, mods }
    }

    /// The chord of a key press.
    pub fn from_event(ev: &KeyEvent) -> Self {
        KeyChord::new(ev.code, ev.modifiers)
    }

    /// Parses a key as keybindings.toml writes it: `q`, `G`, `ctrl-c`, `shift-tab`, `f5`.
    pub fn parse(text: &str) -> Result<KeyChord, String> {
        let (mut mods, rest) = split_modifiers(text);
        let mut chars = rest.chars();
        let code = match (chars.next(), chars.next()) {
            // Shift on a character is the upper-case character.
            (Some(c), None) if mods.contains(KeyModifiers::SHIFT) => {
                mods.remove(KeyModifiers::SHIFT);
                KeyCode::Char(c.to_ascii_uppercase())
            }
            (Some(c), None) => KeyCode::Char(c),
            _ => named_key(&rest.to_ascii_lowercase())
                .ok_or_else(|| format!("unknown key \"{text}\""))?,
        };
        if code == KeyCode::Tab && mods.contains(KeyModifiers::SHIFT) {
            return Ok(KeyChord::new(KeyCode::BackTab, mods));
        }
        Ok(KeyChord::new(code, mods))
    }
}

/// Splits the leading `ctrl-`, `alt-` and `shift-` (any case, any order) from a key's text.
fn split_modifiers(text: &str) -> (KeyModifiers, &str) {
    let mut mods = KeyModifiers::NONE;
    let mut rest = text;
    loop {
        let lower = rest.to_ascii_lowercase();
        if rest.chars().count() > 1 && lower.starts_with("ctrl-") {
            mods |= KeyModifiers::CONTROL;
            rest = &rest[5..];
        } else if rest.chars().count() > 1 && lower.starts_with("alt-") {
            mods |= KeyModifiers::ALT;
            rest = &rest[4..];
        } else if rest.chars().count() > 1 && lower.starts_with("shift-") {
            mods |= KeyModifiers::SHIFT;
            rest = &rest[6..];
        } else {
            return (mods, rest);
        }
    }
}

/// A key with a name (lower case): `enter`, `pgup`, `f1`…`f12`.
fn named_key(name: &str) -> Option<KeyCode> {
    Some(match name {
        "enter" | "return" => KeyCode::Enter,
        "esc" | "escape" => KeyCode::Esc,
        "tab" => KeyCode::Tab,
        "backtab" => KeyCode::BackTab,
        "up" => KeyCode::Up,
        "down" => KeyCode::Down,
        "left" => KeyCode::Left,
        "right" => KeyCode::Right,
        "home" => KeyCode::Home,
        "end" => KeyCode::End,
        "pgup" | "pageup" => KeyCode::PageUp,
        "pgdn" | "pagedown" => KeyCode::PageDown,
        "space" => KeyCode::Char(' '),
        "backspace" => KeyCode::Backspace,
        "delete" | "del" => KeyCode::Delete,
        "insert" => KeyCode::Insert,
        f if f.starts_with('f') && f.len() > 1 => match f[1..].parse::<u8>() {
            Ok(n @ 1..=12) => KeyCode::F(n),
            _ => return None,
        },
        _ => return None,
    })
}

impl fmt::Display for KeyChord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.mods.contains(KeyModifiers::CONTROL) {
            f.write_str("ctrl-")?;
        }
        if self.mods.contains(KeyModifiers::ALT) {
            f.write_str("alt-")?;
        }
        if self.mods.contains(KeyModifiers::SHIFT) {
            f.write_str("shift-")?;
        }
        match self.code {
            KeyCode::Char(' ') => f.write_str("space"),
            KeyCode::Char(c) => write!(f, "{c}"),
            KeyCode::Enter => f.write_str("enter"),
            KeyCode::Esc => f.write_str("esc"),
            KeyCode::Tab => f.write_str("tab"),
            KeyCode::BackTab => f.write_str("shift-tab"),
            KeyCode::Up => f.write_str("up"),
            KeyCode::Down => f.write_str("down"),
            KeyCode::Left => f.write_str("left"),
            KeyCode::Right => f.write_str("right"),
            KeyCode::Home => f.write_str("home"),
            KeyCode::End => f.write_str("end"),
            KeyCode::PageUp => f.write_str("pgup"),
            KeyCode::PageDown => f.write_str("pgdn"),
            KeyCode::Backspace => f.write_str("backspace"),
            KeyCode::Delete => f.write_str("delete"),
            KeyCode::Insert => f.write_str("insert"),
            KeyCode::F(n) => write!(f, "f{n}"),
            other => write!(f, "{other:?}"),
        }
    }
}

/// The effective bindings, per mode, in the order of [`Action::ALL`].
#[derive(Debug, Clone, Default)]
pub struct KeyMap {
    bindings: BTreeMap<Mode, BTreeMap<Action, Vec<KeyChord>>>,
    lookup: HashMap<(Mode, KeyChord), Action>,
}

impl KeyMap {
    /// The action a key press runs in `mode`, if it is bound there.
    pub fn action(&self, mode: Mode, ev: &KeyEvent) -> Option<Action> {
        self.lookup.get(&(mode, KeyChord::from_event(ev))).copied()
    }

    /// The actions bound in `mode` with their keys, in `Action::ALL` order.
    pub fn bindings(&self, mode: Mode) -> impl Iterator<Item = (Action, &[KeyChord])> {
        self.bindings
            .get(&mode)
            .into_iter()
            .flat_map(|m| m.iter().map(|(a, k)| (*a, k.as_slice())))
    }

    /// The first key of `action` in `mode`, for hints ("? help").
    pub fn first_key(&self, mode: Mode, action: Action) -> Option<KeyChord> {
        self.bindings.get(&mode)?.get(&action)?.first().copied()
    }

    /// Builds lookups; a key bound twice in one mode keeps its first action (in
    /// `Action::ALL` order) and yields a warning.
    fn index(&mut self, warnings: &mut Vec<String>) {
        self.lookup.clear();
        for (mode, actions) in &self.bindings {
            for (action, keys) in actions {
                for key in keys {
                    match self.lookup.get(&(*mode, *key)) {
                        Some(first) if first != action => warnings.push(format!(
                            "key \"{key}\" in [{}] is bound to both {} and {}; {} wins",
                            mode.name(),
                            first.name(),
                            action.name(),
                            first.name()
                        )),
                        Some(_) => {}
                        None => {
                            self.lookup.insert((*mode, *key), *action);
                        }
                    }
                }
            }
        }
    }
}

/// Merges one keybindings file's text over `map`; each present entry replaces that
/// action's keys in that mode. Returns warnings (with `origin` in them).
fn merge(map: &mut KeyMap, text: &str, origin: &str) -> Vec<String> {
    let mut warnings = Vec::new();
    let table: toml::Table = match text.parse() {
        Ok(t) => t,
        Err(e) => {
            warnings.push(format!(
                "{origin}: not valid TOML, ignored: {}",
                e.message()
            ));
            return warnings;
        }
    };
    for (mode_name, value) in table {
        let Some(mode) = Mode::from_name(&mode_name) else {
            warnings.push(format!(
                "{origin}: unknown mode [{mode_name}] (modes: normal, prompt, command, help, detail, inspector)"
            ));
            continue;
        };
        let Some(entries) = value.as_table() else {
            warnings.push(format!(
                "{origin}: [{mode_name}] must be a table of action = keys"
            ));
            continue;
        };
        let place = format!("{origin}: [{mode_name}]");
        for (action_name, keys_value) in entries {
            let Some(action) = Action::from_name(action_name) else {
                warnings.push(format!(
                    "{place} unknown action \"{action_name}\" (see `crawldeck keys`)"
                ));
                continue;
            };
            let place = format!("{place} {action_name}");
            let Some(keys) = entry_keys(keys_value, &place, &mut warnings) else {
                continue;
            };
            let modes = map.bindings.entry(mode).or_default();
            if keys.is_empty() {
                modes.remove(&action);
            } else {
                modes.insert(action, keys);
            }
        }
    }
    warnings
}

/// The keys of one `action = keys` entry, without repeats; `None` when the
/// value is neither a key nor a list. Keys that do not parse are warned about
/// (at `place`) and left out.
fn entry_keys(
    value: &toml::Value,
    place: &str,
    warnings: &mut Vec<String>,
) -> Option<Vec<KeyChord>> {
    let texts: Vec<&str> = match value {
        toml::Value::String(s) => vec![s.as_str()],
        toml::Value::Array(items) => {
            let texts: Vec<&str> = items.iter().filter_map(|v| v.as_str()).collect();
            if texts.len() != items.len() {
                warnings.push(format!("{place}: keys must be strings"));
            }
            texts
        }
        _ => {
            warnings.push(format!("{place}: expected a key or a list of keys"));
            return None;
        }
    };
    let mut keys = Vec::new();
    for text in texts {
        match KeyChord::parse(text) {
            Ok(k) if !keys.contains(&k) => keys.push(k),
            Ok(_) => {}
            Err(e) => warnings.push(format!("{place}: {e}")),
        }
    }
    Some(keys)
}

/// The user's default keybindings file: `$XDG_CONFIG_HOME/crawldeck/keybindings.toml`
/// (or `~/.config/...`).
pub fn default_user_file() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("crawldeck").join("keybindings.toml"))
}

/// The embedded defaults with `user_file` merged over them. A missing user file is
/// not a warning when it was not asked for explicitly (pass `None` for the default path).
pub fn effective_keymap(user_file: Option<&Path>) -> (KeyMap, Vec<String>) {
    let mut map = KeyMap::default();
    let mut warnings = merge(&mut map, DEFAULT_KEYS, "built-in keybindings");
    let (path, explicit) = match user_file {
        Some(p) => (Some(p.to_path_buf()), true),
        None => (default_user_file(), false),
    };
    if let Some(path) = path {
        match std::fs::read_to_string(&path) {
            Ok(text) => warnings.extend(merge(&mut map, &text, &path.display().to_string())),
            Err(e) if explicit || e.kind() != std::io::ErrorKind::NotFound => {
                warnings.push(format!(
                    "{}: cannot read ({e}); using the default keys",
                    path.display()
                ))
            }
            Err(_) => {}
        }
    }
    map.index(&mut warnings);
    (map, warnings)
}

/// Keymap from text only (tests and fixtures).
pub fn keymap_from_str(user_text: &str) -> (KeyMap, Vec<String>) {
    let mut map = KeyMap::default();
    let mut warnings = merge(&mut map, DEFAULT_KEYS, "built-in keybindings");
    warnings.extend(merge(&mut map, user_text, "user keybindings"));
    map.index(&mut warnings);
    (map, warnings)
}

/// What `crawldeck keys` prints: every mode, its keys and what they do.
pub fn describe(map: &KeyMap) -> String {
    let mut out = String::new();
    for mode in Mode::ALL {
        out.push_str(&format!("[{}]\n", mode.name()));
        for (action, keys) in map.bindings(mode) {
            let keys: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
            out.push_str(&format!(
                "  {:<18} {:<20} {}\n",
                keys.join(" "),
                action.name(),
                action.description()
            ));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
#[path = "keys_tests.rs"]
mod tests;
