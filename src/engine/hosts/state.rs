//! Everything the crawl knows about one host, and what of it survives a restart.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use super::RobotsSettled;
use crate::engine::breaker::Breaker;
use crate::engine::config::BreakerConfig;
use crate::engine::config::RobotsConfig;
use crate::engine::control::{BreakerThresholds, HostKey};
use crate::engine::politeness::HostPoliteness;
use crate::engine::robots::{RobotsAnswer, RobotsBackoff, RobotsGroup, RobotsRules, RobotsVerdict};
use crate::engine::stats::{EventRate, RecentLatency};
use crate::engine::store::PageOutcome;
use crate::engine::telemetry::{DelaySource, HostActivity, HostView, RobotsState, StatusMix};

/// The host's robots.txt as far as the coordinator is concerned.
pub(crate) enum RobotsSlot {
    /// Not fetched yet; `fetching` while a request is out.
    Unknown {
        fetching: bool,
    },
    Rules {
        rules: Box<RobotsRules>,
        fetched: Instant,
        expires: Instant,
    },
    AllowAll {
        fetched: Instant,
        expires: Instant,
    },
    /// Expired rules (`None`: no restrictions) being fetched again. Once a
    /// refetch failed (`backoff` set) they stay in force rather than the host
    /// being postponed, and the refetch is retried with the backoff.
    Stale {
        rules: Option<Box<RobotsRules>>,
        fetched: Instant,
        backoff: Option<RobotsBackoff>,
        fetching: bool,
    },
    DisallowAll,
    Postponed {
        backoff: RobotsBackoff,
        fetching: bool,
    },
    GaveUp,
}

impl RobotsSlot {
    pub fn state(&self) -> RobotsState {
        match self {
            RobotsSlot::Unknown { .. } => RobotsState::Pending,
            RobotsSlot::Rules { .. } => RobotsState::Ok,
            RobotsSlot::AllowAll { .. } => RobotsState::AllowAll,
            RobotsSlot::Stale { rules: Some(_), .. } => RobotsState::Ok,
            RobotsSlot::Stale { rules: None, .. } => RobotsState::AllowAll,
            RobotsSlot::DisallowAll => RobotsState::DisallowAll,
            RobotsSlot::Postponed { backoff, .. } => RobotsState::Postponed {
                attempts: backoff.attempts(),
            },
            RobotsSlot::GaveUp => RobotsState::GaveUp,
        }
    }

    /// Settled and still fresh: pages may be fetched under it.
    pub fn is_settled(&self, now: Instant) -> bool {
        match self {
            RobotsSlot::Rules { expires, .. } | RobotsSlot::AllowAll { expires, .. } => {
                now < *expires
            }
            RobotsSlot::Stale { backoff, .. } => backoff.is_some(),
            _ => false,
        }
    }

    /// A robots.txt request for the host is out.
    pub fn is_fetching(&self) -> bool {
        matches!(
            self,
            RobotsSlot::Unknown { fetching: true }
                | RobotsSlot::Postponed { fetching: true, .. }
                | RobotsSlot::Stale { fetching: true, .. }
        )
    }

    /// The rules in force, fresh or kept after a failed refetch.
    pub fn rules(&self) -> Option<&RobotsRules> {
        match self {
            RobotsSlot::Rules { rules, .. } => Some(rules),
            RobotsSlot::Stale {
                rules: Some(rules), ..
            } => Some(rules),
            _ => None,
        }
    }

    pub fn crawl_delay(&self) -> Option<Duration> {
        self.rules().and_then(|r| r.crawl_delay())
    }

    /// The verdict is final and closes the origin: every URL is denied.
    pub fn forbids_all(&self) -> bool {
        matches!(self, RobotsSlot::DisallowAll | RobotsSlot::GaveUp)
    }

    /// No request is out and the verdict is missing, postponed or expired.
    pub fn wants_fetch(&self, now: Instant) -> bool {
        match self {
            RobotsSlot::Unknown { fetching }
            | RobotsSlot::Postponed { fetching, .. }
            | RobotsSlot::Stale { fetching, .. } => !fetching,
            RobotsSlot::Rules { expires, .. } | RobotsSlot::AllowAll { expires, .. } => {
                now >= *expires
            }
            RobotsSlot::DisallowAll | RobotsSlot::GaveUp => false,
        }
    }

