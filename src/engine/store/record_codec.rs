//! The stored form of a page record: compact bytes, not JSON. A crawl writes
//! one record per URL; the database keeps them in its memtables, cache and
//! tables, and rewrites them as it merges its files, so their size is
//! memory, disk and CPU. The URL is the record's
//! key and is not repeated; the host and a canonical equal to the URL are
//! flags; the SHA-1 digest is 20 raw bytes. Records stored as JSON by earlier
//! versions (they start with `{`) still decode.

use super::records::{PageOutcome, PageRecord, UrlKind, WarcLocation};
use crate::engine::page_facts::{ExtractedValues, Hreflang, HtmlFacts, NoindexSource};

/// First byte of a record in this form (JSON starts with `{`).
const FORMAT: u8 = 1;

const HOST_IS_AUTHORITY: u16 = 1 << 0;
const TITLE: u16 = 1 << 1;
const DIGEST_SHA1: u16 = 1 << 2;
const DIGEST_TEXT: u16 = 1 << 3;
const ETAG: u16 = 1 << 4;
const LAST_MODIFIED: u16 = 1 << 5;
const CANONICAL_IS_URL: u16 = 1 << 6;
const CANONICAL: u16 = 1 << 7;
const CONTENT_TYPE: u16 = 1 << 8;
const SIMHASH: u16 = 1 << 9;
const LINKS_FOUND: u16 = 1 << 10;
const WARC: u16 = 1 << 11;
const RESPONSE_MS: u16 = 1 << 12;
const NOINDEX: u16 = 1 << 13;
const FACTS: u16 = 1 << 14;
/// A second flags word follows the first.
const MORE_FLAGS: u16 = 1 << 15;

/// Second word: the URL was only checked, as a resource or an external link.
const KIND_RESOURCE: u16 = 1 << 0;
const KIND_EXTERNAL: u16 = 1 << 1;
/// Second word: values of custom extractions follow the facts.
const CUSTOM: u16 = 1 << 2;
/// Second word: the simhash's second hash follows the simhash.
const SIMHASH_CHECK: u16 = 1 << 3;
/// Second word: the whole text's two hashes follow the second hash.
const SIMHASH_WHOLE: u16 = 1 << 4;
/// Second word: the body was cut at its cap (no field follows).
const TRUNCATED: u16 = 1 << 5;

/// Flags of the facts section, one byte after its start.
const DESCRIPTION: u8 = 1 << 0;
const H1: u8 = 1 << 1;

const SHA1_PREFIX: &str = "sha1:";

