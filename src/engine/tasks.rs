//! The work the coordinator hands out: one page fetch, one robots.txt fetch,
//! one check or fetched resource, one soft-404 probe or one sitemap file.
//! Network waits run on the async runtime; parsing, hashing and WARC writing
//! run on the engine's CPU pool. Results go back to the coordinator on a channel.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use url::Url;

use super::archive::{Archive, Archived, EarlierFetch};
use super::control::HostKey;
use super::cpu_pool::CpuPool;
use super::dedup::ContentDigest;
use super::extract::custom::Extractions;
use super::extract::{self, ExtractOptions, Extracted, RobotsDirectives};
use super::fetch::{FetchError, FetchErrorKind, Fetcher, Overflow, Response};
use super::frontier::Lease;
use super::near_dup::{Fingerprint, Templates};
use super::page_facts::NoindexSource;
use super::robots::{self, RobotsAnswer, SharedRobots};
use super::sitemaps::parse::{self as sitemap, Limits, ParseError, Parsed};
use super::store::WarcLocation;
use crate::engine::config::RobotsConfig;

mod resource;

pub enum Work {
    Page {
        lease: Lease,
        result: Result<Box<Fetched>, FetchError>,
    },
    Robots {
        host: HostKey,
        /// Whose robots.txt it is (a host may have two: http and https).
        origin: Url,
        answer: RobotsAnswer,
        /// Its responses could not be archived.
        warc_error: Option<String>,
    },
    /// A soft-404 probe came back: archived, but not a page of the crawl.
    Probe {
        lease: Lease,
        result: Result<ProbeAnswer, FetchError>,
    },
    /// A sitemap file came back, read.
    Sitemap {
        lease: Lease,
        result: Result<Box<SitemapAnswer>, FetchError>,
    },
}

/// A sitemap file's answer and what it held.
pub struct SitemapAnswer {
    pub status: u16,
    pub elapsed: Duration,
    pub retry_after: Option<Duration>,
    pub content_type: Option<String>,
    pub location: Option<Url>,
    pub bytes: u64,
    /// The file read, for a 2xx answer.
    pub parsed: Option<Result<Parsed, ParseError>>,
    pub warc_at: Option<WarcLocation>,
    pub warc_error: Option<String>,
}

/// What a soft-404 probe needs of its answer.
pub struct ProbeAnswer {
    pub status: u16,
    pub elapsed: Duration,
    pub retry_after: Option<Duration>,
    /// Simhash of a 2xx HTML body.
    pub simhash: Option<u64>,
    pub content_type: Option<String>,
    pub bytes: u64,
    /// Where the exchange was archived.
    pub warc_at: Option<WarcLocation>,
    pub warc_error: Option<String>,
}

/// A response as the coordinator needs it; the body itself stays in the task.
pub struct Fetched {
    /// The URL asked for (no redirect is followed): the lease's, parsed
    /// once when it was dispatched.
    pub url: Url,
    pub status: u16,
    pub content_type: Option<String>,
    pub location: Option<Url>,
    pub retry_after: Option<Duration>,
    pub etag: Option<String>,
    pub last_modified: Option<String>,
    pub bytes: u64,
    pub elapsed: Duration,
    /// When the response's last byte arrived.
    pub answered_at: tokio::time::Instant,
    pub directives: RobotsDirectives,
    /// Where `directives.noindex` came from.
    pub noindex: Option<NoindexSource>,
    pub digest: Option<ContentDigest>,
    /// Present for HTML 2xx responses.
    pub extracted: Option<Extracted>,
    /// The content fingerprint of those, the host's template left out (`near_dup`).
    pub fingerprint: Option<Fingerprint>,
    /// Where and how the response was archived, or why it was not.
    pub archived: Archived,
    /// The body was cut at `fetch.max_body`; what was read is the page.
    pub truncated: bool,
}