    /// A request goes out (the caller checked `wants_fetch`). Expired rules
    /// are kept at hand in case the refetch fails.
    pub fn begin_fetch(&mut self) {
        match self {
            RobotsSlot::Unknown { fetching }
            | RobotsSlot::Postponed { fetching, .. }
            | RobotsSlot::Stale { fetching, .. } => *fetching = true,
            RobotsSlot::Rules { .. } | RobotsSlot::AllowAll { .. } => {
                let (rules, fetched) = match std::mem::replace(self, RobotsSlot::GaveUp) {
                    RobotsSlot::Rules { rules, fetched, .. } => (Some(rules), fetched),
                    RobotsSlot::AllowAll { fetched, .. } => (None, fetched),
                    _ => unreachable!("matched above"),
                };
                *self = RobotsSlot::Stale {
                    rules,
                    fetched,
                    backoff: None,
                    fetching: true,
                };
            }
            RobotsSlot::DisallowAll | RobotsSlot::GaveUp => {}
        }
    }

    /// Applies an answer; says what it means for the host's queue.
    pub fn settle(
        &mut self,
        answer: RobotsAnswer,
        now: Instant,
        cfg: &RobotsConfig,
    ) -> RobotsSettled {
        let expires = now + answer.ttl;
        let (slot, settled) = match answer.verdict {
            RobotsVerdict::Parsed(rules) => {
                let sitemaps = rules.sitemaps().to_vec();
                let slot = RobotsSlot::Rules {
                    rules: Box::new(rules),
                    fetched: now,
                    expires,
                };
                (slot, RobotsSettled::Open { sitemaps })
            }
            RobotsVerdict::AllowAll => (
                RobotsSlot::AllowAll {
                    fetched: now,
                    expires,
                },
                RobotsSettled::Open {
                    sitemaps: Vec::new(),
                },
            ),
            RobotsVerdict::DisallowAll => (RobotsSlot::DisallowAll, RobotsSettled::DisallowAll),
            RobotsVerdict::Unavailable { retry_after } => {
                return self.settle_unavailable(retry_after, now, cfg)
            }
        };
        *self = slot;
        settled
    }

    /// 5xx, timeouts, unreachable: expired rules stay in force (RFC 9309
    /// §2.4) and the refetch is retried; without rules the host is postponed
    /// with a backoff, then given up.
    fn settle_unavailable(
        &mut self,
        retry_after: Option<Duration>,
        now: Instant,
        cfg: &RobotsConfig,
    ) -> RobotsSettled {
        let mut backoff = match std::mem::replace(self, RobotsSlot::GaveUp) {
            RobotsSlot::Postponed { backoff, .. } => backoff,
            RobotsSlot::Stale {
                rules,
                fetched,
                backoff,
                ..
            } => {
                let mut backoff = backoff.unwrap_or_else(|| RobotsBackoff::new(cfg));
                let retry_at = backoff.record_failure(now, retry_after);
                let settled = RobotsSettled::KeptAfterFailure {
                    age: now.saturating_duration_since(fetched),
                    attempts: backoff.attempts(),
                    retry_at: (!backoff.gave_up(now)).then_some(retry_at),
                };
                *self = RobotsSlot::Stale {
                    rules,
                    fetched,
                    backoff: Some(backoff),
                    fetching: false,
                };
                return settled;
            }
            _ => RobotsBackoff::new(cfg),
        };
        let retry_at = backoff.record_failure(now, retry_after);
        if backoff.gave_up(now) {
            return RobotsSettled::GaveUp;
        }
        *self = RobotsSlot::Postponed {
            backoff,
            fetching: false,
        };
        RobotsSettled::Postponed {
            retry_at,
            state: self.state(),
        }
    }

    pub fn summary(&self, now: Instant) -> Option<String> {
        match self {
            RobotsSlot::Stale {
                rules,
                fetched,
                backoff,
                ..
            } => {
                let kept = match rules {
                    Some(rules) => rules_summary(rules),
                    None => "no robots.txt: no restrictions".into(),
                };
                Some(match backoff {
                    Some(b) => {
                        // Whole seconds: the view is not a stopwatch.
                        let age =
                            Duration::from_secs(now.saturating_duration_since(*fetched).as_secs());
                        format!(
                            "{kept}; refetch failed (attempt {}), keeping rules from {} ago",
                            b.attempts(),
                            humantime::format_duration(age)
                        )
                    }
                    None => format!("{kept}; expired, refetching"),
                })
            }
            RobotsSlot::Rules { rules, .. } => Some(rules_summary(rules)),
            RobotsSlot::AllowAll { .. } => Some("no robots.txt: no restrictions".into()),
            RobotsSlot::DisallowAll => {
                Some("robots.txt forbidden (401/403): site off limits".into())
            }
            RobotsSlot::Postponed { backoff, .. } => Some(format!(
                "robots.txt unavailable, attempt {}",
                backoff.attempts()
            )),
            RobotsSlot::GaveUp => Some("robots.txt never became available: gave up".into()),
            RobotsSlot::Unknown { .. } => None,
        }
    }
}

