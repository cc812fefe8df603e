//! Several stores read as one crawl: the workers of a shared crawl, each of
//! which keeps the records of the pages it fetched, the links it left out and
//! the referrers it found. Every stream is a merge by URL of the parts'
//! streams (all in URL order), so a listing of the whole crawl streams as one
//! of a single store does, holding one row per part.

use std::iter::Peekable;
use std::path::PathBuf;

use super::Results;
use crate::engine::store::{
    Entries, FilteredUrl, FragmentLinks, PageRecord, SitemapEntry, StoreError, MAX_REFERRERS,
};

/// One worker's records.
pub struct Part {
    /// The worker's name.
    pub worker: String,
    /// Its data directory, when this machine reads it itself (its archive
    /// is read from there).
    pub dir: Option<PathBuf>,
    /// Its reads.
    pub results: Results,
}

/// The workers' records together.
pub struct Merged {
    parts: Vec<Part>,
}

impl Merged {
    /// The crawl of these parts.
    pub fn new(parts: Vec<Part>) -> Merged {
        Merged { parts }
    }

    /// The parts, in the order given.
    pub fn parts(&self) -> &[Part] {
        &self.parts
    }

    fn each<T>(
        &self,
        open: impl Fn(&Results) -> Result<Entries<T>, StoreError>,
    ) -> Result<Vec<Entries<T>>, StoreError> {
        self.parts.iter().map(|p| open(&p.results)).collect()
    }

    /// Page records: a URL two workers recorded (one killed after its record
    /// and before its lease ended) is the later record.
    pub(super) fn pages(
        &self,
        open: impl Fn(&Results) -> Result<Entries<PageRecord>, StoreError>,
    ) -> Result<Entries<PageRecord>, StoreError> {
        Ok(merge(self.each(open)?, |p| &p.url, later_record))
    }

    /// Links left out: the first found.
    pub(super) fn filtered(&self, prefix: &str) -> Result<Entries<FilteredUrl>, StoreError> {
        let first = |a: FilteredUrl, b: FilteredUrl| match b.found_at_unix_ms < a.found_at_unix_ms {
            true => b,
            false => a,
        };
        Ok(merge(self.each(|r| r.filtered(prefix))?, |f| &f.url, first))
    }

    /// Each URL's referrers from every worker, up to the store's number.
    pub(super) fn referrer_entries(
        &self,
        prefix: &str,
    ) -> Result<Entries<(String, Vec<String>)>, StoreError> {
        let streams = self.each(|r| r.referrer_entries(prefix))?;
        Ok(merge(
            streams,
            |(url, _)| url,
            |(url, a), (_, b)| (url, joined_referrers(a, b)),
        ))
    }

    /// Inlinks: each worker counted the links of the pages it fetched.
    pub(super) fn inlinks_of(&self, urls: &[String]) -> Result<Vec<u32>, StoreError> {
        let mut total = vec![0u32; urls.len()];
        for part in &self.parts {
            let counts = part.results.inlinks_of(urls)?;
            for (sum, n) in total.iter_mut().zip(counts) {
                *sum = sum.saturating_add(n);
            }
        }
        Ok(total)
    }

    /// A page's `#fragment` links from every worker, each fragment once.
    pub(super) fn fragment_links(
        &self,
        prefix: &str,
    ) -> Result<Entries<FragmentLinks>, StoreError> {
        let streams = self.each(|r| r.fragment_links(prefix))?;
        Ok(merge(
            streams,
            |(page, _)| page,
            |(page, mut a), (_, b)| {
                a.extend(b);
                a.sort_by(|x, y| x.0.cmp(&y.0));
                a.dedup_by(|x, y| x.0 == y.0);
                (page, a)
            },
        ))
    }

    /// Sitemap rows: the first worker's.
    pub(super) fn sitemap_entries(
        &self,
        prefix: &str,
    ) -> Result<Entries<SitemapEntry>, StoreError> {
        let streams = self.each(|r| r.sitemap_entries(prefix))?;
        Ok(merge(streams, |s| &s.url, |a, _| a))
    }

    /// The record of one URL: the latest of the workers'.
    pub(super) fn page(&self, url: &str) -> Result<Option<PageRecord>, StoreError> {
        let mut found: Option<PageRecord> = None;
        for part in &self.parts {
            if let Some(record) = part.results.page(url)? {
                found = Some(match found {
                    Some(earlier) => later_record(earlier, record),
                    None => record,
                });
            }
        }
        Ok(found)
    }

