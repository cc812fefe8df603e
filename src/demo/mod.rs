//! The demo web: several small sites served on 127.0.0.1, one listener per
//! site, each addressed as `http://<name>.localhost:<port>/` (crawldeck resolves
//! `*.localhost` to 127.0.0.1 itself). Used by `crawldeck demo`, the
//! integration tests (which assert on the request log) and `crawldeck bench`.

mod html;
pub mod log;
mod server;
mod sites;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use url::Url;

pub use log::{RequestLog, RequestRecord, MAX_RECORDS, STATUS_NO_RESPONSE};
pub use sites::bench::BENCH_LINKS_PER_PAGE;
pub use sites::faults::{
    FLAKY_FAILURES, FLAKY_OK_BEFORE, REDIRECT_CHAIN_HOPS, ROBOTS_FLAKY_FAILURES,
};
pub use sites::hostile::{
    HOSTILE_BOMB_BYTES, HOSTILE_ESC_TITLE, HOSTILE_HUGE_BYTES, HOSTILE_LINK_COUNT,
    HOSTILE_LONG_URL_BYTES,
};
pub use sites::links::{
    ELSEWHERE_DISALLOWED, ELSEWHERE_GONE, ELSEWHERE_NEVER, ELSEWHERE_OK, LINKS_IN_RESOURCES,
    LINKS_PAGES, LINKS_RESOURCES_BROKEN, LINKS_RESOURCES_OK, LINKS_STYLESHEET_FONT,
    LINKS_STYLESHEET_LARGE, LINKS_STYLESHEET_LARGE_BYTES,
};
pub use sites::shop::{
    SHOP_BROKEN_PATH, SHOP_HIDDEN_PATHS, SHOP_META_NOFOLLOW_PATH, SHOP_NOFOLLOW_ONLY_PATH,
    SHOP_NOINDEX_PATH,
};
pub use sites::{archive_real_paths, blog_allowed_paths, blog_disallowed_paths, MANUAL_PAGES};
pub use sites::{
    AUDIT_CHANGED_BROKEN, AUDIT_CHANGED_REMOVED, AUDIT_CHANGED_TITLE, AUDIT_NOT_IN_SITEMAP,
    AUDIT_ORPHANS, AUDIT_PAGES, AUDIT_SITEMAP_FILES, AUDIT_SITEMAP_NOT_INDEXABLE,
};

/// One site of the demo web and what it exercises in a crawler.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SiteKind {
    /// A normal shop of ~370 pages (categories → lists → products): relative and
    /// absolute links, `<base href>`, `&amp;` in hrefs, fragments, `.jpg` links,
    /// a `rel="nofollow"`-only page, a meta-nofollow page whose links lead nowhere
    /// else, a noindex page, `rel=canonical`, `/old-*` 301s, ETag/Last-Modified
    /// with 304s, gzip when accepted, and a link to the `Blog`.
    Shop,
    /// robots.txt after the HTTP guide's examples (agent groups, Allow before
    /// Disallow, `/tmp` prefix cases, `%7E` escapes, empty Disallow, Crawl-delay
    /// of 1 s × latency_scale, Sitemap) and links to every path they decide;
    /// see [`blog_disallowed_paths`] and [`blog_allowed_paths`].
    Blog,
    /// 30 pages, every response delayed ~300 ms × latency_scale: politeness
    /// delays derived from response time.
    Slow,
    /// robots.txt answers 503 to the first 3 requests, then 200: a host must
    /// be postponed, not crawled, until its robots.txt is settled. 20 pages.
    RobotsFlaky,
    /// 40 pages; page requests 6–30 answer 500 or drop the connection, then it
    /// recovers: the circuit breaker opens, probes, and closes again.
    Flaky,
    /// `/calendar/2026/11/` links to the next and previous month forever (a
    /// calendar trap), plus 20 normal pages.
    Calendar,
    /// Pages under `/docs/` link `a/` and `b/` relatively, so `/docs/a/b/a/…`
    /// never ends (a path-depth trap), plus 20 normal pages.
    Deep,
    /// Every link carries a fresh `?sid=<32 hex>` over 20 real pages: a session-id
    /// trap for crawlers that do not strip well-known session parameters.
    Session,
    /// 30 byte-identical and 30 near-identical (one word differs) pages plus 20
    /// distinct ones: content digests and simhash.
    Dupes,
    /// A finite paginated listing, `/list?page=N&sort=S&dir=D` (100 URLs plus 20
    /// items): many query parameters that must not be taken for a trap.
    Params,
    /// A deep but finite structure (15 chains of depth 10, 150 pages) that must
    /// not be taken for a trap.
    DeepFinite,
    /// 200 for every path, each page with fresh random links (the soft-404 trap).
    Soft404,
    /// A faceted search whose result pages link ever more filter and sort
    /// combinations of `/search` (a query-parameter explosion), plus 20 products.
    Facets,
    /// 320 real pages `/docs/page-N.html` next to soft-404 pages in the same directory:
    /// each page links a broken `/docs/gone-<hex>.html`, and every unknown path answers 200
    /// with one "moved" page suggesting three more.
    Manual,
    /// 150 stories and 10 tag pages under `/archive/`, next to generated empty tag pages
    /// `/archive/tag-<word>-<n>.html` that link two more each: a rule for the directory
    /// would block every story.
    Archive,
    /// A site audit's material: robots.txt names a sitemap index listing a
    /// gzip-compressed and a plain sitemap; they list an orphan page, a 404
    /// and most linked pages, and two linked pages are in none (see
    /// [`AUDIT_ORPHANS`] and its neighbours).
    Audit,
    /// Test site: robots.txt answers this status (401, 403, 404, 410, 500, 503…); 5 pages.
    RobotsStatus(u16),
    /// Test site: `/a` → `/b` → `/a`, and `/hop/0` → … → `/hop/15` (15 hops).
    RedirectLoop,
    /// Test site: a 50 MB body, a gzip bomb, 100,000 links, a 100 KB URL, ESC
    /// sequences in a title, and a response that stalls after its headers.
    Hostile,
    /// Benchmark host number `n` of [`DemoWeb::start_bench`].
    Bench(u32),
    /// Two pages loading stylesheets, a script, images (one with a `srcset`)
    /// and CSS `url()`s, two of them broken (404), and linking to three URLs
    /// of `Elsewhere`: resource and external-link checks.
    Links,
    /// Never a seed: the other host `Links` links to. `/ok.html` (200, its
    /// links lead further), `/gone.html` (404), and `/private/` disallowed
    /// by its robots.txt.
    Elsewhere,
}

