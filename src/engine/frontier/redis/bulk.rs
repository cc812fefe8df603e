//! Operations over many queued or parked URLs, in chunks: the predicate runs
//! here, and a script removes exactly the chosen URLs still queued.

use super::reader::{self, Rows};
use super::{push_args, RedisFrontier};
use crate::engine::frontier::entry::decode;
use crate::engine::frontier::{FrontierEntry, SCAN_CHUNK};
use crate::engine::store::{PageRecord, StoreError};

impl RedisFrontier {
    fn parked_key(&self, alert_id: u64) -> String {
        format!("{}parked:{}:{alert_id}", self.prefix, self.worker)
    }

    fn rows_after(
        &mut self,
        key: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Rows, StoreError> {
        reader::rows_after(&mut self.link, key, after, limit)
    }

    fn queue_hosts(&mut self) -> Result<Vec<String>, StoreError> {
        reader::queue_hosts(&mut self.link, &self.prefix)
    }

    pub(super) fn park_entries(
        &mut self,
        alert_id: u64,
        entries: &[FrontierEntry],
    ) -> Result<u64, StoreError> {
        if entries.is_empty() {
            return Ok(0);
        }
        let mut inv = self.scripts.park_new.prepare_invoke();
        inv.arg(&self.prefix)
            .arg(self.parked_key(alert_id))
            .arg(format!("{}claims:{}", self.prefix, self.worker));
        push_args(&mut inv, entries);
        let out = self.link.run("parking URLs", &inv)?;
        Ok(count_of(&out))
    }

    /// Removes queued URLs matching `pred` (of `host`, or of every host):
    /// recorded with `record`, or parked under `park`.
    pub(super) fn remove_where(
        &mut self,
        host: Option<&str>,
        pred: &dyn Fn(&FrontierEntry) -> bool,
        record: Option<&dyn Fn(&FrontierEntry) -> PageRecord>,
        park: Option<u64>,
    ) -> Result<u64, StoreError> {
        let hosts = match host {
            Some(h) => vec![h.to_string()],
            None => self.queue_hosts()?,
        };
        let target = park.map_or(String::new(), |id| self.parked_key(id));
        let mut removed = 0;
        for host in hosts {
            let key = format!("{}q:{host}", self.prefix);
            let mut after: Option<String> = None;
            loop {
                let rows = self.rows_after(&key, after.as_deref(), SCAN_CHUNK)?;
                let Some((_, last)) = rows.last() else { break };
                after = Some(last.clone());
                let mut chosen = Vec::new();
                for (member, _) in &rows {
                    let entry = decode(member)?;
                    if pred(&entry) {
                        chosen.push((member.clone(), entry));
                    }
                }
                if !chosen.is_empty() {
                    removed += self.remove_chunk(&host, &target, chosen, record)?;
                }
                if rows.len() < SCAN_CHUNK {
                    break;
                }
            }
        }
        Ok(removed)
    }

    fn remove_chunk(
        &mut self,
        host: &str,
        target: &str,
        chosen: Vec<(Vec<u8>, FrontierEntry)>,
        record: Option<&dyn Fn(&FrontierEntry) -> PageRecord>,
    ) -> Result<u64, StoreError> {
        let mut inv = self.scripts.remove.prepare_invoke();
        inv.arg(&self.prefix).arg(host).arg(target);
        for (member, _) in &chosen {
            inv.arg(member);
        }
        let gone = self.link.run("removing URLs", &inv)?;
        let gone: std::collections::HashSet<Vec<u8>> = gone.into_iter().collect();
        if let Some(record) = record {
            let records: Vec<PageRecord> = chosen
                .iter()
                .filter(|(m, _)| gone.contains(m))
                .map(|(_, e)| record(e))
                .collect();
            self.store.record_pages(&records)?;
        }
        Ok(gone.len() as u64)
    }

    /// Unparks (`record` is `None`) or drops an alert's parked URLs.
    pub(super) fn end_parked(
        &mut self,
        alert_id: u64,
        record: Option<&dyn Fn(&FrontierEntry) -> PageRecord>,
    ) -> Result<u64, StoreError> {
        let key = self.parked_key(alert_id);
        let mut total = 0;
        loop {
            let rows = self.rows_after(&key, None, SCAN_CHUNK)?;
            if rows.is_empty() {
                return Ok(total);
            }
            let entries = rows
                .iter()
                .map(|(m, _)| decode(m))
                .collect::<Result<Vec<_>, _>>()?;
            let mut inv = self.scripts.unpark.prepare_invoke();
            inv.arg(&self.prefix)
                .arg(&key)
                .arg(if record.is_some() { "drop" } else { "unpark" });
            for ((member, _), entry) in rows.iter().zip(&entries) {
                inv.arg(member).arg(&entry.host);
            }
            let n = count_of(&self.link.run("releasing parked URLs", &inv)?);
            if let Some(record) = record {
                let records: Vec<PageRecord> = entries.iter().map(record).collect();
                self.store.record_pages(&records)?;
            }
            total += n;
            if n == 0 {
                // Nothing moved: another worker took them meanwhile.
                return Ok(total);
            }
        }
    }
}

fn count_of(out: &[Vec<u8>]) -> u64 {
    out.first()
        .and_then(|n| std::str::from_utf8(n).ok()?.parse().ok())
        .unwrap_or(0)
}
