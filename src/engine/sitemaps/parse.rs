//! Sitemap files (sitemaps.org 0.9): `<urlset>` of `<url>` and
//! `<sitemapindex>` of `<sitemap>`, each with `<loc>` and `<lastmod>`,
//! possibly gzip-compressed. The bytes come from the network: decompression
//! stops at `max_bytes`, entries at `max_urls`, one `<loc>` at
//! [`MAX_LOC_BYTES`]; quick-xml expands no DTD entities (no entity bombs)
//! and keeps no tree, so memory is the body and the entries kept.

use std::io::Read;

use quick_xml::events::{BytesRef, Event};
use quick_xml::Reader;

/// A `<loc>` longer than this is skipped (no URL the crawl keeps is as long).
pub const MAX_LOC_BYTES: usize = 8 * 1024;
/// A `<lastmod>` longer than this is not a date.
const MAX_LASTMOD_BYTES: usize = 64;
/// gzip's magic bytes: a `.xml.gz` is often served as an opaque file, so the
/// body says whether it is compressed, not the Content-Type.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// How much of one file is read.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Bytes of XML, after decompression.
    pub max_bytes: u64,
    /// Entries kept; later ones are counted in [`Parsed::cut`].
    pub max_urls: usize,
}

/// Which kind of sitemap a file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `<urlset>`: pages.
    UrlSet,
    /// `<sitemapindex>`: more sitemap files.
    Index,
}

/// One entry: a `<loc>` and its `<lastmod>`, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loc {
    pub url: String,
    pub lastmod: Option<String>,
}

/// A file read whole (up to the limits).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    pub kind: Kind,
    pub locs: Vec<Loc>,
    /// Entries past `max_urls`, not kept.
    pub cut: u64,
    /// Entries with no `<loc>` or one too long, skipped.
    pub skipped: u64,
}

/// Why a file is no sitemap the crawl can use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("larger than {limit} bytes (sitemaps.max_bytes) after decompression")]
    TooLarge { limit: u64 },
    #[error("bad gzip data: {0}")]
    Gzip(String),
    #[error("malformed XML at byte {at}: {message}")]
    Xml { at: u64, message: String },
    #[error("not a sitemap: the root element is <{0}>, not <urlset> or <sitemapindex>")]
    NotASitemap(String),
    #[error("not a sitemap: no XML element")]
    Empty,
}

/// Reads a sitemap file's body, gunzipped first if it is gzip.
pub fn parse(body: &[u8], limits: Limits) -> Result<Parsed, ParseError> {
    if body.starts_with(&GZIP_MAGIC) {
        let xml = gunzip(body, limits.max_bytes)?;
        return parse_xml(&xml, limits);
    }
    if body.len() as u64 > limits.max_bytes {
        return Err(ParseError::TooLarge {
            limit: limits.max_bytes,
        });
    }
    parse_xml(body, limits)
}

/// Decompresses at most `max_bytes` (one byte more says it was too large).
fn gunzip(body: &[u8], max_bytes: u64) -> Result<Vec<u8>, ParseError> {
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(body)
        .take(max_bytes.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|e| ParseError::Gzip(e.to_string()))?;
    if out.len() as u64 > max_bytes {
        return Err(ParseError::TooLarge { limit: max_bytes });
    }
    Ok(out)
}

/// Where the reader is: which element's text is being gathered.
#[derive(Default)]
struct Walk {
    kind: Option<Kind>,
    /// Open elements.
    depth: usize,
    /// Inside an entry (`<url>`, `<sitemap>`) at depth 2.
    entry: Option<Entry>,
    /// The entry's child whose text is gathered (`loc` or `lastmod`).
    field: Option<Field>,
}

