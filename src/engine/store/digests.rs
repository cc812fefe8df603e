//! Exact duplicates: the first URL stored with each content digest (SHA-1
//! to URL, in the crawl index: a random key per page). Most pages
//! are new, so a Bloom filter of the stored digests answers "never stored"
//! from memory and spares a lookup per page.

use std::sync::Mutex;

use super::index::{self, Rows};
use super::{Store, StoreError};
use crate::engine::dedup::BloomFilter;

/// Where versions before the index kept the digests: in sled's `meta` tree.
const LEGACY_PREFIX: &[u8] = b"digest/";
/// Room in the Bloom filter beyond the digests already stored: past it the
/// filter answers "maybe" more often, never wrongly "no".
const HEADROOM: usize = 1_000_000;
const FP_RATE: f64 = 0.01;

/// The Bloom filter, filled from the index on first use.
#[derive(Default)]
pub(super) struct DigestIndex(Mutex<Option<BloomFilter>>);

/// The Bloom filter's fingerprint of a SHA-1 (already uniform).
fn fingerprint(digest: &[u8]) -> u64 {
    let mut head = [0u8; 8];
    let n = digest.len().min(8);
    head[..n].copy_from_slice(&digest[..n]);
    u64::from_le_bytes(head)
}

/// Moves the digests an earlier version kept in sled's `meta` tree (as JSON
/// strings) into the index.
pub(super) fn adopt_sled_rows(store: &Store) -> Result<(), StoreError> {
    let meta = &store.inner.meta;
    if meta.scan_prefix(LEGACY_PREFIX).next().is_none() {
        return Ok(());
    }
    index::adopt_sled_rows(
        &store.inner.index,
        Rows::Digests,
        meta,
        LEGACY_PREFIX,
        |json| {
            serde_json::from_slice::<String>(json)
                .map(String::into_bytes)
                .map_err(|e| super::corrupt("content digest", e.to_string()))
        },
    )?;
    let mut removal = sled::Batch::default();
    for item in meta.scan_prefix(LEGACY_PREFIX) {
        let (key, _) = item.map_err(StoreError::sled("digest import"))?;
        removal.remove(key);
    }
    meta.apply_batch(removal)
        .map_err(StoreError::sled("digest import"))
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
        if bloom.might_contain(fp) {
            let stored = self.inner.index.rows(Rows::Digests).get(digest);
            match stored.map_err(StoreError::index("read"))? {
                Some(first) if &*first != url.as_bytes() => {
                    return Ok(Some(String::from_utf8_lossy(&first).into_owned()))
                }
                Some(_) => return Ok(None),
                None => {}
            }
        }
        let row = (digest.to_vec(), Some(url.as_bytes().to_vec()));
        self.inner.index.write(Rows::Digests, [row])?;
        bloom.insert(fp);
        Ok(None)
    }

    fn load_digests(&self) -> Result<BloomFilter, StoreError> {
        let digests = self.inner.index.rows(Rows::Digests);
        // An estimate sizes the filter well enough, without a second scan.
        let mut bloom = BloomFilter::new(digests.approximate_len() + HEADROOM, FP_RATE);
        for guard in digests.iter() {
            let key = guard.key().map_err(StoreError::index("scan"))?;
            bloom.insert(fingerprint(&key));
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

    #[test]
    fn digests_an_earlier_version_kept_in_sled_move_to_the_index() {
        let dir = tempfile::tempdir().unwrap();
        let digest = [9u8; 20];
        {
            let db = sled::open(dir.path().join("db")).unwrap();
            let meta = db.open_tree("meta").unwrap();
            let key = [&b"digest/"[..], &digest].concat();
            meta.insert(key, serde_json::to_vec("http://a.test/old").unwrap())
                .unwrap();
            db.flush().unwrap();
        }
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        assert_eq!(
            store
                .first_url_with_digest(&digest, "http://a.test/new")
                .unwrap()
                .as_deref(),
            Some("http://a.test/old")
        );
        assert!(
            store.inner.meta.scan_prefix(b"digest/").next().is_none(),
            "the sled rows are gone"
        );
    }
}
