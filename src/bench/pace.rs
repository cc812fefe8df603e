//! How fast the bench crawl went over its course: the progress lines, and the
//! pace of its first tenth, its middle and its last tenth, so a slow start or
//! a slowing end shows in the report, not only in the average.

use std::time::Duration;

use super::ms_per_page;

/// Pages between two progress lines: a tenth of the run, at least 1,000.
pub(super) fn progress_step(pages: u64) -> u64 {
    (pages / 10).max(1000)
}

/// Where the crawl was at one moment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Progress {
    pub pages: u64,
    /// Since the crawl started.
    pub at: Duration,
    /// Process CPU time so far.
    pub cpu: Duration,
    /// The page threads' share of it (extraction, the content measure,
    /// digests, archiving), where it can be read.
    pub page_cpu: Option<Duration>,
    /// The crawl loop's share (admitting links, the frontier, the store's
    /// writes), where it can be read.
    pub loop_cpu: Option<Duration>,
    /// The store's background threads' share of it, where it can be read.
    pub store_cpu: Option<Duration>,
}

/// Pages per second and CPU per page between two moments.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    pub pages_per_sec: f64,
    pub cpu_ms_per_page: f64,
    /// The part of it the page threads used.
    pub page_cpu_ms_per_page: Option<f64>,
    /// The part the crawl loop used: what each new URL costs shows here.
    /// The rest of the crawl, beyond these and the store's workers, is
    /// fetching.
    pub loop_cpu_ms_per_page: Option<f64>,
    /// The part of it the store's background threads used (flushes and
    /// compactions): what a crawl that writes many new rows pays later.
    pub store_cpu_ms_per_page: Option<f64>,
}

impl Rate {
    /// `0.757 ms CPU/page`, and what of it the page threads, the crawl
    /// loop and the store's workers used.
    fn cpu_text(&self) -> String {
        let parts: Vec<String> = [
            self.page_cpu_ms_per_page
                .map(|ms| format!("{ms:.3} on page threads")),
            self.loop_cpu_ms_per_page
                .map(|ms| format!("{ms:.3} in the crawl loop")),
            self.store_cpu_ms_per_page
                .map(|ms| format!("{ms:.3} in store workers")),
        ]
        .into_iter()
        .flatten()
        .collect();
        match parts.is_empty() {
            true => format!("{:.3} ms CPU/page", self.cpu_ms_per_page),
            false => format!(
                "{:.3} ms CPU/page ({})",
                self.cpu_ms_per_page,
                parts.join(", ")
            ),
        }
    }
}

impl Progress {
    pub(super) const START: Progress = Progress {
        pages: 0,
        at: Duration::ZERO,
        cpu: Duration::ZERO,
        page_cpu: Some(Duration::ZERO),
        loop_cpu: Some(Duration::ZERO),
        store_cpu: Some(Duration::ZERO),
    };

    fn rate_since(&self, earlier: &Progress) -> Rate {
        let pages = self.pages.saturating_sub(earlier.pages);
        let secs = self.at.saturating_sub(earlier.at).as_secs_f64().max(1e-9);
        let share = |now: Option<Duration>, then: Option<Duration>| match (now, then) {
            (Some(now), Some(then)) => Some(ms_per_page(now.saturating_sub(then), pages)),
            _ => None,
        };
        Rate {
            pages_per_sec: pages.max(1) as f64 / secs,
            cpu_ms_per_page: ms_per_page(self.cpu.saturating_sub(earlier.cpu), pages),
            page_cpu_ms_per_page: share(self.page_cpu, earlier.page_cpu),
            loop_cpu_ms_per_page: share(self.loop_cpu, earlier.loop_cpu),
            store_cpu_ms_per_page: share(self.store_cpu, earlier.store_cpu),
        }
    }

