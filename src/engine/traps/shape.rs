//! The narrowest pattern that covers a trap's evidence URLs: the parts that
//! vary (numbers, random-looking tokens, words that differ between samples)
//! become character classes, everything else stays literal, and the pattern
//! is anchored at both ends. `/docs/gone-17.html` and `/docs/gone-4.html`
//! give `^https?://h/docs/gone-\d+\.html$`, which leaves `/docs/page-3.html`
//! alone where a directory rule (`^http://h/docs/`) would not.

use url::Url;

use crate::engine::session_ids::random_looking;

/// Distinct shapes joined by `|` before the evidence counts as shapeless.
const MAX_SHAPES: usize = 3;
/// Hex runs at least this long (with letters and digits) are identifiers.
const MIN_HEX_ID: usize = 8;

/// Characters a varying token is made of, narrowest first: a class covers
/// every class before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Class {
    Digits,
    Hex,
    Lower,
    Alnum,
    /// Anything but a path, query or fragment delimiter.
    Any,
}

impl Class {
    fn of(s: &str) -> Class {
        let all = |f: fn(char) -> bool| s.chars().all(f);
        if all(|c| c.is_ascii_digit()) {
            Class::Digits
        } else if all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c)) {
            Class::Hex
        } else if all(|c| c.is_ascii_lowercase()) {
            Class::Lower
        } else if all(|c| c.is_ascii_alphanumeric()) {
            Class::Alnum
        } else {
            Class::Any
        }
    }

    fn regex(self) -> &'static str {
        match self {
            Class::Digits => r"\d",
            Class::Hex => "[0-9a-f]",
            Class::Lower => "[a-z]",
            Class::Alnum => "[0-9A-Za-z]",
            Class::Any => "[^/?#&=]",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Literal(String),
    /// A varying run: its class and the shortest and longest lengths seen.
    Varying(Class, usize, usize),
}

impl Token {
    fn varying(s: &str) -> Token {
        Token::Varying(Class::of(s), s.len(), s.len())
    }

    /// Whether this token may absorb a different one at the same place
    /// (delimiters must match exactly: they give the URL its structure).
    fn merge(&self, other: &Token) -> Option<Token> {
        let delimiter = |t: &Token| matches!(t, Token::Literal(s) if !s.chars().all(|c| c.is_ascii_alphanumeric()));
        if self == other {
            return Some(self.clone());
        }
        if delimiter(self) || delimiter(other) {
            return None;
        }
        let (c1, lo1, hi1) = self.span();
        let (c2, lo2, hi2) = other.span();
        Some(Token::Varying(c1.max(c2), lo1.min(lo2), hi1.max(hi2)))
    }

    fn span(&self) -> (Class, usize, usize) {
        match self {
            Token::Literal(s) => (Class::of(s), s.len(), s.len()),
            Token::Varying(c, lo, hi) => (*c, *lo, *hi),
        }
    }

    fn regex(&self, exact_lengths: bool) -> String {
        match self {
            Token::Literal(s) => regex::escape(s),
            Token::Varying(class, lo, hi) if exact_lengths && lo == hi => {
                format!("{}{{{lo}}}", class.regex())
            }
            Token::Varying(class, lo, hi) if exact_lengths => {
                format!("{}{{{lo},{hi}}}", class.regex())
            }
            Token::Varying(class, _, _) => format!("{}+", class.regex()),
        }
    }
}

/// A URL's path and query as tokens: delimiters and words literal, numbers
/// and random-looking identifiers varying.
fn tokens(url: &Url) -> Vec<Token> {
    let text = match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_string(),
    };
    let mut out = Vec::new();
    let mut rest = text.as_str();
    while let Some(first) = rest.chars().next() {
        let alnum = first.is_ascii_alphanumeric();
        let end = rest
            .find(|c: char| c.is_ascii_alphanumeric() != alnum)
            .unwrap_or(rest.len());
        let (run, tail) = rest.split_at(end);
        rest = tail;
        if !alnum {
            out.push(Token::Literal(run.to_string()));
        } else if random_looking(run) || hex_id(run) {
            out.push(Token::varying(run));
        } else {
            out.extend(words_and_numbers(run));
        }
    }
    out
}

/// Random hex identifiers shorter than a session id (`a3f09c1e`).
fn hex_id(run: &str) -> bool {
    run.len() >= MIN_HEX_ID
        && Class::of(run) == Class::Hex
        && run.chars().any(|c| c.is_ascii_digit())
        && run.chars().any(|c| c.is_ascii_alphabetic())
}

/// `page17b` as `page`, `\d+`, `b`.
fn words_and_numbers(run: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut rest = run;
    while let Some(first) = rest.chars().next() {
        let digit = first.is_ascii_digit();
        let end = rest
            .find(|c: char| c.is_ascii_digit() != digit)
            .unwrap_or(rest.len());
        let (part, tail) = rest.split_at(end);
        rest = tail;
        out.push(if digit {
            Token::varying(part)
        } else {
            Token::Literal(part.to_string())
        });
    }
    out
}

/// Shapes of the evidence, each the merge of the URLs with its structure.
fn shapes(evidence: &[Url]) -> Option<Vec<Vec<Token>>> {
    let mut shapes: Vec<Vec<Token>> = Vec::new();
    for url in evidence {
        let t = tokens(url);
        let merged = shapes.iter_mut().find_map(|shape| {
            if shape.len() != t.len() {
                return None;
            }
            let m: Option<Vec<Token>> = shape.iter().zip(&t).map(|(a, b)| a.merge(b)).collect();
            m.map(|m| *shape = m)
        });
        if merged.is_none() {
            shapes.push(t);
        }
    }
    (!shapes.is_empty() && shapes.len() <= MAX_SHAPES).then_some(shapes)
}

