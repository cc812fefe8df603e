//! What the page inspector holds: its list of URLs, the pages read, the
//! last `:select`. The decisions are in `inspector`.

use std::collections::HashMap;
use std::sync::Arc;

use crate::engine::inspect::{DiffRow, PageInspection};

/// The inspector: a list of URLs, one shown at a time.
#[derive(Debug, Clone, PartialEq)]
pub struct Inspector {
    /// Where the URLs come from, for the title ("alert #3 evidence").
    pub origin: String,
    pub urls: Vec<String>,
    /// The URL shown.
    pub at: usize,
    /// Show a diff of the shown page's text with the next URL's.
    pub diff: bool,
    /// Pages read (or failed) so far: the shown one and its diff partner.
    pub pages: HashMap<String, Result<Arc<PageInspection>, String>>,
    /// The last `:select` on the shown page: the selector and its lines (`None` while running).
    pub selected: Option<(String, Option<Vec<String>>)>,
    /// Lines scrolled down.
    pub scroll: usize,
    /// The diff of the shown page with its partner, once both are read.
    pub diff_rows: Option<Vec<DiffRow>>,
}

impl Inspector {
    /// The URL shown.
    pub fn url(&self) -> &str {
        self.urls.get(self.at).map_or("", String::as_str)
    }

    /// The URL the shown page is compared with, if any.
    pub fn partner(&self) -> Option<&str> {
        (self.diff && self.urls.len() > 1)
            .then(|| self.urls[(self.at + 1) % self.urls.len()].as_str())
    }

    /// The shown page, once read.
    pub fn page(&self) -> Option<&Result<Arc<PageInspection>, String>> {
        self.pages.get(self.url())
    }
}
