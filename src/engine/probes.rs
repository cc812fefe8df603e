//! Soft-404 probes: when a host's pages look like one page under many names,
//! the crawl asks the host once for a path that cannot exist. A 200 answer
//! with the suspect pages' content is the evidence of a soft 404; a 404 or
//! 410 clears the suspicion. At most one probe per host per crawl: the state
//! is stored under `meta/soft404-probes` as soon as it changes, so a resumed
//! crawl neither probes a host again nor mistakes a queued probe for a page.
//!
//! Memory: at most [`MAX_PROBED_HOSTS`] hosts (beyond that no host is probed);
//! per host the probe URL and at most [`MAX_SUSPECTS`] fingerprints.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use url::Url;

use super::control::HostKey;
use super::store::{Store, StoreError, Tree};
use super::traps::Detection;

/// Hosts probed (or to be probed) in one crawl.
pub const MAX_PROBED_HOSTS: usize = 4096;
/// Suspect page fingerprints kept per probe.
const MAX_SUSPECTS: usize = 8;
/// Meta key of the stored probes.
const PROBES_KEY: &[u8] = b"soft404-probes";

/// One host's probe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Probe {
    /// The path that cannot exist, on the suspect pages' origin.
    pub url: String,
    /// The alert that asked for it.
    pub alert_id: u64,
    /// Simhashes of the suspect pages.
    pub suspects: Vec<u64>,
    /// Its answer came back (or it was skipped): never again.
    pub done: bool,
    /// Near duplicates that asked for it before any alert (`alert_id` 0):
    /// raised as a soft 404 if the answer proves them one. Stored with the
    /// probe, so a restart in between loses nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspect: Option<Detection>,
}

/// The crawl's soft-404 probes; the one owner of `meta/soft404-probes`.
pub struct SoftProbes {
    probes: BTreeMap<HostKey, Probe>,
    store: Store,
}

impl SoftProbes {
    /// The stored probes.
    pub fn load(store: &Store) -> Result<Self, StoreError> {
        let probes = store.get(Tree::Meta, PROBES_KEY)?.unwrap_or_default();
        Ok(SoftProbes {
            probes,
            store: store.clone(),
        })
    }

    /// A probe for `host`, on the origin of `sample`, unless the host had
    /// one or the cap is reached; stored before it is returned (queue it
    /// after this, so a restart knows what it is).
    pub fn want(
        &mut self,
        host: &str,
        sample: &Url,
        alert_id: u64,
        suspects: Vec<u64>,
    ) -> Result<Option<Probe>, StoreError> {
        self.want_probe(host, sample, alert_id, None, suspects)
    }

    /// As [`SoftProbes::want`], for suspect near duplicates with no alert.
    pub fn want_for_suspect(
        &mut self,
        sample: &Url,
        suspect: Detection,
        suspects: Vec<u64>,
    ) -> Result<Option<Probe>, StoreError> {
        let host = suspect.host.clone();
        self.want_probe(&host, sample, 0, Some(suspect), suspects)
    }

    fn want_probe(
        &mut self,
        host: &str,
        sample: &Url,
        alert_id: u64,
        suspect: Option<Detection>,
        mut suspects: Vec<u64>,
    ) -> Result<Option<Probe>, StoreError> {
        if suspects.is_empty()
            || self.probes.contains_key(host)
            || self.probes.len() >= MAX_PROBED_HOSTS
        {
            return Ok(None);
        }
        suspects.truncate(MAX_SUSPECTS);
        let url = format!(
            "{}://{}/{PROBE_PREFIX}{:016x}.html",
            sample.scheme(),
            host,
            fastrand::u64(..)
        );
        let probe = Probe {
            url,
            alert_id,
            suspects,
            done: false,
            suspect,
        };
        self.probes.insert(host.to_string(), probe.clone());
        self.save()?;
        Ok(Some(probe))
    }

    /// The outstanding probe whose URL this is.
    pub fn pending(&self, host: &str, url: &str) -> Option<&Probe> {
        self.probes.get(host).filter(|p| !p.done && p.url == url)
    }

    /// The probe of `host` is over.
    pub fn finish(&mut self, host: &str) -> Result<(), StoreError> {
        if let Some(p) = self.probes.get_mut(host) {
            p.done = true;
        }
        self.save()
    }

    fn save(&self) -> Result<(), StoreError> {
        self.store.put(Tree::Meta, PROBES_KEY, &self.probes)
    }
}