/// Patterns covering the evidence, broadest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Narrowest {
    /// The shape with open lengths, then (if different) with the lengths seen.
    pub patterns: Vec<String>,
    /// The evidence has more than one shape: the patterns are alternations,
    /// which a trap that keeps varying its structure soon escapes.
    pub alternatives: bool,
}

/// Patterns covering every evidence URL of `host`. `None` when the evidence
/// has no common shape (or is empty).
pub fn narrowest(host: &str, evidence: &[Url]) -> Option<Narrowest> {
    let shapes = shapes(evidence)?;
    let render = |exact: bool| {
        let alts: Vec<String> = shapes
            .iter()
            .map(|s| s.iter().map(|t| t.regex(exact)).collect())
            .collect();
        let body = if alts.len() == 1 {
            alts[0].clone()
        } else {
            format!("(?:{})", alts.join("|"))
        };
        format!("^https?://{}{body}$", regex::escape(host))
    };
    let open = render(false);
    let exact = render(true);
    let patterns = if open == exact {
        vec![open]
    } else {
        vec![open, exact]
    };
    Some(Narrowest {
        patterns,
        alternatives: shapes.len() > 1,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(urls: &[&str]) -> String {
        let urls: Vec<Url> = urls.iter().map(|u| Url::parse(u).unwrap()).collect();
        narrowest("h", &urls).unwrap().patterns.remove(0)
    }

    fn matches(pattern: &str, url: &str) -> bool {
        regex::Regex::new(pattern).unwrap().is_match(url)
    }

    #[test]
    fn calendar_months_become_numbers_under_a_literal_path() {
        let p = pattern(&["http://h/calendar/2026/11/", "http://h/calendar/2026/12/"]);
        assert_eq!(p, r"^https?://h/calendar/\d+/\d+/$");
        assert!(matches(&p, "http://h/calendar/1999/01/"));
        assert!(!matches(&p, "http://h/calendar/"));
        assert!(!matches(&p, "http://h/calendar/2026/11/events.html"));
    }

    #[test]
    fn counter_in_a_query_keeps_its_parameter_name() {
        let p = pattern(&["http://h/list?page=7", "http://h/list?page=8"]);
        assert_eq!(p, r"^https?://h/list\?page=\d+$");
        assert!(!matches(&p, "http://h/list?sort=7"));
    }

    #[test]
    fn soft_404_names_keep_their_literal_words_and_leave_real_pages_alone() {
        let evidence = [
            "http://h/docs/gone-3f9a1c2e.html",
            "http://h/docs/gone-0b7d44aa.html",
            "http://h/docs/gone-91c3e5f0.html",
        ];
        let p = pattern(&evidence);
        assert_eq!(p, r"^https?://h/docs/gone\-[0-9a-f]+\.html$");
        assert!(matches(&p, "https://h/docs/gone-deadbeef12.html"));
        assert!(!matches(&p, "http://h/docs/page-17.html"));
        assert!(!matches(&p, "http://h/docs/"));
    }

    #[test]
    fn random_names_differing_in_words_become_a_class_of_their_own_length() {
        let urls: Vec<Url> = ["http://h/x/abc.html", "http://h/x/qrs.html"]
            .iter()
            .map(|u| Url::parse(u).unwrap())
            .collect();
        let all = narrowest("h", &urls).unwrap().patterns;
        assert_eq!(all[0], r"^https?://h/x/[a-z]+\.html$");
        assert_eq!(all[1], r"^https?://h/x/[a-z]{3}\.html$");
        assert!(!matches(&all[1], "http://h/x/index.html"));
    }

    #[test]
    fn session_ids_become_a_token_class_and_the_page_stays_literal() {
        let p = pattern(&[
            "http://h/item/3.html?sid=a81f09c2d3e4b5a6f7e8d9c0b1a2f3e4",
            "http://h/item/9.html?sid=0f1e2d3c4b5a69788796a5b4c3d2e1f0",
        ]);
        assert_eq!(p, r"^https?://h/item/\d+\.html\?sid=[0-9a-f]+$");
        assert!(!matches(&p, "http://h/item/3.html"));
    }

    #[test]
    fn different_structures_are_alternatives_and_too_many_are_none() {
        let two = ["http://h/a/1/", "http://h/b-2.html"].map(|u| Url::parse(u).unwrap());
        let found = narrowest("h", &two).unwrap();
        assert!(found.alternatives);
        assert_eq!(found.patterns[0], r"^https?://h(?:/a/\d+/|/b\-\d+\.html)$");
        let many: Vec<Url> = ["/a", "/a/b", "/a/b/c", "/a/b/c/d"]
            .iter()
            .map(|p| Url::parse(&format!("http://h{p}")).unwrap())
            .collect();
        assert_eq!(narrowest("h", &many), None);
        assert_eq!(narrowest("h", &[]), None);
    }

    #[test]
    fn the_host_is_escaped_and_the_port_kept() {
        let urls = [Url::parse("http://a.b:8080/p1").unwrap()];
        let p = narrowest("a.b:8080", &urls).unwrap().patterns.remove(0);
        assert_eq!(p, r"^https?://a\.b:8080/p\d+$");
    }
}
