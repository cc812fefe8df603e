//! HTTP fetching with every network input bounded (invariant "everything
//! from the network is bounded" in docs/ARCHITECTURE.md): connect, read-idle and total timeouts, a body cap on the decompressed
//! stream, a URL length cap and a header count cap. Redirects are returned,
//! not followed: the engine queues them like links. No connection is made to
//! an address the private-address guard (`engine::address`) refuses: IP
//! literals are checked here, resolved names in `dns`.

mod dns;
mod error;
pub mod headers;
#[cfg(test)]
pub(crate) mod test_server;
#[cfg(test)]
mod tests;

use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::{Bytes, BytesMut};
use reqwest::header::{self, HeaderMap, HeaderName, HeaderValue};
use reqwest::Method;
use tokio::time::Instant;
use url::{Position, Url};

pub use error::{FetchError, FetchErrorKind, FetchSetupError};

use error::{classify, cut, error_chain, refusal};

use crate::engine::address::{AddressGuard, AddressRules};
use crate::engine::config::CrawlConfig;

/// URLs longer than this are refused before any request is made.
pub const MAX_URL_LEN: usize = 8 * 1024;
/// Responses with more header lines than this fail to parse.
pub const MAX_RESPONSE_HEADERS: usize = 128;
/// HTTP/2 header block limit (HTTP/1 heads are bounded by the parser's buffer).
pub const MAX_H2_HEADER_BYTES: u32 = 64 * 1024;
pub const ACCEPT: &str = "text/html,application/xhtml+xml;q=0.9,*/*;q=0.5";
/// Body bytes read of a check's GET (HEAD refused); the rest is never read.
pub const CHECK_GET_BYTES: u64 = 16 * 1024;
/// What the client announces when decompression is on (it adds the header itself).
const ACCEPT_ENCODING: &str = "gzip,deflate,br";

/// Validators from an earlier fetch of the same URL, for a conditional request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Validators {
    pub etag: Option<String>,
    pub last_modified: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub final_url: Url,
    pub content_type: Option<String>,
    /// `Location`, resolved against the requested URL.
    pub location: Option<Url>,
    pub retry_after: Option<Duration>,
    pub x_robots_tag: Vec<String>,
    pub etag: Option<String>,
    pub last_modified: Option<String>,
    pub cache_max_age: Option<Duration>,
    /// The `Content-Length` header as sent (a HEAD's body is empty).
    pub content_length: Option<u64>,
    pub body: Bytes,
    pub elapsed: Duration,
    /// When its last byte arrived: a host's politeness delay counts from
    /// here, not from when the page was processed.
    pub answered_at: Instant,
    pub remote_ip: Option<IpAddr>,
    pub request_head: Vec<u8>,
    pub response_head: Vec<u8>,
    /// The body was cut at its cap ([`Overflow::Truncate`]): `body` is its start.
    pub truncated: bool,
}

#[cfg(test)]
impl Response {
    /// An answer as the fetcher would give it for `url`, with its heads.
    pub(crate) fn for_test(
        url: &str,
        status: u16,
        content_type: &str,
        body: &'static [u8],
    ) -> Response {
        let url = Url::parse(url).unwrap();
        let host = url.authority().to_string();
        Response {
            status,
            content_type: Some(content_type.into()),
            location: None,
            retry_after: None,
            x_robots_tag: Vec::new(),
            etag: None,
            last_modified: None,
            cache_max_age: None,
            content_length: None,
            body: Bytes::from_static(body),
            elapsed: Duration::from_millis(3),
            answered_at: Instant::now(),
            remote_ip: None,
            request_head: format!("GET {} HTTP/1.1\r\nhost: {host}\r\n", url.path()).into_bytes(),
            response_head: format!("HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\n")
                .into_bytes(),
            final_url: url,
            truncated: false,
        }
    }
}

/// What to do when a body exceeds its cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Overflow {
    Fail,
    /// Keep the first bytes (robots.txt: parse what fits; a page: keep what
    /// the cap allows, as Heritrix and search engines do).
    Truncate,
}

/// A shared HTTP client for the whole crawl; cheap to clone.
#[derive(Clone)]
pub struct Fetcher {
    client: reqwest::Client,
    /// The client's resolver: seeds' names are resolved through it at start.
    resolver: dns::CachingResolver,
    guard: AddressGuard,
    /// Identification headers, in the order they are sent.
    identity: Arc<Vec<(HeaderName, HeaderValue)>>,
    connect_timeout: Duration,
    read_timeout: Duration,
    total_timeout: Duration,
    conditional: bool,
}

impl std::fmt::Debug for Fetcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fetcher")
            .field("connect_timeout", &self.connect_timeout)
            .field("read_timeout", &self.read_timeout)
            .field("total_timeout", &self.total_timeout)
            .field("conditional", &self.conditional)
            .finish_non_exhaustive()
    }
}

