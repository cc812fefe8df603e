//! End to end: the real binary in a pseudo-terminal on the demo web. Start,
//! wait for a demo host in the hosts table, open help, add a blacklist rule
//! through the prompt, see it in the rules pane, quit, and check the terminal
//! was restored and the data directory holds the rule.

use crate::common;

use common::term::Term;

const ROWS: u16 = 40;
const COLS: u16 = 120;

#[test]
fn operator_session_in_a_real_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap();
    let mut screen = Term::spawn(&["demo", "--data", data], ROWS, COLS);
    screen.wait_for("a demo host in the hosts table", |s| {
        s.contains("shop.localhost")
    });
    assert!(screen.screen(|s| s.alternate_screen()));

    screen.press(b"?");
    screen.wait_for("the help overlay", |s| {
        s.contains("Help") && s.contains("quit")
    });
    screen.press(b"\x1b");
    // The hosts table's header whole again (the pop-up covers its middle):
    // a key sent before this Esc is read would be read with it (Alt-b).
    screen.wait_for("help closed", |s| {
        !s.contains("Help")
            && s.lines()
                .any(|l| l.contains("Queue") && l.contains("Breaker"))
    });

    screen.press(b"b");
    screen.wait_for("the blacklist prompt", |s| {
        s.to_lowercase().contains("blacklist")
    });
    screen.press(b"/calendar/\\d{4}/");
    screen.press(b"\r");
    screen.wait_for("the rule in the rules pane", |s| {
        s.contains("/calendar/\\d{4}/")
    });

    screen.press(b"q");
    screen.wait_for("the quit confirmation", |s| s.contains("Quit"));
    screen.press(b"y");

    let status = screen.wait_exit("q, y");
    screen.read_to_end();
    assert!(status.success(), "exit status {status:?}");
    screen.screen(|restored| {
        assert!(!restored.alternate_screen(), "left the alternate screen");
        assert!(!restored.hide_cursor(), "cursor shown again");
    });

    let store = crawldeck::engine::store::Store::open(dir.path(), 8 << 20).unwrap();
    let rules: Vec<(Vec<u8>, serde_json::Value)> =
        store.scan(crawldeck::engine::store::Tree::Rules).unwrap();
    assert!(
        rules
            .iter()
            .any(|(_, r)| r.to_string().contains("/calendar/\\\\d{4}/")),
        "rules stored: {rules:?}"
    );
}
