//! End to end in real terminals: the Pages view of the demo's UI, and of a
//! second UI attached over the control socket, filters to the demo's 404 as
//! the filter is typed, opens the page inspector on it with Enter, lists its
//! links with `l`, and sorts; the Audit view lists findings and Enter lists
//! a finding's pages; an extraction added with `:extract` shows as a column
//! with values on the pages fetched after it.

use crate::common;

use std::path::Path;

use common::term::Term;

const ROWS: u16 = 40;
const COLS: u16 = 160;

fn in_terminal(args: &[&str], dir: &Path) -> Term {
    Term::spawn_on(args, dir, ROWS, COLS)
}

/// The Pages view's own title, shown only while nothing is drawn over it.
fn pages_title(screen: &str) -> Option<&str> {
    screen
        .lines()
        .find(|l| l.contains(" Pages ") && l.contains("(/ filter"))
}

/// Filters the Pages view to the shop's broken page and inspects it. Each
/// wait after a key is for a screen only that key's effect can show, never
/// for something gone: a frame half drawn can lack a line, and the next key
/// sent early can reach the program with the last one (two Escs read as one).
fn find_the_404(term: &mut Term) {
    let filtered = |s: &str| pages_title(s).is_some_and(|t| t.contains("matching status:404"));
    term.press(b"8");
    term.wait_for("the Pages view", |s| pages_title(s).is_some());
    term.press(b"/status:404 discontinued");
    term.wait_for("the 404 row, filtered as typed", |s| {
        s.contains("matching status:404 discontinued") && s.contains("/discontinued.html")
    });
    term.press(b"\r");
    term.press(b"\r");
    term.wait_for("the inspector on the 404", |s| {
        s.contains("/discontinued.html") && s.contains("status   404")
    });
    term.press(b"\x1b");
    term.wait_for("the inspector closed", |s| {
        filtered(s) && !s.contains("status   404")
    });
    term.press(b"l");
    term.wait_for("the inspector at its links", |s| {
        s.contains("linked from (") && pages_title(s).is_none()
    });
    term.press(b"\x1b");
    term.wait_for("the inspector closed", |s| {
        filtered(s) && !s.contains("linked from (")
    });
    // Esc clears the filter; `s` sorts by status.
    term.press(b"\x1b");
    term.wait_for("every page again", |s| {
        pages_title(s).is_some_and(|t| !t.contains("matching"))
    });
    term.press(b"s");
    term.wait_for("sorted by status", |s| s.contains("status▲"));
}

#[test]
fn the_pages_view_finds_the_demos_404_in_process_and_attached() {
    let dir = tempfile::tempdir().unwrap();
    let mut demo = in_terminal(&["demo", "--data"], dir.path());
    demo.wait_for("the demo's hosts", |s| s.contains("shop.localhost"));
    find_the_404(&mut demo);
    // An extraction added while the crawl runs: a column, with values on
    // pages fetched from then on.
    demo.press(b":extract heading=h1\r");
    demo.press(b"/extract:heading\r");
    demo.wait_for("pages with an extracted heading", |s| {
        s.lines().any(|line| {
            let counted = line
                .split(" Pages ")
                .nth(1)
                .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit() && c != '0'));
            counted && line.contains("matching extract:heading")
        })
    });
    demo.press(b"\x1b");

    let mut viewer = in_terminal(&["attach"], dir.path());
    viewer.wait_for("the attached UI", |s| s.contains("Hosts"));
    find_the_404(&mut viewer);
    viewer.press(b"9");
    viewer.wait_for("the audit's findings", |s| s.contains("broken-links"));
    viewer.press(b"q");
    viewer.wait_for("the detach question", |s| s.contains("Detach"));
    viewer.press(b"d");

    demo.press(b"q");
    demo.wait_for("the quit confirmation", |s| s.contains("Quit"));
    demo.press(b"y");
    demo.wait_exit("q, y");
}