impl Fetcher {
    /// A fetcher with the real address classification and the system resolver.
    #[cfg(test)]
    pub fn new(config: &CrawlConfig) -> Result<Self, FetchSetupError> {
        Self::with_rules(config, &AddressRules::default())
    }

    /// A fetcher whose guard classifies (and whose resolver answers) as `rules` say.
    pub fn with_rules(config: &CrawlConfig, rules: &AddressRules) -> Result<Self, FetchSetupError> {
        // The client needs a process-wide crypto provider; a second install fails harmlessly.
        let _ = rustls::crypto::ring::default_provider().install_default();

        let ua = &config.identity.user_agent;
        let mut identity = vec![(
            header::USER_AGENT,
            HeaderValue::from_str(ua).map_err(|_| FetchSetupError::UserAgent(ua.clone()))?,
        )];
        if let Some(from) = &config.identity.from {
            identity.push((
                header::FROM,
                HeaderValue::from_str(from).map_err(|_| FetchSetupError::From(from.clone()))?,
            ));
        }
        identity.push((header::ACCEPT, HeaderValue::from_static(ACCEPT)));
        let defaults: HeaderMap = identity.iter().cloned().collect();

        let fetch = &config.fetch;
        let guard = AddressGuard::new(rules, fetch.allow_private);
        let lookup = match rules.hosts() {
            Some(hosts) => dns::table_lookup(hosts),
            None => dns::system_lookup(),
        };
        let resolver = dns::CachingResolver::with_lookup(guard.clone(), lookup);
        let client = reqwest::Client::builder()
            .default_headers(defaults)
            .redirect(reqwest::redirect::Policy::none())
            .gzip(true)
            .brotli(true)
            .deflate(true)
            .connect_timeout(fetch.connect_timeout)
            .read_timeout(fetch.read_timeout)
            .timeout(fetch.total_timeout)
            .http1_max_headers(MAX_RESPONSE_HEADERS)
            .http2_max_header_list_size(MAX_H2_HEADER_BYTES)
            .pool_max_idle_per_host(4)
            .tcp_nodelay(true)
            // Direct connections only: *.localhost must reach this machine, and
            // politeness is per origin server, not per proxy.
            .no_proxy()
            .dns_resolver(resolver.clone())
            .build()
            .map_err(|e| FetchSetupError::Client(error_chain(&e)))?;
        Ok(Fetcher {
            client,
            resolver,
            guard,
            identity: Arc::new(identity),
            connect_timeout: fetch.connect_timeout,
            read_timeout: fetch.read_timeout,
            total_timeout: fetch.total_timeout,
            conditional: fetch.conditional_requests,
        })
    }

    /// `fetch.total_timeout`: the deadline of one request (robots.txt: of the whole chain).
    pub fn total_timeout(&self) -> Duration {
        self.total_timeout
    }

    /// GETs `url`. Any status is a `Response`; errors are network/limit failures.
    pub async fn fetch(
        &self,
        url: &Url,
        validators: Option<&Validators>,
        max_body: u64,
    ) -> Result<Response, FetchError> {
        self.fetch_with(url, validators, max_body, Overflow::Fail)
            .await
    }

    /// The private-address guard of this fetcher's connections.
    pub(crate) fn guard(&self) -> &AddressGuard {
        &self.guard
    }

    /// Resolves the seed names the guard has not seen resolved yet, so the
    /// classes they are on are allowed before the first link to them. Each
    /// name gets `fetch.connect_timeout`; a name that fails is learned when
    /// it is first fetched.
    pub(crate) async fn resolve_seeds(&self) {
        let names = self.guard.pending_seeds();
        let lookups = names.iter().map(|name| {
            tokio::time::timeout(self.connect_timeout, self.resolver.resolve_admitted(name))
        });
        futures_util::future::join_all(lookups).await;
    }

    /// Questions the DNS cache passed on to the system resolver.
    #[cfg(test)]
    pub fn dns_lookups(&self) -> u64 {
        self.resolver.lookups()
    }

    pub(crate) async fn fetch_with(
        &self,
        url: &Url,
        validators: Option<&Validators>,
        max_body: u64,
        overflow: Overflow,
    ) -> Result<Response, FetchError> {
        self.request(Method::GET, url, validators, max_body, overflow)
            .await
    }

    /// Asks for `url`'s status only: a HEAD, or a GET cut at
    /// [`CHECK_GET_BYTES`] when the server refuses HEAD (405, 501). The
    /// size is the answer's Content-Length, if it gives one.
    pub async fn check(&self, url: &Url) -> Result<Response, FetchError> {
        let head = self
            .request(Method::HEAD, url, None, 0, Overflow::Truncate)
            .await;
        match &head {
            Ok(r) if r.status == 405 || r.status == 501 => {
                self.request(Method::GET, url, None, CHECK_GET_BYTES, Overflow::Truncate)
                    .await
            }
            _ => head,
        }
    }

