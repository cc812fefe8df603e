//! Text shown to people: network strings made safe for a terminal, and sizes
//! in words. Shared by the TUI and the headless output.

use std::borrow::Cow;

/// A byte count in binary units: `512 B`, `1.5 KiB`, `3.2 MiB`.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// Removes control characters (ESC, CR, BEL, C1 controls…) so a page title or a
/// header cannot move the cursor or change the terminal's state. Tabs and
/// newlines become spaces.
pub fn strip_control(s: &str) -> Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return Cow::Borrowed(s);
    }
    Cow::Owned(
        s.chars()
            .filter_map(|c| match c {
                '\t' | '\n' | '\r' => Some(' '),
                c if c.is_control() => None,
                c => Some(c),
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_are_removed() {
        let title = "Hello\u{1b}[2J\u{1b}]0;owned\u{7}World\u{9b}31m";
        assert_eq!(strip_control(title), "Hello[2J]0;ownedWorld31m");
        assert!(matches!(strip_control("plain"), Cow::Borrowed(_)));
        assert_eq!(strip_control("a\tb\nc"), "a b c");
    }
}
