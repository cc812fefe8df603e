//! A crawl's results, read from its store or, while the engine holds the
//! store, from that engine through its control socket.
//!
//! fjall locks its directory for one process, so a second process cannot open
//! the store of a running crawl. The engine therefore serves its own reads
//! (`engine::reads`, each on a thread that reads the store as fjall lets any
//! thread do while the crawl writes, so the crawl loop never sees the
//! request) on its control socket, `control.sock` (0600 in the 0700
//! directory, peer checked): a `Read` connection per request, answered by
//! rows in frames ([`super::read_client`]). [`Results::open`] picks the store
//! or the socket.
//!
//! This is the client side of those reads, so it lives here, above the
//! engine, beside the socket's other clients: the engine serves reads and
//! knows nothing of who asks. The listings, the export, the TUI and the
//! cluster read through it.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

mod merged;

pub use merged::{Merged, Part};

use super::client::socket_path;
use super::read_client;
use crate::engine::extract::element_ids;
use crate::engine::inspect::quarantine::{self, ParkedEntry, ParkedUrl, Quarantine};
use crate::engine::inspect::{self, PageInspection};
use crate::engine::store::{
    decode_json, read_response, Entries, FilteredUrl, FragmentLinks, PageRecord, SitemapEntry,
    Store, StoreError,
};

/// Bytes of a page's archived body read to find its element ids; a longer
/// page is not judged (its element may be past the cut).
pub const MAX_ARCHIVED_BODY: usize = 32 << 20;

/// Bytes of the URLs of one [`Results::inlinks_of`] request: one request
/// to the engine holds at most `control::reads::MAX_REQUEST`.
pub const INLINKS_ASKED_BYTES: usize = 12 * 1024;

/// fjall's block cache when a listing opens a store itself.
const READ_CACHE_BYTES: u64 = 64 * 1024 * 1024;

/// The JSON rows of one read, each a value, or why the read broke off.
pub type JsonRows = Box<dyn Iterator<Item = Result<String, String>> + Send>;

/// A crawl's reads served somewhere else than this machine's control
/// socket: a worker of a shared crawl answering through Redis. Verbs and
/// rows are those of the engine's reads, plus `element-ids` (see
/// [`Results::archived_ids`]).
pub trait RowSource: Send + Sync {
    /// Asks for `verb arg`; the rows follow as they come.
    fn rows(&self, verb: &str, arg: &str) -> Result<JsonRows, String>;
}

/// A running engine, read through its control socket or another
/// [`RowSource`].
pub struct RemoteStore {
    via: Via,
}

enum Via {
    Socket(PathBuf),
    Rows(Box<dyn RowSource>),
}

impl RemoteStore {
    /// Checks that the engine of `data_dir` answers reads.
    pub fn connect(data_dir: &Path) -> Result<RemoteStore, StoreError> {
        RemoteStore::checked(Via::Socket(data_dir.to_path_buf()))
    }

    /// Checks that `source` answers reads.
    pub fn through(source: Box<dyn RowSource>) -> Result<RemoteStore, StoreError> {
        RemoteStore::checked(Via::Rows(source))
    }

    fn checked(via: Via) -> Result<RemoteStore, StoreError> {
        let remote = RemoteStore { via };
        remote.one::<Vec<(u64, String)>>("rules", "")?;
        Ok(remote)
    }