impl Fetched {
    /// What the response's status line and headers say, before anything of
    /// its body is read, archived or judged.
    pub(crate) fn answer(response: Response) -> Fetched {
        Fetched {
            url: response.final_url,
            status: response.status,
            content_type: response.content_type,
            location: response.location,
            retry_after: response.retry_after,
            etag: response.etag,
            last_modified: response.last_modified,
            bytes: response.body.len() as u64,
            elapsed: response.elapsed,
            answered_at: response.answered_at,
            truncated: response.truncated,
            directives: RobotsDirectives::default(),
            noindex: None,
            digest: None,
            extracted: None,
            fingerprint: None,
            archived: Archived::default(),
        }
    }
}

/// One page (or probe) fetch and everything it needs, moved into its task.
struct PageJob {
    fetcher: Fetcher,
    lease: Lease,
    url: Url,
    /// A recrawl's earlier fetch of the page: its validators, its record.
    earlier: Option<EarlierFetch>,
    max_body: u64,
    extract: Arc<ExtractOptions>,
    /// The custom extractions in force when the fetch started; `None`: none.
    custom: Option<Arc<Extractions>>,
    templates: Arc<Templates>,
    warc: Option<Arc<Archive>>,
    cpu: CpuPool,
    done: mpsc::UnboundedSender<Work>,
}

async fn run_page(job: PageJob) {
    let PageJob {
        fetcher,
        lease,
        url,
        earlier,
        max_body,
        extract,
        custom,
        templates,
        warc,
        cpu,
        done,
    } = job;
    let validators = earlier.as_ref().and_then(|e| e.validators.as_ref());
    // A page over the cap is kept up to it, and said to be cut.
    let fetched = fetcher
        .fetch_with(&url, validators, max_body, Overflow::Truncate)
        .await;
    report_page(
        fetched,
        lease,
        &cpu,
        done,
        "page",
        move |response, lease| {
            let page = Page {
                url: &lease.entry.url,
                host: &lease.entry.host,
                earlier: earlier.as_ref(),
            };
            process(
                response,
                &extract,
                custom.as_deref(),
                &templates,
                &page,
                warc.as_deref(),
            )
        },
    );
}

/// Hands a fetched answer to the CPU pool for `work`; the pool thread
/// reports the result as `Work::Page` itself (one wake-up less per page). A
/// panic in `work` is a per-URL error naming `what` was processed.
fn report_page(
    fetched: Result<Response, FetchError>,
    lease: Lease,
    cpu: &CpuPool,
    done: mpsc::UnboundedSender<Work>,
    what: &'static str,
    work: impl FnOnce(Response, &Lease) -> Fetched + Send + 'static,
) {
    match fetched {
        Ok(response) => cpu.spawn(move || {
            let processed =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(response, &lease)));
            let result = processed.map(Box::new).map_err(|_| FetchError {
                kind: FetchErrorKind::Other,
                message: format!("{what} processing failed (internal error; see crawldeck.log)"),
                elapsed: Duration::ZERO,
            });
            let _ = done.send(Work::Page { lease, result });
        }),
        Err(e) => {
            let _ = done.send(Work::Page {
                lease,
                result: Err(e),
            });
        }
    }
}

/// The page a response answers.
struct Page<'a> {
    url: &'a str,
    host: &'a str,
    earlier: Option<&'a EarlierFetch>,
}

