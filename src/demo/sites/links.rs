//! `Links` and `Elsewhere`: a small site whose pages load resources (some
//! broken) and link to another host, for resource and external-link checks.

use super::{allow_all_robots, Reply, Req, SiteCtx};
use crate::demo::html::Html;
use crate::demo::SiteKind;

/// Paths of `Links` resources that answer 200.
pub const LINKS_RESOURCES_OK: [&str; 7] = [
    "/style.css",
    "/app.js",
    "/img/ok.png",
    "/img/ok-2x.png",
    "/img/hero.png",
    "/img/tile.png",
    "/favicon.ico",
];
/// Paths of `Links` resources that answer 404.
pub const LINKS_RESOURCES_BROKEN: [&str; 2] = ["/img/missing.png", "/missing.css"];
/// Loaded only by `/style.css` (`url()`), so requested only when
/// stylesheets are fetched: a font, and an image larger than 32 KiB.
pub const LINKS_STYLESHEET_FONT: &str = "/fonts/body.woff2";
pub const LINKS_STYLESHEET_LARGE: &str = "/img/texture.png";
pub const LINKS_STYLESHEET_LARGE_BYTES: usize = 64 * 1024;
/// Written as links inside the stylesheet and the images only: a resource
/// is never parsed for links, so these are never requested.
pub const LINKS_IN_RESOURCES: [&str; 2] = ["/from-css.html", "/from-image.html"];
/// The pages of `Links`.
pub const LINKS_PAGES: [&str; 2] = ["/", "/about.html"];
/// `Elsewhere` paths `Links` links to: 200, 404, and one its robots.txt disallows.
pub const ELSEWHERE_OK: &str = "/ok.html";
pub const ELSEWHERE_GONE: &str = "/gone.html";
pub const ELSEWHERE_DISALLOWED: &str = "/private/secret.html";
/// Linked from `Elsewhere`'s pages only: a checked page's links are never followed.
pub const ELSEWHERE_NEVER: [&str; 2] = ["/deeper.html", "/private/deeper.html"];

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n<a href=\"/from-image.html\">x</a>";
const STYLESHEET: &str = ".hero { color: red }\n\
    @font-face { font-family: body; src: url(\"/fonts/body.woff2\") }\n\
    .tile { background: url(/img/texture.png) }\n\
    /* <a href=\"/from-css.html\">not a link</a> */\n";

/// The markup every `Links` page loads: stylesheets, a script, images with a
/// `srcset`, CSS `url()` in `<style>` and `style=""`.
fn resources_head() -> &'static str {
    "<link rel=\"stylesheet\" href=\"/style.css\">\n\
     <link rel=\"stylesheet\" href=\"/missing.css\">\n\
     <link rel=\"icon\" href=\"/favicon.ico\">\n\
     <style>.hero { background: url(\"/img/hero.png\") }</style>\n\
     <script src=\"/app.js\"></script>\n"
}

fn page(ctx: &SiteCtx, title: &str, other: &str) -> Reply {
    let mut html = Html::with_head(title, resources_head());
    html.raw("<img src=\"/img/ok.png\" srcset=\"/img/ok-2x.png 2x\" alt=\"ok\">\n")
        .raw("<img src=\"/img/missing.png\" alt=\"missing\">\n")
        .raw("<div class=\"hero\" style=\"background-image: url('/img/tile.png')\">tiles</div>\n")
        .link(other, "the other page");
    if let Some(peer) = ctx.peers.get(&SiteKind::Elsewhere) {
        for path in [ELSEWHERE_OK, ELSEWHERE_GONE, ELSEWHERE_DISALLOWED] {
            let url = peer.join(path).map(String::from).unwrap_or_default();
            html.link(&url, "elsewhere");
        }
    }
    Reply::html(html.finish())
}

pub(super) fn links(ctx: &SiteCtx, req: &Req) -> Reply {
    match req.path {
        "/robots.txt" => allow_all_robots(),
        "/" => page(ctx, "Links and resources", "/about.html"),
        "/about.html" => page(ctx, "About these links", "/"),
        "/style.css" => Reply::with_type(200, "text/css", STYLESHEET),
        LINKS_STYLESHEET_FONT => Reply::with_type(200, "font/woff2", &b"wOF2"[..]),
        LINKS_STYLESHEET_LARGE => {
            Reply::with_type(200, "image/png", vec![b'x'; LINKS_STYLESHEET_LARGE_BYTES])
        }
        "/app.js" => Reply::with_type(200, "text/javascript", "console.log(1);\n"),
        p if LINKS_RESOURCES_OK.contains(&p) => Reply::with_type(200, "image/png", PNG),
        _ => Reply::not_found(),
    }
}

pub(super) fn elsewhere(_ctx: &SiteCtx, req: &Req) -> Reply {
    let linking = |title: &str| {
        let mut html = Html::new(title);
        for path in ELSEWHERE_NEVER {
            html.link(path, "further");
        }
        Reply::html(html.finish())
    };
    match req.path {
        "/robots.txt" => Reply::text("User-agent: *\nDisallow: /private/\n"),
        "/" => linking("Elsewhere"),
        ELSEWHERE_OK => linking("A page elsewhere"),
        ELSEWHERE_DISALLOWED => linking("Not for crawlers"),
        _ => Reply::not_found(),
    }
}