    /// Pages, pages/s and CPU per page since `earlier`, and the RSS now: a
    /// crawl that slows down or grows as it goes shows it here.
    pub(super) fn line(&self, earlier: &Progress, rss: Option<u64>) -> String {
        let rate = self.rate_since(earlier);
        let rss = rss.map_or("n/a".into(), |b| format!("{:.0} MB", b as f64 / 1e6));
        format!(
            "progress       {} pages  {:.1} s  {:.0} pages/s  {}  RSS {rss}",
            self.pages,
            self.at.as_secs_f64(),
            rate.pages_per_sec,
            rate.cpu_text(),
        )
    }
}

/// The first moments the crawl reached a tenth and nine tenths of its pages.
#[derive(Debug, Default)]
pub(super) struct Tenths {
    target: u64,
    first: Option<Progress>,
    ninth: Option<Progress>,
}

impl Tenths {
    pub(super) fn new(pages: u64) -> Tenths {
        Tenths {
            target: pages,
            ..Tenths::default()
        }
    }

    pub(super) fn observe(&mut self, now: Progress) {
        let reached = |share: u64| now.pages.saturating_mul(10) >= self.target * share;
        if self.first.is_none() && reached(1) {
            self.first = Some(now);
        }
        if self.ninth.is_none() && reached(9) {
            self.ninth = Some(now);
        }
    }

    /// The pace once the crawl ended at `end`; `None` if it never reached nine tenths.
    pub(super) fn pace(&self, end: Progress) -> Option<Pace> {
        let (first, ninth) = (self.first?, self.ninth?);
        Some(Pace {
            first_tenth: first.rate_since(&Progress::START),
            middle: ninth.rate_since(&first),
            last_tenth: end.rate_since(&ninth),
        })
    }
}

/// Rates over the first tenth of the pages, from a tenth to nine tenths, and
/// over the last tenth.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pace {
    pub first_tenth: Rate,
    pub middle: Rate,
    pub last_tenth: Rate,
}

impl Pace {
    pub(super) fn render(&self) -> String {
        let part = |name: &str, r: Rate, share: &str| {
            format!(
                "{name:<15}{:.0} pages/s{share}, {}\n",
                r.pages_per_sec,
                r.cpu_text()
            )
        };
        // The ends set against the middle: a slow start or end at a glance.
        let end = |name: &str, r: Rate| {
            let share = r.pages_per_sec / self.middle.pages_per_sec.max(1e-9);
            part(name, r, &format!(" ({share:.2} of 10 % to 90 %)"))
        };
        end("first tenth", self.first_tenth)
            + &part("10 % to 90 %", self.middle, "")
            + &end("last tenth", self.last_tenth)
    }
}

/// A polite bench: the delay between two requests to a host, and over how many hosts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Politeness {
    pub delay: Duration,
    pub hosts: usize,
}

impl Politeness {
    /// What politeness allows: each host fetched once per delay.
    pub fn allowed_pages_per_sec(&self) -> f64 {
        self.hosts as f64 / self.delay.as_secs_f64().max(1e-9)
    }

