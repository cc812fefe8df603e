//! Soft-404 probes as the crawl loop runs them: queued at the head of the
//! suspect host's queue (through the seen set), handed out by `dispatch`
//! like a page, so robots.txt, the host's delay and in-flight limit, the
//! breaker, the global slots and the private-address guard all apply;
//! archived like a page (the inspector shows what decided the alert), but
//! recorded as `not crawled` with the verdict: it is no page of the site.

use tokio::time::Instant;
use url::Url;

use super::results::record_for;
use super::Coordinator;
use crate::engine::fetch::FetchError;
use crate::engine::frontier::{FrontierEntry, Lease};
use crate::engine::probes::{is_soft_404, Probe};
use crate::engine::store::{PageOutcome, SOFT_404_PROBE};
use crate::engine::tasks::ProbeAnswer;
use crate::engine::telemetry::{Level, TrapAlert, TrapKind};
use crate::engine::traps::Detection;

impl Coordinator {
    /// After a near-duplicate or host-budget alert: probe its host once.
    pub(super) fn probe_host(&mut self, alert: &TrapAlert) {
        if !matches!(alert.kind, TrapKind::NearDuplicates | TrapKind::HostBudget)
            || self.hosts.finished_reason(&alert.host).is_some()
        {
            // A given-up host takes no new work: a probe would wait forever.
            return;
        }
        let Some(sample) = alert.samples.iter().find_map(|s| Url::parse(s).ok()) else {
            return;
        };
        let suspects = self.evidence_hashes(&alert.samples);
        let probe = match self.probes.want(&alert.host, &sample, alert.id, suspects) {
            Ok(Some(probe)) => probe,
            Ok(None) => return,
            Err(e) => return self.storage_failed("storing a soft-404 probe", e),
        };
        let why = format!("alert #{}", alert.id);
        self.queue_probe(&alert.host, &probe, &why);
    }

    /// Near duplicates that do not beget one another: a trap only if the
    /// host answers a made-up URL with their content. Probed once; the alert
    /// is raised when the probe proves it.
    pub(super) fn suspect_soft_404(&mut self, d: Detection) {
        if self.hosts.finished_reason(&d.host).is_some() {
            return;
        }
        let Some(sample) = d.samples.iter().find_map(|s| Url::parse(s).ok()) else {
            return;
        };
        let suspects = self.evidence_hashes(&d.samples);
        let (host, why) = (
            d.host.clone(),
            format!("{} near duplicates", d.evidence_count),
        );
        let probe = match self.probes.want_for_suspect(&sample, d, suspects) {
            Ok(Some(probe)) => probe,
            Ok(None) => return,
            Err(e) => return self.storage_failed("storing a soft-404 probe", e),
        };
        self.queue_probe(&host, &probe, &why);
    }

    /// Queues a probe at the head of its host's queue.
    fn queue_probe(&mut self, host: &str, probe: &Probe, why: &str) {
        match self.frontier.claim_unseen(&[probe.url.as_str()]) {
            Ok(fresh) if fresh.first() == Some(&true) => {}
            Ok(_) => return,
            Err(e) => return self.storage_failed("claiming a soft-404 probe", e),
        }
        let entry = FrontierEntry {
            priority: 0,
            url: probe.url.clone(),
            host: host.to_string(),
            depth: 0,
            redirects: 0,
            kind: crate::engine::store::UrlKind::Page,
        };
        if let Err(e) = self.frontier.push(vec![entry]) {
            return self.storage_failed("queueing a soft-404 probe", e);
        }
        self.outbox.log(
            Level::Info,
            format!("{why}: probing {host} for soft 404s with {}", probe.url),
        );
    }

    /// Whether this lease is an outstanding probe rather than a page.
    pub(super) fn is_probe(&self, lease: &Lease) -> bool {
        self.probes
            .pending(&lease.entry.host, &lease.entry.url)
            .is_some()
    }

    /// robots.txt disallows the probe's path: it is not sent.
    pub(super) fn probe_denied(&mut self, lease: Lease) {
        self.end_probe(
            lease,
            "robots.txt disallows the path, not sent".into(),
            None,
        );
    }

    /// A probe came back: a 2xx with the suspect pages' content makes its
    /// alert a soft 404.
    pub(super) fn probe_answered(
        &mut self,
        lease: Lease,
        result: Result<ProbeAnswer, FetchError>,
        now: Instant,
    ) {
        let host = lease.entry.host.clone();
        let Some(probe) = self.probes.pending(&host, &lease.entry.url).cloned() else {
            return self.end_probe(lease, "no longer expected".into(), None);
        };
        let (verdict, answer) = match result {
            Ok(answer) => {
                self.hosts.record_answer(
                    &host,
                    answer.status,
                    answer.elapsed,
                    answer.retry_after,
                    now,
                );
                (self.judge_probe(&host, &probe, &answer), Some(answer))
            }
            Err(e) => {
                self.hosts.record_failure(&host, e.elapsed, now);
                let verdict = format!("failed ({}): {}", e.kind.label(), e.message);
                (verdict, None)
            }
        };
        self.schedule_next(&host, now);
        self.end_probe(lease, verdict, answer.as_ref());
    }

