//! Page records: what became of each URL that left the frontier.

use serde::{Deserialize, Serialize};

/// One per URL that left the frontier (fetched, failed, blocked, given up…).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageRecord {
    pub url: String,
    pub host: String,
    pub depth: u32,
    pub fetched_at_unix_ms: u64,
    pub outcome: PageOutcome,
    pub title: Option<String>,
    pub content_digest: Option<String>,
    pub etag: Option<String>,
    pub last_modified: Option<String>,
    pub bytes: u64,
    pub outlinks: u32,
    /// The page's `<link rel=canonical>`, resolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canonical: Option<String>,
    /// Links past the per-page cap (`scope.max_links_per_page`), not followed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub links_dropped: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum PageOutcome {
    Fetched { status: u16 },
    NotModified,
    Redirect { status: u16, location: String },
    Duplicate { of: String },
    Error { kind: String, message: String },
    RobotsDenied,
    Blocked { rule_id: u64, rule: String },
    NotCrawled { reason: String },
}

impl PageOutcome {
    /// A short word for listings and exports.
    pub fn label(&self) -> &'static str {
        match self {
            PageOutcome::Fetched { .. } => "fetched",
            PageOutcome::NotModified => "not modified",
            PageOutcome::Redirect { .. } => "redirect",
            PageOutcome::Duplicate { .. } => "duplicate",
            PageOutcome::Error { .. } => "error",
            PageOutcome::RobotsDenied => "robots denied",
            PageOutcome::Blocked { .. } => "blocked",
            PageOutcome::NotCrawled { .. } => "not crawled",
        }
    }
}

impl PageRecord {
    /// A record for a URL that left the frontier without a fetch.
    pub fn without_fetch(
        url: &str,
        host: &str,
        depth: u32,
        now_unix_ms: u64,
        outcome: PageOutcome,
    ) -> Self {
        PageRecord {
            url: url.to_string(),
            host: host.to_string(),
            depth,
            fetched_at_unix_ms: now_unix_ms,
            outcome,
            title: None,
            content_digest: None,
            etag: None,
            last_modified: None,
            bytes: 0,
            outlinks: 0,
            canonical: None,
            links_dropped: 0,
        }
    }
}
