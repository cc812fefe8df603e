//! `bench --rounds N`: the same measure taken N times in one sitting, each
//! round's figures on a line and their medians, so one disturbed run does
//! not decide a comparison on a shared, noisy machine.

use super::{ArchiveMeasure, BenchReport};

/// One round's figures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RoundFigures {
    pub pages_per_sec: f64,
    pub cpu_ms_per_page: Option<f64>,
    /// From 10 % to 90 % of the pages: pages/s and CPU a page.
    pub middle: Option<(f64, f64)>,
    pub peak_rss_bytes: Option<u64>,
    /// With `--archive-floor`: what the archive added a page, and that ÷ the floor.
    pub archive_adds: Option<(f64, f64)>,
}

impl RoundFigures {
    pub fn of(report: &BenchReport) -> RoundFigures {
        let archive_adds = match &report.archive {
            ArchiveMeasure::WithFloor(floor) => report
                .cpu_ms_per_page()
                .and_then(|with| floor.adds(report.pages, with)),
            _ => None,
        };
        RoundFigures {
            pages_per_sec: report.pages_per_sec(),
            cpu_ms_per_page: report.cpu_ms_per_page(),
            middle: report
                .pace
                .map(|pace| (pace.middle.pages_per_sec, pace.middle.cpu_ms_per_page)),
            peak_rss_bytes: report.peak_rss_bytes,
            archive_adds,
        }
    }

    /// `3080 pages/s, 0.554 ms CPU/page; 10 % to 90 % …; peak RSS …; archive adds …`
    fn render(&self) -> String {
        let mut parts = vec![match self.cpu_ms_per_page {
            Some(cpu) => format!("{:.0} pages/s, {cpu:.3} ms CPU/page", self.pages_per_sec),
            None => format!("{:.0} pages/s", self.pages_per_sec),
        }];
        if let Some((pages_per_sec, cpu)) = self.middle {
            parts.push(format!(
                "10 % to 90 % {pages_per_sec:.0} pages/s, {cpu:.3} ms CPU/page"
            ));
        }
        if let Some(rss) = self.peak_rss_bytes {
            parts.push(format!("peak RSS {:.0} MB", rss as f64 / 1e6));
        }
        if let Some((adds, ratio)) = self.archive_adds {
            parts.push(format!(
                "archive adds {adds:.3} ms CPU/page, {ratio:.2}× the floor"
            ));
        }
        parts.join("; ")
    }
}

/// Every round's figures, in the order run.
#[derive(Debug, Clone, PartialEq)]
pub struct Rounds(pub Vec<RoundFigures>);

impl Rounds {
    /// Each figure's median over the rounds, taken figure by figure (the
    /// medians may come from different rounds); `None` for none.
    pub fn median(&self) -> Option<RoundFigures> {
        let rounds = &self.0;
        // The median of one figure over the rounds that have it.
        let of = |figure: &dyn Fn(&RoundFigures) -> Option<f64>| {
            median(rounds.iter().filter_map(figure).collect())
        };
        Some(RoundFigures {
            pages_per_sec: of(&|r| Some(r.pages_per_sec))?,
            cpu_ms_per_page: of(&|r| r.cpu_ms_per_page),
            middle: of(&|r| r.middle.map(|m| m.0)).zip(of(&|r| r.middle.map(|m| m.1))),
            peak_rss_bytes: of(&|r| r.peak_rss_bytes.map(|b| b as f64)).map(|b| b as u64),
            archive_adds: of(&|r| r.archive_adds.map(|a| a.0))
                .zip(of(&|r| r.archive_adds.map(|a| a.1))),
        })
    }

    pub fn render(&self) -> String {
        let mut out = format!(
            "rounds         {}; the report above is the last round's\n",
            self.0.len()
        );
        for (i, round) in self.0.iter().enumerate() {
            out.push_str(&format!(
                "{:<15}{}\n",
                format!("round {}", i + 1),
                round.render()
            ));
        }
        if let Some(median) = self.median() {
            out.push_str(&format!(
                "median         {} (each figure's own median)\n",
                median.render()
            ));
        }
        out
    }
}

/// The middle value; the mean of the two middle ones for an even count.
fn median(mut values: Vec<f64>) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(values[n / 2]),
        _ => Some((values[n / 2 - 1] + values[n / 2]) / 2.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(pages_per_sec: f64, cpu: f64, ratio: Option<f64>) -> RoundFigures {
        RoundFigures {
            pages_per_sec,
            cpu_ms_per_page: Some(cpu),
            middle: Some((pages_per_sec + 100.0, cpu - 0.01)),
            peak_rss_bytes: Some(80_000_000),
            archive_adds: ratio.map(|r| (0.1 * r, r)),
        }
    }

    #[test]
    fn the_median_of_an_odd_count_is_the_middle_one_and_of_an_even_the_mean_of_two() {
        assert_eq!(median(vec![]), None);
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), Some(2.5));
    }

    #[test]
    fn each_figure_takes_its_own_median_so_one_disturbed_round_decides_nothing() {
        let rounds = Rounds(vec![
            round(3000.0, 0.55, Some(1.5)),
            round(1200.0, 0.90, Some(3.0)),
            round(3100.0, 0.54, Some(1.4)),
        ]);
        let median = rounds.median().unwrap();
        assert_eq!(median.pages_per_sec, 3000.0);
        assert_eq!(median.cpu_ms_per_page, Some(0.55));
        assert_eq!(median.archive_adds.map(|a| a.1), Some(1.5));
        let text = rounds.render();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 5, "{text}");
        assert!(lines[0].starts_with("rounds         3;"), "{text}");
        assert_eq!(
            lines[2],
            "round 2        1200 pages/s, 0.900 ms CPU/page; 10 % to 90 % 1300 pages/s, 0.890 ms CPU/page; peak RSS 80 MB; archive adds 0.300 ms CPU/page, 3.00× the floor"
        );
        assert!(
            lines[4].starts_with("median         3000 pages/s, 0.550 ms CPU/page;"),
            "{text}"
        );
        assert!(lines[4].contains("1.50× the floor"), "{text}");
    }

    #[test]
    fn rounds_without_the_archive_or_its_floor_say_nothing_of_them() {
        let rounds = Rounds(vec![round(3000.0, 0.5, None), round(2000.0, 0.6, None)]);
        let median = rounds.median().unwrap();
        assert_eq!(median.pages_per_sec, 2500.0);
        assert_eq!(median.archive_adds, None);
        assert!(!rounds.render().contains("archive"));
    }
}
