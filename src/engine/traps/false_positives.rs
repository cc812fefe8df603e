//! Normal sites crawled to the end at the default thresholds: no alert.

use url::Url;

use super::sim::{crawl, distinct, Sim};
use super::*;

fn assert_quiet(sim: &Sim, min_fetched: usize) {
    assert!(
        sim.fetched >= min_fetched,
        "only {} pages crawled",
        sim.fetched
    );
    assert!(sim.alerts.is_empty(), "false alerts: {:#?}", sim.alerts);
}

const CATEGORIES: [&str; 8] = [
    "shoes", "hats", "bags", "coats", "socks", "belts", "gloves", "scarves",
];

fn shop_links(page: &Url) -> Vec<String> {
    let segs = segments(page);
    let product = |seed: u64| 1000 + hash_str(&seed.to_string()) % 400;
    match segs.as_slice() {
        [] => CATEGORIES
            .iter()
            .map(|c| format!("/category/{c}"))
            .chain(["/about".into(), "/contact".into(), "/cart".into()])
            .collect(),
        ["category", c] => {
            let page_no: u64 = page
                .query()
                .and_then(|q| q.strip_prefix("page="))
                .map_or(1, |n| n.parse().unwrap());
            let ci = CATEGORIES.iter().position(|x| x == c).unwrap() as u64;
            let mut out: Vec<String> = (0..10)
                .map(|i| format!("/product/{}", product(ci * 1000 + page_no * 10 + i)))
                .collect();
            if page_no < 6 {
                out.push(format!("/category/{c}?page={}", page_no + 1));
            }
            out.push("/".into());
            out
        }
        ["product", id] => {
            let id: u64 = id.parse().unwrap();
            let mut out: Vec<String> = (0..4)
                .map(|i| format!("/product/{}", product(id * 7 + i)))
                .collect();
            out.push(format!("/product/{id}/reviews"));
            out.push(format!("/category/{}", CATEGORIES[(id % 8) as usize]));
            out
        }
        _ => vec!["/".into()],
    }
}

#[test]
fn normal_shop_raises_nothing() {
    let cfg = TrapConfig::default();
    let sim = crawl(
        &cfg,
        &["http://shop.localhost:4000/"],
        5000,
        |p, _| shop_links(p),
        distinct,
    );
    assert_quiet(&sim, 500);
}

#[test]
fn deep_but_finite_tree_raises_nothing() {
    let cfg = TrapConfig::default();
    // Binary tree of directories, 10 levels below the root.
    let sim = crawl(
        &cfg,
        &["http://docs.localhost:4000/"],
        5000,
        |page, _| {
            let depth = segments(page).len();
            if depth >= 10 {
                return vec!["/".into(), "../".into()];
            }
            ["l", "r"]
                .iter()
                .map(|side| format!("{side}{}/", depth + 1))
                .chain(["/".into(), "../".into()])
                .collect()
        },
        distinct,
    );
    assert_quiet(&sim, 2000);
}

#[test]
fn paginated_listing_with_sort_and_filter_raises_nothing() {
    let cfg = TrapConfig::default();
    // 100 plain pages, 20 per sort order, 5 filtered: 145 query strings on /list.
    let sim = crawl(
        &cfg,
        &["http://list.localhost:4000/list"],
        1000,
        |page, _| {
            let mut page_no = 1;
            let mut extra = String::new();
            for (k, v) in page.query_pairs() {
                if k == "page" {
                    page_no = v.parse().unwrap();
                } else {
                    extra = format!("&{k}={v}");
                }
            }
            let last = match extra.as_str() {
                "" => 100,
                "&filter=red" => 5,
                _ => 20,
            };
            let mut out = vec![format!("/list?page=1{extra}")];
            if page_no > 1 {
                out.push(format!("/list?page={}{extra}", page_no - 1));
            }
            if page_no < last {
                out.push(format!("/list?page={}{extra}", page_no + 1));
            }
            if extra.is_empty() && page_no == 1 {
                out.extend(
                    ["&sort=price", "&sort=name", "&filter=red"]
                        .iter()
                        .map(|e| format!("/list?page=1{e}")),
                );
            }
            out
        },
        distinct,
    );
    assert_eq!(sim.seen.len(), 146);
    assert_quiet(&sim, 146);
}

const SLUGS: [&str; 3] = ["hello-rust", "notes-on-crawling", "weekend-trip"];

