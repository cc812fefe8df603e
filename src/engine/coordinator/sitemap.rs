//! Sitemaps as the crawl loop runs them. When a host's robots.txt first
//! settles open, its `Sitemap:` files (or `/sitemap.xml` when it names none)
//! are queued at the head of their host's queue, through the seen set, and
//! handed out by `dispatch` like pages, so robots.txt, politeness, the
//! breaker, the global slots and the private-address guard apply. A file is
//! fetched only on the registrable domain of the host that named it
//! (robots.txt or an index): a sitemap elsewhere needs proof of ownership
//! the crawl cannot check. Each file is archived and recorded like a page
//! (an error outcome `sitemap` when it is missing or unreadable, so it shows
//! in `pages`); its URLs go the links' way (`links::admit_sitemap_urls`) at
//! depth 1, after their `x <url>` rows are written (`store::sitemaps`).

use tokio::time::Instant;
use url::Url;

use super::admitted::Admitted;
use super::results::record_for;
use super::Coordinator;
use crate::engine::fetch::{FetchError, FetchErrorKind};
use crate::engine::frontier::{FrontierEntry, Lease};
use crate::engine::sitemaps::parse::{Kind, Limits, Parsed};
use crate::engine::sitemaps::PendingFile;
use crate::engine::store::{PageOutcome, SitemapEntry, UrlKind};
use crate::engine::tasks::SitemapAnswer;
use crate::engine::telemetry::{EngineEvent, Level};
use crate::engine::url_norm::{self, registrable_domain};

/// The error kind of a sitemap file that could not be used.
pub(crate) const SITEMAP_ERROR: &str = "sitemap";

impl Coordinator {
    /// robots.txt of `host` settled open: the first time, queue its sitemaps.
    pub(super) fn find_sitemaps(&mut self, host: &str, origin: &Url, listed: &[String]) {
        if !self.cfg.sitemaps.enabled || self.hosts.finished_reason(host).is_some() {
            return;
        }
        // A host out of scope is only met through external checks: none of
        // its URLs would be crawled.
        if matches!(
            self.filter.check(origin),
            Err(url_norm::Rejection::OutOfScope)
        ) {
            return;
        }
        match self.sitemaps.met(host) {
            Ok(false) => {}
            Ok(true) => return,
            Err(e) => return self.storage_failed("reading a host's sitemaps", e),
        }
        let robots = origin.join("/robots.txt").map(String::from);
        let (files, listed_in) = if listed.is_empty() {
            let guess = origin.join("/sitemap.xml").ok();
            let named = guess.as_ref().map(Url::to_string).unwrap_or_default();
            (guess.into_iter().collect(), named)
        } else {
            let urls = listed.iter().filter_map(|s| Url::parse(s).ok()).collect();
            (urls, robots.unwrap_or_default())
        };
        let entries = self.claim_sitemap_files(host, files, 0, &listed_in);
        if let Err(e) = self.frontier.push(entries) {
            self.storage_failed("queueing sitemap files", e);
        }
    }

    /// Takes sitemap files named by `listed_in` for `host` (within its cap
    /// and registrable domain), records them, and returns those never seen
    /// as frontier entries; they are pending from now on.
    fn claim_sitemap_files(
        &mut self,
        host: &str,
        urls: Vec<Url>,
        level: u8,
        listed_in: &str,
    ) -> Vec<FrontierEntry> {
        let domain = registrable_domain(host.split(':').next().unwrap_or(host)).to_string();
        let (mut kept, mut foreign) = (Vec::new(), 0usize);
        for mut url in urls {
            url_norm::normalize(&mut url);
            let own = matches!(url.scheme(), "http" | "https")
                && url.as_str().len() <= self.cfg.scope.max_url_len
                && url
                    .host_str()
                    .is_some_and(|h| registrable_domain(h) == domain);
            if own {
                kept.push(PendingFile {
                    url: url.into(),
                    level,
                });
            } else {
                foreign += 1;
            }
        }
        let wanted = kept.len();
        let taken = match self.sitemaps.want(host, kept) {
            Ok(taken) => taken,
            Err(e) => {
                self.storage_failed("storing a host's sitemap files", e);
                return Vec::new();
            }
        };
        if foreign > 0 || taken.len() < wanted {
            self.outbox.log(
                Level::Info,
                format!(
                    "{host}: {foreign} sitemap file(s) named by {listed_in} are off its domain, \
                     {} over sitemaps.max_files_per_host: not fetched",
                    wanted - taken.len()
                ),
            );
        }
        self.queue_files(taken, listed_in)
    }

