//! Links whose href is a plain path, resolved as text. The `url` crate
//! parses a path a character at a time, and that is most of what a join
//! costs; a path of bytes it leaves as they are needs only its dot
//! segments removed. The text written is what [`super::resolve`] would
//! serialize (a property test checks it on the crate's own URL cases).

use url::Url;

use super::known_origins;
use super::link_url::UrlShape;

/// A page's base URL, with what resolving a plain path copies from it
/// worked out once for all of the page's links.
#[derive(Debug, Clone)]
pub(crate) struct LinkBase {
    url: Url,
    /// `None` for a base whose links are all joined by the crate.
    plain: Option<PlainBase>,
}

#[derive(Debug, Clone)]
struct PlainBase {
    /// Where its parts are: the origin ends where the path starts.
    shape: UrlShape,
    /// Where the base's directory ends, after its path's last `/`.
    directory_end: usize,
}

impl LinkBase {
    pub(crate) fn new(url: Url) -> LinkBase {
        let plain = is_plain_base(&url).then(|| {
            let shape = UrlShape::of_url(&url);
            let directory = url.path().rfind('/').map_or(0, |slash| slash + 1);
            PlainBase {
                shape,
                directory_end: shape.path_start() + directory,
            }
        });
        LinkBase { url, plain }
    }

    pub(crate) fn url(&self) -> &Url {
        &self.url
    }
}

/// Appends to `out` the serialization of [`super::resolve`]`(base, href)`
/// when `href` (trimmed, without a fragment) is a plain path with or
/// without a query: root-relative, relative, or absolute at `base`'s origin
/// or one met lately, made only of bytes the parser and the normalizer
/// keep as they are, and gives where its parts are. `None`, with `out`
/// unchanged, for any other href: the caller joins it with the crate.
pub(super) fn resolve_into(base: &LinkBase, href: &str, out: &mut String) -> Option<UrlShape> {
    let plain = base.plain.as_ref()?;
    let path_len = href
        .bytes()
        .position(|b| !is_plain(b))
        .unwrap_or(href.len());
    let (path, query) = match href.as_bytes().get(path_len) {
        None => (href, None),
        Some(b'?') => (&href[..path_len], Some(&href[path_len + 1..])),
        Some(_) => return None,
    };
    if !query.is_none_or(is_plain_query) {
        return None;
    }
    let base_text = base.url.as_str();
    let path_start = plain.shape.path_start();
    let base_origin = &base_text[..path_start];
    let at_base = (base_origin, plain.shape);
    let ((origin, origin_shape), path, start) = if path.is_empty() {
        // `?query` alone: the base's whole path.
        (at_base, path, Start::Page)
    } else if let Some(path) = path.strip_prefix('/') {
        if path.starts_with('/') {
            // Scheme-relative: another authority.
            return None;
        }
        (at_base, path, Start::Root)
    } else if let Some(authority) = known_origins::authority_start(path) {
        let slash = path[authority..].find('/')?;
        let (other, path) = path.split_at(authority + slash);
        if !known_origins::is_known(base_origin, other) {
            return None;
        }
        ((other, UrlShape::of(other)), &path[1..], Start::Root)
    } else if path.bytes().take_while(|&b| b != b'/').any(|b| b == b':') {
        // A scheme, or what a parser could take for one.
        return None;
    } else {
        (at_base, path, Start::Directory)
    };
    let url_start = out.len();
    out.push_str(origin);
    let root = out.len();
    match start {
        Start::Page => out.push_str(&base_text[path_start..plain.shape.path_end()]),
        Start::Directory => out.push_str(&base_text[path_start..plain.directory_end]),
        Start::Root => out.push('/'),
    }
    if start != Start::Page {
        push_segments(out, root, path);
    }
    let shape = origin_shape.with_path_end(out.len() - url_start);
    if let Some(query) = query {
        out.push('?');
        out.push_str(query);
    }
    Some(shape)
}

/// Where a plain href's path starts.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Start {
    /// At the base's path itself (a query alone).
    Page,
    /// In the base's directory.
    Directory,
    /// At the root.
    Root,
}

/// Appends `path`'s segments to the path that starts at `root` in `out`
/// (ending with a slash), dot segments removed. A last segment of dots
/// leaves the slash, as the parser leaves an empty last segment.
fn push_segments(out: &mut String, root: usize, mut path: &str) {
    // Leading `../` and `./` (most relative links), then a rest without
    // dot segments copied at once.
    loop {
        if let Some(rest) = path.strip_prefix("../") {
            pop_segment(out, root);
            path = rest;
        } else if let Some(rest) = path.strip_prefix("./") {
            path = rest;
        } else {
            break;
        }
    }
    let bytes = path.as_bytes();
    let dot_segment = |i: usize| bytes[i] == b'.' && (i == 0 || bytes[i - 1] == b'/');
    if !(0..bytes.len()).any(dot_segment) {
        out.push_str(path);
        return;
    }
    let mut segments = path.split('/').peekable();
    while let Some(segment) = segments.next() {
        match segment {
            ".." => pop_segment(out, root),
            "." => {}
            _ => {
                out.push_str(segment);
                if segments.peek().is_some() {
                    out.push('/');
                }
            }
        }
    }
}

