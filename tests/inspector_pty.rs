//! End to end in real terminals: the demo's UI and a second UI attached to
//! it over the control socket each open the page inspector on an alert's
//! evidence (read through the engine's results socket), run `:select`, and
//! close it with Esc.

use std::io::{Read, Write};
use std::path::Path;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{native_pty_system, Child, CommandBuilder, MasterPty, PtySize};

const ROWS: u16 = 40;
const COLS: u16 = 140;
const WAIT: Duration = Duration::from_secs(60);

/// crawldeck in a pseudo-terminal; killed when dropped.
struct Term {
    parser: Arc<Mutex<vt100::Parser>>,
    updates: mpsc::Receiver<()>,
    keys: Box<dyn Write + Send>,
    child: Box<dyn Child + Send + Sync>,
    _master: Box<dyn MasterPty + Send>,
}

impl Term {
    fn spawn(args: &[&str], dir: &Path) -> Term {
        let pty = native_pty_system()
            .openpty(PtySize {
                rows: ROWS,
                cols: COLS,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("a pseudo-terminal");
        let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_crawldeck"));
        cmd.args(args);
        cmd.arg(dir);
        cmd.env("TERM", "xterm-256color");
        cmd.env_remove("RUST_LOG");
        let child = pty.slave.spawn_command(cmd).expect("crawldeck starts");
        drop(pty.slave);
        let parser = Arc::new(Mutex::new(vt100::Parser::new(ROWS, COLS, 0)));
        let (tx, updates) = mpsc::channel();
        let mut reader = pty.master.try_clone_reader().unwrap();
        let feed = parser.clone();
        std::thread::spawn(move || {
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
        let keys = pty.master.take_writer().unwrap();
        Term {
            parser,
            updates,
            keys,
            child,
            _master: pty.master,
        }
    }

    fn text(&self) -> String {
        self.parser.lock().unwrap().screen().contents()
    }

    fn press(&mut self, bytes: &[u8]) {
        self.keys.write_all(bytes).unwrap();
        self.keys.flush().unwrap();
    }

    /// Waits (on output from the program, not on a timer) until `pred` holds.
    fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) {
        let deadline = Instant::now() + WAIT;
        while !pred(&self.text()) {
            let left = deadline.saturating_duration_since(Instant::now());
            if let Err(e) = self.updates.recv_timeout(left) {
                panic!("{e:?} waiting for {what}; screen:\n{}", self.text());
            }
        }
    }

    /// Inspects the first alert's evidence, selects in it, closes it.
    fn inspect_first_alert(&mut self) {
        self.press(b"2");
        // The pane's title, not the log's "trap alert #1" (which may come first).
        self.wait_for("an alert in the alerts pane", |s| {
            (s.contains(" open of ") && !s.contains(" open of 0 ")) || s.contains(" suggests ")
        });
        self.press(b"\r");
        self.wait_for("the inspector on the evidence", |s| {
            s.contains("evidence (") && s.contains("status   ")
        });
        self.press(b":select title\r");
        self.wait_for("the selection's answer", |s| {
            s.contains("`title`: 1 element") || s.contains("no element matches `title`")
        });
        self.press(b"\x1b");
        self.wait_for("the inspector closed", |s| !s.contains("evidence ("));
    }
}

impl Drop for Term {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_inspector_opens_in_the_demo_and_in_an_attached_viewer() {
    let dir = tempfile::tempdir().unwrap();
    let mut demo = Term::spawn(&["demo", "--data"], dir.path());
    demo.wait_for("the demo's hosts", |s| s.contains("shop.localhost"));
    demo.inspect_first_alert();

    let mut viewer = Term::spawn(&["attach"], dir.path());
    viewer.wait_for("the attached UI", |s| s.contains("Hosts"));
    viewer.inspect_first_alert();
    viewer.press(b"q");
    viewer.wait_for("the detach question", |s| s.contains("Detach"));
    viewer.press(b"d");

    demo.press(b"q");
    demo.wait_for("the quit confirmation", |s| s.contains("Quit"));
    demo.press(b"y");
    let deadline = Instant::now() + WAIT;
    while demo.child.try_wait().unwrap().is_none() {
        assert!(
            Instant::now() < deadline,
            "the demo did not exit after q, y"
        );
        let _ = demo.updates.recv_timeout(Duration::from_millis(200));
    }
}
