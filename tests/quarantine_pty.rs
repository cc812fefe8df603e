//! End to end in a real terminal: the demo's quarantine pane lists a trap's
//! parked URLs (read through the engine's control socket), expands an alert,
//! and Enter on a parked URL opens the inspector on the page it was found on.

use crate::common;

use common::term::{inspect_a_parked_urls_found_on_page, Term};

#[test]
fn the_quarantine_pane_lists_the_demo_traps_parked_urls_and_inspects_one() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap();
    let mut demo = Term::spawn(&["demo", "--data", data], 40, 140);
    demo.wait_for("the demo's hosts", |s| s.contains("shop.localhost"));
    inspect_a_parked_urls_found_on_page(&mut demo);

    demo.press(b"q");
    demo.wait_for("the quit confirmation", |s| s.contains("Quit"));
    demo.press(b"y");
    demo.wait_exit("q, y");
}
