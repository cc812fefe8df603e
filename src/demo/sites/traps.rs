//! Spider traps: sites that generate URLs without end. Each also has ~20
//! ordinary pages so a crawler has real work next to the trap.

use super::{allow_all_robots, Reply, Req, SiteCtx};
use crate::demo::html::{filler, rng_for, Html};

const NORMAL_PAGES: u32 = 20;

fn normal_page(path: &str, prefix: &str) -> Option<Reply> {
    let n: u32 = path
        .strip_prefix(prefix)?
        .strip_suffix(".html")?
        .parse()
        .ok()?;
    if !(1..=NORMAL_PAGES).contains(&n) {
        return None;
    }
    let mut page = Html::new(&format!("Page {n}"));
    page.p(&filler(&mut rng_for(path), 40));
    page.link(&format!("{prefix}{}.html", n % NORMAL_PAGES + 1), "next")
        .link("/", "home");
    Some(Reply::html(page.finish()))
}

fn index_with_normal_pages(title: &str, prefix: &str, extra: &[(&str, &str)]) -> Reply {
    let mut page = Html::new(title);
    for (href, text) in extra {
        page.link(href, text);
    }
    for n in 1..=NORMAL_PAGES {
        page.link(&format!("{prefix}{n}.html"), &format!("page {n}"));
    }
    Reply::html(page.finish())
}

/// `Calendar`: `/calendar/Y/M/` links to the previous and next month forever.
pub(super) fn calendar(_ctx: &SiteCtx, req: &Req) -> Reply {
    let path = req.path;
    match path {
        "/robots.txt" => return allow_all_robots(),
        "/" => {
            return index_with_normal_pages(
                "Events",
                "/events/",
                &[("/calendar/2026/11/", "calendar")],
            )
        }
        _ => {}
    }
    if let Some(reply) = normal_page(path, "/events/") {
        return reply;
    }
    let parsed = path
        .strip_prefix("/calendar/")
        .and_then(|r| r.strip_suffix('/'))
        .and_then(|r| r.split_once('/'))
        .and_then(|(y, m)| Some((y.parse::<i64>().ok()?, m.parse::<i64>().ok()?)));
    let Some((year, month @ 1..=12)) = parsed else {
        return Reply::not_found();
    };
    // Months counted from year 0; bounded so arithmetic never overflows.
    let index = year.clamp(-1_000_000, 1_000_000) * 12 + (month - 1);
    let ym = |i: i64| {
        format!(
            "/calendar/{}/{:02}/",
            i.div_euclid(12),
            i.rem_euclid(12) + 1
        )
    };
    let mut page = Html::new(&format!("Calendar {year}-{month:02}"));
    page.p("No events this month.")
        .link(&ym(index - 1), "previous month")
        .link(&ym(index + 1), "next month")
        .link("/", "home");
    Reply::html(page.finish())
}

/// `Deep`: every page under `/docs/` links `a/` and `b/` relatively, so
/// `/docs/a/b/a/…` goes on forever.
pub(super) fn deep(_ctx: &SiteCtx, req: &Req) -> Reply {
    let path = req.path;
    match path {
        "/robots.txt" => return allow_all_robots(),
        "/" => return index_with_normal_pages("Manual", "/guide/", &[("/docs/", "docs")]),
        _ => {}
    }
    if let Some(reply) = normal_page(path, "/guide/") {
        return reply;
    }
    if path.starts_with("/docs/") && path.ends_with('/') {
        let depth = path.matches('/').count() - 2;
        let mut page = Html::new(&format!("Docs, level {depth}"));
        page.link("a/", "section a")
            .link("b/", "section b")
            .link("/", "home");
        return Reply::html(page.finish());
    }
    Reply::not_found()
}

fn fresh_sid() -> String {
    format!("{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..))
}

/// `Session`: every link carries a fresh `?sid=<32 hex>`; behind them are 20 real pages.
pub(super) fn session(_ctx: &SiteCtx, req: &Req) -> Reply {
    let path = req.path;
    if path == "/robots.txt" {
        return allow_all_robots();
    }
    let n: Option<u32> = if path == "/" {
        Some(0)
    } else {
        path.strip_prefix("/item/")
            .and_then(|s| s.strip_suffix(".html"))
            .and_then(|s| s.parse().ok())
            .filter(|n| (1..=NORMAL_PAGES).contains(n))
    };
    let Some(n) = n else {
        return Reply::not_found();
    };
    let mut page = Html::new(&format!("Session site, item {n}"));
    page.p(&filler(&mut rng_for(path), 30));
    for k in 1..=NORMAL_PAGES {
        if k != n {
            page.link(
                &format!("/item/{k}.html?sid={}", fresh_sid()),
                &format!("item {k}"),
            );
        }
    }
    page.link(&format!("/?sid={}", fresh_sid()), "home");
    Reply::html(page.finish())
}

/// `Soft404`: every path answers 200 with five fresh random links.
pub(super) fn soft404(_ctx: &SiteCtx, req: &Req) -> Reply {
    if req.path == "/robots.txt" {
        return allow_all_robots();
    }
    let mut page = Html::new("Welcome");
    page.p("The page you asked for is right here, whatever it was.");
    for _ in 0..5 {
        page.link(&format!("/x/{:016x}.html", fastrand::u64(..)), "more");
    }
    Reply::html(page.finish())
}

const FACETS: [(&str, &[&str]); 4] = [
    ("color", &["red", "blue", "green", "black", "white"]),
    ("size", &["s", "m", "l", "xl"]),
    ("sort", &["price", "name", "new", "rating"]),
    ("brand", &["acme", "globex", "initech", "umbrella", "hooli"]),
];

/// `Facets`: `/search` pages link every one-step change of their filters and
/// an ever-growing `page=`, so the distinct query strings of one path never
/// end (a parameter explosion); 20 real products sit behind them.
pub(super) fn facets(_ctx: &SiteCtx, req: &Req) -> Reply {
    let path = req.path;
    if path == "/robots.txt" {
        return allow_all_robots();
    }
    if path == "/" {
        return index_with_normal_pages("Catalogue", "/product/", &[("/search?q=all", "search")]);
    }
    if let Some(reply) = normal_page(path, "/product/") {
        return reply;
    }
    if path != "/search" {
        return Reply::not_found();
    }
    let current: Vec<(&str, String)> = FACETS
        .iter()
        .filter_map(|(name, _)| req.query_param(name).map(|v| (*name, v.to_string())))
        .collect();
    let page: u64 = req
        .query_param("page")
        .and_then(|p| p.parse().ok())
        .unwrap_or(1);
    let query = |changed: &str, value: &str, page: u64| {
        let mut parts = vec!["q=all".to_string()];
        for (name, _) in FACETS {
            if name == changed {
                parts.push(format!("{name}={value}"));
            } else if let Some((_, v)) = current.iter().find(|(n, _)| *n == name) {
                parts.push(format!("{name}={v}"));
            }
        }
        parts.push(format!("page={page}"));
        format!("/search?{}", parts.join("&amp;"))
    };
    let mut html = Html::new(&format!("Search results, page {page}"));
    html.p("Results for every product, filtered and sorted as you like.");
    for (name, values) in FACETS {
        for value in values {
            html.link(&query(name, value, 1), &format!("{name}: {value}"));
        }
    }
    html.link(&query("", "", page + 1), "next page");
    for n in 1..=3 {
        html.link(
            &format!("/product/{}.html", (page as u32 + n) % NORMAL_PAGES + 1),
            "product",
        );
    }
    Reply::html(html.finish())
}
