use std::time::Duration;

use tokio::time::Instant;

use super::*;

fn cfg() -> BreakerConfig {
    BreakerConfig {
        consecutive_failures: 3,
        failure_ratio: 0.5,
        window: 10,
        cooldown: Duration::from_secs(30),
        max_cooldown: Duration::from_secs(100),
        give_up_after: Duration::from_secs(300),
    }
}

fn fail(b: &mut Breaker, now: Instant) -> Option<Transition> {
    b.record(Outcome::Failure("connect refused".into()), now, &cfg())
}

fn ok(b: &mut Breaker, now: Instant) -> Option<Transition> {
    b.record(Outcome::Success, now, &cfg())
}

/// Opens the breaker with consecutive failures; returns the probe instant.
fn open_it(b: &mut Breaker, now: Instant) -> Instant {
    for _ in 0..cfg().consecutive_failures {
        fail(b, now);
    }
    assert_eq!(b.phase(), BreakerPhase::Open);
    b.next_probe_at().expect("open breaker has a probe time")
}

#[test]
fn closed_allows_and_successes_keep_it_closed() {
    let now = Instant::now();
    let mut b = Breaker::with_seed(1);
    for _ in 0..50 {
        assert!(b.allow_request(now, &cfg()));
        assert_eq!(ok(&mut b, now), None);
    }
    assert_eq!(b.phase(), BreakerPhase::Closed);
    assert_eq!(b.view(now).window_failures, 0);
}

#[test]
fn opens_after_consecutive_failures() {
    let now = Instant::now();
    let mut b = Breaker::with_seed(1);
    assert_eq!(fail(&mut b, now), None);
    assert_eq!(fail(&mut b, now), None);
    let t = fail(&mut b, now).expect("third failure opens");
    assert_eq!((t.from, t.to), (BreakerPhase::Closed, BreakerPhase::Open));
    assert!(t.reason.contains("3 consecutive failures"), "{}", t.reason);
    assert!(t.reason.contains("connect refused"));
    assert!(!b.allow_request(now, &cfg()));
    let v = b.view(now);
    assert_eq!(v.opens, 1);
    assert_eq!(v.last_error.as_deref(), Some("connect refused"));
}

#[test]
fn a_success_resets_the_consecutive_count() {
    let now = Instant::now();
    let mut b = Breaker::with_seed(1);
    for _ in 0..10 {
        fail(&mut b, now);
        fail(&mut b, now);
        ok(&mut b, now);
        // 2 of every 3 fail: the ratio trips once the window is full.
        if b.phase() == BreakerPhase::Open {
            break;
        }
    }
    assert_eq!(b.phase(), BreakerPhase::Open);
    assert!(b.view(now).consecutive_failures < 3);
}

#[test]
fn ratio_only_counts_once_the_window_is_full() {
    let now = Instant::now();
    let c = BreakerConfig {
        consecutive_failures: 100,
        ..cfg()
    };
    let mut b = Breaker::with_seed(1);
    // F S F S F S F S F: 5 failures in 9 requests, window of 10 not full yet.
    for i in 0..9 {
        let o = if i % 2 == 0 {
            Outcome::Failure("503".into())
        } else {
            Outcome::Success
        };
        assert_eq!(b.record(o, now, &c), None);
    }
    assert_eq!(b.view(now).window_failures, 5);
    // 10th request: a success; 5/10 = 0.5 but only failures trip the breaker.
    assert_eq!(b.record(Outcome::Success, now, &c), None);
    // 11th: failure; the window is F..F S F = 5 failures of 10 ≥ 0.5.
    let t = b
        .record(Outcome::Failure("503".into()), now, &c)
        .expect("ratio trips");
    assert!(
        t.reason.contains("of the last 10 requests failed"),
        "{}",
        t.reason
    );
}

#[test]
fn window_below_ratio_stays_closed() {
    let now = Instant::now();
    let c = BreakerConfig {
        consecutive_failures: 100,
        ..cfg()
    };
    let mut b = Breaker::with_seed(1);
    // 1 failure in 3 requests, forever: 33 % < 50 %.
    for _ in 0..100 {
        assert_eq!(b.record(Outcome::Failure("x".into()), now, &c), None);
        assert_eq!(b.record(Outcome::Success, now, &c), None);
        assert_eq!(b.record(Outcome::Success, now, &c), None);
    }
    assert!(b.view(now).window_failures <= 4);
}