/// The stored bytes of `record` (its `url` is the key, not part of them),
/// field by field in `PageRecord`'s order.
pub(crate) fn encode(record: &PageRecord) -> Vec<u8> {
    let mut out = Writer(Vec::with_capacity(160));
    out.0.push(FORMAT);
    let digest = record.content_digest.as_deref().map(|d| (d, sha1_bytes(d)));
    let canonical = record.canonical.as_deref();
    let flags = [
        (
            authority(&record.url) == Some(&record.host),
            HOST_IS_AUTHORITY,
        ),
        (record.title.is_some(), TITLE),
        (matches!(digest, Some((_, Some(_)))), DIGEST_SHA1),
        (matches!(digest, Some((_, None))), DIGEST_TEXT),
        (record.etag.is_some(), ETAG),
        (record.last_modified.is_some(), LAST_MODIFIED),
        (canonical == Some(record.url.as_str()), CANONICAL_IS_URL),
        (canonical.is_some_and(|c| c != record.url), CANONICAL),
        (record.content_type.is_some(), CONTENT_TYPE),
        (record.simhash.is_some(), SIMHASH),
        (record.links_found.is_some(), LINKS_FOUND),
        (record.warc.is_some(), WARC),
        (record.response_ms.is_some(), RESPONSE_MS),
        (record.noindex.is_some(), NOINDEX),
        (record.facts.is_some(), FACTS),
    ]
    .into_iter()
    .filter(|&(on, _)| on)
    .fold(0u16, |flags, (_, bit)| flags | bit);
    let kind = match record.kind {
        UrlKind::Page => 0,
        UrlKind::Resource => KIND_RESOURCE,
        UrlKind::External => KIND_EXTERNAL,
    };
    let check = match record.simhash.and(record.simhash_check) {
        Some(_) if record.simhash_whole.is_some() => SIMHASH_CHECK | SIMHASH_WHOLE,
        Some(_) => SIMHASH_CHECK,
        None => 0,
    };
    let custom = if record.custom.is_empty() { 0 } else { CUSTOM };
    let truncated = if record.truncated { TRUNCATED } else { 0 };
    let more = kind | check | custom | truncated;
    // The second word only when something needs it: records without a
    // fingerprint (redirects, errors, links left out) keep the one word.
    let flags = if more != 0 { flags | MORE_FLAGS } else { flags };
    out.0.extend_from_slice(&flags.to_le_bytes());
    if more != 0 {
        out.0.extend_from_slice(&more.to_le_bytes());
    }

    if flags & HOST_IS_AUTHORITY == 0 {
        out.str(&record.host);
    }
    out.varint(u64::from(record.depth));
    out.varint(record.fetched_at_unix_ms);
    out.outcome(&record.outcome);
    out.opt_str(record.title.as_deref());
    match digest {
        Some((_, Some(raw))) => out.0.extend_from_slice(&raw),
        Some((text, None)) => out.str(text),
        None => {}
    }
    out.opt_str(record.etag.as_deref());
    out.opt_str(record.last_modified.as_deref());
    out.varint(record.bytes);
    out.varint(u64::from(record.outlinks));
    if flags & CANONICAL != 0 {
        out.opt_str(canonical);
    }
    out.varint(u64::from(record.links_dropped));
    out.opt_str(record.content_type.as_deref());
    if let Some(simhash) = record.simhash {
        out.0.extend_from_slice(&simhash.to_le_bytes());
        if let Some(check) = record.simhash_check {
            out.0.extend_from_slice(&check.to_le_bytes());
            for hash in record.simhash_whole.iter().flatten() {
                out.0.extend_from_slice(&hash.to_le_bytes());
            }
        }
    }
    if let Some(found) = record.links_found {
        out.varint(u64::from(found));
    }
    if let Some(warc) = &record.warc {
        out.str(&warc.file);
        out.varint(warc.offset);
        out.varint(warc.length);
    }
    if let Some(ms) = record.response_ms {
        out.varint(u64::from(ms));
    }
    if let Some(source) = record.noindex {
        out.0.push(noindex_byte(source));
    }
    if let Some(facts) = &record.facts {
        out.facts(facts);
    }
    if !record.custom.is_empty() {
        out.custom(&record.custom);
    }
    out.0
}

fn noindex_byte(source: NoindexSource) -> u8 {
    match source {
        NoindexSource::Meta => 1,
        NoindexSource::Header => 2,
        NoindexSource::Both => 3,
    }
}

/// The record stored under `url`'s key.
pub(crate) fn decode(url: &str, bytes: &[u8]) -> Result<PageRecord, String> {
    match bytes.first() {
        Some(&FORMAT) => Reader(&bytes[1..]).record(url),
        Some(b'{') => serde_json::from_slice(bytes).map_err(|e| e.to_string()),
        Some(other) => Err(format!("unknown record format {other}")),
        None => Err("empty record".into()),
    }
}

/// `host[:port]` of an absolute URL, as written in it.
fn authority(url: &str) -> Option<&str> {
    let rest = &url[url.find("://")? + 3..];
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    Some(&rest[..end])
}

/// The 20 bytes of a `sha1:BASE32` digest that encodes back to the same text.
fn sha1_bytes(digest: &str) -> Option<[u8; 20]> {
    let encoded = digest.strip_prefix(SHA1_PREFIX)?;
    let raw: [u8; 20] = data_encoding::BASE32
        .decode(encoded.as_bytes())
        .ok()?
        .try_into()
        .ok()?;
    (data_encoding::BASE32.encode(&raw) == encoded).then_some(raw)
}

struct Writer(Vec<u8>);

impl Writer {
    fn varint(&mut self, mut n: u64) {
        while n >= 0x80 {
            self.0.push(n as u8 | 0x80);
            n >>= 7;
        }
        self.0.push(n as u8);
    }

    fn str(&mut self, s: &str) {
        self.varint(s.len() as u64);
        self.0.extend_from_slice(s.as_bytes());
    }

    fn opt_str(&mut self, s: Option<&str>) {
        if let Some(s) = s {
            self.str(s);
        }
    }

