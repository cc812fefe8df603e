//! Number and text formatting shared by the panes.

use std::borrow::Cow;
use std::time::Duration;

/// Network text made terminal-safe.
pub fn strip(s: &str) -> Cow<'_, str> {
    crate::text::strip_control(s)
}

/// Elapsed time as `hh:mm:ss`.
pub fn clock(d: Duration) -> String {
    let s = d.as_secs();
    format!("{:02}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60)
}

pub use crate::text::human_bytes as bytes;

/// Short duration: `250ms`, `1.5s`, `2m10s`.
pub fn short(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms}ms")
    } else if ms < 60_000 {
        let s = d.as_secs_f64();
        if ms % 1000 == 0 {
            format!("{s:.0}s")
        } else {
            format!("{s:.1}s")
        }
    } else {
        format!("{}m{:02}s", ms / 60_000, (ms / 1000) % 60)
    }
}

/// A count with thousands separators: `1,234,567`.
pub fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(clock(Duration::from_secs(3723)), "01:02:03");
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(3 * 1024 * 1024 / 2), "1.5 MiB");
        assert_eq!(short(Duration::from_millis(250)), "250ms");
        assert_eq!(short(Duration::from_millis(1500)), "1.5s");
        assert_eq!(short(Duration::from_secs(2)), "2s");
        assert_eq!(short(Duration::from_secs(130)), "2m10s");
        assert_eq!(count(1234567), "1,234,567");
        assert_eq!(count(12), "12");
    }
}
