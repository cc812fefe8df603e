//! Read-only chunked scans of the queued and parked URLs.

use super::api::{ScanCursor, ScanPage, ScanRange};
use super::entry::decode;
use super::{Frontier, RedisReader};
use crate::engine::store::{keys, Store, StoreError};

/// Reads a frontier's queued and parked URLs without the frontier itself,
/// so a scan can run on another thread.
pub struct FrontierReader(Source);

enum Source {
    /// Every queued URL of the local frontier, leased or in a host's head
    /// buffer, is a row of the store: this reads exactly what
    /// [`Frontier::scan`] reads.
    Local(Store),
    /// The shared frontier, through a connection of the reader's own.
    Redis(Box<RedisReader>),
}

impl FrontierReader {
    pub(super) fn redis(reader: RedisReader) -> Self {
        FrontierReader(Source::Redis(Box::new(reader)))
    }

    /// See [`super::FrontierStore::scan`]; unreadable rows are skipped.
    pub fn scan(
        &mut self,
        range: ScanRange,
        from: Option<&ScanCursor>,
        limit: usize,
    ) -> Result<ScanPage, StoreError> {
        match &mut self.0 {
            Source::Local(store) => scan_local(store, range, from, limit),
            Source::Redis(reader) => reader.scan(range, from, limit),
        }
    }
}

fn scan_local(
    store: &Store,
    range: ScanRange,
    from: Option<&ScanCursor>,
    limit: usize,
) -> Result<ScanPage, StoreError> {
    let prefix = match range {
        ScanRange::Queued => keys::QUEUE,
        ScanRange::Parked => keys::PARKED,
    };
    let rows = store.scan_after(
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

impl Frontier {
    /// A read handle over this frontier's stored URLs.
    pub fn reader(&self) -> FrontierReader {
        FrontierReader(Source::Local(self.store.clone()))
    }

    /// See [`super::FrontierStore::scan`]; unreadable rows are skipped.
    pub fn scan(
        &self,
        range: ScanRange,
        from: Option<&ScanCursor>,
        limit: usize,
    ) -> Result<ScanPage, StoreError> {
        scan_local(&self.store, range, from, limit)
    }
}
