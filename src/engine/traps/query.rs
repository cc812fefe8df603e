//! Query-string traps: one path with endless distinct query strings, and
//! session ids that make every visit's links new URLs.

use std::collections::{HashSet, VecDeque};

use url::Url;

use crate::engine::url_norm::UrlParts;

use super::{anchored_rule, hash_str, push_sample, regex_rule, Detection, GenMap};
use crate::engine::config::TrapConfig;
use crate::engine::session_ids::random_looking;
use crate::engine::telemetry::TrapKind;

/// Paths with a query string remembered per host (per generation).
const QUERY_PATHS: usize = 32;
/// Parameters inspected per URL.
const MAX_PARAMS: usize = 32;
/// Random-looking parameter names tracked per host (per generation).
const SESSION_PARAMS: usize = 8;
/// Distinct values of one parameter that make it a session id.
pub const SESSION_VALUES: usize = 10;
/// Pages (the URL without the parameter) seen with two or more values: a
/// session id changes under the same page, an item id changes with the page.
/// Names that say "session" need fewer.
pub const SESSION_PAGES_NAMED: u32 = 2;
pub const SESSION_PAGES_UNNAMED: u32 = 5;
/// Pages remembered per tracked parameter.
const SESSION_PAGES: usize = 256;

struct Variants {
    seen: HashSet<u64>,
    /// New variants linked from a variant of the same path: the space
    /// begets itself (facets, sort orders), unlike a finite set of variants
    /// each linked from another page (javadoc's `index.html?<class>` frames).
    fed: usize,
    samples: VecDeque<String>,
}

#[derive(Default)]
pub struct QueryState {
    paths: Option<GenMap<u64, Variants>>,
}

impl QueryState {
    /// A link from `parent` (same host) to `url`.
    pub fn on_link(
        &mut self,
        cfg: &TrapConfig,
        host: &str,
        parent: &Url,
        url: &impl UrlParts,
    ) -> Option<Detection> {
        let query = url.query().filter(|q| !q.is_empty())?;
        let from_variant = parent.path() == url.path() && parent.query().is_some();
        let limit = cfg.max_query_variants;
        let paths = self.paths.get_or_insert_with(|| GenMap::new(QUERY_PATHS));
        let v = paths.get_or_insert_with(hash_str(url.path()), || Variants {
            seen: HashSet::new(),
            fed: 0,
            samples: VecDeque::new(),
        });
        // Past the limit the count no longer matters: bounded at limit + 1.
        if v.seen.len() <= limit && v.seen.insert(hash_str(query)) {
            v.fed += usize::from(from_variant);
            // Samples only near the threshold, so most paths keep none.
            if v.seen.len() + super::MAX_SAMPLES > limit {
                push_sample(&mut v.samples, url.as_str());
            }
        }
        if v.seen.len() <= limit || v.fed * 2 < limit {
            return None;
        }
        Some(Detection {
            host: host.to_string(),
            kind: TrapKind::QueryExplosion,
            evidence_count: v.seen.len() as u64,
            samples: v.samples.iter().cloned().collect(),
            rule: anchored_rule(url, host, url.path(), r"\?"),
        })
    }
}

struct ParamStats {
    /// Distinct values, bounded at `SESSION_VALUES`.
    values: HashSet<u64>,
    /// URL without the parameter -> (first value seen with it, seen with another).
    pages: GenMap<u64, (u64, bool)>,
    /// Pages seen with two or more values.
    multi_valued: u32,
    samples: VecDeque<String>,
}

#[derive(Default)]
pub struct SessionState {
    params: Option<GenMap<(bool, String), ParamStats>>,
}