    /// Records the files as listed and claims them in the seen set; a file
    /// seen before (a page linked it) is no longer pending.
    fn queue_files(&mut self, files: Vec<PendingFile>, listed_in: &str) -> Vec<FrontierEntry> {
        let rows: Vec<SitemapEntry> = files
            .iter()
            .map(|f| SitemapEntry {
                url: f.url.clone(),
                sitemap: listed_in.to_string(),
                lastmod: None,
                file: true,
            })
            .collect();
        if let Err(e) = self.store.record_sitemap_entries(&rows) {
            self.storage_failed("recording sitemap files", e);
            return Vec::new();
        }
        let texts: Vec<&str> = files.iter().map(|f| f.url.as_str()).collect();
        let fresh = match self.frontier.claim_unseen(&texts) {
            Ok(fresh) => fresh,
            Err(e) => {
                self.storage_failed("claiming sitemap files", e);
                return Vec::new();
            }
        };
        let mut entries = Vec::new();
        for (file, fresh) in files.into_iter().zip(fresh) {
            let Ok(url) = Url::parse(&file.url) else {
                continue;
            };
            if !fresh {
                if let Err(e) = self.sitemaps.finish(&file.url) {
                    self.storage_failed("storing a sitemap file's end", e);
                }
                continue;
            }
            entries.push(FrontierEntry {
                priority: 0,
                host: url_norm::host_key(&url),
                url: file.url,
                depth: 0,
                redirects: 0,
                kind: UrlKind::Page,
            });
        }
        entries
    }

    /// Whether this lease is a pending sitemap file rather than a page.
    pub(super) fn is_sitemap(&self, lease: &Lease) -> bool {
        self.sitemaps.any_pending() && self.sitemaps.pending(&lease.entry.url).is_some()
    }

    /// The bounds of one file.
    pub(super) fn sitemap_limits(&self) -> Limits {
        Limits {
            max_bytes: self.cfg.sitemaps.max_bytes,
            max_urls: self.cfg.sitemaps.max_urls,
        }
    }

    /// robots.txt disallows the file: recorded as such, not fetched.
    pub(super) fn sitemap_denied(&mut self, lease: Lease) {
        let url = lease.entry.url.clone();
        self.record_robots_denied(lease);
        self.end_sitemap(&url);
    }

    fn end_sitemap(&mut self, url: &str) {
        if let Err(e) = self.sitemaps.finish(url) {
            self.storage_failed("storing a sitemap file's end", e);
        }
    }

    /// A sitemap file came back: its record, and its URLs (or files) queued
    /// with it in the group commit.
    pub(super) fn sitemap_answered(
        &mut self,
        lease: Lease,
        result: Result<Box<SitemapAnswer>, FetchError>,
        now: Instant,
    ) {
        let host = lease.entry.host.clone();
        let url = lease.entry.url.clone();
        let answer = match result {
            Ok(answer) => answer,
            Err(e) => return self.sitemap_not_fetched(lease, e, now),
        };
        let status = answer.status;
        self.hosts
            .record_answer(&host, status, answer.elapsed, answer.retry_after, now);
        self.schedule_next(&host, now);
        self.emit_sitemap(&lease, Some(status), answer.elapsed, None);
        let (owner, level) = self.sitemaps.pending(&url).unwrap_or((host.clone(), 0));
        let mut answer = *answer;
        let parsed = answer.parsed.take();
        match (parsed, answer.location.clone()) {
            (Some(Ok(parsed)), _) => self.sitemap_read(lease, &owner, level, parsed, &answer),
            (Some(Err(e)), _) => self.sitemap_failed(lease, e.to_string(), &answer),
            (None, Some(location)) if (300..400).contains(&status) => {
                // Followed as a file of its own (http → https, a moved file).
                let files = self.claim_sitemap_files(&owner, vec![location.clone()], level, &url);
                let outcome = PageOutcome::Redirect {
                    status,
                    location: location.into(),
                };
                self.commit_sitemap(lease, outcome, &answer, files);
            }
            (None, _) => {
                let message = format!("answered {status}: no sitemap read");
                self.sitemap_failed(lease, message, &answer);
            }
        }
    }

    /// No answer: recorded with the fetch error's kind, as a page's would be
    /// (not retried: the file is metadata, and the host's pages go on).
    fn sitemap_not_fetched(&mut self, lease: Lease, e: FetchError, now: Instant) {
        let host = lease.entry.host.clone();
        self.hosts.record_failure(&host, e.elapsed, now);
        if e.kind == FetchErrorKind::PrivateAddress {
            self.hosts.record_refusal(&host, &e.message);
            self.stats.count().refused_private += 1;
        }
        self.schedule_next(&host, now);
        let kind = e.kind.label();
        let message = format!("{kind}: {}", e.message);
        self.emit_sitemap(&lease, None, e.elapsed, Some(message));
        self.outbox.log(
            Level::Info,
            format!("sitemap {}: {kind}: {}", lease.entry.url, e.message),
        );
        self.stats.count().count_error(kind);
        // As a page without an answer: the host row adds up to the crawl's.
        self.count_recorded(&host, None, e.kind == FetchErrorKind::PrivateAddress);
        let url = lease.entry.url.clone();
        let outcome = PageOutcome::Error {
            kind: kind.to_string(),
            message: e.message,
        };
        let record = record_for(&lease.entry, outcome);
        self.commit(lease, record, Vec::new());
        self.end_sitemap(&url);
    }

    /// The TUI's recent fetches of the host show the file too.
    fn emit_sitemap(
        &mut self,
        lease: &Lease,
        status: Option<u16>,
        latency: std::time::Duration,
        error: Option<String>,
    ) {
        self.outbox.emit(EngineEvent::Fetched {
            host: lease.entry.host.clone(),
            url: lease.entry.url.clone(),
            status,
            latency,
            bytes: 0,
            error,
        });
    }

