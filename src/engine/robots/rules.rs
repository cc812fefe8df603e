//! Parsed robots.txt rules for one host (RFC 9309 matching via texting_robots).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use texting_robots::Robot;
use url::{Position, Url};

use crate::engine::config::token_part;

/// Which group of a robots.txt applied to us (shown in the host view).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RobotsGroup {
    /// A group naming our product token (`User-agent: AcmeBot/2.0` counts).
    ByName,
    /// The `*` group, or a file without any User-agent line.
    Wildcard,
    /// Neither: no rule applies to us.
    NoGroup,
}

/// The rules of the group that applies to our product token, plus the
/// file-wide Crawl-delay and Sitemap lines.
#[derive(Clone)]
pub struct RobotsRules {
    robot: Arc<Robot>,
    group: RobotsGroup,
    crawl_delay: Option<Duration>,
    sitemaps: Vec<String>,
    /// Allow/Disallow lines left out: impossible to compile.
    dropped_lines: usize,
}

impl fmt::Debug for RobotsRules {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RobotsRules")
            .field("group", &self.group)
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
        let (text, group) = prepare(body, product_token);
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
            group,
            crawl_delay,
            sitemaps,
            dropped_lines,
        }
    }

    /// Whether `url`'s path and query may be fetched (longest match wins; a tie goes to Allow).
    pub fn allowed(&self, url: &Url) -> bool {
        let target = escape_rule_specials(normalize_escapes(
            &url[Position::BeforePath..Position::AfterQuery],
        ));
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

    /// Which group of the file applied to us.
    pub fn group(&self) -> RobotsGroup {
        self.group
    }

    pub fn sitemaps(&self) -> &[String] {
        &self.sitemaps
    }

    #[cfg(test)]
    pub fn dropped_lines(&self) -> usize {
        self.dropped_lines
    }
}

/// Sitemap lines kept per file.
const MAX_SITEMAPS: usize = 64;

/// The body up to the size limit, without a last line the limit cut in two
/// (RFC 9309 §2.5: parse the first `max_size` bytes; half a rule is no rule).
/// A body within the limit is returned whole.
pub fn complete_lines(body: &[u8], max_size: u64) -> &[u8] {
    let max = usize::try_from(max_size).unwrap_or(usize::MAX);
    if body.len() <= max {
        return body;
    }
    let head = &body[..max];
    match head.iter().rposition(|&b| b == b'\n' || b == b'\r') {
        Some(end) => &head[..=end],
        None => &[],
    }
}

/// The product token of a User-agent value: `AcmeBot/2.0 (+url)` → `AcmeBot`,
/// by the rule that derives our own token from our User-Agent.
fn agent_token(agent: &[u8]) -> &[u8] {
    std::str::from_utf8(agent).map_or(agent, |a| token_part(a).as_bytes())
}

