//! End to end in a real terminal: the demo's quarantine pane lists a trap's
//! parked URLs (read through the engine's results socket), expands an alert,
//! and Enter on a parked URL opens the inspector on the page it was found on.

use crate::common;

use common::term::Term;

#[test]
fn the_quarantine_pane_lists_the_demo_traps_parked_urls_and_inspects_one() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap();
    let mut demo = Term::spawn(&["demo", "--data", data], 40, 140);
    demo.wait_for("the demo's hosts", |s| s.contains("shop.localhost"));
    demo.press(b"7");
    demo.wait_for("an alert with parked URLs", |s| {
        s.contains("7 Quarantine") && s.contains(" parked, ")
    });
    demo.press(b"g\r");
    demo.wait_for("the alert's parked URLs", |s| s.contains("found on "));
    demo.press(b"j\r");
    demo.wait_for("the inspector on the found-on page", |s| {
        s.contains("found-on page of a URL parked by alert #")
            && (s.contains("status   ") || s.contains("never fetched: parked by alert #"))
    });
    demo.press(b"\x1b");
    demo.wait_for("the inspector closed", |s| !s.contains("found-on page of"));

    demo.press(b"q");
    demo.wait_for("the quit confirmation", |s| s.contains("Quit"));
    demo.press(b"y");
    demo.wait_exit("q, y");
}
