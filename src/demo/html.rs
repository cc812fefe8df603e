//! Small helpers shared by the site generators: an HTML builder, a fixed word
//! list for titles, a path-seeded RNG and percent-decoding for routing.

use std::fmt::Write as _;

/// Title words; pages pick from this fixed list so titles stay deterministic.
pub(crate) const WORDS: &[&str] = &[
    "amber", "birch", "cobalt", "delta", "ember", "fjord", "garnet", "harbor", "indigo", "juniper",
    "kestrel", "lantern", "maple", "nimbus", "onyx", "pebble", "quartz", "raven", "saffron",
    "timber", "umber", "velvet", "willow", "xenon", "yarrow", "zephyr", "anchor", "beacon",
    "canyon", "drift", "echo", "falcon",
];

pub(crate) fn word(i: u64) -> &'static str {
    WORDS[(i % WORDS.len() as u64) as usize]
}

/// A deterministic RNG for one path: the same path always renders the same page.
pub(crate) fn rng_for(path: &str) -> fastrand::Rng {
    fastrand::Rng::with_seed(xxhash_rust::xxh3::xxh3_64(path.as_bytes()))
}

/// Escapes text for HTML element content and attribute values.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            _ => out.push(c),
        }
    }
    out
}

/// Decodes `%XX` sequences so that `/%7Efred/` and `/~fred/` route to the same page.
/// Invalid escapes and non-UTF-8 results are kept as they were.
pub(crate) fn percent_decode(path: &str) -> String {
    if !path.contains('%') {
        return path.to_string();
    }
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
            if let Some(v) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| path.to_string())
}

/// A minimal HTML document builder. Attribute values passed to `link*` are
/// written as given, so callers can deliberately emit `&amp;` in hrefs.
pub(crate) struct Html {
    buf: String,
}

impl Html {
    pub fn new(title: &str) -> Self {
        Self::with_head(title, "")
    }

    /// `head_extra` is raw markup placed inside `<head>` (meta, base, canonical).
    pub fn with_head(title: &str, head_extra: &str) -> Self {
        Self::titled(title, title, head_extra)
    }

    /// A `<title>` and an `<h1>` that differ.
    pub fn titled(title: &str, h1: &str, head_extra: &str) -> Self {
        let mut buf = String::with_capacity(2048);
        buf.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>");
        buf.push_str(&escape(title));
        buf.push_str("</title>\n");
        buf.push_str(head_extra);
        buf.push_str("</head>\n<body>\n<h1>");
        buf.push_str(&escape(h1));
        buf.push_str("</h1>\n");
        Html { buf }
    }

    /// A document without a `<title>` or an `<h1>`.
    pub fn bare() -> Self {
        Html {
            buf:
                "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"></head>\n<body>\n"
                    .into(),
        }
    }

    pub fn p(&mut self, text: &str) -> &mut Self {
        let _ = writeln!(self.buf, "<p>{}</p>", escape(text));
        self
    }

    pub fn link(&mut self, href: &str, text: &str) -> &mut Self {
        let _ = writeln!(self.buf, "<a href=\"{href}\">{}</a><br>", escape(text));
        self
    }

    pub fn link_rel(&mut self, href: &str, rel: &str, text: &str) -> &mut Self {
        let _ = writeln!(
            self.buf,
            "<a href=\"{href}\" rel=\"{rel}\">{}</a><br>",
            escape(text)
        );
        self
    }

    pub fn raw(&mut self, markup: &str) -> &mut Self {
        self.buf.push_str(markup);
        self
    }

    pub fn finish(&mut self) -> String {
        let mut buf = std::mem::take(&mut self.buf);
        buf.push_str("</body></html>\n");
        buf
    }
}

/// A paragraph of filler text seeded from `rng`, drawn from the title words.
pub(crate) fn filler(rng: &mut fastrand::Rng, words: usize) -> String {
    let mut out = String::with_capacity(words * 8);
    for i in 0..words {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(word(rng.u64(..)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_decode_handles_valid_invalid_and_truncated_escapes() {
        assert_eq!(percent_decode("/%7Efred/hi.html"), "/~fred/hi.html");
        assert_eq!(percent_decode("/%7efred/"), "/~fred/");
        assert_eq!(percent_decode("/a%zz"), "/a%zz");
        assert_eq!(percent_decode("/a%7"), "/a%7");
        assert_eq!(percent_decode("/a%"), "/a%");
        assert_eq!(percent_decode("/%FF"), "/%FF");
    }

    #[test]
    fn html_escapes_title_and_text() {
        let page = Html::new("a<b").p("x&y").finish();
        assert!(page.contains("<title>a&lt;b</title>"));
        assert!(page.contains("<p>x&amp;y</p>"));
    }
}