/// The parser rejects a whole file when one pattern is too large to compile;
/// keep every line but the Allow/Disallow lines that fail on their own.
fn parse_usable_lines(text: &[u8], product_token: &str) -> (Robot, usize) {
    let mut kept = Vec::with_capacity(text.len());
    let mut dropped = 0;
    for line in text.split(|&b| b == b'\n') {
        let usable = !matches!(classify(line), Line::Rule { .. }) || {
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

/// A robots.txt line as the parser sees it (same field spellings).
enum Line<'a> {
    Agent(&'a [u8]),
    Rule {
        allow: bool,
        path: &'a [u8],
    },
    /// Crawl-delay: ends a run of User-agent lines like a rule does.
    Delay,
    Other,
}

const AGENT_FIELDS: [&str; 3] = ["user-agent", "user agent", "useragent"];
const ALLOW_FIELDS: [&str; 1] = ["allow"];
const DISALLOW_FIELDS: [&str; 6] = [
    "disallow",
    "dissallow",
    "dissalow",
    "disalow",
    "diasllow",
    "disallaw",
];
const DELAY_FIELDS: [&str; 3] = ["crawl-delay", "crawl delay", "crawldelay"];

fn classify(line: &[u8]) -> Line<'_> {
    let line = line.trim_ascii_start();
    let value_of = |names: &[&str]| {
        names.iter().find_map(|name| {
            let head = line.get(..name.len())?;
            if !head.eq_ignore_ascii_case(name.as_bytes()) {
                return None;
            }
            // "Field: value", "Field : value" or "Field value".
            let rest = &line[name.len()..];
            let after = rest.trim_ascii_start();
            let value = if let Some(v) = after.strip_prefix(b":") {
                v
            } else if rest.first().is_some_and(|b| *b == b' ' || *b == b'\t') {
                after
            } else {
                return None;
            };
            let end = value.iter().position(|&b| b == b'#').unwrap_or(value.len());
            Some(value[..end].trim_ascii())
        })
    };
    if let Some(agent) = value_of(&AGENT_FIELDS) {
        Line::Agent(agent)
    } else if let Some(path) = value_of(&DISALLOW_FIELDS) {
        Line::Rule { allow: false, path }
    } else if let Some(path) = value_of(&ALLOW_FIELDS) {
        Line::Rule { allow: true, path }
    } else if value_of(&DELAY_FIELDS).is_some() {
        Line::Delay
    } else {
        Line::Other
    }
}

/// Rewrites the body for the parser: one `\n` per line ending (the parser
/// also ends lines at a lone `\r`); Allow/Disallow lines kept only in the
/// groups the parser will pick (ours, else `*`), with paths passed through
/// [`normalize_escapes`] so `/%7Ejoe` and `/~joe` compare equal; User-agent
/// lines cut to their product token; a leading UTF-8 BOM dropped. Every rule
/// is kept: memory is bounded by `robots.max_size`. Returns the text and the
/// group that applies.
fn prepare(body: &[u8], product_token: &str) -> (Vec<u8>, RobotsGroup) {
    let body = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);
    let text = String::from_utf8_lossy(body)
        .replace("\r\n", "\n")
        .replace('\r', "\n");
    let lines: Vec<&[u8]> = text.as_bytes().split(|&b| b == b'\n').collect();
    let has_agents = lines.iter().any(|l| matches!(classify(l), Line::Agent(_)));
    let token = product_token.as_bytes();
    // Like the parser: our own group(s) if the file names us, else the `*` group(s).
    let names = |wanted: &[u8]| {
        lines.iter().any(
            |l| matches!(classify(l), Line::Agent(a) if agent_token(a).eq_ignore_ascii_case(wanted)),
        )
    };
    let (target, group): (&[u8], _) = if names(token) {
        (token, RobotsGroup::ByName)
    } else if !has_agents || names(b"*") {
        (b"*", RobotsGroup::Wildcard)
    } else {
        (b"*", RobotsGroup::NoGroup)
    };

    let mut out = Vec::with_capacity(text.len().min(body.len() + 64));
    // Without any User-agent line every rule applies to everyone.
    let mut relevant = !has_agents;
    let mut in_agent_run = false;
    // An empty rule does nothing (RFC 9309), but the parser reads an empty
    // `Disallow:` as `Allow: /`, which would beat `Disallow: /` in a tie: it
    // is kept only for a group with no other rule, where it means "allow all".
    let mut empty_rule = false;
    let mut group_has_rules = false;
    for line in lines {
        match classify(line) {
            Line::Agent(agent) => {
                if !in_agent_run {
                    if std::mem::take(&mut empty_rule) && !group_has_rules {
                        out.extend_from_slice(b"Disallow:\n");
                    }
                    group_has_rules = false;
                    relevant = false;
                    in_agent_run = true;
                }
                let agent = agent_token(agent);
                relevant |= agent.eq_ignore_ascii_case(target);
                // The parser compares whole values: give it the token only.
                out.extend_from_slice(b"User-agent: ");
                out.extend_from_slice(agent);
            }
            Line::Rule { allow, path } => {
                in_agent_run = false;
                if !relevant {
                    continue;
                }
                if path.iter().all(u8::is_ascii_whitespace) {
                    empty_rule = true;
                    continue;
                }
                group_has_rules = true;
                out.extend_from_slice(if allow { b"Allow: " } else { b"Disallow: " });
                out.extend_from_slice(normalize_escapes(&String::from_utf8_lossy(path)).as_bytes());
            }
            Line::Delay => {
                in_agent_run = false;
                out.extend_from_slice(line);
            }
            Line::Other => out.extend_from_slice(line),
        }
        out.push(b'\n');
    }
    if empty_rule && !group_has_rules {
        out.extend_from_slice(b"Disallow:\n");
    }
    (out, group)
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

/// In a rule `$` and `*` are special and `%24`/`%2A` stand for the
/// characters (RFC 9309 §2.2.3); in a URL they are plain characters, so the
/// URL writes them escaped to meet the rules' form.
fn escape_rule_specials(target: String) -> String {
    if !target.contains(['$', '*']) {
        return target;
    }
    target.replace('$', "%24").replace('*', "%2A")
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}
