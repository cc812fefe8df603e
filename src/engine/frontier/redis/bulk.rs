//! Operations over many queued or parked URLs, in chunks: the predicate runs
//! here, and a script removes exactly the chosen URLs still queued.

use super::outage::Write;
use super::reader::{self, Rows};
use super::RedisFrontier;
use crate::engine::frontier::api::ScanCursor;
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
        let out = self.write(Write::Park {
            key: self.parked_key(alert_id),
            entries: entries.to_vec(),
        })?;
        // Held through an outage: counted when written.
        Ok(out.map_or(0, |out| count_of(&out)))
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
        self.drop_batches();
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

    /// One step of a removal over every host: at most about `max_rows`
    /// queued rows after `from` (`host \0 score` of the last row read).
    pub(super) fn remove_step(
        &mut self,
        pred: &dyn Fn(&FrontierEntry) -> bool,
        record: &dyn Fn(&FrontierEntry) -> PageRecord,
        from: Option<&ScanCursor>,
        max_rows: usize,
    ) -> Result<(u64, Option<ScanCursor>), StoreError> {
        self.drop_batches();
        let (start_host, start_score) = match from {
            Some(ScanCursor(bytes)) => {
                let text = String::from_utf8_lossy(bytes).into_owned();
                let (h, s) = text.split_once('\0').unwrap_or((&text, ""));
                (
                    Some(h.to_string()),
                    Some(s.to_string()).filter(|s| !s.is_empty()),
                )
            }
            None => (None, None),
        };
        let (mut removed, mut read) = (0, 0);
        for host in self.queue_hosts()? {
            if start_host.as_ref().is_some_and(|s| host < *s) {
                continue;
            }
            let key = format!("{}q:{host}", self.prefix);
            let mut after = match start_host.as_ref() == Some(&host) {
                true => start_score.clone(),
                false => None,
            };
            loop {
                if read >= max_rows {
                    let at = format!("{host}\0{}", after.unwrap_or_default());
                    return Ok((removed, Some(ScanCursor(at.into_bytes()))));
                }
                let chunk = SCAN_CHUNK.min(max_rows - read);
                let rows = self.rows_after(&key, after.as_deref(), chunk)?;
                let Some((_, last)) = rows.last() else { break };
                after = Some(last.clone());
                read += rows.len();
                let mut chosen = Vec::new();
                for (member, _) in &rows {
                    let entry = decode(member)?;
                    if pred(&entry) {
                        chosen.push((member.clone(), entry));
                    }
                }
                if !chosen.is_empty() {
                    removed += self.remove_chunk(&host, "", chosen, Some(record))?;
                }
                if rows.len() < chunk {
                    break;
                }
            }
        }
        Ok((removed, None))
    }

    /// Forgets every batch before URLs are removed from the queues, so none
    /// removed is served; those already served stay (see `remove_chunk`).
    fn drop_batches(&mut self) {
        for h in self.hosts.values_mut() {
            h.drop_batch();
        }
    }

    fn remove_chunk(
        &mut self,
        host: &str,
        target: &str,
        mut chosen: Vec<(Vec<u8>, FrontierEntry)>,
        record: Option<&dyn Fn(&FrontierEntry) -> PageRecord>,
    ) -> Result<u64, StoreError> {
        // Served from a batch, so still queued in Redis, but leased: left alone.
        chosen.retain(|(member, _)| !self.out.contains_key(member));
        if chosen.is_empty() {
            return Ok(0);
        }
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

    /// Unparks (`record` is `None`) or drops at most `max` of an alert's
    /// parked URLs; also says whether any may remain.
    pub(super) fn end_parked_some(
        &mut self,
        alert_id: u64,
        record: Option<&dyn Fn(&FrontierEntry) -> PageRecord>,
        max: usize,
    ) -> Result<(u64, bool), StoreError> {
        let key = self.parked_key(alert_id);
        let (mut total, mut read) = (0, 0);
        loop {
            if read >= max {
                return Ok((total, true));
            }
            let rows = self.rows_after(&key, None, SCAN_CHUNK.min(max - read))?;
            if rows.is_empty() {
                return Ok((total, false));
            }
            read += rows.len();
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
                return Ok((total, false));
            }
        }
    }
}

fn count_of(out: &[Vec<u8>]) -> u64 {
    out.first()
        .and_then(|n| std::str::from_utf8(n).ok()?.parse().ok())
        .unwrap_or(0)
}
