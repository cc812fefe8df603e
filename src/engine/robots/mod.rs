//! robots.txt: fetching, status semantics and expiry (invariant "robots.txt
//! first" in docs/ARCHITECTURE.md).
//! Rule matching is RFC 9309 (longest match) by texting_robots.
//!
//! Status handling, from the HTTP guide's robots chapter: 2xx → parse;
//! 401/403 → the whole site is off limits (allowed under [`RobotsMode::Rfc9309`]);
//! 404/410 and other 4xx → no restrictions; 429, 5xx and network failures →
//! unavailable: postpone the host and retry ([`RobotsBackoff`]); 3xx → follow
//! up to [`MAX_REDIRECTS`] hops, on any host.

mod backoff;
mod rules;
mod shared;
#[cfg(test)]
mod tests;

use std::time::Duration;

use url::Url;

pub use backoff::RobotsBackoff;
#[cfg(test)]
use rules::normalize_escapes;
pub use rules::{complete_lines, RobotsGroup, RobotsRules};
pub(crate) use shared::{fetch_shared, SharedRobots};

use super::fetch::{FetchErrorKind, Fetcher, Overflow, Response};
use crate::engine::config::{RobotsConfig, RobotsMode};

/// Redirect hops followed for robots.txt (RFC 9309 §2.3.1.2).
pub const MAX_REDIRECTS: usize = 5;
/// Longest time a robots.txt answer is reused, whatever the headers say
/// (RFC 9309 §2.4: no more than 24 hours).
pub const MAX_TTL: Duration = Duration::from_secs(24 * 3600);
/// Shortest lifetime taken from caching headers (`no-cache` would otherwise
/// mean one robots.txt request per page).
pub const MIN_HEADER_TTL: Duration = Duration::from_secs(60);
/// Status recorded for an attempt that got no HTTP response at all.
pub const NO_RESPONSE: u16 = 0;

/// One robots.txt fetch as the host table takes it.
#[derive(Debug, Clone)]
pub struct RobotsAnswer {
    /// What the answer means for the host.
    pub verdict: RobotsVerdict,
    /// How long the verdict may be cached.
    pub ttl: Duration,
    /// How long the fetch took (it counts for the host's politeness).
    pub elapsed: Duration,
}

#[derive(Debug, Clone)]
pub enum RobotsVerdict {
    Parsed(RobotsRules),
    AllowAll,
    DisallowAll,
    /// Try again later; crawl nothing of the host meanwhile.
    Unavailable {
        retry_after: Option<Duration>,
    },
}

impl RobotsVerdict {
    #[cfg(test)]
    pub fn allowed(&self, url: &Url) -> bool {
        match self {
            RobotsVerdict::Parsed(rules) => rules.allowed(url),
            RobotsVerdict::AllowAll => true,
            RobotsVerdict::DisallowAll | RobotsVerdict::Unavailable { .. } => false,
        }
    }

    #[cfg(test)]
    pub fn crawl_delay(&self) -> Option<Duration> {
        match self {
            RobotsVerdict::Parsed(rules) => rules.crawl_delay(),
            _ => None,
        }
    }
}

/// The robots.txt URL for the origin (scheme, host, port) of `url`.
pub fn robots_url(url: &Url) -> Option<Url> {
    let mut robots = url.join("/robots.txt").ok()?;
    robots.set_query(None);
    robots.set_fragment(None);
    let _ = robots.set_username("");
    let _ = robots.set_password(None);
    Some(robots)
}

/// Fetches and judges the robots.txt of `origin`'s host. Returns the verdict,
/// how long it holds (zero for `Unavailable`: the caller's backoff decides),
/// and the status of every request made ([`NO_RESPONSE`] for network failures).
/// The whole chain, redirects included, gets one `fetch.total_timeout`: a
/// slow redirect chain must not hold the host for five timeouts.
#[cfg(test)]
pub async fn fetch_robots(
    fetcher: &Fetcher,
    origin: &Url,
    cfg: &RobotsConfig,
    product_token: &str,
) -> (RobotsVerdict, Duration, Vec<u16>) {
    let fetch = fetch_robots_with_body(fetcher, origin, cfg, product_token).await;
    (fetch.verdict, fetch.ttl, fetch.statuses)
}

/// A robots.txt fetch: the verdict and what it came from.
pub struct RobotsFetch {
    pub verdict: RobotsVerdict,
    pub ttl: Duration,
    /// The status of every request made ([`NO_RESPONSE`] for network failures).
    pub statuses: Vec<u16>,
    /// The file the `Parsed` verdict came from (what workers of a shared
    /// crawl hand each other).
    pub body: Option<Vec<u8>>,
    /// Every response received, redirects included, to archive.
    pub responses: Vec<Response>,
}