    fn facts(&mut self, facts: &HtmlFacts) {
        let flags = [
            (facts.description.is_some(), DESCRIPTION),
            (facts.h1.is_some(), H1),
        ]
        .into_iter()
        .filter(|&(on, _)| on)
        .fold(0u8, |flags, (_, bit)| flags | bit);
        self.0.push(flags);
        self.opt_str(facts.description.as_deref());
        self.opt_str(facts.h1.as_deref());
        self.varint(u64::from(facts.h1_count));
        self.varint(u64::from(facts.words));
        self.varint(facts.hreflang.len() as u64);
        for alternate in &facts.hreflang {
            self.str(&alternate.lang);
            self.str(&alternate.url);
        }
    }

    fn custom(&mut self, custom: &[ExtractedValues]) {
        self.varint(custom.len() as u64);
        for found in custom {
            self.str(&found.name);
            self.0.push(u8::from(found.cut));
            self.varint(found.values.len() as u64);
            for value in &found.values {
                self.str(value);
            }
        }
    }

    fn outcome(&mut self, outcome: &PageOutcome) {
        match outcome {
            PageOutcome::Fetched { status } => {
                self.0.push(0);
                self.varint(u64::from(*status));
            }
            // Byte 1 was a 304 without its pass, in earlier records.
            PageOutcome::NotModified { pass } => {
                self.0.push(8);
                self.varint(u64::from(*pass));
            }
            PageOutcome::Redirect { status, location } => {
                self.0.push(2);
                self.varint(u64::from(*status));
                self.str(location);
            }
            PageOutcome::Duplicate { of } => {
                self.0.push(3);
                self.str(of);
            }
            PageOutcome::Error { kind, message } => {
                self.0.push(4);
                self.str(kind);
                self.str(message);
            }
            PageOutcome::RobotsDenied => self.0.push(5),
            PageOutcome::Blocked { rule_id, rule } => {
                self.0.push(6);
                self.varint(*rule_id);
                self.str(rule);
            }
            PageOutcome::NotCrawled { reason } => {
                self.0.push(7);
                self.str(reason);
            }
        }
    }
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn record(mut self, url: &str) -> Result<PageRecord, String> {
        let flags = u16::from_le_bytes(self.array()?);
        let has = |bit: u16| flags & bit != 0;
        let more = match has(MORE_FLAGS) {
            true => u16::from_le_bytes(self.array()?),
            false => 0,
        };
        let kind = if more & KIND_RESOURCE != 0 {
            UrlKind::Resource
        } else if more & KIND_EXTERNAL != 0 {
            UrlKind::External
        } else {
            UrlKind::Page
        };
        // The fields are read in the order they are written below, which is
        // `PageRecord`'s order and the order `encode` writes them in.
        let record = PageRecord {
            url: url.to_string(),
            host: match has(HOST_IS_AUTHORITY) {
                true => authority(url)
                    .ok_or("the key is not an absolute URL")?
                    .to_string(),
                false => self.string()?,
            },
            depth: self.small()?,
            fetched_at_unix_ms: self.varint()?,
            outcome: self.outcome()?,
            title: self.opt(has(TITLE), Self::string)?,
            content_digest: match has(DIGEST_SHA1) {
                true => Some(format!(
                    "{SHA1_PREFIX}{}",
                    data_encoding::BASE32.encode(&self.array::<20>()?)
                )),
                false => self.opt(has(DIGEST_TEXT), Self::string)?,
            },
            etag: self.opt(has(ETAG), Self::string)?,
            last_modified: self.opt(has(LAST_MODIFIED), Self::string)?,
            bytes: self.varint()?,
            outlinks: self.small()?,
            canonical: match has(CANONICAL_IS_URL) {
                true => Some(url.to_string()),
                false => self.opt(has(CANONICAL), Self::string)?,
            },
            links_dropped: self.small()?,
            content_type: self.opt(has(CONTENT_TYPE), Self::string)?,
            simhash: self.opt(has(SIMHASH), |r| Ok(u64::from_le_bytes(r.array()?)))?,
            simhash_check: self.opt(has(SIMHASH) && more & SIMHASH_CHECK != 0, |r| {
                Ok(u64::from_le_bytes(r.array()?))
            })?,
            simhash_whole: self.opt(has(SIMHASH) && more & SIMHASH_WHOLE != 0, |r| {
                Ok([
                    u64::from_le_bytes(r.array()?),
                    u64::from_le_bytes(r.array()?),
                ])
            })?,
            truncated: more & TRUNCATED != 0,
            links_found: self.opt(has(LINKS_FOUND), Self::small)?,
            warc: self.opt(has(WARC), |r| {
                Ok(WarcLocation {
                    file: r.string()?,
                    offset: r.varint()?,
                    length: r.varint()?,
                })
            })?,
            response_ms: self.opt(has(RESPONSE_MS), Self::small)?,
            noindex: self.opt(has(NOINDEX), Self::noindex)?,
            facts: self.opt(has(FACTS), Self::facts)?,
            custom: match more & CUSTOM {
                0 => Vec::new(),
                _ => self.custom()?,
            },
            kind,
        };
        if !self.0.is_empty() {
            return Err(format!("{} bytes after the record", self.0.len()));
        }
        Ok(record)
    }

    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        if self.0.len() < n {
            return Err("the record is cut short".into());
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], String> {
        Ok(self.take(N)?.try_into().expect("take returns N bytes"))
    }