    /// One URL's referrers from every worker.
    pub(super) fn referrers(&self, url: &str) -> Result<Vec<String>, StoreError> {
        let mut all = Vec::new();
        for part in &self.parts {
            all = joined_referrers(all, part.results.referrers(url)?);
        }
        Ok(all)
    }

    /// Every worker's rules with their origins, each number once (the
    /// command stream gives the workers the same rules in the same order).
    pub(super) fn rule_origins(&self) -> Result<Vec<(u64, String)>, StoreError> {
        let mut all = Vec::new();
        for part in &self.parts {
            all.extend(part.results.rule_origins()?);
        }
        all.sort();
        all.dedup_by_key(|(id, _)| *id);
        Ok(all)
    }
}

fn later_record(a: PageRecord, b: PageRecord) -> PageRecord {
    match b.fetched_at_unix_ms > a.fetched_at_unix_ms {
        true => b,
        false => a,
    }
}

/// `a`'s referrers, then those of `b` it lacks, up to [`MAX_REFERRERS`].
fn joined_referrers(mut a: Vec<String>, b: Vec<String>) -> Vec<String> {
    for referrer in b {
        if a.len() >= MAX_REFERRERS {
            break;
        }
        if !a.contains(&referrer) {
            a.push(referrer);
        }
    }
    a
}

