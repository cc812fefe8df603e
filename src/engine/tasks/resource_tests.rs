use url::Url;

use super::archived_resource;
use crate::engine::archive::Archive;
use crate::engine::extract::tests::opts;
use crate::engine::fetch::Response;
use crate::engine::store::read_response;
use crate::engine::tasks::Fetched;

fn response(path: &str, status: u16, content_type: &str, body: &'static [u8]) -> Response {
    Response::for_test(
        &format!("http://links.localhost:4000{path}"),
        status,
        content_type,
        body,
    )
}

/// What the coordinator gets for `response`, fetched at its final URL.
fn fetched(response: Response, warc: Option<&Archive>) -> Fetched {
    let url = response.final_url.to_string();
    archived_resource(&url, response, &opts(), warc)
}

#[test]
fn a_stylesheet_is_archived_whole_and_gives_its_urls_as_resources_not_links() {
    let dir = tempfile::tempdir().unwrap();
    let warc = Archive::in_dir(dir.path());
    let css: &[u8] = b"@font-face { src: url(/fonts/a.woff2) } /* <a href=\"/page.html\">x</a> */";
    let got = fetched(response("/css/s.css", 200, "text/css", css), Some(&warc));
    assert_eq!((got.status, got.bytes), (200, css.len() as u64));
    assert!(got.archived.error.is_none());
    let at = got.archived.at.expect("archived");
    warc.drain().unwrap();
    let archived = read_response(dir.path(), &at, 1 << 20).unwrap();
    assert_eq!(
        (archived.status, archived.body.as_slice()),
        (Some(200), css)
    );
    let extracted = got.extracted.expect("a stylesheet is read for url()");
    let resources: Vec<&str> = extracted.resources.iter().map(Url::path).collect();
    assert_eq!(resources, ["/fonts/a.woff2"]);
    assert!(
        extracted.links.is_empty(),
        "nothing is followed from a resource"
    );
    assert!(got.digest.is_some() && got.fingerprint.is_none());
}

#[test]
fn other_resources_are_archived_and_never_read_and_noarchive_is_obeyed() {
    let dir = tempfile::tempdir().unwrap();
    let warc = Archive::in_dir(dir.path());
    let html: &[u8] = b"<a href=\"/next.html\">next</a><img src=/i.png>";
    for (path, content_type) in [("/frame.html", "text/html"), ("/i.png", "image/png")] {
        let got = fetched(response(path, 200, content_type, html), Some(&warc));
        assert!(got.extracted.is_none(), "{path}: not parsed");
        assert!(got.archived.at.is_some(), "{path}: archived");
    }
    let gone = fetched(
        response("/c.css", 404, "text/css", b"url(/x.png)"),
        Some(&warc),
    );
    assert!(
        gone.extracted.is_none() && gone.digest.is_none(),
        "a 404 is not read"
    );
    assert!(
        gone.archived.at.is_some(),
        "a 404's answer is archived, as a page's"
    );
    let mut kept_out = response("/k.png", 200, "image/png", b"png");
    kept_out.x_robots_tag = vec!["noarchive".into()];
    let got = fetched(kept_out, Some(&warc));
    assert!(got.archived.at.is_none() && got.archived.error.is_none());
    let unarchived = fetched(response("/n.png", 200, "image/png", b"png"), None);
    assert!(
        unarchived.archived.at.is_none() && unarchived.archived.error.is_none(),
        "no WARC kept"
    );
}
