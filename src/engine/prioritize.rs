//! The prioritizer behind the front queues: a URL's level (0 = highest) from
//! its distance to a seed and the shape of the URL.

use super::telemetry::PRIORITY_LEVELS;
use super::url_norm::UrlParts;

/// Seeds and pages near them come first; deep pages and query-string variants
/// (listings, filters, sessions) later, so a crawl covers a site's structure
/// before its long tail.
pub fn priority(url: &impl UrlParts, depth: u32) -> u8 {
    let by_depth: u8 = match depth {
        0..=1 => 0,
        2 => 1,
        3..=4 => 2,
        5..=8 => 3,
        _ => 4,
    };
    let query_penalty = u8::from(url.query().is_some_and(|q| !q.is_empty()));
    (by_depth + query_penalty).min(PRIORITY_LEVELS as u8 - 1)
}

#[cfg(test)]
mod tests {
    use url::Url;

    use super::*;

    fn p(url: &str, depth: u32) -> u8 {
        priority(&Url::parse(url).unwrap(), depth)
    }

    #[test]
    fn shallow_first_queries_later() {
        assert_eq!(p("http://a.test/", 0), 0);
        assert_eq!(p("http://a.test/x", 1), 0);
        assert_eq!(p("http://a.test/x?page=2", 1), 1);
        assert_eq!(p("http://a.test/x/y", 2), 1);
        assert_eq!(p("http://a.test/x", 4), 2);
        assert_eq!(p("http://a.test/x", 7), 3);
        assert_eq!(p("http://a.test/x", 30), 4);
        assert_eq!(p("http://a.test/x?q", 30), 4);
    }
}
