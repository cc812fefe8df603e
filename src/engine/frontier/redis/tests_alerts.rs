//! Trap alerts are the crawl's: numbered across workers, one per trap
//! signature, told to every worker with their decisions.

use std::time::Duration;

use super::tests::worker_in;
use crate::cluster::redis_server::RedisServer;
use crate::engine::control::{PatternKind, RuleSpec};
use crate::engine::frontier::{AlertDecision, FrontierStore, SharedAlert};
use crate::engine::telemetry::{AlertStatus, TrapAlert, TrapKind};

fn alert(local_id: u64, host: &str, evidence: u64, sample: &str) -> TrapAlert {
    TrapAlert {
        id: local_id,
        host: host.into(),
        kind: TrapKind::Counter,
        evidence_count: evidence,
        last_seen: 0,
        samples: vec![sample.into()],
        suggested_rule: RuleSpec {
            kind: PatternKind::Regex,
            pattern: "/cal/".into(),
            host: Some(host.into()),
        },
        matching_queued: 0,
        status: AlertStatus::Open,
        impact: None,
    }
}

/// Workers joining one crawl on a private redis-server.
pub(super) struct Crawl {
    pub(super) server: RedisServer,
    name: &'static str,
    dirs: Vec<tempfile::TempDir>,
}

impl Crawl {
    pub(super) fn new(name: &'static str) -> Crawl {
        Crawl {
            server: RedisServer::for_test(),
            name,
            dirs: Vec::new(),
        }
    }

    pub(super) fn name(&self) -> &'static str {
        self.name
    }

    /// A new worker, with a data directory of its own.
    pub(super) fn join(&mut self) -> super::RedisFrontier {
        let dir = tempfile::tempdir().unwrap();
        let worker = worker_in(&self.server, self.name, dir.path(), Duration::from_secs(30));
        self.dirs.push(dir);
        worker
    }
}

fn new_number(shared: SharedAlert) -> u64 {
    match shared {
        SharedAlert::New(id) => id,
        joined => panic!("a new trap was joined: {joined:?}"),
    }
}

#[test]
fn alert_numbers_are_unique_across_workers_and_never_below_the_local_next() {
    let mut crawl = Crawl::new("alerts");
    let (mut w1, mut w2) = (crawl.join(), crawl.join());
    let raise = |w: &mut super::RedisFrontier, local: u64, trap: &str| {
        new_number(w.share_alert(trap, &alert(local, trap, 1, "x")).unwrap())
    };
    let a = raise(&mut w1, 1, "a");
    let b = raise(&mut w2, 1, "b");
    let c = raise(&mut w1, a + 1, "c");
    assert_eq!((a, b, c), (1, 2, 3));
    // A worker whose own numbers run ahead (a store from before) keeps them.
    assert_eq!(raise(&mut w2, 10, "d"), 10);
    assert_eq!(raise(&mut w1, c + 1, "e"), 11);
    // Each number names the worker that raised it.
    let mut con = redis::Client::open(crawl.server.url())
        .unwrap()
        .get_connection()
        .unwrap();
    let raisers: Vec<Option<String>> = redis::cmd("HMGET")
        .arg(super::alert_raisers_key(&super::key_prefix("alerts")))
        .arg(&[1, 2, 10, 11, 12])
        .query(&mut con)
        .unwrap();
    let (n1, n2) = (Some(w1.worker().to_string()), Some(w2.worker().to_string()));
    assert_eq!(raisers, [n1.clone(), n2.clone(), n2, n1, None]);
}

#[test]
fn the_same_trap_from_two_workers_is_one_alert_and_each_learns_of_the_other() {
    let mut crawl = Crawl::new("traps");
    let (mut w1, mut w2) = (crawl.join(), crawl.join());
    let signature = "cal.test Counter /cal/";
    let raised = alert(1, "cal.test", 12, "http://cal.test/cal/2031");
    let id = new_number(w1.share_alert(signature, &raised).unwrap());
    // w2 saw the same calendar before it heard of w1's alert: it joins it.
    let own = alert(1, "cal.test", 30, "http://cal.test/cal/1999");
    match w2.share_alert(signature, &own).unwrap() {
        SharedAlert::Joined(shared) => assert_eq!(
            shared,
            TrapAlert {
                id,
                ..raised.clone()
            }
        ),
        new => panic!("the same trap was raised twice: {new:?}"),
    }
    // Another trap of the host is another alert.
    let other = new_number(w2.share_alert("cal.test Counter /day/", &own).unwrap());
    assert_ne!(other, id);

    // A third worker, told of both, joins each once.
    let mut w3 = crawl.join();
    let news = w3.alert_news().unwrap();
    let told: Vec<u64> = news.raised.iter().map(|a| a.id).collect();
    assert_eq!(told, [id, other]);
    assert_eq!(news.raised[0], TrapAlert { id, ..raised });
    w3.look_at_alerts_now();
    assert_eq!(w3.alert_news().unwrap(), Default::default(), "nothing new");
    // w1 was told of w2's alert, not of its own.
    let told: Vec<u64> = w1
        .alert_news()
        .unwrap()
        .raised
        .iter()
        .map(|a| a.id)
        .collect();
    assert_eq!(told, [other]);
}

#[test]
fn the_first_decision_on_an_alert_is_every_workers() {
    let mut crawl = Crawl::new("decide");
    let (mut w1, mut w2) = (crawl.join(), crawl.join());
    let raised = alert(1, "cal.test", 12, "http://cal.test/cal/2031");
    let id = new_number(w1.share_alert("cal.test Counter /cal/", &raised).unwrap());
    assert_eq!(w2.alert_news().unwrap().raised.len(), 1);
    let accepted = AlertDecision {
        id,
        status: AlertStatus::Accepted,
        rule: Some(raised.suggested_rule.clone()),
    };
    w1.decide_alert(&accepted).unwrap();
    // A later, different decision does not replace it.
    let dismissed = AlertDecision {
        id,
        status: AlertStatus::Dismissed,
        rule: None,
    };
    w2.look_at_alerts_now();
    w2.decide_alert(&dismissed).unwrap();
    let news = w2.alert_news().unwrap();
    assert_eq!(news.decided, std::slice::from_ref(&accepted));
    assert!(news.raised.is_empty());
    w1.look_at_alerts_now();
    assert!(
        w1.alert_news().unwrap().decided.is_empty(),
        "w1 knows its own decision"
    );
    // A worker that joins later is told of the alert and its decision.
    let mut w3 = crawl.join();
    let news = w3.alert_news().unwrap();
    assert_eq!((news.raised.len(), news.decided), (1, vec![accepted]));
}
