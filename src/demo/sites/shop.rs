//! `Shop`: an ordinary site of ~370 pages (categories → lists → products) that
//! exercises link extraction and the meta-robots and redirect handling.

use super::{allow_all_robots, Reply, Req, SiteCtx};
use crate::demo::html::{filler, rng_for, word, Html};
use crate::demo::SiteKind;

pub(crate) const CATEGORIES: &[&str] = &[
    "tools", "garden", "kitchen", "lamps", "books", "toys", "bikes", "paint",
];
pub(crate) const LISTS_PER_CATEGORY: u32 = 4;
pub(crate) const PRODUCTS_PER_LIST: u32 = 10;
const PRODUCTS_PER_CATEGORY: u32 = LISTS_PER_CATEGORY * PRODUCTS_PER_LIST;

/// Linked only with `rel="nofollow"`: a crawler honouring it never requests this.
pub const SHOP_NOFOLLOW_ONLY_PATH: &str = "/secret-nofollow.html";
/// Carries `<meta name="robots" content="nofollow">`.
pub const SHOP_META_NOFOLLOW_PATH: &str = "/meta-nofollow.html";
/// Linked only from the meta-nofollow page: a correct crawler never requests these.
pub const SHOP_HIDDEN_PATHS: &[&str] = &["/hidden/1.html", "/hidden/2.html", "/hidden/3.html"];
/// Linked from the about and sale pages, answers 404: a broken link to report.
pub const SHOP_BROKEN_PATH: &str = "/discontinued.html";
/// Carries `<meta name="robots" content="noindex">`; its links may be followed.
pub const SHOP_NOINDEX_PATH: &str = "/noindex.html";

pub(super) fn respond(ctx: &SiteCtx, req: &Req) -> Reply {
    let path = req.path;
    if path == "/robots.txt" {
        return allow_all_robots();
    }
    if path == "/" {
        return Reply::html(index(ctx));
    }
    if let Some(rest) = path.strip_prefix("/old-") {
        // `/old-X` moved permanently to `/X`.
        return Reply::redirect(301, &ctx.abs(&format!("/{rest}")));
    }
    if let Some(rest) = path.strip_prefix("/c/") {
        return category(ctx, rest);
    }
    if let Some(rest) = path.strip_prefix("/p/") {
        return product(ctx, rest);
    }
    if path.starts_with("/img/") && path.ends_with(".jpg") {
        // A few bytes with a JPEG signature: enough to show up in the log if requested.
        return Reply::text(&b"\xFF\xD8\xFF\xE0demo\xFF\xD9"[..])
            .header("content-type", "image/jpeg");
    }
    match path {
        "/search" => search(req),
        "/sale/" => {
            let mut page = Html::new("Sale");
            for (i, cat) in CATEGORIES.iter().enumerate().take(5) {
                page.link(&format!("/p/{cat}-{}.html", i + 1), &format!("{cat} deal"));
            }
            page.link(SHOP_BROKEN_PATH, "last season's deal");
            Reply::html(page.finish())
        }
        "/about.html" => Reply::html(
            Html::new("About the shop")
                .p("A demo shop; every page is generated from its path.")
                .link("/", "home")
                .link(SHOP_BROKEN_PATH, "our discontinued range")
                .finish(),
        ),
        SHOP_NOINDEX_PATH => Reply::html(
            Html::with_head(
                "Not for the index",
                "<meta name=\"robots\" content=\"noindex\">\n",
            )
            .p("This page asks not to be indexed; its links may still be followed.")
            .link("/c/tools/", "tools")
            .finish(),
        ),
        SHOP_META_NOFOLLOW_PATH => {
            let mut page = Html::with_head(
                "Links not to follow",
                "<meta name=\"robots\" content=\"nofollow\">\n",
            );
            for p in SHOP_HIDDEN_PATHS {
                page.link(p, "hidden");
            }
            Reply::html(page.finish())
        }
        SHOP_NOFOLLOW_ONLY_PATH => Reply::html(Html::new("Reached through nofollow").finish()),
        p if SHOP_HIDDEN_PATHS.contains(&p) => {
            Reply::html(Html::new("Reached through a meta-nofollow page").finish())
        }
        _ => Reply::not_found(),
    }
}

