//! Legitimate sites with a twist: slow answers, duplicate content, a finite
//! paginated listing and a deep but finite tree. None of them is a trap.

use std::time::Duration;

use super::{allow_all_robots, Reply, Req, SiteCtx};
use crate::demo::html::{filler, rng_for, word, Html};

fn numbered(path: &str, prefix: &str, max: u32) -> Option<u32> {
    let n = path
        .strip_prefix(prefix)?
        .strip_suffix(".html")?
        .parse()
        .ok()?;
    (1..=max).contains(&n).then_some(n)
}

const SLOW_PAGES: u32 = 30;

/// `Slow`: every response (robots.txt included) is delayed ~300 ms × latency_scale.
pub(super) fn slow(ctx: &SiteCtx, req: &Req) -> Reply {
    let reply = if req.path == "/robots.txt" {
        allow_all_robots()
    } else if req.path == "/" {
        let mut page = Html::new("A slow site");
        for n in 1..=SLOW_PAGES {
            page.link(&format!("/page/{n}.html"), &format!("page {n}"));
        }
        Reply::html(page.finish())
    } else if let Some(n) = numbered(req.path, "/page/", SLOW_PAGES) {
        let mut page = Html::new(&format!("Slow page {n}"));
        page.p(&filler(&mut rng_for(req.path), 30));
        page.link(&format!("/page/{}.html", n % SLOW_PAGES + 1), "next")
            .link("/", "home");
        Reply::html(page.finish())
    } else {
        Reply::not_found()
    };
    reply.delayed(ctx.scaled(Duration::from_millis(300)))
}

const DUPE_COPIES: u32 = 30;
const DUPE_NEAR: u32 = 30;
const DUPE_DISTINCT: u32 = 20;

/// `Dupes`: 30 URLs serve one byte-identical body, 30 serve bodies differing in
/// one word (each linking the next edition: near duplicates that beget one
/// another, as a trap's do), and 20 articles are distinct.
pub(super) fn dupes(_ctx: &SiteCtx, req: &Req) -> Reply {
    let path = req.path;
    if path == "/robots.txt" {
        return allow_all_robots();
    }
    if path == "/" {
        let mut page = Html::new("Many copies");
        for n in 1..=DUPE_COPIES {
            page.link(&format!("/copy/{n}.html"), "copy");
        }
        // The first third listed; each links the next (within the depth limit).
        for n in 1..=DUPE_NEAR / 3 {
            page.link(&format!("/near/{n}.html"), "near copy");
        }
        for n in 1..=DUPE_DISTINCT {
            page.link(&format!("/article/{n}.html"), "article");
        }
        return Reply::html(page.finish());
    }
    // One shared text: byte-identical copies use it as is, near copies change one word.
    let shared = {
        let mut rng = rng_for("dupes-shared-text");
        filler(&mut rng, 300)
    };
    if numbered(path, "/copy/", DUPE_COPIES).is_some() {
        return Reply::html(
            Html::new("The same page")
                .p(&shared)
                .link("/", "home")
                .finish(),
        );
    }
    if let Some(n) = numbered(path, "/near/", DUPE_NEAR) {
        let text = format!("{shared} edition{n}");
        let mut page = Html::new("Almost the same page");
        page.p(&text);
        if n < DUPE_NEAR {
            page.link(&format!("/near/{}.html", n + 1), "next edition");
        }
        return Reply::html(page.link("/", "home").finish());
    }
    if let Some(n) = numbered(path, "/article/", DUPE_DISTINCT) {
        let mut rng = rng_for(path);
        let mut page = Html::new(&format!("Article {n}: {}", word(n as u64)));
        for _ in 0..5 {
            page.p(&filler(&mut rng, 60));
        }
        return Reply::html(page.link("/", "home").finish());
    }
    Reply::not_found()
}

const PARAM_PAGES: u32 = 25;
const PARAM_SORTS: &[&str] = &["price", "name"];
const PARAM_DIRS: &[&str] = &["asc", "desc"];
const PARAM_ITEMS: u32 = 20;

