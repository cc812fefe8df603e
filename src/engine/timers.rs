//! Per-host timers of the crawl loop: when an open breaker may probe again,
//! when an unavailable robots.txt is asked again.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use tokio::time::Instant;

use super::control::HostKey;

/// What is due for a host when its timer fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Timer {
    /// The breaker's cooldown is over: one probe request may go out.
    BreakerProbe,
    /// robots.txt was unavailable: ask again.
    RobotsRetry,
}

/// Timers ordered by due time.
#[derive(Default)]
pub(crate) struct Timers {
    heap: BinaryHeap<Reverse<(Instant, Timer, HostKey)>>,
}

impl Timers {
    /// Fires `timer` for `host` at `at`.
    pub(crate) fn schedule(&mut self, at: Instant, timer: Timer, host: &str) {
        self.heap.push(Reverse((at, timer, host.to_string())));
    }

    /// The next timer due at or before `now`, removed from the set.
    pub(crate) fn pop_due(&mut self, now: Instant) -> Option<(Timer, HostKey)> {
        let Reverse((at, _, _)) = self.heap.peek()?;
        if *at > now {
            return None;
        }
        let Reverse((_, timer, host)) = self.heap.pop()?;
        Some((timer, host))
    }

    /// When the earliest timer is due.
    pub(crate) fn next_due(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse((at, _, _))| *at)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn timers_fire_in_due_order_and_not_before_their_time() {
        let now = Instant::now();
        let mut timers = Timers::default();
        timers.schedule(now + Duration::from_secs(2), Timer::RobotsRetry, "b");
        timers.schedule(now + Duration::from_secs(1), Timer::BreakerProbe, "a");
        assert_eq!(timers.next_due(), Some(now + Duration::from_secs(1)));
        assert_eq!(timers.pop_due(now), None, "nothing is due yet");
        let later = now + Duration::from_secs(3);
        assert_eq!(
            timers.pop_due(later),
            Some((Timer::BreakerProbe, "a".into()))
        );
        assert_eq!(
            timers.pop_due(later),
            Some((Timer::RobotsRetry, "b".into()))
        );
        assert_eq!(timers.next_due(), None);
    }
}