/// CPU and disk work on a response: directives, links, custom extractions,
/// digest, WARC.
fn process(
    response: Response,
    extract_opts: &ExtractOptions,
    custom: Option<&Extractions>,
    templates: &Templates,
    page: &Page,
    warc: Option<&Archive>,
) -> Fetched {
    let mut directives =
        RobotsDirectives::from_headers(&response.x_robots_tag, &extract_opts.product_token);
    let ok = (200..300).contains(&response.status);
    let mut extracted = (ok && extract::is_html(response.content_type.as_deref())).then(|| {
        extract::extract(
            &response.body,
            &response.final_url,
            response.content_type.as_deref(),
            extract_opts,
        )
    });
    let mut fingerprint = None;
    let header_noindex = directives.noindex;
    if let Some(e) = &mut extracted {
        directives = directives.merge(e.directives);
        // The shingles are done with once fingerprinted: not sent on.
        let features = std::mem::take(&mut e.features);
        fingerprint = Some(templates.fingerprint_page(page.host, &features));
        if let Some(custom) = custom {
            e.custom = custom.evaluate(&response.body, response.content_type.as_deref());
        }
    }
    let digest = ok.then(|| ContentDigest::of(&response.body));
    let archived = match (warc, !directives.noarchive) {
        (Some(warc), true) => warc.page(page.url, &response, digest.as_ref(), page.earlier),
        _ => Archived::default(),
    };
    Fetched {
        noindex: NoindexSource::of(
            extracted.as_ref().is_some_and(|e| e.directives.noindex),
            header_noindex,
        ),
        directives,
        digest,
        extracted,
        fingerprint,
        archived,
        ..Fetched::answer(response)
    }
}

/// A resource or external URL: asked for its status (HEAD), never parsed
/// or archived; its answer comes back as a page's does.
async fn run_check(fetcher: Fetcher, lease: Lease, url: Url, done: mpsc::UnboundedSender<Work>) {
    let result = fetcher.check(&url).await.map(|r| Box::new(checked(r)));
    let _ = done.send(Work::Page { lease, result });
}

/// What the coordinator records of a check's answer.
fn checked(response: Response) -> Fetched {
    let bytes = response
        .content_length
        .unwrap_or(response.body.len() as u64);
    Fetched {
        bytes,
        etag: None,
        last_modified: None,
        ..Fetched::answer(response)
    }
}

/// A soft-404 probe: fetched like a page (never conditionally), judged, archived.
async fn run_probe(job: PageJob) {
    let PageJob {
        fetcher,
        lease,
        url,
        max_body,
        extract,
        templates,
        warc,
        cpu,
        done,
        ..
    } = job;
    match fetcher.fetch(&url, None, max_body).await {
        Ok(response) => cpu.spawn(move || {
            let answer = judge_probe_response(
                &response,
                &extract,
                &templates,
                &lease.entry.host,
                warc.as_deref(),
            );
            let _ = done.send(Work::Probe {
                lease,
                result: Ok(answer),
            });
        }),
        Err(e) => {
            let _ = done.send(Work::Probe {
                lease,
                result: Err(e),
            });
        }
    }
}

/// A probe's answer: its simhash, and its exchange archived like a page's
/// (the inspector shows what decided the alert).
fn judge_probe_response(
    response: &Response,
    extract: &ExtractOptions,
    templates: &Templates,
    host: &str,
    warc: Option<&Archive>,
) -> ProbeAnswer {
    let ok = (200..300).contains(&response.status);
    let simhash = (ok && extract::is_html(response.content_type.as_deref())).then(|| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let extracted = extract::extract(
                &response.body,
                &response.final_url,
                response.content_type.as_deref(),
                extract,
            );
            templates.fingerprint_probe(host, &extracted.features)
        }))
        .ok()
    });
    let archived = warc.map(|warc| warc.exchange(response)).unwrap_or_default();
    ProbeAnswer {
        status: response.status,
        elapsed: response.elapsed,
        retry_after: response.retry_after,
        simhash: simhash.flatten(),
        content_type: response.content_type.clone(),
        bytes: response.body.len() as u64,
        warc_at: archived.at,
        warc_error: archived.error,
    }
}

