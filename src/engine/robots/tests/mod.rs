//! robots.txt parsing and matching: the HTTP guide chapter's examples and RFC 9309 cases.

use std::time::Duration;

use super::*;

const MAX_DELAY: Duration = Duration::from_secs(30);

fn rules(token: &str, txt: &str) -> RobotsRules {
    RobotsRules::parse(txt.as_bytes(), token, MAX_DELAY)
}

fn ok(rules: &RobotsRules, path: &str) -> bool {
    rules.allowed(&Url::parse(&format!("http://www.joes-hardware.com{path}")).unwrap())
}

// The HTTP guide's first example: Slurp and Webcrawler may crawl all but /private.
const GUIDE: &str = "\
# this robots.txt file allows Slurp & Webcrawler to crawl
# the public parts of our site, but no other robots...

User-Agent: slurp
User-Agent: webcrawler
Disallow: /private

User-Agent: *
Disallow:
";

#[test]
fn guide_example_groups() {
    for bot in ["slurp", "Webcrawler"] {
        let r = rules(bot, GUIDE);
        assert!(!ok(&r, "/private"), "{bot}");
        assert!(!ok(&r, "/private/x.html"), "{bot}");
        assert!(ok(&r, "/index.html"), "{bot}");
    }
    // Anyone else: the `*` group with an empty Disallow, i.e. everything.
    let r = rules("crawldeck", GUIDE);
    assert!(ok(&r, "/private"));
    assert!(ok(&r, "/"));
}

#[test]
fn group_names_match_case_insensitively() {
    let r = rules(
        "crawldeck",
        "User-agent: CrawlDeck\nDisallow: /x\n\nUser-agent: *\nDisallow: /\n",
    );
    assert!(!ok(&r, "/x"));
    assert!(ok(&r, "/y"));
    // No group for us and none for `*`: no restrictions.
    let r = rules("crawldeck", "User-agent: badBot\nDisallow: /\n");
    assert!(ok(&r, "/anything"));
    let r = rules("badbot", "User-agent: badBot\nDisallow: /\n");
    assert!(!ok(&r, "/anything"));
}

#[test]
fn marys_antiques() {
    let txt = "\
User-Agent: Suzy-Spider
Disallow: /dynamic
Allow: /private/suzy-stuff
Disallow: /private

User-Agent: Furniture-Finder
Allow: /dynamic/check-inventory
Disallow: /dynamic
Disallow: /private

User-Agent: *
Disallow: /dynamic
Disallow: /private
";
    let suzy = rules("suzy-spider", txt);
    assert!(!ok(&suzy, "/dynamic/page"));
    assert!(ok(&suzy, "/private/suzy-stuff/list.html"));
    assert!(!ok(&suzy, "/private/mary.html"));
    let finder = rules("Furniture-Finder", txt);
    assert!(ok(&finder, "/dynamic/check-inventory?item=chair"));
    assert!(!ok(&finder, "/dynamic/other"));
    let us = rules("crawldeck", txt);
    assert!(!ok(&us, "/dynamic/check-inventory"));
    assert!(!ok(&us, "/private/suzy-stuff"));
    assert!(ok(&us, "/catalog.html"));
}

#[test]
fn allow_wins_by_length_not_by_order() {
    for txt in [
        "User-agent: *\nAllow: /private/ok\nDisallow: /private\n",
        "User-agent: *\nDisallow: /private\nAllow: /private/ok\n",
    ] {
        let r = rules("crawldeck", txt);
        assert!(ok(&r, "/private/ok/page"), "{txt}");
        assert!(!ok(&r, "/private/no"), "{txt}");
    }
    // Same length: Allow wins (RFC 9309 §2.2.2).
    let r = rules(
        "crawldeck",
        "User-agent: *\nDisallow: /page\nAllow: /page\n",
    );
    assert!(ok(&r, "/page"));
}

#[test]
fn disallow_tmp_is_a_prefix() {
    let r = rules("crawldeck", "User-agent: *\nDisallow: /tmp\n");
    for path in [
        "/tmp",
        "/tmp/",
        "/tmp.html",
        "/tmpfile",
        "/tmp/pliers.html",
        "/tmpspc/stuff.txt",
    ] {
        assert!(!ok(&r, path), "{path}");
    }
    assert!(ok(&r, "/tm"));
    assert!(ok(&r, "/TMP"), "matching is case-sensitive");
    let r = rules("crawldeck", "User-agent: *\nDisallow: /tmp/\n");
    assert!(ok(&r, "/tmp"));
    assert!(!ok(&r, "/tmp/a.html"));
}

