//! The quarantine: URLs parked by open trap alerts, grouped by alert, read
//! in one bounded walk (off the crawl loop, like the inspector): from the
//! store, or from Redis for a shared crawl (`read_shared`; the found-on
//! pages are then in the workers' stores, see `cluster::reads`).

use serde::{Deserialize, Serialize};

use crate::engine::frontier::decode_entry as decode;
use crate::engine::frontier::RedisReader;
use crate::engine::store::{keys, Entries, PageOutcome, PageRecord, Store, StoreError};

/// Parked URLs walked at most per read; past it counts are lower bounds.
pub const MAX_SCAN: usize = 200_000;
/// Alerts listed at most.
pub const MAX_ALERTS: usize = 200;
/// URLs listed at most per alert (each costs a referrer lookup).
pub const MAX_URLS_PER_ALERT: usize = 50;
const SCAN_CHUNK: usize = 4_096;

/// Parked URLs by alert, in alert order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Quarantine {
    /// One entry per alert with parked URLs.
    pub alerts: Vec<ParkedByAlert>,
    /// The walk stopped at [`MAX_SCAN`] URLs or [`MAX_ALERTS`] alerts: counts are lower bounds.
    pub cut: bool,
}

/// One alert's parked URLs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParkedByAlert {
    /// The alert's number.
    pub alert_id: u64,
    /// Parked URLs counted for it.
    pub count: u64,
    /// The first of them (at most [`MAX_URLS_PER_ALERT`]).
    pub urls: Vec<ParkedUrl>,
}

/// A parked URL and the page it was found on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParkedUrl {
    /// The URL as the crawl keys it.
    pub url: String,
    /// The first page the link was found on, if the store kept it.
    pub referrer: Option<String>,
    /// The referrer has a fetched page record (so the inspector can show it).
    pub referrer_fetched: bool,
}

/// A parked URL as `crawldeck pages` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParkedEntry {
    /// The alert whose rule parked it.
    pub alert_id: u64,
    /// The URL as the crawl keys it.
    pub url: String,
    /// Its host key.
    pub host: String,
    /// Link hops from a seed.
    pub depth: u32,
    /// The page it was first found on, then up to two more.
    pub found_on: Vec<String>,
}

/// Every parked URL, alert by alert, streamed (memory stays constant
/// however many are parked); each costs one referrer lookup.
pub fn parked_entries(store: &Store) -> Entries<ParkedEntry> {
    let lookup = store.clone();
    Box::new(
        store
            .crawl_rows(&[keys::PARKED], "parked URL scan")
            .filter_map(move |row| {
                row.and_then(|(key, value)| parked_entry(&lookup, &key, &value))
                    .transpose()
            }),
    )
}

/// A parked row as listed, with the page its URL was found on.
fn parked_entry(
    store: &Store,
    key: &[u8],
    value: &[u8],
) -> Result<Option<ParkedEntry>, StoreError> {
    let Some((alert_id, _)) = keys::parse_parked_key(key) else {
        return Ok(None);
    };
    let entry = decode(value)?;
    let found_on = store.referrers(&entry.url)?;
    Ok(Some(ParkedEntry {
        alert_id,
        url: entry.url,
        host: entry.host,
        depth: entry.depth,
        found_on,
    }))
}

/// Reads the quarantine: a bounded walk of the parked URLs.
pub fn read(store: &Store) -> Result<Quarantine, StoreError> {
    let mut out = Quarantine::default();
    let mut after: Option<Vec<u8>> = None;
    let mut scanned = 0;
    loop {
        if scanned >= MAX_SCAN {
            out.cut = true;
            break;
        }
        let rows = store.scan_after(&[keys::PARKED], after.as_deref(), SCAN_CHUNK, |_| false)?;
        let Some((last, _)) = rows.last() else { break };
        after = Some(last.clone());
        scanned += rows.len();
        for (key, value) in rows {
            let Some((alert_id, _)) = keys::parse_parked_key(&key) else {
                continue;
            };
            if !add(store, &mut out, alert_id, &value)? {
                out.cut = true;
                return Ok(out);
            }
        }
    }
    Ok(out)
}

/// Reads the quarantine of the shared crawl `crawl` on the Redis at `url`,
/// without the found-on pages.
pub fn read_shared(url: &crate::engine::RedisUrl, crawl: &str) -> Result<Quarantine, StoreError> {
    let mut reader = RedisReader::for_crawl(url, crawl);
    let (groups, cut) = reader.parked_by_alert(MAX_ALERTS, MAX_URLS_PER_ALERT)?;
    let alerts = groups
        .into_iter()
        .map(|group| ParkedByAlert {
            alert_id: group.alert_id,
            count: group.count,
            urls: group
                .entries
                .into_iter()
                .map(|entry| ParkedUrl {
                    url: entry.url.to_string(),
                    referrer: None,
                    referrer_fetched: false,
                })
                .collect(),
        })
        .collect();
    Ok(Quarantine { alerts, cut })
}

/// Counts one parked entry under its alert; false once too many alerts.
fn add(
    store: &Store,
    out: &mut Quarantine,
    alert_id: u64,
    value: &[u8],
) -> Result<bool, StoreError> {
    if out.alerts.last().map(|a| a.alert_id) != Some(alert_id) {
        if out.alerts.len() >= MAX_ALERTS {
            return Ok(false);
        }
        out.alerts.push(ParkedByAlert {
            alert_id,
            count: 0,
            urls: Vec::new(),
        });
    }
    let group = out.alerts.last_mut().expect("pushed above");
    group.count += 1;
    if group.urls.len() < MAX_URLS_PER_ALERT {
        if let Ok(entry) = decode(value) {
            group.urls.push(parked_url(store, entry.url.to_string())?);
        }
    }
    Ok(true)
}

fn parked_url(store: &Store, url: String) -> Result<ParkedUrl, StoreError> {
    found_on_page(url, |u| store.referrers(u), |page| store.page(page))
}

/// `url` with its first referrer, and whether that page was fetched, read
/// through `referrers` and `page` (a store's, or a running engine's).
pub fn found_on_page(
    url: String,
    referrers: impl FnOnce(&str) -> Result<Vec<String>, StoreError>,
    page: impl FnOnce(&str) -> Result<Option<PageRecord>, StoreError>,
) -> Result<ParkedUrl, StoreError> {
    let referrer = referrers(&url)?.into_iter().next();
    let referrer_fetched = match &referrer {
        Some(found_on) => has_page(page(found_on)?),
        None => false,
    };
    Ok(ParkedUrl {
        url,
        referrer,
        referrer_fetched,
    })
}

/// The inspector can show the record's page.
fn has_page(record: Option<PageRecord>) -> bool {
    record.is_some_and(|record| {
        matches!(
            record.outcome,
            PageOutcome::Fetched { .. } | PageOutcome::Duplicate { .. }
        )
    })
}
