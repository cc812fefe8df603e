//! `Hostile`: responses a crawler must survive with bounded time and memory.

use std::io::Write as _;
use std::sync::OnceLock;

use bytes::Bytes;

use super::{allow_all_robots, Reply, ReplyBody, Req, SiteCtx};
use crate::demo::html::Html;

/// Size of the streamed oversized bodies.
pub const HOSTILE_HUGE_BYTES: u64 = 50 * 1024 * 1024;
/// Decompressed size of the gzip bomb.
pub const HOSTILE_BOMB_BYTES: usize = 128 * 1024 * 1024;
pub const HOSTILE_LINK_COUNT: usize = 100_000;
pub const HOSTILE_LONG_URL_BYTES: usize = 100 * 1024;

/// One chunk of HTML filler, reused for every streamed body.
pub(crate) fn huge_chunk() -> Bytes {
    static CHUNK: OnceLock<Bytes> = OnceLock::new();
    CHUNK
        .get_or_init(|| {
            let line = "<p>filler filler filler filler filler filler filler filler</p>\n";
            Bytes::from(line.repeat(64 * 1024 / line.len()))
        })
        .clone()
}

fn gzip_bomb() -> Bytes {
    static BOMB: OnceLock<Bytes> = OnceLock::new();
    BOMB.get_or_init(|| {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        let zeros = vec![0u8; 1024 * 1024];
        let _ = enc.write_all(b"<html><body>");
        for _ in 0..HOSTILE_BOMB_BYTES / zeros.len() {
            let _ = enc.write_all(&zeros);
        }
        Bytes::from(enc.finish().unwrap_or_default())
    })
    .clone()
}

fn many_links() -> Bytes {
    static PAGE: OnceLock<Bytes> = OnceLock::new();
    PAGE.get_or_init(|| {
        let mut page = Html::new("One hundred thousand links");
        for n in 0..HOSTILE_LINK_COUNT {
            page.raw(&format!("<a href=\"/many/{n}.html\">{n}</a>\n"));
        }
        Bytes::from(page.finish())
    })
    .clone()
}

/// Builds the expensive bodies ahead of time so no request pays for them.
pub(crate) fn warm_up() {
    gzip_bomb();
    many_links();
    huge_chunk();
}

/// The page title with terminal escape sequences (clear screen, colour, window title, bell).
pub const HOSTILE_ESC_TITLE: &str = "Evil\x1b[2J\x1b[31m title\x1b]0;owned\x07\x1b[0m";

pub(super) fn respond(_ctx: &SiteCtx, req: &Req) -> Reply {
    match req.path {
        "/robots.txt" => allow_all_robots(),
        "/" => {
            let long_url = format!("/long?{}", "q".repeat(HOSTILE_LONG_URL_BYTES));
            Reply::html(
                Html::new("Hostile pages")
                    .link("/huge.html", "50 MB, streamed without a length")
                    .link("/huge-declared.html", "50 MB with Content-Length")
                    .link("/bomb.html", "gzip bomb")
                    .link("/many-links.html", "100,000 links")
                    .link("/long-url.html", "a 100 KB URL")
                    .link("/esc-title.html", "escape sequences in the title")
                    .link("/stall.html", "stalls after the headers")
                    .link("/no-location.html", "a redirect that names no target")
                    .link(&long_url, "the long URL itself")
                    .finish(),
            )
        }
        "/huge.html" => huge(false),
        "/huge-declared.html" => huge(true),
        "/bomb.html" => {
            let mut r = Reply::html(String::new()).header("content-encoding", "gzip");
            r.body = ReplyBody::Full(gzip_bomb());
            r
        }
        "/many-links.html" => {
            let mut r = Reply::html(String::new());
            r.body = ReplyBody::Full(many_links());
            r
        }
        "/long-url.html" => {
            let long_url = format!("/long?{}", "q".repeat(HOSTILE_LONG_URL_BYTES));
            Reply::html(
                Html::new("A very long URL")
                    .link(&long_url, "long")
                    .link("/", "home")
                    .finish(),
            )
        }
        "/esc-title.html" => {
            // Written raw: escaping would not remove control characters anyway.
            Reply::html(format!(
                "<html><head><title>{HOSTILE_ESC_TITLE}</title></head><body><a href=\"/\">home</a></body></html>"
            ))
        }
        "/stall.html" => {
            let mut r = Reply::html(String::new());
            r.body = ReplyBody::Stall;
            r
        }
        "/no-location.html" => Reply::status(302, "moved, but where?\n"),
        _ => Reply::not_found(),
    }
}

fn huge(declared: bool) -> Reply {
    let mut r = Reply::html(String::new());
    r.body = ReplyBody::Huge {
        total: HOSTILE_HUGE_BYTES,
    };
    if declared {
        r = r.header("content-length", HOSTILE_HUGE_BYTES.to_string());
    }
    r
}