/// [`fetch_robots`], with the body and the responses.
pub async fn fetch_robots_with_body(
    fetcher: &Fetcher,
    origin: &Url,
    cfg: &RobotsConfig,
    product_token: &str,
) -> RobotsFetch {
    let mut fetch = RobotsFetch {
        verdict: RobotsVerdict::AllowAll,
        ttl: Duration::ZERO,
        statuses: Vec::new(),
        body: None,
        responses: Vec::new(),
    };
    let chain = fetch_chain(fetcher, origin, cfg, product_token, &mut fetch);
    match tokio::time::timeout(fetcher.total_timeout(), chain).await {
        Ok((verdict, ttl)) => {
            fetch.verdict = verdict;
            fetch.ttl = ttl;
        }
        Err(_) => {
            tracing::debug!(%origin, "robots.txt: no answer within fetch.total_timeout");
            fetch.statuses.push(NO_RESPONSE);
            fetch.verdict = RobotsVerdict::Unavailable { retry_after: None };
            fetch.body = None;
        }
    }
    fetch
}

async fn fetch_chain(
    fetcher: &Fetcher,
    origin: &Url,
    cfg: &RobotsConfig,
    product_token: &str,
    out: &mut RobotsFetch,
) -> (RobotsVerdict, Duration) {
    let unavailable = |retry_after| RobotsVerdict::Unavailable { retry_after };
    let Some(mut url) = robots_url(origin) else {
        return (RobotsVerdict::AllowAll, cfg.default_ttl.min(MAX_TTL));
    };
    for _hop in 0..=MAX_REDIRECTS {
        let response = match fetcher
            // One byte over the limit tells a cut body from one that just fits.
            .fetch_with(
                &url,
                None,
                cfg.max_size.saturating_add(1),
                Overflow::Truncate,
            )
            .await
        {
            Ok(response) => response,
            // Redirected somewhere that cannot be fetched (not http, too long): no file.
            Err(err) if err.kind == FetchErrorKind::InvalidUrl => {
                tracing::debug!(%url, %err, "robots.txt not fetchable");
                return (RobotsVerdict::AllowAll, cfg.default_ttl.min(MAX_TTL));
            }
            // On a refused address: no file, and the host's pages are refused
            // one by one while its name stays there. Asked again soon, so a
            // name that moves to a public address meets its rules before long.
            Err(err) if err.kind == FetchErrorKind::PrivateAddress => {
                tracing::debug!(%url, %err, "robots.txt on a refused address");
                return (RobotsVerdict::AllowAll, MIN_HEADER_TTL);
            }
            Err(err) => {
                tracing::debug!(%url, %err, "robots.txt unavailable");
                out.statuses.push(NO_RESPONSE);
                return (unavailable(None), Duration::ZERO);
            }
        };
        out.statuses.push(response.status);
        let ttl = ttl_from(response.cache_max_age, cfg);
        let (status, retry_after) = (response.status, response.retry_after);
        let location = response.location.clone();
        let file = (200..=299)
            .contains(&status)
            .then(|| complete_lines(&response.body, cfg.max_size).to_vec());
        out.responses.push(response);
        let verdict = match status {
            200..=299 => {
                let body = file.unwrap_or_default();
                out.body = Some(body.clone());
                let token = product_token.to_string();
                let max_delay = cfg.max_crawl_delay;
                let parsed = tokio::task::spawn_blocking(move || {
                    RobotsRules::parse(&body, &token, max_delay)
                })
                .await;
                match parsed {
                    Ok(rules) => RobotsVerdict::Parsed(rules),
                    // The parser panicked on this input: treat the file as unusable for now.
                    Err(_) => return (unavailable(None), Duration::ZERO),
                }
            }
            300..=399 => match location {
                Some(next) => {
                    url = next;
                    continue;
                }
                // A redirect to nowhere: no robots.txt to honour.
                None => RobotsVerdict::AllowAll,
            },
            401 | 403 => match cfg.mode {
                RobotsMode::Strict => RobotsVerdict::DisallowAll,
                RobotsMode::Rfc9309 => RobotsVerdict::AllowAll,
            },
            // Too many requests: the server is overloaded, not answering "no file".
            429 => return (unavailable(retry_after), Duration::ZERO),
            400..=499 => RobotsVerdict::AllowAll,
            _ => return (unavailable(retry_after), Duration::ZERO),
        };
        return (verdict, ttl);
    }
    // More hops than allowed: RFC 9309 treats the file as unavailable (4xx-like).
    (RobotsVerdict::AllowAll, cfg.default_ttl.min(MAX_TTL))
}

fn ttl_from(header_ttl: Option<Duration>, cfg: &RobotsConfig) -> Duration {
    match header_ttl {
        Some(ttl) => ttl.max(MIN_HEADER_TTL).min(MAX_TTL),
        None => cfg.default_ttl.min(MAX_TTL),
    }
}
