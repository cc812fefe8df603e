//! URL normalization (RFC 3986 on top of the `url` crate), host keys and the
//! scope / URL filters applied before a URL is queued.

use std::borrow::Cow;
use std::collections::HashSet;
use std::net::IpAddr;

use url::{Position, Url};

use crate::engine::config::{ascii_domain, Scope, ScopeConfig};
use crate::engine::control::HostKey;

mod known_origins;
mod link_url;
mod plain_paths;

pub(crate) use link_url::{LinkUrl, ShortShape, UrlParts, UrlShape};
pub(crate) use plain_paths::LinkBase;

/// Normalizes in place. The `url` crate already lowercases scheme and host,
/// drops default ports, resolves dot segments and turns an empty http(s) path
/// into `/`; this adds the percent-encoding rules, drops the fragment and any
/// `user:pass@` credentials, and strips well-known session ids.
pub(crate) fn normalize(url: &mut Url) {
    url.set_fragment(None);
    strip_credentials(url);
    super::session_ids::strip_session_ids(url);
    if let Some(path) = normalize_percent(url.path()) {
        url.set_path(&path);
    }
    // The query keeps its order and its bytes; only equivalent encodings are unified.
    if let Some(query) = url.query().and_then(normalize_percent) {
        url.set_query(Some(&query));
    }
    if url.path().is_empty() && !url.cannot_be_a_base() {
        url.set_path("/");
    }
}

/// Drops `user:pass@`: credentials from a page or a Location header are
/// never sent, stored, logged or shown.
pub(crate) fn strip_credentials(url: &mut Url) {
    if url.username().is_empty() && url.password().is_none() {
        // Nearly every link: no rewrite of the serialization.
        return;
    }
    // Fails only for URLs without a host, which carry no credentials.
    let _ = url.set_username("");
    let _ = url.set_password(None);
}

fn is_unreserved(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~')
}

/// Decodes `%XX` of unreserved characters and uppercases the rest;
/// `None` when nothing changes (the common case, no allocation).
fn normalize_percent(input: &str) -> Option<String> {
    let bytes = input.as_bytes();
    if !bytes.contains(&b'%') {
        return None;
    }
    let mut out = String::with_capacity(input.len());
    let mut changed = false;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && bytes[i + 1].is_ascii_hexdigit()
            && bytes[i + 2].is_ascii_hexdigit()
        {
            let hex = &input[i + 1..i + 3];
            let value = u8::from_str_radix(hex, 16).unwrap_or(0);
            if is_unreserved(value) {
                out.push(value as char);
                changed = true;
            } else {
                let upper = hex.to_ascii_uppercase();
                changed |= upper != hex;
                out.push('%');
                out.push_str(&upper);
            }
            i += 3;
            continue;
        }
        // Copy one whole char (the input is a valid str; `url` keeps it ASCII anyway).
        let ch_len = input[i..].chars().next().map_or(1, char::len_utf8);
        out.push_str(&input[i..i + ch_len]);
        i += ch_len;
    }
    changed.then_some(out)
}

/// Schemes that never lead to a crawlable page; rejected before joining.
const SKIPPED_SCHEMES: [&str; 8] = [
    "javascript:",
    "mailto:",
    "tel:",
    "data:",
    "ftp:",
    "file:",
    "about:",
    "blob:",
];

/// Resolves an href found on `base` into an absolute, normalized http(s) URL.
pub(crate) fn resolve(base: &Url, href: &str) -> Option<Url> {
    resolve_with(base, href, known_origins::join)
}

/// [`resolve`]'s URL as text, appended to `out`, and where its parts are
/// in it: a plain path without the `url` crate (`plain_paths.rs`), any
/// other href joined by it. `None`, with `out` unchanged, where [`resolve`]
/// gives `None`.
pub(crate) fn resolve_text(base: &LinkBase, href: &str, out: &mut String) -> Option<UrlShape> {
    let trimmed = trim_href(href)?;
    let path = trimmed.split_once('#').map_or(trimmed, |(path, _)| path);
    if let Some(shape) = plain_paths::resolve_into(base, path, out) {
        return Some(shape);
    }
    let url = resolve(base.url(), href)?;
    out.push_str(url.as_str());
    Some(UrlShape::of_url(&url))
}

