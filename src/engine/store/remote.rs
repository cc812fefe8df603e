//! Reading a crawl's results while the engine holds its database.
//!
//! fjall locks its directory for one process, so a second process cannot open
//! the store of a running crawl. The engine therefore serves its own reads on
//! a Unix socket in the data directory (`results.sock`, 0600 in the 0700
//! directory): each connection gets a thread that reads the store as fjall
//! lets any thread do while the crawl writes, so the crawl loop never sees
//! the request. [`Results::open`] picks the store or the socket.
//!
//! The protocol is lines: a request `VERB\tARG`, answered by JSON lines and a
//! final `end` (or `error\tMESSAGE`).

use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use serde::de::DeserializeOwned;

use super::query::Entries;
use super::{FilteredUrl, FragmentLinks, PageRecord, SitemapEntry, Store, StoreError};
use crate::engine::socket_path::SocketPath;

/// The socket's name inside a data directory.
pub const SOCKET_FILE: &str = "results.sock";

/// Readers served at once; more are told the engine is busy. One `pages`
/// listing holds up to six streams per URL prefix (pages, links left out,
/// referrers, inlinks, fragments read by audit, sitemap rows; two prefixes
/// with `--host`) and then the parked URLs; `diff DIR` reads two passes at
/// once, four streams per prefix each. A closed stream's thread ends a
/// moment after the client moves on.
const MAX_READERS: usize = 24;

/// A reader that stops reading (or sending) for this long is dropped.
const IDLE_LIMIT: Duration = Duration::from_secs(60);

/// How often the acceptor looks for a new reader (and for the stop flag).
const ACCEPT_POLL: Duration = Duration::from_millis(50);

/// fjall's block cache when a listing opens a store itself.
const READ_CACHE_BYTES: u64 = 64 * 1024 * 1024;

/// The longest request line accepted (a verb and a URL).
const MAX_REQUEST: usize = 16 * 1024;

/// A read served beside the store's own, by a module above the store (the
/// page inspector): `name` is its request verb, `read` answers one argument.
#[derive(Clone, Copy)]
pub struct ExtraRead {
    /// The request verb.
    pub name: &'static str,
    /// Answers the request's argument from the store and the data directory.
    pub read: ExtraAnswer,
}

/// How an [`ExtraRead`] answers: one value, or a stream of them (one line
/// each, so a long listing is never held whole).
#[derive(Clone, Copy)]
pub enum ExtraAnswer {
    /// One JSON value.
    One(fn(&Store, &Path, &str) -> Result<serde_json::Value, StoreError>),
    /// JSON values, one a line.
    Lines(fn(&Store, &Path, &str) -> Result<Entries<serde_json::Value>, StoreError>),
}

/// Serves the store's reads on `<data>/results.sock` until dropped.
pub struct ResultsServer {
    path: PathBuf,
    stop: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<()>>,
}