/// A sitemap file: fetched (never conditionally, at most `limits.max_bytes`),
/// archived like a page, read on the CPU pool.
async fn run_sitemap(job: PageJob, limits: Limits) {
    let PageJob {
        fetcher,
        lease,
        url,
        warc,
        cpu,
        done,
        ..
    } = job;
    match fetcher.fetch(&url, None, limits.max_bytes).await {
        Ok(response) => cpu.spawn(move || {
            let ok = (200..300).contains(&response.status);
            let parsed = ok.then(|| {
                std::panic::catch_unwind(|| sitemap::parse(&response.body, limits)).unwrap_or_else(
                    |_| {
                        Err(ParseError::Xml {
                            at: 0,
                            message: "internal error reading the file".into(),
                        })
                    },
                )
            });
            let archived = (warc.as_deref().map(|w| w.exchange(&response))).unwrap_or_default();
            let answer = SitemapAnswer {
                status: response.status,
                elapsed: response.elapsed,
                retry_after: response.retry_after,
                content_type: response.content_type,
                location: response.location,
                bytes: response.body.len() as u64,
                parsed,
                warc_at: archived.at,
                warc_error: archived.error,
            };
            let result = Ok(Box::new(answer));
            let _ = done.send(Work::Sitemap { lease, result });
        }),
        Err(e) => {
            let _ = done.send(Work::Sitemap {
                lease,
                result: Err(e),
            });
        }
    }
}

/// What a robots.txt fetch needs, moved into its task.
struct RobotsJob {
    fetcher: Fetcher,
    host: HostKey,
    origin: Url,
    cfg: RobotsConfig,
    product_token: String,
    shared: Option<Arc<SharedRobots>>,
    warc: Option<Arc<Archive>>,
    cpu: CpuPool,
    done: mpsc::UnboundedSender<Work>,
}

/// Fetches and judges a robots.txt, then archives its responses (on the CPU
/// pool, as a page's) before the verdict goes back.
async fn run_robots(job: RobotsJob) {
    let RobotsJob {
        fetcher,
        host,
        origin,
        cfg,
        product_token,
        shared,
        warc,
        cpu,
        done,
    } = job;
    let started = tokio::time::Instant::now();
    let (verdict, ttl, responses) = match &shared {
        Some(cache) => robots::fetch_shared(cache, &fetcher, &origin, &cfg, &product_token).await,
        None => {
            let fetch =
                robots::fetch_robots_with_body(&fetcher, &origin, &cfg, &product_token).await;
            (fetch.verdict, fetch.ttl, fetch.responses)
        }
    };
    let answer = RobotsAnswer {
        verdict,
        ttl,
        elapsed: started.elapsed(),
    };
    let report = move |warc_error| {
        let _ = done.send(Work::Robots {
            host,
            origin,
            answer,
            warc_error,
        });
    };
    match warc {
        Some(warc) if !responses.is_empty() => cpu.spawn(move || {
            let error = responses
                .iter()
                .find_map(|response| warc.exchange(response).error);
            report(error);
        }),
        _ => report(None),
    }
}

/// Starts fetch tasks; owns what they share (the HTTP client, extraction
/// options, the WARC writer, the CPU pool) and the channel their results
/// come back on.
pub(crate) struct Workers {
    fetcher: Fetcher,
    extract: Arc<ExtractOptions>,
    /// The custom extractions in force; `None` while there are none, so
    /// pages are not parsed for them.
    custom: Option<Arc<Extractions>>,
    /// The hosts' templates, which the content measure leaves out.
    templates: Arc<Templates>,
    warc: Option<Arc<Archive>>,
    cpu: CpuPool,
    max_body: u64,
    robots: RobotsConfig,
    /// The crawl's robots.txt cache when the crawl is shared.
    shared_robots: Option<Arc<SharedRobots>>,
    done: mpsc::UnboundedSender<Work>,
}

impl Workers {
    /// Workers whose results arrive on the returned receiver.
    pub(crate) fn new(
        fetcher: Fetcher,
        extract: ExtractOptions,
        warc: Option<Archive>,
        cpu: CpuPool,
        max_body: u64,
        robots: RobotsConfig,
    ) -> (Self, mpsc::UnboundedReceiver<Work>) {
        let (done, results) = mpsc::unbounded_channel();
        let workers = Workers {
            fetcher,
            extract: Arc::new(extract),
            custom: None,
            templates: Arc::default(),
            warc: warc.map(Arc::new),
            cpu,
            max_body,
            robots,
            shared_robots: None,
            done,
        };
        (workers, results)
    }

