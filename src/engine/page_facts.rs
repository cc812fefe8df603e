//! What an HTML page says about itself beyond its links and title: found in
//! the same pass over the page as its links (`extract`), kept with its page
//! record, listed by `crawldeck pages` and judged by `crawldeck audit`.

use serde::{Deserialize, Serialize};

/// Longest meta description kept, in characters (search engines show ~160).
pub const MAX_DESCRIPTION_CHARS: usize = 1024;
/// Longest first `<h1>` kept, in characters.
pub const MAX_H1_CHARS: usize = 512;
/// `hreflang` alternates kept per page.
pub const MAX_HREFLANG: usize = 32;
/// Longest `hreflang` value kept (`zh-Hant-TW`, `x-default`); longer ones are not languages.
pub const MAX_LANG_CHARS: usize = 35;

/// The facts of one HTML 2xx page.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HtmlFacts {
    /// The first `<meta name="description">`, whitespace collapsed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The text of the first `<h1>`, whitespace collapsed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub h1: Option<String>,
    /// How many `<h1>` elements the page has.
    pub h1_count: u32,
    /// Words of visible text (runs of non-space characters outside markup,
    /// scripts and styles).
    pub words: u32,
    /// `<link rel="alternate" hreflang>` alternates, in document order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hreflang: Vec<Hreflang>,
}

/// What one custom extraction (`config::extract`) found on a page.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExtractedValues {
    /// The extraction's name.
    pub name: String,
    /// The text (or attribute) of each matching element, in document order,
    /// whitespace collapsed, control characters stripped; empty ones left out.
    pub values: Vec<String>,
    /// Some were left out or shortened by the bounds (`extract::custom`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cut: bool,
}

/// One language alternate of a page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hreflang {
    /// The `hreflang` value as written (`en`, `de-AT`, `x-default`).
    pub lang: String,
    /// The alternate's URL, resolved.
    pub url: String,
}

/// Where a `noindex` came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NoindexSource {
    /// `<meta name="robots" content="noindex">` (or the crawler's own name).
    Meta,
    /// An `X-Robots-Tag: noindex` header.
    Header,
    /// Both.
    Both,
}

impl NoindexSource {
    /// From the two places a `noindex` can be given.
    pub fn of(meta: bool, header: bool) -> Option<NoindexSource> {
        match (meta, header) {
            (true, true) => Some(NoindexSource::Both),
            (true, false) => Some(NoindexSource::Meta),
            (false, true) => Some(NoindexSource::Header),
            (false, false) => None,
        }
    }

    /// Words for listings.
    pub fn label(self) -> &'static str {
        match self {
            NoindexSource::Meta => "noindex (meta robots)",
            NoindexSource::Header => "noindex (X-Robots-Tag)",
            NoindexSource::Both => "noindex (meta robots, X-Robots-Tag)",
        }
    }
}

/// Collapses runs of whitespace (and no-break spaces) to one space and cuts
/// to `max_chars` characters.
pub fn collapse(raw: &str, max_chars: usize) -> String {
    let mut out = String::new();
    for word in raw.split_whitespace().flat_map(|w| w.split('\u{a0}')) {
        if word.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    match out.char_indices().nth(max_chars) {
        Some((cut, _)) => out[..cut].to_string(),
        None => out,
    }
}

/// Words in `bytes`, a run of text cut by markup: `in_word` carries whether
/// the previous run ended inside a word, so a run never splits one.
pub fn count_words(bytes: &[u8], in_word: &mut bool) -> u32 {
    let (Some(&first), Some(&last)) = (bytes.first(), bytes.last()) else {
        return 0;
    };
    // `u8::is_ascii_whitespace`'s set, spelled out: in this sum std's
    // version measured up to ~3 % slower (the tests compare the two).
    let space = |b: u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'\x0c');
    // Pairs of neighbours, no carried state, summed a byte at a time over
    // chunks of 256 pairs (at most 128 word starts each): the compiler
    // vectorizes it over 16 bytes at once instead of widening every pair to
    // 32 bits.
    let starts: u32 = bytes[..bytes.len() - 1]
        .chunks(256)
        .zip(bytes[1..].chunks(256))
        .map(|(before, after)| {
            let in_chunk = before.iter().zip(after).fold(0u8, |n, (&a, &b)| {
                n.wrapping_add(u8::from(space(a) & !space(b)))
            });
            u32::from(in_chunk)
        })
        .sum();
    let words = starts + u32::from(!*in_word && !space(first));
    *in_word = !space(last);
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Word starts counted byte by byte with std's ASCII whitespace, as the
    /// chunked sum must.
    fn count_words_plainly(bytes: &[u8], in_word: &mut bool) -> u32 {
        let mut words = 0;
        for &b in bytes {
            if !b.is_ascii_whitespace() && !*in_word {
                words += 1;
            }
            *in_word = !b.is_ascii_whitespace();
        }
        words
    }

    proptest::proptest! {
        #[test]
        fn chunked_word_counts_match_a_plain_count(
            runs in proptest::collection::vec(
                proptest::collection::vec(
                    proptest::sample::select(b" \t\n\r\x0b\x0ca-\xc3\xa9".to_vec()),
                    0..1_200,
                ),
                0..5,
            ),
            starts_in_word: bool,
        ) {
            let (mut chunked, mut plain) = (starts_in_word, starts_in_word);
            for run in &runs {
                proptest::prop_assert_eq!(
                    count_words(run, &mut chunked),
                    count_words_plainly(run, &mut plain)
                );
                proptest::prop_assert_eq!(chunked, plain);
            }
        }
    }

    #[test]
    fn every_other_byte_a_space_counts_every_word_of_a_long_run() {
        let text = b"a ".repeat(10_000);
        assert_eq!(count_words(&text, &mut false), 10_000);
        assert_eq!(count_words(&b"x".repeat(100_000), &mut false), 1);
    }

    #[test]
    fn words_are_runs_of_non_space_across_runs_of_text() {
        let mut in_word = false;
        assert_eq!(count_words(b"  two words\n", &mut in_word), 2);
        assert!(!in_word);
        assert_eq!(count_words(b"hal", &mut in_word), 1);
        assert_eq!(count_words(b"f and", &mut in_word), 1, "`half` is one word");
        assert_eq!(count_words(b"", &mut in_word), 0);
        assert_eq!(count_words("\u{a0}é\tü".as_bytes(), &mut in_word), 1);
    }

    #[test]
    fn collapse_joins_words_and_cuts_on_a_character() {
        assert_eq!(collapse("  a\n\tb\u{a0}c ", 10), "a b c");
        assert_eq!(collapse("ééé ééé", 5), "ééé é");
        assert_eq!(collapse(" \u{a0} ", 5), "");
    }

    #[test]
    fn noindex_names_where_it_came_from() {
        assert_eq!(NoindexSource::of(false, false), None);
        assert_eq!(NoindexSource::of(true, false), Some(NoindexSource::Meta));
        assert_eq!(NoindexSource::of(false, true), Some(NoindexSource::Header));
        assert_eq!(NoindexSource::of(true, true), Some(NoindexSource::Both));
    }
}
