//! Page generators, one module per family of sites. Every page is computed
//! from the request path (and a few per-site counters); nothing is read from disk.

mod audit;
pub(crate) mod bench;
mod blog;
mod content;
pub(crate) mod faults;
pub(crate) mod hostile;
pub(crate) mod links;
pub(crate) mod shop;
mod traps;
mod triage;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use url::Url;

use super::SiteKind;

pub use audit::{
    AUDIT_CHANGED_BROKEN, AUDIT_CHANGED_REMOVED, AUDIT_CHANGED_TITLE, AUDIT_NOT_IN_SITEMAP,
    AUDIT_ORPHANS, AUDIT_PAGES, AUDIT_SITEMAP_FILES, AUDIT_SITEMAP_NOT_INDEXABLE,
};
pub use blog::{blog_allowed_paths, blog_disallowed_paths};
pub(crate) use hostile::huge_chunk;
pub use triage::{archive_real_paths, MANUAL_PAGES};

/// Everything a site generator may consult besides the request.
pub(crate) struct SiteCtx {
    pub kind: SiteKind,
    pub base: Url,
    /// Base URLs of every site of this demo web, for cross-site links.
    pub peers: std::sync::Arc<HashMap<SiteKind, Url>>,
    pub latency_scale: f64,
    /// Requests for /robots.txt so far (RobotsFlaky's 503 sequence).
    pub robots_requests: AtomicU64,
    /// Requests for anything else so far (Flaky's failure window).
    pub page_requests: AtomicU64,
    /// Bench geometry: (pages per host, number of hosts); zero elsewhere.
    pub bench: (u32, u32),
    /// Set by [`crate::demo::DemoWeb::change_sites`]: sites that have a second
    /// version serve it (shared by every site of the web).
    pub changed: Arc<AtomicBool>,
}

impl SiteCtx {
    pub fn scaled(&self, d: Duration) -> Duration {
        if self.latency_scale.is_finite() && self.latency_scale > 0.0 {
            d.mul_f64(self.latency_scale.min(1000.0))
        } else {
            Duration::ZERO
        }
    }

    /// Whether the site serves its second version.
    pub fn changed(&self) -> bool {
        self.changed.load(Ordering::Relaxed)
    }

    /// An absolute URL on this site.
    pub fn abs(&self, path: &str) -> String {
        self.base
            .join(path)
            .map(String::from)
            .unwrap_or_else(|_| path.to_string())
    }
}

pub(crate) struct Req<'a> {
    /// The raw path, not decoded.
    pub path: &'a str,
    pub query: Option<&'a str>,
}

impl Req<'_> {
    pub fn query_param(&self, name: &str) -> Option<&str> {
        self.query?.split('&').find_map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (k == name).then_some(v)
        })
    }
}

pub(crate) enum ReplyBody {
    Full(Bytes),
    /// `total` bytes of HTML filler, streamed in chunks.
    Huge {
        total: u64,
    },
    /// Headers are sent, then the body never arrives (until shutdown).
    Stall,
    /// The connection is dropped without a response.
    Reset,
}

pub(crate) struct Reply {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub body: ReplyBody,
    /// Artificial latency before the response is sent.
    pub delay: Duration,
}

impl Reply {
    pub(crate) fn with_type(status: u16, content_type: &str, body: impl Into<Bytes>) -> Self {
        Reply {
            status,
            headers: vec![("content-type", content_type.to_string())],
            body: ReplyBody::Full(body.into()),
            delay: Duration::ZERO,
        }
    }

    pub fn html(body: String) -> Self {
        Self::with_type(200, "text/html; charset=utf-8", body)
    }

    pub fn text(body: impl Into<Bytes>) -> Self {
        Self::with_type(200, "text/plain; charset=utf-8", body)
    }

    pub fn status(status: u16, message: &'static str) -> Self {
        Self::with_type(status, "text/plain; charset=utf-8", message)
    }

    pub fn not_found() -> Self {
        Self::status(404, "not found\n")
    }

    pub fn redirect(status: u16, location: &str) -> Self {
        let mut r = Self::status(status, "moved\n");
        r.headers.push(("location", location.to_string()));
        r
    }

    pub fn reset() -> Self {
        Reply {
            status: super::log::STATUS_NO_RESPONSE,
            headers: Vec::new(),
            body: ReplyBody::Reset,
            delay: Duration::ZERO,
        }
    }

    pub fn header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    pub fn delayed(mut self, d: Duration) -> Self {
        self.delay = d;
        self
    }
}

/// The permissive robots.txt most sites serve.
pub(crate) fn allow_all_robots() -> Reply {
    Reply::text("User-agent: *\nDisallow:\n")
}