impl SiteKind {
    pub fn name(&self) -> &'static str {
        match self {
            SiteKind::Shop => "shop",
            SiteKind::Blog => "blog",
            SiteKind::Slow => "slow",
            SiteKind::RobotsFlaky => "robots-flaky",
            SiteKind::Flaky => "flaky",
            SiteKind::Calendar => "calendar",
            SiteKind::Deep => "deep",
            SiteKind::Session => "session",
            SiteKind::Dupes => "dupes",
            SiteKind::Params => "params",
            SiteKind::DeepFinite => "deep-finite",
            SiteKind::Soft404 => "soft404",
            SiteKind::Facets => "facets",
            SiteKind::Manual => "manual",
            SiteKind::Archive => "archive",
            SiteKind::Audit => "audit",
            SiteKind::RobotsStatus(401) => "robots-401",
            SiteKind::RobotsStatus(403) => "robots-403",
            SiteKind::RobotsStatus(404) => "robots-404",
            SiteKind::RobotsStatus(410) => "robots-410",
            SiteKind::RobotsStatus(500) => "robots-500",
            SiteKind::RobotsStatus(503) => "robots-503",
            SiteKind::RobotsStatus(_) => "robots-status",
            SiteKind::RedirectLoop => "redirect-loop",
            SiteKind::Hostile => "hostile",
            SiteKind::Bench(_) => "bench",
            SiteKind::Links => "links",
            SiteKind::Elsewhere => "elsewhere",
        }
    }

    /// Every named site (the test sites with their usual parameters), for listings and `--sites`.
    pub fn catalogue() -> Vec<SiteKind> {
        let mut all = DemoOptions::standard().sites;
        all.extend([401, 403, 404, 410, 500, 503].map(SiteKind::RobotsStatus));
        all.extend([SiteKind::RedirectLoop, SiteKind::Hostile]);
        all
    }

    /// The inverse of [`SiteKind::host_label`]: `"shop"`, `"robots-503"`, `"bench-7"`…
    pub fn from_label(label: &str) -> Option<SiteKind> {
        let label = label.trim().to_ascii_lowercase();
        if let Some(n) = label.strip_prefix("bench-") {
            return n.parse().ok().map(SiteKind::Bench);
        }
        if let Some(code) = label.strip_prefix("robots-").and_then(|c| c.parse().ok()) {
            return Some(SiteKind::RobotsStatus(code));
        }
        Self::catalogue()
            .into_iter()
            .find(|k| k.host_label() == label)
    }

    /// The DNS label of the site's host: the name, made unique for numbered kinds.
    pub fn host_label(&self) -> String {
        match self {
            SiteKind::Bench(n) => format!("bench-{n}"),
            SiteKind::RobotsStatus(code) => format!("robots-{code}"),
            other => other.name().to_string(),
        }
    }

    /// Sites that answer with ETag/Last-Modified, 304s and gzip (Dupes:
    /// a recrawl meets its copies as 304s).
    fn serves_validators(&self) -> bool {
        matches!(self, SiteKind::Shop | SiteKind::Dupes)
    }
}

