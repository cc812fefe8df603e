//! Sites that misbehave at the HTTP level: failing robots.txt, a failure window
//! with resets, robots.txt status codes, and redirect loops.

use std::sync::atomic::Ordering;

use super::{allow_all_robots, Reply, Req, SiteCtx};
use crate::demo::html::{filler, rng_for, Html};

fn numbered_site(title: &str, req: &Req, pages: u32, extra: &[&str]) -> Reply {
    if req.path == "/" {
        let mut page = Html::new(title);
        for n in 1..=pages {
            page.link(&format!("/page/{n}.html"), &format!("page {n}"));
        }
        for href in extra {
            page.link(href, href);
        }
        return Reply::html(page.finish());
    }
    let n = req
        .path
        .strip_prefix("/page/")
        .and_then(|s| s.strip_suffix(".html"))
        .and_then(|s| s.parse::<u32>().ok())
        .filter(|n| (1..=pages).contains(n));
    match n {
        Some(n) => {
            let mut page = Html::new(&format!("{title}, page {n}"));
            page.p(&filler(&mut rng_for(req.path), 30));
            page.link(&format!("/page/{}.html", n % pages + 1), "next")
                .link("/", "home");
            Reply::html(page.finish())
        }
        None => Reply::not_found(),
    }
}

/// robots.txt requests answered 503 before the rules become available.
pub const ROBOTS_FLAKY_FAILURES: u64 = 3;

/// `RobotsFlaky`: robots.txt is 503 for the first three requests, then 200
/// with `Disallow: /private/`. 20 pages.
pub(super) fn robots_flaky(ctx: &SiteCtx, req: &Req) -> Reply {
    if req.path == "/robots.txt" {
        let n = ctx.robots_requests.fetch_add(1, Ordering::SeqCst) + 1;
        if n <= ROBOTS_FLAKY_FAILURES {
            return Reply::status(503, "robots.txt is temporarily unavailable\n")
                .header("retry-after", "1");
        }
        return Reply::text("User-agent: *\nDisallow: /private/\n");
    }
    if req.path.starts_with("/private/") {
        return Reply::html(Html::new("Private").finish());
    }
    numbered_site("Robots flaky", req, 20, &["/private/a.html"])
}

/// Page requests (not robots.txt) answered normally before the failure window.
pub const FLAKY_OK_BEFORE: u64 = 5;
/// Page requests that fail (500, every fourth a dropped connection) after that.
pub const FLAKY_FAILURES: u64 = 25;

/// `Flaky`: 40 pages; page requests 6–30 fail with 500 or a dropped connection, then it recovers.
pub(super) fn flaky(ctx: &SiteCtx, req: &Req) -> Reply {
    if req.path == "/robots.txt" {
        return allow_all_robots();
    }
    let n = ctx.page_requests.fetch_add(1, Ordering::SeqCst) + 1;
    if n > FLAKY_OK_BEFORE && n <= FLAKY_OK_BEFORE + FLAKY_FAILURES {
        if n % 4 == 0 {
            return Reply::reset();
        }
        return Reply::status(500, "internal server error\n");
    }
    numbered_site("Flaky", req, 40, &[])
}

/// `RobotsStatus(code)`: robots.txt answers `code`; five pages exist.
pub(super) fn robots_status(_ctx: &SiteCtx, req: &Req, code: u16) -> Reply {
    if req.path == "/robots.txt" {
        return Reply::status(code, "robots.txt answers this status on purpose\n");
    }
    // The status in the title keeps these sites' pages distinct (not mirrors).
    numbered_site(&format!("Robots status {code}"), req, 5, &[])
}

/// Hops in the redirect chain `/hop/0` → … → `/hop/15` (200).
pub const REDIRECT_CHAIN_HOPS: u32 = 15;

/// `RedirectLoop`: `/a` → `/b` → `/a`, and a chain of 15 redirects ending in a page.
pub(super) fn redirect_loop(ctx: &SiteCtx, req: &Req) -> Reply {
    match req.path {
        "/robots.txt" => return allow_all_robots(),
        "/" => {
            return Reply::html(
                Html::new("Redirects")
                    .link("/a", "loop")
                    .link("/hop/0", "long chain")
                    .finish(),
            )
        }
        "/a" => return Reply::redirect(302, &ctx.abs("/b")),
        "/b" => return Reply::redirect(302, "/a"),
        _ => {}
    }
    let hop = req
        .path
        .strip_prefix("/hop/")
        .and_then(|s| s.parse::<u32>().ok())
        .filter(|n| *n <= REDIRECT_CHAIN_HOPS);
    match hop {
        Some(REDIRECT_CHAIN_HOPS) => Reply::html(Html::new("End of the chain").finish()),
        Some(n) => Reply::redirect(302, &format!("/hop/{}", n + 1)),
        None => Reply::not_found(),
    }
}