#[test]
fn single_rate_limit_is_not_a_failure_but_a_repeat_is() {
    let now = Instant::now();
    let mut b = Breaker::with_seed(1);
    let c = BreakerConfig {
        consecutive_failures: 2,
        ..cfg()
    };
    for _ in 0..5 {
        assert_eq!(b.record(Outcome::RateLimited, now, &c), None);
        assert_eq!(b.record(Outcome::Success, now, &c), None);
    }
    assert_eq!(b.view(now).consecutive_failures, 0);
    assert_eq!(b.record(Outcome::RateLimited, now, &c), None);
    assert_eq!(b.record(Outcome::RateLimited, now, &c), None); // 1st failure
    assert_eq!(b.view(now).consecutive_failures, 1);
    let t = b
        .record(Outcome::RateLimited, now, &c)
        .expect("2nd failure opens");
    assert!(t.reason.contains("429"), "{}", t.reason);
}

#[test]
fn open_to_half_open_after_cooldown_allows_exactly_one_probe() {
    let t0 = Instant::now();
    let mut b = Breaker::with_seed(7);
    let probe_at = open_it(&mut b, t0);
    assert!(!b.allow_request(probe_at - Duration::from_millis(1), &cfg()));
    assert_eq!(b.phase(), BreakerPhase::Open);
    assert!(b.allow_request(probe_at, &cfg()));
    assert_eq!(b.phase(), BreakerPhase::HalfOpen);
    assert!(!b.allow_request(probe_at, &cfg()));
    assert!(!b.allow_request(probe_at + Duration::from_secs(999), &cfg()));
    assert_eq!(b.view(probe_at).next_probe_in, None);
}

#[test]
fn probe_success_closes_and_resets_cooldown() {
    let t0 = Instant::now();
    let mut b = Breaker::with_seed(7);
    let p1 = open_it(&mut b, t0);
    assert!(b.allow_request(p1, &cfg()));
    fail(&mut b, p1); // re-open, doubled
    let p2 = b.next_probe_at().unwrap();
    assert!(b.allow_request(p2, &cfg()));
    let t = ok(&mut b, p2).expect("probe success closes");
    assert_eq!(
        (t.from, t.to),
        (BreakerPhase::HalfOpen, BreakerPhase::Closed)
    );
    assert!(b.allow_request(p2, &cfg()));
    assert_eq!(b.base_cooldown(&cfg()), Duration::from_secs(30));
    assert_eq!(b.view(p2).consecutive_failures, 0);
    assert_eq!(b.view(p2).opens, 2);
}

#[test]
fn probe_failure_reopens_with_doubled_cooldown_up_to_the_cap() {
    let t0 = Instant::now();
    let mut b = Breaker::with_seed(3);
    let mut probe = open_it(&mut b, t0);
    let mut opened_at = t0;
    let expected_base = [30u64, 60, 100, 100, 100];
    for (i, base) in expected_base.iter().enumerate() {
        let cd = probe - opened_at;
        let base = Duration::from_secs(*base);
        assert!(
            cd >= base.mul_f64(0.9) && cd <= base.mul_f64(1.1),
            "open #{}: cooldown {cd:?} outside {base:?} ±10 %",
            i + 1
        );
        assert!(b.allow_request(probe, &cfg()));
        let t = fail(&mut b, probe).expect("probe failure re-opens");
        assert_eq!((t.from, t.to), (BreakerPhase::HalfOpen, BreakerPhase::Open));
        assert!(t.reason.starts_with("probe failed"));
        opened_at = probe;
        probe = b.next_probe_at().unwrap();
    }
}

#[test]
fn jitter_stays_within_ten_percent_and_varies() {
    let t0 = Instant::now();
    let mut seen = std::collections::HashSet::new();
    for seed in 0..200 {
        let mut b = Breaker::with_seed(seed);
        let cd = open_it(&mut b, t0) - t0;
        assert!(
            cd >= Duration::from_secs(27) && cd <= Duration::from_secs(33),
            "{cd:?}"
        );
        seen.insert(cd.as_millis());
    }
    assert!(seen.len() > 50, "jitter should spread cooldowns");
    // Same seed, same cooldown.
    let a = open_it(&mut Breaker::with_seed(42), t0);
    let b = open_it(&mut Breaker::with_seed(42), t0);
    assert_eq!(a, b);
}

