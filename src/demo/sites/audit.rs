//! `Audit`: a small site whose sitemaps and links disagree, for the site
//! audit. robots.txt names a sitemap index; the index lists a gzip-compressed
//! sitemap (served as `.xml.gz`, an opaque gzip file) and a plain one. The
//! sitemaps list an orphan page (linked from nowhere), a URL answering 404
//! and most linked pages; two linked pages are in no sitemap. Every page is
//! one row of [`PAGES`], so new kinds of page are one line each. Some pages
//! carry what `crawldeck audit` reports: a canonical to the 404, a `noindex`
//! page every page links, a meta refresh, two `<h1>`, a link to a missing
//! `#fragment`, a duplicate title, a page without title or heading.
//! Its second version (`DemoWeb::change_sites`) removes a page and its link,
//! retitles a page and removes a page the home page still links to.

use std::io::Write;

use super::{Reply, Req, SiteCtx};
use crate::demo::html::{filler, rng_for, Html};

/// Which sitemap file lists a page.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Listed {
    /// `/sitemaps/pages.xml.gz`.
    Gzipped,
    /// `/sitemaps/more.xml`.
    Plain,
    /// No sitemap.
    Nowhere,
}

/// What a path answers.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Body {
    Page,
    NotFound,
    /// `rel=canonical` naming this path.
    CanonicalTo(&'static str),
    /// `<meta name="robots" content="noindex">`; every other page links it.
    Noindex,
    /// `<meta http-equiv="refresh">` to this path.
    RefreshTo(&'static str),
    /// A description, two `<h1>`, an `id="steps"` and links to `#steps` and
    /// to a fragment `/about.html` lacks.
    TwoHeadings,
    /// No `<title>`, no `<h1>`.
    Untitled,
}

struct Page {
    path: &'static str,
    title: &'static str,
    body: Body,
    /// The home page links it.
    linked: bool,
    listed: Listed,
    lastmod: &'static str,
}

const fn page(path: &'static str, title: &'static str, linked: bool, listed: Listed) -> Page {
    Page {
        path,
        title,
        body: Body::Page,
        linked,
        listed,
        lastmod: "2025-03-01",
    }
}

/// A linked page of a special kind.
const fn special(path: &'static str, title: &'static str, body: Body, listed: Listed) -> Page {
    Page {
        path,
        title,
        body,
        linked: true,
        listed,
        lastmod: "2025-03-01",
    }
}

/// The site. `/` links every `linked` page; each page links home and the
/// noindex page.
const PAGES: &[Page] = &[
    page("/", "Audit demo: home", true, Listed::Gzipped),
    page("/about.html", "About us", true, Listed::Gzipped),
    page("/products/1.html", "Product one", true, Listed::Gzipped),
    page("/products/2.html", "Product two", true, Listed::Gzipped),
    page("/products/3.html", "Product three", true, Listed::Gzipped),
    page("/blog/1.html", "Blog post one", true, Listed::Plain),
    page("/blog/2.html", "Blog post two", true, Listed::Plain),
    page("/blog/3.html", "Blog post three", true, Listed::Nowhere),
    page("/contact.html", "Contact", true, Listed::Nowhere),
    page("/orphan.html", "Orphan page", false, Listed::Gzipped),
    special(
        "/canonical-elsewhere.html",
        "Canonical to a retired page",
        Body::CanonicalTo("/retired.html"),
        Listed::Plain,
    ),
    special(
        "/private-note.html",
        "Private note",
        Body::Noindex,
        Listed::Nowhere,
    ),
    special(
        "/moved.html",
        "Moved",
        Body::RefreshTo("/about.html"),
        Listed::Nowhere,
    ),
    special("/guide.html", "Guide", Body::TwoHeadings, Listed::Gzipped),
    page("/products/4.html", "Product three", true, Listed::Gzipped),
    special("/untitled.html", "", Body::Untitled, Listed::Gzipped),
    Page {
        path: "/gone.html",
        title: "",
        body: Body::NotFound,
        linked: false,
        listed: Listed::Plain,
        lastmod: "2024-01-15",
    },
    // Named only by a canonical (which a crawler follows as a link).
    Page {
        path: "/retired.html",
        title: "",
        body: Body::NotFound,
        linked: false,
        listed: Listed::Nowhere,
        lastmod: "2024-01-15",
    },
];

/// Paths in a sitemap that no page links to (the orphans), the 404 included.
pub const AUDIT_ORPHANS: &[&str] = &["/orphan.html", "/gone.html"];
/// Linked HTML pages that no sitemap lists.
pub const AUDIT_NOT_IN_SITEMAP: &[&str] = &["/blog/3.html", "/contact.html"];
/// The sitemap files, in the order a crawler finds them.
pub const AUDIT_SITEMAP_FILES: &[&str] = &[
    "/sitemap-index.xml",
    "/sitemaps/pages.xml.gz",
    "/sitemaps/more.xml",
];
/// Pages answering 200 (linked or not).
pub const AUDIT_PAGES: usize = 16;
/// Second version: this page and the home page's link to it are gone.
pub const AUDIT_CHANGED_REMOVED: &str = "/contact.html";
/// Second version: this page's title, before and after.
pub const AUDIT_CHANGED_TITLE: (&str, &str, &str) = ("/about.html", "About us", "About the team");
/// Second version: this page answers 404, and the home page still links to it.
pub const AUDIT_CHANGED_BROKEN: &str = "/blog/2.html";

/// The page at `path` in the version served, `None` where it answers 404.
fn served(ctx: &SiteCtx, path: &str) -> Option<&'static Page> {
    let gone = ctx.changed() && (path == AUDIT_CHANGED_REMOVED || path == AUDIT_CHANGED_BROKEN);
    PAGES
        .iter()
        .find(|p| p.path == path)
        .filter(|p| p.body != Body::NotFound && !gone)
}

