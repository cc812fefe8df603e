//! One pass over a page's bytes: its visible text and the start tags that
//! matter for extraction.
//!
//! It follows the HTML tokenizer (`scan/html5lib_tests.rs` checks it against
//! the html5lib tokenizer tests): tags and attributes by the tokenizer's tag
//! states (`tag`), a tag the input's end cuts off is no tag, comments,
//! doctypes, processing instructions and bogus end tags hide their content,
//! and the elements whose content is not markup (`script`, `style`, `title`,
//! `textarea`, ...) are skipped up to their end tag, as a browser's tree
//! builder has the tokenizer do. It builds no tree, allocates nothing, never
//! looks back, and ends at the input's end whatever the markup: a general
//! HTML rewriter did the same work at several times the cost.

use memchr::{memchr, memmem};

mod tag;

pub(super) use tag::Tag;
use tag::{tag_len, tag_name};

/// Elements whose content is raw text, RCDATA or script data, not markup.
const NON_MARKUP_ELEMENTS: [&[u8]; 8] = [
    b"script",
    b"style",
    b"title",
    b"textarea",
    b"xmp",
    b"iframe",
    b"noembed",
    b"noframes",
];

/// What the scan reports, in document order.
pub(super) trait Visitor<'a> {
    /// Text between markup; consecutive calls are separated by markup.
    fn text(&mut self, bytes: &'a [u8]);
    /// A start tag; `content` is the raw content of a non-markup element
    /// (a `<title>`'s text, a script), up to its end tag.
    fn start_tag(&mut self, tag: &Tag<'a>, content: Option<&'a [u8]>);
    /// An end tag, by name.
    fn end_tag(&mut self, _name: &'a [u8]) {}
}

/// Scans `html`, reporting its text and start tags to `visitor`.
pub(super) fn scan<'a>(html: &'a [u8], visitor: &mut impl Visitor<'a>) {
    let mut at = 0;
    while at < html.len() {
        let text_end = memchr(b'<', &html[at..]).map_or(html.len(), |i| at + i);
        if text_end > at {
            visitor.text(&html[at..text_end]);
        }
        at = markup(html, text_end, visitor);
    }
}

/// Reports the markup that starts at `at` (a `<`) and returns where the text
/// after it begins.
fn markup<'a>(html: &'a [u8], at: usize, visitor: &mut impl Visitor<'a>) -> usize {
    let rest = &html[at.min(html.len())..];
    match rest {
        [] => html.len(),
        [b'<', b'!', b'-', b'-', ..] => at + 4 + comment_len(&rest[4..]),
        // Doctypes, CDATA outside foreign content, processing instructions
        // and `</` not followed by a name are bogus comments, up to a `>`.
        [b'<', b'!' | b'?', ..] => at + until_after(rest, b">"),
        [b'<', b'/', c, ..] if c.is_ascii_alphabetic() => match tag_len(rest) {
            Some(len) => {
                visitor.end_tag(tag_name(&rest[2..]));
                at + len
            }
            None => html.len(),
        },
        [b'<', b'/', b'>', ..] => at + 3,
        [b'<', b'/', _, ..] => at + until_after(rest, b">"),
        [b'<', c, ..] if c.is_ascii_alphabetic() => match tag_len(rest) {
            Some(len) => start_tag(html, at, at + len, visitor),
            // The input ends inside the tag: the tokenizer emits nothing.
            None => html.len(),
        },
        // A `<` that starts no markup is text.
        _ => {
            visitor.text(b"<");
            at + 1
        }
    }
}

/// Reports the start tag `html[at..end]` and returns where the text after
/// it (or after its element, for one whose content is not markup) begins.
fn start_tag<'a>(html: &'a [u8], at: usize, end: usize, visitor: &mut impl Visitor<'a>) -> usize {
    let name = tag_name(&html[at + 1..]);
    let tag = Tag {
        name,
        attributes: &html[at + 1 + name.len()..end],
    };
    if tag.is("plaintext") {
        visitor.start_tag(&tag, Some(&html[end..]));
        return html.len();
    }
    match NON_MARKUP_ELEMENTS
        .iter()
        .find(|e| name.eq_ignore_ascii_case(e))
    {
        Some(element) => {
            let (content_len, end_tag_len) = content_of(&html[end..], element);
            visitor.start_tag(&tag, Some(&html[end..end + content_len]));
            end + content_len + end_tag_len
        }
        None => {
            visitor.start_tag(&tag, None);
            end
        }
    }
}

