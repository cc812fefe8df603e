//! A page's links, compact: their URLs in one string and, per link, where it
//! ends, whether it is nofollow, where its parts are and its fingerprint. A
//! dense page's 400,000 links as `Url`s in a `Vec` cost ~96 bytes each
//! besides their text (~65 MB with the growth slack); here 24. Extraction
//! writes each URL here as text (`url_norm::resolve_text`), noting its
//! shape and fingerprint on the way, and admission reads it in place
//! (`url_norm::LinkUrl`), parsing and hashing none again.

use crate::engine::url_norm::{ShortShape, UrlShape};

/// The top bit of an end offset: the link is nofollow.
const NOFOLLOW: u32 = 1 << 31;
/// URL text a page's links may take here: offsets keep 31 bits.
pub const MAX_TEXT_BYTES: usize = (NOFOLLOW - 1) as usize;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageLinks {
    text: String,
    links: Vec<Link>,
}

/// What is kept of a link besides its text: 24 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Link {
    /// Where its URL ends in `text`, with [`NOFOLLOW`].
    end: u32,
    /// Where its parts are, `None` for a URL too long to say in 16 bits.
    shape: Option<ShortShape>,
    /// Its `url_fingerprint`.
    fingerprint: u64,
}

const _: () = assert!(size_of::<Link>() == 24);

/// One link of a [`PageLinks`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkRef<'a> {
    /// Absolute and normalized.
    pub url: &'a str,
    /// `rel="nofollow"` on every occurrence of this URL.
    pub nofollow: bool,
    /// Its `url_fingerprint`.
    pub fingerprint: u64,
    /// Where its parts are in `url`, `None` for one past 65,535 bytes.
    pub shape: Option<ShortShape>,
}

impl PageLinks {
    pub fn len(&self) -> usize {
        self.links.len()
    }

    pub fn is_empty(&self) -> bool {
        self.links.is_empty()
    }

    /// Bytes allocated, by capacity: what the links cost in memory.
    #[cfg(test)]
    pub fn heap_bytes(&self) -> usize {
        self.text.capacity() + self.links.capacity() * size_of::<Link>()
    }

    /// Bytes of the links' URLs.
    #[cfg(test)]
    pub fn text_bytes(&self) -> usize {
        self.text.len()
    }

    /// Adds a link, with its fingerprint and shape; false (nothing added)
    /// if its text would pass [`MAX_TEXT_BYTES`].
    pub fn push(&mut self, url: &str, nofollow: bool, fingerprint: u64, shape: UrlShape) -> bool {
        let end = self.text.len() + url.len();
        if end > MAX_TEXT_BYTES {
            return false;
        }
        let flag = if nofollow { NOFOLLOW } else { 0 };
        self.text.push_str(url);
        self.links.push(Link {
            end: end as u32 | flag,
            shape: shape.short(),
            fingerprint,
        });
        true
    }

    pub fn get(&self, i: usize) -> Option<LinkRef<'_>> {
        let link = self.links.get(i)?;
        Some(LinkRef {
            url: &self.text[start_of(&self.links, i)..(link.end & !NOFOLLOW) as usize],
            nofollow: link.end & NOFOLLOW != 0,
            fingerprint: link.fingerprint,
            shape: link.shape,
        })
    }

    /// Link `i` was found once more: it stays nofollow only if this
    /// occurrence is too.
    pub fn found_again(&mut self, i: usize, nofollow: bool) {
        if !nofollow {
            if let Some(link) = self.links.get_mut(i) {
                link.end &= !NOFOLLOW;
            }
        }
    }

    /// In the order they were added.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = LinkRef<'_>> + '_ {
        (0..self.len()).map(|i| self.get(i).expect("index in range"))
    }

    /// The links not marked nofollow.
    pub fn followed(&self) -> impl Iterator<Item = LinkRef<'_>> + '_ {
        self.iter().filter(|l| !l.nofollow)
    }

    /// Gives back the growth slack of a page with many links.
    pub fn shrink_to_fit(&mut self) {
        self.text.shrink_to_fit();
        self.links.shrink_to_fit();
    }
}

/// Where link `i`'s text starts.
fn start_of(links: &[Link], i: usize) -> usize {
    match i {
        0 => 0,
        _ => (links[i - 1].end & !NOFOLLOW) as usize,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::dedup::url_fingerprint;

    #[test]
    fn links_come_back_in_order_with_their_nofollow() {
        let mut links = PageLinks::default();
        let n = 5;
        for i in 0..n {
            let url = format!("http://h/{i}");
            let fingerprint = url_fingerprint(&url);
            assert!(links.push(&url, i % 2 == 0, fingerprint, UrlShape::of(&url)));
        }
        links.found_again(4, false);
        links.found_again(2, false);
        links.found_again(0, true);
        let got: Vec<_> = links
            .iter()
            .map(|l| (l.url.to_string(), l.nofollow))
            .collect();
        let expected: Vec<_> = (0..n).map(|i| (format!("http://h/{i}"), i == 0)).collect();
        assert_eq!(got, expected);
        assert_eq!(links.get(n), None);
        assert_eq!(links.text_bytes(), n * "http://h/0".len());
        let followed: Vec<&str> = links.followed().map(|l| l.url).collect();
        assert_eq!(
            followed,
            ["http://h/1", "http://h/2", "http://h/3", "http://h/4"]
        );
    }
}
