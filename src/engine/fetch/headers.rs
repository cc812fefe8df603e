//! Reading response headers defensively, and the header blocks kept for WARC.

use std::time::{Duration, SystemTime};

use reqwest::header::{HeaderMap, HeaderName};
use reqwest::StatusCode;

/// Header values kept as strings (validators, X-Robots-Tag) are cut here.
pub const MAX_HEADER_VALUE: usize = 1024;
/// X-Robots-Tag values kept per response.
pub const MAX_X_ROBOTS_TAGS: usize = 16;
/// Retry-After and cache lifetimes beyond a week are treated as a week.
pub const MAX_HEADER_DURATION: Duration = Duration::from_secs(7 * 24 * 3600);

/// The first value of `name` as text, control characters removed, bounded.
pub fn text(headers: &HeaderMap, name: impl reqwest::header::AsHeaderName) -> Option<String> {
    headers.get(name).map(|v| bounded_text(v.as_bytes()))
}

/// Every value of `name` (bounded in count and length).
pub fn all_text(headers: &HeaderMap, name: &HeaderName, max: usize) -> Vec<String> {
    headers
        .get_all(name)
        .iter()
        .take(max)
        .map(|v| bounded_text(v.as_bytes()))
        .collect()
}

/// `Location`, whole or not at all: a cut URL would be a different URL.
pub fn location(headers: &HeaderMap, max_len: usize) -> Option<String> {
    let raw = headers.get(reqwest::header::LOCATION)?.as_bytes();
    if raw.len() > max_len {
        return None;
    }
    let text: String = String::from_utf8_lossy(raw)
        .chars()
        .filter(|c| !c.is_control())
        .collect();
    Some(text.trim().to_string()).filter(|t| !t.is_empty())
}

fn bounded_text(bytes: &[u8]) -> String {
    let mut text: String = String::from_utf8_lossy(bytes)
        .chars()
        .filter(|c| !c.is_control())
        .collect();
    if text.len() > MAX_HEADER_VALUE {
        let mut cut = MAX_HEADER_VALUE;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
    }
    text.trim().to_string()
}

/// `Retry-After`: delta-seconds or an HTTP date (relative to `now`), capped at a week.
pub fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let value = text(headers, reqwest::header::RETRY_AFTER)?;
    let wait = if let Ok(secs) = value.parse::<u64>() {
        Duration::from_secs(secs)
    } else {
        let at = httpdate::parse_http_date(&value).ok()?;
        at.duration_since(now).unwrap_or(Duration::ZERO)
    };
    Some(wait.min(MAX_HEADER_DURATION))
}

/// Freshness lifetime from `Cache-Control` (no-store/no-cache → zero, max-age) or
/// `Expires` − `Date`; `None` when the response says nothing.
pub fn cache_max_age(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    if let Some(cc) = text(headers, reqwest::header::CACHE_CONTROL) {
        let mut max_age = None;
        for directive in cc.split(',') {
            let directive = directive.trim();
            let (name, value) = match directive.split_once('=') {
                Some((n, v)) => (n.trim(), Some(v.trim().trim_matches('"'))),
                None => (directive, None),
            };
            if name.eq_ignore_ascii_case("no-store") || name.eq_ignore_ascii_case("no-cache") {
                return Some(Duration::ZERO);
            }
            if name.eq_ignore_ascii_case("max-age") {
                if let Some(secs) = value.and_then(|v| v.parse::<u64>().ok()) {
                    max_age = Some(Duration::from_secs(secs).min(MAX_HEADER_DURATION));
                }
            }
        }
        if max_age.is_some() {
            return max_age;
        }
    }
    let expires = text(headers, reqwest::header::EXPIRES)?;
    // An invalid Expires (often "0" or "-1") means already expired.
    let Ok(expires) = httpdate::parse_http_date(&expires) else {
        return Some(Duration::ZERO);
    };
    let date = text(headers, reqwest::header::DATE)
        .and_then(|d| httpdate::parse_http_date(&d).ok())
        .unwrap_or(now);
    Some(
        expires
            .duration_since(date)
            .unwrap_or(Duration::ZERO)
            .min(MAX_HEADER_DURATION),
    )
}

/// `HTTP/1.1 200 OK` + headers + blank line, as the response arrived (after
/// decompression the client drops Content-Encoding/Content-Length).
pub fn response_head(
    version: reqwest::Version,
    status: StatusCode,
    headers: &HeaderMap,
) -> Vec<u8> {
    let mut head = format!(
        "{} {} {}\r\n",
        version_text(version),
        status.as_u16(),
        status.canonical_reason().unwrap_or("")
    )
    .into_bytes();
    append_headers(
        &mut head,
        headers.iter().map(|(n, v)| (n.as_str(), v.as_bytes())),
    );
    head
}