/// The host view's line for parsed rules: the group that applied and what the file adds.
fn rules_summary(rules: &RobotsRules) -> String {
    let mut s = String::from(match rules.group() {
        RobotsGroup::ByName => "robots.txt parsed, our group applies",
        RobotsGroup::Wildcard => "robots.txt parsed, group * applies",
        RobotsGroup::NoGroup => "robots.txt parsed, no group applies",
    });
    if let Some(d) = rules.crawl_delay() {
        s.push_str(&format!(", crawl-delay {}", humantime::format_duration(d)));
    }
    let maps = rules.sitemaps().len();
    if maps > 0 {
        s.push_str(&format!(", {maps} sitemap(s)"));
    }
    s
}

/// What of a host is stored in the `hosts` tree and restored on resume.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct HostRecord {
    pub paused: bool,
    pub delay_override: Option<Duration>,
    pub concurrency_override: Option<usize>,
    pub breaker: Option<crate::engine::breaker::PersistedBreaker>,
    #[serde(default)]
    pub breaker_thresholds: Option<BreakerThresholds>,
    /// Set once the host is given up: what its URLs are recorded as.
    #[serde(default)]
    pub given_up: Option<PageOutcome>,
}

/// What a host's row counts. Stored in the crawl index with the crawl's
/// counters, in one batch, so that after a `kill -9` the two still agree.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct HostFigures {
    pub fetched: u64,
    pub status: StatusMix,
}

/// The robots.txt of a host's second scheme.
pub(crate) struct OtherOrigin {
    /// `scheme://host[:port]/`.
    pub(super) origin: url::Url,
    pub(super) robots: RobotsSlot,
}

pub(crate) struct HostState {
    pub(super) key: HostKey,
    /// `scheme://host[:port]/`, where its robots.txt lives.
    pub(super) origin: Option<url::Url>,
    pub(super) politeness: HostPoliteness,
    pub(super) breaker: Breaker,
    /// Operator's per-host thresholds over crawl.toml's `[breaker]`.
    pub(super) breaker_thresholds: Option<BreakerThresholds>,
    pub(super) robots: RobotsSlot,
    /// robots.txt of the host's other scheme (`http://h` and `https://h` share
    /// a host key and its politeness, not robots.txt), once one of its URLs
    /// came up.
    pub(super) other_origin: Option<Box<OtherOrigin>>,
    pub(super) status: StatusMix,
    pub(super) fetched: u64,
    pub(super) in_flight: u32,
    pub(super) requests: EventRate,
    pub(super) latency: RecentLatency,
    pub(super) delay: (Duration, DelaySource),
    pub(super) paused: bool,
    /// Whether the breaker's OPEN hold is set in the frontier.
    pub(super) breaker_held: bool,
    /// Set once the host takes no more work (robots.txt forbids it, never
    /// became available, or the breaker kept failing): what its URLs are
    /// recorded as.
    pub(super) given_up: Option<PageOutcome>,
    /// The latest private-address refusal of one of its URLs.
    pub(super) last_refusal: Option<String>,
}

impl HostState {
    pub fn new(key: HostKey) -> Self {
        HostState {
            key,
            origin: None,
            politeness: HostPoliteness::default(),
            breaker: Breaker::new(),
            breaker_thresholds: None,
            robots: RobotsSlot::Unknown { fetching: false },
            other_origin: None,
            status: StatusMix::default(),
            fetched: 0,
            in_flight: 0,
            requests: EventRate::new(Duration::from_secs(10), 4096),
            latency: RecentLatency::default(),
            delay: (Duration::ZERO, DelaySource::Config),
            paused: false,
            breaker_held: false,
            given_up: None,
            last_refusal: None,
        }
    }

    /// The breaker settings for this host: crawl.toml's, with the operator's
    /// thresholds over them.
    pub fn breaker_config(&self, base: &BreakerConfig) -> BreakerConfig {
        let mut cfg = base.clone();
        if let Some(t) = self.breaker_thresholds {
            cfg.consecutive_failures = t.consecutive_failures;
            cfg.cooldown = t.cooldown;
            cfg.max_cooldown = cfg.max_cooldown.max(t.cooldown);
        }
        cfg
    }

    /// The robots.txt `url` is under: the host's own, or (created on first
    /// sight) that of its other scheme.
    pub fn robots_for(&mut self, url: &url::Url) -> &RobotsSlot {
        let own = self
            .origin
            .as_ref()
            .is_none_or(|o| o.scheme() == url.scheme());
        if own {
            return &self.robots;
        }
        &self
            .other_origin
            .get_or_insert_with(|| {
                let mut origin = url.clone();
                origin.set_path("/");
                origin.set_query(None);
                origin.set_fragment(None);
                Box::new(OtherOrigin {
                    origin,
                    robots: RobotsSlot::Unknown { fetching: false },
                })
            })
            .robots
    }