#[test]
fn empty_disallow_and_allow_all() {
    assert!(ok(&rules("crawldeck", "User-agent: *\nDisallow:\n"), "/a"));
    assert!(ok(&rules("crawldeck", "User-agent: *\nAllow: /\n"), "/a"));
    assert!(!ok(
        &rules("crawldeck", "User-agent: *\nDisallow: /\n"),
        "/a"
    ));
    assert!(ok(&rules("crawldeck", ""), "/a"));
    // robots.txt itself is always allowed.
    assert!(ok(
        &rules("crawldeck", "User-agent: *\nDisallow: /\n"),
        "/robots.txt"
    ));
}

#[test]
fn an_empty_rule_does_nothing_next_to_other_rules_and_allows_all_alone() {
    // RFC 9309: an empty rule matches nothing, so it cannot lift `Disallow: /`.
    let both = rules("crawldeck", "User-agent: *\nDisallow: /\nDisallow:\n");
    assert!(!ok(&both, "/a"));
    let first = rules("crawldeck", "User-agent: *\nDisallow:\nDisallow: /x\n");
    assert!(ok(&first, "/a") && !ok(&first, "/x"));
    // Alone in our group it still means "allow all", and our group stays ours
    // instead of merging with the `*` group below it.
    let ours = "User-agent: crawldeck\nDisallow:\n\nUser-agent: *\nDisallow: /\n";
    assert!(ok(&rules("crawldeck", ours), "/a"));
    assert!(!ok(&rules("otherbot", ours), "/a"));
}

#[test]
fn escapes_compare_as_the_characters_they_encode() {
    for rule in ["/~joe", "/%7Ejoe", "/%7ejoe"] {
        let r = rules("crawldeck", &format!("User-agent: *\nDisallow: {rule}\n"));
        for path in ["/~joe/index.html", "/%7Ejoe/index.html", "/%7ejoe/"] {
            assert!(!ok(&r, path), "rule {rule} vs {path}");
        }
        assert!(ok(&r, "/joe"));
    }
    // %2F is not a slash.
    let r = rules("crawldeck", "User-agent: *\nDisallow: /a%2Fb\n");
    assert!(ok(&r, "/a/b"));
    assert!(!ok(&r, "/a%2fb"));
    assert_eq!(normalize_escapes("/%7e%2f%41%zz%"), "/~%2FA%zz%");
}

#[test]
fn wildcards_and_end_anchor() {
    let r = rules(
        "crawldeck",
        "User-agent: *\nDisallow: /*.php$\nDisallow: /private*/\n",
    );
    assert!(!ok(&r, "/index.php"));
    assert!(!ok(&r, "/a/b/c.php"));
    assert!(ok(&r, "/index.php?x=1"));
    assert!(ok(&r, "/index.phps"));
    assert!(!ok(&r, "/private-stuff/x"));
    assert!(ok(&r, "/private-stuff"));
}

#[test]
fn crawl_delay_and_sitemaps() {
    let txt = "User-agent: crawldeck\nCrawl-delay: 2.5\nDisallow: /x\n\nSitemap: https://example.org/sitemap.xml\n";
    let r = rules("crawldeck", txt);
    assert_eq!(r.crawl_delay(), Some(Duration::from_millis(2500)));
    assert_eq!(r.sitemaps(), ["https://example.org/sitemap.xml"]);
    let r = rules("crawldeck", "User-agent: *\nCrawl-delay: 3600\n");
    assert_eq!(r.crawl_delay(), Some(MAX_DELAY));
    for bad in ["-5", "0", "soon", "NaN", "1e40"] {
        let r = rules("crawldeck", &format!("User-agent: *\nCrawl-delay: {bad}\n"));
        assert!(r.crawl_delay().is_none_or(|d| d <= MAX_DELAY), "{bad}");
    }
}

#[test]
fn hostile_files_do_not_panic() {
    let mut junk: Vec<u8> = (0..=255u8).cycle().take(100_000).collect();
    junk.extend_from_slice(b"\nUser-agent: *\nDisallow: /x\n");
    let r = RobotsRules::parse(&junk, "crawldeck", MAX_DELAY);
    let _ = ok(&r, "/x");
    // A pattern too large to compile is dropped; the other rules still apply.
    let huge = format!(
        "User-agent: *\nDisallow: /a{}$\nDisallow: /secret\n",
        "*b".repeat(20_000)
    );
    let r = rules("crawldeck", &huge);
    assert_eq!(r.dropped_lines(), 1);
    assert!(!ok(&r, "/secret"));
    assert!(ok(&r, "/public"));
}