/// Paths in a sitemap that are not an indexable 200 page.
pub const AUDIT_SITEMAP_NOT_INDEXABLE: &[&str] = &["/canonical-elsewhere.html", "/gone.html"];

pub(super) fn respond(ctx: &SiteCtx, req: &Req) -> Reply {
    match req.path {
        "/robots.txt" => Reply::text(format!(
            "User-agent: *\nDisallow: /private/\n\nSitemap: {}\n",
            ctx.abs("/sitemap-index.xml")
        )),
        "/sitemap-index.xml" => xml(index(ctx)),
        "/sitemaps/pages.xml.gz" => {
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            let urlset = urlset(ctx, Listed::Gzipped);
            let body = gz.write_all(urlset.as_bytes()).and_then(|()| gz.finish());
            match body {
                Ok(bytes) => Reply::with_type(200, "application/gzip", bytes),
                Err(_) => Reply::status(500, "gzip failed\n"),
            }
        }
        "/sitemaps/more.xml" => xml(urlset(ctx, Listed::Plain)),
        path => match served(ctx, path) {
            Some(p) => Reply::html(render(p, ctx.changed())),
            None => Reply::not_found(),
        },
    }
}

fn xml(body: String) -> Reply {
    Reply::with_type(200, "application/xml", body)
}

fn index(ctx: &SiteCtx) -> String {
    let mut out = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n",
    );
    for file in &AUDIT_SITEMAP_FILES[1..] {
        out.push_str(&format!(
            "  <sitemap><loc>{}</loc><lastmod>2025-03-01</lastmod></sitemap>\n",
            ctx.abs(file)
        ));
    }
    out.push_str("</sitemapindex>\n");
    out
}

fn urlset(ctx: &SiteCtx, listed: Listed) -> String {
    let mut out = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n",
    );
    for p in PAGES.iter().filter(|p| p.listed == listed) {
        out.push_str(&format!(
            "  <url><loc>{}</loc><lastmod>{}</lastmod></url>\n",
            ctx.abs(p.path),
            p.lastmod
        ));
    }
    out.push_str("</urlset>\n");
    out
}