impl SessionState {
    pub fn on_link(&mut self, host: &str, url: &impl UrlParts) -> Option<Detection> {
        let mut found = None;
        for (is_path, name, value) in params(url) {
            if !random_looking(value) {
                continue;
            }
            let params = self
                .params
                .get_or_insert_with(|| GenMap::new(SESSION_PARAMS));
            let stats = params.get_or_insert_with((is_path, name.to_string()), || ParamStats {
                values: HashSet::new(),
                pages: GenMap::new(SESSION_PAGES),
                multi_valued: 0,
                samples: VecDeque::new(),
            });
            let value_hash = hash_str(value);
            if stats.values.len() < SESSION_VALUES {
                stats.values.insert(value_hash);
            }
            let page = hash_str(&without_param(url, is_path, name));
            match stats.pages.get(&page) {
                Some((first, multi)) if *first != value_hash && !*multi => {
                    *multi = true;
                    stats.multi_valued = stats.multi_valued.saturating_add(1);
                }
                Some(_) => {}
                None => stats.pages.insert(page, (value_hash, false)),
            }
            push_sample(&mut stats.samples, url.as_str());
            let pages_needed = if session_like_name(name) {
                SESSION_PAGES_NAMED
            } else {
                SESSION_PAGES_UNNAMED
            };
            if found.is_none()
                && stats.values.len() >= SESSION_VALUES
                && stats.multi_valued >= pages_needed
            {
                let name = regex::escape(name);
                let pattern = if is_path {
                    format!(";{name}=")
                } else {
                    format!("[?&]{name}=")
                };
                found = Some(Detection {
                    host: host.to_string(),
                    kind: TrapKind::SessionId,
                    evidence_count: stats.values.len() as u64,
                    samples: stats.samples.iter().cloned().collect(),
                    rule: regex_rule(host, pattern),
                });
            }
        }
        found
    }
}

/// Query parameters and `;name=value` path parameters (raw, as in the URL):
/// `(is_path, name, value)`, the first [`MAX_PARAMS`]. Borrowed: nearly
/// every link's parameters are not random-looking and are never kept.
fn params<'a>(url: &'a impl UrlParts) -> impl Iterator<Item = (bool, &'a str, &'a str)> + 'a {
    // Each part after a `;` runs to the end of its segment: one search of
    // the path, not one a segment.
    let in_path = url
        .path()
        .split(';')
        .skip(1)
        .map(|part| (true, part.split('/').next().unwrap_or_default()));
    let in_query = url
        .query()
        .into_iter()
        .flat_map(|query| query.split('&'))
        .map(|part| (false, part));
    in_path
        .chain(in_query)
        .filter_map(|(is_path, part)| {
            let (name, value) = part.split_once('=')?;
            Some((is_path, name, value))
        })
        .take(MAX_PARAMS)
}

fn without_param(url: &impl UrlParts, is_path: bool, name: &str) -> String {
    let keep = |part: &&str| part.split_once('=').is_none_or(|(k, _)| k != name);
    if is_path {
        let path: Vec<String> = url
            .path()
            .split('/')
            .map(|seg| {
                let mut parts = seg.split(';');
                let head = parts.next().unwrap_or("");
                std::iter::once(head)
                    .chain(parts.filter(keep))
                    .collect::<Vec<_>>()
                    .join(";")
            })
            .collect();
        format!("{}?{}", path.join("/"), url.query().unwrap_or(""))
    } else {
        let query: Vec<&str> = url.query().unwrap_or("").split('&').filter(keep).collect();
        format!("{}?{}", url.path(), query.join("&"))
    }
}

/// `sid`, `PHPSESSID`, `jsessionid`, `session_token`…
fn session_like_name(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    name == "sid" || name == "s" || name.contains("sess")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_are_the_paths_then_the_querys_in_order_and_bounded() {
        let url = Url::parse("http://a.test/x;jsessionid=AB;v=1/y;k=2?q=3&flag&r=4").unwrap();
        let found: Vec<_> = params(&url).collect();
        assert_eq!(
            found,
            [
                (true, "jsessionid", "AB"),
                (true, "v", "1"),
                (true, "k", "2"),
                (false, "q", "3"),
                (false, "r", "4"),
            ]
        );
        let plain = Url::parse("http://a.test/p/1.html").unwrap();
        assert_eq!(params(&plain).count(), 0);
        let many: String = (0..100).map(|i| format!("p{i}=v&")).collect();
        let crowded = Url::parse(&format!("http://a.test/?{many}")).unwrap();
        assert_eq!(params(&crowded).count(), MAX_PARAMS);
    }
}
