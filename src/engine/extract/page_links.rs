//! A page's links, compact: their URLs in one string and, per link, where it
//! ends and whether it is nofollow. A dense page's 400,000 links as `Url`s
//! in a `Vec` cost ~96 bytes each besides their text (~65 MB with the
//! growth slack); here 4. Extraction writes each URL here as text
//! (`url_norm::resolve_text`) and admission reads it in place
//! (`url_norm::LinkUrl`), parsing none.

/// The top bit of an end offset: the link is nofollow.
const NOFOLLOW: u32 = 1 << 31;
/// URL text a page's links may take here: offsets keep 31 bits.
pub const MAX_TEXT_BYTES: usize = (NOFOLLOW - 1) as usize;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageLinks {
    text: String,
    /// Where each link's URL ends in `text`, with [`NOFOLLOW`].
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
        self.text.capacity() + self.ends.capacity() * size_of::<u32>()
    }

    /// Bytes of the links' URLs.
    #[cfg(test)]
    pub fn text_bytes(&self) -> usize {
        self.text.len()
    }

    /// Adds a link; false (nothing added) if its text would pass [`MAX_TEXT_BYTES`].
    pub fn push(&mut self, url: &str, nofollow: bool) -> bool {
        let end = self.text.len() + url.len();
        if end > MAX_TEXT_BYTES {
            return false;
        }
        let flag = if nofollow { NOFOLLOW } else { 0 };
        self.text.push_str(url);
        self.ends.push(end as u32 | flag);
        true
    }

    pub fn get(&self, i: usize) -> Option<LinkRef<'_>> {
        let end = *self.ends.get(i)?;
        Some(LinkRef {
            url: &self.text[start_of(&self.ends, i)..(end & !NOFOLLOW) as usize],
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
    pub fn iter(&self) -> impl ExactSizeIterator<Item = LinkRef<'_>> + '_ {
        (0..self.len()).map(|i| self.get(i).expect("index in range"))
    }

    /// The URLs of the links not marked nofollow.
    pub fn followed(&self) -> impl Iterator<Item = &str> + '_ {
        self.iter().filter(|l| !l.nofollow).map(|l| l.url)
    }

    /// Gives back the growth slack of a page with many links.
    pub fn shrink_to_fit(&mut self) {
        self.text.shrink_to_fit();
        self.ends.shrink_to_fit();
    }
}

/// Where link `i`'s text starts.
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
    fn links_come_back_in_order_with_their_nofollow() {
        let mut links = PageLinks::default();
        let n = 5;
        for i in 0..n {
            assert!(links.push(&format!("http://h/{i}"), i % 2 == 0));
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
        let followed: Vec<&str> = links.followed().collect();
        assert_eq!(
            followed,
            ["http://h/1", "http://h/2", "http://h/3", "http://h/4"]
        );
    }
}