fn render(p: &Page, changed: bool) -> String {
    let head = match p.body {
        Body::CanonicalTo(path) => format!("<link rel=\"canonical\" href=\"{path}\">\n"),
        Body::Noindex => "<meta name=\"robots\" content=\"noindex\">\n".into(),
        Body::RefreshTo(path) => {
            format!("<meta http-equiv=\"refresh\" content=\"0; url={path}\">\n")
        }
        Body::TwoHeadings => {
            "<meta name=\"description\" content=\"How to use the demo.\">\n".into()
        }
        _ => String::new(),
    };
    let (retitled, _, new_title) = AUDIT_CHANGED_TITLE;
    let title = if changed && p.path == retitled {
        new_title
    } else {
        p.title
    };
    let mut html = match p.body {
        Body::Untitled => Html::bare(),
        // A new title only: the heading stays.
        _ => Html::titled(title, p.title, &head),
    };
    html.p(&filler(&mut rng_for(p.path), 40));
    if p.body == Body::TwoHeadings {
        html.raw("<h1 id=\"steps\">Steps</h1>\n");
        html.link("#steps", "the steps")
            .link("/about.html#team", "the team");
    }
    if p.path == "/" {
        let removed = |o: &Page| changed && o.path == AUDIT_CHANGED_REMOVED;
        for other in PAGES
            .iter()
            .filter(|o| o.linked && o.path != "/" && !removed(o))
        {
            html.link(other.path, other.title);
        }
    } else {
        html.link("/", "home");
        if p.body != Body::Noindex {
            html.link("/private-note.html", "a note");
        }
    }
    html.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::sitemaps::parse::{parse, Kind, Limits};

    #[test]
    fn the_tables_agree_with_the_constants() {
        let pages = PAGES.iter().filter(|p| p.body != Body::NotFound);
        assert_eq!(pages.count(), AUDIT_PAGES);
        let orphans: Vec<&str> = PAGES
            .iter()
            .filter(|p| !p.linked && p.listed != Listed::Nowhere)
            .map(|p| p.path)
            .collect();
        assert_eq!(orphans, AUDIT_ORPHANS);
        let missing: Vec<&str> = PAGES
            .iter()
            .filter(|p| p.linked && p.listed == Listed::Nowhere && p.body == Body::Page)
            .map(|p| p.path)
            .collect();
        assert_eq!(missing, AUDIT_NOT_IN_SITEMAP, "indexable pages only");
        let limits = Limits {
            max_bytes: 1 << 20,
            max_urls: 100,
        };
        let base = url::Url::parse("http://audit.localhost:1/").unwrap();
        let ctx = SiteCtx {
            kind: crate::demo::SiteKind::Audit,
            base: base.clone(),
            peers: Default::default(),
            latency_scale: 0.0,
            robots_requests: Default::default(),
            page_requests: Default::default(),
            bench: (0, 0),
            changed: Default::default(),
        };
        assert_eq!(
            parse(index(&ctx).as_bytes(), limits).unwrap().kind,
            Kind::Index
        );
        let plain = parse(urlset(&ctx, Listed::Plain).as_bytes(), limits).unwrap();
        assert_eq!(plain.locs.len(), 4);
    }

    #[test]
    fn the_second_version_removes_retitles_and_breaks_exactly_one_page_each() {
        let ctx = |changed: bool| SiteCtx {
            kind: crate::demo::SiteKind::Audit,
            base: url::Url::parse("http://audit.localhost:1/").unwrap(),
            peers: Default::default(),
            latency_scale: 0.0,
            robots_requests: Default::default(),
            page_requests: Default::default(),
            bench: (0, 0),
            changed: std::sync::Arc::new(changed.into()),
        };
        let body = |changed: bool, path: &str| {
            let reply = respond(&ctx(changed), &Req { path, query: None });
            let text = match reply.body {
                super::super::ReplyBody::Full(b) => String::from_utf8(b.to_vec()).unwrap(),
                _ => panic!("a full body"),
            };
            (reply.status, text)
        };
        let (about, old_title, new_title) = AUDIT_CHANGED_TITLE;
        assert!(body(false, about)
            .1
            .contains(&format!("<title>{old_title}</title>")));
        assert!(body(true, about)
            .1
            .contains(&format!("<title>{new_title}</title>")));
        assert!(
            body(true, about)
                .1
                .contains(&format!("<h1>{old_title}</h1>")),
            "the title only"
        );
        for path in [AUDIT_CHANGED_REMOVED, AUDIT_CHANGED_BROKEN] {
            assert_eq!(body(false, path).0, 200, "{path} before");
            assert_eq!(body(true, path).0, 404, "{path} after");
        }
        let link = |path: &str| format!("href=\"{path}\"");
        let (before, after) = (body(false, "/").1, body(true, "/").1);
        assert!(before.contains(&link(AUDIT_CHANGED_REMOVED)));
        assert!(
            !after.contains(&link(AUDIT_CHANGED_REMOVED)),
            "its link goes too"
        );
        assert!(after.contains(&link(AUDIT_CHANGED_BROKEN)), "still linked");
        // Nothing else changes.
        for p in PAGES.iter().filter(|p| p.path != "/" && p.path != about) {
            if p.path != AUDIT_CHANGED_REMOVED && p.path != AUDIT_CHANGED_BROKEN {
                assert_eq!(body(false, p.path), body(true, p.path), "{}", p.path);
            }
        }
    }
}
