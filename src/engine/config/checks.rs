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
    /// Checked and archived: refused by validation until WARC archiving of
    /// resources exists (the archive issue), never silently taken as `check`.
    Fetch,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
/// `[checks]`: resources and external links, requested but never parsed.
pub struct ChecksConfig {
    /// `check` (default), `off`; `fetch` is not built yet.
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

    /// What is wrong with these settings: the key and the message.
    pub(super) fn problem(&self) -> Option<(&'static str, String)> {
        if self.resources == ResourcesMode::Fetch {
            return Some((
                "checks.resources",
                "\"fetch\" (archiving resources for replay) is not built yet; \
                 use \"check\" (request each once, record its status) or \"off\""
                    .into(),
            ));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::CrawlConfig;
    use super::*;

    #[test]
    fn resources_fetch_is_refused_with_the_reason_and_off_collects_none() {
        let text = "[checks]\nresources = \"fetch\"\n";
        let config = CrawlConfig::from_toml(text, Path::new("crawl.toml")).unwrap();
        let message = config.validate().unwrap_err().to_string();
        assert!(message.contains("checks.resources"), "{message}");
        assert!(message.contains("not built yet"), "{message}");
        let off = ChecksConfig {
            resources: ResourcesMode::Off,
            ..ChecksConfig::default()
        };
        assert_eq!(off.resources_per_page(), 0);
        assert_eq!(ChecksConfig::default().resources_per_page(), 256);
        assert!(!ChecksConfig::default().external, "off unless asked for");
    }
}