#[test]
fn every_rule_of_our_group_applies() {
    let mut txt = String::from("User-agent: *\n");
    for i in 0..5000 {
        txt.push_str(&format!("Disallow: /star{i}*x$\n"));
    }
    txt.push_str("\nUser-agent: crawldeck\n");
    for i in 1..=1500 {
        if i == 1400 {
            txt.push_str("Disallow: /the-1400th\n");
        } else {
            txt.push_str(&format!("Disallow: /r{i}*x$\n"));
        }
    }
    let started = std::time::Instant::now();
    let r = rules("crawldeck", &txt);
    assert_eq!(r.dropped_lines(), 0, "no cap on the rule count");
    assert!(!ok(&r, "/the-1400th/page"), "the 1,400th rule applies");
    assert!(!ok(&r, "/r1500/ax"), "and the last one");
    assert!(ok(&r, "/star5/ax"), "the `*` group is not ours");
    assert_eq!(r.group(), RobotsGroup::ByName);
    // Not a timing assertion on speed, a guard against the unbounded case (seconds).
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[test]
fn a_leading_bom_is_ignored() {
    let r = rules(
        "crawldeck",
        "\u{feff}User-agent: crawldeck\nDisallow: /bom\n",
    );
    assert!(
        !ok(&r, "/bom"),
        "the first line is read as a User-agent line"
    );
    assert_eq!(r.group(), RobotsGroup::ByName);
}

#[test]
fn a_last_line_cut_by_the_size_limit_is_dropped() {
    let full = b"User-agent: *\nDisallow: /a\nDisallow: /private\n";
    let limit = full.len() as u64 - 8; // cuts "Disallow: /pri|vate"
    let cut = complete_lines(full, limit);
    assert_eq!(cut, b"User-agent: *\nDisallow: /a\n");
    let r = RobotsRules::parse(cut, "crawldeck", MAX_DELAY);
    assert!(!ok(&r, "/a"));
    assert!(ok(&r, "/pri"), "half a rule is no rule");
    assert!(ok(&r, "/private"));
    // A body within the limit is whole, even without a final newline.
    assert_eq!(complete_lines(b"Disallow: /x", 12), b"Disallow: /x");
    assert_eq!(complete_lines(b"Disallow: /x", 5), b"");
}

#[test]
fn versioned_group_lines_match_our_product_token() {
    let txt = "User-agent: AcmeBot/2.0\nDisallow: /acme\n\nUser-agent: *\nDisallow: /\n";
    let r = rules("acmebot", txt);
    assert!(!ok(&r, "/acme"));
    assert!(ok(&r, "/other"), "our group, not `*`");
    assert_eq!(r.group(), RobotsGroup::ByName);
    let r = rules("crawldeck", txt);
    assert!(!ok(&r, "/other"));
    assert_eq!(r.group(), RobotsGroup::Wildcard);
    let r = rules(
        "crawldeck",
        "User-agent: AcmeBot/2.0 (+https://acme.example)\nDisallow: /\n",
    );
    assert!(ok(&r, "/x"));
    assert_eq!(r.group(), RobotsGroup::NoGroup);
    assert_eq!(
        rules("crawldeck", "Disallow: /x\n").group(),
        RobotsGroup::Wildcard
    );
}

#[test]
fn field_spellings_and_line_endings_follow_the_parser() {
    let txt = "User Agent: crawldeck\rDissallow /a%7e\r\nallow : /a~/ok # comment\n";
    let r = rules("crawldeck", txt);
    assert!(!ok(&r, "/a~/x"));
    assert!(ok(&r, "/a~/ok"));
    assert!(ok(&r, "/b"));
    // Rules before any User-agent line belong to no group.
    let r = rules("crawldeck", "Disallow: /x\nUser-agent: *\nDisallow: /y\n");
    assert!(ok(&r, "/x"));
    assert!(!ok(&r, "/y"));
    // No User-agent lines at all: the rules apply to everyone.
    assert!(!ok(&rules("crawldeck", "Disallow: /x\n"), "/x"));
}

mod status;