impl ResultsServer {
    /// Starts serving `store` in `data_dir`. A leftover socket file (from a
    /// crash) is replaced: whoever holds the store owns the socket.
    pub fn start(
        store: Store,
        data_dir: &Path,
        extra: &'static [ExtraRead],
    ) -> std::io::Result<ResultsServer> {
        let path = data_dir.join(SOCKET_FILE);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        let listener = UnixListener::bind(SocketPath::new(&path)?.as_path())?;
        // Polled, so that stopping never depends on a wake-up connection.
        listener.set_nonblocking(true)?;
        {
            use std::os::unix::fs::PermissionsExt;
            let private = std::fs::Permissions::from_mode(super::private::FILE_MODE);
            std::fs::set_permissions(&path, private)?;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let dir = data_dir.to_path_buf();
        let acceptor = std::thread::Builder::new()
            .name("results-socket".into())
            .spawn(move || accept_loop(listener, store, (dir, extra), flag))?;
        Ok(ResultsServer {
            path,
            stop,
            acceptor: Some(acceptor),
        })
    }
}

impl Drop for ResultsServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

fn accept_loop(
    listener: UnixListener,
    store: Store,
    (data_dir, extra): (PathBuf, &'static [ExtraRead]),
    stop: Arc<AtomicBool>,
) {
    let active = Arc::new(AtomicUsize::new(0));
    let mut readers: Vec<(JoinHandle<()>, UnixStream)> = Vec::new();
    while !stop.load(Ordering::SeqCst) {
        let conn = match listener.accept() {
            Ok((conn, _)) => conn,
            // Nothing waiting (or out of descriptors for a moment).
            Err(_) => {
                std::thread::sleep(ACCEPT_POLL);
                continue;
            }
        };
        if conn.set_nonblocking(false).is_err() {
            continue;
        }
        readers.retain(|(h, _)| !h.is_finished());
        if active.load(Ordering::SeqCst) >= MAX_READERS {
            let mut conn = conn;
            let _ = writeln!(conn, "error\ttoo many readers at once; try again shortly");
            continue;
        }
        let Ok(handle_conn) = conn.try_clone() else {
            continue;
        };
        active.fetch_add(1, Ordering::SeqCst);
        let (store, stop, active) = (store.clone(), stop.clone(), active.clone());
        let data_dir = data_dir.clone();
        let spawned = std::thread::Builder::new()
            .name("results-reader".into())
            .spawn(move || {
                let reading = Reading {
                    store: &store,
                    data_dir: &data_dir,
                    extra,
                    stop: &stop,
                };
                if let Err(e) = serve(conn, &reading) {
                    tracing::debug!("results reader ended: {e}");
                }
                active.fetch_sub(1, Ordering::SeqCst);
            });
        match spawned {
            Ok(handle) => readers.push((handle, handle_conn)),
            Err(e) => tracing::warn!("cannot start a results reader: {e}"),
        }
    }
    // A reader waiting for a request wakes up at the shutdown; one sending
    // checks the flag between lines. The store closes once they are gone.
    for (reader, conn) in readers {
        let _ = conn.shutdown(std::net::Shutdown::Both);
        let _ = reader.join();
    }
}

fn serve(conn: UnixStream, reading: &Reading) -> std::io::Result<()> {
    conn.set_read_timeout(Some(IDLE_LIMIT))?;
    conn.set_write_timeout(Some(IDLE_LIMIT))?;
    let mut reader = BufReader::new(conn.try_clone()?).take(MAX_REQUEST as u64);
    let mut out = BufWriter::new(conn);
    let mut line = String::new();
    loop {
        line.clear();
        reader.set_limit(MAX_REQUEST as u64);
        if reader.read_line(&mut line)? == 0 || reading.stop.load(Ordering::SeqCst) {
            return Ok(());
        }
        let request = line.trim_end_matches('\n');
        let (verb, arg) = request.split_once('\t').unwrap_or((request, ""));
        match answer(verb, arg, reading, &mut out) {
            Ok(()) => writeln!(out, "end")?,
            Err(Answer::Io(e)) => return Err(e),
            Err(Answer::Store(e)) => writeln!(out, "error\t{}", one_line(&e.to_string()))?,
        }
        out.flush()?;
    }
}

enum Answer {
    Io(std::io::Error),
    Store(StoreError),
}

impl From<std::io::Error> for Answer {
    fn from(e: std::io::Error) -> Self {
        Answer::Io(e)
    }
}

impl From<StoreError> for Answer {
    fn from(e: StoreError) -> Self {
        Answer::Store(e)
    }
}

/// What a reader thread reads from.
struct Reading<'a> {
    store: &'a Store,
    data_dir: &'a Path,
    extra: &'static [ExtraRead],
    stop: &'a AtomicBool,
}

fn answer(verb: &str, arg: &str, reading: &Reading, out: &mut impl Write) -> Result<(), Answer> {
    let (store, stop) = (reading.store, reading.stop);
    match verb {
        "pages" => send_all(store.page_records(arg), stop, out)?,
        "filtered" => send_all(store.filtered_urls(arg), stop, out)?,
        "referrers" => send_all(store.referrer_entries(arg), stop, out)?,
        "inlinks" => send_all(store.inlink_entries(arg), stop, out)?,
        "fragments" => send_all(store.fragment_links(arg), stop, out)?,
        "sitemaps" => send_all(store.sitemap_entries(arg), stop, out)?,
        "previous-pages" => send_all(store.previous_pass_records(arg), stop, out)?,
        "recrawl-pass" => send_line(&store.recrawl_pass(), out)?,
        "page" => send_line(&store.page(arg)?, out)?,
        "referrers-of" => send_line(&store.referrers(arg)?, out)?,
        "rules" => send_line(&store.rule_origins()?, out)?,
        _ => {
            if let Some(extra) = reading.extra.iter().find(|e| e.name == verb) {
                match extra.read {
                    ExtraAnswer::One(read) => send_line(&read(store, reading.data_dir, arg)?, out)?,
                    ExtraAnswer::Lines(read) => {
                        send_all(read(store, reading.data_dir, arg)?, stop, out)?
                    }
                }
                return Ok(());
            }
            return Err(Answer::Store(StoreError::Corrupt {
                what: "results request",
                message: format!("unknown request {:?}", one_line(verb)),
            }));
        }
    }
    Ok(())
}

fn send_all<T: serde::Serialize>(
    entries: Entries<T>,
    stop: &AtomicBool,
    out: &mut impl Write,
) -> Result<(), Answer> {
    for entry in entries {
        if stop.load(Ordering::Relaxed) {
            return Err(Answer::Store(stopped()));
        }
        send_line(&entry?, out)?;
    }
    Ok(())
}

fn send_line<T: serde::Serialize>(value: &T, out: &mut impl Write) -> Result<(), Answer> {
    serde_json::to_writer(&mut *out, value).map_err(std::io::Error::from)?;
    out.write_all(b"\n")?;
    Ok(())
}

fn stopped() -> StoreError {
    StoreError::Corrupt {
        what: "results stream",
        message: "the crawl stopped while the results were being read; read them again".into(),
    }
}

fn one_line(s: &str) -> String {
    s.replace(['\n', '\r', '\t'], " ")
}

/// A connection to a running engine's results socket.
pub struct RemoteStore {
    path: PathBuf,
}

impl RemoteStore {
    /// Checks that the socket of `data_dir` answers.
    pub fn connect(data_dir: &Path) -> Result<RemoteStore, StoreError> {
        let remote = RemoteStore {
            path: data_dir.join(SOCKET_FILE),
        };
        remote.one::<Vec<(u64, String)>>("rules", "")?;
        Ok(remote)
    }

