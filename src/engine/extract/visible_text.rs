//! The simhash of a page's visible text, read straight from its bytes.
//!
//! Having lol_html hand every text node to a handler cost more than the link
//! extraction itself, so the text is found by a small scanner that follows
//! the HTML tokenizer where it matters for text: tags (with quoted attribute
//! values), comments, doctypes, and the elements whose content is not data
//! text (`script`, `style`, `title`, `textarea`, ...). Bytes are hashed as
//! they are, whatever the page's charset: a page's hash is compared only with
//! hashes of pages of the same site.

use crate::engine::dedup::WordHasher;

/// Elements whose content is raw text, RCDATA or script data, not visible text.
const NON_DATA_ELEMENTS: [&[u8]; 9] = [
    b"script",
    b"style",
    b"title",
    b"textarea",
    b"xmp",
    b"iframe",
    b"noembed",
    b"noframes",
    b"noscript",
];

/// The simhash of the first `max_text` bytes of visible text of `html`.
pub(super) fn simhash(html: &[u8], max_text: usize) -> u64 {
    let mut words = WordHasher::default();
    let mut budget = max_text;
    let mut at = 0;
    while at < html.len() && budget > 0 {
        let text_end = memchr(b'<', &html[at..]).map_or(html.len(), |i| at + i);
        let text = &html[at..text_end.min(at.saturating_add(budget))];
        words.feed(text);
        budget -= text.len();
        words.break_word();
        at = skip_markup(html, text_end);
    }
    words.finish()
}

/// Where the text after the markup starting at `at` (a `<`, or the end) begins.
fn skip_markup(html: &[u8], at: usize) -> usize {
    let rest = &html[at.min(html.len())..];
    match rest {
        [] => html.len(),
        [b'<', b'!', b'-', b'-', ..] => at + comment_len(&rest[4..]) + 4,
        [b'<', b'!' | b'?', ..] => at + until_after(rest, b">"),
        [b'<', b'/', c, ..] if c.is_ascii_alphabetic() => at + tag_len(rest),
        [b'<', c, ..] if c.is_ascii_alphabetic() => {
            let end = at + tag_len(rest);
            let name = tag_name(&rest[1..]);
            if name.eq_ignore_ascii_case(b"plaintext") {
                return html.len();
            }
            match NON_DATA_ELEMENTS
                .iter()
                .find(|element| name.eq_ignore_ascii_case(element))
            {
                Some(element) => end + closing_tag_at(&html[end..], element),
                None => end,
            }
        }
        // A `<` that starts no markup is text; it ends a word like any punctuation.
        _ => at + 1,
    }
}

/// Length of a comment's body and its `-->` (or the rest, unterminated).
fn comment_len(body: &[u8]) -> usize {
    if body.starts_with(b">") {
        return 1;
    }
    if body.starts_with(b"->") {
        return 2;
    }
    until_after(body, b"-->")
}

/// Bytes up to and including the first `needle`, or all of them.
fn until_after(bytes: &[u8], needle: &[u8]) -> usize {
    bytes
        .windows(needle.len())
        .position(|w| w == needle)
        .map_or(bytes.len(), |i| i + needle.len())
}

/// Length of the tag starting at `tag[0] == b'<'`, through its `>`; a `>`
/// inside a quoted attribute value does not end it.
fn tag_len(tag: &[u8]) -> usize {
    let mut quote = None;
    let mut after_equals = false;
    for (i, &b) in tag.iter().enumerate().skip(1) {
        match quote {
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None if b == b'>' => return i + 1,
            None if after_equals && (b == b'"' || b == b'\'') => quote = Some(b),
            None => {}
        }
        if !b.is_ascii_whitespace() {
            after_equals = b == b'=';
        }
    }
    tag.len()
}

fn tag_name(after_lt: &[u8]) -> &[u8] {
    let end = after_lt
        .iter()
        .position(|b| b.is_ascii_whitespace() || *b == b'/' || *b == b'>')
        .unwrap_or(after_lt.len());
    &after_lt[..end]
}

/// Offset just past `</element ...>` in `bytes`, or its end.
fn closing_tag_at(bytes: &[u8], element: &[u8]) -> usize {
    let mut at = 0;
    while let Some(i) = memchr(b'<', &bytes[at..]) {
        let start = at + i;
        let rest = &bytes[start..];
        let name_end = 2 + element.len();
        let closes = rest.len() > name_end
            && rest[1] == b'/'
            && rest[2..name_end].eq_ignore_ascii_case(element)
            && matches!(
                rest[name_end],
                b'>' | b'/' | b' ' | b'\t' | b'\n' | b'\r' | b'\x0c'
            );
        if closes {
            return start + tag_len(rest);
        }
        at = start + 1;
    }
    bytes.len()
}

fn memchr(needle: u8, haystack: &[u8]) -> Option<usize> {
    haystack.iter().position(|&b| b == needle)
}

#[cfg(test)]
mod tests {
    use super::simhash;
    use crate::engine::dedup::simhash_text;

    fn same_as_text(html: &str, text: &str) {
        assert_eq!(
            simhash(html.as_bytes(), usize::MAX),
            simhash_text(text),
            "{html:?} should hash as {text:?}"
        );
    }

    #[test]
    fn markup_separates_words_and_is_not_text() {
        same_as_text(
            "<p class=\"x\">alpha <b>beta</b>gamma</p>",
            "alpha beta gamma",
        );
        same_as_text("<a title='a > b' href=x>link text</a>", "link text");
        same_as_text("one<br/>two", "one two");
        // `<d` opens a tag (never closed here), as in a browser.
        same_as_text("a < b and c<d", "a b and c");
    }

    #[test]
    fn comments_doctypes_and_non_data_elements_are_skipped() {
        same_as_text("<!DOCTYPE html><!-- hidden words -->shown", "shown");
        same_as_text("<!---->x<!-->y", "x y");
        same_as_text(
            "<title>Title words</title><script>if (a<b) { x = '</p>'; }</script>\
             <STYLE>p{}</STYLE ><textarea>typed</textarea>body",
            "body",
        );
        same_as_text("<script>never closed words", "");
        same_as_text("before<plaintext>after", "before");
        same_as_text("<scripts>kept</scripts>", "kept");
    }

    #[test]
    fn the_text_budget_bounds_the_hashed_text() {
        let html = "<p>kept words</p><p>dropped words</p>";
        assert_eq!(simhash(html.as_bytes(), 10), simhash_text("kept words"));
        assert_eq!(simhash(b"", 10), simhash_text(""));
    }

    #[test]
    fn hostile_input_ends() {
        for html in [
            "<",
            "<!",
            "<!--",
            "</",
            "<a",
            "<a href='",
            "<script",
            "<p x=\"",
            "<<<<",
        ] {
            let _ = simhash(html.as_bytes(), usize::MAX);
        }
    }
}
