//! Server plumbing: one axum router per site, a logging middleware every
//! response passes through, and the conversion of a site's `Reply` into HTTP
//! (artificial delay, validators and 304s, gzip, streamed/stalled/reset bodies).

use std::io::{self, Write as _};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, BodyDataStream, Bytes, HttpBody as _};
use axum::extract::{Request, State};
use axum::http::header::{self, HeaderMap, HeaderName, HeaderValue};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::Router;
use futures_util::Stream;
use tokio::sync::watch;
use tokio::time::Instant;

use super::log::{ExchangeGuard, RequestLog, RequestRecord, SiteGauge, STATUS_NO_RESPONSE};
use super::sites::{self, huge_chunk, Reply, ReplyBody, Req, SiteCtx};

/// One site's server state.
pub(crate) struct SiteState {
    pub ctx: SiteCtx,
    pub log: RequestLog,
    pub gauge: Arc<SiteGauge>,
    pub shutdown: watch::Receiver<bool>,
}

/// Marks a response whose connection is to be dropped without an answer.
#[derive(Clone, Copy)]
struct NoResponse;

/// Shop pages' fixed modification time (their content never changes).
const LAST_MODIFIED: &str = "Tue, 03 Nov 2026 08:00:00 GMT";

pub(crate) fn router(state: Arc<SiteState>) -> Router {
    Router::new()
        .fallback(handle)
        .layer(middleware::from_fn_with_state(state.clone(), record))
        .with_state(state)
}

fn header_string(headers: &HeaderMap, name: HeaderName) -> Option<String> {
    headers
        .get(name)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
}

/// The logging middleware: every request, robots.txt included, is recorded
/// with the site's in-flight count; the record is finished when the body is done.
async fn record(State(state): State<Arc<SiteState>>, req: Request, next: Next) -> Response {
    let in_flight = state.gauge.enter();
    let headers = req.headers();
    let entry = RequestRecord {
        site: state.ctx.kind,
        host_header: header_string(headers, header::HOST).unwrap_or_default(),
        method: req.method().as_str().to_string(),
        path_and_query: req.uri().path_and_query().map_or_else(
            || req.uri().path().to_string(),
            |pq| pq.as_str().to_string(),
        ),
        user_agent: header_string(headers, header::USER_AGENT),
        from: header_string(headers, header::FROM),
        if_none_match: header_string(headers, header::IF_NONE_MATCH),
        if_modified_since: header_string(headers, header::IF_MODIFIED_SINCE),
        started: Instant::now(),
        finished: None,
        status: STATUS_NO_RESPONSE,
        in_flight_at_start: in_flight,
    };
    // Created before the handler runs so a client that goes away mid-delay still
    // leaves the in-flight count and finishes its record.
    let guard = ExchangeGuard {
        log: state.log.clone(),
        gauge: state.gauge.clone(),
        index: state.log.push(entry),
    };
    let response = next.run(req).await;
    let status = if response.extensions().get::<NoResponse>().is_some() {
        STATUS_NO_RESPONSE
    } else {
        response.status().as_u16()
    };
    if let Some(i) = guard.index {
        state.log.set_status(i, status);
    }
    if response.body().size_hint().exact().is_some() {
        // A complete body in memory: hyper writes it at once.
        return response;
    }
    let (parts, body) = response.into_parts();
    let guarded = Guarded {
        inner: body.into_data_stream(),
        _guard: guard,
    };
    Response::from_parts(parts, Body::from_stream(guarded))
}

/// A streamed body that ends the exchange's log entry when it is dropped.
struct Guarded {
    inner: BodyDataStream,
    _guard: ExchangeGuard,
}

impl Stream for Guarded {
    type Item = Result<Bytes, axum::Error>;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Pin::new(&mut self.inner).poll_next(cx)
    }
}

async fn handle(State(state): State<Arc<SiteState>>, req: Request) -> Response {
    let site_req = Req {
        path: req.uri().path(),
        query: req.uri().query(),
    };
    let reply = sites::respond(&state.ctx, &site_req);
    if !reply.delay.is_zero() {
        let mut shutdown = state.shutdown.clone();
        tokio::select! {
            _ = tokio::time::sleep(reply.delay) => {}
            _ = shutdown.wait_for(|stop| *stop) => {}
        }
    }
    let caching = state.ctx.kind.serves_validators();
    build_response(reply, req.headers(), caching, &state.shutdown)
}

fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|item| {
            let mut parts = item.split(';');
            let coding = parts.next().unwrap_or("").trim();
            let refused = parts.any(|p| {
                let p = p.trim();
                p == "q=0" || p == "q=0.0" || p == "q=0.00" || p == "q=0.000"
            });
            coding.eq_ignore_ascii_case("gzip") && !refused
        })
}

