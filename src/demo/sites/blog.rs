//! `Blog`: a robots.txt built from the HTTP guide's examples (chapter 9) and a
//! site that links to every path those rules decide, so a test can check which
//! ones a crawler with the product token `crawldeck` requested.

use super::{Reply, Req, SiteCtx};
use crate::demo::html::{percent_decode, Html};

/// Paths (as a crawler that decodes unreserved `%XX` sends them) that the
/// `crawldeck` group forbids. Links on the site use both `~` and `%7E` spellings.
pub fn blog_disallowed_paths() -> &'static [&'static str] {
    &[
        // `Disallow: /tmp` is a prefix: all of these match.
        "/tmp",
        "/tmp/",
        "/tmp.html",
        "/tmpfile",
        "/tmp/a.html",
        // `Disallow: /private` (the `Allow: /private/crawldeck/` exception is narrower).
        "/private",
        "/private/diary.html",
        // `Disallow: /%7Efred/`: escapes are decoded before comparison.
        "/~fred/hi.html",
        "/~fred/notes.html",
        // `Disallow: /~joe/`, linked as `/%7ejoe/...`.
        "/~joe/index.html",
        // `Disallow: /cache/`.
        "/cache/page.html",
    ]
}

/// Paths the `crawldeck` group allows and the site links to: a correct crawler fetches all.
pub fn blog_allowed_paths() -> &'static [&'static str] {
    &[
        "/",
        // `Allow: /tmp/public/` comes before `Disallow: /tmp` and is the longer match.
        "/tmp/public/ok.html",
        "/private/crawldeck/welcome.html",
        // `Disallow: /cache/` does not match `/cache` (Table 9-3: "/tmp/" vs "/tmp").
        "/cache",
        // Matching is case-sensitive.
        "/TMP.html",
        "/temp.html",
        "/fred/hi.html",
        "/posts/1.html",
        "/posts/2.html",
        "/posts/3.html",
        "/posts/4.html",
        "/posts/5.html",
        "/posts/6.html",
    ]
}

/// Links as written on the index page: some with escaped spellings of the same path.
const EXTRA_LINK_SPELLINGS: &[&str] = &["/%7Efred/notes.html", "/%7ejoe/index.html"];

const POSTS: u32 = 6;

fn robots_txt(ctx: &SiteCtx) -> String {
    let delay = ctx.scaled(std::time::Duration::from_secs(1)).as_secs_f64();
    format!(
        "# Robot exclusion rules for the demo blog, after the examples in\n\
         # \"HTTP: The Definitive Guide\", chapter 9.\n\
         User-Agent: slurp\n\
         User-Agent: webcrawler\n\
         Disallow: /private\n\
         \n\
         # crawldeck: Allow lines come first so first-match and longest-match agree.\n\
         User-Agent: crawldeck\n\
         Allow: /tmp/public/\n\
         Allow: /private/crawldeck/\n\
         Disallow: /tmp\n\
         Disallow: /private\n\
         Disallow: /%7Efred/\n\
         Disallow: /~joe/\n\
         Disallow: /cache/\n\
         Crawl-delay: {delay}\n\
         \n\
         User-Agent: * # every other agent\n\
         Disallow:  # nothing is off limits\n\
         \n\
         Sitemap: {sitemap}\n",
        sitemap = ctx.abs("/sitemap.xml"),
    )
}

pub(super) fn respond(ctx: &SiteCtx, req: &Req) -> Reply {
    if req.path == "/robots.txt" {
        return Reply::text(robots_txt(ctx));
    }
    if req.path == "/sitemap.xml" {
        let mut xml = String::from(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n",
        );
        for n in 1..=POSTS {
            xml.push_str(&format!(
                "<url><loc>{}</loc></url>\n",
                ctx.abs(&format!("/posts/{n}.html"))
            ));
        }
        xml.push_str("</urlset>\n");
        return Reply::text(xml).header("content-type", "application/xml");
    }
    let path = percent_decode(req.path);
    if path == "/" {
        let mut page = Html::new("Demo blog");
        page.p("Every path below is decided by this site's robots.txt.");
        for p in blog_disallowed_paths().iter().chain(blog_allowed_paths()) {
            if *p != "/" {
                page.link(p, p);
            }
        }
        for p in EXTRA_LINK_SPELLINGS {
            page.link(p, p);
        }
        return Reply::html(page.finish());
    }
    let known = blog_disallowed_paths().contains(&path.as_str())
        || blog_allowed_paths().contains(&path.as_str());
    if !known {
        return Reply::not_found();
    }
    let mut page = Html::new(&format!("Blog page {path}"));
    page.p("A page of the demo blog.").link("/", "home");
    if let Some(n) = path
        .strip_prefix("/posts/")
        .and_then(|s| s.strip_suffix(".html"))
        .and_then(|n| n.parse::<u32>().ok())
    {
        if n < POSTS {
            page.link(&format!("/posts/{}.html", n + 1), "next post");
        }
    }
    Reply::html(page.finish())
}
