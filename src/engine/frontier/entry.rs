//! Queue entries, leases, holds, and the compact value encoding of an entry.

use serde::{Deserialize, Serialize};

use crate::engine::control::HostKey;
use crate::engine::store::{StoreError, UrlKind};
use crate::engine::telemetry::PRIORITY_LEVELS;

/// One queued URL.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrontierEntry {
    /// The normalized URL.
    pub url: String,
    /// The back queue it waits in.
    pub host: HostKey,
    /// Links followed from a seed to reach it.
    pub depth: u32,
    /// 0 = highest; values above the last level are queued at the last level.
    pub priority: u8,
    /// Redirect hops that led to this URL.
    pub redirects: u8,
    /// A page, or a URL only checked for its status (resource, external).
    #[serde(default)]
    pub kind: UrlKind,
}

/// A URL handed out for fetching. Its queue key stays in the store until
/// `complete`, so a crash re-queues it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// The URL to fetch.
    pub entry: FrontierEntry,
    /// The frontier's handle of the queued row; opaque to the caller.
    pub key: Vec<u8>,
}

/// Reasons a host is not scheduled even though it has queued URLs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Hold {
    /// The operator paused the host.
    Paused,
    /// The host's circuit breaker is open.
    Breaker,
    /// The host's robots.txt is not settled yet.
    Robots,
    /// The crawl gave up on the host.
    Finished,
}

impl Hold {
    pub(crate) fn bit(self) -> u8 {
        match self {
            Hold::Paused => 1,
            Hold::Breaker => 2,
            Hold::Robots => 4,
            Hold::Finished => 8,
        }
    }
}

pub(crate) fn level_of(priority: u8) -> usize {
    (priority as usize).min(PRIORITY_LEVELS - 1)
}

/// Longest host kept in an entry: the top two bits of its length say its kind.
const MAX_HOST_LEN: usize = 0x3fff;
const KIND_SHIFT: u16 = 14;

fn kind_bits(kind: UrlKind) -> u16 {
    match kind {
        UrlKind::Page => 0,
        UrlKind::Resource => 1,
        UrlKind::External => 2,
    }
}

/// `depth u32 BE | priority | redirects | kind:2 host_len:14 u16 BE | host | url`.
/// Entries queued before kinds existed have 0 there: pages.
pub(crate) fn encode(entry: &FrontierEntry) -> Vec<u8> {
    let host = entry.host.as_bytes();
    let host_len = host.len().min(MAX_HOST_LEN);
    let mut out = Vec::with_capacity(8 + host_len + entry.url.len());
    out.extend_from_slice(&entry.depth.to_be_bytes());
    out.push(entry.priority);
    out.push(entry.redirects);
    let len_and_kind = host_len as u16 | kind_bits(entry.kind) << KIND_SHIFT;
    out.extend_from_slice(&len_and_kind.to_be_bytes());
    out.extend_from_slice(&host[..host_len]);
    out.extend_from_slice(entry.url.as_bytes());
    out
}

pub(crate) fn decode(bytes: &[u8]) -> Result<FrontierEntry, StoreError> {
    let corrupt = |message: &str| StoreError::Corrupt {
        what: "frontier entry",
        message: message.to_string(),
    };
    if bytes.len() < 8 {
        return Err(corrupt("shorter than its header"));
    }
    let depth = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    let len_and_kind = u16::from_be_bytes([bytes[6], bytes[7]]);
    let host_len = usize::from(len_and_kind & MAX_HOST_LEN as u16);
    let kind = match len_and_kind >> KIND_SHIFT {
        0 => UrlKind::Page,
        1 => UrlKind::Resource,
        2 => UrlKind::External,
        _ => return Err(corrupt("unknown kind")),
    };
    let rest = &bytes[8..];
    if rest.len() < host_len {
        return Err(corrupt("host runs past the end"));
    }
    let (host, url) = rest.split_at(host_len);
    let text = |b: &[u8]| String::from_utf8(b.to_vec()).map_err(|_| corrupt("not UTF-8"));
    Ok(FrontierEntry {
        url: text(url)?,
        host: text(host)?,
        depth,
        priority: bytes[4],
        redirects: bytes[5],
        kind,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_round_trips_and_rejects_truncation() {
        let e = FrontierEntry {
            url: "http://shop.localhost:4000/a?b=c".into(),
            host: "shop.localhost:4000".into(),
            depth: 7,
            priority: 3,
            redirects: 2,
            kind: UrlKind::Page,
        };
        let bytes = encode(&e);
        assert_eq!(decode(&bytes).unwrap(), e);
        assert!(decode(&bytes[..5]).is_err());
        assert!(decode(&bytes[..10]).is_err());
        for kind in [UrlKind::Resource, UrlKind::External] {
            let checked = FrontierEntry { kind, ..e.clone() };
            assert_eq!(decode(&encode(&checked)).unwrap(), checked);
        }
    }

    #[test]
    fn entries_queued_before_kinds_decode_as_pages() {
        // The earlier layout, written by hand: depth 1, priority 2, no redirects.
        let mut old = vec![0, 0, 0, 1, 2, 0, 0, 4];
        old.extend_from_slice(b"a.lo");
        old.extend_from_slice(b"http://a.lo/x");
        let e = decode(&old).unwrap();
        assert_eq!(
            (e.kind, e.host.as_str(), e.depth),
            (UrlKind::Page, "a.lo", 1)
        );
    }
}