/// The path a probe's URL starts with, after the host.
const PROBE_PREFIX: &str = "crawldeck-probe-";

/// Whether `url` is one of the probes this crawl makes up: over a cluster, a
/// worker may be handed another worker's probe, returned to the queue when
/// that worker died, and must not fetch it as a page.
pub fn is_probe_url(url: &Url) -> bool {
    url.path()
        .strip_prefix('/')
        .and_then(|p| p.strip_prefix(PROBE_PREFIX))
        .and_then(|p| p.strip_suffix(".html"))
        .is_some_and(|n| n.len() == 16 && n.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Whether a probe's answer is a soft 404: a 2xx page whose content is
/// within `near_bits` of a suspect page's.
pub fn is_soft_404(status: u16, simhash: Option<u64>, probe: &Probe, near_bits: u32) -> bool {
    (200..300).contains(&status)
        && simhash.is_some_and(|h| {
            probe
                .suspects
                .iter()
                .any(|s| (s ^ h).count_ones() <= near_bits)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        (dir, store)
    }

    #[test]
    fn one_probe_per_host_survives_a_restart() {
        let (_dir, store) = store();
        let sample = Url::parse("http://h:8080/docs/gone-1.html").unwrap();
        let mut probes = SoftProbes::load(&store).unwrap();
        let probe = probes.want("h:8080", &sample, 3, vec![7]).unwrap().unwrap();
        assert!(probe.url.starts_with("http://h:8080/crawldeck-probe-"));
        assert_eq!(probes.want("h:8080", &sample, 4, vec![7]).unwrap(), None);
        let mut again = SoftProbes::load(&store).unwrap();
        assert_eq!(again.pending("h:8080", &probe.url), Some(&probe));
        again.finish("h:8080").unwrap();
        let third = SoftProbes::load(&store).unwrap();
        assert_eq!(third.pending("h:8080", &probe.url), None);
    }

    #[test]
    fn a_suspects_probe_keeps_its_near_duplicates_across_a_restart() {
        let (_dir, store) = store();
        let sample = Url::parse("http://h/p/gone-1.html").unwrap();
        let suspect = Detection {
            host: "h".into(),
            kind: crate::engine::telemetry::TrapKind::NearDuplicates,
            evidence_count: 21,
            samples: vec![sample.to_string()],
            rule: crate::engine::control::RuleSpec {
                kind: crate::engine::control::PatternKind::Regex,
                pattern: r"^https?://h/p/gone\-\d+\.html$".into(),
                host: Some("h".into()),
            },
        };
        let mut probes = SoftProbes::load(&store).unwrap();
        let probe = probes
            .want_for_suspect(&sample, suspect.clone(), vec![7])
            .unwrap()
            .unwrap();
        assert_eq!(probe.alert_id, 0);
        let again = SoftProbes::load(&store).unwrap();
        let pending = again.pending("h", &probe.url).expect("still pending");
        assert_eq!(pending.suspect.as_ref(), Some(&suspect));
    }

    #[test]
    fn no_suspects_no_probe() {
        let (_dir, store) = store();
        let sample = Url::parse("http://h/").unwrap();
        let mut probes = SoftProbes::load(&store).unwrap();
        assert_eq!(probes.want("h", &sample, 1, vec![]).unwrap(), None);
    }

    #[test]
    fn only_a_2xx_with_the_suspects_content_is_a_soft_404() {
        let probe = Probe {
            url: "http://h/crawldeck-probe-0.html".into(),
            alert_id: 1,
            suspects: vec![0b1111_0000],
            done: false,
            suspect: None,
        };
        assert!(is_soft_404(200, Some(0b1111_0001), &probe, 3));
        assert!(!is_soft_404(200, Some(!0b1111_0000), &probe, 3));
        assert!(!is_soft_404(404, Some(0b1111_0000), &probe, 3));
        assert!(!is_soft_404(200, None, &probe, 3));
    }

    #[test]
    fn made_up_probe_urls_are_recognised_and_nothing_else() {
        let url = |u: &str| Url::parse(u).unwrap();
        assert!(is_probe_url(&url(
            "http://h/crawldeck-probe-00ff00ff00ff00ff.html"
        )));
        for other in [
            "http://h/crawldeck-probe-00ff.html",
            "http://h/crawldeck-probe-00ff00ff00ff00fg.html",
            "http://h/docs/crawldeck-probe-00ff00ff00ff00ff.html",
            "http://h/index.html",
        ] {
            assert!(!is_probe_url(&url(other)), "{other}");
        }
    }
}
