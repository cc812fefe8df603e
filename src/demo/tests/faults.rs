//! Misbehaving sites: robots.txt failures, the flaky window, redirects and
//! hostile responses.

use futures_util::StreamExt as _;

use super::{client, get, hrefs};
use crate::demo::sites::{faults, hostile};
use crate::demo::{DemoOptions, DemoWeb, SiteKind, STATUS_NO_RESPONSE};

#[tokio::test]
async fn robots_flaky_answers_503_three_times_then_the_rules() {
    let web = DemoWeb::start(DemoOptions::only(&[SiteKind::RobotsFlaky]))
        .await
        .unwrap();
    let client = client(&web);
    let robots = web
        .base_url(SiteKind::RobotsFlaky)
        .join("/robots.txt")
        .unwrap();
    let mut statuses = Vec::new();
    for _ in 0..5 {
        let resp = client.get(robots.clone()).send().await.unwrap();
        statuses.push(resp.status().as_u16());
        if resp.status() == 503 {
            assert_eq!(resp.headers()["retry-after"], "1");
        } else {
            assert!(resp.text().await.unwrap().contains("Disallow: /private/"));
        }
    }
    assert_eq!(statuses, [503, 503, 503, 200, 200]);
    let logged: Vec<u16> = web
        .log()
        .for_site(SiteKind::RobotsFlaky)
        .iter()
        .map(|r| r.status)
        .collect();
    assert_eq!(logged, statuses);
    web.shutdown().await;
}

#[tokio::test]
async fn flaky_fails_with_500s_and_resets_in_a_window_then_recovers() {
    let web = DemoWeb::start(DemoOptions::only(&[SiteKind::Flaky]))
        .await
        .unwrap();
    let client = client(&web);
    let base = web.base_url(SiteKind::Flaky);
    // robots.txt is not part of the failure window.
    let (status, _) = get(&client, base.join("/robots.txt").unwrap().as_str()).await;
    assert_eq!(status, 200);
    let total = faults::FLAKY_OK_BEFORE + faults::FLAKY_FAILURES + 5;
    let mut outcomes = Vec::new();
    for n in 1..=total {
        let url = base.join(&format!("/page/{}.html", n % 40 + 1)).unwrap();
        outcomes.push(match client.get(url).send().await {
            Ok(resp) => resp.status().as_u16(),
            Err(_) => STATUS_NO_RESPONSE,
        });
    }
    let window = faults::FLAKY_OK_BEFORE as usize
        ..(faults::FLAKY_OK_BEFORE + faults::FLAKY_FAILURES) as usize;
    assert!(
        outcomes[..window.start].iter().all(|s| *s == 200),
        "{outcomes:?}"
    );
    assert!(
        outcomes[window.end..].iter().all(|s| *s == 200),
        "{outcomes:?}"
    );
    let failures = &outcomes[window.clone()];
    assert!(failures
        .iter()
        .all(|s| *s == 500 || *s == STATUS_NO_RESPONSE));
    let resets = failures
        .iter()
        .filter(|s| **s == STATUS_NO_RESPONSE)
        .count();
    assert_eq!(
        resets, 6,
        "every fourth page request in the window is dropped: {outcomes:?}"
    );
    let logged: Vec<u16> = web.log().for_site(SiteKind::Flaky)[1..]
        .iter()
        .map(|r| r.status)
        .collect();
    assert_eq!(logged, outcomes);
    web.shutdown().await;
}

#[tokio::test]
async fn robots_status_sites_answer_their_status() {
    let codes = [401, 403, 404, 410, 500, 503];
    let kinds: Vec<SiteKind> = codes.iter().map(|c| SiteKind::RobotsStatus(*c)).collect();
    let web = DemoWeb::start(DemoOptions::only(&kinds)).await.unwrap();
    let client = client(&web);
    for (kind, code) in kinds.iter().zip(codes) {
        let base = web.base_url(*kind);
        assert_eq!(
            base.host_str(),
            Some(format!("robots-{code}.localhost").as_str())
        );
        let (status, _) = get(&client, base.join("/robots.txt").unwrap().as_str()).await;
        assert_eq!(status, code);
        let (_, index) = get(&client, base.as_str()).await;
        assert_eq!(hrefs(&index).len(), 5);
        let (status, _) = get(&client, base.join("/page/5.html").unwrap().as_str()).await;
        assert_eq!(status, 200);
    }
    web.shutdown().await;
}

