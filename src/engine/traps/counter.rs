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
/// Longest run a packed entry counts ([`Run::pack`]): 15 bits. A run this
/// long is a trap whatever `max_counter_run` says.
const LONGEST_RUN: u16 = (1 << 15) - 1;
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
    /// Up to [`LONGEST_RUN`].
    length: u16,
    /// Which numbers changed somewhere along the run (bit per index).
    changed: u16,
}

impl Run {
    /// 32 bits a run, so a host's runs take 8 bytes an entry: the length
    /// in 15 bits, the direction, the numbers that moved.
    fn pack(self) -> u32 {
        u32::from(self.length.min(LONGEST_RUN))
            | u32::from(self.direction > 0) << 15
            | u32::from(self.changed) << 16
    }

    fn unpack(word: u32) -> Run {
        Run {
            direction: if word >> 15 & 1 == 1 { 1 } else { -1 },
            length: (word as u16) & LONGEST_RUN,
            changed: (word >> 16) as u16,
        }
    }
}

/// A URL's key among its host's runs: 32 bits of its hash. Two of the
/// ~3,600 URLs a host remembers share one about once in a million
/// lookups; a run is then counted on from the wrong parent.
fn run_key(url: &Url) -> u32 {
    hash_str(url.as_str()) as u32
}

#[derive(Default)]
pub struct CounterState {
    /// Packed runs ([`Run::pack`]) by the key of the URL they led to ([`run_key`]).
    runs: Option<GenMap<u32, u32>>,
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
        let run = match runs.get(&run_key(parent)).map(|r| Run::unpack(*r)) {
            Some(r) if r.direction == direction => Run {
                // Stored runs are at most LONGEST_RUN (`pack`): no overflow.
                length: r.length + 1,
                changed: r.changed | changed,
                ..r
            },
            _ => Run {
                direction,
                length: 1,
                changed,
            },
        };
        let child_key = run_key(child);
        match runs.get(&child_key).map(|r| Run::unpack(*r)) {
            Some(old) if old.length >= run.length => {}
            _ => runs.insert(child_key, run.pack()),
        }
        let limit = if c.date_like() {
            cfg.max_counter_run
        } else {
            cfg.max_counter_run.saturating_mul(PLAIN_COUNTER_FACTOR)
        };
        if usize::from(run.length) <= limit.min(usize::from(LONGEST_RUN) - 1) {
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
    use super::{Run, LONGEST_RUN};

    #[test]
    fn a_packed_run_unpacks_to_itself() {
        for (direction, length, changed) in
            [(1, 1, 1), (-1, LONGEST_RUN, u16::MAX), (1, 25, 0x8001)]
        {
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

    #[test]
    fn a_run_longer_than_fifteen_bits_packs_as_the_longest() {
        let run = Run {
            direction: -1,
            length: u16::MAX,
            changed: 3,
        };
        let packed = Run::unpack(run.pack());
        assert_eq!(
            (packed.direction, packed.length, packed.changed),
            (-1, LONGEST_RUN, 3)
        );
    }
}