    async fn request(
        &self,
        method: Method,
        url: &Url,
        validators: Option<&Validators>,
        max_body: u64,
        overflow: Overflow,
    ) -> Result<Response, FetchError> {
        let started = Instant::now();
        let fail = |kind, message: String| FetchError {
            kind,
            message: cut(message),
            elapsed: started.elapsed(),
        };
        if !matches!(url.scheme(), "http" | "https") {
            return Err(fail(
                FetchErrorKind::InvalidUrl,
                format!("{url}: only http and https URLs are fetched"),
            ));
        }
        if url.as_str().len() > MAX_URL_LEN {
            return Err(fail(
                FetchErrorKind::InvalidUrl,
                format!(
                    "{}…: URL is {} bytes, longer than the {MAX_URL_LEN} byte limit",
                    &url.as_str()[..64],
                    url.as_str().len()
                ),
            ));
        }
        let Some(host) = url.host_str() else {
            return Err(fail(FetchErrorKind::InvalidUrl, format!("{url}: no host")));
        };
        // The client does not ask the resolver about IP literals.
        if let Err(refused) = self.guard.check_url(url) {
            return Err(fail(
                FetchErrorKind::PrivateAddress,
                format!("{url}: {refused}"),
            ));
        }

        let mut extra = HeaderMap::new();
        if let (true, Some(v)) = (self.conditional, validators) {
            if let Some(etag) = v
                .etag
                .as_deref()
                .and_then(|e| HeaderValue::from_str(e).ok())
            {
                extra.insert(header::IF_NONE_MATCH, etag);
            }
            if let Some(lm) = v
                .last_modified
                .as_deref()
                .and_then(|e| HeaderValue::from_str(e).ok())
            {
                extra.insert(header::IF_MODIFIED_SINCE, lm);
            }
        }
        let host_header = match url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_string(),
        };
        let request_head = headers::request_head(
            method.as_str(),
            &url[Position::BeforePath..Position::AfterQuery],
            [("host", host_header.as_bytes())]
                .into_iter()
                .chain(
                    self.identity
                        .iter()
                        .map(|(n, v)| (n.as_str(), v.as_bytes())),
                )
                .chain([("accept-encoding", ACCEPT_ENCODING.as_bytes())])
                .chain(extra.iter().map(|(n, v)| (n.as_str(), v.as_bytes()))),
        );