    fn byte(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }

    fn varint(&mut self) -> Result<u64, String> {
        let mut n = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.byte()?;
            n |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(n);
            }
        }
        Err("a number longer than 64 bits".into())
    }

    fn small<T: TryFrom<u64>>(&mut self) -> Result<T, String> {
        let n = self.varint()?;
        T::try_from(n).map_err(|_| format!("{n} is out of range"))
    }

    fn string(&mut self) -> Result<String, String> {
        let len = self.small::<usize>()?;
        let bytes = self.take(len)?.to_vec();
        String::from_utf8(bytes).map_err(|_| "a string that is not UTF-8".into())
    }

    /// `read` of a field the flags say is present.
    fn opt<T>(
        &mut self,
        present: bool,
        read: impl FnOnce(&mut Self) -> Result<T, String>,
    ) -> Result<Option<T>, String> {
        present.then(|| read(self)).transpose()
    }

    fn noindex(&mut self) -> Result<NoindexSource, String> {
        Ok(match self.byte()? {
            1 => NoindexSource::Meta,
            2 => NoindexSource::Header,
            3 => NoindexSource::Both,
            other => return Err(format!("unknown noindex source {other}")),
        })
    }

    fn facts(&mut self) -> Result<HtmlFacts, String> {
        let flags = self.byte()?;
        let description = self.opt(flags & DESCRIPTION != 0, Self::string)?;
        let h1 = self.opt(flags & H1 != 0, Self::string)?;
        let h1_count = self.small()?;
        let words = self.small()?;
        let alternates: usize = self.small()?;
        // Each alternate takes at least two bytes: a corrupt count cannot
        // make the reader reserve more than the record holds.
        let mut hreflang = Vec::with_capacity(alternates.min(self.0.len() / 2));
        for _ in 0..alternates {
            hreflang.push(Hreflang {
                lang: self.string()?,
                url: self.string()?,
            });
        }
        Ok(HtmlFacts {
            description,
            h1,
            h1_count,
            words,
            hreflang,
        })
    }

    fn custom(&mut self) -> Result<Vec<ExtractedValues>, String> {
        // Each entry and value takes at least a byte: a corrupt count cannot
        // make the reader reserve more than the record holds.
        let entries: usize = self.small()?;
        let mut custom = Vec::with_capacity(entries.min(self.0.len()));
        for _ in 0..entries {
            let name = self.string()?;
            let cut = self.byte()? != 0;
            let count: usize = self.small()?;
            let mut values = Vec::with_capacity(count.min(self.0.len()));
            for _ in 0..count {
                values.push(self.string()?);
            }
            custom.push(ExtractedValues { name, values, cut });
        }
        Ok(custom)
    }

    fn outcome(&mut self) -> Result<PageOutcome, String> {
        Ok(match self.byte()? {
            0 => PageOutcome::Fetched {
                status: self.small()?,
            },
            1 => PageOutcome::NotModified { pass: 0 },
            8 => PageOutcome::NotModified {
                pass: self.small()?,
            },
            2 => PageOutcome::Redirect {
                status: self.small()?,
                location: self.string()?,
            },
            3 => PageOutcome::Duplicate { of: self.string()? },
            4 => PageOutcome::Error {
                kind: self.string()?,
                message: self.string()?,
            },
            5 => PageOutcome::RobotsDenied,
            6 => PageOutcome::Blocked {
                rule_id: self.varint()?,
                rule: self.string()?,
            },
            7 => PageOutcome::NotCrawled {
                reason: self.string()?,
            },
            other => return Err(format!("unknown outcome {other}")),
        })
    }
}

#[cfg(test)]
#[path = "record_codec_tests.rs"]
mod tests;