/// Length of a comment's body and its end (or the rest, unterminated):
/// `-->`, or `--!>`, with any number of extra `-` before it.
fn comment_len(body: &[u8]) -> usize {
    if body.starts_with(b">") {
        return 1;
    }
    if body.starts_with(b"->") {
        return 2;
    }
    let mut from = 0;
    while let Some(i) = memmem::find(&body[from..], b"--") {
        let dashes_end = from + i + body[from + i..].iter().take_while(|&&b| b == b'-').count();
        match &body[dashes_end..] {
            [b'>', ..] => return dashes_end + 1,
            [b'!', b'>', ..] => return dashes_end + 2,
            _ => from = dashes_end,
        }
    }
    body.len()
}

/// Bytes up to and including the first `needle`, or all of them.
fn until_after(bytes: &[u8], needle: &[u8]) -> usize {
    memmem::find(bytes, needle).map_or(bytes.len(), |i| i + needle.len())
}

/// The length of a non-markup element's content and of its end tag
/// `</element ...>` (the rest of the input if that tag is not closed).
fn content_of(bytes: &[u8], element: &[u8]) -> (usize, usize) {
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
            return (start, tag_len(rest).unwrap_or(rest.len()));
        }
        at = start + 1;
    }
    (bytes.len(), 0)
}

/// The charset a `<meta>` in the first 1024 bytes declares (the HTML
/// prescan, simplified): `charset=` or an `http-equiv` content type's.
pub(super) fn meta_charset(html: &[u8]) -> Option<&[u8]> {
    struct Prescan<'a>(Option<&'a [u8]>);
    impl<'a> Visitor<'a> for Prescan<'a> {
        fn text(&mut self, _: &'a [u8]) {}
        fn start_tag(&mut self, tag: &Tag<'a>, _: Option<&'a [u8]>) {
            if self.0.is_none() && tag.is("meta") {
                self.0 = declared_charset(tag);
            }
        }
    }
    let mut prescan = Prescan(None);
    scan(&html[..html.len().min(1024)], &mut prescan);
    prescan.0
}

/// A `<meta>`'s `charset`, or the charset of its `content` (`http-equiv`).
fn declared_charset<'a>(meta: &Tag<'a>) -> Option<&'a [u8]> {
    if let Some(charset) = meta.attribute("charset") {
        return Some(charset);
    }
    let content = meta.attribute("content")?;
    let at = memmem::find(&content.to_ascii_lowercase(), b"charset")? + b"charset".len();
    let value = content[at..].trim_ascii_start().strip_prefix(b"=")?;
    let value = value.trim_ascii_start();
    let value = value
        .strip_prefix(b"\"")
        .or(value.strip_prefix(b"'"))
        .unwrap_or(value);
    let end = value
        .iter()
        .position(|b| matches!(b, b'"' | b'\'' | b';') || b.is_ascii_whitespace())
        .unwrap_or(value.len());
    Some(&value[..end])
}

#[cfg(test)]
mod html5lib_tests;

#[cfg(test)]
mod tests {
    use super::{meta_charset, scan, Tag, Visitor};

    /// Text runs joined by `|`, and start tags as `<name attr=value ...>` (content `{...}`).
    #[derive(Default)]
    struct Log(String);

