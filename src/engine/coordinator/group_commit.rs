//! Group commit: the pages that come back within [`GROUP_COMMIT_WINDOW`] are
//! completed in one frontier batch, with the counters and host state they
//! changed, and made durable by one flush (a journal sync): one sync per
//! page cost a disk write and a wait each, as it did with sled, which synced
//! its log for every batch. A page's lease ends only with its group's flush,
//! but its host's turn ends when its answer is handled (`answered`): waiting
//! for the write cost every host up to a window between two requests. After
//! a `kill -9` what was leased is fetched again: the requests in flight, and
//! the pages answered within the last window whose group was not written.

use std::time::Duration;

use tokio::time::Instant;

use crate::engine::frontier::Completion;

/// How long a finished page may wait for the write that completes it. While
/// the wait was part of every host's turn, 2 ms beat 5 (9-17 % more pages/s
/// on the shared bench). Since the turn ends at the answer, the window sets
/// only how many pages share a write and a sync: at the archived crawl's
/// pace 2 ms held ~7 pages, and 5 ms took 9 % off its CPU a page
/// (docs/PERFORMANCE.md). A `kill -9` fetches again at most 5 ms of answers.
pub(super) const GROUP_COMMIT_WINDOW: Duration = Duration::from_millis(5);

/// Pages finished but not yet written, and when they must be.
#[derive(Debug, Default)]
pub(super) struct GroupCommit {
    pending: Vec<Completion>,
    due: Option<Instant>,
}

impl GroupCommit {
    /// Adds a finished page to the group.
    pub(super) fn add(&mut self, completion: Completion, now: Instant) {
        self.pending.push(completion);
        self.due.get_or_insert(now + GROUP_COMMIT_WINDOW);
    }

    /// When the group must be written, if anything waits.
    pub(super) fn next_due(&self) -> Option<Instant> {
        self.due
    }

    /// Whether the group must be written now.
    pub(super) fn is_due(&self, now: Instant) -> bool {
        self.due.is_some_and(|at| at <= now)
    }

    /// Pages wait: their links are not queued yet.
    pub(super) fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// The group, to be written now.
    pub(super) fn take(&mut self) -> Vec<Completion> {
        self.due = None;
        std::mem::take(&mut self.pending)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_page_after_a_write_sets_the_deadline_for_the_group() {
        use crate::engine::frontier::{FrontierEntry, Lease};
        use crate::engine::store::{PageOutcome, PageRecord};

        let page = |n: u32| {
            let url = format!("http://a.test/{n}");
            Completion {
                lease: Lease {
                    key: url.clone().into_bytes(),
                    entry: FrontierEntry {
                        url: url.clone(),
                        host: "a.test".into(),
                        depth: 0,
                        priority: 0,
                        redirects: 0,
                        kind: crate::engine::store::UrlKind::Page,
                    },
                },
                record: PageRecord::without_fetch(&url, "a.test", 0, 0, PageOutcome::RobotsDenied),
                outlinks: Vec::new(),
            }
        };
        let start = Instant::now();
        let mut group = GroupCommit::default();
        assert_eq!(group.next_due(), None);
        assert!(group.is_empty());
        assert!(
            !group.is_due(start + Duration::from_secs(60)),
            "nothing waits"
        );

        group.add(page(1), start);
        group.add(page(2), start + Duration::from_millis(3));
        let due = start + GROUP_COMMIT_WINDOW;
        assert_eq!(group.next_due(), Some(due), "later pages join the group");
        assert!(!group.is_due(due - Duration::from_millis(1)));
        assert!(group.is_due(due));

        let taken: Vec<String> = group.take().into_iter().map(|c| c.record.url).collect();
        assert_eq!(taken, ["http://a.test/1", "http://a.test/2"]);
        assert!(group.is_empty());
        assert_eq!(group.next_due(), None);
        let later = due + Duration::from_millis(1);
        group.add(page(3), later);
        assert_eq!(group.next_due(), Some(later + GROUP_COMMIT_WINDOW));
    }
}