/// Drops the last segment of the path that starts at `root` (the path ends
/// with a slash after it); the root itself stays.
fn pop_segment(out: &mut String, root: usize) {
    if out.len() <= root + 1 {
        return;
    }
    let without_slash = out.len() - 1;
    let previous = out[root..without_slash]
        .rfind('/')
        .map_or(root, |i| root + i);
    out.truncate(previous + 1);
}

/// Bytes kept as they are in a path by the parser (not percent-encoded,
/// not `\` read as `/`, not tabs or newlines it drops) and by
/// normalization (no `%`, no `;` of a path session id); `?` and `#` end a
/// path.
#[inline]
fn is_plain(byte: u8) -> bool {
    PLAIN[usize::from(byte)]
}

const PLAIN: [bool; 256] = {
    let mut table = [false; 256];
    let mut byte = 0;
    while byte < 256 {
        let b = byte as u8;
        table[byte] = b.is_ascii_alphanumeric()
            || matches!(
                b,
                b'/' | b'-'
                    | b'.'
                    | b'_'
                    | b'~'
                    | b'!'
                    | b'$'
                    | b'&'
                    | b'\''
                    | b'('
                    | b')'
                    | b'*'
                    | b'+'
                    | b','
                    | b'='
                    | b':'
                    | b'@'
            );
        byte += 1;
    }
    table
};

/// A query the parser keeps as it is (no `'`, which it encodes in an http
/// query) and normalization too (no `%`, no session id it strips).
fn is_plain_query(query: &str) -> bool {
    query
        .bytes()
        .all(|b| (is_plain(b) && b != b'\'') || b == b'?' || b == b';')
        && !crate::engine::session_ids::has_session_params(query)
}

/// A base whose origin and directory a plain href's resolution copies as
/// they are: http(s), a host, no credentials (normalization drops them) and
/// a path normalization leaves alone.
fn is_plain_base(base: &Url) -> bool {
    matches!(base.scheme(), "http" | "https")
        && base.host_str().is_some_and(|h| !h.is_empty())
        && base.username().is_empty()
        && base.password().is_none()
        && !base.path().bytes().any(|b| b == b'%' || b == b';')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolved(base: &str, href: &str) -> Option<String> {
        let mut out = String::from("kept|");
        let shape = resolve_into(&LinkBase::new(Url::parse(base).unwrap()), href, &mut out)?;
        let url = out[5..].to_string();
        assert_eq!(shape, UrlShape::of(&url), "{url}");
        Some(url)
    }

    #[test]
    fn dot_segments_are_removed_as_the_parser_removes_them() {
        let base = "http://site.test/a/b/c.html?q=1";
        for (href, want) in [
            ("d.html", "http://site.test/a/b/d.html"),
            ("../d", "http://site.test/a/d"),
            ("../../../../d", "http://site.test/d"),
            ("./", "http://site.test/a/b/"),
            (".", "http://site.test/a/b/"),
            ("..", "http://site.test/a/"),
            ("x/..", "http://site.test/a/b/"),
            ("x//y/../z", "http://site.test/a/b/x//z"),
            ("/", "http://site.test/"),
            ("/x/./y/../z/", "http://site.test/x/z/"),
            ("/..", "http://site.test/"),
            ("?x=1&y=/;?", "http://site.test/a/b/c.html?x=1&y=/;?"),
            ("d?", "http://site.test/a/b/d?"),
            ("../d?id=3&ref=x", "http://site.test/a/d?id=3&ref=x"),
            ("http://site.test/p/../q", "http://site.test/q"),
        ] {
            assert_eq!(resolved(base, href).as_deref(), Some(want), "{href}");
        }
    }

    #[test]
    fn anything_else_is_left_to_the_crate() {
        let base = "http://site.test/a/";
        for href in [
            "//other.test/x",
            "a?q%41",
            "a?q='1'",
            "a?sid=5f2b8c1d9e7a6b4c3d2e1f0a",
            "a%41",
            "a;jsessionid=1",
            "a b",
            "a\\b",
            "é",
            "mailto:x@y",
            "x:y/z",
            "http://OTHER.test/a",
            "http://other.test/a",
            "http://site.test",
            "http://user@site.test/a",
        ] {
            assert_eq!(resolved(base, href), None, "{href}");
        }
        for base in [
            "http://user:pw@site.test/a/",
            "http://site.test/%7e/",
            "ftp://site.test/a/",
        ] {
            assert_eq!(resolved(base, "b"), None, "{base}");
        }
    }
}
