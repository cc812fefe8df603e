//! Extraction throughput on a synthetic page, printed by `crawldeck bench`.

use std::fmt::Write as _;
use std::time::Duration;

use url::Url;

use super::{extract, ExtractOptions};

/// One run of [`measure_extraction`].
#[derive(Debug, Clone, PartialEq)]
pub struct ExtractionMeasurement {
    pub pages: usize,
    pub page_bytes: usize,
    pub links_per_page: usize,
    pub elapsed: Duration,
    /// Pages per second on the calling thread (one core).
    pub pages_per_sec: f64,
}

/// A ~23 KB article page with ~50 links, shaped like the pages the crawler sees.
pub fn sample_page() -> String {
    let mut page = String::with_capacity(24 * 1024);
    page.push_str(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>Spring catalogue &amp; notes \u{2014} Example Shop</title>\
         <meta name=\"robots\" content=\"index, follow\">\
         <link rel=\"stylesheet\" href=\"/static/site.css\">\
         <link rel=\"canonical\" href=\"https://shop.example/catalogue/spring\">\
         <style>body{font-family:sans-serif}.nav a{padding:4px}</style>\
         <script>window.dataLayer=[];function track(e){dataLayer.push(e)}</script>\
         </head><body><div class=\"nav\">",
    );
    for i in 0..12 {
        let _ = write!(page, "<a href=\"/section/{i}/\">Section {i}</a> ");
    }
    page.push_str("</div><main>");
    let mut paragraph = 0;
    while page.len() < 22 * 1024 + 512 {
        let _ = write!(
            page,
            "<h2 id=\"p{paragraph}\">Part {paragraph}</h2><p class=\"body\">Robots exclusion \
             lets a site tell crawlers which paths to avoid; a polite crawler fetches \
             robots.txt first, spaces its requests and identifies itself. Entry \
             {paragraph} continues with details on queues, hosts and politeness delays \
             and how a frontier keeps one queue per host.</p>"
        );
        if paragraph < 34 {
            let _ = write!(
                page,
                "<p>See <a href=\"/catalogue/item?id={paragraph}&amp;ref=spring\">item {paragraph}</a>.</p>"
            );
        }
        paragraph += 1;
    }
    page.push_str("</main><footer>");
    for (i, target) in ["about", "contact", "privacy", "terms"].iter().enumerate() {
        let _ = write!(
            page,
            "<a href=\"https://shop.example/{target}\" rel=\"nofollow\">{i}</a>"
        );
    }
    page.push_str("</footer></body></html>\n");
    page
}

/// Extracts `pages` copies of [`sample_page`] and reports the rate.
pub fn measure_extraction(pages: usize) -> ExtractionMeasurement {
    let page = sample_page();
    let page_url = Url::parse("https://shop.example/catalogue/spring").expect("static URL parses");
    let opts = ExtractOptions {
        product_token: "crawldeck".into(),
        max_links: 1000,
        max_link_bytes: 1 << 20,
        max_url_len: 2048,
        max_resources: crate::engine::config::DEFAULT_MAX_RESOURCES_PER_PAGE,
    };
    let templates = crate::engine::near_dup::Templates::default();
    let mut links_per_page = 0;
    // Wall-clock on purpose: this measures real CPU throughput, not engine time.
    let started = std::time::Instant::now();
    for _ in 0..pages {
        let mut extracted = extract(
            page.as_bytes(),
            &page_url,
            Some("text/html; charset=utf-8"),
            &opts,
        );
        templates.fingerprint_page("shop.example", &std::mem::take(&mut extracted.features));
        links_per_page = std::hint::black_box(extracted).links.len();
    }
    let elapsed = started.elapsed();
    let seconds = elapsed.as_secs_f64();
    ExtractionMeasurement {
        pages,
        page_bytes: page.len(),
        links_per_page,
        elapsed,
        pages_per_sec: if seconds > 0.0 {
            pages as f64 / seconds
        } else {
            0.0
        },
    }
}