#[tokio::test]
async fn redirect_loop_and_fifteen_hop_chain() {
    let web = DemoWeb::start(DemoOptions::only(&[SiteKind::RedirectLoop]))
        .await
        .unwrap();
    let client = client(&web);
    let base = web.base_url(SiteKind::RedirectLoop);
    let location =
        |resp: &reqwest::Response| resp.headers()["location"].to_str().unwrap().to_string();
    let a = client.get(base.join("/a").unwrap()).send().await.unwrap();
    assert_eq!(a.status(), 302);
    let b_url = base.join(&location(&a)).unwrap();
    assert_eq!(b_url.path(), "/b");
    let b = client.get(b_url).send().await.unwrap();
    assert_eq!(base.join(&location(&b)).unwrap().path(), "/a");

    let mut url = base.join("/hop/0").unwrap();
    let mut hops = 0;
    loop {
        let resp = client.get(url.clone()).send().await.unwrap();
        if resp.status() == 200 {
            break;
        }
        assert_eq!(resp.status(), 302);
        url = url.join(&location(&resp)).unwrap();
        hops += 1;
        assert!(hops <= 20, "the chain ends");
    }
    assert_eq!(hops, faults::REDIRECT_CHAIN_HOPS);
    web.shutdown().await;
}

#[tokio::test]
async fn hostile_pages_are_what_they_claim() {
    let web = DemoWeb::start(DemoOptions::only(&[SiteKind::Hostile]))
        .await
        .unwrap();
    let client = client(&web);
    let base = web.base_url(SiteKind::Hostile);
    let url = |p: &str| base.join(p).unwrap();

    let (_, index) = get(&client, base.as_str()).await;
    let links = hrefs(&index);
    assert!(links
        .iter()
        .any(|l| l.len() > hostile::HOSTILE_LONG_URL_BYTES));

    // The oversized bodies really stream past any sane cap; stop reading at 8 MB.
    for (path, declared) in [("/huge.html", false), ("/huge-declared.html", true)] {
        let resp = client.get(url(path)).send().await.unwrap();
        assert_eq!(resp.content_length().is_some(), declared, "{path}");
        if declared {
            assert_eq!(resp.content_length(), Some(hostile::HOSTILE_HUGE_BYTES));
        }
        let mut stream = resp.bytes_stream();
        let mut read = 0usize;
        while let Some(chunk) = stream.next().await {
            read += chunk.unwrap().len();
            if read > 8 << 20 {
                break;
            }
        }
        assert!(read > 8 << 20, "{path}");
    }

    let bomb = client.get(url("/bomb.html")).send().await.unwrap();
    assert_eq!(bomb.headers()["content-encoding"], "gzip");
    let compressed = bomb.bytes().await.unwrap();
    assert!(
        compressed.len() < 1 << 20,
        "{} bytes on the wire",
        compressed.len()
    );
    let mut decoder = flate2::read::GzDecoder::new(&compressed[..]);
    let inflated = std::io::copy(&mut decoder, &mut std::io::sink()).unwrap();
    assert!(inflated >= hostile::HOSTILE_BOMB_BYTES as u64);

    let (_, many) = get(&client, url("/many-links.html").as_str()).await;
    assert_eq!(hrefs(&many).len(), hostile::HOSTILE_LINK_COUNT);
    let (_, esc) = get(&client, url("/esc-title.html").as_str()).await;
    assert!(esc.contains('\x1b') && esc.contains('\x07'));
    web.shutdown().await;
}
