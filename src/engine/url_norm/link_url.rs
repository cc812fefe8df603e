//! A URL on its way through admission, read as text. Extraction writes a
//! page's links as text (`plain_paths.rs`), and admission reads what it
//! needs of them in place: the scope filter, rules, the seen check, the
//! trap detector and the frontier entry parse no link.

use std::borrow::Cow;

use url::{Position, Url};

use crate::engine::dedup::url_fingerprint;

/// What admission reads of a URL (the scope filter, operator rules, trap
/// detectors, priority, host keys): a parsed `Url`, or a [`LinkUrl`] read
/// in place.
pub(crate) trait UrlParts {
    fn as_str(&self) -> &str;
    fn scheme(&self) -> &str;
    fn host_str(&self) -> Option<&str>;
    fn path(&self) -> &str;
    /// The query, without its `?`.
    fn query(&self) -> Option<&str>;
    /// The path and the query with its `?`, without the fragment.
    fn path_and_query(&self) -> &str;
    /// `host` or `host:port`, lowercase: [`super::host_key`].
    fn host_key_ref(&self) -> Cow<'_, str>;
}

impl UrlParts for Url {
    fn as_str(&self) -> &str {
        Url::as_str(self)
    }

    fn scheme(&self) -> &str {
        Url::scheme(self)
    }

    fn host_str(&self) -> Option<&str> {
        Url::host_str(self)
    }

    fn path(&self) -> &str {
        Url::path(self)
    }

    fn query(&self) -> Option<&str> {
        Url::query(self)
    }

    fn path_and_query(&self) -> &str {
        &self[Position::BeforePath..Position::AfterQuery]
    }

    fn host_key_ref(&self) -> Cow<'_, str> {
        super::host_key_ref(self)
    }
}

/// An absolute URL as the `url` crate serializes it (a link's text, or a
/// parsed URL's), with where its host, port and path are, and its
/// fingerprint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LinkUrl<'a> {
    text: Cow<'a, str>,
    shape: UrlShape,
    fingerprint: u64,
}

/// Where a URL's scheme, host and path lie in its text. Extraction notes it
/// as it writes a link (`resolve_text`), so admission need not look again.
/// Offsets are `u32`: a link's text is far shorter (`PageLinks` holds at
/// most 2 GiB of them, a whole URL comes from a bounded header or body).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct UrlShape {
    /// Where the scheme's `:` is.
    scheme_end: u32,
    /// The host, or an empty range at the path's start for none.
    host: (u32, u32),
    /// Where the path starts (the port, if any, ends there).
    path_start: u32,
    /// Where the path ends: at `?`, `#` or the end.
    path_end: u32,
}

impl UrlShape {
    /// Read from `text`, an absolute URL as the `url` crate serializes it.
    pub(crate) fn of(text: &str) -> UrlShape {
        let scheme_end = text.find(':').unwrap_or(0);
        let has_authority = text[scheme_end..].starts_with("://");
        let bytes = text.as_bytes();
        let authority = scheme_end + 3;
        let path_start = match has_authority {
            true => {
                authority
                    + bytes[authority..]
                        .iter()
                        .position(|&b| matches!(b, b'/' | b'?' | b'#'))
                        .unwrap_or(bytes.len() - authority)
            }
            false => (scheme_end + 1).min(bytes.len()),
        };
        let authority = authority.min(path_start);
        let host_start = authority
            + bytes[authority..path_start]
                .iter()
                .rposition(|&b| b == b'@')
                .map_or(0, |at| at + 1);
        let host_end = match bytes.get(host_start) {
            Some(b'[') => bytes[host_start..path_start]
                .iter()
                .position(|&b| b == b']')
                .map_or(path_start, |i| host_start + i + 1),
            _ => bytes[host_start..path_start]
                .iter()
                .position(|&b| b == b':')
                .map_or(path_start, |i| host_start + i),
        };
        let path_end = path_start
            + bytes[path_start..]
                .iter()
                .position(|&b| matches!(b, b'?' | b'#'))
                .unwrap_or(bytes.len() - path_start);
        let host = match has_authority {
            true => (host_start, host_end),
            false => (path_start, path_start),
        };
        UrlShape::new(scheme_end, host, path_start, path_end)
    }

    /// A URL of the `url` crate's: its own positions, nothing read.
    pub(crate) fn of_url(url: &Url) -> UrlShape {
        let at = |position| url[..position].len();
        let host = match url.has_host() {
            true => (at(Position::BeforeHost), at(Position::AfterHost)),
            false => (at(Position::BeforePath), at(Position::BeforePath)),
        };
        UrlShape::new(
            url.scheme().len(),
            host,
            at(Position::BeforePath),
            at(Position::AfterPath),
        )
    }

    fn new(scheme_end: usize, host: (usize, usize), path_start: usize, path_end: usize) -> Self {
        UrlShape {
            scheme_end: offset(scheme_end),
            host: (offset(host.0), offset(host.1)),
            path_start: offset(path_start),
            path_end: offset(path_end),
        }
    }

    /// The same origin with its path ending at `path_end`.
    pub(crate) fn with_path_end(self, path_end: usize) -> UrlShape {
        UrlShape {
            path_end: offset(path_end),
            ..self
        }
    }

    /// In 10 bytes, for a URL of at most 65,535 bytes (a page's links are
    /// `scope.max_url_len`, 2,048 unless raised); `None` past that.
    pub(crate) fn short(self) -> Option<ShortShape> {
        let short = |at: u32| u16::try_from(at).ok();
        Some(ShortShape([
            short(self.scheme_end)?,
            short(self.host.0)?,
            short(self.host.1)?,
            short(self.path_start)?,
            short(self.path_end)?,
        ]))
    }

    fn scheme_end(&self) -> usize {
        self.scheme_end as usize
    }