    /// The allowed rate, and the middle of the crawl's share of it: the start
    /// (robots.txt first, each host's first delay) and the end (hosts running
    /// out of pages one by one) are not what politeness limits.
    pub(super) fn render(&self, pace: Option<&Pace>) -> String {
        let allowed = self.allowed_pages_per_sec();
        let mut out = format!(
            "politeness     {} between requests to a host, one at a time, {} hosts: {allowed:.0} pages/s allowed\n",
            humantime::format_duration(self.delay),
            self.hosts,
        );
        if let Some(pace) = pace {
            let rate = pace.middle.pages_per_sec;
            out.push_str(&format!(
                "sustained      {rate:.0} pages/s from 10 % to 90 % of the pages, {:.1} % of what politeness allows\n",
                100.0 * rate / allowed
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(pages: u64, secs: u64, cpu_ms: u64) -> Progress {
        Progress {
            pages,
            at: Duration::from_secs(secs),
            cpu: Duration::from_millis(cpu_ms),
            page_cpu: Some(Duration::from_millis(cpu_ms / 2)),
            loop_cpu: Some(Duration::from_millis(cpu_ms / 5)),
            store_cpu: Some(Duration::from_millis(cpu_ms / 10)),
        }
    }

    #[test]
    fn progress_marks_every_tenth_of_the_run_and_at_least_every_thousand_pages() {
        assert_eq!(progress_step(1_000_000), 100_000);
        assert_eq!(progress_step(20_000), 2_000);
        assert_eq!(progress_step(500), 1_000);
    }

    #[test]
    fn progress_line_gives_the_interval_rate_and_cpu_per_page() {
        let line = at(1000, 2, 500).line(&Progress::START, Some(50_000_000));
        assert_eq!(
            line,
            "progress       1000 pages  2.0 s  500 pages/s  0.500 ms CPU/page (0.250 on page threads, 0.100 in the crawl loop, 0.050 in store workers)  RSS 50 MB"
        );
        let no_store = Progress {
            store_cpu: None,
            ..at(3000, 4, 900)
        };
        assert_eq!(
            no_store.line(&at(1000, 2, 500), None),
            "progress       3000 pages  4.0 s  1000 pages/s  0.200 ms CPU/page (0.100 on page threads, 0.040 in the crawl loop)  RSS n/a",
            "no store figure where its threads cannot be read"
        );
        let unknown = Progress {
            page_cpu: None,
            loop_cpu: None,
            ..no_store
        };
        assert_eq!(
            unknown.line(&at(1000, 2, 500), None),
            "progress       3000 pages  4.0 s  1000 pages/s  0.200 ms CPU/page  RSS n/a",
        );
    }

    #[test]
    fn the_pace_splits_the_crawl_at_its_first_and_ninth_tenth() {
        let mut tenths = Tenths::new(1000);
        for now in [
            at(50, 1, 10),
            at(120, 4, 40),
            at(500, 6, 60),
            at(880, 8, 80),
        ] {
            tenths.observe(now);
        }
        assert_eq!(tenths.pace(at(950, 9, 90)), None, "nine tenths not seen");
        tenths.observe(at(950, 9, 90));
        let pace = tenths.pace(at(1000, 10, 100)).unwrap();
        assert_eq!(pace.first_tenth.pages_per_sec, 30.0, "120 pages in 4 s");
        assert_eq!(pace.middle.pages_per_sec, 830.0 / 5.0, "120 → 950 in 5 s");
        assert_eq!(pace.last_tenth.pages_per_sec, 50.0, "950 → 1000 in 1 s");
        assert!((pace.middle.cpu_ms_per_page - 50.0 / 830.0).abs() < 1e-9);
        assert_eq!(
            pace.render(),
            "first tenth    30 pages/s (0.18 of 10 % to 90 %), 0.333 ms CPU/page (0.167 on page threads, 0.067 in the crawl loop, 0.033 in store workers)\n\
             10 % to 90 %   166 pages/s, 0.060 ms CPU/page (0.030 on page threads, 0.012 in the crawl loop, 0.006 in store workers)\n\
             last tenth     50 pages/s (0.30 of 10 % to 90 %), 0.200 ms CPU/page (0.100 on page threads, 0.040 in the crawl loop, 0.020 in store workers)\n"
        );
    }

    #[test]
    fn a_polite_bench_is_compared_with_hosts_over_delay() {
        let polite = Politeness {
            delay: Duration::from_secs(1),
            hosts: 2000,
        };
        assert_eq!(polite.allowed_pages_per_sec(), 2000.0);
        let rate = |pages_per_sec| Rate {
            pages_per_sec,
            cpu_ms_per_page: 0.2,
            page_cpu_ms_per_page: None,
            loop_cpu_ms_per_page: None,
            store_cpu_ms_per_page: None,
        };
        let pace = Pace {
            first_tenth: rate(900.0),
            middle: rate(1980.0),
            last_tenth: rate(1500.0),
        };
        assert_eq!(
            polite.render(Some(&pace)),
            "politeness     1s between requests to a host, one at a time, 2000 hosts: 2000 pages/s allowed\n\
             sustained      1980 pages/s from 10 % to 90 % of the pages, 99.0 % of what politeness allows\n"
        );
    }
}
