//! Exact duplicates: the first URL stored with each content digest, under
//! `meta/digest/SHA1`. Most pages are new, so a Bloom filter of the stored
//! digests answers "never stored" from memory and spares a lookup per page.

use std::sync::Mutex;

use super::{Store, StoreError, Tree};
use crate::engine::dedup::BloomFilter;

const KEY_PREFIX: &[u8] = b"digest/";
/// Room in the Bloom filter beyond the digests already stored: past it the
/// filter answers "maybe" more often, never wrongly "no".
const HEADROOM: usize = 1_000_000;
const FP_RATE: f64 = 0.01;

/// The Bloom filter, filled from the store on first use.
#[derive(Default)]
pub(super) struct DigestIndex(Mutex<Option<BloomFilter>>);

fn digest_key(digest: &[u8]) -> Vec<u8> {
    [KEY_PREFIX, digest].concat()
}

/// The Bloom filter's fingerprint of a SHA-1 (already uniform).
fn fingerprint(digest: &[u8]) -> u64 {
    let mut head = [0u8; 8];
    let n = digest.len().min(8);
    head[..n].copy_from_slice(&digest[..n]);
    u64::from_le_bytes(head)
}

impl Store {
    /// Exact-duplicate check: remembers the first URL stored with a content
    /// digest and returns it when `url` is another one.
    pub(crate) fn first_url_with_digest(
        &self,
        digest: &[u8],
        url: &str,
    ) -> Result<Option<String>, StoreError> {
        let mut index = self
            .inner
            .digests
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if index.is_none() {
            *index = Some(self.load_digests()?);
        }
        let bloom = index.as_mut().expect("loaded above");
        let fp = fingerprint(digest);
        let key = digest_key(digest);
        if bloom.might_contain(fp) {
            match self.get::<String>(Tree::Meta, &key)? {
                Some(first) if first != url => return Ok(Some(first)),
                Some(_) => return Ok(None),
                None => {}
            }
        }
        self.put(Tree::Meta, &key, &url.to_string())?;
        bloom.insert(fp);
        Ok(None)
    }

    fn load_digests(&self) -> Result<BloomFilter, StoreError> {
        let scan = || self.inner.meta.scan_prefix(KEY_PREFIX);
        let mut stored = 0usize;
        for item in scan() {
            item.map_err(StoreError::sled("digest scan"))?;
            stored += 1;
        }
        let mut bloom = BloomFilter::new(stored + HEADROOM, FP_RATE);
        for item in scan() {
            let (key, _) = item.map_err(StoreError::sled("digest scan"))?;
            bloom.insert(fingerprint(&key[KEY_PREFIX.len()..]));
        }
        Ok(bloom)
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::store::Store;

    #[test]
    fn the_first_url_of_a_digest_survives_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let digest = [7u8; 20];
        {
            let store = Store::open(dir.path(), 1 << 20).unwrap();
            assert_eq!(
                store
                    .first_url_with_digest(&digest, "http://a.test/1")
                    .unwrap(),
                None
            );
            assert_eq!(
                store
                    .first_url_with_digest(&digest, "http://a.test/1")
                    .unwrap(),
                None
            );
            assert_eq!(
                store
                    .first_url_with_digest(&digest, "http://a.test/2")
                    .unwrap()
                    .as_deref(),
                Some("http://a.test/1")
            );
            assert_eq!(
                store
                    .first_url_with_digest(&[8u8; 20], "http://a.test/3")
                    .unwrap(),
                None
            );
            store.flush().unwrap();
        }
        // A new process fills its filter from the store: the digest is still known.
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        assert_eq!(
            store
                .first_url_with_digest(&digest, "http://a.test/4")
                .unwrap()
                .as_deref(),
            Some("http://a.test/1")
        );
        assert_eq!(
            store
                .first_url_with_digest(&[8u8; 20], "http://a.test/5")
                .unwrap()
                .as_deref(),
            Some("http://a.test/3")
        );
    }
}