/// `Params`: `/list?page=N&sort=S&dir=D` — 25 pages × 2 sorts × 2 directions =
/// 100 listing URLs plus 20 items. Finite and legitimate; must not look like a trap.
pub(super) fn params(_ctx: &SiteCtx, req: &Req) -> Reply {
    let path = req.path;
    if path == "/robots.txt" {
        return allow_all_robots();
    }
    if path == "/" {
        let mut page = Html::new("Catalogue");
        for sort in PARAM_SORTS {
            for dir in PARAM_DIRS {
                page.link(
                    &format!("/list?page=1&amp;sort={sort}&amp;dir={dir}"),
                    "listing",
                );
            }
        }
        return Reply::html(page.finish());
    }
    if path == "/list" {
        let page_no = req.query_param("page").and_then(|p| p.parse::<u32>().ok());
        let sort = req.query_param("sort").filter(|s| PARAM_SORTS.contains(s));
        let dir = req.query_param("dir").filter(|d| PARAM_DIRS.contains(d));
        let (Some(n @ 1..=PARAM_PAGES), Some(sort), Some(dir)) = (page_no, sort, dir) else {
            return Reply::not_found();
        };
        let mut page = Html::new(&format!("Listing page {n} by {sort} ({dir})"));
        for j in 0..3 {
            let item = (n * 3 + j) % PARAM_ITEMS + 1;
            page.link(&format!("/item/{item}.html"), word(item as u64));
        }
        if n > 1 {
            page.link(
                &format!("/list?page={}&amp;sort={sort}&amp;dir={dir}", n - 1),
                "prev",
            );
        }
        if n < PARAM_PAGES {
            page.link(
                &format!("/list?page={}&amp;sort={sort}&amp;dir={dir}", n + 1),
                "next",
            );
        }
        for other in PARAM_SORTS {
            page.link(
                &format!("/list?page=1&amp;sort={other}&amp;dir={dir}"),
                "sort",
            );
        }
        return Reply::html(page.finish());
    }
    if let Some(n) = numbered(path, "/item/", PARAM_ITEMS) {
        let mut page = Html::new(&format!("Item {n}"));
        page.p(&filler(&mut rng_for(path), 40)).link("/", "home");
        return Reply::html(page.finish());
    }
    Reply::not_found()
}

const TREE_CHAINS: u32 = 15;
const TREE_DEPTH: u32 = 10;

/// `DeepFinite`: 15 chains of depth 10 (`/t/c3/l1/l2/…/l10/`), 150 pages plus the
/// index. Deep, but every path segment is distinct and the structure ends.
pub(super) fn deep_finite(_ctx: &SiteCtx, req: &Req) -> Reply {
    let path = req.path;
    if path == "/robots.txt" {
        return allow_all_robots();
    }
    if path == "/" {
        let mut page = Html::new("Deep documentation tree");
        for c in 0..TREE_CHAINS {
            page.link(&format!("/t/c{c}/l1/"), &format!("chapter {c}"));
        }
        return Reply::html(page.finish());
    }
    let Some(rest) = path.strip_prefix("/t/").and_then(|r| r.strip_suffix('/')) else {
        return Reply::not_found();
    };
    let segs: Vec<&str> = rest.split('/').collect();
    let chain_ok = segs[0]
        .strip_prefix('c')
        .and_then(|c| c.parse::<u32>().ok())
        .is_some_and(|c| c < TREE_CHAINS);
    let depth = segs.len() as u32 - 1;
    let levels_ok = segs[1..]
        .iter()
        .enumerate()
        .all(|(i, s)| *s == format!("l{}", i + 1));
    if !chain_ok || depth == 0 || depth > TREE_DEPTH || !levels_ok {
        return Reply::not_found();
    }
    let mut page = Html::new(&format!("Section {rest}"));
    page.p(&filler(&mut rng_for(path), 30));
    if depth < TREE_DEPTH {
        page.link(&format!("l{}/", depth + 1), "deeper");
    }
    if depth > 1 {
        page.link("../", "up");
    }
    Reply::html(page.link("/", "home").finish())
}
