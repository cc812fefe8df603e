//! The comparison itself, without a store: what `diff` looks at of one URL
//! in one crawl ([`Side`]), which changes two sides make ([`changes`]), and
//! the merge of two URL-ordered streams into pairs ([`Paired`]).

use std::cmp::Ordering;
use std::iter::Peekable;

use serde::Serialize;

use crate::results::query::Fate;
use crate::results::rows::Row;

/// A kind of change, in the order a URL's changes are listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ChangeKind {
    /// Recorded in the new crawl only (and not broken).
    Added,
    /// Recorded in the old crawl only (and not broken there).
    Removed,
    /// Broken (4xx, 5xx, no answer) in the new crawl, not in the old one: a
    /// new broken link.
    Broken,
    /// Broken in the old crawl, not in the new one (answers, or is no longer
    /// linked): a fixed broken link.
    Fixed,
    /// Another answer otherwise: status code, error kind or block reason.
    Status,
    /// Redirects elsewhere, starts or stops redirecting.
    Redirect,
    /// The `<title>` of a page answering 2xx in both crawls.
    Title,
    /// Its `rel=canonical`.
    Canonical,
    /// Whether it may be indexed, and why not.
    Indexability,
    /// Its meta description.
    Description,
    /// Its first `<h1>`.
    H1,
}

impl ChangeKind {
    /// Every kind, in listing order.
    pub const ALL: [ChangeKind; 11] = [
        ChangeKind::Added,
        ChangeKind::Removed,
        ChangeKind::Broken,
        ChangeKind::Fixed,
        ChangeKind::Status,
        ChangeKind::Redirect,
        ChangeKind::Title,
        ChangeKind::Canonical,
        ChangeKind::Indexability,
        ChangeKind::Description,
        ChangeKind::H1,
    ];

    /// The word in listings and `--only`.
    pub fn label(self) -> &'static str {
        match self {
            ChangeKind::Added => "added",
            ChangeKind::Removed => "removed",
            ChangeKind::Broken => "broken",
            ChangeKind::Fixed => "fixed",
            ChangeKind::Status => "status",
            ChangeKind::Redirect => "redirect",
            ChangeKind::Title => "title",
            ChangeKind::Canonical => "canonical",
            ChangeKind::Indexability => "indexability",
            ChangeKind::Description => "description",
            ChangeKind::H1 => "h1",
        }
    }

    /// Parses an `--only` list: `title,broken`.
    pub fn parse_list(list: &str) -> Result<Vec<ChangeKind>, String> {
        list.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|item| {
                let item = item.to_ascii_lowercase();
                ChangeKind::ALL
                    .into_iter()
                    .find(|k| k.label() == item)
                    .ok_or_else(|| {
                        let all: Vec<&str> = ChangeKind::ALL.iter().map(|k| k.label()).collect();
                        format!(
                            "unknown change {item:?} for --only; use one or more of {}",
                            all.join(", ")
                        )
                    })
            })
            .collect()
    }
}

impl Serialize for ChangeKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.label())
    }
}

/// One change of one URL: a row of the listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    /// The URL.
    pub url: String,
    /// What changed.
    pub change: ChangeKind,
    /// The value in the old crawl; `None`: the URL (or the fact) was not there.
    pub old: Option<String>,
    /// The value in the new crawl.
    pub new: Option<String>,
    /// For added, removed, broken and fixed URLs: the page it was first found on
    /// (in the new crawl, else the old one).
    pub linked_from: Option<String>,
}

/// What `diff` compares of one URL recorded by one crawl.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Side {
    /// The URL.
    pub url: String,
    /// `200`, `404`, `error: timeout`, `blocked: robots`…
    pub state: String,
    /// A 4xx, 5xx or no answer, as `links --broken` counts it.
    pub broken: bool,
    /// Where it redirects (a 3xx's Location or a meta refresh).
    pub redirect: Option<String>,
    /// A 2xx answer with its content known: only then are title, canonical,
    /// indexability, description and h1 compared (a page that turned 404 is
    /// one `broken` change, not five).
    pub content: bool,
    /// The page's title.
    pub title: Option<String>,
    /// Its canonical URL.
    pub canonical: Option<String>,
    /// `indexable`, or why not.
    pub indexability: Option<String>,
    /// Its meta description.
    pub description: Option<String>,
    /// Its first `<h1>`.
    pub h1: Option<String>,
    /// The page it was first found on.
    pub linked_from: Option<String>,
}

