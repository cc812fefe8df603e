//! SURT URL keys as pywb and cdxj-indexer write them (the `surt` package's
//! defaults): a replay tool finds a capture by the key it computes itself,
//! so ours must be the same string.
//!
//! `http://www.Example.com:8080/A/./b/?z=1&a=2#top` → `com,example:8080)/a/b?a=2&z=1`:
//! no scheme, `www.` dropped, host reversed, the scheme's default port,
//! user info and fragment dropped, path and query lowercased, dot segments
//! and repeated slashes removed, a trailing slash dropped, query arguments
//! sorted, percent-escapes normalised (decoded, then bytes outside ASCII
//! and a few others escaped once).

/// The SURT key of `url`; a URL without `scheme://host` keeps its text, as
/// the `surt` package's fallback does.
pub fn urlkey(url: &str) -> String {
    let url = url.trim().replace(['\n', '\r', '\t'], "");
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_lowercase();
    };
    let rest = rest.split('#').next().unwrap_or_default();
    let (authority, path_query) = match rest.find(['/', '?']) {
        Some(at) => rest.split_at(at),
        None => (rest, ""),
    };
    let (path, query) = match path_query.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (path_query, None),
    };
    let host_port = authority.rsplit('@').next().unwrap_or_default();
    let (host, port) = split_port(host_port);
    let mut key = surt_host(host);
    if let Some(port) = port.filter(|p| Some(*p) != default_port(scheme)) {
        key.push(':');
        key.push_str(port);
    }
    key.push(')');
    key.push_str(&canonical_path(path));
    if let Some(query) = query.map(canonical_query).filter(|q| !q.is_empty()) {
        key.push('?');
        key.push_str(&query);
    }
    key
}

fn split_port(host_port: &str) -> (&str, Option<&str>) {
    match host_port.rsplit_once(':') {
        Some((host, port)) if !host.ends_with(']') || host.starts_with('[') => {
            if port.is_empty() {
                (host, None)
            } else if port.bytes().all(|b| b.is_ascii_digit()) {
                (
                    host,
                    Some(port.trim_start_matches('0')).filter(|p| !p.is_empty()),
                )
            } else {
                (host_port, None)
            }
        }
        _ => (host_port, None),
    }
}

fn default_port(scheme: &str) -> Option<&'static str> {
    match scheme.to_ascii_lowercase().as_str() {
        "http" => Some("80"),
        "https" => Some("443"),
        _ => None,
    }
}

/// `www.Example.com.` → `com,example`.
fn surt_host(host: &str) -> String {
    let host = escape_once(&unescape_repeatedly(host)).to_lowercase();
    let host = host.replace("..", ".");
    let host = host.trim_matches('.');
    let host = strip_www(host);
    host.split('.').rev().collect::<Vec<_>>().join(",")
}

/// `www.`, `www2.`…: the `surt` package's host massage.
fn strip_www(host: &str) -> &str {
    let Some(after) = host.strip_prefix("www") else {
        return host;
    };
    let digits = after.bytes().take_while(u8::is_ascii_digit).count();
    after[digits..].strip_prefix('.').unwrap_or(host)
}

fn canonical_path(path: &str) -> String {
    let decoded = unescape_repeatedly(path);
    let mut kept: Vec<&[u8]> = Vec::new();
    for segment in decoded.split(|&b| b == b'/').skip(1) {
        match segment {
            b"." => {}
            b".." if !kept.is_empty() => {
                kept.pop();
            }
            other => kept.push(other),
        }
    }
    let mut normal = vec![b'/'];
    if let Some((last, before)) = kept.split_last() {
        for segment in before.iter().filter(|s| !s.is_empty()) {
            normal.extend_from_slice(segment);
            normal.push(b'/');
        }
        normal.extend_from_slice(last);
    }
    let mut path = escape_once(&normal).to_lowercase();
    if path.len() > 1 && path.ends_with('/') {
        path.pop();
    }
    path
}

/// Query arguments lowercased and sorted as `(name, value)` pairs, an
/// argument without `=` before one with it.
fn canonical_query(query: &str) -> String {
    let query = escape_once(&unescape_repeatedly(query)).to_lowercase();
    let mut args: Vec<(&str, Option<&str>)> = query
        .split('&')
        .map(|arg| match arg.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (arg, None),
        })
        .collect();
    args.sort();
    let joined: Vec<String> = args
        .iter()
        .map(|(name, value)| match value {
            Some(value) => format!("{name}={value}"),
            None => name.to_string(),
        })
        .collect();
    joined.join("&")
}

/// Percent-decoding until nothing changes, as bytes (a lone `%` stays).
fn unescape_repeatedly(text: &str) -> Vec<u8> {
    let mut bytes = text.as_bytes().to_vec();
    loop {
        let decoded: Vec<u8> = percent_encoding::percent_decode(&bytes).collect();
        if decoded == bytes {
            return bytes;
        }
        bytes = decoded;
    }
}

/// Escapes what Python's `quote` escapes with the `surt` package's safe set:
/// bytes outside printable ASCII, space, `#` and `%`.
fn escape_once(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        if b.is_ascii_graphic() && b != b'#' && b != b'%' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::urlkey;

    /// Each expected key is what the `surt` package (0.3.1) answers.
    #[test]
    fn keys_match_the_surt_package() {
        let cases = [
            ("http://example.com/", "com,example)/"),
            ("http://example.com", "com,example)/"),
            ("https://www.Example.com/A/B/", "com,example)/a/b"),
            ("http://www2.example.com/x", "com,example)/x"),
            ("http://example.com:80/x", "com,example)/x"),
            ("https://example.com:443/x", "com,example)/x"),
            ("http://example.com:8080/x", "com,example:8080)/x"),
            ("http://127.0.0.1:4000/p/a.html", "1,0,0,127:4000)/p/a.html"),
            (
                "http://shop.localhost:4000/?b=2&a=1",
                "localhost,shop:4000)/?a=1&b=2",
            ),
            ("http://example.com/a/./b/../c//d", "com,example)/a/c/d"),
            ("http://example.com/x?B=1&a&a=", "com,example)/x?a&a=&b=1"),
            ("http://example.com/x?", "com,example)/x"),
            ("http://user:pw@example.com/x#frag", "com,example)/x"),
            (
                "http://example.com/%7Euser/a%2520b",
                "com,example)/~user/a%20b",
            ),
            ("http://example.com/caf%C3%A9", "com,example)/caf%c3%a9"),
            ("http://example.com/café", "com,example)/caf%c3%a9"),
            ("http://example.com/a b", "com,example)/a%20b"),
            ("http://Example.COM./x?Q=A%20B", "com,example)/x?q=a%20b"),
            ("http://example.com/a%23b", "com,example)/a%23b"),
            ("dns:example.com", "dns:example.com"),
        ];
        for (url, key) in cases {
            assert_eq!(urlkey(url), key, "{url}");
        }
    }
}
