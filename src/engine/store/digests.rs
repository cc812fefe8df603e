//! Exact duplicates: the first URL stored with each content digest (SHA-1
//! to URL, in the crawl index: a random key per page), and where that
//! payload was first archived, which later copies' WARC revisits name. Most
//! pages are new, so a Bloom filter of the stored digests answers "never
//! stored" from memory and spares a lookup per page.

use std::sync::{Mutex, MutexGuard};

use super::held_rows::HeldRows;
use super::index::Rows;
use super::warc::EarlierCapture;
use super::{Store, StoreError, WarcLocation};
use crate::engine::dedup::BloomFilter;

/// Room in the Bloom filter beyond the digests already stored: past it the
/// filter answers "maybe" more often, never wrongly "no".
const HEADROOM: usize = 1_000_000;
const FP_RATE: f64 = 0.01;

/// The first archived record of a payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FirstCapture {
    pub record: EarlierCapture,
    /// Where that record is: a revisit's page reads its body from there.
    pub at: WarcLocation,
}

/// A row's value: the first URL, then, once archived, its capture's URI,
/// date, file, offset and length, a line each (none of them holds a line
/// break). Rows of earlier versions hold the URL only.
fn encode_row(url: &str, capture: Option<&FirstCapture>) -> Vec<u8> {
    let mut row = url.to_string();
    if let Some(c) = capture {
        let (uri, date, at) = (&c.record.uri, &c.record.date, &c.at);
        row.push_str(&format!(
            "\n{uri}\n{date}\n{}\n{}\n{}",
            at.file, at.offset, at.length
        ));
    }
    row.into_bytes()
}

/// The first URL of a row, and its capture when the row holds one.
fn decode_row(row: &[u8], payload_digest: &str) -> (String, Option<FirstCapture>) {
    let text = String::from_utf8_lossy(row);
    let mut parts = text.split('\n');
    let url = parts.next().unwrap_or_default().to_string();
    let fields: Vec<&str> = parts.collect();
    let capture = match fields[..] {
        [uri, date, file, offset, length] => match (offset.parse(), length.parse()) {
            (Ok(offset), Ok(length)) => Some(FirstCapture {
                record: EarlierCapture {
                    uri: uri.to_string(),
                    date: date.to_string(),
                    payload_digest: Some(payload_digest.to_string()),
                },
                at: WarcLocation {
                    file: file.to_string(),
                    offset,
                    length,
                },
            }),
            _ => None,
        },
        _ => None,
    };
    (url, capture)
}

/// The Bloom filter and the rows not written yet, behind one lock.
#[derive(Default)]
pub(super) struct DigestIndex(Mutex<DigestState>);

#[derive(Default)]
pub(super) struct DigestState {
    /// Filled from the index on first use.
    bloom: Option<BloomFilter>,
    /// First URLs of digests found since the last batch write (`held_rows.rs`).
    pub(super) held: HeldRows,
}

/// Holds a digest's row for the next batch write; reads see it at once.
fn insert_digest_row(state: &mut DigestState, digest: &[u8], row: Vec<u8>) {
    state.held.hold(digest.to_vec(), row);
    note_digest(state, digest);
}

fn note_digest(state: &mut DigestState, digest: &[u8]) {
    state
        .bloom
        .as_mut()
        .expect("loaded by digest_filter")
        .insert(fingerprint(digest));
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
        let mut state = self.digest_filter()?;
        if let Some(row) = self.digest_row(&state, digest)? {
            let (first, _) = decode_row(&row, "");
            return Ok((first != url).then_some(first));
        }
        insert_digest_row(&mut state, digest, encode_row(url, None));
        Ok(None)
    }

    /// Where the payload with `digest` (its `payload_digest` label) was
    /// first archived, if it was.
    pub(crate) fn first_capture(
        &self,
        digest: &[u8],
        payload_digest: &str,
    ) -> Result<Option<FirstCapture>, StoreError> {
        let state = self.digest_filter()?;
        let row = self.digest_row(&state, digest)?;
        Ok(row.and_then(|row| decode_row(&row, payload_digest).1))
    }

    /// Records `url`'s archived record as the first of its payload, unless
    /// the digest already has a first URL (which stays, archived or not).
    /// Whether `url` is now the digest's first URL. A record not yet in its
    /// file (`on_disk` false) is a revisit target at once, but its row is
    /// written only after [`Store::release_digest_rows`].
    pub(crate) fn record_first_capture(
        &self,
        digest: &[u8],
        url: &str,
        capture: &FirstCapture,
        on_disk: bool,
    ) -> Result<bool, StoreError> {
        let mut state = self.digest_filter()?;
        if self.digest_row(&state, digest)?.is_some() {
            return Ok(false);
        }
        let row = encode_row(url, Some(capture));
        if on_disk {
            insert_digest_row(&mut state, digest, row);
        } else {
            state.held.hold_waiting(digest.to_vec(), row);
            note_digest(&mut state, digest);
        }
        Ok(true)
    }

    /// The WARC records of every first capture recorded so far are in their
    /// files: the next write may carry their rows.
    pub(crate) fn release_digest_rows(&self) {
        self.digest_state().held.release();
    }

    /// The digests' state, locked (page threads and the crawl loop share it).
    pub(super) fn digest_state(&self) -> MutexGuard<'_, DigestState> {
        self.inner
            .digests
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// [`Store::digest_state`] with the Bloom filter loaded.
    fn digest_filter(&self) -> Result<MutexGuard<'_, DigestState>, StoreError> {
        let mut state = self.digest_state();
        if state.bloom.is_none() {
            state.bloom = Some(self.load_digests()?);
        }
        Ok(state)
    }

    fn digest_row(
        &self,
        state: &DigestState,
        digest: &[u8],
    ) -> Result<Option<Vec<u8>>, StoreError> {
        let loaded = state.bloom.as_ref().expect("loaded by digest_filter");
        if !loaded.might_contain(fingerprint(digest)) {
            return Ok(None);
        }
        if let Some(row) = state.held.get(digest) {
            return Ok(Some(row.to_vec()));
        }
        let stored = self.inner.index.rows(Rows::Digests).get(digest);
        Ok(stored
            .map_err(StoreError::index("read"))?
            .map(|v| v.to_vec()))
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
}
