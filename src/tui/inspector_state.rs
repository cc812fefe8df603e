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
    /// Scroll to the first line starting with this once a page is read
    /// (the Pages view's links key opens at the links).
    pub jump_to: Option<&'static str>,
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

    /// Lines the inspector shows (about: a diff row is one line), so scrolling stops at the end.
    pub fn line_count(&self) -> usize {
        let page = match self.page() {
            Some(Ok(page)) => crate::results::page::inspection_lines(page).len(),
            _ => 1,
        };
        let selected = self
            .selected
            .as_ref()
            .map_or(0, |(_, lines)| 1 + lines.as_ref().map_or(1, Vec::len));
        let diff = self.diff_rows.as_ref().map_or(0, |rows| 3 + rows.len());
        page + selected + diff
    }

    /// The shown page, once read.
    pub fn page(&self) -> Option<&Result<Arc<PageInspection>, String>> {
        self.pages.get(self.url())
    }
}
