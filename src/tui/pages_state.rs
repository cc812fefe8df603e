//! What the Pages view holds: the filter and order in force, the selected
//! rank, and the band of rows last read around it. The decisions are in `pages`.

use crate::results::window::{Band, BandRequest, PageColumn};

/// Rows read beyond each edge of the screen, so scrolling a little needs no read.
pub const BAND_MARGIN: usize = 200;

/// Filters whose counts are remembered.
pub const KNOWN_FILTERS: usize = 8;

/// What the Pages view holds.
#[derive(Debug, Clone)]
pub struct PagesView {
    /// The filter in force (it parsed).
    pub filter: String,
    /// The filter before its prompt opened, for Esc.
    pub filter_before: Option<String>,
    pub sort: PageColumn,
    /// Against the column's natural order.
    pub reverse: bool,
    /// The selected row's rank in the filtered, ordered list.
    pub selected: usize,
    /// The rank of the first row on screen.
    pub top: usize,
    /// The last band read, or why it could not be.
    pub band: Option<Result<Band, String>>,
    /// The read under way.
    pub reading: Option<BandRequest>,
    /// Something changed while a read was under way: read again when it ends.
    pub stale: bool,
    /// Bumped on every change of the filter typed: a read waits for typing
    /// to pause (a read of a large crawl is a pass over its rows).
    pub typed: u64,
    /// Snapshots since the last read ended (or, while one runs, since it began).
    pub snapshots_since_read: u32,
    /// Snapshots the last read took: a slow read (a large crawl) is
    /// repeated less often, so the view never keeps the reader busy.
    pub last_read_snapshots: u32,
    /// The last counts of the rows passing the filters used lately, newest
    /// last (a band in URL order read without counting holds only a lower bound).
    pub known_totals: Vec<(String, usize)>,
}

impl Default for PagesView {
    fn default() -> Self {
        PagesView {
            filter: String::new(),
            filter_before: None,
            sort: PageColumn::Url,
            reverse: false,
            selected: 0,
            top: 0,
            band: None,
            reading: None,
            stale: false,
            typed: 0,
            snapshots_since_read: 0,
            last_read_snapshots: 0,
            known_totals: Vec::new(),
        }
    }
}

impl PagesView {
    /// Rows of the list: as the last band counted them, or at least as
    /// many as it and the last count saw.
    pub fn total(&self) -> usize {
        let Some(band) = self.band() else {
            return 0;
        };
        match band.counted {
            true => band.total,
            false => band
                .total
                .max(self.known_total_of(&band.request.filter).unwrap_or(0)),
        }
    }

    /// Whether [`PagesView::total`] is a count, not a lower bound.
    pub fn total_is_counted(&self) -> bool {
        self.band().is_some_and(|b| b.counted) || self.known_total_of(&self.filter).is_some()
    }

    /// The last count of the rows passing `filter`, if there is one.
    pub fn known_total_of(&self, filter: &str) -> Option<usize> {
        self.known_totals
            .iter()
            .find(|(f, _)| f == filter)
            .map(|(_, total)| *total)
    }

    /// Keeps a count, forgetting the oldest past [`KNOWN_FILTERS`].
    pub fn remember_total(&mut self, filter: &str, total: usize) {
        self.known_totals.retain(|(f, _)| f != filter);
        if self.known_totals.len() == KNOWN_FILTERS {
            self.known_totals.remove(0);
        }
        self.known_totals.push((filter.to_string(), total));
    }

    /// The last band read, if it was.
    pub fn band(&self) -> Option<&Band> {
        self.band.as_ref().and_then(|b| b.as_ref().ok())
    }

    /// The band's request matches the view's filter and order (a band of
    /// another filter or order is not shown as this one's).
    pub fn band_is_current(&self) -> bool {
        self.band().is_some_and(|b| {
            b.request.filter == self.filter
                && b.request.sort == self.sort
                && b.request.reverse == self.reverse
        })
    }
}
