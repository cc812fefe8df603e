use std::time::Duration;

use super::*;
use crate::engine::config::CrawlConfig;
use crate::engine::control::PatternKind;
use crate::engine::frontier::FrontierEntry;
use crate::engine::telemetry::{RuleImpact, TrapKind};

const HOST: &str = "127.0.0.1:9";

fn calendar(n: u32) -> FrontierEntry {
    FrontierEntry {
        priority: 1,
        url: format!("http://{HOST}/cal/{n}"),
        host: HOST.into(),
        depth: 2,
        redirects: 0,
        kind: crate::engine::store::UrlKind::Page,
    }
}

#[tokio::test]
async fn an_alerts_impact_is_measured_again_when_its_evidence_grows_at_most_every_10_s() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut cfg = CrawlConfig {
        seeds: vec![format!("http://{HOST}/")],
        ..CrawlConfig::default()
    };
    cfg.traps.policy = TrapPolicy::AlertOnly;
    let (_handle, mut c) = super::super::for_test(cfg, dir.path());
    let raised_at = Instant::now();
    c.raise_alert(Detection {
        host: HOST.into(),
        kind: TrapKind::Counter,
        evidence_count: 10,
        samples: vec![format!("http://{HOST}/cal/1")],
        rule: RuleSpec {
            kind: PatternKind::Regex,
            pattern: r"^https?://127\.0\.0\.1:9/cal/\d+$".into(),
            host: Some(HOST.into()),
        },
    });
    let alert = c.alerts.views().pop().expect("raised");
    let queued = |c: &Coordinator| {
        let a = c.alerts.get(alert.id).expect("kept");
        a.impact.as_ref().map(|i: &RuleImpact| i.queued)
    };
    assert_eq!(queued(&c), Some(0));

    c.frontier
        .push((2..7).map(calendar).collect())
        .expect("queued");
    let key = (
        alert.host.clone(),
        alert.kind,
        alert.suggested_rule.pattern.clone(),
    );
    c.alerts.seen_again(&key, 20, 0);
    c.refresh_an_impact(raised_at + Duration::from_secs(1));
    assert_eq!(queued(&c), Some(0), "not within 10 s of the last measure");
    c.refresh_an_impact(raised_at + Duration::from_secs(11));
    assert_eq!(queued(&c), Some(5), "the evidence grew: measured again");

    c.frontier
        .push((7..9).map(calendar).collect())
        .expect("queued");
    c.refresh_an_impact(raised_at + Duration::from_secs(40));
    assert_eq!(queued(&c), Some(5), "no new evidence: no new measure");
    c.alerts.seen_again(&key, 25, 0);
    c.refresh_an_impact(raised_at + Duration::from_secs(41));
    assert_eq!(queued(&c), Some(7));
}