    /// Fetches and processes one page; the result arrives as `Work::Page`.
    pub(crate) fn spawn_page(&self, lease: Lease, url: Url, earlier: Option<EarlierFetch>) {
        tokio::spawn(run_page(self.job(lease, url, earlier)));
    }

    /// Checks a resource or external URL; the answer arrives as `Work::Page`.
    pub(crate) fn spawn_check(&self, lease: Lease, url: Url) {
        tokio::spawn(run_check(
            self.fetcher.clone(),
            lease,
            url,
            self.done.clone(),
        ));
    }

    /// Fetches and archives a resource (`--resources fetch`); the answer
    /// arrives as `Work::Page`.
    pub(crate) fn spawn_resource(&self, lease: Lease, url: Url) {
        tokio::spawn(resource::run_resource(self.job(lease, url, None)));
    }

    /// Fetches a soft-404 probe (archived, not a page); the answer arrives as `Work::Probe`.
    pub(crate) fn spawn_probe(&self, lease: Lease, url: Url) {
        tokio::spawn(run_probe(self.job(lease, url, None)));
    }

    /// Fetches and reads a sitemap file; the answer arrives as `Work::Sitemap`.
    pub(crate) fn spawn_sitemap(&self, lease: Lease, url: Url, limits: Limits) {
        tokio::spawn(run_sitemap(self.job(lease, url, None), limits));
    }

    fn job(&self, lease: Lease, url: Url, earlier: Option<EarlierFetch>) -> PageJob {
        PageJob {
            fetcher: self.fetcher.clone(),
            lease,
            url,
            earlier,
            max_body: self.max_body,
            extract: self.extract.clone(),
            custom: self.custom.clone(),
            templates: self.templates.clone(),
            warc: self.warc.clone(),
            cpu: self.cpu.clone(),
            done: self.done.clone(),
        }
    }

    /// Fetches a host's robots.txt; the verdict arrives as `Work::Robots`.
    pub(crate) fn spawn_robots(&self, host: HostKey, origin: Url) {
        tokio::spawn(run_robots(RobotsJob {
            fetcher: self.fetcher.clone(),
            host,
            origin,
            cfg: self.robots.clone(),
            product_token: self.extract.product_token.clone(),
            shared: self.shared_robots.clone(),
            warc: self.warc.clone(),
            cpu: self.cpu.clone(),
            done: self.done.clone(),
        }));
    }

    /// The custom extractions for pages fetched from now on (fetches under
    /// way keep the set they started with).
    pub(crate) fn set_extractions(&mut self, extractions: Extractions) {
        self.custom = (!extractions.is_empty()).then(|| Arc::new(extractions));
    }

    /// Takes robots.txt answers from (and gives them to) the workers of a
    /// shared crawl.
    pub(crate) fn share_robots(&mut self, cache: SharedRobots) {
        self.shared_robots = Some(Arc::new(cache));
    }

    /// The fetcher's private-address guard (it learns the seeds' classes).
    pub(crate) fn address_guard(&self) -> &crate::engine::address::AddressGuard {
        self.fetcher.guard()
    }

    /// Resolves the seeds' names so their address classes are allowed.
    pub(crate) async fn resolve_seeds(&self) {
        self.fetcher.resolve_seeds().await
    }

    /// Writes the buffered WARC records to their files, before the crawl
    /// loop stores their locations.
    pub(crate) fn drain_warc(&self) -> std::io::Result<()> {
        match &self.warc {
            Some(warc) => warc.drain(),
            None => Ok(()),
        }
    }

    /// Writes buffered WARC output to disk and makes it durable.
    pub(crate) fn flush_warc(&self) -> std::io::Result<()> {
        match &self.warc {
            Some(warc) => warc.flush(),
            None => Ok(()),
        }
    }
}