/// Whether the client's validators match the page (RFC 9110: If-None-Match wins).
fn not_modified(req: &HeaderMap, etag: &str) -> bool {
    if let Some(inm) = req.get(header::IF_NONE_MATCH).and_then(|v| v.to_str().ok()) {
        return inm
            .split(',')
            .map(|t| t.trim().trim_start_matches("W/"))
            .any(|t| t == etag || t == "*");
    }
    let ims = req
        .get(header::IF_MODIFIED_SINCE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| httpdate::parse_http_date(v).ok());
    let lm = httpdate::parse_http_date(LAST_MODIFIED).ok();
    matches!((ims, lm), (Some(ims), Some(lm)) if lm <= ims)
}

fn gzip(body: &[u8]) -> Option<Bytes> {
    let mut enc = flate2::write::GzEncoder::new(
        Vec::with_capacity(body.len() / 3 + 64),
        flate2::Compression::fast(),
    );
    enc.write_all(body).ok()?;
    enc.finish().ok().map(Bytes::from)
}

fn build_response(
    reply: Reply,
    req: &HeaderMap,
    caching: bool,
    shutdown: &watch::Receiver<bool>,
) -> Response {
    let mut status =
        StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut headers = HeaderMap::new();
    for (name, value) in reply.headers {
        let name = HeaderName::from_bytes(name.as_bytes());
        if let (Ok(name), Ok(value)) = (name, HeaderValue::from_str(&value)) {
            headers.append(name, value);
        }
    }
    let mut reset = false;
    let body = match reply.body {
        ReplyBody::Full(bytes) if caching && status == StatusCode::OK => {
            Body::from(cacheable(bytes, req, &mut status, &mut headers))
        }
        ReplyBody::Full(bytes) => Body::from(bytes),
        ReplyBody::Huge { total } => huge_body(total, shutdown.clone()),
        ReplyBody::Stall => stalled_body(shutdown.clone()),
        ReplyBody::Reset => {
            reset = true;
            reset_body()
        }
    };
    let mut response = Response::new(body);
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    if reset {
        response.extensions_mut().insert(NoResponse);
    }
    response
}

/// A cacheable 200: validators and caching headers, then a 304 when the
/// client's validators match, or else the body gzipped when it accepts that.
fn cacheable(
    bytes: Bytes,
    req: &HeaderMap,
    status: &mut StatusCode,
    headers: &mut HeaderMap,
) -> Bytes {
    let etag = format!("\"{:016x}\"", xxhash_rust::xxh3::xxh3_64(&bytes));
    let etag_ok = HeaderValue::from_str(&etag).ok();
    if let Some(v) = etag_ok {
        headers.insert(header::ETAG, v);
    }
    headers.insert(
        header::LAST_MODIFIED,
        HeaderValue::from_static(LAST_MODIFIED),
    );
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("max-age=3600"),
    );
    headers.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    if not_modified(req, &etag) {
        *status = StatusCode::NOT_MODIFIED;
        headers.remove(header::CONTENT_TYPE);
        return Bytes::new();
    }
    if accepts_gzip(req) {
        if let Some(compressed) = gzip(&bytes) {
            headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
            return compressed;
        }
    }
    bytes
}

/// A body that never sends a byte: it fails only when the demo web shuts down.
fn stalled_body(mut shutdown: watch::Receiver<bool>) -> Body {
    Body::from_stream(futures_util::stream::once(async move {
        let _ = shutdown.wait_for(|stop| *stop).await;
        Err::<Bytes, io::Error>(io::Error::other("demo web shut down"))
    }))
}

/// A body that fails before its first byte, which makes hyper drop the connection.
fn reset_body() -> Body {
    Body::from_stream(futures_util::stream::once(async {
        Err::<Bytes, io::Error>(io::Error::new(
            io::ErrorKind::ConnectionReset,
            "dropped on purpose",
        ))
    }))
}

/// `total` bytes of filler in 64 KB chunks; ends early (with an error) on shutdown.
fn huge_body(total: u64, shutdown: watch::Receiver<bool>) -> Body {
    let chunk = huge_chunk();
    let stream = futures_util::stream::unfold(total, move |left| {
        let chunk = chunk.clone();
        let stopping = *shutdown.borrow();
        async move {
            if left == 0 {
                return None;
            }
            if stopping {
                return Some((Err(io::Error::other("demo web shut down")), 0));
            }
            let n = left.min(chunk.len() as u64) as usize;
            Some((Ok::<Bytes, io::Error>(chunk.slice(..n)), left - n as u64))
        }
    });
    Body::from_stream(stream)
}

/// How long `shutdown()` waits for open connections before abandoning them.
pub(crate) const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);