pub(crate) fn respond(ctx: &SiteCtx, req: &Req) -> Reply {
    match ctx.kind {
        SiteKind::Shop => shop::respond(ctx, req),
        SiteKind::Blog => blog::respond(ctx, req),
        SiteKind::Slow => content::slow(ctx, req),
        SiteKind::Dupes => content::dupes(ctx, req),
        SiteKind::Params => content::params(ctx, req),
        SiteKind::DeepFinite => content::deep_finite(ctx, req),
        SiteKind::Calendar => traps::calendar(ctx, req),
        SiteKind::Deep => traps::deep(ctx, req),
        SiteKind::Session => traps::session(ctx, req),
        SiteKind::Soft404 => traps::soft404(ctx, req),
        SiteKind::Facets => traps::facets(ctx, req),
        SiteKind::Manual => triage::manual(ctx, req),
        SiteKind::Archive => triage::archive(ctx, req),
        SiteKind::Audit => audit::respond(ctx, req),
        SiteKind::RobotsFlaky => faults::robots_flaky(ctx, req),
        SiteKind::Flaky => faults::flaky(ctx, req),
        SiteKind::RobotsStatus(code) => faults::robots_status(ctx, req, code),
        SiteKind::RedirectLoop => faults::redirect_loop(ctx, req),
        SiteKind::Hostile => hostile::respond(ctx, req),
        SiteKind::Bench(host) => bench::respond(ctx, req, host),
        SiteKind::Links => links::links(ctx, req),
        SiteKind::Elsewhere => links::elsewhere(ctx, req),
    }
}

/// Builds the large canned bodies ahead of time: the hostile pages (a
/// gzip bomb among them, seconds of CPU) only when the hostile site is
/// served, so a bench does not count them.
pub(crate) fn warm_up(hostile: bool, bench: bool) {
    if hostile {
        hostile::warm_up();
    }
    if bench {
        bench::warm_up();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(kind: SiteKind, latency_scale: f64) -> SiteCtx {
        let base = Url::parse("http://site.localhost:8080/").unwrap();
        SiteCtx {
            kind,
            base: base.clone(),
            peers: std::sync::Arc::new(HashMap::from([(kind, base)])),
            latency_scale,
            robots_requests: AtomicU64::new(0),
            page_requests: AtomicU64::new(0),
            bench: (0, 0),
            changed: Default::default(),
        }
    }

    fn get(ctx: &SiteCtx, path: &str) -> Reply {
        respond(ctx, &Req { path, query: None })
    }

    #[test]
    fn slow_site_delay_scales_with_latency_and_never_panics_on_odd_scales() {
        assert_eq!(
            get(&ctx(SiteKind::Slow, 1.0), "/").delay,
            Duration::from_millis(300)
        );
        assert_eq!(
            get(&ctx(SiteKind::Slow, 0.5), "/robots.txt").delay,
            Duration::from_millis(150)
        );
        for scale in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert_eq!(get(&ctx(SiteKind::Slow, scale), "/").delay, Duration::ZERO);
        }
        assert!(get(&ctx(SiteKind::Slow, 1e12), "/").delay <= Duration::from_secs(300));
    }

    #[test]
    fn blog_crawl_delay_follows_latency_scale() {
        let body = |scale| match get(&ctx(SiteKind::Blog, scale), "/robots.txt").body {
            ReplyBody::Full(b) => String::from_utf8(b.to_vec()).unwrap(),
            _ => panic!("robots.txt has a body"),
        };
        assert!(body(1.0).contains("Crawl-delay: 1\n"));
        assert!(body(0.0).contains("Crawl-delay: 0\n"));
    }

    #[test]
    fn odd_paths_get_an_answer_from_every_site() {
        let mut kinds = SiteKind::catalogue();
        kinds.extend([SiteKind::RobotsStatus(0), SiteKind::Bench(0)]);
        let paths = [
            "",
            "/",
            "//",
            "/c/",
            "/c//list/",
            "/p/-.html",
            "/p/x-99999999999.html",
            "/calendar/99999999999999/13/",
            "/calendar/-5/1/",
            "/t/c1/",
            "/t/c99/l1/",
            "/t//",
            "/docs/",
            "/hop/",
            "/hop/99",
            "/old-",
            "/%",
            "/%7",
            "/page/0.html",
            "/list",
            "/item/0.html",
            "/p/4294967296.html",
        ];
        for kind in kinds {
            let ctx = ctx(kind, 1.0);
            for path in paths {
                let reply = respond(
                    &ctx,
                    &Req {
                        path,
                        query: Some("page=&sort=&&="),
                    },
                );
                assert!(reply.status < 600, "{kind:?} {path}");
            }
        }
    }
}