    impl Visitor<'_> for Log {
        fn text(&mut self, bytes: &[u8]) {
            self.0.push_str(&String::from_utf8_lossy(bytes));
            self.0.push('|');
        }
        fn start_tag(&mut self, tag: &Tag<'_>, content: Option<&[u8]>) {
            self.0.push('<');
            self.0.push_str(&String::from_utf8_lossy(tag.name));
            for name in ["href", "rel", "title", "a"] {
                if let Some(value) = tag.attribute(name) {
                    self.0
                        .push_str(&format!(" {name}={}", String::from_utf8_lossy(value)));
                }
            }
            self.0.push('>');
            if let Some(content) = content {
                self.0
                    .push_str(&format!("{{{}}}", String::from_utf8_lossy(content)));
            }
        }
    }

    fn log(html: &str) -> String {
        let mut log = Log::default();
        scan(html.as_bytes(), &mut log);
        log.0
    }

    #[test]
    fn text_and_start_tags_in_document_order() {
        assert_eq!(
            log("<p class=x>alpha <b>beta</b>gamma</p>"),
            "<p>alpha |<b>beta|gamma|"
        );
        assert_eq!(
            log("<a title='a > b' href=x>link</a><A HREF = \"y\" rel=nofollow>"),
            "<a href=x title=a > b>link|<A href=y rel=nofollow>"
        );
        assert_eq!(log("a < b"), "a |<| b|");
    }

    #[test]
    fn attributes_first_one_wins_and_bare_ones_are_empty() {
        assert_eq!(log("<a href=1 href=2 a>"), "<a href=1 a=>");
        assert_eq!(log("<a/href='x'/>"), "<a href=x>");
        // The input ends inside the tag: no tag, as a browser has it.
        assert_eq!(log("x<a href=\"unterminated"), "x|");
        assert_eq!(log("<a href=x"), "");
    }

    #[test]
    fn a_tag_ends_where_the_tokenizer_ends_it() {
        // `='x` is an attribute name: its quote opens no value.
        assert_eq!(log("<a ='x>'>"), "<a>'>|");
        // An unquoted value ends at a space: the quote after it is a name's.
        assert_eq!(log("<a href=x= \"y>z\">"), "<a href=x=>z\">|");
        assert_eq!(log("<a href=a'b title=\"c>d\">"), "<a href=a'b title=c>d>");
        assert_eq!(log("<a/href=x/>"), "<a href=x/>");
    }

    #[test]
    fn end_tags_and_bogus_comments() {
        assert_eq!(log("a</>b</ x>c</1 <d>e"), "a|b|c|e|");
        assert_eq!(log("a</"), "a|<|/|");
        assert_eq!(log("a</p title='>'>b"), "a|b|");
    }

    #[test]
    fn comments_doctypes_and_non_markup_elements_hide_their_content() {
        assert_eq!(
            log("<!DOCTYPE html><!-- <a href=no> -->shown<!---->x<!-->y"),
            "shown|x|y|"
        );
        assert_eq!(
            log("<!-- a --!>b<!-- c -- d --->e<!-- f --! g -->h"),
            "b|e|h|"
        );
        assert_eq!(
            log("<title>A &amp; <b>B</title><script>if (a<b) { x = '<a href=no>'; }</script ><p>"),
            "<title>{A &amp; <b>B}<script>{if (a<b) { x = '<a href=no>'; }}<p>"
        );
        assert_eq!(
            log("<script>never closed <a href=no>"),
            "<script>{never closed <a href=no>}"
        );
        assert_eq!(log("<scripts>kept</scripts>"), "<scripts>kept|");
        assert_eq!(
            log("before<plaintext>after <a>"),
            "before|<plaintext>{after <a>}"
        );
    }

    #[test]
    fn the_prescan_finds_a_meta_charset() {
        let charset = |html: &str| {
            meta_charset(html.as_bytes()).map(|c| String::from_utf8_lossy(c).into_owned())
        };
        assert_eq!(
            charset("<meta charset=\"windows-1252\">").as_deref(),
            Some("windows-1252")
        );
        assert_eq!(
            charset("<meta http-equiv=Content-Type content='text/html; charset=ISO-8859-1'>")
                .as_deref(),
            Some("ISO-8859-1")
        );
        assert_eq!(charset("<meta name=robots content=noindex>"), None);
        let late = format!("{}<meta charset=latin1>", " ".repeat(1100));
        assert_eq!(
            charset(&late),
            None,
            "only the first 1024 bytes are looked at"
        );
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
            "<a =>",
            "<a b='>",
            "<a b=c",
            "<a/",
            "</a b=\"",
            "</ x",
            "<!-- --",
            "<!-- --!",
            "<style></style",
        ] {
            let _ = log(html);
            let _ = meta_charset(html.as_bytes());
        }
    }
}
