//! A page's links, compact: their URLs in one string and, per link, where it
//! ends and whether it is nofollow. A dense page's 400,000 links as `Url`s
//! in a `Vec` cost ~96 bytes each besides their text (~65 MB with the
//! growth slack); here 4. Admission parses them back a chunk at a time
//! (`coordinator::links`). The first [`PARSED_LINKS`] stay parsed: a normal
//! page's links reach admission as extraction resolved them, parsed once.

use url::Url;

/// Links kept as `Url`s before the rest go into the text (~0.5 MB at most).
pub const PARSED_LINKS: usize = 4096;
/// The top bit of an end offset: the link is nofollow.
const NOFOLLOW: u32 = 1 << 31;
/// URL text a page's links may take here: offsets keep 31 bits.
pub const MAX_TEXT_BYTES: usize = (NOFOLLOW - 1) as usize;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageLinks {
    /// The first links (at most [`PARSED_LINKS`]); their text is not in `text`.
    parsed: Vec<Url>,
    text: String,
    /// Where each link's URL ends in `text` (0 for a parsed one), with [`NOFOLLOW`].
    ends: Vec<u32>,
}

/// One link of a [`PageLinks`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkRef<'a> {
    /// Absolute and normalized.
    pub url: &'a str,
    /// `rel="nofollow"` on every occurrence of this URL.
    pub nofollow: bool,
}

impl PageLinks {
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Bytes allocated, by capacity: what the links cost in memory.
    #[cfg(test)]
    pub fn heap_bytes(&self) -> usize {
        let parsed: usize = self.parsed.iter().map(|u| u.as_str().len()).sum();
        self.parsed.capacity() * size_of::<Url>()
            + parsed
            + self.text.capacity()
            + self.ends.capacity() * size_of::<u32>()
    }

    /// Bytes of URL text beyond the parsed links.
    #[cfg(test)]
    pub fn text_bytes(&self) -> usize {
        self.text.len()
    }

    /// Adds a link; false (nothing added) if its text would pass [`MAX_TEXT_BYTES`].
    pub fn push(&mut self, url: Url, nofollow: bool) -> bool {
        let flag = if nofollow { NOFOLLOW } else { 0 };
        if self.text.is_empty() && self.parsed.len() < PARSED_LINKS {
            self.parsed.push(url);
            self.ends.push(flag);
            return true;
        }
        let end = self.text.len() + url.as_str().len();
        if end > MAX_TEXT_BYTES {
            return false;
        }
        self.text.push_str(url.as_str());
        self.ends.push(end as u32 | flag);
        true
    }

    pub fn get(&self, i: usize) -> Option<LinkRef<'_>> {
        let end = *self.ends.get(i)?;
        let url = match self.parsed.get(i) {
            Some(url) => url.as_str(),
            None => &self.text[start_of(&self.ends, i)..(end & !NOFOLLOW) as usize],
        };
        Some(LinkRef {
            url,
            nofollow: end & NOFOLLOW != 0,
        })
    }

    /// Link `i` was found once more: it stays nofollow only if this
    /// occurrence is too.
    pub fn found_again(&mut self, i: usize, nofollow: bool) {
        if !nofollow {
            if let Some(end) = self.ends.get_mut(i) {
                *end &= !NOFOLLOW;
            }
        }
    }

    /// In the order they were added.
    #[cfg(test)]
    pub fn iter(&self) -> impl ExactSizeIterator<Item = LinkRef<'_>> + '_ {
        (0..self.len()).map(|i| self.get(i).expect("index in range"))
    }

    /// The links not marked nofollow, as `Url`s: the parsed ones as they
    /// are, the others parsed again as they are taken.
    pub fn into_followed(self) -> impl Iterator<Item = Url> {
        let PageLinks { parsed, text, ends } = self;
        let followed = |end: u32| end & NOFOLLOW == 0;
        let parsed_len = parsed.len();
        let first: Vec<Url> = parsed
            .into_iter()
            .zip(&ends)
            .filter(|(_, &end)| followed(end))
            .map(|(url, _)| url)
            .collect();
        let rest = (parsed_len..ends.len()).filter_map(move |i| {
            let end = ends[i];
            let text = &text[start_of(&ends, i)..(end & !NOFOLLOW) as usize];
            // A URL extraction serialized parses again to the same URL.
            followed(end).then(|| Url::parse(text).ok()).flatten()
        });
        first.into_iter().chain(rest)
    }

    /// Gives back the growth slack of a page with many links.
    pub fn shrink_to_fit(&mut self) {
        self.parsed.shrink_to_fit();
        self.text.shrink_to_fit();
        self.ends.shrink_to_fit();
    }
}

/// Where link `i`'s text starts (a parsed link's text ends at 0).
fn start_of(ends: &[u32], i: usize) -> usize {
    match i {
        0 => 0,
        _ => (ends[i - 1] & !NOFOLLOW) as usize,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_come_back_in_order_with_their_nofollow_parsed_or_not() {
        let mut links = PageLinks::default();
        let n = PARSED_LINKS + 3;
        for i in 0..n {
            let url = Url::parse(&format!("http://h/{i}")).unwrap();
            assert!(links.push(url, i % 2 == 0));
        }
        links.found_again(PARSED_LINKS + 2, false);
        links.found_again(2, false);
        links.found_again(0, true);
        let got: Vec<_> = links
            .iter()
            .map(|l| (l.url.to_string(), l.nofollow))
            .collect();
        let expected: Vec<_> = (0..n)
            .map(|i| (format!("http://h/{i}"), i % 2 == 0 && i != 2 && i != n - 1))
            .collect();
        assert_eq!(got, expected);
        assert_eq!(links.get(n), None);
        assert_eq!(links.text_bytes(), 3 * "http://h/4096".len());
        let followed: Vec<String> = links.into_followed().map(String::from).collect();
        let expected: Vec<String> = expected
            .into_iter()
            .filter(|(_, nofollow)| !nofollow)
            .map(|(url, _)| url)
            .collect();
        assert_eq!(followed, expected);
    }
}
