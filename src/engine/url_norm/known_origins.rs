//! Absolute links to origins met lately, joined without parsing the origin
//! again. For an absolute href the `url` crate parses scheme and host every
//! time (the host through IDNA mapping and the IPv4 forms): more than half
//! of what joining one costs. A site that writes its links absolute (most
//! CMSs do) links nearly always to its own origin and a few others.

use std::cell::RefCell;

use url::{Position, Url};
use xxhash_rust::xxh3::xxh3_64;

/// Origins remembered per thread, each in the slot of its hash: one that
/// collides takes the slot over. 22 KB a thread, and the origins' text.
const SLOTS: usize = 256;

thread_local! {
    static KNOWN: RefCell<Vec<Option<Url>>> = RefCell::new(vec![None; SLOTS]);
}

/// `href` joined to `base` without parsing its origin, when it is an
/// http(s) URL whose origin is spelled as the `url` crate writes it and is
/// `base`'s or one met lately on this thread, followed by a path without a
/// query (a fragment is cut). Then it is that origin's URL with the path
/// set, which parses the path as a join does. `None` for any other href.
pub(super) fn join(base: &Url, href: &str) -> Option<Url> {
    let authority_start = authority_start(href)?;
    let href = href.split_once('#').map_or(href, |(before, _)| before);
    let path_start = authority_start + href[authority_start..].find('/')?;
    let (origin, path) = href.split_at(path_start);
    if !path.bytes().all(is_plain_path_byte) {
        return None;
    }
    KNOWN.with(|known| {
        let mut known = known.borrow_mut();
        let slot = &mut known[slot_of(origin)];
        if !holds(slot, origin) {
            if origin_str(base) != origin {
                return None;
            }
            *slot = Some(origin_of(base));
        }
        let mut url = slot.clone()?;
        url.set_path(path);
        Some(url)
    })
}

/// Remembers the origin of `joined`, the join of `href`, if `href` spells it
/// as the `url` crate writes it (only then can [`join`] meet it again).
pub(super) fn learn(joined: &Url, href: &str) {
    // Most hrefs are relative: they are let go before the URL is looked at.
    if authority_start(href).is_none() || joined.host_str().is_none() {
        return;
    }
    let origin = origin_str(joined);
    if href.as_bytes().get(origin.len()) != Some(&b'/') || !href.starts_with(origin) {
        return;
    }
    KNOWN.with(|known| {
        let mut known = known.borrow_mut();
        let slot = &mut known[slot_of(origin)];
        if !holds(slot, origin) {
            *slot = Some(origin_of(joined));
        }
    });
}

/// Whether `origin` (`scheme://host[:port]`, no credentials) is the base's
/// (`base_origin`) or one met lately on this thread, spelled as the `url`
/// crate writes it.
pub(super) fn is_known(base_origin: &str, origin: &str) -> bool {
    if origin.contains('@') {
        return false;
    }
    base_origin == origin || KNOWN.with(|known| holds(&known.borrow()[slot_of(origin)], origin))
}

/// Where the authority of an `http://` or `https://` href starts, spelled
/// as the `url` crate writes a scheme; `None` for any other href.
pub(super) fn authority_start(href: &str) -> Option<usize> {
    ["http://", "https://"]
        .into_iter()
        .find(|scheme| href.starts_with(scheme))
        .map(str::len)
}

/// Bytes a path may have for [`join`]: printable ASCII. `?` would start a
/// query (and a path setter encodes it instead); `\` is the crate's to
/// read as `/`, kept out to stay plainly on the safe side.
fn is_plain_path_byte(byte: u8) -> bool {
    byte.is_ascii_graphic() && !matches!(byte, b'?' | b'#' | b'\\')
}

fn slot_of(origin: &str) -> usize {
    xxh3_64(origin.as_bytes()) as usize % SLOTS
}

fn holds(slot: &Option<Url>, origin: &str) -> bool {
    slot.as_ref().is_some_and(|url| origin_str(url) == origin)
}

/// `scheme://[userinfo@]host[:port]`, as the URL is written.
fn origin_str(url: &Url) -> &str {
    &url[..Position::BeforePath]
}

/// The URL with no path, query or fragment: what [`join`] sets paths on.
fn origin_of(url: &Url) -> Url {
    let mut origin = url.clone();
    origin.set_query(None);
    origin.set_fragment(None);
    origin.set_path("/");
    origin
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn an_origin_is_joined_without_a_parse_once_it_is_known() {
        let base = url("http://site.test/dir/page?q=1");
        let other = "https://other.test:8443/a/../b";
        assert_eq!(join(&base, other), None, "not met yet");
        learn(&url(other), other);
        assert_eq!(
            join(&base, other).map(String::from).as_deref(),
            Some("https://other.test:8443/b")
        );
        // The page's own origin is known at once; its query is not carried.
        assert_eq!(
            join(&base, "http://site.test/x/y.html#part")
                .map(String::from)
                .as_deref(),
            Some("http://site.test/x/y.html")
        );
    }

    #[test]
    fn only_an_origin_spelled_as_the_crate_writes_it_is_known() {
        let base = url("http://site.test/");
        for href in [
            "HTTP://site.test/a",
            "http://SITE.test/a",
            "http://site.test:80/a",
            "http://user@site.test/a",
            "http://site.test",
            "http://site.test/a?b=c",
            "http://site.test/a\\b",
            "http://site.test/a b",
            "http://site.test/é",
            "//site.test/a",
            "/a",
            "a",
        ] {
            assert_eq!(join(&base, href), None, "{href}");
        }
        let uppercase = "http://OTHER.test/a";
        learn(&url(uppercase), uppercase);
        assert_eq!(join(&base, uppercase), None, "not learnt as spelled");
    }
}