#[derive(Clone, Debug)]
pub struct DemoOptions {
    pub sites: Vec<SiteKind>,
    /// 1.0 normal, 0 = no artificial delays (Slow's latency, Blog's Crawl-delay).
    pub latency_scale: f64,
}

impl DemoOptions {
    /// The sites `crawldeck demo` shows.
    pub fn standard() -> Self {
        DemoOptions {
            sites: vec![
                SiteKind::Shop,
                SiteKind::Blog,
                SiteKind::Slow,
                SiteKind::RobotsFlaky,
                SiteKind::Flaky,
                SiteKind::Calendar,
                SiteKind::Deep,
                SiteKind::Session,
                SiteKind::Dupes,
                SiteKind::Params,
                SiteKind::DeepFinite,
                SiteKind::Soft404,
                SiteKind::Facets,
                SiteKind::Manual,
                SiteKind::Archive,
                SiteKind::Audit,
                SiteKind::Links,
                SiteKind::Elsewhere,
            ],
            latency_scale: 1.0,
        }
    }

    /// The given sites without artificial delays, for tests.
    pub fn only(sites: &[SiteKind]) -> Self {
        DemoOptions {
            sites: sites.to_vec(),
            latency_scale: 0.0,
        }
    }
}

struct RunningSite {
    kind: SiteKind,
    base: Url,
    task: JoinHandle<()>,
}

/// A running demo web. Call [`DemoWeb::shutdown`] to stop it; dropping it
/// stops accepting connections as well but does not wait.
pub struct DemoWeb {
    sites: Vec<RunningSite>,
    log: RequestLog,
    shutdown: watch::Sender<bool>,
    changed: Arc<AtomicBool>,
}

/// The most hosts a bench web has: each is a listener of this process.
pub const MAX_BENCH_HOSTS: usize = 10_000;

/// A bench web of about `pages` over `hosts`: pages per host, and hosts.
fn bench_layout(pages: usize, hosts: usize) -> (u32, u32) {
    let hosts = hosts.clamp(1, MAX_BENCH_HOSTS);
    let per_host = (pages / hosts).clamp(1, u32::MAX as usize);
    (per_host as u32, hosts as u32)
}

impl DemoWeb {
    pub async fn start(opts: DemoOptions) -> std::io::Result<DemoWeb> {
        Self::start_sites(&opts.sites, opts.latency_scale, (0, 0)).await
    }

    /// The pages of the web [`DemoWeb::start_bench`] serves: as many on each host.
    pub fn bench_pages(pages: usize, hosts: usize) -> usize {
        let (per_host, hosts) = bench_layout(pages, hosts);
        per_host as usize * hosts as usize
    }

    /// `hosts` synthetic sites of `pages / hosts` pages each (~20 KB, ~50
    /// links, all reachable from `/`), robots.txt allowing all, no delays, no gzip.
    pub async fn start_bench(pages: usize, hosts: usize) -> std::io::Result<DemoWeb> {
        let (per_host, hosts) = bench_layout(pages, hosts);
        let kinds: Vec<SiteKind> = (0..hosts).map(SiteKind::Bench).collect();
        // Requests are only counted: a million kept records would weigh more
        // than the crawler being measured.
        Self::start_sites_logged(&kinds, 0.0, (per_host, hosts), RequestLog::with_capacity(0)).await
    }

    async fn start_sites(
        kinds: &[SiteKind],
        latency_scale: f64,
        bench: (u32, u32),
    ) -> std::io::Result<DemoWeb> {
        Self::start_sites_logged(kinds, latency_scale, bench, RequestLog::new()).await
    }

