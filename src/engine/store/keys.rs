//! Key layout of the crawl tree. Queue, seen marks, page records and parked
//! URLs share one keyspace of the crawl index (fjall, see `index.rs`) so that
//! a page's completion, the removal of its queue key and its new outlinks are
//! one atomic write batch.
//!
//! - `f <host> 0x00 <priority u8> <seq u64 BE>` — a queued URL; one host is one ordered range
//! - `s <fingerprint u64 BE>`                    — a URL that was ever admitted
//! - `p <url>`                                    — the page record of a URL that left the queue
//! - `k <alert u64 BE> <seq u64 BE>`              — a URL parked by a trap alert
//! - `m <name>`                                   — counters written in the same batches
//! - `h <pass u32 BE> <host>`                     — a host's figures, written with the counters
//! - `x <url>`                                    — the sitemap that listed a URL (`sitemaps.rs`)
//! - `o <pass u32 BE> <url>`                      — a URL's record before recrawl pass `pass` rewrote it (`previous.rs`)

pub(crate) const QUEUE: u8 = b'f';
pub(crate) const SEEN: u8 = b's';
pub(crate) const PAGE: u8 = b'p';
pub(crate) const PARKED: u8 = b'k';
pub(crate) const HOST_FIGURES: u8 = b'h';
pub(crate) const SITEMAP: u8 = b'x';
pub(crate) const PREVIOUS: u8 = b'o';

pub(crate) const META_SEQ: &[u8] = b"mseq";
/// Nonzero once any page record was written (earlier versions kept the
/// exact count, which cost a lookup of every record written).
pub(crate) const META_PAGES: &[u8] = b"mpages";
/// The crawl's counters and elapsed time, written with each group of pages
/// so that a budget survives `kill -9`.
pub(crate) const META_COUNTERS: &[u8] = b"mcounters";
pub(crate) const META_ELAPSED: &[u8] = b"melapsed";

/// Prefix of the host figures of recrawl pass `pass` (each pass counts anew).
pub(crate) fn host_figures_prefix(pass: u32) -> Vec<u8> {
    let mut key = vec![HOST_FIGURES];
    key.extend_from_slice(&pass.to_be_bytes());
    key
}

/// Key of one host's figures in recrawl pass `pass`.
pub(crate) fn host_figures_key(pass: u32, host: &str) -> Vec<u8> {
    let mut key = host_figures_prefix(pass);
    key.extend_from_slice(host.as_bytes());
    key
}

/// Prefix of the records recrawl pass `pass` kept from the pass before.
pub(crate) fn previous_prefix(pass: u32) -> Vec<u8> {
    let mut key = vec![PREVIOUS];
    key.extend_from_slice(&pass.to_be_bytes());
    key
}

/// Length of the `<priority><seq>` suffix of a queue key.
const QUEUE_SUFFIX: usize = 9;

/// Queue key of one URL.
pub fn queue_key(host: &str, priority: u8, seq: u64) -> Vec<u8> {
    let mut key = queue_prefix(host);
    key.push(priority);
    key.extend_from_slice(&seq.to_be_bytes());
    key
}

/// Prefix shared by every queued URL of `host` (host names never contain 0x00).
pub fn queue_prefix(host: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(host.len() + 2 + QUEUE_SUFFIX);
    key.push(QUEUE);
    key.extend_from_slice(host.as_bytes());
    key.push(0);
    key
}

/// `(priority, seq)` of a queue key, `None` if the key is malformed.
pub fn parse_queue_key(key: &[u8]) -> Option<(u8, u64)> {
    if key.len() < QUEUE_SUFFIX + 2 || key[0] != QUEUE {
        return None;
    }
    let suffix = &key[key.len() - QUEUE_SUFFIX..];
    let seq = u64::from_be_bytes(suffix[1..].try_into().ok()?);
    Some((suffix[0], seq))
}

/// Parked key of one URL.
pub fn parked_key(alert_id: u64, seq: u64) -> Vec<u8> {
    let mut key = parked_prefix(alert_id);
    key.extend_from_slice(&seq.to_be_bytes());
    key
}

pub fn parked_prefix(alert_id: u64) -> Vec<u8> {
    let mut key = Vec::with_capacity(17);
    key.push(PARKED);
    key.extend_from_slice(&alert_id.to_be_bytes());
    key
}

/// `(alert_id, seq)` of a parked key.
pub fn parse_parked_key(key: &[u8]) -> Option<(u64, u64)> {
    if key.len() != 17 || key[0] != PARKED {
        return None;
    }
    let alert = u64::from_be_bytes(key[1..9].try_into().ok()?);
    let seq = u64::from_be_bytes(key[9..17].try_into().ok()?);
    Some((alert, seq))
}

pub(crate) fn seen_key(fp: u64) -> [u8; 9] {
    let mut key = [SEEN; 9];
    key[1..].copy_from_slice(&fp.to_be_bytes());
    key
}

pub(crate) fn page_key(url: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(url.len() + 1);
    key.push(PAGE);
    key.extend_from_slice(url.as_bytes());
    key
}

pub(crate) fn sitemap_key(url: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(url.len() + 1);
    key.push(SITEMAP);
    key.extend_from_slice(url.as_bytes());
    key
}

/// Seen marks are keyed by the one URL fingerprint the engine uses.
pub use crate::engine::dedup::url_fingerprint;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_keys_order_by_host_then_priority_then_seq() {
        let a = queue_key("a.example", 1, 5);
        let b = queue_key("a.example", 0, 900);
        let c = queue_key("a.example", 1, 6);
        let other = queue_key("a.example.org", 0, 0);
        assert!(b < a && a < c);
        assert!(!other.starts_with(&queue_prefix("a.example")));
        assert_eq!(parse_queue_key(&a), Some((1, 5)));
        assert_eq!(parse_queue_key(b"f"), None);
    }

    #[test]
    fn parked_keys_round_trip() {
        let key = parked_key(7, 42);
        assert_eq!(parse_parked_key(&key), Some((7, 42)));
        assert!(key.starts_with(&parked_prefix(7)));
        assert_eq!(parse_parked_key(&key[..16]), None);
    }
}
