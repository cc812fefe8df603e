//! Resuming: the frontier's counters are rebuilt from one scan of the store.

use super::entry::{decode, level_of};
use super::schedule::HostId;
use super::{Frontier, SCAN_CHUNK};
use crate::engine::store::{keys, StoreError};

impl Frontier {
    /// Counters from one scan of the queued and parked key ranges.
    pub(super) fn rebuild(&mut self) -> Result<(), StoreError> {
        let mut after: Option<Vec<u8>> = None;
        loop {
            let rows =
                self.store
                    .scan_after(&[keys::QUEUE], after.as_deref(), SCAN_CHUNK, |_| false)?;
            let Some((last, _)) = rows.last() else { break };
            after = Some(last.clone());
            for (key, value) in rows {
                let (Some((_, seq)), Ok(entry)) = (keys::parse_queue_key(&key), decode(&value))
                else {
                    tracing::error!("skipping an unreadable queue entry while resuming");
                    continue;
                };
                self.next_seq = self.next_seq.max(seq + 1);
                let level = level_of(entry.priority);
                let id = self.host_id(&entry.host);
                let host = self.host_mut(id);
                host.queued += 1;
                host.per_level[level] += 1;
                self.queued += 1;
                self.levels[level] += 1;
            }
        }
        let mut after: Option<Vec<u8>> = None;
        loop {
            let rows =
                self.store
                    .scan_after(&[keys::PARKED], after.as_deref(), SCAN_CHUNK, |_| false)?;
            let Some((last, _)) = rows.last() else { break };
            after = Some(last.clone());
            for (key, value) in rows {
                let (Some((alert, seq)), Ok(entry)) =
                    (keys::parse_parked_key(&key), decode(&value))
                else {
                    tracing::error!("skipping an unreadable parked entry while resuming");
                    continue;
                };
                self.next_seq = self.next_seq.max(seq + 1);
                *self.parked.entry(alert).or_default() += 1;
                *self.parked_by_host.entry(entry.host).or_default() += 1;
            }
        }
        let ids: Vec<HostId> = self.ids.values().copied().collect();
        for id in ids {
            self.ensure_head(id)?;
            self.reschedule(id);
        }
        Ok(())
    }
}
