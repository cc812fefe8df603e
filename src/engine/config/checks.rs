//! `[checks]`: URLs a crawl requests only to learn their status: the
//! resources its pages load and, if asked, the pages they link to off scope.

use serde::{Deserialize, Serialize};

/// Resources kept per page unless `checks.max_resources_per_page` says otherwise.
pub const DEFAULT_MAX_RESOURCES_PER_PAGE: usize = 256;

/// What becomes of the resources pages load (images, scripts, stylesheets…).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResourcesMode {
    /// Each in-scope resource is requested once (HEAD) and its status recorded.
    Check,
    /// Resources are not collected.
    Off,
    /// Each in-scope resource is fetched once (GET, under the page limits)
    /// and archived in the WARC, never parsed for links; a stylesheet's
    /// `url()` references become resources too, so a replayed page has its
    /// fonts and background images.
    Fetch,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
/// `[checks]`: resources and external links, requested but never parsed.
pub struct ChecksConfig {
    /// `check` (default), `fetch` or `off`.
    pub resources: ResourcesMode,
    /// Request each out-of-scope URL an in-scope page links to, once.
    pub external: bool,
    /// Resources taken from one page; those past it are counted as cut.
    pub max_resources_per_page: usize,
    /// External URLs checked in one crawl; later ones are recorded as out of scope.
    pub max_external: u64,
    /// External URLs checked per host (in one run of the engine).
    pub max_external_per_host: u32,
}

impl Default for ChecksConfig {
    fn default() -> Self {
        ChecksConfig {
            resources: ResourcesMode::Check,
            external: false,
            max_resources_per_page: DEFAULT_MAX_RESOURCES_PER_PAGE,
            max_external: 10_000,
            max_external_per_host: 100,
        }
    }
}

impl ChecksConfig {
    /// Resources extraction collects per page: none when they are off.
    pub fn resources_per_page(&self) -> usize {
        match self.resources {
            ResourcesMode::Off => 0,
            ResourcesMode::Check | ResourcesMode::Fetch => self.max_resources_per_page,
        }
    }

    /// Whether in-scope resources are fetched and archived, not only checked.
    pub fn fetches_resources(&self) -> bool {
        self.resources == ResourcesMode::Fetch
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::CrawlConfig;
    use super::*;

    #[test]
    fn resources_fetch_is_accepted_and_collects_resources_and_off_collects_none() {
        let text = "[checks]\nresources = \"fetch\"\n";
        let config = CrawlConfig::from_toml(text, Path::new("crawl.toml")).unwrap();
        config.validate().expect("fetch is a valid mode");
        assert!(config.checks.fetches_resources());
        assert_eq!(config.checks.resources_per_page(), 256);
        assert!(
            !ChecksConfig::default().fetches_resources(),
            "check by default"
        );
        let off = ChecksConfig {
            resources: ResourcesMode::Off,
            ..ChecksConfig::default()
        };
        assert_eq!(off.resources_per_page(), 0);
        assert_eq!(ChecksConfig::default().resources_per_page(), 256);
        assert!(!ChecksConfig::default().external, "off unless asked for");
    }
}
