use super::*;
use crate::engine::config::CrawlConfig;
use crate::engine::frontier::FrontierEntry;

const HOST: &str = "127.0.0.1:9";

/// The frontier hands out the host's URL at `at` (holds lifted, so only
/// its next allowed time decides).
fn ready_at(c: &mut Coordinator, at: Instant) -> bool {
    let lease = c.frontier.next_ready(at).expect("frontier answers");
    if let Some(lease) = lease {
        c.frontier.release(lease).expect("released");
        return true;
    }
    false
}

#[tokio::test(start_paused = true)]
async fn an_open_breaker_makes_its_probe_time_the_hosts_next_allowed_time() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cfg = CrawlConfig {
        seeds: vec![format!("http://{HOST}/")],
        ..CrawlConfig::default()
    };
    let failures = cfg.breaker.consecutive_failures;
    let (_handle, mut c) = super::super::for_test(cfg, dir.path());
    let now = Instant::now();
    let entry = FrontierEntry {
        priority: 1,
        url: format!("http://{HOST}/a"),
        host: HOST.into(),
        depth: 1,
        redirects: 0,
        kind: crate::engine::store::UrlKind::Page,
    };
    c.frontier.push(vec![entry]).expect("queued");
    c.hosts.adopt(HOST, Some(&format!("http://{HOST}/")), now);
    for _ in 0..failures {
        c.breaker_outcome(HOST, Outcome::Failure("HTTP 503".into()), now);
    }
    let probe_at = c.hosts.breaker_probe_at(HOST).expect("the breaker opened");
    assert!(probe_at > now + Duration::from_secs(1));
    c.schedule_next(HOST, now);
    // Another worker sees no breaker hold, only the shared schedule.
    for hold in [Hold::Breaker, Hold::Robots] {
        c.frontier.set_hold(HOST, hold, false).expect("hold lifted");
    }
    assert!(!ready_at(&mut c, probe_at - Duration::from_millis(1)));
    assert!(ready_at(&mut c, probe_at));
}