/// The href without the whitespace and NULs around it; `None` if nothing
/// is left to resolve (empty, or a fragment of the page itself).
fn trim_href(href: &str) -> Option<&str> {
    let href = href.trim_matches(|c: char| c.is_ascii_whitespace() || c == '\u{0}');
    (!href.is_empty() && !href.starts_with('#')).then_some(href)
}

/// [`resolve`] by the `url` crate's join alone: what it must equal.
#[cfg(test)]
pub(crate) fn resolve_by_join(base: &Url, href: &str) -> Option<Url> {
    resolve_with(base, href, |_, _| None)
}

/// [`resolve`], joining by `join_known` where it can.
fn resolve_with(
    base: &Url,
    href: &str,
    join_known: impl Fn(&Url, &str) -> Option<Url>,
) -> Option<Url> {
    let href = trim_href(href)?;
    // Bytes, not str slices: the href may have a multi-byte char at the cut.
    if SKIPPED_SCHEMES.iter().any(|scheme| {
        href.as_bytes()
            .get(..scheme.len())
            .is_some_and(|prefix| prefix.eq_ignore_ascii_case(scheme.as_bytes()))
    }) {
        return None;
    }
    let mut url = match join_known(base, href) {
        Some(url) => url,
        None => {
            let url = base.join(href).ok()?;
            known_origins::learn(&url, href);
            url
        }
    };
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none_or(str::is_empty) {
        return None;
    }
    normalize(&mut url);
    Some(url)
}

/// `host` or `host:port` when the port is not the scheme's default, lowercase.
pub fn host_key(url: &Url) -> HostKey {
    host_key_ref(url).into_owned()
}

/// [`host_key`] borrowed from the URL: the parser lowercases the hosts of
/// http(s) URLs and leaves out their default ports, so only a host of
/// another scheme is copied. Runs for every link.
pub fn host_key_ref(url: &Url) -> Cow<'_, str> {
    lowercase_key(&url[Position::BeforeHost..Position::AfterPort])
}

/// `host[:port]` as written, lowercased only if it has an uppercase byte.
fn lowercase_key(key: &str) -> Cow<'_, str> {
    match key.bytes().any(|b| b.is_ascii_uppercase()) {
        true => Cow::Owned(key.to_ascii_lowercase()),
        false => Cow::Borrowed(key),
    }
}

/// The registrable domain ("eTLD+1") of `host` by the Public Suffix List, its
/// ICANN and private sections both, as browsers draw the cookie boundary:
/// `a.b.co.uk` → `b.co.uk`, `x.github.io` → `x.github.io`. A TLD the list
/// does not know (`localhost`, `test`) is one label, so `a.shop.localhost` →
/// `shop.localhost`. A host that is itself a public suffix or a single label
/// comes back whole; a trailing dot is dropped; IP addresses are unchanged.
pub(crate) fn registrable_domain(host: &str) -> &str {
    let trimmed = host.trim_end_matches('.');
    if trimmed.starts_with('[') || trimmed.parse::<IpAddr>().is_ok() {
        return host;
    }
    // The list is lowercase. Hosts from `Url` already are, so a lowered copy
    // is made only when needed; ASCII lowering keeps byte lengths, so the
    // answer's length cuts the original.
    let domain_len = if trimmed.bytes().any(|b| b.is_ascii_uppercase()) {
        psl::domain(trimmed.to_ascii_lowercase().as_bytes()).map(|d| d.as_bytes().len())
    } else {
        psl::domain(trimmed.as_bytes()).map(|d| d.as_bytes().len())
    };
    match domain_len {
        Some(len) => &trimmed[trimmed.len() - len..],
        None => trimmed,
    }
}

/// `host` is `domain` or one of its subdomains (ASCII case-insensitive).
fn ends_with_label(host: &str, domain: &str) -> bool {
    if host.len() == domain.len() {
        return host.eq_ignore_ascii_case(domain);
    }
    host.len() > domain.len()
        && host.as_bytes()[host.len() - domain.len() - 1] == b'.'
        && host[host.len() - domain.len()..].eq_ignore_ascii_case(domain)
}

/// Why a URL is not queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Rejection {
    /// Not http or https.
    Scheme,
    /// Longer than `scope.max_url_len`.
    TooLong,
    /// Outside the crawl's scope.
    OutOfScope,
    /// A path extension in `scope.deny_extensions`.
    DeniedExtension,
}

