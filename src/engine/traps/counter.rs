//! Calendars and counters: links whose only difference from their parent is
//! numbers that keep moving the same way, hop after hop.

use url::Url;

use super::{anchored_rule, hash_str, Detection, GenMap};
use crate::engine::config::TrapConfig;
use crate::engine::telemetry::TrapKind;

/// Digit runs longer than this are identifiers, not counters.
const MAX_COUNTER_DIGITS: usize = 9;
/// Numbers considered per URL.
const MAX_NUMBERS: usize = 16;
/// URLs remembered per host for the runs (per generation).
const RUN_MEMORY: usize = 2048;
/// A page counter (no date in it) must run this many times longer than
/// `max_counter_run`: finite listings of a few hundred pages are normal,
/// while a month-by-month calendar is judged at the configured value.
pub const PLAIN_COUNTER_FACTOR: usize = 8;

#[derive(Clone, Copy)]
struct Run {
    template: u64,
    /// +1 increasing, -1 decreasing.
    direction: i8,
    length: u32,
    /// Which numbers changed somewhere along the run (bit per index).
    changed: u32,
}

#[derive(Default)]
pub struct CounterState {
    runs: Option<GenMap<u64, Run>>,
}

impl CounterState {
    pub fn on_link(
        &mut self,
        cfg: &TrapConfig,
        host: &str,
        parent: &Url,
        child: &Url,
    ) -> Option<Detection> {
        let p = Shape::of(parent);
        let c = Shape::of(child);
        if p.template != c.template || c.numbers.is_empty() {
            return None;
        }
        let p_values: Vec<u64> = p.numbers.iter().map(|n| n.value).collect();
        let c_values: Vec<u64> = c.numbers.iter().map(|n| n.value).collect();
        let direction = match c_values.cmp(&p_values) {
            std::cmp::Ordering::Greater => 1,
            std::cmp::Ordering::Less => -1,
            std::cmp::Ordering::Equal => return None,
        };
        let changed = p_values
            .iter()
            .zip(&c_values)
            .enumerate()
            .filter(|(_, (a, b))| a != b)
            .fold(0u32, |m, (i, _)| m | (1 << i));
        let template = hash_str(&c.template);
        let runs = self.runs.get_or_insert_with(|| GenMap::new(RUN_MEMORY));
        let run = match runs.get(&hash_str(parent.as_str())) {
            Some(r) if r.template == template && r.direction == direction => Run {
                length: r.length.saturating_add(1),
                changed: r.changed | changed,
                ..*r
            },
            _ => Run {
                template,
                direction,
                length: 1,
                changed,
            },
        };
        let child_key = hash_str(child.as_str());
        match runs.get(&child_key) {
            Some(old) if old.length >= run.length => {}
            _ => runs.insert(child_key, run),
        }
        let limit = if c.date_like() {
            cfg.max_counter_run
        } else {
            cfg.max_counter_run.saturating_mul(PLAIN_COUNTER_FACTOR)
        };
        if (run.length as usize) <= limit {
            return None;
        }
        // The rule starts where the first moving number starts.
        let first = c.numbers.get(run.changed.trailing_zeros() as usize)?;
        let prefix = &c.rest[..first.start];
        Some(Detection {
            host: host.to_string(),
            kind: TrapKind::Counter,
            evidence_count: u64::from(run.length),
            samples: vec![parent.to_string(), child.to_string()],
            rule: anchored_rule(child, host, prefix, r"\d"),
        })
    }
}

struct Number {
    value: u64,
    digits: usize,
    /// Byte offset in `rest`.
    start: usize,
}

/// A URL's path and query with short digit runs replaced by `#`.
struct Shape {
    rest: String,
    template: String,
    numbers: Vec<Number>,
}

impl Shape {
    fn of(url: &Url) -> Shape {
        let rest = match url.query() {
            Some(q) => format!("{}?{q}", url.path()),
            None => url.path().to_string(),
        };
        let mut template = String::with_capacity(rest.len());
        let mut numbers = Vec::new();
        let bytes = rest.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i].is_ascii_digit() {
                let start = i;
                while i < bytes.len() && bytes[i].is_ascii_digit() {
                    i += 1;
                }
                let digits = &rest[start..i];
                if digits.len() <= MAX_COUNTER_DIGITS && numbers.len() < MAX_NUMBERS {
                    template.push('#');
                    numbers.push(Number {
                        value: digits.parse().unwrap_or(0),
                        digits: digits.len(),
                        start,
                    });
                } else {
                    template.push_str(digits);
                }
            } else {
                let next = rest[i..].chars().next().map_or(1, char::len_utf8);
                template.push_str(&rest[i..i + next]);
                i += next;
            }
        }
        Shape {
            rest,
            template,
            numbers,
        }
    }

    /// A year followed by a month (`2024/05`, `2024-05`), or a compact
    /// `yyyymm` / `yyyymmdd`.
    fn date_like(&self) -> bool {
        let year = |v: u64| (1900..=2199).contains(&v);
        let month = |v: u64| (1..=12).contains(&v);
        self.numbers.iter().enumerate().any(|(i, n)| {
            let pair = n.digits == 4
                && year(n.value)
                && self
                    .numbers
                    .get(i + 1)
                    .is_some_and(|m| m.digits <= 2 && month(m.value));
            let compact = match n.digits {
                6 => year(n.value / 100) && month(n.value % 100),
                8 => year(n.value / 10_000) && month(n.value / 100 % 100),
                _ => false,
            };
            pair || compact
        })
    }
}
