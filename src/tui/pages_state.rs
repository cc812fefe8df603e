//! What the Pages view holds: the filter and order in force, the selected
//! rank, and the band of rows last read around it. The decisions are in `pages`.

use crate::results::window::{Band, BandRequest, PageColumn};

/// Rows read beyond each edge of the screen, so scrolling a little needs no read.
pub const BAND_MARGIN: usize = 200;

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
    /// Snapshots since the last read was asked for.
    pub snapshots_since_read: u32,
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
            snapshots_since_read: 0,
        }
    }
}

impl PagesView {
    /// Rows of the list, as the last band counted them.
    pub fn total(&self) -> usize {
        match &self.band {
            Some(Ok(band)) => band.total,
            _ => 0,
        }
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

    /// The selected row, if the current band holds it.
    pub fn selected_row(&self) -> Option<&crate::results::rows::Row> {
        self.band()
            .filter(|_| self.band_is_current())
            .and_then(|b| b.row(self.selected))
    }
}