#[derive(Default)]
struct Entry {
    loc: String,
    lastmod: String,
    too_long: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Field {
    Loc,
    Lastmod,
}

fn parse_xml(xml: &[u8], limits: Limits) -> Result<Parsed, ParseError> {
    let mut reader = Reader::from_reader(xml);
    let mut walk = Walk::default();
    let mut parsed = Parsed {
        kind: Kind::UrlSet,
        locs: Vec::new(),
        cut: 0,
        skipped: 0,
    };
    loop {
        let at = reader.buffer_position();
        let event = reader.read_event().map_err(|e| ParseError::Xml {
            at: reader.error_position(),
            message: e.to_string(),
        })?;
        let xml_error = |message: String| ParseError::Xml { at, message };
        match event {
            Event::Start(e) => walk.open(e.local_name().as_ref())?,
            Event::Empty(e) => {
                walk.open(e.local_name().as_ref())?;
                walk.close(&mut parsed, limits);
            }
            Event::End(_) => walk.close(&mut parsed, limits),
            Event::Text(t) => {
                let text = t.decode().map_err(|e| xml_error(e.to_string()))?;
                walk.text(&text);
            }
            Event::CData(t) => {
                let text = t.decode().map_err(|e| xml_error(e.to_string()))?;
                walk.text(&text);
            }
            Event::GeneralRef(r) => walk.text(&resolve(&r).map_err(xml_error)?),
            Event::Eof => break,
            _ => {}
        }
    }
    match walk.kind {
        None => Err(ParseError::Empty),
        Some(_) if walk.depth > 0 => Err(ParseError::Xml {
            at: reader.buffer_position(),
            message: format!("the file ends inside {} open element(s)", walk.depth),
        }),
        Some(kind) => Ok(Parsed { kind, ..parsed }),
    }
}

/// The text of `&amp;`, `&#38;` and the other predefined references.
fn resolve(r: &BytesRef) -> Result<String, String> {
    if let Some(c) = r.resolve_char_ref().map_err(|e| e.to_string())? {
        return Ok(c.to_string());
    }
    let name = r.decode().map_err(|e| e.to_string())?;
    quick_xml::escape::resolve_predefined_entity(&name)
        .map(str::to_string)
        .ok_or_else(|| format!("unknown entity &{name};"))
}

impl Walk {
    fn open(&mut self, name: &[u8]) -> Result<(), ParseError> {
        self.depth += 1;
        match (self.depth, self.kind) {
            (1, _) => {
                self.kind = Some(match name {
                    b"urlset" => Kind::UrlSet,
                    b"sitemapindex" => Kind::Index,
                    other => {
                        let name = String::from_utf8_lossy(other);
                        return Err(ParseError::NotASitemap(name.chars().take(64).collect()));
                    }
                })
            }
            (2, Some(Kind::UrlSet)) if name == b"url" => self.entry = Some(Entry::default()),
            (2, Some(Kind::Index)) if name == b"sitemap" => self.entry = Some(Entry::default()),
            (3, _) if self.entry.is_some() => {
                self.field = match name {
                    b"loc" => Some(Field::Loc),
                    b"lastmod" => Some(Field::Lastmod),
                    _ => None,
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn text(&mut self, text: &str) {
        let (Some(entry), Some(field)) = (&mut self.entry, self.field) else {
            return;
        };
        let (into, cap) = match field {
            Field::Loc => (&mut entry.loc, MAX_LOC_BYTES),
            Field::Lastmod => (&mut entry.lastmod, MAX_LASTMOD_BYTES),
        };
        if into.len() + text.len() > cap {
            entry.too_long |= field == Field::Loc;
            return;
        }
        into.push_str(text);
    }

    fn close(&mut self, parsed: &mut Parsed, limits: Limits) {
        match self.depth {
            3 => self.field = None,
            2 => {
                if let Some(entry) = self.entry.take() {
                    keep(entry, parsed, limits);
                }
            }
            _ => {}
        }
        self.depth = self.depth.saturating_sub(1);
    }
}

fn keep(entry: Entry, parsed: &mut Parsed, limits: Limits) {
    let url = entry.loc.trim();
    if url.is_empty() || entry.too_long {
        parsed.skipped += 1;
        return;
    }
    if parsed.locs.len() >= limits.max_urls {
        parsed.cut += 1;
        return;
    }
    let lastmod = entry.lastmod.trim();
    // W3C datetime: a year first; anything else is not kept.
    let is_date = lastmod.len() >= 4 && lastmod.bytes().take(4).all(|b| b.is_ascii_digit());
    parsed.locs.push(Loc {
        url: url.to_string(),
        lastmod: is_date.then(|| lastmod.to_string()),
    });
}

#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;