    /// Sends one request and returns its answer lines as decoded values.
    pub fn stream<T: DeserializeOwned + Send + 'static>(
        &self,
        verb: &str,
        arg: &str,
    ) -> Result<Entries<T>, StoreError> {
        if arg.contains(['\n', '\t']) {
            return Err(remote_error("a URL or prefix with a tab or newline"));
        }
        let conn = SocketPath::new(&self.path).and_then(|p| UnixStream::connect(p.as_path()));
        let mut conn = conn.map_err(|e| {
            remote_error(&format!("cannot connect to {}: {e}", self.path.display()))
        })?;
        conn.set_read_timeout(Some(IDLE_LIMIT))
            .and_then(|()| writeln!(conn, "{verb}\t{arg}"))
            .map_err(|e| remote_error(&e.to_string()))?;
        let lines = BufReader::new(conn).lines();
        Ok(Box::new(AnswerLines {
            lines,
            done: false,
            _value: std::marker::PhantomData,
        }))
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

struct AnswerLines<T> {
    lines: std::io::Lines<BufReader<UnixStream>>,
    done: bool,
    _value: std::marker::PhantomData<fn() -> T>,
}

impl<T: DeserializeOwned> Iterator for AnswerLines<T> {
    type Item = Result<T, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let line = match self.lines.next() {
            Some(Ok(line)) => line,
            Some(Err(e)) => return self.fail(remote_error(&e.to_string())),
            None => return self.fail(remote_error("the engine closed the connection early")),
        };
        if line == "end" {
            self.done = true;
            return None;
        }
        if let Some(message) = line.strip_prefix("error\t") {
            return self.fail(remote_error(message));
        }
        Some(super::decode_json(line.as_bytes(), "results line"))
    }
}

impl<T> AnswerLines<T> {
    fn fail(&mut self, e: StoreError) -> Option<Result<T, StoreError>> {
        self.done = true;
        Some(Err(e))
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
    /// A crawl is running: its results socket.
    Remote(RemoteStore),
}

impl Results {
    /// Opens the store of `data_dir`, or, when a running crawl holds it, that
    /// crawl's results socket.
    pub fn open(data_dir: &Path) -> Result<Results, StoreError> {
        if !Store::exists_in(data_dir) {
            return Err(no_crawl(data_dir));
        }
        // A crawl that is running answers on its socket; a socket file that
        // does not answer is left over from a crash.
        if data_dir.join(SOCKET_FILE).exists() {
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
