//! End to end in real terminals: the demo's UI and a second UI attached to
//! it over the control socket each open the page inspector on an alert's
//! evidence (read through the engine's control socket), run `:select`, and
//! close it with Esc.

use crate::common;

use std::path::Path;

use common::term::Term;

const ROWS: u16 = 40;
const COLS: u16 = 140;

fn in_terminal(args: &[&str], dir: &Path) -> Term {
    Term::spawn_on(args, dir, ROWS, COLS)
}

/// Inspects the first alert's evidence, selects in it, closes it.
fn inspect_first_alert(term: &mut Term) {
    term.press(b"2");
    // The pane's title, not the log's "trap alert #1" (which may come first).
    term.wait_for("an alert in the alerts pane", |s| {
        (s.contains(" open of ") && !s.contains(" open of 0 ")) || s.contains(" suggests ")
    });
    term.press(b"\r");
    term.wait_for("the inspector on the evidence", |s| {
        s.contains("evidence (") && s.contains("status   ")
    });
    term.press(b":select title\r");
    term.wait_for("the selection's answer", |s| {
        s.contains("`title`: 1 element") || s.contains("no element matches `title`")
    });
    term.press(b"\x1b");
    // The pane's title again (drawn over while the inspector is open): a
    // key sent before this Esc is read would be read with it.
    term.wait_for("the inspector closed", |s| {
        s.contains(" Alerts: ") && !s.contains("evidence (")
    });
}

#[test]
fn the_inspector_opens_in_the_demo_and_in_an_attached_viewer() {
    let dir = tempfile::tempdir().unwrap();
    let mut demo = in_terminal(&["demo", "--data"], dir.path());
    demo.wait_for("the demo's hosts", |s| s.contains("shop.localhost"));
    inspect_first_alert(&mut demo);

    let mut viewer = in_terminal(&["attach"], dir.path());
    viewer.wait_for("the attached UI", |s| s.contains("Hosts"));
    inspect_first_alert(&mut viewer);
    viewer.press(b"q");
    viewer.wait_for("the detach question", |s| s.contains("Detach"));
    viewer.press(b"d");

    demo.press(b"q");
    demo.wait_for("the quit confirmation", |s| s.contains("Quit"));
    demo.press(b"y");
    demo.wait_exit("q, y");
}
