//! Handing out work: new hosts get their holds, robots.txt goes first, then
//! every fetch that politeness, robots.txt, breakers and limits allow.

use std::time::Duration;

use tokio::time::Instant;
use url::Url;

use super::Coordinator;
use crate::engine::frontier::{Hold, Lease};
use crate::engine::hosts::FetchGate;
use crate::engine::timers::Timer;

/// How often a postponed robots.txt of a host with nothing queued looks
/// again whether URLs came.
const ROBOTS_IDLE_RECHECK: Duration = Duration::from_secs(30);

impl Coordinator {
    /// Hosts the frontier (re)created start held for robots.txt; apply what
    /// the host table knows of them: settled robots, pauses, overrides, open
    /// breakers.
    pub(super) fn adopt_new_hosts(&mut self, now: Instant) {
        let new_hosts = match self.frontier.take_new_hosts() {
            Ok(hosts) if hosts.is_empty() => return,
            Ok(hosts) => hosts,
            Err(e) => return self.storage_failed("listing new hosts", e),
        };
        let keys: Vec<&str> = new_hosts.iter().map(String::as_str).collect();
        let heads: Vec<Option<String>> = match self.frontier.host_views(&keys, now, 1) {
            Ok(views) => views
                .into_iter()
                .map(|v| v.head.into_iter().next())
                .collect(),
            Err(e) if e.is_unreachable() => {
                // Taken from the frontier already: adopted with an http origin
                // (https answers robots.txt by a redirect) rather than lost.
                self.frontier_unreachable(e);
                keys.iter().map(|k| Some(format!("http://{k}/"))).collect()
            }
            Err(e) => return self.storage_failed("reading new hosts' queues", e),
        };
        let default_max = self.cfg.politeness.per_host;
        for (key, head) in new_hosts.iter().zip(heads) {
            let holds = self.hosts.adopt(key, head.as_deref(), now);
            // Explicit both ways: hosts restored by `Frontier::open` predate the initial holds.
            self.hold(key, Hold::Robots, !holds.robots_settled);
            if !holds.robots_settled {
                self.robots_wanted.push(key.clone());
            }
            if holds.paused {
                self.hold(key, Hold::Paused, true);
            }
            if holds.breaker_open {
                self.hold(key, Hold::Breaker, true);
            }
            if holds.max_in_flight != default_max {
                if let Err(e) = self.frontier.set_max_in_flight(key, holds.max_in_flight) {
                    self.storage_failed(&format!("limiting {key}"), e);
                }
            }
            if holds.finished {
                self.hold(key, Hold::Finished, true);
            }
        }
        self.adopt_shared_breakers(&keys, now);
    }

    /// Starts every fetch that politeness, robots, breakers and limits allow.
    pub(super) fn dispatch(&mut self, now: Instant) {
        if self.run.outage.is_some() {
            // New hosts' queues and the next URLs are in the server: wait for it.
            return;
        }
        self.adopt_new_hosts(now);
        if self.run.paused || self.run.draining {
            return;
        }
        while self.slots.has_room() {
            let Some(host) = self.robots_wanted.pop() else {
                break;
            };
            self.start_robots(&host);
        }
        while self.slots.has_room() && !self.page_budget_spent() && !self.slots.rate_limited(now) {
            let lease = match self.frontier.next_ready(now) {
                Ok(Some(lease)) => lease,
                Ok(None) => return,
                Err(e) => return self.storage_failed("taking the next URL", e),
            };
            if !self.slots.take_rate_token(now) {
                self.release(lease);
                return;
            }
            let host = lease.entry.host.clone();
            self.follow_claimed_breaker(&host, now);
            let Ok(url) = Url::parse(&lease.entry.url) else {
                self.record_unfetchable(lease, "stored URL no longer parses");
                continue;
            };
            if crate::engine::probes::is_probe_url(&url) && !self.is_probe(&lease) {
                self.drop_orphan_probe(lease);
                continue;
            }
            match self.hosts.check_fetch(&host, &url, now) {
                FetchGate::RobotsUnsettled => {
                    // Expired (or never fetched): settle robots.txt again before any page.
                    self.release(lease);
                    self.hold(&host, Hold::Robots, true);
                    self.start_robots(&host);
                }
                FetchGate::RobotsDenied if self.is_probe(&lease) => self.probe_denied(lease),
                FetchGate::RobotsDenied if self.is_sitemap(&lease) => self.sitemap_denied(lease),
                FetchGate::RobotsDenied => self.record_robots_denied(lease),
                FetchGate::BreakerHeld => {
                    self.release(lease);
                    self.hold_for_breaker(&host, now);
                }
                FetchGate::Go { probe } => {
                    if let Some(transition) = probe {
                        self.breaker_transition(&host, transition, now);
                    }
                    self.hosts.fetch_started(&host, now);
                    self.slots.start_page();
                    self.spawn_fetch(lease, url);
                }
            }
        }
    }

    /// Starts the request a lease calls for: a probe, a sitemap file, a
    /// resource to fetch and archive, a check, or a page.
    fn spawn_fetch(&mut self, lease: Lease, url: Url) {
        if self.is_probe(&lease) {
            self.workers.spawn_probe(lease, url);
        } else if self.is_sitemap(&lease) {
            let limits = self.sitemap_limits();
            self.workers.spawn_sitemap(lease, url, limits);
        } else if self.is_fetched_resource(&lease.entry) {
            self.workers.spawn_resource(lease, url);
        } else if lease.entry.kind.is_check() {
            self.workers.spawn_check(lease, url);
        } else {
            let earlier = self.earlier_fetch(&lease.entry.url);
            self.workers.spawn_page(lease, url, earlier);
        }
    }

    /// Sends the robots.txt request for a host unless one is already out.
    /// A postponed robots.txt is asked for again only while the host has
    /// URLs to crawl: a host whose URLs a rule took gets no more requests
    /// (its retry waits, in case new URLs come).
    pub(super) fn robots_retry_due(&mut self, host: &str, now: Instant) {
        let queued = match self.frontier.host_views(&[host], now, 0) {
            Ok(views) => views.first().is_some_and(|v| v.queued > 0),
            // The frontier's error surfaces at its next use; the retry goes on.
            Err(_) => true,
        };
        if queued {
            self.start_robots(host);
        } else {
            self.timers
                .schedule(now + ROBOTS_IDLE_RECHECK, Timer::RobotsRetry, host);
        }
    }

    pub(super) fn start_robots(&mut self, host: &str) {
        if let Some(origin) = self.hosts.begin_robots(host, Instant::now()) {
            self.slots.start_robots();
            self.workers.spawn_robots(host.to_string(), origin);
        }
    }
}
