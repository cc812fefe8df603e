use tokio::time::Instant;

use super::super::queue_for_test;
use super::*;
use crate::engine::frontier::Hold;

/// Every host's view built in full, sorted, cut: what the snapshot shows.
fn every_view_sorted(c: &mut Coordinator, now: Instant) -> Vec<HostView> {
    let keys = c.hosts.keys();
    let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
    let queues = c
        .frontier
        .host_views(&refs, now, HEAD_SHOWN)
        .expect("views");
    let mut views: Vec<HostView> = keys
        .iter()
        .zip(queues)
        .filter_map(|(key, queue)| c.hosts.view(key, now, queue))
        .collect();
    views.sort_by(|a, b| {
        (b.in_flight, b.queued, b.fetched)
            .cmp(&(a.in_flight, a.queued, a.fetched))
            .then_with(|| a.host.cmp(&b.host))
    });
    views
}

#[tokio::test(start_paused = true)]
async fn a_wide_crawl_shows_its_busiest_hosts_in_full_and_counts_them_all() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_handle, mut c) = super::super::for_test(super::super::closed_port_config(), dir.path());
    let hosts = SNAPSHOT_HOSTS + 40;
    for i in 0..hosts {
        // Many ties in queue length: the host key must order them.
        let urls = if i % 97 == 5 { 12 } else { 1 + i % 4 };
        for n in 0..urls {
            queue_for_test(&mut c, &format!("http://h{i}.test/{n}"));
        }
    }
    let now = Instant::now();
    c.adopt_new_hosts(now);
    for i in (0..hosts).step_by(7) {
        c.frontier
            .set_hold(&format!("h{i}.test"), Hold::Paused, true)
            .expect("paused");
    }
    let expected = every_view_sorted(&mut c, now);
    assert!(expected.len() > SNAPSHOT_HOSTS);

    let shown = c.publish();

    assert_eq!(shown.hosts_total as usize, expected.len());
    assert_eq!(shown.hosts.len(), SNAPSHOT_HOSTS);
    assert_eq!(shown.hosts[..], expected[..SNAPSHOT_HOSTS]);
    assert!(
        !shown.hosts[0].queue_head.is_empty() && shown.hosts[0].queued == 12,
        "the busiest host first, with its queue's head: {:?}",
        shown.hosts[0]
    );
    let counted =
        |activity: HostActivity| expected.iter().filter(|v| v.activity == activity).count() as u32;
    assert_eq!(shown.hosts_paused, counted(HostActivity::PausedByOperator));
    assert_eq!(
        shown.hosts_robots_pending,
        counted(HostActivity::RobotsPending)
    );
    assert!(shown.hosts_paused > 0 && shown.hosts_robots_pending > 0);
    assert_eq!(
        shown.quarantined,
        expected.iter().map(|v| v.quarantined).sum::<u64>()
    );
}
