use std::io::Write;

use super::*;

const LIMITS: Limits = Limits {
    max_bytes: 1 << 20,
    max_urls: 100,
};

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

fn urls(parsed: &Parsed) -> Vec<&str> {
    parsed.locs.iter().map(|l| l.url.as_str()).collect()
}

#[test]
fn a_urlset_gives_its_locs_and_lastmods() {
    let xml = br#"<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
        xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">
  <url><loc> http://a.test/one?x=1&amp;y=2 </loc><lastmod>2024-05-01</lastmod></url>
  <url>
    <loc><![CDATA[http://a.test/two]]></loc>
    <lastmod>yesterday</lastmod>
    <image:image><image:loc>http://a.test/pic.jpg</image:loc></image:image>
  </url>
  <url><lastmod>2024-01-01</lastmod></url>
</urlset>"#;
    let parsed = parse(xml, LIMITS).unwrap();
    assert_eq!(parsed.kind, Kind::UrlSet);
    assert_eq!(
        urls(&parsed),
        ["http://a.test/one?x=1&y=2", "http://a.test/two"]
    );
    assert_eq!(parsed.locs[0].lastmod.as_deref(), Some("2024-05-01"));
    assert_eq!(parsed.locs[1].lastmod, None, "not a date: not kept");
    assert_eq!(parsed.skipped, 1, "the entry without <loc>");
}

#[test]
fn an_index_lists_sitemap_files_with_a_prefixed_namespace_too() {
    let xml = br#"<sm:sitemapindex xmlns:sm="http://www.sitemaps.org/schemas/sitemap/0.9">
  <sm:sitemap><sm:loc>http://a.test/s1.xml.gz</sm:loc><sm:lastmod>2024-05-01T10:00:00+00:00</sm:lastmod></sm:sitemap>
  <sm:sitemap><sm:loc>http://a.test/s2.xml</sm:loc></sm:sitemap>
</sm:sitemapindex>"#;
    let parsed = parse(xml, LIMITS).unwrap();
    assert_eq!(parsed.kind, Kind::Index);
    assert_eq!(
        urls(&parsed),
        ["http://a.test/s1.xml.gz", "http://a.test/s2.xml"]
    );
    assert_eq!(
        parsed.locs[0].lastmod.as_deref(),
        Some("2024-05-01T10:00:00+00:00")
    );
}

#[test]
fn gzip_is_recognized_by_its_magic_bytes() {
    let xml = b"<urlset><url><loc>http://a.test/z</loc></url></urlset>";
    let parsed = parse(&gzip(xml), LIMITS).unwrap();
    assert_eq!(urls(&parsed), ["http://a.test/z"]);
    let broken = &gzip(xml)[..20];
    assert!(matches!(parse(broken, LIMITS), Err(ParseError::Gzip(_))));
}

#[test]
fn a_gzip_bomb_stops_at_the_byte_limit() {
    let mut xml = b"<urlset>".to_vec();
    xml.extend(std::iter::repeat_n(b' ', 4 << 20));
    xml.extend_from_slice(b"</urlset>");
    let bomb = gzip(&xml);
    assert!(bomb.len() < 64 * 1024, "compresses well");
    let err = parse(&bomb, LIMITS).unwrap_err();
    assert_eq!(err, ParseError::TooLarge { limit: 1 << 20 });
    assert!(matches!(
        parse(&xml, LIMITS),
        Err(ParseError::TooLarge { .. })
    ));
}

#[test]
fn entries_past_the_cap_are_counted_not_kept() {
    let mut xml = String::from("<urlset>");
    for i in 0..250 {
        xml.push_str(&format!("<url><loc>http://a.test/{i}</loc></url>"));
    }
    xml.push_str("</urlset>");
    let parsed = parse(xml.as_bytes(), LIMITS).unwrap();
    assert_eq!(parsed.locs.len(), 100);
    assert_eq!(parsed.cut, 150);
    assert_eq!(parsed.locs[99].url, "http://a.test/99");
}

#[test]
fn an_overlong_loc_is_skipped() {
    let long = "x".repeat(MAX_LOC_BYTES + 1);
    let xml = format!(
        "<urlset><url><loc>http://a.test/{long}</loc></url><url><loc>http://a.test/ok</loc></url></urlset>"
    );
    let parsed = parse(xml.as_bytes(), LIMITS).unwrap();
    assert_eq!(urls(&parsed), ["http://a.test/ok"]);
    assert_eq!(parsed.skipped, 1);
}

#[test]
fn malformed_and_foreign_files_are_errors() {
    let cases: [&[u8]; 5] = [
        b"<urlset><url><loc>http://a.test/</url></urlset>",
        b"<urlset><url><loc>http://a.test/</loc></url>",
        b"<html><body>not found</body></html>",
        b"",
        b"<urlset><url><loc>&bomb;</loc></url></urlset>",
    ];
    for body in cases {
        assert!(
            parse(body, LIMITS).is_err(),
            "{}",
            String::from_utf8_lossy(body)
        );
    }
    assert!(matches!(
        parse(b"<html/>", LIMITS),
        Err(ParseError::NotASitemap(name)) if name == "html"
    ));
    assert_eq!(parse(b"  ", LIMITS), Err(ParseError::Empty));
}

#[test]
fn a_doctype_entity_is_not_expanded() {
    let xml = br#"<!DOCTYPE urlset [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;">]>
<urlset><url><loc>http://a.test/&b;</loc></url></urlset>"#;
    assert!(parse(xml, LIMITS).is_err(), "an unknown entity is an error");
}