/// Posts on days 5, 12, 19 of each month from 2023-05 to 2024-12.
fn blog_links(page: &Url) -> Vec<String> {
    let month_index = |y: i32, m: i32| y * 12 + m - 1;
    let (first, last) = (month_index(2023, 5), month_index(2024, 12));
    let archive = |t: i32| format!("/{}/{:02}/", t / 12, t % 12 + 1);
    let post = |t: i32, k: usize| {
        format!(
            "/{}/{:02}/{:02}/{}/",
            t / 12,
            t % 12 + 1,
            5 + 7 * k,
            SLUGS[k]
        )
    };
    let segs = segments(page);
    let mut out = Vec::new();
    match segs.as_slice() {
        [] => {
            out.push(archive(last));
            out.extend((0..3).map(|k| post(last, k)));
            out.push("/tag/rust".into());
        }
        ["tag", _] => {
            let page_no: i32 = page.query().map_or(1, |q| q[5..].parse().unwrap());
            if page_no < 4 {
                out.push(format!("/tag/rust?page={}", page_no + 1));
            }
        }
        [y, m] => {
            let t = month_index(y.parse().unwrap(), m.parse().unwrap());
            out.extend((0..3).map(|k| post(t, k)));
            if t > first {
                out.push(archive(t - 1));
            }
            if t < last {
                out.push(archive(t + 1));
            }
        }
        [y, m, _, slug] => {
            let t = month_index(y.parse().unwrap(), m.parse().unwrap());
            let k = SLUGS.iter().position(|s| s == slug).unwrap();
            out.push(archive(t));
            if k > 0 {
                out.push(post(t, k - 1));
            } else if t > first {
                out.push(post(t - 1, 2));
            }
            out.push("/tag/rust".into());
        }
        _ => {}
    }
    out
}

#[test]
fn blog_with_dates_in_paths_raises_nothing() {
    let cfg = TrapConfig::default();
    let sim = crawl(
        &cfg,
        &["http://blog.localhost:4000/"],
        2000,
        |p, _| blog_links(p),
        distinct,
    );
    // 20 archives + 60 posts + home + 4 tag pages.
    assert_eq!(sim.seen.len(), 85);
    assert_quiet(&sim, 85);
}

/// The quiet sites above are quiet because of the thresholds, not because the
/// detectors never look: tighter settings do raise on them.
#[test]
fn the_same_sites_raise_at_tighter_thresholds() {
    let kinds =
        |sim: &Sim| -> Vec<TrapKind> { sim.alerts.iter().map(|a| a.detection.kind).collect() };

    let blog = TrapConfig {
        max_counter_run: 10,
        ..TrapConfig::default()
    };
    let sim = crawl(
        &blog,
        &["http://blog.localhost:4000/"],
        2000,
        |p, _| blog_links(p),
        distinct,
    );
    assert!(
        kinds(&sim).contains(&TrapKind::Counter),
        "{:?}",
        kinds(&sim)
    );

    let listing = TrapConfig {
        max_query_variants: 100,
        ..TrapConfig::default()
    };
    let sim = crawl(
        &listing,
        &["http://list.localhost:4000/list"],
        1000,
        |page, _| {
            let n: u32 = page.query().map_or(1, |q| q[5..].parse().unwrap_or(1));
            if n < 150 {
                vec![format!("/list?page={}", n + 1)]
            } else {
                vec![]
            }
        },
        distinct,
    );
    assert!(
        kinds(&sim).contains(&TrapKind::QueryExplosion),
        "{:?}",
        kinds(&sim)
    );

    let docs = TrapConfig {
        max_path_depth: 8,
        ..TrapConfig::default()
    };
    let sim = crawl(
        &docs,
        &["http://docs.localhost:4000/"],
        5000,
        |page, _| {
            let depth = segments(page).len();
            if depth >= 10 {
                return vec![];
            }
            vec![format!("l{}/", depth + 1), format!("r{}/", depth + 1)]
        },
        distinct,
    );
    assert!(
        kinds(&sim).contains(&TrapKind::DepthGrowth),
        "{:?}",
        kinds(&sim)
    );

    let shop = TrapConfig {
        near_duplicate_bits: 64,
        ..TrapConfig::default()
    };
    let sim = crawl(
        &shop,
        &["http://shop.localhost:4000/"],
        5000,
        |p, _| shop_links(p),
        distinct,
    );
    assert!(
        kinds(&sim).contains(&TrapKind::NearDuplicates),
        "{:?}",
        kinds(&sim)
    );
}

