//! Queue entries, leases, holds, and the compact value encoding of an entry.

use serde::{Deserialize, Serialize};

use crate::engine::control::HostKey;
use crate::engine::store::StoreError;
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

/// `depth u32 BE | priority | redirects | host_len u16 BE | host | url`.
pub(crate) fn encode(entry: &FrontierEntry) -> Vec<u8> {
    let host = entry.host.as_bytes();
    let host_len = host.len().min(u16::MAX as usize);
    let mut out = Vec::with_capacity(8 + host_len + entry.url.len());
    out.extend_from_slice(&entry.depth.to_be_bytes());
    out.push(entry.priority);
    out.push(entry.redirects);
    out.extend_from_slice(&(host_len as u16).to_be_bytes());
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
    let host_len = u16::from_be_bytes([bytes[6], bytes[7]]) as usize;
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
        };
        let bytes = encode(&e);
        assert_eq!(decode(&bytes).unwrap(), e);
        assert!(decode(&bytes[..5]).is_err());
        assert!(decode(&bytes[..10]).is_err());
    }
}
