use std::path::Path;

use super::*;
use crate::engine::store::read_response;

fn response(url: &str, status: u16, body: &'static [u8]) -> Response {
    Response::for_test(url, status, "text/html", body)
}

fn archive(dir: &Path) -> Archive {
    Archive::in_dir(dir)
}

fn page(archive: &Archive, url: &str, body: &'static [u8]) -> Archived {
    let response = response(url, 200, body);
    let digest = ContentDigest::of(body);
    archive.page(url, &response, Some(&digest), None)
}

#[test]
fn a_payload_met_again_is_a_revisit_pointing_at_its_first_record_across_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let body: &[u8] = b"<html>same</html>";
    let first_at = {
        let archive = archive(dir.path());
        let first = page(&archive, "http://h.localhost/a", body);
        assert_eq!(first.revisit_saved, None, "the first copy is stored whole");
        assert!(first.first_of_payload, "the crawl loop needs no look-up");
        let again = page(&archive, "http://h.localhost/b", body);
        assert_eq!(again.revisit_saved, Some(body.len() as u64));
        assert!(!again.first_of_payload, "a copy is looked up as one");
        assert_eq!(again.at, first.at, "the page's content is the first record");
        // As the crawl loop does before it writes the pages' group.
        archive.drain().unwrap();
        archive.store.flush().unwrap();
        first.at.unwrap()
    };
    // A new process (a resume) still knows the first capture.
    let archive = archive(dir.path());
    let third = page(&archive, "http://h.localhost/c", body);
    assert_eq!(third.at.as_ref(), Some(&first_at));
    assert_eq!(third.revisit_saved, Some(body.len() as u64));
    let read = read_response(dir.path(), &first_at, 1024).unwrap();
    assert_eq!(read.body, body);
    let other = page(&archive, "http://h.localhost/d", b"<html>other</html>");
    assert_eq!(other.revisit_saved, None);
}

#[test]
fn a_304_refers_to_the_record_of_the_earlier_fetch() {
    let dir = tempfile::tempdir().unwrap();
    let archive = archive(dir.path());
    let first = page(&archive, "http://h.localhost/a", b"<html>a</html>");
    let earlier = EarlierFetch {
        validators: None,
        warc: first.at.clone(),
        bytes: 14,
    };
    let not_modified = response("http://h.localhost/a", 304, b"");
    let revisit = archive.page("http://h.localhost/a", &not_modified, None, Some(&earlier));
    assert_eq!(revisit.revisit_saved, Some(14));
    archive.drain().unwrap();
    let capture = read_capture(dir.path(), revisit.at.as_ref().unwrap()).unwrap();
    let original = read_capture(dir.path(), first.at.as_ref().unwrap()).unwrap();
    assert_eq!(capture, original, "the revisit names the first record");
    assert_eq!(capture.uri, "http://h.localhost/a");
    assert_eq!(
        capture.payload_digest.as_deref(),
        Some(ContentDigest::of(b"<html>a</html>").warc_label().as_str())
    );
}

/// A `kill -9` loses the records still buffered; no stored row names them.
#[test]
fn a_payloads_row_is_stored_only_once_its_record_is_in_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let body: &[u8] = b"<html>lost with the buffer</html>";
    {
        let archive = archive(dir.path());
        let first = page(&archive, "http://h.localhost/a", body);
        assert!(first.first_of_payload);
        let again = page(&archive, "http://h.localhost/b", body);
        assert_eq!(again.at, first.at, "a revisit target at once");
        // A write before the drain, as a command's or a probe's would be.
        archive.store.flush().unwrap();
        // Dropped undrained: the process ends as `kill -9` ends it.
    }
    let archive = archive(dir.path());
    let after = page(&archive, "http://h.localhost/c", body);
    assert_eq!(
        after.revisit_saved, None,
        "stored whole, not a revisit of a lost record"
    );
    assert!(after.first_of_payload);
    archive.drain().unwrap();
    let read = read_response(dir.path(), after.at.as_ref().unwrap(), 1024).unwrap();
    assert_eq!(read.body, body);
}
