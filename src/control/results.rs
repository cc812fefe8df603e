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

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

use super::client::socket_path;
use super::read_client;
use crate::engine::inspect::quarantine::{self, ParkedEntry, ParkedUrl, Quarantine};
use crate::engine::inspect::{self, PageInspection};
use crate::engine::store::{
    decode_json, Entries, FilteredUrl, FragmentLinks, PageRecord, SitemapEntry, Store, StoreError,
};

/// fjall's block cache when a listing opens a store itself.
const READ_CACHE_BYTES: u64 = 64 * 1024 * 1024;

/// A running engine, read through its control socket.
pub struct RemoteStore {
    data_dir: PathBuf,
}

impl RemoteStore {
    /// Checks that the engine of `data_dir` answers reads.
    pub fn connect(data_dir: &Path) -> Result<RemoteStore, StoreError> {
        let remote = RemoteStore {
            data_dir: data_dir.to_path_buf(),
        };
        remote.one::<Vec<(u64, String)>>("rules", "")?;
        Ok(remote)
    }

    /// Sends one request and returns its answer's rows as decoded values.
    pub fn stream<T: DeserializeOwned + Send + 'static>(
        &self,
        verb: &str,
        arg: &str,
    ) -> Result<Entries<T>, StoreError> {
        let answer = read_client::read(&self.data_dir, verb, arg).map_err(|e| remote_error(&e))?;
        Ok(Box::new(answer.map(|row| {
            let row = row.map_err(|e| remote_error(&e))?;
            decode_json(row.get().as_bytes(), "results row")
        })))
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
        }
    }

    /// The recrawl pass the crawl is in (0: never recrawled).
    pub fn recrawl_pass(&self) -> Result<u32, StoreError> {
        match self {
            Results::Local(s) => Ok(s.recrawl_pass()),
            Results::Remote(r) => r.one("recrawl-pass", ""),
        }
    }

    /// Page records whose URL starts with `url_prefix`, in URL order.
    pub fn pages(&self, url_prefix: &str) -> Result<Entries<PageRecord>, StoreError> {
        match self {
            Results::Local(s) => Ok(s.page_records(url_prefix)),
            Results::Remote(r) => r.stream("pages", url_prefix),
        }
    }

    /// Links not queued (scope, depth, extension) under `url_prefix`, in URL order.
    pub fn filtered(&self, url_prefix: &str) -> Result<Entries<FilteredUrl>, StoreError> {
        match self {
            Results::Local(s) => Ok(s.filtered_urls(url_prefix)),
            Results::Remote(r) => r.stream("filtered", url_prefix),
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
        }
    }

    /// `(url, inlinks)` under `url_prefix`, in URL order: how many crawled
    /// pages link to each URL.
    pub fn inlink_entries(&self, url_prefix: &str) -> Result<Entries<(String, u32)>, StoreError> {
        match self {
            Results::Local(s) => Ok(s.inlink_entries(url_prefix)),
            Results::Remote(r) => r.stream("inlinks", url_prefix),
        }
    }

    /// `#fragment` links to pages under `url_prefix`, page by page in URL order.
    pub fn fragment_links(&self, url_prefix: &str) -> Result<Entries<FragmentLinks>, StoreError> {
        match self {
            Results::Local(s) => Ok(s.fragment_links(url_prefix)),
            Results::Remote(r) => r.stream("fragments", url_prefix),
        }
    }

    /// URLs sitemaps listed under `url_prefix`, in URL order.
    pub fn sitemap_entries(&self, url_prefix: &str) -> Result<Entries<SitemapEntry>, StoreError> {
        match self {
            Results::Local(s) => Ok(s.sitemap_entries(url_prefix)),
            Results::Remote(r) => r.stream("sitemaps", url_prefix),
        }
    }

    /// The record of one URL.
    pub fn page(&self, url: &str) -> Result<Option<PageRecord>, StoreError> {
        match self {
            Results::Local(s) => s.page(url),
            Results::Remote(r) => r.one("page", url),
        }
    }

    /// The referrers of one URL.
    pub fn referrers(&self, url: &str) -> Result<Vec<String>, StoreError> {
        match self {
            Results::Local(s) => s.referrers(url),
            Results::Remote(r) => r.one("referrers-of", url),
        }
    }

    /// `(rule id, origin)` of every rule.
    pub fn rule_origins(&self) -> Result<Vec<(u64, String)>, StoreError> {
        match self {
            Results::Local(s) => s.rule_origins(),
            Results::Remote(r) => r.one("rules", ""),
        }
    }

    /// Whether this reads a running crawl.
    pub fn is_live(&self) -> bool {
        matches!(self, Results::Remote(_))
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
        }
    }

    /// The parked URLs by alert, bounded.
    pub fn quarantine(&self) -> Result<Quarantine, StoreError> {
        match self {
            Results::Local(store) => quarantine::read(store),
            Results::Remote(remote) => remote.one("quarantine", ""),
        }
    }

    /// Every parked URL with its alert and found-on pages.
    pub fn parked(&self) -> Result<Entries<ParkedEntry>, StoreError> {
        match self {
            Results::Local(store) => Ok(quarantine::parked_entries(store)),
            Results::Remote(remote) => remote.stream("parked", ""),
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