    /// Sends one request and returns its answer's rows as decoded values.
    pub fn stream<T: DeserializeOwned + Send + 'static>(
        &self,
        verb: &str,
        arg: &str,
    ) -> Result<Entries<T>, StoreError> {
        let decode = |row: &str| decode_json(row.as_bytes(), "results row");
        match &self.via {
            Via::Socket(dir) => {
                let answer = read_client::read(dir, verb, arg).map_err(|e| remote_error(&e))?;
                Ok(Box::new(answer.map(move |row| {
                    decode(row.map_err(|e| remote_error(&e))?.get())
                })))
            }
            Via::Rows(source) => {
                let failed = |message| StoreError::Remote {
                    op: "reading a worker's records",
                    message,
                };
                let rows = source.rows(verb, arg).map_err(failed)?;
                Ok(Box::new(rows.map(move |row| decode(&row.map_err(failed)?))))
            }
        }
    }

    /// Whether this reads a worker elsewhere, whose archive is not on this
    /// machine.
    fn elsewhere(&self) -> bool {
        matches!(self.via, Via::Rows(_))
    }

    /// The single value answering `verb arg`.
    pub fn one<T: DeserializeOwned + Send + 'static>(
        &self,
        verb: &str,
        arg: &str,
    ) -> Result<T, StoreError> {
        self.stream::<T>(verb, arg)?
            .next()
            .unwrap_or_else(|| Err(remote_error("the engine sent no answer")))
    }
}

fn remote_error(message: &str) -> StoreError {
    StoreError::Corrupt {
        what: "answer from the running crawl",
        message: message.to_string(),
    }
}

/// Why `data_dir`, which has no `index/`, is no crawl to read; "corrupt" only
/// when it looks like one (a crawl saves its crawl.toml once index/ exists).
fn no_crawl(data_dir: &Path) -> StoreError {
    let no_crawl = |why| StoreError::NoCrawl {
        path: data_dir.to_path_buf(),
        why,
    };
    match std::fs::metadata(data_dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => no_crawl("does not exist"),
        Ok(meta) if !meta.is_dir() => no_crawl("is not a directory"),
        _ if data_dir.join("crawl.toml").is_file() => StoreError::Corrupt {
            what: "data directory",
            message: format!(
                "{} holds a crawl.toml but no index/, the crawl's database",
                data_dir.display()
            ),
        },
        _ => no_crawl("holds no crawl (no index/ inside)"),
    }
}

/// Where a listing reads from: the store itself, or the running engine.
pub enum Results {
    /// The crawl is not running: its store, opened here.
    Local(Store),
    /// A crawl is running: its engine, through the control socket.
    Remote(RemoteStore),
    /// The workers of a shared crawl, read as one crawl.
    Merged(merged::Merged),
}

impl Results {
    /// Opens the store of `data_dir`, or, when a running crawl holds it, reads
    /// through that crawl's control socket.
    pub fn open(data_dir: &Path) -> Result<Results, StoreError> {
        if !Store::exists_in(data_dir) {
            return Err(no_crawl(data_dir));
        }
        // A crawl that is running answers on its socket; a socket file that
        // does not answer is left over from a crash.
        if socket_path(data_dir).exists() {
            if let Ok(remote) = RemoteStore::connect(data_dir) {
                return Ok(Results::Remote(remote));
            }
        }
        Store::open(data_dir, READ_CACHE_BYTES).map(Results::Local)
    }

    /// The page records as the previous recrawl pass left them (see
    /// [`Store::previous_pass_records`]), in URL order.
    pub fn previous_pass_pages(&self, url_prefix: &str) -> Result<Entries<PageRecord>, StoreError> {
        match self {
            Results::Local(s) => Ok(s.previous_pass_records(url_prefix)),
            Results::Remote(r) => r.stream("previous-pages", url_prefix),
            Results::Merged(m) => m.pages(|r| r.previous_pass_pages(url_prefix)),
        }
    }

    /// The recrawl pass the crawl is in (0: never recrawled).
    pub fn recrawl_pass(&self) -> Result<u32, StoreError> {
        match self {
            Results::Local(s) => Ok(s.recrawl_pass()),
            Results::Remote(r) => r.one("recrawl-pass", ""),
            Results::Merged(m) => m
                .parts()
                .iter()
                .try_fold(0, |pass, p| Ok(pass.max(p.results.recrawl_pass()?))),
        }
    }

