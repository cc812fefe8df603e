//! The real binary in a pseudo-terminal, its screen parsed by vt100: what the
//! PTY tests drive and read. Killed and reaped when dropped.

use std::io::{Read, Write};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{native_pty_system, Child, CommandBuilder, ExitStatus, MasterPty, PtySize};

/// No wait for the screen or for an exit may take longer than this.
pub const WAIT: Duration = Duration::from_secs(60);

pub struct Term {
    pub child: Box<dyn Child + Send + Sync>,
    parser: Arc<Mutex<vt100::Parser>>,
    updates: mpsc::Receiver<()>,
    keys: Box<dyn Write + Send>,
    reader: Option<std::thread::JoinHandle<()>>,
    _master: Box<dyn MasterPty + Send>,
}

impl Term {
    /// Starts `crawldeck ARGS` in a `rows` × `cols` terminal.
    /// `crawldeck ARGS DIR` (a data directory last) in a terminal.
    pub fn spawn_on(args: &[&str], dir: &std::path::Path, rows: u16, cols: u16) -> Term {
        let mut all = args.to_vec();
        all.push(dir.to_str().unwrap());
        Term::spawn(&all, rows, cols)
    }

    pub fn spawn(args: &[&str], rows: u16, cols: u16) -> Term {
        let pty = native_pty_system()
            .openpty(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("a pseudo-terminal");
        let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_crawldeck"));
        cmd.args(args);
        cmd.env("TERM", "xterm-256color");
        cmd.env_remove("RUST_LOG");
        let child = pty.slave.spawn_command(cmd).expect("crawldeck starts");
        drop(pty.slave);
        let parser = Arc::new(Mutex::new(vt100::Parser::new(rows, cols, 0)));
        let (tx, updates) = mpsc::channel();
        let mut output = pty.master.try_clone_reader().unwrap();
        let feed = parser.clone();
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = output.read(&mut buf) {
                if n == 0 {
                    break;
                }
                // Parse before waking the waiter, or it may read the old
                // screen and then wait for output that never comes.
                feed.lock().unwrap().process(&buf[..n]);
                if tx.send(()).is_err() {
                    break;
                }
            }
        });
        Term {
            child,
            parser,
            updates,
            keys: pty.master.take_writer().unwrap(),
            reader: Some(reader),
            _master: pty.master,
        }
    }

    pub fn text(&self) -> String {
        self.parser.lock().unwrap().screen().contents()
    }

    /// Reads the terminal's state beyond its text (modes, cursor).
    pub fn screen<R>(&self, read: impl FnOnce(&vt100::Screen) -> R) -> R {
        read(self.parser.lock().unwrap().screen())
    }

    pub fn press(&mut self, bytes: &[u8]) {
        self.keys.write_all(bytes).unwrap();
        self.keys.flush().unwrap();
    }

    /// Waits (on output from the program, not on a timer) until `pred` holds.
    pub fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) {
        let deadline = Instant::now() + WAIT;
        while !pred(&self.text()) {
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

    /// Waits for the program to exit (`why` names what should have ended it).
    pub fn wait_exit(&mut self, why: &str) -> ExitStatus {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "crawldeck did not exit on {why}");
            let _ = self.updates.recv_timeout(Duration::from_millis(100));
        }
    }

    /// After the exit: waits until the program's last output is parsed (the
    /// terminal closes once nothing holds it any more).
    pub fn read_to_end(&mut self) {
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }
}

/// In a crawl's UI: the quarantine pane (`7`) lists an alert's parked
/// URLs, expands it, and Enter on a parked URL opens the inspector on the
/// page it was found on; Esc closes it again.
pub fn inspect_a_parked_urls_found_on_page(term: &mut Term) {
    term.press(b"7");
    term.wait_for("an alert with parked URLs", |s| {
        s.contains("7 Quarantine") && s.contains(" parked, ")
    });
    term.press(b"g\r");
    term.wait_for("the alert's parked URLs", |s| s.contains("found on "));
    term.press(b"j\r");
    term.wait_for("the inspector on the found-on page", |s| {
        s.contains("found-on page of a URL parked by alert #")
            && (s.contains("status   ") || s.contains("never fetched: parked by alert #"))
    });
    term.press(b"\x1b");
    // The pane's title again (drawn over while the inspector is open): a
    // key sent before this Esc is read would be read with it.
    term.wait_for("the inspector closed", |s| {
        s.contains("(enter expand / inspect)") && !s.contains("found-on page of")
    });
}

impl Drop for Term {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
