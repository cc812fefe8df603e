//! One pass over a page's bytes: its visible text and the start tags that
//! matter for extraction.
//!
//! It follows the HTML tokenizer where that matters here: tags with quoted
//! attribute values, comments, doctypes and processing instructions, and the
//! elements whose content is not markup (`script`, `style`, `title`,
//! `textarea`, ...), which are skipped up to their end tag. It builds no
//! tree, allocates nothing, never looks back, and ends at the input's end
//! whatever the markup: a general HTML rewriter did the same work at several
//! times the cost.

use memchr::{memchr, memmem};

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

/// A start tag: its name and the bytes of its attributes.
pub(super) struct Tag<'a> {
    pub name: &'a [u8],
    attributes: &'a [u8],
}

impl<'a> Tag<'a> {
    pub fn is(&self, name: &str) -> bool {
        self.name.eq_ignore_ascii_case(name.as_bytes())
    }

    /// The tag's attribute bytes, unparsed.
    pub fn raw_attributes(&self) -> &'a [u8] {
        self.attributes
    }

    /// The raw value of the first attribute called `name` (entities not
    /// decoded); an attribute without a value gives an empty one.
    pub fn attribute(&self, name: &str) -> Option<&'a [u8]> {
        Attributes(self.attributes)
            .find(|(n, _)| n.eq_ignore_ascii_case(name.as_bytes()))
            .map(|(_, value)| value)
    }
}

/// Attribute `(name, value)` pairs of a tag's attribute bytes.
struct Attributes<'a>(&'a [u8]);

impl<'a> Iterator for Attributes<'a> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        let bytes = self.0;
        let mut at = skip_while(bytes, 0, |b| b.is_ascii_whitespace() || b == b'/');
        if at >= bytes.len() || bytes[at] == b'>' {
            self.0 = &[];
            return None;
        }
        // A name may begin with `=`; it ends at a space, `/`, `>` or `=`.
        let name_start = at;
        at = skip_while(bytes, at + 1, |b| {
            !(b.is_ascii_whitespace() || b == b'/' || b == b'>' || b == b'=')
        });
        let name = &bytes[name_start..at];
        let after_name = skip_while(bytes, at, |b| b.is_ascii_whitespace());
        if bytes.get(after_name) != Some(&b'=') {
            self.0 = &bytes[at..];
            return Some((name, &[]));
        }
        at = skip_while(bytes, after_name + 1, |b| b.is_ascii_whitespace());
        let value = match bytes.get(at) {
            Some(&quote @ (b'"' | b'\'')) => {
                let end = memchr(quote, &bytes[at + 1..]).map_or(bytes.len(), |i| at + 1 + i);
                let value = &bytes[at + 1..end];
                at = (end + 1).min(bytes.len());
                value
            }
            _ => {
                let start = at;
                at = skip_while(bytes, at, |b| !(b.is_ascii_whitespace() || b == b'>'));
                &bytes[start..at]
            }
        };
        self.0 = &bytes[at..];
        Some((name, value))
    }
}

fn skip_while(bytes: &[u8], from: usize, keep: impl Fn(u8) -> bool) -> usize {
    bytes[from.min(bytes.len())..]
        .iter()
        .position(|&b| !keep(b))
        .map_or(bytes.len(), |i| from + i)
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
        [b'<', b'!' | b'?', ..] => at + until_after(rest, b">"),
        [b'<', b'/', c, ..] if c.is_ascii_alphabetic() => {
            visitor.end_tag(tag_name(&rest[2..]));
            at + tag_len(rest)
        }
        [b'<', c, ..] if c.is_ascii_alphabetic() => {
            let end = at + tag_len(rest);
            let name = tag_name(&rest[1..]);
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
        // A `<` that starts no markup is text.
        _ => {
            visitor.text(b"<");
            at + 1
        }
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
    memmem::find(bytes, needle).map_or(bytes.len(), |i| i + needle.len())
}

/// Length of the tag starting at `tag[0] == b'<'`, through its `>`; a `>`
/// inside a quoted attribute value does not end it.
fn tag_len(tag: &[u8]) -> usize {
    let mut quote = None;
    let mut after_equals = false;
    for (i, &b) in tag.iter().enumerate().skip(1) {
        match quote {
            Some(q) if b == q => quote = None,
            Some(_) => continue,
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

/// The length of a non-markup element's content and of its end tag
/// `</element ...>` (0 if the input ends first).
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
            return (start, tag_len(rest));
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
        assert_eq!(log("<a href=\"unterminated"), "<a href=unterminated>");
    }

    #[test]
    fn comments_doctypes_and_non_markup_elements_hide_their_content() {
        assert_eq!(
            log("<!DOCTYPE html><!-- <a href=no> -->shown<!---->x<!-->y"),
            "shown|x|y|"
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
        ] {
            let _ = log(html);
            let _ = meta_charset(html.as_bytes());
        }
    }
}
