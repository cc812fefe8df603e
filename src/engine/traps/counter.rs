//! Calendars and counters: links whose only difference from their parent is
//! numbers that keep moving the same way, hop after hop.

use crate::engine::url_norm::UrlParts;

use super::{anchored_rule, hash_str, Detection, GenMap, LinkParent};
use crate::engine::config::TrapConfig;
use crate::engine::telemetry::TrapKind;

/// Digit runs longer than this are identifiers, not counters.
const MAX_COUNTER_DIGITS: usize = 9;
/// Numbers considered per URL: one bit each in [`Run::changed`].
const MAX_NUMBERS: usize = 16;
const _: () = assert!(MAX_NUMBERS <= u16::BITS as usize);
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

/// A URL's key among its host's runs, from its [`hash_str`]: 32 bits of
/// it. Two of the ~3,600 URLs a host remembers share one about once in a
/// million lookups; a run is then counted on from the wrong parent.
fn run_key(url_hash: u64) -> u32 {
    url_hash as u32
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
        parent: &LinkParent,
        child: &impl UrlParts,
        memory: usize,
    ) -> Option<Detection> {
        let p = &parent.shape;
        let c = Shape::of(child);
        if c.count == 0 || !p.same_template(&c) {
            return None;
        }
        let direction = match c.values().cmp(p.values()) {
            std::cmp::Ordering::Greater => 1,
            std::cmp::Ordering::Less => -1,
            std::cmp::Ordering::Equal => return None,
        };
        let changed = p
            .values()
            .zip(c.values())
            .enumerate()
            .filter(|(_, (a, b))| a != b)
            .fold(0u16, |m, (i, _)| m | (1 << i));
        let runs = GenMap::capped(&mut self.runs, memory);
        let run = match runs.get(&run_key(parent.hash)).map(|r| Run::unpack(*r)) {
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
        let child_key = run_key(hash_str(child.as_str()));
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
        let first = c.numbers().get(run.changed.trailing_zeros() as usize)?;
        let prefix = &c.rest[..first.start];
        Some(Detection {
            host: host.to_string(),
            kind: TrapKind::Counter,
            evidence_count: u64::from(run.length),
            samples: vec![parent.url.to_string(), child.as_str().to_string()],
            rule: anchored_rule(child, host, prefix, r"\d"),
        })
    }
}

#[derive(Clone, Copy, Default)]
struct Number {
    value: u64,
    digits: usize,
    /// Byte offset in `rest`.
    start: usize,
}

/// A URL's path and query and the short digit runs in it, the numbers a
/// counter moves; the rest, each number read as `#`, is its template. Built
/// for every new link (and once for their page), so it borrows and
/// allocates nothing.
pub(super) struct Shape<'a> {
    rest: &'a str,
    numbers: [Number; MAX_NUMBERS],
    count: usize,
}

impl<'a> Shape<'a> {
    pub(super) fn of(url: &'a impl UrlParts) -> Shape<'a> {
        let rest = url.path_and_query();
        let mut shape = Shape {
            rest,
            numbers: [Number::default(); MAX_NUMBERS],
            count: 0,
        };
        let bytes = rest.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            if !bytes[i].is_ascii_digit() {
                i += 1;
                continue;
            }
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            let digits = i - start;
            // Longer runs, and runs past the last counted, stay in the template.
            if digits <= MAX_COUNTER_DIGITS && shape.count < MAX_NUMBERS {
                shape.numbers[shape.count] = Number {
                    value: rest[start..i].parse().unwrap_or(0),
                    digits,
                    start,
                };
                shape.count += 1;
            }
        }
        shape
    }

    fn numbers(&self) -> &[Number] {
        &self.numbers[..self.count]
    }

    fn values(&self) -> impl Iterator<Item = u64> + '_ {
        self.numbers().iter().map(|n| n.value)
    }

    /// Whether both have one template: the same text between their numbers.
    fn same_template(&self, other: &Shape) -> bool {
        self.count == other.count && self.between_numbers().eq(other.between_numbers())
    }

    fn between_numbers(&self) -> impl Iterator<Item = &str> + '_ {
        let ends = self.numbers().iter().map(|n| n.start + n.digits);
        let starts = self.numbers().iter().map(|n| n.start);
        std::iter::once(0)
            .chain(ends)
            .zip(starts.chain(std::iter::once(self.rest.len())))
            .map(|(from, to)| &self.rest[from..to])
    }

    /// A year followed by a month (`2024/05`, `2024-05`), or a compact
    /// `yyyymm` / `yyyymmdd`.
    fn date_like(&self) -> bool {
        let year = |v: u64| (1900..=2199).contains(&v);
        let month = |v: u64| (1..=12).contains(&v);
        self.numbers().iter().enumerate().any(|(i, n)| {
            let pair = n.digits == 4
                && year(n.value)
                && self
                    .numbers()
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
    use super::{Run, Shape, LONGEST_RUN, MAX_COUNTER_DIGITS, MAX_NUMBERS};
    use url::Url;

    /// The template spelled out: the path and query with each counted
    /// number as `#`.
    fn template(shape: &Shape) -> String {
        let mut out = String::new();
        let mut from = 0;
        for n in shape.numbers() {
            out.push_str(&shape.rest[from..n.start]);
            out.push('#');
            from = n.start + n.digits;
        }
        out + &shape.rest[from..]
    }

    #[test]
    fn a_shape_reads_short_digit_runs_as_numbers() {
        let url = Url::parse("http://a.test:8080/cal/2024/05/?page=3&id=12345678901").unwrap();
        let shape = Shape::of(&url);
        assert_eq!(template(&shape), "/cal/#/#/?page=#&id=12345678901");
        assert_eq!(shape.values().collect::<Vec<_>>(), [2024, 5, 3]);
        assert!(shape.date_like());
        let many = format!("http://a.test/{}", "1/".repeat(MAX_NUMBERS + 2));
        let url = Url::parse(&many).unwrap();
        assert_eq!(Shape::of(&url).count, MAX_NUMBERS, "the rest stay literal");
        assert!(template(&Shape::of(&url)).ends_with("#/1/1/"));
        assert_eq!(MAX_COUNTER_DIGITS, 9, "the id above is one digit longer");
    }

    #[test]
    fn same_template_is_equal_templates() {
        let urls = [
            "http://a.test/",
            "http://a.test/p/1",
            "http://a.test/p/22",
            "http://a.test/p/1?",
            "http://a.test/p/1?x",
            "http://a.test/p1/1",
            "http://a.test/p/1/2",
            "http://a.test/p/a1b2",
            "http://a.test/p/a3b4",
            "http://a.test/p/a3b",
            "http://a.test/p/1234567890",
            "http://a.test/p/1234567891",
            "http://a.test/p/\u{e9}1",
            "http://a.test/p/\u{e9}7",
            "http://a.test/cal?y=2024&m=5",
            "http://a.test/cal?y=2025&m=12",
        ];
        let urls: Vec<Url> = urls.iter().map(|u| Url::parse(u).unwrap()).collect();
        for a in &urls {
            for b in &urls {
                let (sa, sb) = (Shape::of(a), Shape::of(b));
                assert_eq!(
                    sa.same_template(&sb),
                    template(&sa) == template(&sb),
                    "{a} against {b}"
                );
            }
        }
    }

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