impl Side {
    /// What is compared of a listing row; `None` for a soft-404 probe (a
    /// made-up URL each crawl makes up anew).
    pub fn of(row: Row) -> Option<Side> {
        let class = row.reason_class.as_deref();
        if class == Some("probe") {
            return None;
        }
        let state = match (row.status, class) {
            (Some(status), _) => status.to_string(),
            (None, Some(class)) => format!("{}: {class}", row.fate),
            (None, None) => row.fate.to_string(),
        };
        let answered = row.fate == Fate::Fetched.label() || row.fate == Fate::Duplicate.label();
        let content = answered && row.status.is_some_and(|s| (200..300).contains(&s));
        let redirect = (row.fate == Fate::Redirect.label())
            .then(|| row.detail.clone())
            .flatten();
        let indexability = row.facts.indexable.map(|yes| match yes {
            true => "indexable".to_string(),
            false => row.facts.indexability.clone().unwrap_or_default(),
        });
        Some(Side {
            broken: row.is_broken(),
            state,
            redirect,
            content,
            indexability,
            linked_from: row.referrers.into_iter().next(),
            title: row.title,
            canonical: row.facts.canonical,
            description: row.facts.description,
            h1: row.facts.h1,
            url: row.url,
        })
    }
}

/// The changes between a URL's old and new record, in [`ChangeKind`] order.
pub fn changes(old: Option<&Side>, new: Option<&Side>) -> Vec<Change> {
    match (old, new) {
        (None, None) => Vec::new(),
        (None, Some(n)) => {
            let kind = if n.broken {
                ChangeKind::Broken
            } else {
                ChangeKind::Added
            };
            let from = n.linked_from.clone();
            vec![Change::of(n, kind, None, Some(&n.state), from)]
        }
        (Some(o), None) => {
            let kind = if o.broken {
                ChangeKind::Fixed
            } else {
                ChangeKind::Removed
            };
            let from = o.linked_from.clone();
            vec![Change::of(o, kind, Some(&o.state), None, from)]
        }
        (Some(o), Some(n)) => in_both(o, n),
    }
}

/// The changes of a URL both crawls recorded.
fn in_both(o: &Side, n: &Side) -> Vec<Change> {
    let mut found = Vec::new();
    let answer = match (o.broken, n.broken) {
        (false, true) => Some(ChangeKind::Broken),
        (true, false) => Some(ChangeKind::Fixed),
        _ => (o.state != n.state).then_some(ChangeKind::Status),
    };
    if let Some(kind) = answer {
        let from = match kind {
            ChangeKind::Status => None,
            _ => n.linked_from.clone().or_else(|| o.linked_from.clone()),
        };
        found.push(Change::of(n, kind, Some(&o.state), Some(&n.state), from));
    }
    if o.redirect != n.redirect {
        let (a, b) = (o.redirect.as_ref(), n.redirect.as_ref());
        found.push(Change::of(n, ChangeKind::Redirect, a, b, None));
    }
    if o.content && n.content {
        let facts = [
            (ChangeKind::Title, &o.title, &n.title),
            (ChangeKind::Canonical, &o.canonical, &n.canonical),
            (ChangeKind::Indexability, &o.indexability, &n.indexability),
            (ChangeKind::Description, &o.description, &n.description),
            (ChangeKind::H1, &o.h1, &n.h1),
        ];
        for (kind, a, b) in facts {
            if a != b {
                found.push(Change::of(n, kind, a.as_ref(), b.as_ref(), None));
            }
        }
    }
    found
}

impl Change {
    fn of(
        side: &Side,
        change: ChangeKind,
        old: Option<&String>,
        new: Option<&String>,
        linked_from: Option<String>,
    ) -> Change {
        Change {
            url: side.url.clone(),
            change,
            old: old.cloned(),
            new: new.cloned(),
            linked_from,
        }
    }
}

/// Two streams of sides in URL order, walked side by side: each URL once,
/// with its old side, its new side or both. Holds one side of each.
pub struct Paired<O: Iterator, N: Iterator> {
    old: Peekable<O>,
    new: Peekable<N>,
}

impl<O, N, E> Paired<O, N>
where
    O: Iterator<Item = Result<Side, E>>,
    N: Iterator<Item = Result<Side, E>>,
{
    /// Pairs `old` and `new`, both in URL order.
    pub fn new(old: O, new: N) -> Self {
        Paired {
            old: old.peekable(),
            new: new.peekable(),
        }
    }
}

type Pair = (Option<Side>, Option<Side>);

impl<O, N, E> Iterator for Paired<O, N>
where
    O: Iterator<Item = Result<Side, E>>,
    N: Iterator<Item = Result<Side, E>>,
{
    type Item = Result<Pair, E>;

    fn next(&mut self) -> Option<Self::Item> {
        let order = match (self.old.peek(), self.new.peek()) {
            (None, None) => return None,
            (Some(Err(_)), _) | (Some(Ok(_)), None) => Ordering::Less,
            (_, Some(Err(_))) | (None, Some(Ok(_))) => Ordering::Greater,
            (Some(Ok(o)), Some(Ok(n))) => o.url.cmp(&n.url),
        };
        let take = |side: Option<Result<Side, E>>| side.transpose();
        Some(match order {
            Ordering::Less => take(self.old.next()).map(|o| (o, None)),
            Ordering::Greater => take(self.new.next()).map(|n| (None, n)),
            Ordering::Equal => {
                take(self.old.next()).and_then(|o| take(self.new.next()).map(|n| (o, n)))
            }
        })
    }
}

#[cfg(test)]
#[path = "compare_tests.rs"]
mod tests;