    /// Page records whose URL starts with `url_prefix`, in URL order.
    pub fn pages(&self, url_prefix: &str) -> Result<Entries<PageRecord>, StoreError> {
        match self {
            Results::Local(s) => Ok(s.page_records(url_prefix)),
            Results::Remote(r) => r.stream("pages", url_prefix),
            Results::Merged(m) => m.pages(|r| r.pages(url_prefix)),
        }
    }

    /// Links not queued (scope, depth, extension) under `url_prefix`, in URL order.
    pub fn filtered(&self, url_prefix: &str) -> Result<Entries<FilteredUrl>, StoreError> {
        match self {
            Results::Local(s) => Ok(s.filtered_urls(url_prefix)),
            Results::Remote(r) => r.stream("filtered", url_prefix),
            Results::Merged(m) => m.filtered(url_prefix),
        }
    }

    /// `(url, referrers)` under `url_prefix`, in URL order.
    pub fn referrer_entries(
        &self,
        url_prefix: &str,
    ) -> Result<Entries<(String, Vec<String>)>, StoreError> {
        match self {
            Results::Local(s) => Ok(s.referrer_entries(url_prefix)),
            Results::Remote(r) => r.stream("referrers", url_prefix),
            Results::Merged(m) => m.referrer_entries(url_prefix),
        }
    }

    /// How many crawled pages link to each of `urls`, in their order. The
    /// URLs go in one request: at most [`INLINKS_ASKED_BYTES`] of them.
    pub fn inlinks_of(&self, urls: &[String]) -> Result<Vec<u32>, StoreError> {
        if urls.is_empty() {
            return Ok(Vec::new());
        }
        match self {
            Results::Local(s) => Ok(s.inlinks_of(urls)),
            Results::Remote(r) => {
                let counts: Vec<u32> = r.one("inlinks-of", &urls.join("\n"))?;
                match counts.len() == urls.len() {
                    true => Ok(counts),
                    false => Err(remote_error("inlink counts for another number of URLs")),
                }
            }
            Results::Merged(m) => m.inlinks_of(urls),
        }
    }

    /// `#fragment` links to pages under `url_prefix`, page by page in URL order.
    pub fn fragment_links(&self, url_prefix: &str) -> Result<Entries<FragmentLinks>, StoreError> {
        match self {
            Results::Local(s) => Ok(s.fragment_links(url_prefix)),
            Results::Remote(r) => r.stream("fragments", url_prefix),
            Results::Merged(m) => m.fragment_links(url_prefix),
        }
    }

    /// URLs sitemaps listed under `url_prefix`, in URL order.
    pub fn sitemap_entries(&self, url_prefix: &str) -> Result<Entries<SitemapEntry>, StoreError> {
        match self {
            Results::Local(s) => Ok(s.sitemap_entries(url_prefix)),
            Results::Remote(r) => r.stream("sitemaps", url_prefix),
            Results::Merged(m) => m.sitemap_entries(url_prefix),
        }
    }

    /// The record of one URL.
    pub fn page(&self, url: &str) -> Result<Option<PageRecord>, StoreError> {
        match self {
            Results::Local(s) => s.page(url),
            Results::Remote(r) => r.one("page", url),
            Results::Merged(m) => m.page(url),
        }
    }

    /// The referrers of one URL.
    pub fn referrers(&self, url: &str) -> Result<Vec<String>, StoreError> {
        match self {
            Results::Local(s) => s.referrers(url),
            Results::Remote(r) => r.one("referrers-of", url),
            Results::Merged(m) => m.referrers(url),
        }
    }

    /// `(rule id, origin)` of every rule.
    pub fn rule_origins(&self) -> Result<Vec<(u64, String)>, StoreError> {
        match self {
            Results::Local(s) => s.rule_origins(),
            Results::Remote(r) => r.one("rules", ""),
            Results::Merged(m) => m.rule_origins(),
        }
    }

    /// Whether this reads a running crawl.
    pub fn is_live(&self) -> bool {
        match self {
            Results::Local(_) => false,
            Results::Remote(_) => true,
            Results::Merged(m) => m.parts().iter().any(|p| p.results.is_live()),
        }
    }
}

