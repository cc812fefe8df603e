//! `--resources fetch`: an in-scope resource fetched once like a page (GET,
//! the page's body cap and timeouts), archived like a page's exchange,
//! never parsed for links; a stylesheet's `url()`s come back as its resources.

use super::{report_page, Fetched, PageJob};
use crate::engine::archive::Archive;
use crate::engine::dedup::ContentDigest;
use crate::engine::extract::{self, ExtractOptions, Extracted, RobotsDirectives};
use crate::engine::fetch::Response;

/// Fetches, archives and (a stylesheet) reads one resource; the answer
/// arrives as `Work::Page`, as a check's does.
pub(super) async fn run_resource(job: PageJob) {
    let PageJob {
        fetcher,
        lease,
        url,
        max_body,
        extract,
        warc,
        cpu,
        done,
        ..
    } = job;
    let fetched = fetcher.fetch(&url, None, max_body).await;
    report_page(
        fetched,
        lease,
        &cpu,
        done,
        "resource",
        move |response, lease| {
            archived_resource(&lease.entry.url, response, &extract, warc.as_deref())
        },
    );
}

/// What the coordinator records of a fetched resource: its answer, where it
/// was archived (unless `X-Robots-Tag: noarchive`), and for a 2xx
/// stylesheet its `url()` references as resources (no links, no text).
fn archived_resource(
    url: &str,
    response: Response,
    opts: &ExtractOptions,
    warc: Option<&Archive>,
) -> Fetched {
    let directives = RobotsDirectives::from_headers(&response.x_robots_tag, &opts.product_token);
    let ok = (200..300).contains(&response.status);
    let digest = ok.then(|| ContentDigest::of(&response.body));
    // A body archived before (another URL's) is a revisit, as a page's is.
    let archived = match warc {
        Some(warc) if !directives.noarchive => warc.page(url, &response, digest.as_ref(), None),
        _ => Default::default(),
    };
    let extracted = (ok && extract::is_css(response.content_type.as_deref())).then(|| {
        let (resources, resources_cut) = extract::stylesheet_resources(
            &response.body,
            &response.final_url,
            response.content_type.as_deref(),
            opts,
        );
        Extracted {
            resources,
            resources_cut,
            ..Extracted::default()
        }
    });
    Fetched {
        directives,
        digest,
        extracted,
        archived,
        ..Fetched::answer(response)
    }
}

#[cfg(test)]
#[path = "resource_tests.rs"]
mod tests;