#[test]
fn hex_item_ids_are_not_session_ids() {
    let cfg = TrapConfig::default();
    // 150 items with content-hash ids, each on three pages.
    let id = |i: u64| format!("{:016x}{:016x}", hash_str(&i.to_string()), i);
    let sim = crawl(
        &cfg,
        &["http://files.localhost:4000/"],
        2000,
        |page, _| match page.path() {
            "/" => (0..150).map(|i| format!("/item?id={}", id(i))).collect(),
            "/item" => {
                let q = page.query().unwrap_or("");
                vec![
                    format!("/item/raw?{q}"),
                    format!("/item/history?{q}"),
                    "/".into(),
                ]
            }
            _ => vec![],
        },
        distinct,
    );
    assert_quiet(&sim, 450);
}

/// `n` of `/p/n.html`; 0 for any other page.
fn page_number(page: &Url) -> u64 {
    page.path()
        .strip_prefix("/p/")
        .and_then(|p| p.strip_suffix(".html"))
        .map_or(0, |n| n.parse().unwrap())
}

/// A tree of `pages` pages under `/p/`, 40 children a page, like the bench site.
fn tree_links(page: &Url, pages: u64) -> Vec<String> {
    let i = page_number(page);
    (i * 40 + 1..(i * 40 + 41).min(pages))
        .map(|c| format!("/p/{c}.html"))
        .collect()
}

#[test]
fn near_pages_scattered_over_a_large_site_raise_nothing() {
    // 30,000 distinct pages sharing a template, a few of which land within
    // two bits of one another by chance: two early on, so their cluster is
    // kept, then one in 997 (the bench site's 100,000 pages had 21 such pages
    // under `/p/` by page 35,696). Scattered, they are no trap.
    let cfg = TrapConfig::default();
    let stub = 0x5eed_0000_0000_5eedu64;
    let sim = crawl(
        &cfg,
        &["http://big.localhost:4000/"],
        30_000,
        |page, _| tree_links(page, 30_000),
        |url| match page_number(url) {
            n @ (1 | 2) => Some(stub ^ (1 << n)),
            n if n % 997 == 0 && n > 0 => Some(stub ^ (1 << (n % 64))),
            _ => distinct(url),
        },
    );
    assert_quiet(&sim, 30_000);
}

#[test]
fn a_frame_link_on_every_class_page_raises_nothing() {
    // Javadoc: each of 2,000 class pages links `index.html?<its path>`, the
    // frameset showing it. Many variants of one path, none begetting another.
    let cfg = TrapConfig::default();
    let sim = crawl(
        &cfg,
        &["http://api.localhost:4000/allclasses.html"],
        5000,
        |page, _| {
            if page.path() == "/allclasses.html" {
                return (0..2000).map(|i| format!("/org/C{i}.html")).collect();
            }
            match page.path().strip_prefix("/org/") {
                Some(class) => vec![
                    format!("/index.html?org/{class}"),
                    "/allclasses.html".into(),
                ],
                None => vec![],
            }
        },
        distinct,
    );
    assert_quiet(&sim, 4000);
}

#[test]
fn pages_linked_from_near_duplicates_of_another_kind_did_not_beget_themselves() {
    // Javadoc: similar small class pages each link their own "no usage"
    // page; the "no usage" pages are copies, but none links another.
    let cfg = TrapConfig::default();
    let sim = crawl(
        &cfg,
        &["http://api.localhost:4000/org/allclasses.html"],
        5000,
        |page, _| {
            let path = page.path();
            if path == "/org/allclasses.html" {
                (0..300).map(|i| format!("/org/C{i}.html")).collect()
            } else if let Some(class) = path.strip_prefix("/org/C") {
                vec![format!("/org/use/C{class}")]
            } else {
                vec![]
            }
        },
        |u| {
            let path = u.path();
            if path.starts_with("/org/use/") {
                Some(0x5555_0000_aaaa_ffff)
            } else if path.starts_with("/org/C") {
                Some(0x0f0f_0f0f_0f0f_0f0f ^ (1 << (hash_str(path) % 64)))
            } else {
                distinct(u)
            }
        },
    );
    assert_quiet(&sim, 500);
}
