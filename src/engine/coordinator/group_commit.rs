//! Group commit: finished pages are completed in one frontier batch, with
//! the counters and host state they changed, and made durable by one flush
//! (a journal sync): one sync per page cost a disk write and a wait each, as
//! it did with sled, which synced its log for every batch. A group is
//! written [`GROUP_COMMIT_WINDOW`] after its first page once it holds
//! [`GROUP_COMMIT_PAGES`], else after [`GROUP_COMMIT_MAX_WAIT`], and at once
//! when the crawl loop has nothing in flight. A page's lease ends only with
//! its group's flush, but its host's turn ends when its answer is handled
//! (`answered`): waiting for the write cost every host up to a window
//! between two requests. After a `kill -9` what was leased is fetched again:
//! the requests in flight, and the pages answered since the last group was
//! written.

use std::time::Duration;

use tokio::time::Instant;

use crate::engine::frontier::Completion;

/// How long a full group ([`GROUP_COMMIT_PAGES`]) waits from its first page
/// for its write. While the wait was part of every host's turn, 2 ms beat 5 (9-17 % more
/// pages/s on the shared bench). Since the turn ends at the answer, the
/// window sets only how many pages share a write and a sync: at the archived
/// crawl's pace 2 ms held ~7 pages, and 5 ms took 9 % off its CPU a page
/// (docs/PERFORMANCE.md).
pub(super) const GROUP_COMMIT_WINDOW: Duration = Duration::from_millis(5);

/// A group this large is written once the window has passed; a smaller one
/// waits for more pages, up to [`GROUP_COMMIT_MAX_WAIT`], so a slower crawl
/// (the archive's, a polite one) pays its writes and syncs over as many
/// pages as a fast one instead of twice as often a page.
pub(super) const GROUP_COMMIT_PAGES: usize = 48;

/// The longest a finished page waits for its write: a `kill -9` fetches
/// again at most this much of answered pages, and a page's links are
/// queued at most this late.
pub(super) const GROUP_COMMIT_MAX_WAIT: Duration = Duration::from_millis(25);

/// Pages finished but not yet written, and since when.
#[derive(Debug, Default)]
pub(super) struct GroupCommit {
    pending: Vec<Completion>,
    first_added: Option<Instant>,
}

impl GroupCommit {
    /// Adds a finished page to the group.
    pub(super) fn add(&mut self, completion: Completion, now: Instant) {
        self.pending.push(completion);
        self.first_added.get_or_insert(now);
    }

    /// When the group must be written, if anything waits.
    pub(super) fn next_due(&self) -> Option<Instant> {
        let first = self.first_added?;
        let wait = if self.pending.len() >= GROUP_COMMIT_PAGES {
            GROUP_COMMIT_WINDOW
        } else {
            GROUP_COMMIT_MAX_WAIT
        };
        Some(first + wait)
    }

    /// Whether the group must be written now: its wait is over, or no
    /// request is in flight, so no page can join it.
    pub(super) fn is_due(&self, now: Instant, in_flight: usize) -> bool {
        self.next_due()
            .is_some_and(|at| at <= now || in_flight == 0)
    }

    /// Pages wait: their links are not queued yet.
    pub(super) fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// The group, to be written now.
    pub(super) fn take(&mut self) -> Vec<Completion> {
        self.first_added = None;
        std::mem::take(&mut self.pending)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(n: usize) -> Completion {
        use crate::engine::frontier::conformance::{entry, record};
        use crate::engine::frontier::Lease;

        let entry = entry("a.test", &n.to_string(), 0);
        Completion {
            record: record(&entry),
            lease: Lease {
                key: entry.url.clone().into_bytes(),
                entry,
            },
            outlinks: Vec::new(),
        }
    }

    /// Requests out while the group waits.
    const IN_FLIGHT: usize = 3;

    #[test]
    fn a_small_group_waits_for_more_pages_up_to_the_longest_wait() {
        let start = Instant::now();
        let mut group = GroupCommit::default();
        assert_eq!(group.next_due(), None);
        assert!(group.is_empty());
        assert!(
            !group.is_due(start + Duration::from_secs(60), 0),
            "nothing waits"
        );

        group.add(page(1), start);
        group.add(page(2), start + Duration::from_millis(3));
        let due = start + GROUP_COMMIT_MAX_WAIT;
        assert_eq!(group.next_due(), Some(due), "later pages join the group");
        assert!(!group.is_due(start + GROUP_COMMIT_WINDOW, IN_FLIGHT));
        assert!(!group.is_due(due - Duration::from_millis(1), IN_FLIGHT));
        assert!(group.is_due(due, IN_FLIGHT));

        let taken: Vec<String> = group.take().into_iter().map(|c| c.record.url).collect();
        assert_eq!(taken, ["http://a.test/1", "http://a.test/2"]);
        assert!(group.is_empty());
        assert_eq!(group.next_due(), None);
        let later = due + Duration::from_millis(1);
        group.add(page(3), later);
        assert_eq!(group.next_due(), Some(later + GROUP_COMMIT_MAX_WAIT));
    }

    #[test]
    fn a_full_group_is_written_once_the_window_has_passed() {
        let start = Instant::now();
        let mut group = GroupCommit::default();
        for n in 0..GROUP_COMMIT_PAGES - 1 {
            group.add(page(n), start + Duration::from_micros(n as u64));
        }
        assert_eq!(group.next_due(), Some(start + GROUP_COMMIT_MAX_WAIT));
        group.add(page(GROUP_COMMIT_PAGES), start + Duration::from_millis(1));
        let due = start + GROUP_COMMIT_WINDOW;
        assert_eq!(group.next_due(), Some(due), "timed from its first page");
        assert!(!group.is_due(due - Duration::from_micros(1), IN_FLIGHT));
        assert!(group.is_due(due, IN_FLIGHT));
        assert_eq!(group.take().len(), GROUP_COMMIT_PAGES);
    }

    #[test]
    fn with_nothing_in_flight_the_group_is_written_at_once() {
        let start = Instant::now();
        let mut group = GroupCommit::default();
        assert!(!group.is_due(start, 0), "an empty group is never due");
        group.add(page(1), start);
        assert!(!group.is_due(start, 1), "a request in flight may join it");
        assert!(group.is_due(start, 0), "no page can join it");
    }
}