    async fn start_sites_logged(
        kinds: &[SiteKind],
        latency_scale: f64,
        bench: (u32, u32),
        log: RequestLog,
    ) -> std::io::Result<DemoWeb> {
        let mut unique: Vec<SiteKind> = Vec::with_capacity(kinds.len());
        for k in kinds {
            if !unique.contains(k) {
                unique.push(*k);
            }
        }
        let hostile = unique.contains(&SiteKind::Hostile);
        let bench_sites = unique.iter().any(|k| matches!(k, SiteKind::Bench(_)));
        if hostile || bench_sites {
            // Build the large canned bodies off the runtime, once, before serving.
            tokio::task::spawn_blocking(move || sites::warm_up(hostile, bench_sites))
                .await
                .map_err(std::io::Error::other)?;
        }
        // Bind everything first: every site needs every other site's address.
        let mut bound = Vec::with_capacity(unique.len());
        let mut peers = HashMap::with_capacity(unique.len());
        for kind in &unique {
            let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
            let port = listener.local_addr()?.port();
            let base = Url::parse(&format!("http://{}.localhost:{port}/", kind.host_label()))
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
            peers.insert(*kind, base.clone());
            bound.push((*kind, base, listener));
        }
        let peers = Arc::new(peers);
        let changed = Arc::new(AtomicBool::new(false));
        let (shutdown, stop_rx) = watch::channel(false);
        let mut sites = Vec::with_capacity(bound.len());
        for (kind, base, listener) in bound {
            let state = Arc::new(server::SiteState {
                ctx: sites::SiteCtx {
                    kind,
                    base: base.clone(),
                    peers: peers.clone(),
                    latency_scale,
                    robots_requests: AtomicU64::new(0),
                    page_requests: AtomicU64::new(0),
                    bench,
                    changed: changed.clone(),
                },
                log: log.clone(),
                gauge: log.gauge(kind),
                shutdown: stop_rx.clone(),
            });
            let mut stop = stop_rx.clone();
            let app = server::router(state);
            let task = tokio::spawn(async move {
                let signal = async move {
                    let _ = stop.wait_for(|s| *s).await;
                };
                if let Err(e) = axum::serve(listener, app)
                    .with_graceful_shutdown(signal)
                    .await
                {
                    tracing::warn!("demo site {} stopped with an error: {e}", kind.name());
                }
            });
            sites.push(RunningSite { kind, base, task });
        }
        Ok(DemoWeb {
            sites,
            log,
            shutdown,
            changed,
        })
    }

    /// From now on, sites with a second version serve it, on the same
    /// addresses, so a second crawl of the web finds known changes (`crawldeck
    /// diff`'s tests): `Audit` loses a page and its link
    /// ([`AUDIT_CHANGED_REMOVED`]), retitles one ([`AUDIT_CHANGED_TITLE`]) and
    /// loses one it still links to ([`AUDIT_CHANGED_BROKEN`]).
    pub fn change_sites(&self) {
        self.changed.store(true, Ordering::Relaxed);
    }

    /// `http://<name>.localhost:<port>/`, or `None` if that site was not started.
    pub fn try_base_url(&self, kind: SiteKind) -> Option<Url> {
        self.sites
            .iter()
            .find(|s| s.kind == kind)
            .map(|s| s.base.clone())
    }

    /// `http://<name>.localhost:<port>/`.
    ///
    /// # Panics
    /// If `kind` is not one of the started sites (a programming error).
    pub fn base_url(&self, kind: SiteKind) -> Url {
        self.try_base_url(kind)
            .unwrap_or_else(|| panic!("demo site {} was not started", kind.name()))
    }

    /// The TCP port a site listens on (127.0.0.1).
    pub fn port(&self, kind: SiteKind) -> Option<u16> {
        self.try_base_url(kind).and_then(|u| u.port())
    }

    /// The entry URL of every site started, in start order, but
    /// `Elsewhere`: what is out of scope for a crawl of the seeds.
    pub fn seeds(&self) -> Vec<Url> {
        self.sites
            .iter()
            .filter(|s| s.kind != SiteKind::Elsewhere)
            .map(|s| s.base.clone())
            .collect()
    }

    pub fn kinds(&self) -> Vec<SiteKind> {
        self.sites.iter().map(|s| s.kind).collect()
    }

    pub fn log(&self) -> &RequestLog {
        &self.log
    }

    /// Stops every listener at once (new connections are refused), ends stalled
    /// and streamed bodies, and waits a bounded time for open connections.
    pub async fn shutdown(mut self) {
        let _ = self.shutdown.send(true);
        let deadline = tokio::time::Instant::now() + server::SHUTDOWN_GRACE;
        for mut site in std::mem::take(&mut self.sites) {
            if tokio::time::timeout_at(deadline, &mut site.task)
                .await
                .is_err()
            {
                site.task.abort();
                tracing::warn!("demo site {} did not stop in time", site.kind.name());
            }
        }
    }
}

impl Drop for DemoWeb {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
    }
}