#[test]
fn rate_limited_probe_allows_another_probe() {
    let t0 = Instant::now();
    let mut b = Breaker::with_seed(1);
    let p = open_it(&mut b, t0);
    assert!(b.allow_request(p, &cfg()));
    assert_eq!(b.record(Outcome::RateLimited, p, &cfg()), None);
    assert_eq!(b.phase(), BreakerPhase::HalfOpen);
    assert!(b.allow_request(p, &cfg()));
    assert!(!b.allow_request(p, &cfg()));
    let t = b
        .record(Outcome::RateLimited, p, &cfg())
        .expect("repeat 429 reopens");
    assert_eq!(t.to, BreakerPhase::Open);
}

#[test]
fn late_success_while_open_does_not_close() {
    let t0 = Instant::now();
    let mut b = Breaker::with_seed(1);
    open_it(&mut b, t0);
    assert_eq!(ok(&mut b, t0), None);
    assert_eq!(fail(&mut b, t0), None);
    assert_eq!(b.phase(), BreakerPhase::Open);
}

#[test]
fn reset_closes_and_force_open_uses_current_cooldown() {
    let t0 = Instant::now();
    let mut b = Breaker::with_seed(1);
    assert_eq!(b.reset(), None);
    let t = b.force_open(t0, &cfg()).expect("closed -> open");
    assert_eq!(t.reason, "opened by operator");
    let cd = b.next_probe_at().unwrap() - t0;
    assert!(cd >= Duration::from_secs(27) && cd <= Duration::from_secs(33));
    assert_eq!(b.force_open(t0, &cfg()), None);
    let t = b.reset().expect("open -> closed");
    assert_eq!((t.from, t.to), (BreakerPhase::Open, BreakerPhase::Closed));
    assert!(b.allow_request(t0, &cfg()));
    // force_open does not double.
    b.force_open(t0, &cfg());
    assert_eq!(b.base_cooldown(&cfg()), Duration::from_secs(30));
}

#[test]
fn view_reports_time_to_probe() {
    let t0 = Instant::now();
    let mut b = Breaker::with_seed(1);
    let p = open_it(&mut b, t0);
    let later = t0 + Duration::from_secs(10);
    assert_eq!(b.view(later).next_probe_in, Some(p - later));
    assert_eq!(
        b.view(p + Duration::from_secs(5)).next_probe_in,
        Some(Duration::ZERO)
    );
    assert_eq!(b.view(later).phase, BreakerPhase::Open);
}

#[test]
fn gives_up_after_failing_too_long_and_only_then() {
    let t0 = Instant::now();
    let mut b = Breaker::with_seed(1);
    assert!(!b.gave_up(t0 + Duration::from_secs(10_000), &cfg()));
    let mut probe = open_it(&mut b, t0);
    while probe <= t0 + Duration::from_secs(300) {
        assert!(!b.gave_up(probe, &cfg()));
        assert!(b.allow_request(probe, &cfg()));
        fail(&mut b, probe);
        probe = b.next_probe_at().unwrap();
    }
    assert!(b.gave_up(t0 + Duration::from_secs(301), &cfg()));
    b.reset();
    assert!(!b.gave_up(t0 + Duration::from_secs(1000), &cfg()));
}

#[test]
fn persisted_open_breaker_reopens_from_restore_time() {
    let t0 = Instant::now();
    let mut b = Breaker::with_seed(1);
    let p = open_it(&mut b, t0);
    let cooldown = p - t0;
    let saved_at = t0 + Duration::from_secs(100);
    let json = serde_json::to_string(&b.to_persisted(saved_at)).unwrap();
    let back: PersistedBreaker = serde_json::from_str(&json).unwrap();
    let restored_at = t0 + Duration::from_secs(5000);
    let mut r = Breaker::from_persisted(back, restored_at);
    assert_eq!(r.phase(), BreakerPhase::Open);
    assert_eq!(r.next_probe_at(), Some(restored_at + cooldown));
    assert!(!r.allow_request(restored_at, &cfg()));
    assert_eq!(r.view(restored_at).opens, 1);
    assert_eq!(
        r.view(restored_at).last_error.as_deref(),
        Some("connect refused")
    );
    // Failing time carries over: 100 s before the save + 201 s after the restore.
    assert!(!r.gave_up(restored_at + Duration::from_secs(200), &cfg()));
    assert!(r.gave_up(restored_at + Duration::from_secs(201), &cfg()));
}

