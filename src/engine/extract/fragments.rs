//! `#fragment` links, and the ids a page offers them: a link to
//! `page.html#part` is broken when `page.html` has no element with
//! `id="part"` (or an `<a name="part">`).

use std::borrow::Cow;
use std::collections::HashSet;

use url::Url;

use super::entities;
use super::scan::{self, Tag, Visitor};
use crate::engine::dedup::{url_fingerprint, FingerprintSet};
use crate::engine::url_norm;

/// Fragment links kept per page (each page and fragment once).
pub const MAX_PER_PAGE: usize = 512;
/// Longer fragments are not ids anyone writes.
const MAX_FRAGMENT_BYTES: usize = 256;
/// Ids read from one page; the rest are not looked at.
const MAX_IDS: usize = 200_000;

/// The fragment links of one page, collected during extraction.
#[derive(Default)]
pub(super) struct FragmentLinks {
    pairs: Vec<(String, String)>,
    seen: FingerprintSet,
}

impl FragmentLinks {
    /// Keeps `href`'s page (`resolved`, the link it is) and fragment if it
    /// has one worth checking (`#top` and an empty fragment scroll to the
    /// top, whatever the page holds).
    pub(super) fn add(&mut self, base: &Url, href: &str, resolved: Option<&str>) {
        let Some((page, fragment)) = href.trim().split_once('#') else {
            return;
        };
        if fragment.is_empty()
            || fragment.eq_ignore_ascii_case("top")
            || fragment.len() > MAX_FRAGMENT_BYTES
            || self.pairs.len() >= MAX_PER_PAGE
        {
            return;
        }
        let target = match (page.is_empty(), resolved) {
            (true, _) => {
                let mut same = base.clone();
                url_norm::normalize(&mut same);
                Cow::Owned(same.into())
            }
            (false, Some(url)) => Cow::Borrowed(url),
            (false, None) => return,
        };
        let key = url_fingerprint(&target) ^ url_fingerprint(fragment).rotate_left(17);
        if self.seen.insert(key) {
            self.pairs.push((target.into_owned(), fragment.to_string()));
        }
    }

    pub(super) fn finish(self) -> Vec<(String, String)> {
        self.pairs
    }
}

/// Whether `fragment` names an element of a page with `ids`: as written, or
/// percent-decoded (as a browser looks it up).
pub fn fragment_found(fragment: &str, ids: &HashSet<String>) -> bool {
    ids.contains(fragment)
        || percent_encoding::percent_decode_str(fragment)
            .decode_utf8()
            .is_ok_and(|decoded| ids.contains(decoded.as_ref()))
}

/// The ids of an HTML page's elements and the names of its `<a name>`
/// anchors, decoded; at most [`MAX_IDS`].
pub fn element_ids(body: &[u8], content_type: Option<&str>) -> HashSet<String> {
    let mut ids = Ids {
        encoding: super::encoding_of(content_type)
            .or_else(|| scan::meta_charset(body).and_then(super::ascii_compatible))
            .unwrap_or(encoding_rs::UTF_8),
        ids: HashSet::new(),
    };
    scan::scan(body, &mut ids);
    ids.ids
}

struct Ids {
    encoding: &'static encoding_rs::Encoding,
    ids: HashSet<String>,
}

impl Ids {
    fn keep(&mut self, raw: &[u8]) {
        if self.ids.len() >= MAX_IDS || raw.is_empty() || raw.len() > MAX_FRAGMENT_BYTES * 4 {
            return;
        }
        let text = self.encoding.decode_without_bom_handling(raw).0;
        self.ids.insert(entities::decode(&text, true).into_owned());
    }
}

impl<'a> Visitor<'a> for Ids {
    fn text(&mut self, _bytes: &'a [u8]) {}

    fn start_tag(&mut self, tag: &Tag<'a>, _content: Option<&'a [u8]>) {
        if let Some(id) = tag.attribute("id") {
            self.keep(id);
        }
        if tag.is("a") {
            if let Some(name) = tag.attribute("name") {
                self.keep(name);
            }
        }
    }
}
