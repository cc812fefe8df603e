//! A URL on its way through admission, read as text. Extraction writes a
//! page's links as text (`plain_paths.rs`), and admission reads what it
//! needs of them in place: the scope filter, rules, the seen check, the
//! trap detector and the frontier entry parse no link.

use std::borrow::Cow;

use url::{Position, Url};

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
/// parsed URL's), with where its host, port and path are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LinkUrl<'a> {
    text: Cow<'a, str>,
    /// Where the scheme's `:` is.
    scheme_end: usize,
    /// The host, or an empty range at the path's start for none.
    host: (usize, usize),
    /// Where the path starts (the port, if any, ends there).
    path_start: usize,
    /// Where the path ends: at `?`, `#` or the end.
    path_end: usize,
}

impl<'a> LinkUrl<'a> {
    /// A serialized URL read in place: written by the `url` crate, or as
    /// it writes one (`resolve_text`).
    pub(crate) fn from_serialized(text: &'a str) -> Self {
        Self::split(Cow::Borrowed(text))
    }

    fn split(text: Cow<'a, str>) -> Self {
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
        LinkUrl {
            text,
            scheme_end,
            host,
            path_start,
            path_end,
        }
    }

    pub(crate) fn into_string(self) -> String {
        self.text.into_owned()
    }
}

/// A parsed URL's text, read the one way every link is.
impl From<Url> for LinkUrl<'static> {
    fn from(url: Url) -> Self {
        LinkUrl::split(Cow::Owned(url.into()))
    }
}

impl UrlParts for LinkUrl<'_> {
    fn as_str(&self) -> &str {
        &self.text
    }

    fn scheme(&self) -> &str {
        &self.text[..self.scheme_end]
    }

    fn host_str(&self) -> Option<&str> {
        let (start, end) = self.host;
        (start != end || self.text[..start].ends_with("//")).then(|| &self.text[start..end])
    }

    fn path(&self) -> &str {
        &self.text[self.path_start..self.path_end]
    }

    fn query(&self) -> Option<&str> {
        let query = self.text[self.path_end..].strip_prefix('?')?;
        Some(query.split_once('#').map_or(query, |(query, _)| query))
    }

    fn path_and_query(&self) -> &str {
        let rest = &self.text[self.path_start..];
        rest.split_once('#').map_or(rest, |(before, _)| before)
    }

    fn host_key_ref(&self) -> Cow<'_, str> {
        super::lowercase_key(&self.text[self.host.0..self.path_start])
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
