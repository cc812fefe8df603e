//! Parsed robots.txt rules for one host (RFC 9309 matching via texting_robots).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use texting_robots::Robot;
use url::{Position, Url};

/// The rules of the group that applies to our product token, plus the
/// file-wide Crawl-delay and Sitemap lines.
#[derive(Clone)]
pub struct RobotsRules {
    robot: Arc<Robot>,
    crawl_delay: Option<Duration>,
    sitemaps: Vec<String>,
    /// Allow/Disallow lines left out because they could not be compiled.
    dropped_lines: usize,
}

impl fmt::Debug for RobotsRules {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RobotsRules")
            .field("crawl_delay", &self.crawl_delay)
            .field("sitemaps", &self.sitemaps)
            .field("dropped_lines", &self.dropped_lines)
            .finish_non_exhaustive()
    }
}

impl RobotsRules {
    /// Parses a robots.txt body for `product_token` (e.g. `crawldeck`, not the
    /// whole User-Agent). Never fails: lines that cannot be used are skipped,
    /// as RFC 9309 asks. CPU-bound on large files; call it off the async runtime.
    pub fn parse(body: &[u8], product_token: &str, max_crawl_delay: Duration) -> RobotsRules {
        let text = normalize_rule_lines(body);
        let (robot, dropped_lines) = match Robot::new(product_token, &text) {
            Ok(robot) => (robot, 0),
            Err(_) => parse_usable_lines(&text, product_token),
        };
        let crawl_delay = robot
            .delay
            .filter(|d| d.is_finite() && *d > 0.0)
            .and_then(|d| Duration::try_from_secs_f32(d).ok())
            .map(|d| d.min(max_crawl_delay));
        let sitemaps = robot
            .sitemaps
            .iter()
            .take(MAX_SITEMAPS)
            .map(|s| crate::text::strip_control(s.trim()).into_owned())
            .filter(|s| !s.is_empty())
            .collect();
        RobotsRules {
            robot: Arc::new(robot),
            crawl_delay,
            sitemaps,
            dropped_lines,
        }
    }

    /// Whether `url`'s path and query may be fetched (longest match wins; a tie goes to Allow).
    pub fn allowed(&self, url: &Url) -> bool {
        let target = normalize_escapes(&url[Position::BeforePath..Position::AfterQuery]);
        let target = if target.is_empty() {
            "/".to_string()
        } else {
            target
        };
        self.robot.allowed(&target)
    }

    /// Crawl-delay of our group (or the file's leading one), capped at `max_crawl_delay`.
    pub fn crawl_delay(&self) -> Option<Duration> {
        self.crawl_delay
    }

    pub fn sitemaps(&self) -> &[String] {
        &self.sitemaps
    }

    pub fn dropped_lines(&self) -> usize {
        self.dropped_lines
    }
}

/// Sitemap lines kept per file.
const MAX_SITEMAPS: usize = 64;

/// The parser rejects a whole file when one pattern is too large to compile;
/// keep every line but the Allow/Disallow lines that fail on their own.
fn parse_usable_lines(text: &[u8], product_token: &str) -> (Robot, usize) {
    let mut kept = Vec::with_capacity(text.len());
    let mut dropped = 0;
    for line in text.split(|&b| b == b'\n') {
        let usable = !is_rule_line(line) || {
            let mut probe = b"User-agent: *\n".to_vec();
            probe.extend_from_slice(line);
            Robot::new("probe", &probe).is_ok()
        };
        if usable {
            kept.extend_from_slice(line);
            kept.push(b'\n');
        } else {
            dropped += 1;
        }
    }
    match Robot::new(product_token, &kept) {
        Ok(robot) => (robot, dropped),
        // Nothing usable: no rules means no restrictions (RFC 9309 §2.2.2).
        Err(_) => (
            Robot::new(product_token, b"").expect("an empty robots.txt parses"),
            dropped.max(1),
        ),
    }
}

fn rule_field(line: &[u8]) -> Option<(&[u8], &[u8])> {
    let colon = line.iter().position(|&b| b == b':')?;
    let field = line[..colon].trim_ascii();
    let is_rule = field.eq_ignore_ascii_case(b"allow") || field.eq_ignore_ascii_case(b"disallow");
    is_rule.then(|| (&line[..=colon], &line[colon + 1..]))
}

fn is_rule_line(line: &[u8]) -> bool {
    rule_field(line).is_some()
}

/// Rewrites the paths of Allow/Disallow lines with [`normalize_escapes`] so that
/// `/%7Ejoe` and `/~joe` compare equal on both sides.
fn normalize_rule_lines(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len());
    for (i, line) in body.split(|&b| b == b'\n').enumerate() {
        if i > 0 {
            out.push(b'\n');
        }
        match rule_field(line) {
            Some((field, value)) if value.contains(&b'%') => {
                out.extend_from_slice(field);
                let value = String::from_utf8_lossy(value);
                out.extend_from_slice(normalize_escapes(&value).as_bytes());
            }
            _ => out.extend_from_slice(line),
        }
    }
    out
}

/// Decodes `%XX` escapes of unreserved characters and uppercases the others, so
/// `%7e`, `%7E` and `~` are one thing while `%2F` stays distinct from `/`.
pub fn normalize_escapes(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                let byte = h * 16 + l;
                if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
                    out.push(byte as char);
                } else {
                    out.push('%');
                    out.push(bytes[i + 1].to_ascii_uppercase() as char);
                    out.push(bytes[i + 2].to_ascii_uppercase() as char);
                }
                i += 3;
                continue;
            }
        }
        let ch = s[i..].chars().next().expect("index is on a char boundary");
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}
