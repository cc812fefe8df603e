//! Group commit: each page's batch is applied when its result arrives, but
//! made durable (a sled flush: a write and a `sync_file_range`) at most once
//! per [`GROUP_COMMIT_WINDOW`]. A host whose page was committed is not handed
//! out again before the flush that covers that page (`schedule_next`), and the
//! loop flushes before it dispatches, so after a `kill -9` still only what
//! was in flight is fetched again.

use std::time::Duration;

use tokio::time::Instant;

/// How long a commit may wait for the flush that makes it durable.
pub(super) const GROUP_COMMIT_WINDOW: Duration = Duration::from_millis(5);

/// When the commits not yet flushed must be.
#[derive(Debug, Default)]
pub(super) struct GroupCommit {
    due: Option<Instant>,
}

impl GroupCommit {
    /// Notes a commit made at `now`.
    pub(super) fn committed(&mut self, now: Instant) {
        self.due.get_or_insert(now + GROUP_COMMIT_WINDOW);
    }

    /// When the next flush is due, if anything awaits one.
    pub(super) fn next_due(&self) -> Option<Instant> {
        self.due
    }

    /// Whether the commits waiting must be flushed now.
    pub(super) fn is_due(&self, now: Instant) -> bool {
        self.due.is_some_and(|at| at <= now)
    }

    /// Everything committed so far is durable.
    pub(super) fn flushed(&mut self) {
        self.due = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_commit_after_a_flush_sets_the_deadline_for_all_that_follow() {
        let start = Instant::now();
        let mut group = GroupCommit::default();
        assert_eq!(group.next_due(), None);
        assert!(
            !group.is_due(start + Duration::from_secs(60)),
            "nothing waits"
        );

        group.committed(start);
        group.committed(start + Duration::from_millis(3));
        let due = start + GROUP_COMMIT_WINDOW;
        assert_eq!(group.next_due(), Some(due), "later commits join the group");
        assert!(!group.is_due(due - Duration::from_millis(1)));
        assert!(group.is_due(due));

        group.flushed();
        assert_eq!(group.next_due(), None);
        group.committed(due + Duration::from_millis(1));
        assert_eq!(
            group.next_due(),
            Some(due + Duration::from_millis(1) + GROUP_COMMIT_WINDOW)
        );
    }
}