/// Scope and URL-shape filter applied to every discovered URL.
#[derive(Debug, Clone)]
pub(crate) struct UrlFilter {
    mode: Scope,
    max_url_len: usize,
    /// Lowercase. Every link asks: hashed with foldhash, not SipHash.
    deny_extensions: HashSet<String, foldhash::fast::RandomState>,
    /// The longest of them: a longer extension is not looked up.
    longest_denied: usize,
    allow_domains: Vec<String>,
    /// Asked for every link in host scope: foldhash, not SipHash.
    seed_hosts: HashSet<HostKey, foldhash::fast::RandomState>,
    seed_domains: HashSet<String>,
}

impl UrlFilter {
    pub fn new(scope: &ScopeConfig, seeds: &[Url]) -> Self {
        let deny_extensions: HashSet<String, _> = scope
            .deny_extensions
            .iter()
            .map(|ext| ext.trim_start_matches('.').to_ascii_lowercase())
            .collect();
        let mut filter = UrlFilter {
            mode: scope.mode,
            max_url_len: scope.max_url_len,
            longest_denied: deny_extensions.iter().map(String::len).max().unwrap_or(0),
            deny_extensions,
            // Links' hosts are punycode: a crawl.toml may name an IDN in Unicode.
            allow_domains: scope
                .allow_domains
                .iter()
                .filter_map(|d| ascii_domain(d).ok())
                .collect(),
            seed_hosts: HashSet::default(),
            seed_domains: HashSet::new(),
        };
        for seed in seeds {
            filter.add_seed(seed);
        }
        filter
    }

    /// Widens the scope to a new seed's host (and domain).
    pub fn add_seed(&mut self, seed: &Url) {
        self.seed_hosts.insert(host_key(seed));
        if let Some(host) = seed.host_str() {
            self.seed_domains
                .insert(registrable_domain(&host.to_ascii_lowercase()).to_string());
        }
    }

    pub fn check(&self, url: &impl UrlParts) -> Result<(), Rejection> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(Rejection::Scheme);
        }
        if url.as_str().len() > self.max_url_len {
            return Err(Rejection::TooLong);
        }
        if !self.in_scope(url) {
            return Err(Rejection::OutOfScope);
        }
        if self.denied_extension(url) {
            return Err(Rejection::DeniedExtension);
        }
        Ok(())
    }

    fn in_scope(&self, url: &impl UrlParts) -> bool {
        let Some(host) = url.host_str() else {
            return false;
        };
        if self.allow_domains.iter().any(|d| ends_with_label(host, d)) {
            return true;
        }
        match self.mode {
            Scope::Any => true,
            Scope::Host => self.seed_hosts.contains(url.host_key_ref().as_ref()),
            Scope::Domain => self.seed_domains.iter().any(|d| ends_with_label(host, d)),
        }
    }

    fn denied_extension(&self, url: &impl UrlParts) -> bool {
        extension(url.path(), self.longest_denied).is_some_and(|ext| {
            // Most extensions are lowercase already: no copy for them.
            if ext.bytes().any(|b| b.is_ascii_uppercase()) {
                self.deny_extensions.contains(&ext.to_ascii_lowercase())
            } else {
                self.deny_extensions.contains(ext)
            }
        })
    }
}

