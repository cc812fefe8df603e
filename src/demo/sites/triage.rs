//! Traps next to real pages that share their directory: a suggested rule
//! must cover the trap and none of the pages around it.

use super::{allow_all_robots, Reply, Req, SiteCtx};
use crate::demo::html::{filler, rng_for, word, Html};

/// Real pages of the `Manual` site: `/docs/page-1.html` …
pub const MANUAL_PAGES: u32 = 320;
/// Pages listed per index page.
const PER_INDEX: u32 = 20;
/// Real stories of the `Archive` site: `/archive/story-1.html` …
const ARCHIVE_STORIES: u32 = 150;
/// Real tag pages of the `Archive` site: `/archive/tag-amber.html` …
const ARCHIVE_TAGS: u64 = 10;

/// The paths of the `Archive` site's real pages (stories and tags), for tests.
pub fn archive_real_paths() -> Vec<String> {
    (1..=ARCHIVE_STORIES)
        .map(|n| format!("/archive/story-{n}.html"))
        .chain((0..ARCHIVE_TAGS).map(|t| format!("/archive/tag-{}.html", word(t))))
        .collect()
}

/// The number in `{prefix}{n}{suffix}`, if the path is exactly that.
fn numbered(path: &str, prefix: &str, suffix: &str) -> Option<u32> {
    let digits = path.strip_prefix(prefix)?.strip_suffix(suffix)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || digits.len() > 6 {
        return None;
    }
    digits.parse().ok()
}

/// A fresh name for a page that does not exist.
fn gone_link() -> String {
    format!(
        "/docs/gone-{:012x}.html",
        fastrand::u64(..) & 0xffff_ffff_ffff
    )
}

/// `Manual`: 320 real pages under `/docs/`, each linking one broken
/// `/docs/gone-<hex>.html`; every unknown path answers 200 with the same
/// "not found" page, which suggests three more broken links (a soft 404).
pub(super) fn manual(_ctx: &SiteCtx, req: &Req) -> Reply {
    let path = req.path;
    if path == "/robots.txt" {
        return allow_all_robots();
    }
    let indexes = MANUAL_PAGES.div_ceil(PER_INDEX);
    if path == "/" {
        let mut page = Html::new("Manual");
        page.p("The product manual, one topic per page.");
        for k in 1..=indexes {
            page.link(&format!("/docs/index-{k}.html"), &format!("chapter {k}"));
        }
        return Reply::html(page.finish());
    }
    if let Some(k) = numbered(path, "/docs/index-", ".html").filter(|k| (1..=indexes).contains(k)) {
        let mut page = Html::new(&format!("Chapter {k}"));
        page.p(&filler(&mut rng_for(path), 30));
        let first = (k - 1) * PER_INDEX + 1;
        for n in first..first + PER_INDEX {
            if n <= MANUAL_PAGES {
                page.link(&format!("/docs/page-{n}.html"), &format!("topic {n}"));
            }
        }
        page.link("/", "contents");
        return Reply::html(page.finish());
    }
    if let Some(n) =
        numbered(path, "/docs/page-", ".html").filter(|n| (1..=MANUAL_PAGES).contains(n))
    {
        let mut page = Html::new(&format!("Topic {n}"));
        page.p(&filler(&mut rng_for(path), 60));
        page.link(
            &format!("/docs/index-{}.html", (n - 1) / PER_INDEX + 1),
            "chapter",
        )
        .link(&gone_link(), "see also")
        .link("/", "contents");
        return Reply::html(page.finish());
    }
    // Whatever was asked for: "not found", with a 200.
    let mut page = Html::new("Manual");
    page.p("Sorry, this topic has moved. These topics may help instead.");
    for _ in 0..3 {
        page.link(&gone_link(), "suggested topic");
    }
    page.link("/", "contents");
    Reply::html(page.finish())
}

/// `Archive`: 150 stories and 10 tag pages under `/archive/`, where a naive
/// rule for the directory would block them all; each story also links a
/// generated `/archive/tag-<word>-<n>.html`, an empty tag page that links
/// two more (near duplicates without end).
pub(super) fn archive(_ctx: &SiteCtx, req: &Req) -> Reply {
    let path = req.path;
    match path {
        "/robots.txt" => return allow_all_robots(),
        "/" | "/archive/" => {
            let mut page = Html::new("Archive");
            for n in 1..=ARCHIVE_STORIES {
                page.link(&format!("/archive/story-{n}.html"), &format!("story {n}"));
            }
            for t in 0..ARCHIVE_TAGS {
                page.link(&format!("/archive/tag-{}.html", word(t)), word(t));
            }
            return Reply::html(page.finish());
        }
        _ => {}
    }
    if let Some(n) =
        numbered(path, "/archive/story-", ".html").filter(|n| (1..=ARCHIVE_STORIES).contains(n))
    {
        let mut page = Html::new(&format!("Story {n}"));
        page.p(&filler(&mut rng_for(path), 60));
        let tag = word(u64::from(n) % ARCHIVE_TAGS);
        page.link(&format!("/archive/tag-{tag}.html"), tag)
            .link(
                &format!("/archive/tag-{}-{n}.html", word(u64::from(n))),
                "related",
            )
            .link("/archive/", "archive");
        return Reply::html(page.finish());
    }
    let tag = path
        .strip_prefix("/archive/tag-")
        .and_then(|t| t.strip_suffix(".html"));
    let Some(tag) = tag else {
        return Reply::not_found();
    };
    if let Some(t) = (0..ARCHIVE_TAGS).find(|t| word(*t) == tag) {
        let mut page = Html::new(&format!("Tag {tag}"));
        page.p(&filler(&mut rng_for(path), 40));
        for n in (1..=ARCHIVE_STORIES).filter(|n| u64::from(*n) % ARCHIVE_TAGS == t) {
            page.link(&format!("/archive/story-{n}.html"), &format!("story {n}"));
        }
        return Reply::html(page.finish());
    }
    let Some(n) = tag
        .split_once('-')
        .and_then(|(_, n)| n.parse::<u64>().ok())
        .filter(|n| *n < 1_000_000_000)
    else {
        return Reply::not_found();
    };
    let mut page = Html::new("Tag");
    page.p("No stories carry this tag yet. Related tags may have some.");
    for k in [n + 1, n + 2] {
        page.link(&format!("/archive/tag-{}-{k}.html", word(k)), "related tag");
    }
    page.link("/archive/", "archive");
    Reply::html(page.finish())
}
