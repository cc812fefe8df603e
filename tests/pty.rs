//! End to end: the real binary in a pseudo-terminal on the demo web. Start,
//! wait for a demo host in the hosts table, open help, add a blacklist rule
//! through the prompt, see it in the rules pane, quit, and check the terminal
//! was restored and the data directory holds the rule.

use std::io::{Read, Write};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{native_pty_system, CommandBuilder, PtySize};

const ROWS: u16 = 40;
const COLS: u16 = 120;
const WAIT: Duration = Duration::from_secs(60);

struct Screen {
    parser: Arc<Mutex<vt100::Parser>>,
    updates: mpsc::Receiver<()>,
}

impl Screen {
    fn text(&self) -> String {
        self.parser.lock().unwrap().screen().contents()
    }

    /// Waits (on output from the program, not on a timer) until `pred` holds.
    fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) {
        let deadline = Instant::now() + WAIT;
        loop {
            if pred(&self.text()) {
                return;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.updates.recv_timeout(left) {
                Ok(()) => {}
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    panic!("timed out waiting for {what}; screen:\n{}", self.text())
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    assert!(
                        pred(&self.text()),
                        "program ended before {what}; screen:\n{}",
                        self.text()
                    );
                    return;
                }
            }
        }
    }
}

#[test]
fn operator_session_in_a_real_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let pty = native_pty_system()
        .openpty(PtySize {
            rows: ROWS,
            cols: COLS,
            pixel_width: 0,
            pixel_height: 0,
        })
        .expect("a pseudo-terminal");
    let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_crawldeck"));
    cmd.arg("demo");
    cmd.arg("--data");
    cmd.arg(dir.path());
    cmd.env("TERM", "xterm-256color");
    let mut child = pty.slave.spawn_command(cmd).expect("crawldeck starts");
    drop(pty.slave);

    let parser = Arc::new(Mutex::new(vt100::Parser::new(ROWS, COLS, 0)));
    let (tx, updates) = mpsc::channel();
    let mut reader = pty.master.try_clone_reader().unwrap();
    let feed = parser.clone();
    let reader_thread = std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            feed.lock().unwrap().process(&buf[..n]);
            if tx.send(()).is_err() {
                break;
            }
        }
    });
    let mut keys = pty.master.take_writer().unwrap();
    let screen = Screen { parser, updates };
    let mut press = |bytes: &[u8]| {
        keys.write_all(bytes).unwrap();
        keys.flush().unwrap();
    };

    screen.wait_for("a demo host in the hosts table", |s| {
        s.contains("shop.localhost")
    });
    assert!(screen.parser.lock().unwrap().screen().alternate_screen());

    press(b"?");
    screen.wait_for("the help overlay", |s| {
        s.contains("Help") && s.contains("quit")
    });
    press(b"\x1b");
    screen.wait_for("help closed", |s| !s.contains("Help"));

    press(b"b");
    screen.wait_for("the blacklist prompt", |s| {
        s.to_lowercase().contains("blacklist")
    });
    press(b"/calendar/\\d{4}/");
    press(b"\r");
    screen.wait_for("the rule in the rules pane", |s| {
        s.contains("/calendar/\\d{4}/")
    });

    press(b"q");
    screen.wait_for("the quit confirmation", |s| s.contains("Quit"));
    press(b"y");

    let deadline = Instant::now() + WAIT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "crawldeck did not exit after q, y"
        );
        let _ = screen.updates.recv_timeout(Duration::from_millis(200));
    };
    drop(pty.master);
    let _ = reader_thread.join();
    assert!(status.success(), "exit status {status:?}");
    {
        let parser = screen.parser.lock().unwrap();
        let restored = parser.screen();
        assert!(!restored.alternate_screen(), "left the alternate screen");
        assert!(!restored.hide_cursor(), "cursor shown again");
    }

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