/// The streams merged by key (each in key order), items of one key combined.
pub(super) fn merge<T: Send + 'static>(
    streams: Vec<Entries<T>>,
    key: fn(&T) -> &String,
    combine: impl Fn(T, T) -> T + Send + 'static,
) -> Entries<T> {
    let mut streams: Vec<Peekable<Entries<T>>> =
        streams.into_iter().map(Iterator::peekable).collect();
    Box::new(std::iter::from_fn(move || {
        let mut least: Option<(usize, String)> = None;
        for (i, stream) in streams.iter_mut().enumerate() {
            match stream.peek() {
                Some(Err(_)) => return stream.next(),
                Some(Ok(item)) if least.as_ref().is_none_or(|(_, k)| key(item) < k) => {
                    least = Some((i, key(item).clone()));
                }
                _ => {}
            }
        }
        let (first, k) = least?;
        let mut item = match streams[first].next()? {
            Ok(item) => item,
            Err(e) => return Some(Err(e)),
        };
        for stream in streams.iter_mut().skip(first + 1) {
            while let Some(Ok(other)) = stream.next_if(|o| matches!(o, Ok(o) if *key(o) == k)) {
                item = combine(item, other);
            }
        }
        Some(Ok(item))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::store::WarcLocation;
    use std::path::Path;

    fn stream(items: &[(&str, u32)]) -> Entries<(String, u32)> {
        let items: Vec<_> = items.iter().map(|(u, n)| Ok((u.to_string(), *n))).collect();
        Box::new(items.into_iter())
    }

    #[test]
    fn streams_merge_in_key_order_and_one_keys_items_combine() {
        let merged = merge(
            vec![
                stream(&[("a", 1), ("c", 2), ("d", 1)]),
                stream(&[("b", 5), ("c", 3)]),
                stream(&[]),
                stream(&[("c", 10), ("e", 1)]),
            ],
            |(url, _)| url,
            |(url, a), (_, b)| (url, a + b),
        );
        let got: Vec<(String, u32)> = merged.map(Result::unwrap).collect();
        let want = [("a", 1), ("b", 5), ("c", 15), ("d", 1), ("e", 1)];
        let want: Vec<(String, u32)> = want.iter().map(|(u, n)| (u.to_string(), *n)).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn an_error_of_one_part_ends_nothing_silently() {
        let broken: Entries<(String, u32)> = Box::new(
            vec![Err(StoreError::Corrupt {
                what: "answer from the running crawl",
                message: "gone".into(),
            })]
            .into_iter(),
        );
        let mut merged = merge(vec![stream(&[("a", 1)]), broken], |(url, _)| url, |a, _| a);
        assert!(merged.next().unwrap().is_err());
        assert_eq!(merged.next().unwrap().unwrap().0, "a");
    }

    /// Records in `dir` the fetch of `url` at `at_ms` with `body`, archived,
    /// and `(page, fragment)` links found on it, as a worker does; returns
    /// where the archive holds it.
    fn fetched(
        dir: &Path,
        url: &str,
        at_ms: u64,
        body: &[u8],
        fragments: &[(&str, &str)],
    ) -> WarcLocation {
        let at = crate::engine::store::warc::WarcWriter::archive_html(dir, url, body);
        recorded(dir, url, at_ms, at.clone(), fragments);
        at
    }

    /// Records in `dir` a fetch of `url` archived `at`.
    fn recorded(dir: &Path, url: &str, at_ms: u64, at: WarcLocation, fragments: &[(&str, &str)]) {
        use crate::engine::store::{PageOutcome, Store};
        let store = Store::open(dir, 1 << 20).unwrap();
        let outcome = PageOutcome::Fetched { status: 200 };
        let mut record = PageRecord::without_fetch(url, "h.localhost", 1, at_ms, outcome);
        record.warc = Some(at);
        record.content_type = Some("text/html".into());
        record.facts = Some(Default::default());
        store.record_pages(&[record]).unwrap();
        store
            .add_fragment_links(url, fragments.iter().copied())
            .unwrap();
        store.flush().unwrap();
    }

    fn merged(dirs: &[&Path]) -> Results {
        let part = |dir: &&Path| Part {
            worker: dir.display().to_string(),
            dir: Some(dir.to_path_buf()),
            results: Results::open(dir).unwrap(),
        };
        Results::Merged(Merged::new(dirs.iter().map(part).collect()))
    }

    #[test]
    fn a_page_fetched_by_two_workers_is_judged_from_the_later_ones_archive() {
        // The killed worker fetched the page first, and found the only link
        // to one of its fragments; its archive is gone. The worker that
        // fetched the page again holds the later record, archived whole.
        let (killed, again) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let url = "http://h.localhost/p/1.html";
        let old = b"<html><body><p id=top>old</p></body></html>";
        fetched(killed.path(), url, 1_000, old, &[(url, "reviews")]);
        std::fs::remove_dir_all(killed.path().join("warc")).unwrap();
        let new = b"<html><body><p id=specs>new</p></body></html>";
        fetched(again.path(), url, 2_000, new, &[]);
        for dirs in [[killed.path(), again.path()], [again.path(), killed.path()]] {
            let merged = merged(&dirs);
            let record = merged.page(url).unwrap().expect("a record");
            assert_eq!(record.fetched_at_unix_ms, 2_000);
            let ids = merged.archived_ids(Path::new(""), &record).unwrap();
            let ids = ids.expect("the later record's archive is read");
            assert!(ids.contains("specs") && !ids.contains("reviews"), "{ids:?}");
            let links: Vec<_> = merged.fragment_links("").unwrap().collect();
            let want = (url.to_string(), vec![("reviews".into(), url.to_string())]);
            assert_eq!(
                links.into_iter().map(Result::unwrap).collect::<Vec<_>>(),
                [want]
            );
        }
    }

    #[test]
    fn a_record_naming_the_same_warc_place_as_another_workers_is_told_apart() {
        // Each worker numbers its WARC files from 0: the killed worker's
        // record can name the file, offset and length of the other's.
        let (killed, again) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let url = "http://h.localhost/p/1.html";
        let new = b"<html><body><p id=specs>new</p></body></html>";
        let at = fetched(again.path(), url, 2_000, new, &[]);
        recorded(killed.path(), url, 1_000, at, &[]);
        let merged = merged(&[killed.path(), again.path()]);
        let record = merged.page(url).unwrap().expect("a record");
        assert_eq!(record.fetched_at_unix_ms, 2_000);
        let ids = merged.archived_ids(Path::new(""), &record).unwrap();
        assert!(ids
            .expect("the later record's archive is read")
            .contains("specs"));
    }

    #[test]
    fn referrers_join_without_repeats_up_to_the_stores_number() {
        let s = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(joined_referrers(s(&["a"]), s(&["a", "b"])), s(&["a", "b"]));
        assert_eq!(
            joined_referrers(s(&["a", "b"]), s(&["c", "d"])).len(),
            MAX_REFERRERS
        );
    }
}