        let exchange = self.exchange(
            method,
            url,
            extra,
            (max_body, overflow),
            started,
            request_head,
        );
        match tokio::time::timeout(self.total_timeout, exchange).await {
            Ok(result) => result.map_err(|(kind, message)| fail(kind, message)),
            Err(_) => Err(fail(
                FetchErrorKind::TotalTimeout,
                format!(
                    "{url}: no complete response within {} (fetch.total_timeout)",
                    humantime::format_duration(self.total_timeout)
                ),
            )),
        }
    }

    /// Kind and message for a client error; timeouts name the limits to tune.
    fn describe(
        &self,
        url: &Url,
        e: &reqwest::Error,
        started: Instant,
    ) -> (FetchErrorKind, String) {
        if let Some(refused) = refusal(e) {
            return (FetchErrorKind::PrivateAddress, format!("{url}: {refused}"));
        }
        let mut kind = classify(e);
        // The client's own deadline is the same total timeout.
        if kind == FetchErrorKind::Timeout && started.elapsed() >= self.total_timeout {
            kind = FetchErrorKind::TotalTimeout;
        }
        let message = if kind == FetchErrorKind::Timeout || kind == FetchErrorKind::TotalTimeout {
            let secs = |d: Duration| humantime::format_duration(d).to_string();
            format!(
                "{url}: timed out after {} (limits: fetch.connect_timeout {}, fetch.read_timeout {}, fetch.total_timeout {})",
                secs(Duration::from_millis(started.elapsed().as_millis() as u64)),
                secs(self.connect_timeout),
                secs(self.read_timeout),
                secs(self.total_timeout),
            )
        } else {
            format!("{url}: {}", error_chain(e))
        };
        (kind, message)
    }

    async fn exchange(
        &self,
        method: Method,
        url: &Url,
        extra: HeaderMap,
        (max_body, overflow): (u64, Overflow),
        started: Instant,
        request_head: Vec<u8>,
    ) -> Result<Response, (FetchErrorKind, String)> {
        let mut resp = self
            .client
            .request(method, url.clone())
            .headers(extra)
            .send()
            .await
            .map_err(|e| self.describe(url, &e, started))?;

        let status = resp.status();
        let hdrs = resp.headers();
        let now = SystemTime::now();
        let response_head = headers::response_head(resp.version(), status, hdrs);
        let location = headers::location(hdrs, MAX_URL_LEN)
            .and_then(|l| url.join(&l).ok())
            .map(|mut l| {
                // The page record keeps the Location; never with a password.
                crate::engine::url_norm::strip_credentials(&mut l);
                l
            });
        let x_robots = HeaderName::from_static("x-robots-tag");
        let mut response = Response {
            status: status.as_u16(),
            final_url: resp.url().clone(),
            content_type: headers::text(hdrs, header::CONTENT_TYPE),
            location,
            retry_after: headers::retry_after(hdrs, now),
            x_robots_tag: headers::all_text(hdrs, &x_robots, headers::MAX_X_ROBOTS_TAGS),
            etag: headers::text(hdrs, header::ETAG),
            last_modified: headers::text(hdrs, header::LAST_MODIFIED),
            cache_max_age: headers::cache_max_age(hdrs, now),
            content_length: headers::text(hdrs, header::CONTENT_LENGTH)
                .and_then(|v| v.trim().parse().ok()),
            body: Bytes::new(),
            elapsed: Duration::ZERO,
            answered_at: Instant::now(),
            remote_ip: resp.remote_addr().map(|a| a.ip()),
            request_head,
            response_head,
            truncated: false,
        };

        let declared = resp.content_length();
        if overflow == Overflow::Fail && declared.is_some_and(|len| len > max_body) {
            return Err((
                FetchErrorKind::BodyTooLarge,
                format!(
                    "{url}: declared body of {} bytes exceeds the {max_body} byte limit (fetch.max_body)",
                    declared.unwrap_or_default()
                ),
            ));
        }
        let cap = usize::try_from(max_body).unwrap_or(usize::MAX);
        let mut body = Body::new(
            declared
                .and_then(|d| usize::try_from(d).ok())
                .unwrap_or(0)
                .min(cap)
                .min(64 * 1024),
        );
        loop {
            // The chunks come out of the decompressor, so the cap also stops gzip bombs.
            let chunk = match tokio::time::timeout(self.read_timeout, resp.chunk()).await {
                Err(_) => {
                    return Err((
                        FetchErrorKind::Timeout,
                        format!(
                            "{url}: no data for {} while reading the body (fetch.read_timeout)",
                            humantime::format_duration(self.read_timeout)
                        ),
                    ))
                }
                Ok(Err(e)) => return Err(self.describe(url, &e, started)),
                Ok(Ok(None)) => break,
                Ok(Ok(Some(chunk))) => chunk,
            };
            let room = cap - body.len();
            if chunk.len() > room {
                if overflow == Overflow::Truncate {
                    body.push(chunk.slice(..room));
                    response.truncated = true;
                    break;
                }
                return Err((
                    FetchErrorKind::BodyTooLarge,
                    format!("{url}: body exceeds the {max_body} byte limit (fetch.max_body)"),
                ));
            }
            body.push(chunk);
        }
        response.body = body.into_bytes();
        response.answered_at = Instant::now();
        response.elapsed = response.answered_at - started;
        Ok(response)
    }
}

/// A body read chunk by chunk. A page that arrives in one chunk is kept as
/// it came, with no copy; a second chunk starts a buffer of the declared
/// length.
struct Body {
    declared: usize,
    chunks: BodyChunks,
}

enum BodyChunks {
    None,
    One(Bytes),
    Joined(BytesMut),
}

impl Body {
    /// `declared`: the length to make room for once chunks are joined.
    fn new(declared: usize) -> Body {
        Body {
            declared,
            chunks: BodyChunks::None,
        }
    }

    fn len(&self) -> usize {
        match &self.chunks {
            BodyChunks::None => 0,
            BodyChunks::One(bytes) => bytes.len(),
            BodyChunks::Joined(bytes) => bytes.len(),
        }
    }

    fn push(&mut self, chunk: Bytes) {
        self.chunks = match std::mem::replace(&mut self.chunks, BodyChunks::None) {
            BodyChunks::None => BodyChunks::One(chunk),
            BodyChunks::One(first) => {
                let needed = first.len() + chunk.len();
                let mut joined = BytesMut::with_capacity(self.declared.max(needed));
                joined.extend_from_slice(&first);
                joined.extend_from_slice(&chunk);
                BodyChunks::Joined(joined)
            }
            BodyChunks::Joined(mut joined) => {
                joined.extend_from_slice(&chunk);
                BodyChunks::Joined(joined)
            }
        };
    }

    fn into_bytes(self) -> Bytes {
        match self.chunks {
            BodyChunks::None => Bytes::new(),
            BodyChunks::One(bytes) => bytes,
            BodyChunks::Joined(bytes) => bytes.freeze(),
        }
    }
}
