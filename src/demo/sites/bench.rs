//! Synthetic benchmark hosts: `pages` pages of ~20 KB with 50 links each,
//! generated from the path with one allocation per page.
//!
//! Page `i` of a host links its tree children `i*40+1 ..= i*40+40` (so every
//! page is reachable from `/` within a few levels), then random pages of the
//! same host, and three random pages of other hosts.

use std::fmt::Write as _;
use std::sync::OnceLock;

use super::{allow_all_robots, Reply, Req, SiteCtx};
use crate::demo::SiteKind;

pub const BENCH_LINKS_PER_PAGE: usize = 50;
const BRANCH: u32 = 40;
const CROSS_HOST_LINKS: usize = 3;
const PARAGRAPHS_PER_PAGE: usize = 40;
const PARAGRAPH_POOL: usize = 4096;
const PARAGRAPH_WORDS: usize = 60;

/// Paragraphs of pseudo-words from a large vocabulary, built once. Pages draw
/// different paragraphs so their visible text (and simhash) differ.
fn paragraphs() -> &'static [String] {
    static POOL: OnceLock<Vec<String>> = OnceLock::new();
    POOL.get_or_init(|| {
        const SYLLABLES: &[&str] = &[
            "ka", "lo", "mi", "ne", "pu", "ra", "si", "to", "ve", "zu", "bar", "cel", "dor", "fen",
            "gil", "hum", "jas", "kor", "lin", "mur", "nod", "pex", "quo", "ril", "sav", "tin",
            "ulm", "vor", "wex", "yal",
        ];
        let mut rng = fastrand::Rng::with_seed(0x5eed);
        (0..PARAGRAPH_POOL)
            .map(|_| {
                let mut p = String::with_capacity(PARAGRAPH_WORDS * 8);
                for w in 0..PARAGRAPH_WORDS {
                    if w > 0 {
                        p.push(' ');
                    }
                    for _ in 0..rng.usize(2..=3) {
                        p.push_str(SYLLABLES[rng.usize(..SYLLABLES.len())]);
                    }
                }
                p
            })
            .collect()
    })
}

/// Page number for a path: `/` is page 0, `/p/{i}.html` is page `i`.
fn page_number(path: &str, pages: u32) -> Option<u32> {
    if path == "/" {
        return Some(0);
    }
    let i: u32 = path
        .strip_prefix("/p/")?
        .strip_suffix(".html")?
        .parse()
        .ok()?;
    (i < pages).then_some(i)
}

fn push_href(out: &mut String, base: Option<&str>, page: u32) {
    if let Some(base) = base {
        out.push_str(base.trim_end_matches('/'));
    }
    if page == 0 {
        out.push('/');
    } else {
        let _ = write!(out, "/p/{page}.html");
    }
}

pub(super) fn respond(ctx: &SiteCtx, req: &Req, host: u32) -> Reply {
    if req.path == "/robots.txt" {
        return allow_all_robots();
    }
    let (pages, hosts) = ctx.bench;
    let pages = pages.max(1);
    let Some(i) = page_number(req.path, pages) else {
        return Reply::not_found();
    };
    Reply::html(render(ctx, host, hosts, pages, i))
}

pub(crate) fn render(ctx: &SiteCtx, host: u32, hosts: u32, pages: u32, i: u32) -> String {
    let mut rng = fastrand::Rng::with_seed(((host as u64) << 32) | i as u64);
    let pool = paragraphs();
    let mut out = String::with_capacity(24 * 1024);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Bench host {host} page {i}</title></head>\n\
         <body><h1>Bench host {host} page {i}</h1>\n<ul>\n"
    );
    let mut links = 0;
    let first_child = i as u64 * BRANCH as u64 + 1;
    for child in first_child..first_child + BRANCH as u64 {
        if child >= pages as u64 {
            break;
        }
        out.push_str("<li><a href=\"");
        push_href(&mut out, None, child as u32);
        out.push_str("\">section</a></li>\n");
        links += 1;
    }
    let cross = if hosts > 1 { CROSS_HOST_LINKS } else { 0 };
    while links < BENCH_LINKS_PER_PAGE - cross {
        out.push_str("<li><a href=\"");
        push_href(&mut out, None, rng.u32(..pages));
        out.push_str("\">see also</a></li>\n");
        links += 1;
    }
    for _ in 0..cross {
        let other = (host + 1 + rng.u32(..hosts - 1)) % hosts;
        if let Some(base) = ctx.peers.get(&SiteKind::Bench(other)) {
            out.push_str("<li><a href=\"");
            push_href(&mut out, Some(base.as_str()), rng.u32(..pages));
            out.push_str("\">elsewhere</a></li>\n");
        }
    }
    out.push_str("</ul>\n");
    for _ in 0..PARAGRAPHS_PER_PAGE {
        out.push_str("<p>");
        out.push_str(&pool[rng.usize(..pool.len())]);
        out.push_str("</p>\n");
    }
    out.push_str("</body></html>\n");
    out
}

pub(crate) fn warm_up() {
    paragraphs();
}
