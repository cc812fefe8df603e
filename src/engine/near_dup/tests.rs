use std::collections::HashSet;

use super::*;
use crate::engine::config::TrapConfig;
use crate::engine::dedup::hamming;

/// The detector's default: what "near" means.
const NEAR: u32 = 6;

#[test]
fn near_is_the_detectors_default() {
    assert_eq!(TrapConfig::default().near_duplicate_bits, NEAR);
}

/// Sentences of made-up words: the same seed gives the same text.
fn prose(seed: u64, words: usize) -> String {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..words)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let word = format!("w{}", x % 5000);
            if i % 12 == 11 {
                word + ".\n"
            } else {
                word + " "
            }
        })
        .collect()
}

/// A page of a site: the same long template around `content`.
fn page(content: &str) -> String {
    let template: String = (0..40)
        .map(|i| format!("Module item{i} implements the trait for every type\n"))
        .collect();
    format!("{template}{content}\nCopyright the project authors\n")
}

fn jaccard(a: &HashSet<u64>, b: &HashSet<u64>) -> f64 {
    a.intersection(b).count() as f64 / a.union(b).count().max(1) as f64
}

#[test]
fn shingles_follow_word_order_and_fold_case() {
    let a = features_of_text("the quick brown fox jumps");
    assert_eq!(a, features_of_text("The QUICK, brown fox -- jumps!"));
    assert_ne!(a, features_of_text("the brown quick fox jumps"));
    // Shingles do not span blocks: a line break changes them.
    assert_ne!(a, features_of_text("the quick\nbrown fox jumps"));
    assert_eq!(fingerprint_alone(&TextFeatures::default()), 0);
}

#[test]
fn long_words_differing_at_the_end_and_non_ascii_words_are_distinct() {
    let long = "internationalization ".repeat(30);
    let other = "internationalizatiom ".repeat(30);
    let (a, b) = (features_of_text(&long), features_of_text(&other));
    assert!(hamming(fingerprint_alone(&a), fingerprint_alone(&b)) > 10);
    assert_ne!(
        features_of_text("café au lait"),
        features_of_text("caf au lait")
    );
}

#[test]
fn pages_sharing_only_a_template_are_far_once_it_is_learnt() {
    let templates = Templates::default();
    let pages: Vec<TextFeatures> = (0..12)
        .map(|i| features_of_text(&page(&prose(i, 40))))
        .collect();
    let prints: Vec<u64> = pages
        .iter()
        .map(|p| templates.fingerprint_page("docs.example", p).simhash)
        .collect();
    // Without the template, a short page is dominated by it.
    let (a, b) = (&pages[10], &pages[11]);
    assert!(jaccard(&a.main_shingles(), &b.main_shingles()) > 0.5);
    let without = hamming(fingerprint_alone(a), fingerprint_alone(b));
    assert!(without <= 24, "{without} bits apart without the template");
    // With it learnt, what is left is the pages' own text.
    for i in TEMPLATE_MIN_PAGES as usize..12 {
        for j in i + 1..12 {
            let d = hamming(prints[i], prints[j]);
            assert!(d > 16, "pages {i} and {j}: {d} bits");
        }
    }
}

#[test]
fn hosts_crawled_in_turn_keep_their_templates() {
    // A polite crawl of many sites asks each host in turn: the host asked
    // next is always the one asked longest ago.
    let templates = Templates::default();
    let hosts: Vec<String> = (0..1500).map(|h| format!("site{h}.example")).collect();
    let mut prints = vec![Vec::new(); hosts.len()];
    for round in 0..8u64 {
        for (h, host) in hosts.iter().enumerate() {
            let text = page(&prose(round * 10_000 + h as u64, 40));
            prints[h].push(
                templates
                    .fingerprint_page(host, &features_of_text(&text))
                    .simhash,
            );
        }
    }
    // Past the rounds that teach the template, pages sharing only it are
    // far: about half the bits apart, as unrelated texts are.
    let learnt = TEMPLATE_MIN_PAGES as usize;
    let apart: Vec<u32> = prints
        .iter()
        .map(|p| hamming(p[learnt], p[learnt + 1]))
        .collect();
    let mean = apart.iter().sum::<u32>() as f64 / apart.len() as f64;
    assert!(mean > 26.0, "{mean} bits apart on average");
    assert!(apart.iter().all(|&d| d > NEAR), "{:?}", apart.iter().min());
}