    /// A file that could not be used: an error record, never a stop. A
    /// guessed `/sitemap.xml` that is missing is common: said, not warned,
    /// and recorded as the 404 it is, not as an error.
    fn sitemap_failed(&mut self, lease: Lease, message: String, answer: &SitemapAnswer) {
        let guessed = self
            .sitemaps
            .pending(&lease.entry.url)
            .is_some_and(|(_, l)| l == 0)
            && lease.entry.url.ends_with("/sitemap.xml");
        let level = if guessed { Level::Info } else { Level::Warn };
        self.outbox
            .log(level, format!("sitemap {}: {message}", lease.entry.url));
        if guessed && matches!(answer.status, 404 | 410) {
            // No sitemap, which is no error: the answer is recorded as it came.
            let outcome = PageOutcome::Fetched {
                status: answer.status,
            };
            return self.commit_sitemap(lease, outcome, answer, Vec::new());
        }
        // The summary's error counts are the listing's.
        self.stats.count().count_error(SITEMAP_ERROR);
        let outcome = PageOutcome::Error {
            kind: SITEMAP_ERROR.into(),
            message,
        };
        self.commit_sitemap(lease, outcome, answer, Vec::new());
    }

    /// Ends the file's lease with its record and what it queues.
    fn commit_sitemap(
        &mut self,
        lease: Lease,
        outcome: PageOutcome,
        answer: &SitemapAnswer,
        queued: Vec<FrontierEntry>,
    ) {
        let mut record = record_for(&lease.entry, outcome);
        record.bytes = answer.bytes;
        record.set_content_type(answer.content_type.as_deref());
        record.warc = answer.warc_at.clone();
        if let Some(e) = &answer.warc_error {
            // The file was read; only the inspector's copy is missing.
            self.outbox.log(
                Level::Warn,
                format!("archiving sitemap {}: {e}", lease.entry.url),
            );
        }
        let url = lease.entry.url.clone();
        self.commit(lease, record, queued);
        self.end_sitemap(&url);
    }

    /// A file read: an index queues its children (one level deeper, within
    /// `sitemaps.max_index_depth`), a urlset its URLs.
    fn sitemap_read(
        &mut self,
        lease: Lease,
        owner: &str,
        level: u8,
        parsed: Parsed,
        answer: &SitemapAnswer,
    ) {
        let file = lease.entry.url.clone();
        let Ok(file_url) = Url::parse(&file) else {
            return self.sitemap_failed(lease, "stored URL no longer parses".into(), answer);
        };
        let total = parsed.locs.len();
        let mut notes = Vec::new();
        if parsed.cut > 0 {
            notes.push(format!("{} past sitemaps.max_urls not read", parsed.cut));
        }
        if parsed.skipped > 0 {
            notes.push(format!("{} without a usable <loc>", parsed.skipped));
        }
        let (queued, what) = match parsed.kind {
            Kind::Index if level >= self.cfg.sitemaps.max_index_depth => {
                notes.push("deeper than sitemaps.max_index_depth: not followed".into());
                (Admitted::default(), "index")
            }
            Kind::Index => {
                let urls = parsed.locs.iter().filter_map(|l| Url::parse(&l.url).ok());
                let files = self.claim_sitemap_files(owner, urls.collect(), level + 1, &file);
                (Admitted::from(files), "index")
            }
            Kind::UrlSet => match self.sitemap_urls(&file_url, parsed) {
                Some(urls) => (urls, "urlset"),
                // Its URLs' rows are not stored: fetched again after the fault.
                None => return self.release(lease),
            },
        };
        let notes = if notes.is_empty() {
            String::new()
        } else {
            format!(" ({})", notes.join("; "))
        };
        self.outbox.log(
            Level::Info,
            format!(
                "sitemap {file}: {what} of {total} entries, {} queued{notes}",
                queued.len()
            ),
        );
        let status = answer.status;
        self.commit_sitemap(
            lease,
            PageOutcome::Fetched { status },
            answer,
            queued.entries,
        );
    }

    /// A urlset's URLs: their rows written, then admitted like links;
    /// `None` if the rows could not be written.
    fn sitemap_urls(&mut self, file: &Url, parsed: Parsed) -> Option<Admitted> {
        let mut urls = Vec::with_capacity(parsed.locs.len());
        let mut rows = Vec::with_capacity(parsed.locs.len());
        for loc in parsed.locs {
            let Ok(mut url) = Url::parse(&loc.url) else {
                continue;
            };
            url_norm::normalize(&mut url);
            rows.push(SitemapEntry {
                url: url.to_string(),
                sitemap: file.to_string(),
                lastmod: loc.lastmod,
                file: false,
            });
            urls.push(url);
        }
        if let Err(e) = self.store.record_sitemap_entries(&rows) {
            self.storage_failed("recording a sitemap's URLs", e);
            return None;
        }
        Some(self.admit_sitemap_urls(file, urls, 1))
    }
}
