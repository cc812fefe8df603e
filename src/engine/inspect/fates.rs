//! What the crawl did with each link of an inspected page, from what the
//! store keeps: page records, parked URLs, seen marks and links left out.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use super::html::FoundLink;
use super::InspectedLink;
use crate::engine::frontier::decode_entry as decode;
use crate::engine::store::{keys, FilterReason, PageOutcome, Store, StoreError};

/// Parked URLs looked through at most per inspection; past it a parked
/// link shows as queued.
const MAX_PARKED_SCAN: usize = 200_000;
const SCAN_CHUNK: usize = 4_096;

/// What became of a link.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum LinkFate {
    /// Followed and fetched (or otherwise recorded): its record's outcome.
    Fetched {
        /// The outcome's word (`fetched`, `redirect`, `error`, …).
        outcome: String,
        /// The HTTP status, if it had one.
        status: Option<u16>,
    },
    /// Followed: waiting in the frontier.
    Queued,
    /// Not fetched: an operator rule (or an accepted alert's rule) blocks it.
    BlockedByRule {
        /// The rule's number.
        rule_id: u64,
    },
    /// Quarantined by an open trap alert.
    ParkedByAlert {
        /// The alert's number.
        alert_id: u64,
    },
    /// Left out by the crawl's settings: `scope`, `depth` or `extension`.
    Filtered {
        /// The reason's word.
        reason: String,
    },
    /// Never queued: `rel=nofollow`, past the per-page link cap, a private
    /// address or an unusable URL.
    NotFollowed {
        /// Why, when known.
        reason: String,
    },
}

impl LinkFate {
    /// The fate in words, for lists.
    pub fn label(&self) -> String {
        match self {
            LinkFate::Fetched {
                outcome,
                status: Some(s),
            } => format!("followed: {outcome} {s}"),
            LinkFate::Fetched { outcome, .. } => format!("followed: {outcome}"),
            LinkFate::Queued => "followed: queued".into(),
            LinkFate::BlockedByRule { rule_id } => format!("blocked by rule #{rule_id}"),
            LinkFate::ParkedByAlert { alert_id } => format!("parked by alert #{alert_id}"),
            LinkFate::Filtered { reason } => format!("filtered: {reason}"),
            LinkFate::NotFollowed { reason } => format!("not followed: {reason}"),
        }
    }
}

/// The fate of each link, in the links' order.
pub(super) fn of_links(
    store: &Store,
    links: Vec<FoundLink>,
) -> Result<Vec<InspectedLink>, StoreError> {
    let mut fates: Vec<Option<LinkFate>> = Vec::with_capacity(links.len());
    let mut unknown = HashSet::new();
    for link in &links {
        let fate = recorded_fate_any_order(store, &link.url)?;
        if fate.is_none() {
            unknown.insert(link.url.as_str());
        }
        fates.push(fate);
    }
    let parked = parked_alerts(store, &unknown)?;
    let mut out = Vec::with_capacity(links.len());
    for (link, fate) in links.iter().zip(fates) {
        let fate = match fate {
            Some(fate) => fate,
            None => unrecorded_fate(store, link, &parked)?,
        };
        out.push(InspectedLink {
            url: link.url.clone(),
            fate,
        });
    }
    Ok(out)
}

/// The fate of a URL the crawl found but has no page record of (parked,
/// queued, left out); `None` if the crawl never met it.
pub(super) fn of_unrecorded(store: &Store, url: &str) -> Result<Option<LinkFate>, StoreError> {
    let link = FoundLink {
        url: url.to_string(),
        nofollow: false,
    };
    let parked = parked_alerts(store, &HashSet::from([url]))?;
    match unrecorded_fate(store, &link, &parked)? {
        LinkFate::NotFollowed { .. } => Ok(None),
        fate => Ok(Some(fate)),
    }
}

/// The fate of the URL's record, or of the record of the same URL with its
/// query parameters sorted: the seen set takes them as one URL, so only the
/// first order found is fetched (the sorted one is the usual first).
fn recorded_fate_any_order(store: &Store, url: &str) -> Result<Option<LinkFate>, StoreError> {
    if let Some(fate) = recorded_fate(store, url)? {
        return Ok(Some(fate));
    }
    let Some(sorted) = crate::engine::dedup::sorted_query(url) else {
        return Ok(None);
    };
    Ok(recorded_fate(store, &sorted)?.map(|fate| match fate {
        LinkFate::Fetched { outcome, status } => LinkFate::Fetched {
            outcome: format!("{outcome} (as {sorted})"),
            status,
        },
        other => other,
    }))
}

/// The fate a page record says.
fn recorded_fate(store: &Store, url: &str) -> Result<Option<LinkFate>, StoreError> {
    let Some(record) = store.page(url)? else {
        return Ok(None);
    };
    Ok(Some(match record.outcome {
        PageOutcome::Blocked { rule_id, .. } => LinkFate::BlockedByRule { rule_id },
        PageOutcome::Fetched { status } | PageOutcome::Redirect { status, .. } => {
            LinkFate::Fetched {
                outcome: record.outcome.label().into(),
                status: Some(status),
            }
        }
        other => LinkFate::Fetched {
            outcome: other.label().into(),
            status: None,
        },
    }))
}

/// A link without a page record: parked, queued, left out, or never taken.
fn unrecorded_fate(
    store: &Store,
    link: &FoundLink,
    parked: &HashMap<String, u64>,
) -> Result<LinkFate, StoreError> {
    if let Some(&alert_id) = parked.get(&link.url) {
        return Ok(LinkFate::ParkedByAlert { alert_id });
    }
    if store.seen_contains(keys::url_fingerprint(&link.url))? {
        return Ok(LinkFate::Queued);
    }
    if let Some(filtered) = store.filtered_url(&link.url)? {
        return Ok(match filtered.reason {
            FilterReason::Rule(rule_id) => LinkFate::BlockedByRule { rule_id },
            reason => LinkFate::Filtered {
                reason: reason.label().into(),
            },
        });
    }
    let reason = if link.nofollow {
        "rel=nofollow"
    } else {
        "past the link cap, a private address, or the page's links were not followed"
    };
    Ok(LinkFate::NotFollowed {
        reason: reason.into(),
    })
}

/// The alert parking each of `urls`, from a bounded walk of the parked URLs.
fn parked_alerts(store: &Store, urls: &HashSet<&str>) -> Result<HashMap<String, u64>, StoreError> {
    let mut found = HashMap::new();
    if urls.is_empty() {
        return Ok(found);
    }
    let mut after: Option<Vec<u8>> = None;
    let mut scanned = 0;
    while scanned < MAX_PARKED_SCAN {
        let rows = store.scan_after(&[keys::PARKED], after.as_deref(), SCAN_CHUNK, |_| false)?;
        let Some((last, _)) = rows.last() else { break };
        after = Some(last.clone());
        scanned += rows.len();
        for (key, value) in rows {
            let (Some((alert, _)), Ok(entry)) = (keys::parse_parked_key(&key), decode(&value))
            else {
                continue;
            };
            if urls.contains(entry.url.as_str()) {
                found.insert(entry.url.to_string(), alert);
            }
        }
    }
    Ok(found)
}