    fn host(&self) -> (usize, usize) {
        (self.host.0 as usize, self.host.1 as usize)
    }

    pub(super) fn path_start(&self) -> usize {
        self.path_start as usize
    }

    pub(super) fn path_end(&self) -> usize {
        self.path_end as usize
    }
}

/// An offset of a [`UrlShape`] (no URL the crawl holds reaches `u32::MAX`).
fn offset(at: usize) -> u32 {
    u32::try_from(at).unwrap_or(u32::MAX)
}

/// A [`UrlShape`] kept with each of a page's links (`PageLinks`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ShortShape([u16; 5]);

impl From<ShortShape> for UrlShape {
    fn from(
        ShortShape([scheme_end, host_start, host_end, path_start, path_end]): ShortShape,
    ) -> Self {
        UrlShape {
            scheme_end: scheme_end.into(),
            host: (host_start.into(), host_end.into()),
            path_start: path_start.into(),
            path_end: path_end.into(),
        }
    }
}

impl<'a> LinkUrl<'a> {
    /// A serialized URL read in place: written by the `url` crate, or as
    /// it writes one (`resolve_text`).
    #[cfg(test)]
    pub(crate) fn from_serialized(text: &'a str) -> Self {
        Self::with_shape(text, None, url_fingerprint(text))
    }

    /// A link as extraction wrote it, with its fingerprint and, unless it
    /// was too long to keep, its shape: nothing read again.
    pub(crate) fn with_shape(text: &'a str, shape: Option<ShortShape>, fingerprint: u64) -> Self {
        let shape = shape.map_or_else(|| UrlShape::of(text), UrlShape::from);
        debug_assert_eq!(shape, UrlShape::of(text), "{text}");
        debug_assert_eq!(fingerprint, url_fingerprint(text), "{text}");
        LinkUrl {
            text: Cow::Borrowed(text),
            shape,
            fingerprint,
        }
    }

    /// [`url_fingerprint`] of the text.
    pub(crate) fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    pub(crate) fn into_string(self) -> String {
        self.text.into_owned()
    }
}

/// A parsed URL's text, its shape from the URL's own positions (the
/// shape a link's text reads as: `proptests.rs` checks the two agree).
impl From<Url> for LinkUrl<'static> {
    fn from(url: Url) -> Self {
        let shape = UrlShape::of_url(&url);
        let text = String::from(url);
        LinkUrl {
            shape,
            fingerprint: url_fingerprint(&text),
            text: Cow::Owned(text),
        }
    }
}

impl UrlParts for LinkUrl<'_> {
    fn as_str(&self) -> &str {
        &self.text
    }

    fn scheme(&self) -> &str {
        &self.text[..self.shape.scheme_end()]
    }

    fn host_str(&self) -> Option<&str> {
        let (start, end) = self.shape.host();
        (start != end || self.text[..start].ends_with("//")).then(|| &self.text[start..end])
    }

    fn path(&self) -> &str {
        &self.text[self.shape.path_start()..self.shape.path_end()]
    }

    fn query(&self) -> Option<&str> {
        let query = self.text[self.shape.path_end()..].strip_prefix('?')?;
        Some(query.split_once('#').map_or(query, |(query, _)| query))
    }

    fn path_and_query(&self) -> &str {
        let rest = &self.text[self.shape.path_start()..];
        rest.split_once('#').map_or(rest, |(before, _)| before)
    }

    fn host_key_ref(&self) -> Cow<'_, str> {
        super::lowercase_key(&self.text[self.shape.host().0..self.shape.path_start()])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every part, read from the text, as the parsed URL gives it.
    fn same_parts(text: &str) {
        let url = Url::parse(text).unwrap();
        let read = LinkUrl::from_serialized(url.as_str());
        let parsed = LinkUrl::from(url.clone());
        for link in [&read, &parsed] {
            assert_eq!(link.as_str(), url.as_str());
            assert_eq!(UrlParts::scheme(link), url.scheme(), "{text}");
            assert_eq!(UrlParts::host_str(link), url.host_str(), "{text}");
            assert_eq!(UrlParts::path(link), url.path(), "{text}");
            assert_eq!(UrlParts::query(link), url.query(), "{text}");
            assert_eq!(
                link.path_and_query(),
                &url[Position::BeforePath..Position::AfterQuery]
            );
            assert_eq!(
                link.host_key_ref(),
                super::super::host_key_ref(&url),
                "{text}"
            );
        }
        assert_eq!(read, LinkUrl::from_serialized(parsed.as_str()));
    }

    #[test]
    fn a_shape_kept_in_16_bits_reads_as_the_text_and_a_longer_one_is_read_again() {
        let short = "http://site.test:8080/a?q";
        let kept = UrlShape::of(short).short().expect("fits in 16 bits");
        assert_eq!(UrlShape::from(kept), UrlShape::of(short));
        let long = format!("http://site.test/{}?q", "a".repeat(70_000));
        assert_eq!(UrlShape::of(&long).short(), None);
        let link = LinkUrl::with_shape(&long, None, url_fingerprint(&long));
        assert_eq!(UrlParts::query(&link), Some("q"));
        assert_eq!(UrlParts::path(&link).len(), 70_001);
        assert_eq!(link.fingerprint(), url_fingerprint(&long));
    }

    #[test]
    fn a_links_text_reads_as_its_parsed_url() {
        for text in [
            "http://site.test/",
            "https://site.test:8443/a/b.html?q=1&r=2",
            "http://user:pw@site.test:81/a?#f",
            "http://[::1]:8080/x?y#z",
            "http://127.0.0.1/",
            "http://site.test/a:b@c/d?e:f",
            "mailto:someone@site.test",
            "data:text/plain,x",
        ] {
            same_parts(text);
        }
    }
}