/// The inspector's reads: on the store here, or on the running engine's
/// reader threads (its `engine::inspect` reads).
impl Results {
    /// The inspection of `url` in the crawl of `data_dir`; `None` if the
    /// crawl has no record of it.
    pub fn inspect(
        &self,
        data_dir: &Path,
        url: &str,
    ) -> Result<Option<PageInspection>, StoreError> {
        match self {
            Results::Local(store) => inspect::inspect(store, data_dir, url),
            Results::Remote(remote) => remote.one("inspect", url),
            Results::Merged(m) => {
                for part in m.parts() {
                    let dir = part.dir.as_deref().unwrap_or(data_dir);
                    if let Some(page) = part.results.inspect(dir, url)? {
                        return Ok(Some(page));
                    }
                }
                Ok(None)
            }
        }
    }

    /// The parked URLs by alert, bounded.
    pub fn quarantine(&self) -> Result<Quarantine, StoreError> {
        match self {
            Results::Local(store) => quarantine::read(store),
            Results::Remote(remote) => remote.one("quarantine", ""),
            Results::Merged(m) => {
                let mut all = Quarantine::default();
                for part in m.parts() {
                    let one = part.results.quarantine()?;
                    all.alerts.extend(one.alerts);
                    all.cut |= one.cut;
                }
                Ok(all)
            }
        }
    }

    /// Every parked URL with its alert and found-on pages.
    pub fn parked(&self) -> Result<Entries<ParkedEntry>, StoreError> {
        match self {
            Results::Local(store) => Ok(quarantine::parked_entries(store)),
            Results::Remote(remote) => remote.stream("parked", ""),
            Results::Merged(m) => {
                let each: Result<Vec<_>, _> =
                    m.parts().iter().map(|p| p.results.parked()).collect();
                Ok(Box::new(each?.into_iter().flatten()))
            }
        }
    }

    /// The URLs with the page each was first found on (a worker's store: a
    /// shared crawl's parked URLs come from Redis without it).
    pub fn found_on(&self, urls: &[String]) -> Result<Vec<ParkedUrl>, StoreError> {
        urls.iter()
            .take(quarantine::MAX_URLS_PER_ALERT * quarantine::MAX_ALERTS)
            .map(|url| {
                quarantine::found_on_page(url.clone(), |u| self.referrers(u), |p| self.page(p))
            })
            .collect()
    }
}

/// The page archive's reads.
impl Results {
    /// The element ids of `record`'s archived body (what its `#fragment`
    /// links may name), read from the archive in `data_dir`, or by the
    /// worker that holds it; `None` if the archive cannot give it back whole.
    pub fn archived_ids(
        &self,
        data_dir: &Path,
        record: &PageRecord,
    ) -> Result<Option<HashSet<String>>, StoreError> {
        match self {
            Results::Remote(r) if r.elsewhere() => r.one("element-ids", &record.url),
            Results::Local(_) | Results::Remote(_) => Ok(archived_ids_in(data_dir, record)),
            Results::Merged(m) => {
                for part in m.parts() {
                    let Some(own) = part.results.page(&record.url)? else {
                        continue;
                    };
                    // The whole record, not its WARC location alone: each
                    // worker numbers its files from 0, so two workers' records
                    // can name the same file, offset and length.
                    if own == *record {
                        let dir = part.dir.as_deref().unwrap_or(data_dir);
                        return part.results.archived_ids(dir, &own);
                    }
                }
                Ok(None)
            }
        }
    }
}

fn archived_ids_in(data_dir: &Path, record: &PageRecord) -> Option<HashSet<String>> {
    let archived = read_response(data_dir, record.warc.as_ref()?, MAX_ARCHIVED_BODY).ok()?;
    if archived.truncated {
        return None;
    }
    Some(element_ids(&archived.body, record.content_type.as_deref()))
}