/// The extension of a path's last segment (after its last dot, the dot not
/// first in the segment), if it is at most `longest` bytes: found by looking
/// back from the end no further than that, since every link asks.
fn extension(path: &str, longest: usize) -> Option<&str> {
    let bytes = path.as_bytes();
    let window = bytes.len().saturating_sub(longest.saturating_add(1));
    let dot = window
        + bytes[window..]
            .iter()
            .rposition(|&b| b == b'.' || b == b'/')?;
    let dot_starts_segment = dot == 0 || bytes[dot - 1] == b'/';
    if bytes[dot] != b'.' || dot_starts_segment || dot + 1 == bytes.len() {
        return None;
    }
    Some(&path[dot + 1..])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(input: &str) -> String {
        let mut url = Url::parse(input).unwrap();
        normalize(&mut url);
        url.to_string()
    }

    #[test]
    fn credentials_in_links_are_dropped() {
        assert_eq!(
            norm("http://alice:s3cret@example.com/a"),
            "http://example.com/a"
        );
        assert_eq!(
            norm("https://alice@example.com:8443/"),
            "https://example.com:8443/"
        );
        let base = Url::parse("http://example.com/").unwrap();
        let link = resolve(&base, "http://bob:pw@Example.com/x#f").unwrap();
        assert_eq!(link.as_str(), "http://example.com/x");
        assert!(link.username().is_empty() && link.password().is_none());
        // Relative links on a base without credentials stay without.
        assert_eq!(
            resolve(&base, "/y").unwrap().as_str(),
            "http://example.com/y"
        );
    }

    #[test]
    fn normalize_applies_rfc3986_rules() {
        assert_eq!(
            norm("HTTP://Example.COM:80/a/./b/../c?x#f"),
            "http://example.com/a/c?x"
        );
        assert_eq!(norm("https://example.com:443"), "https://example.com/");
        assert_eq!(norm("http://example.com:8080/"), "http://example.com:8080/");
        assert_eq!(
            norm("http://example.com/%7Euser/%41b"),
            "http://example.com/~user/Ab"
        );
        assert_eq!(
            norm("http://example.com/a%2fb%c3%a9"),
            "http://example.com/a%2Fb%C3%A9"
        );
        assert_eq!(
            norm("http://example.com/p?q=%7e&b=2&a=1"),
            "http://example.com/p?q=~&b=2&a=1"
        );
        assert_eq!(
            norm("http://example.com/p?z=1&a=%3d"),
            "http://example.com/p?z=1&a=%3D"
        );
        // A stray percent sign stays.
        assert_eq!(
            norm("http://example.com/100%/x%4"),
            "http://example.com/100%/x%4"
        );
        assert_eq!(
            norm("http://example.com/a/b/../../../c"),
            "http://example.com/c"
        );
        assert_eq!(norm("http://example.com/a#frag"), "http://example.com/a");
    }

    #[test]
    fn normalize_is_idempotent() {
        for input in [
            "HTTP://Example.COM:80/a/./b/../c?x#f",
            "http://h/%7e%2f?%aa",
            "http://h",
        ] {
            let once = norm(input);
            assert_eq!(norm(&once), once);
        }
    }

    #[test]
    fn resolve_joins_trims_and_skips_non_http() {
        let base = Url::parse("http://shop.localhost:40123/cat/item.html").unwrap();
        let r = |href: &str| resolve(&base, href).map(|u| u.to_string());
        assert_eq!(
            r("  ../about#team \n").as_deref(),
            Some("http://shop.localhost:40123/about")
        );
        assert_eq!(
            r("?page=2").as_deref(),
            Some("http://shop.localhost:40123/cat/item.html?page=2")
        );
        assert_eq!(
            r("//Other.Example/x").as_deref(),
            Some("http://other.example/x")
        );
        assert_eq!(
            r("HTTPS://a.example:443").as_deref(),
            Some("https://a.example/")
        );
        for skipped in [
            "javascript:void(0)",
            "JavaScript:alert(1)",
            "mailto:a@b.c",
            "tel:+1",
            "data:text/html,hi",
            "ftp://files.example/x",
            "#top",
            "",
            "   ",
            "http://",
        ] {
            assert_eq!(r(skipped), None, "{skipped:?} should be skipped");
        }
    }

    #[test]
    fn host_key_keeps_only_non_default_ports() {
        let key = |s: &str| host_key(&Url::parse(s).unwrap());
        assert_eq!(key("http://Shop.Localhost:40123/x"), "shop.localhost:40123");
        assert_eq!(key("http://example.org:80/"), "example.org");
        assert_eq!(key("https://example.org:443/"), "example.org");
        assert_eq!(key("https://example.org:80/"), "example.org:80");
        assert_eq!(key("http://[::1]:8080/"), "[::1]:8080");
        assert_eq!(key("http://a.test:0/"), "a.test:0");
        assert_eq!(key("http://a.test:7/"), "a.test:7");
        assert_eq!(key("http://a.test:65535/"), "a.test:65535");
        assert_eq!(key("http://user:secret@Host.test:81/"), "host.test:81");
        assert_eq!(key("mailto:someone@example.org"), "");
        assert_eq!(key("file:///tmp/x"), "");
        // Only other schemes keep their case; those are copied, not borrowed.
        assert_eq!(key("ftp-like://MIXED.Test:21/"), "mixed.test:21");
        let http = Url::parse("http://a.test:8080/x?y").unwrap();
        assert!(matches!(host_key_ref(&http), Cow::Borrowed("a.test:8080")));
    }

    #[test]
    fn registrable_domain_of_common_hosts() {
        assert_eq!(registrable_domain("a.b.example.com"), "example.com");
        assert_eq!(registrable_domain("example.com"), "example.com");
        assert_eq!(registrable_domain("www.bbc.co.uk"), "bbc.co.uk");
        assert_eq!(registrable_domain("co.uk"), "co.uk");
        assert_eq!(registrable_domain("shop.localhost"), "shop.localhost");
        assert_eq!(registrable_domain("localhost"), "localhost");
        assert_eq!(registrable_domain("127.0.0.1"), "127.0.0.1");
        assert_eq!(registrable_domain("[::1]"), "[::1]");
        assert_eq!(registrable_domain("www.example.com."), "example.com");
    }

    #[test]
    fn registrable_domain_follows_the_public_suffix_list() {
        // ICANN section, including suffixes the old hand-written list missed.
        assert_eq!(registrable_domain("a.b.co.uk"), "b.co.uk");
        assert_eq!(
            registrable_domain("www.city.kawasaki.jp"),
            "city.kawasaki.jp"
        );
        assert_eq!(registrable_domain("a.b.example.com.mx"), "example.com.mx");
        assert_eq!(registrable_domain("shop.example.co.id"), "example.co.id");
        // Private section: each user's site is its own registrable domain.
        assert_eq!(registrable_domain("x.github.io"), "x.github.io");
        assert_eq!(registrable_domain("a.x.github.io"), "x.github.io");
        assert_eq!(registrable_domain("github.io"), "github.io");
        assert_eq!(
            registrable_domain("bucket.s3.amazonaws.com"),
            "bucket.s3.amazonaws.com"
        );
        assert_eq!(
            registrable_domain("www.bucket.s3.amazonaws.com"),
            "bucket.s3.amazonaws.com"
        );
        assert_eq!(registrable_domain("aws.amazonaws.com"), "amazonaws.com");
        // Hosts given in upper case keep their case, not their suffix's fate.
        assert_eq!(registrable_domain("WWW.BBC.CO.UK"), "BBC.CO.UK");
        assert_eq!(registrable_domain("X.GitHub.IO."), "X.GitHub.IO");
    }

    #[test]
    fn registrable_domain_of_local_hosts_and_addresses_is_unchanged() {
        // localhost is no public suffix; an unknown TLD counts as one label.
        assert_eq!(registrable_domain("localhost"), "localhost");
        assert_eq!(registrable_domain("localhost."), "localhost");
        assert_eq!(registrable_domain("shop.localhost"), "shop.localhost");
        assert_eq!(registrable_domain("a.shop.localhost"), "shop.localhost");
        assert_eq!(registrable_domain("intranet"), "intranet");
        assert_eq!(registrable_domain("a.b.example.test"), "example.test");
        assert_eq!(registrable_domain("127.0.0.1"), "127.0.0.1");
        assert_eq!(registrable_domain("10.1.2.3"), "10.1.2.3");
        assert_eq!(registrable_domain("[::1]"), "[::1]");
        assert_eq!(registrable_domain("[2001:db8::1]"), "[2001:db8::1]");
    }

    fn filter(mode: Scope, seeds: &[&str]) -> UrlFilter {
        let scope = ScopeConfig {
            mode,
            max_url_len: 60,
            deny_extensions: vec!["jpg".into(), ".PDF".into()],
            allow_domains: vec!["Partner.Example".into()],
            ..ScopeConfig::default()
        };
        let seeds: Vec<Url> = seeds.iter().map(|s| Url::parse(s).unwrap()).collect();
        UrlFilter::new(&scope, &seeds)
    }

    fn check(f: &UrlFilter, url: &str) -> Result<(), Rejection> {
        f.check(&Url::parse(url).unwrap())
    }

    #[test]
    fn host_scope_is_exact_host_and_port() {
        let f = filter(Scope::Host, &["http://shop.localhost:40123/"]);
        assert_eq!(check(&f, "http://shop.localhost:40123/a"), Ok(()));
        assert_eq!(check(&f, "https://shop.localhost:40123/a"), Ok(()));
        assert_eq!(
            check(&f, "http://shop.localhost:40124/a"),
            Err(Rejection::OutOfScope)
        );
        assert_eq!(
            check(&f, "http://www.shop.localhost:40123/"),
            Err(Rejection::OutOfScope)
        );
        // allow_domains widens every mode, subdomains included.
        assert_eq!(check(&f, "http://cdn.partner.example/x"), Ok(()));
        assert_eq!(
            check(&f, "http://notpartner.example/x"),
            Err(Rejection::OutOfScope)
        );
    }

    #[test]
    fn an_allowed_domain_in_unicode_matches_its_punycode_hosts() {
        let scope = ScopeConfig {
            allow_domains: vec!["Bücher.Example".into()],
            ..ScopeConfig::default()
        };
        let f = UrlFilter::new(&scope, &[]);
        assert_eq!(check(&f, "http://shop.bücher.example/"), Ok(()));
        assert_eq!(check(&f, "http://xn--bcher-kva.example/"), Ok(()));
    }

    #[test]
    fn domain_scope_takes_subdomains_and_ignores_port() {
        let mut f = filter(Scope::Domain, &["http://www.example.com/"]);
        assert_eq!(check(&f, "http://blog.example.com:8080/x"), Ok(()));
        assert_eq!(check(&f, "http://example.com/"), Ok(()));
        assert_eq!(
            check(&f, "http://badexample.com/"),
            Err(Rejection::OutOfScope)
        );
        assert_eq!(check(&f, "http://other.org/"), Err(Rejection::OutOfScope));
        f.add_seed(&Url::parse("http://other.org/").unwrap());
        assert_eq!(check(&f, "http://a.other.org/"), Ok(()));
    }

    #[test]
    fn domain_scope_stops_at_public_suffixes() {
        let f = filter(
            Scope::Domain,
            &[
                "https://alice.github.io/",
                "http://shop.localhost:40123/",
                "http://127.0.0.1:8080/",
            ],
        );
        assert_eq!(check(&f, "https://docs.alice.github.io/x"), Ok(()));
        assert_eq!(
            check(&f, "https://bob.github.io/"),
            Err(Rejection::OutOfScope)
        );
        assert_eq!(check(&f, "https://github.io/"), Err(Rejection::OutOfScope));
        // The demo's `<site>.localhost:<port>` sites: subdomains and any port
        // are in, sibling sites are not.
        assert_eq!(check(&f, "http://www.shop.localhost:40124/"), Ok(()));
        assert_eq!(
            check(&f, "http://blog.localhost:40123/"),
            Err(Rejection::OutOfScope)
        );
        assert_eq!(check(&f, "http://127.0.0.1:9090/a"), Ok(()));
        assert_eq!(
            check(&f, "http://127.0.0.2:8080/"),
            Err(Rejection::OutOfScope)
        );
    }

    #[test]
    fn any_scope_and_shape_rules() {
        let f = filter(Scope::Any, &[]);
        assert_eq!(check(&f, "http://anything.example/x"), Ok(()));
        assert_eq!(
            check(&f, "ftp://anything.example/x"),
            Err(Rejection::Scheme)
        );
        let long = format!("http://a.example/{}", "x".repeat(60));
        assert_eq!(check(&f, &long), Err(Rejection::TooLong));
        assert_eq!(
            check(&f, "http://a.example/img/Photo.JPG"),
            Err(Rejection::DeniedExtension)
        );
        assert_eq!(
            check(&f, "http://a.example/doc.pdf?x=1"),
            Err(Rejection::DeniedExtension)
        );
        // Only the last segment's extension counts; dotfiles and dirs are fine.
        assert_eq!(check(&f, "http://a.example/x.jpg/page"), Ok(()));
        assert_eq!(check(&f, "http://a.example/.jpg"), Ok(()));
        assert_eq!(check(&f, "http://a.example/page.html?img=a.jpg"), Ok(()));
    }

    /// The extension as the last segment's text after its last dot, split
    /// the plain way.
    fn extension_by_segments(path: &str, longest: usize) -> Option<&str> {
        let last_segment = path.rsplit('/').next().unwrap_or("");
        let (stem, ext) = last_segment.rsplit_once('.')?;
        (!stem.is_empty() && !ext.is_empty() && ext.len() <= longest).then_some(ext)
    }

    #[test]
    fn the_extension_looked_back_for_is_the_last_segments() {
        let pieces = [
            "", "/", ".", "a", "ab", "é", ".jpg", "x.tar.gz", "/.", "..", "html",
        ];
        for a in pieces {
            for b in pieces {
                for c in pieces {
                    let path = format!("{a}{b}{c}");
                    for longest in 0..6 {
                        assert_eq!(
                            extension(&path, longest),
                            extension_by_segments(&path, longest),
                            "{path:?} with extensions of at most {longest} bytes"
                        );
                    }
                }
            }
        }
    }
}
