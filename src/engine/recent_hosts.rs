//! Per-host state of the hosts being crawled, bounded in hosts and shared
//! out in memory (the content measure's templates, the trap detector's
//! evidence).
//!
//! A crawl asks its hosts in turn, so the host asked next is the one asked
//! longest ago: every host crawled at once must fit, or each is forgotten
//! between two of its pages. Past the bound, the least recently used
//! eighth goes in one walk, not one walk per new host (a broad crawl meets
//! a new host at most links).

use crate::engine::control::ByHost;

pub(crate) struct RecentHosts<V> {
    /// Each host's state and when it was last used.
    hosts: ByHost<(u64, V)>,
    clock: u64,
    max_hosts: usize,
}

impl<V: Default> RecentHosts<V> {
    pub(crate) fn new(max_hosts: usize) -> Self {
        RecentHosts {
            hosts: ByHost::default(),
            clock: 0,
            max_hosts: max_hosts.max(1),
        }
    }

    /// The host's state, created if new.
    pub(crate) fn get(&mut self, host: &str) -> &mut V {
        self.clock += 1;
        if !self.hosts.contains_key(host) {
            if self.hosts.len() >= self.max_hosts {
                self.forget_least_recent();
            }
            self.hosts.insert(host.to_owned(), (0, V::default()));
        }
        let (used, state) = self.hosts.get_mut(host).expect("inserted above");
        *used = self.clock;
        state
    }

    /// A host's share of `total`, at most `most`.
    pub(crate) fn share(&self, total: usize, most: usize) -> usize {
        (total / self.hosts.len().max(1)).min(most)
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.hosts.len()
    }

    #[cfg(test)]
    pub(crate) fn contains(&self, host: &str) -> bool {
        self.hosts.contains_key(host)
    }

    #[cfg(test)]
    pub(crate) fn values(&self) -> impl Iterator<Item = &V> {
        self.hosts.values().map(|(_, state)| state)
    }

    fn forget_least_recent(&mut self) {
        let mut used: Vec<u64> = self.hosts.values().map(|(used, _)| *used).collect();
        let eighth = (used.len() / 8).max(1);
        let (_, &mut newest_forgotten, _) = used.select_nth_unstable(eighth - 1);
        self.hosts.retain(|_, (used, _)| *used > newest_forgotten);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn past_its_bound_the_least_recent_eighth_is_forgotten() {
        let mut hosts: RecentHosts<u32> = RecentHosts::new(16);
        for h in 0..16 {
            *hosts.get(&format!("h{h}")) += 1;
        }
        // h0 and h1 used again: h2 and h3 are now the least recent.
        hosts.get("h0");
        hosts.get("h1");
        hosts.get("new");
        assert_eq!(hosts.len(), 16 - 2 + 1);
        assert!(hosts.contains("h0") && hosts.contains("h1") && hosts.contains("new"));
        assert!(!hosts.contains("h2") && !hosts.contains("h3"));
        assert_eq!(*hosts.get("h15"), 1, "a kept host keeps its state");
        assert_eq!(hosts.share(150, 100), 10);
        assert_eq!(hosts.share(15_000, 100), 100);
    }
}