fn index(ctx: &SiteCtx) -> String {
    let mut page = Html::new("Demo shop");
    page.raw("<img src=\"/img/logo.jpg\" alt=\"logo\">\n");
    for (i, cat) in CATEGORIES.iter().enumerate() {
        if i == 0 {
            // One absolute link; the rest are relative.
            page.link(&ctx.abs(&format!("/c/{cat}/")), cat);
        } else {
            page.link(&format!("c/{cat}/"), cat);
        }
    }
    page.link("/c/garden/#top", "garden (fragment)")
        .link("/search?q=lamps&amp;page=1", "search lamps")
        .link("/search?q=lamps&amp;page=2", "search lamps, page 2")
        .link("/old-sale/", "sale (moved)")
        .link("/old-about.html", "about (moved)")
        .link("/img/banner.jpg", "banner image")
        .link_rel(SHOP_NOFOLLOW_ONLY_PATH, "nofollow", "do not follow")
        .link(
            SHOP_META_NOFOLLOW_PATH,
            "a page whose links must not be followed",
        )
        .link(SHOP_NOINDEX_PATH, "a noindex page");
    if let Some(blog) = ctx.peers.get(&SiteKind::Blog) {
        page.link(blog.as_str(), "our blog");
    }
    page.finish()
}

fn category(ctx: &SiteCtx, rest: &str) -> Reply {
    let parts: Vec<&str> = rest.split('/').collect();
    let cat = parts[0];
    if !CATEGORIES.contains(&cat) {
        return Reply::not_found();
    }
    match parts[1..] {
        [""] => {
            // Relative links resolve against <base>, not against the page URL.
            let head = format!("<base href=\"/c/{cat}/list/\">\n");
            let mut page = Html::with_head(&format!("Category {cat}"), &head);
            for n in 1..=LISTS_PER_CATEGORY {
                page.link(&format!("{n}.html"), &format!("{cat} list {n}"));
            }
            page.link("/", "home");
            Reply::html(page.finish())
        }
        ["list", file] => {
            let n = file
                .strip_suffix(".html")
                .and_then(|n| n.parse::<u32>().ok());
            match n {
                Some(n @ 1..=LISTS_PER_CATEGORY) => Reply::html(list(ctx, cat, n)),
                _ => Reply::not_found(),
            }
        }
        _ => Reply::not_found(),
    }
}

fn list(ctx: &SiteCtx, cat: &str, n: u32) -> String {
    let mut page = Html::new(&format!("{cat} — list {n}"));
    for id in (n - 1) * PRODUCTS_PER_LIST + 1..=n * PRODUCTS_PER_LIST {
        let title = format!("{} {cat}", word(id as u64));
        if id % PRODUCTS_PER_LIST == 1 {
            // A query-string variant whose canonical URL is the plain product page.
            page.link(
                &format!("/p/{cat}-{id}.html?ref=list&amp;color=red"),
                &title,
            );
        } else {
            page.link(&format!("../../../p/{cat}-{id}.html"), &title);
        }
        page.raw(&format!("<img src=\"/img/{cat}-{id}.jpg\">\n"));
    }
    if n > 1 {
        page.link(&format!("{}.html", n - 1), "previous");
    }
    if n < LISTS_PER_CATEGORY {
        page.link(&format!("{}.html", n + 1), "next");
    }
    page.link(&ctx.abs(&format!("/c/{cat}/")), "category");
    page.finish()
}

fn product(ctx: &SiteCtx, rest: &str) -> Reply {
    let Some((cat, id)) = rest.strip_suffix(".html").and_then(|s| s.rsplit_once('-')) else {
        return Reply::not_found();
    };
    let id = match id.parse::<u32>() {
        Ok(id @ 1..=PRODUCTS_PER_CATEGORY) if CATEGORIES.contains(&cat) => id,
        _ => return Reply::not_found(),
    };
    let canonical = ctx.abs(&format!("/p/{cat}-{id}.html"));
    let head = format!("<link rel=\"canonical\" href=\"{canonical}\">\n");
    let mut page = Html::with_head(&format!("{} {cat}", word(id as u64)), &head);
    let mut rng = rng_for(rest);
    page.p(&filler(&mut rng, 40));
    let list = (id - 1) / PRODUCTS_PER_LIST + 1;
    page.link(&format!("/c/{cat}/list/{list}.html"), "back to the list");
    page.link(&format!("/img/{cat}-{id}.jpg"), "large picture");
    for other in [id.saturating_sub(1), id + 1] {
        if (1..=PRODUCTS_PER_CATEGORY).contains(&other) {
            page.link(&format!("{cat}-{other}.html#reviews"), "related");
        }
    }
    Reply::html(page.finish())
}

fn search(req: &Req) -> Reply {
    let cat = req.query_param("q").unwrap_or("");
    let page_no = req.query_param("page").and_then(|p| p.parse::<u32>().ok());
    let (Some(page_no @ 1..=2), true) = (page_no, CATEGORIES.contains(&cat)) else {
        return Reply::not_found();
    };
    let mut page = Html::new(&format!("Search: {cat}, page {page_no}"));
    for id in (page_no - 1) * 5 + 1..=page_no * 5 {
        page.link(&format!("/p/{cat}-{id}.html"), "result");
    }
    Reply::html(page.finish())
}
