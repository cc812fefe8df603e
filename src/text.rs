//! Text shown to people: network strings made safe for a terminal, sizes in
//! words, errors with their causes. Shared by the TUI and the headless output.

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

/// An error and its causes, each said once: many messages quote their
/// cause already, and `{:#}` would repeat it after them.
pub fn error_chain(error: &anyhow::Error) -> String {
    let mut text = error.to_string();
    for cause in error.chain().skip(1) {
        let cause = cause.to_string();
        if !text.contains(&cause) {
            text.push_str(": ");
            text.push_str(&cause);
        }
    }
    text
}

/// Removes control characters (ESC, CR, BEL, C1 controls…) so a page title or a
/// header cannot move the cursor or change the terminal's state, and the
/// invisible formatting characters (bidi overrides and isolates, zero-width
/// characters) so a URL cannot display reordered or with hidden parts. Tabs
/// and newlines become spaces.
pub fn strip_control(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| c.is_control() || is_invisible_format(c)) {
        return Cow::Borrowed(s);
    }
    Cow::Owned(
        s.chars()
            .filter_map(|c| match c {
                '\t' | '\n' | '\r' => Some(' '),
                c if c.is_control() || is_invisible_format(c) => None,
                c => Some(c),
            })
            .collect(),
    )
}

/// `s` in at most `width` characters, cut in the middle with `…` so both
/// ends stay readable: a host keeps its port, a URL its last segment.
pub fn cut_middle(s: &str, width: usize) -> Cow<'_, str> {
    let len = s.chars().count();
    if len <= width {
        return Cow::Borrowed(s);
    }
    if width == 0 {
        return Cow::Borrowed("");
    }
    let head = (width - 1) / 2;
    let tail = width - 1 - head;
    let mut out: String = s.chars().take(head).collect();
    out.push('…');
    out.extend(s.chars().skip(len - tail));
    Cow::Owned(out)
}

/// Zero-width characters and marks (U+200B–U+200F), bidi embeddings and
/// overrides (U+202A–U+202E) and bidi isolates (U+2066–U+2069): they draw
/// nothing but can reorder or hide what is around them ("Trojan Source").
fn is_invisible_format(c: char) -> bool {
    matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_says_each_cause_once() {
        #[derive(Debug, thiserror::Error)]
        #[error("cannot write config file crawl.toml: {source}; check the directory")]
        struct Write {
            source: std::io::Error,
        }
        let io = std::io::Error::other("Is a directory");
        let error = anyhow::Error::new(Write { source: io }).context("starting the crawl");
        assert_eq!(
            error_chain(&error),
            "starting the crawl: cannot write config file crawl.toml: Is a directory; check the directory"
        );
        let plain = anyhow::anyhow!("disk full").context("flush");
        assert_eq!(error_chain(&plain), "flush: disk full");
    }

    #[test]
    fn long_names_are_cut_in_the_middle_and_keep_both_ends() {
        let host = "very-long-subdomain-of-a-shop.example:8080";
        let cut = cut_middle(host, 24);
        assert_eq!(cut.chars().count(), 24);
        assert_eq!(cut, "very-long-s…example:8080");
        assert!(matches!(cut_middle("a.example", 24), Cow::Borrowed(_)));
        assert_eq!(cut_middle("abcdef", 1), "…");
        assert_eq!(cut_middle("abcdef", 0), "");
    }

    #[test]
    fn escape_sequences_are_removed() {
        let title = "Hello\u{1b}[2J\u{1b}]0;owned\u{7}World\u{9b}31m";
        assert_eq!(strip_control(title), "Hello[2J]0;ownedWorld31m");
        assert!(matches!(strip_control("plain"), Cow::Borrowed(_)));
        assert_eq!(strip_control("a\tb\nc"), "a b c");
    }

    #[test]
    fn bidi_controls_and_zero_width_characters_are_removed() {
        // An RLO makes "exe.txt" display as "txt.exe"; isolates and marks likewise.
        let name = "invoice\u{202E}txt.exe\u{2066}a\u{2069}\u{200B}b\u{200F}c";
        assert_eq!(strip_control(name), "invoicetxt.exeabc");
        for c in ('\u{200B}'..='\u{200F}')
            .chain('\u{202A}'..='\u{202E}')
            .chain('\u{2066}'..='\u{2069}')
        {
            let s = format!("x{c}y");
            assert_eq!(strip_control(&s), "xy", "U+{:04X}", c as u32);
        }
        // Neighbours of the ranges stay: they are visible or harmless.
        for kept in [
            "\u{2010}", "\u{2029}", "\u{202F}", "\u{2065}", "\u{206A}", "é",
        ] {
            assert!(matches!(strip_control(kept), Cow::Borrowed(_)), "{kept:?}");
        }
    }
}