#[test]
fn persisted_half_open_restores_as_open_and_closed_as_closed() {
    let t0 = Instant::now();
    let mut b = Breaker::with_seed(1);
    let p = open_it(&mut b, t0);
    assert!(b.allow_request(p, &cfg()));
    let r = Breaker::from_persisted(b.to_persisted(p), p);
    assert_eq!(r.phase(), BreakerPhase::Open);
    assert!(r.next_probe_at().unwrap() > p);

    let mut c = Breaker::with_seed(1);
    fail(&mut c, t0);
    let mut r = Breaker::from_persisted(c.to_persisted(t0), t0);
    assert_eq!(r.phase(), BreakerPhase::Closed);
    assert_eq!(r.view(t0).consecutive_failures, 1);
    fail(&mut r, t0);
    assert!(fail(&mut r, t0).is_some());
}

#[test]
fn long_error_text_is_truncated() {
    let now = Instant::now();
    let mut b = Breaker::with_seed(1);
    b.record(Outcome::Failure("é".repeat(10_000)), now, &cfg());
    assert_eq!(b.view(now).last_error.unwrap().chars().count(), 256);
}

#[test]
fn a_breaker_follows_another_workers_open_breaker_and_its_close() {
    let now = Instant::now();
    let mut theirs = Breaker::with_seed(1);
    let probe_at = open_it(&mut theirs, now);
    let shared = theirs.shared_open(now).expect("open breakers are shared");
    assert_eq!(
        Breaker::with_seed(2).shared_open(now),
        None,
        "closed ones not"
    );

    let mut mine = Breaker::with_seed(3);
    let t = mine
        .follow_open(&shared, "3 failures (worker w1)")
        .expect("opened");
    assert_eq!((t.from, t.to), (BreakerPhase::Closed, BreakerPhase::Open));
    assert_eq!(mine.next_probe_at(), Some(probe_at));
    assert_eq!(mine.follow_open(&shared, "again"), None, "open already");
    assert!(!mine.allow_request(probe_at - Duration::from_millis(1), &cfg()));
    // The one probe; its failure re-opens at the next level, as theirs would.
    assert!(mine.allow_request(probe_at, &cfg()));
    assert!(!mine.allow_request(probe_at, &cfg()));
    fail(&mut mine, probe_at);
    assert_eq!(mine.phase(), BreakerPhase::Open);
    assert_eq!(mine.base_cooldown(&cfg()), cfg().cooldown * 2);

    // Theirs follows the re-open (retimed, no transition), then a close.
    let reopened = mine.shared_open(probe_at).unwrap();
    assert_eq!(theirs.follow_open(&reopened, "probe failed"), None);
    assert_eq!(theirs.next_probe_at(), mine.next_probe_at());
    let t = theirs
        .follow_closed("probe succeeded (worker w2)")
        .expect("closed");
    assert_eq!((t.from, t.to), (BreakerPhase::Open, BreakerPhase::Closed));
    assert_eq!(theirs.follow_closed("again"), None);
    assert!(theirs.allow_request(probe_at, &cfg()));
}

#[test]
fn a_followed_breaker_gives_up_from_the_earliest_failure_it_knows() {
    let start = Instant::now();
    let mut theirs = Breaker::with_seed(1);
    open_it(&mut theirs, start);
    let later = start + Duration::from_secs(200);
    let mut mine = Breaker::with_seed(2);
    open_it(&mut mine, later);
    mine.follow_open(&theirs.shared_open(start).unwrap(), "shared");
    // 300 s since the first failure anywhere, though only 100 s here.
    assert!(mine.gave_up(start + Duration::from_secs(301), &cfg()));
}