    /// A robots.txt request of the host is out.
    pub fn robots_fetching(&self) -> bool {
        self.robots.is_fetching()
            || self
                .other_origin
                .as_ref()
                .is_some_and(|o| o.robots.is_fetching())
    }

    /// The larger Crawl-delay of the host's robots.txt files: politeness
    /// stays per host name.
    pub fn crawl_delay(&self) -> Option<Duration> {
        let other = self
            .other_origin
            .as_ref()
            .and_then(|o| o.robots.crawl_delay());
        self.robots.crawl_delay().max(other)
    }

    /// The host view's robots.txt line, the other scheme's after its own.
    fn robots_summary(&self, now: Instant) -> Option<String> {
        let own = self.robots.summary(now);
        let Some(other) = &self.other_origin else {
            return own;
        };
        let theirs = other.robots.summary(now)?;
        let scheme = other.origin.scheme();
        Some(match own {
            Some(own) => format!("{own}; {scheme}: {theirs}"),
            None => format!("{scheme}: {theirs}"),
        })
    }

    /// For a host that takes no more work: what its URLs are recorded as.
    pub fn finished_reason(&self) -> Option<PageOutcome> {
        self.given_up.clone()
    }

    pub fn record(&self, now: Instant) -> HostRecord {
        HostRecord {
            paused: self.paused,
            delay_override: self.politeness.override_delay(),
            concurrency_override: self.politeness.override_concurrency(),
            breaker: Some(self.breaker.to_persisted(now)),
            breaker_thresholds: self.breaker_thresholds,
            given_up: self.given_up.clone(),
        }
    }

    pub fn figures(&self) -> HostFigures {
        HostFigures {
            fetched: self.fetched,
            status: self.status,
        }
    }

    pub fn restore_figures(&mut self, figures: HostFigures) {
        self.fetched = figures.fetched;
        self.status = figures.status;
    }

    /// A URL of the host was recorded: answered with `status`, or (`None`)
    /// failed without an answer, `refused` for a private address.
    pub fn count_recorded(&mut self, status: Option<u16>, refused: bool) {
        self.status.record(status, refused);
        self.fetched += u64::from(status.is_some());
    }

    pub fn restore(key: HostKey, record: HostRecord, now: Instant) -> Self {
        let mut host = HostState::new(key);
        host.paused = record.paused;
        host.politeness.set_override_delay(record.delay_override);
        host.politeness
            .set_override_concurrency(record.concurrency_override);
        host.breaker_thresholds = record.breaker_thresholds;
        host.given_up = record.given_up;
        if let Some(b) = record.breaker {
            host.breaker = Breaker::from_persisted(b, now);
        }
        host
    }

    #[allow(clippy::too_many_arguments)]
    pub fn view(
        &mut self,
        now: Instant,
        queued: u64,
        max_in_flight: usize,
        activity: HostActivity,
        quarantined: u64,
        queue_head: Vec<String>,
    ) -> HostView {
        HostView {
            host: self.key.clone(),
            queued,
            in_flight: self.in_flight,
            max_in_flight: max_in_flight as u32,
            fetched: self.fetched,
            req_per_sec: self.requests.per_sec(now),
            mean_latency: self.latency.mean(),
            delay: self.delay.0,
            delay_source: self.delay.1,
            status: self.status,
            robots: self.robots.state(),
            breaker: self.breaker.view(now),
            activity,
            paused: self.paused,
            quarantined,
            queue_head,
            robots_summary: self.robots_summary(now),
            delay_override: self.politeness.override_delay(),
            concurrency_override: self.politeness.override_concurrency(),
            last_refusal: self.last_refusal.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn operator_thresholds_override_the_crawl_settings_for_one_host() {
        let base = BreakerConfig::default();
        let mut host = HostState::new("flaky.test".into());
        assert_eq!(host.breaker_config(&base), base);
        host.breaker_thresholds = Some(BreakerThresholds {
            consecutive_failures: 2,
            cooldown: Duration::from_secs(900),
        });
        let cfg = host.breaker_config(&base);
        assert_eq!(cfg.consecutive_failures, 2);
        assert_eq!(cfg.cooldown, Duration::from_secs(900));
        assert!(
            cfg.max_cooldown >= cfg.cooldown,
            "the cap never undercuts the cooldown"
        );
        assert_eq!(cfg.failure_ratio, base.failure_ratio);
        let restored = HostState::restore(
            "flaky.test".into(),
            host.record(Instant::now()),
            Instant::now(),
        );
        assert_eq!(restored.breaker_thresholds, host.breaker_thresholds);
    }
}
