//! Read-only chunked scans of the queued and parked URLs.

use super::api::{ScanCursor, ScanPage, ScanRange};
use super::entry::decode;
use super::Frontier;
use crate::engine::store::{keys, Store, StoreError};

/// Reads the queued and parked URLs of the sled frontier without the
/// frontier itself, so a scan can run on another thread. Every queued URL,
/// leased or in a host's head buffer, is a row of the store, so it reads
/// exactly what [`Frontier::scan`] reads.
#[derive(Clone)]
pub struct FrontierReader {
    store: Store,
}

impl FrontierReader {
    /// See [`super::FrontierStore::scan`]; unreadable rows are skipped.
    pub fn scan(
        &self,
        range: ScanRange,
        from: Option<&ScanCursor>,
        limit: usize,
    ) -> Result<ScanPage, StoreError> {
        let prefix = match range {
            ScanRange::Queued => keys::QUEUE,
            ScanRange::Parked => keys::PARKED,
        };
        let rows = self.store.scan_after(
            &[prefix],
            from.map(|c| c.0.as_slice()),
            limit.max(1),
            |_| false,
        )?;
        let next = match rows.last() {
            Some((last, _)) if rows.len() >= limit.max(1) => Some(ScanCursor(last.clone())),
            _ => None,
        };
        let entries = rows
            .iter()
            .filter_map(|(_, value)| decode(value).ok())
            .collect();
        Ok(ScanPage { entries, next })
    }
}

impl Frontier {
    /// A read handle over this frontier's stored URLs.
    pub fn reader(&self) -> FrontierReader {
        FrontierReader {
            store: self.store.clone(),
        }
    }

    /// See [`super::FrontierStore::scan`]; unreadable rows are skipped.
    pub fn scan(
        &self,
        range: ScanRange,
        from: Option<&ScanCursor>,
        limit: usize,
    ) -> Result<ScanPage, StoreError> {
        self.reader().scan(range, from, limit)
    }
}