    /// The probe's verdict in words; relabels the alert on a soft 404.
    fn judge_probe(&mut self, host: &str, probe: &Probe, answer: &ProbeAnswer) -> String {
        let near = self.cfg.traps.near_duplicate_bits;
        let soft_404 = is_soft_404(answer.status, answer.simhash, probe, near);
        if let Some(suspect) = probe.suspect.clone() {
            return self.settle_suspect(host, probe, suspect, answer.status, soft_404);
        }
        if soft_404 {
            let id = probe.alert_id;
            let relabelled = self.alerts.confirm_soft_404(id, &probe.url);
            let level = if matches!(relabelled, Ok(true)) {
                Level::Warn
            } else {
                Level::Info
            };
            let line = match relabelled {
                Ok(true) => format!(
                    "alert #{id} is a soft 404: {} answered {} with the suspect pages' content",
                    probe.url, answer.status
                ),
                // Decided already: the operator's view of it stays as it was.
                Ok(false) => format!(
                    "alert #{id} (decided, left as it is) looks like a soft 404: {} answered {} with the suspect pages' content",
                    probe.url, answer.status
                ),
                Err(e) => {
                    self.storage_failed(&format!("relabelling alert #{id}"), e);
                    format!("alert #{id} is a soft 404 (relabel not stored): {}", probe.url)
                }
            };
            self.outbox.log(level, line);
            return format!(
                "{}, same content as the suspect pages: soft 404",
                answer.status
            );
        }
        let verdict = match answer.status {
            404 | 410 => "a real not-found: not a soft 404".to_string(),
            s if (200..300).contains(&s) => "content unlike the suspect pages".to_string(),
            _ => "neither a page nor a not-found".to_string(),
        };
        self.outbox.log(
            Level::Info,
            format!(
                "{host}: probe {} answered {}: {verdict}",
                probe.url, answer.status
            ),
        );
        format!("{}, {verdict}", answer.status)
    }

    /// Records the probe's URL as not crawled (with the verdict) and never
    /// probes the host again; an answer's archived copy goes with it.
    /// Another worker's probe, back in the shared queue because that worker
    /// died before its answer: not a page of the crawl, and its verdict was
    /// that worker's to give. Recorded as not sent.
    pub(super) fn drop_orphan_probe(&mut self, lease: Lease) {
        let record = record_for(
            &lease.entry,
            PageOutcome::NotCrawled {
                reason: format!("{SOFT_404_PROBE}: another worker's, not sent"),
            },
        );
        self.commit(lease, record, Vec::new());
    }

    fn end_probe(&mut self, lease: Lease, verdict: String, answer: Option<&ProbeAnswer>) {
        let host = lease.entry.host.clone();
        let mut record = record_for(
            &lease.entry,
            PageOutcome::NotCrawled {
                reason: format!("{SOFT_404_PROBE}: {verdict}"),
            },
        );
        if let Some(answer) = answer {
            record.bytes = answer.bytes;
            record.set_content_type(answer.content_type.as_deref());
            record.warc = answer.warc_at.clone();
            if let Some(e) = &answer.warc_error {
                // The verdict stands; only the inspector's copy is missing.
                self.outbox.log(
                    Level::Warn,
                    format!("archiving probe {}: {e}", lease.entry.url),
                );
            }
        }
        self.commit(lease, record, Vec::new());
        if let Err(e) = self.probes.finish(&host) {
            self.storage_failed("storing a soft-404 probe's end", e);
        }
    }

    /// A suspect's probe answered: with the suspect pages' content it is a
    /// soft 404 and raised as one; otherwise the pages are the site's own.
    fn settle_suspect(
        &mut self,
        host: &str,
        probe: &Probe,
        mut d: Detection,
        status: u16,
        soft_404: bool,
    ) -> String {
        if !soft_404 {
            self.outbox.log(
                Level::Info,
                format!(
                    "{} near duplicates on {host} are not a trap: {} answered {status}",
                    d.evidence_count, probe.url
                ),
            );
            return format!("{status}: the near duplicates are the site's own pages");
        }
        d.kind = TrapKind::SoftNotFound;
        d.samples.retain(|s| s != &probe.url);
        d.samples.insert(0, probe.url.clone());
        self.traps
            .mark_raised(&d.host, TrapKind::NearDuplicates, &d.rule);
        // The alert's sweep must find the group's links queued.
        self.sync();
        self.raise_alert(d);
        format!("{status}, same content as the suspect pages: soft 404")
    }
}
