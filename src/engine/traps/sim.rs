//! A breadth-first crawl of a simulated site, for the detector tests.

use std::collections::{HashSet, VecDeque};

use url::Url;

use super::*;

/// A breadth-first crawl of a simulated site: `links(page, fetch_no)` gives a
/// page's hrefs, `simhash(page)` its content fingerprint.
pub(super) struct Sim {
    pub det: TrapDetector,
    pub seen: HashSet<String>,
    /// URLs discovered so far (seeds included).
    pub discovered: usize,
    pub fetched: usize,
    pub alerts: Vec<Alerted>,
    /// Near duplicates left for a soft-404 probe to prove (`take_suspect`).
    pub suspects: Vec<Alerted>,
}

/// A detection and how far the crawl was when it was raised.
#[derive(Debug)]
pub(super) struct Alerted {
    pub discovered: usize,
    pub fetched: usize,
    pub detection: Detection,
}

pub(super) fn crawl(
    cfg: &TrapConfig,
    seeds: &[&str],
    max_fetches: usize,
    links: impl Fn(&Url, usize) -> Vec<String>,
    simhash: impl Fn(&Url) -> Option<u64>,
) -> Sim {
    let mut sim = Sim {
        det: TrapDetector::new(cfg),
        seen: HashSet::new(),
        discovered: 0,
        fetched: 0,
        alerts: Vec::new(),
        suspects: Vec::new(),
    };
    let mut queue: VecDeque<(Url, u32)> = VecDeque::new();
    for s in seeds {
        let u = Url::parse(s).unwrap();
        sim.seen.insert(u.to_string());
        sim.discovered += 1;
        queue.push_back((u, 0));
    }
    while let Some((page, depth)) = queue.pop_front() {
        if sim.fetched >= max_fetches {
            break;
        }
        sim.fetched += 1;
        let mut new_links = 0;
        for href in links(&page, sim.fetched) {
            let Ok(mut child) = page.join(&href) else {
                continue;
            };
            child.set_fragment(None);
            if !sim.seen.insert(child.to_string()) {
                continue;
            }
            sim.discovered += 1;
            new_links += 1;
            if let Some(detection) = sim.det.on_discovered(&LinkParent::of(&page), &child) {
                sim.alerts.push(Alerted {
                    discovered: sim.discovered,
                    fetched: sim.fetched,
                    detection,
                });
            }
            queue.push_back((child, depth + 1));
        }
        if let Some(detection) = sim.det.on_fetched(&page, simhash(&page), new_links, false) {
            sim.alerts.push(Alerted {
                discovered: sim.discovered,
                fetched: sim.fetched,
                detection,
            });
        }
        if let Some(detection) = sim.det.take_suspect() {
            sim.suspects.push(Alerted {
                discovered: sim.discovered,
                fetched: sim.fetched,
                detection,
            });
        }
    }
    sim
}

/// Distinct pages: fingerprints far apart.
pub(super) fn distinct(url: &Url) -> Option<u64> {
    Some(hash_str(url.as_str()))
}

/// The detection's rule matches its samples and the trap URLs, and none of
/// the normal pages.
pub(super) fn assert_rule(d: &Detection, traps: &[&str], normal: &[&str]) {
    let rule = RuleSet::compile(&d.rule).expect("suggested rule compiles");
    assert!(!d.samples.is_empty() && d.samples.len() <= MAX_SAMPLES);
    for s in d
        .samples
        .iter()
        .map(String::as_str)
        .chain(traps.iter().copied())
    {
        assert!(
            rule.is_match(s, &d.host),
            "rule {} misses trap URL {s}",
            d.rule.pattern
        );
    }
    for s in normal {
        assert!(
            !rule.is_match(s, &d.host),
            "rule {} matches normal page {s}",
            d.rule.pattern
        );
    }
}

/// The first alert, which must be of `kind`: (URLs discovered, pages fetched, detection).
pub(super) fn only_alert(sim: &Sim, kind: TrapKind) -> (usize, usize, &Detection) {
    let a = sim
        .alerts
        .first()
        .unwrap_or_else(|| panic!("no {kind:?} alert"));
    assert_eq!(a.detection.kind, kind, "first alert: {a:?}");
    (a.discovered, a.fetched, &a.detection)
}