/// A request head in HTTP/1.1 form: request line, then the given headers.
pub fn request_head<'a>(
    method: &str,
    target: &str,
    headers: impl Iterator<Item = (&'a str, &'a [u8])>,
) -> Vec<u8> {
    let mut head = format!("{method} {target} HTTP/1.1\r\n").into_bytes();
    append_headers(&mut head, headers);
    head
}

fn append_headers<'a>(head: &mut Vec<u8>, headers: impl Iterator<Item = (&'a str, &'a [u8])>) {
    for (name, value) in headers {
        head.extend_from_slice(name.as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(value);
        head.extend_from_slice(b"\r\n");
    }
    head.extend_from_slice(b"\r\n");
}

fn version_text(version: reqwest::Version) -> &'static str {
    match version {
        reqwest::Version::HTTP_09 => "HTTP/0.9",
        reqwest::Version::HTTP_10 => "HTTP/1.0",
        reqwest::Version::HTTP_2 => "HTTP/2",
        reqwest::Version::HTTP_3 => "HTTP/3",
        _ => "HTTP/1.1",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn map(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (n, v) in pairs {
            h.append(*n, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    fn at(text: &str) -> SystemTime {
        httpdate::parse_http_date(text).unwrap()
    }

    const NOW: &str = "Sun, 22 Nov 2026 09:00:00 GMT";

    #[test]
    fn retry_after_seconds_and_dates() {
        let now = at(NOW);
        assert_eq!(
            retry_after(&map(&[("retry-after", "120")]), now),
            Some(Duration::from_secs(120))
        );
        assert_eq!(
            retry_after(
                &map(&[("retry-after", "Sun, 22 Nov 2026 09:00:30 GMT")]),
                now
            ),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            retry_after(
                &map(&[("retry-after", "Sun, 22 Nov 2026 08:00:00 GMT")]),
                now
            ),
            Some(Duration::ZERO)
        );
        assert_eq!(
            retry_after(&map(&[("retry-after", "99999999999")]), now),
            Some(MAX_HEADER_DURATION)
        );
        assert_eq!(retry_after(&map(&[("retry-after", "soon")]), now), None);
        assert_eq!(retry_after(&map(&[]), now), None);
    }

    #[test]
    fn cache_lifetimes() {
        let now = at(NOW);
        let secs = |s| Some(Duration::from_secs(s));
        assert_eq!(
            cache_max_age(&map(&[("cache-control", "public, max-age=600")]), now),
            secs(600)
        );
        assert_eq!(
            cache_max_age(&map(&[("cache-control", "max-age=\"60\"")]), now),
            secs(60)
        );
        assert_eq!(
            cache_max_age(&map(&[("cache-control", "no-cache")]), now),
            secs(0)
        );
        assert_eq!(
            cache_max_age(
                &map(&[
                    ("expires", "Sun, 22 Nov 2026 10:00:00 GMT"),
                    ("date", "Sun, 22 Nov 2026 09:30:00 GMT")
                ]),
                now
            ),
            secs(1800)
        );
        assert_eq!(
            cache_max_age(&map(&[("expires", "Sun, 22 Nov 2026 10:00:00 GMT")]), now),
            secs(3600)
        );
        assert_eq!(cache_max_age(&map(&[("expires", "0")]), now), secs(0));
        assert_eq!(
            cache_max_age(&map(&[("cache-control", "public")]), now),
            None
        );
        assert_eq!(cache_max_age(&map(&[]), now), None);
    }

    #[test]
    fn header_text_is_bounded_and_clean() {
        let long = "a".repeat(5000);
        let h = map(&[
            ("etag", &long),
            ("x-robots-tag", "noindex\t"),
            ("x-robots-tag", "nofollow"),
        ]);
        assert_eq!(text(&h, "etag").unwrap().len(), MAX_HEADER_VALUE);
        let name = HeaderName::from_static("x-robots-tag");
        assert_eq!(all_text(&h, &name, 16), vec!["noindex", "nofollow"]);
        assert_eq!(all_text(&h, &name, 1).len(), 1);
    }

    #[test]
    fn long_locations_are_kept_whole_or_dropped() {
        let long = format!("/{}", "a".repeat(3000));
        assert_eq!(
            location(&map(&[("location", &long)]), 8192),
            Some(long.clone())
        );
        assert_eq!(location(&map(&[("location", &long)]), 2048), None);
        assert_eq!(location(&map(&[("location", " ")]), 2048), None);
    }

    #[test]
    fn heads_look_like_http_1_1() {
        let h = map(&[("content-type", "text/html")]);
        assert_eq!(
            response_head(reqwest::Version::HTTP_11, StatusCode::NOT_FOUND, &h),
            b"HTTP/1.1 404 Not Found\r\ncontent-type: text/html\r\n\r\n"
        );
        let req = request_head("GET", "/a?b=1", [("Host", &b"example.org"[..])].into_iter());
        assert_eq!(req, b"GET /a?b=1 HTTP/1.1\r\nHost: example.org\r\n\r\n");
    }
}
