//! Calendars and counters: links whose only difference from their parent is
//! numbers that keep moving the same way, hop after hop.

use url::Url;

use super::{anchored_rule, hash_str, Detection, GenMap};
use crate::engine::config::TrapConfig;
use crate::engine::telemetry::TrapKind;

/// Digit runs longer than this are identifiers, not counters.
const MAX_COUNTER_DIGITS: usize = 9;
/// Numbers considered per URL: one bit each in [`Run::changed`].
const MAX_NUMBERS: usize = 16;
const _: () = assert!(MAX_NUMBERS <= u16::BITS as usize);
/// URLs remembered per host for the runs (per generation): 7/8 of 2048, so
/// that a full generation fits a hash table of 2048 slots (2048 entries
/// took 4096; with 200 hosts the runs held 36–54 MB).
const RUN_MEMORY: usize = 1792;
/// A page counter (no date in it) must run this many times longer than
/// `max_counter_run`: finite listings of a few hundred pages are normal,
/// while a month-by-month calendar is judged at the configured value.
pub const PLAIN_COUNTER_FACTOR: usize = 8;

/// The run that led to a URL. Its template is not kept: the entry's key is
/// the URL, whose shape gives the template again.
#[derive(Clone, Copy)]
struct Run {
    /// +1 increasing, -1 decreasing.
    direction: i8,
    length: u32,
    /// Which numbers changed somewhere along the run (bit per index).
    changed: u16,
}

impl Run {
    /// One word a run, so a host's runs take 16 bytes an entry.
    fn pack(self) -> u64 {
        u64::from(self.length) | u64::from(self.changed) << 32 | u64::from(self.direction > 0) << 48
    }

    fn unpack(word: u64) -> Run {
        Run {
            direction: if word >> 48 & 1 == 1 { 1 } else { -1 },
            length: word as u32,
            changed: (word >> 32) as u16,
        }
    }
}

#[derive(Default)]
pub struct CounterState {
    /// Packed runs ([`Run::pack`]) by the hash of the URL they led to.
    runs: Option<GenMap<u64, u64>>,
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
            .fold(0u16, |m, (i, _)| m | (1 << i));
        let runs = self.runs.get_or_insert_with(|| GenMap::new(RUN_MEMORY));
        let run = match runs
            .get(&hash_str(parent.as_str()))
            .map(|r| Run::unpack(*r))
        {
            Some(r) if r.direction == direction => Run {
                length: r.length.saturating_add(1),
                changed: r.changed | changed,
                ..r
            },
            _ => Run {
                direction,
                length: 1,
                changed,
            },
        };
        let child_key = hash_str(child.as_str());
        match runs.get(&child_key).map(|r| Run::unpack(*r)) {
            Some(old) if old.length >= run.length => {}
            _ => runs.insert(child_key, run.pack()),
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

#[cfg(test)]
mod tests {
    use super::Run;

    #[test]
    fn a_packed_run_unpacks_to_itself() {
        for (direction, length, changed) in [(1, 1, 1), (-1, u32::MAX, u16::MAX), (1, 25, 0x8001)] {
            let run = Run::unpack(
                Run {
                    direction,
                    length,
                    changed,
                }
                .pack(),
            );
            assert_eq!(
                (run.direction, run.length, run.changed),
                (direction, length, changed)
            );
        }
    }
}