#[test]
fn copies_of_a_page_stay_near_however_many_there_are() {
    // A trap's output: the same text with another date, many times over.
    // Once the copies' shared text is on enough pages to be template, what
    // is left (a date) is too little to tell them apart by: they are
    // fingerprinted by their whole main text, and stay near one another.
    let templates = Templates::default();
    for i in 0..8 {
        templates.fingerprint_page("h.example", &features_of_text(&page(&prose(100 + i, 200))));
    }
    let body = prose(7, 300);
    let prints: Vec<u64> = (0..200)
        .map(|day| {
            let text = page(&format!("Events on day {day} of the calendar\n{body}"));
            templates
                .fingerprint_page("h.example", &features_of_text(&text))
                .simhash
        })
        .collect();
    let settled = TEMPLATE_MIN_PAGES as usize;
    for p in &prints[settled..] {
        let bits = hamming(prints[settled], *p);
        assert!(bits <= NEAR, "{bits} bits");
    }
    // Before that, the first copies are near one another too.
    for p in &prints[1..settled - 1] {
        assert!(
            hamming(prints[0], *p) <= NEAR,
            "{} bits",
            hamming(prints[0], *p)
        );
    }
}

#[test]
fn a_probe_is_measured_against_the_template_without_teaching_it() {
    let templates = Templates::default();
    let not_found = features_of_text(&page("Sorry this page has moved somewhere else"));
    let probe_print = templates.fingerprint_probe("h.example", &not_found);
    for i in 0..10 {
        templates.fingerprint_probe("h.example", &features_of_text(&page(&prose(i, 30))));
    }
    // Probes taught nothing: the template is still unknown.
    assert_eq!(
        templates.fingerprint_probe("h.example", &not_found),
        probe_print
    );
}

#[test]
fn a_host_template_is_bounded() {
    let mut host = HostTemplate::default();
    for i in 0..500 {
        host.learn(
            &features_of_text(&page(&prose(i, 120))),
            true,
            BLOCKS_PER_HOST,
        );
        assert!(host.blocks.len() <= BLOCKS_PER_HOST);
    }
    // The template survives the forgetting.
    let seen = host.learn(&features_of_text(&page("new")), true, BLOCKS_PER_HOST);
    let template = seen.iter().filter(|s| s.is_template()).count();
    assert!(template >= 40, "{template} template blocks");
}

#[test]
fn many_hosts_share_a_bounded_memory() {
    let templates = Templates::default();
    for round in 0..3u64 {
        for h in 0..HOSTS as u64 + 500 {
            let text = page(&prose(round * 100_000 + h, 400));
            templates.fingerprint_page(&format!("site{h}.example"), &features_of_text(&text));
        }
    }
    let hosts = templates.hosts.lock().unwrap();
    assert!(hosts.len() <= HOSTS, "{} hosts", hosts.len());
    let blocks: usize = hosts.values().map(|t| t.blocks.len()).sum();
    assert!(blocks <= BLOCKS, "{blocks} blocks");
    let budget = hosts.share(BLOCKS, BLOCKS_PER_HOST);
    assert!(hosts.values().all(|t| t.blocks.len() <= budget));
    // The hosts crawled last are the ones kept.
    assert!(hosts.contains(&format!("site{}.example", HOSTS + 499)));
    assert!(!hosts.contains("site0.example"));
}

/// Simhash distance against the exact measure on pairs with a known share of
/// shingles: near (within the default bits) only when the pages share most
/// of their text, and never far when they share nearly all of it.
#[test]
fn simhash_distance_follows_jaccard_on_samples() {
    let mut near_low = Vec::new();
    let mut far_high = Vec::new();
    for seed in 0..60u64 {
        let base = prose(seed, 600);
        let words: Vec<&str> = base.split(' ').collect();
        for changed_every in [3usize, 10, 200] {
            let edited: String = words
                .iter()
                .enumerate()
                .map(|(i, w)| {
                    if i % changed_every == 0 {
                        format!("x{i} ")
                    } else {
                        format!("{w} ")
                    }
                })
                .collect();
            let (a, b) = (features_of_text(&base), features_of_text(&edited));
            let j = jaccard(&a.main_shingles(), &b.main_shingles());
            let d = hamming(fingerprint_alone(&a), fingerprint_alone(&b));
            if j < 0.5 && d <= NEAR {
                near_low.push((seed, j, d));
            }
            if j > 0.95 && d > 2 * NEAR {
                far_high.push((seed, j, d));
            }
        }
    }
    assert!(near_low.is_empty(), "near at low Jaccard: {near_low:?}");
    assert!(far_high.is_empty(), "far at high Jaccard: {far_high:?}");
}

#[test]
fn a_shingle_repeated_on_every_line_does_not_decide_the_fingerprint() {
    // Python's pages end each heading and entry with a permalink sign: on a
    // long page that one shingle repeats hundreds of times.
    let with_marks = |seed: u64| {
        prose(seed, 3000)
            .lines()
            .map(|line| format!("{line}\n¶\n"))
            .collect::<String>()
    };
    let (a, b) = (
        features_of_text(&with_marks(1)),
        features_of_text(&with_marks(2)),
    );
    let bits = hamming(fingerprint_alone(&a), fingerprint_alone(&b));
    assert!(bits > 2 * NEAR, "{bits} bits");
}
