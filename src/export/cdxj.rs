//! CDXJ lines as pywb's and py-wacz's indexer (cdxj-indexer) write them:
//! `urlkey timestamp {json}`, the JSON as Python's `json.dumps` prints it
//! (`", "` and `": "` separators, non-ASCII escaped), so the lines sort the
//! same and each tool reads them.

use super::scan::ScannedRecord;
use super::surt::urlkey;

/// The record types cdxj-indexer indexes by default; requests and warcinfo
/// are reached through the responses they belong to.
const INDEXED_TYPES: [&str; 4] = ["response", "revisit", "resource", "metadata"];

/// The index line of a record, or `None` for a record replay does not look up.
pub fn line(record: &ScannedRecord, filename: &str) -> Option<String> {
    if !INDEXED_TYPES.contains(&record.kind.as_str()) {
        return None;
    }
    let warc_fields = record
        .content_type
        .as_deref()
        .is_some_and(|t| t.eq_ignore_ascii_case("application/warc-fields"));
    if warc_fields && (record.kind == "resource" || record.kind == "metadata") {
        return None;
    }
    let url = record.target_uri.as_deref()?;
    let timestamp = timestamp(record.date.as_deref()?)?;
    let mut json = PyJson::new();
    json.field("url", url);
    if let Some(mime) = mime(record) {
        json.field("mime", &mime);
    }
    if let Some(status) = &record.http_status {
        json.field("status", status);
    }
    if let Some(digest) = &record.payload_digest {
        json.field("digest", digest);
    }
    json.field("length", &record.length.to_string());
    json.field("offset", &record.offset.to_string());
    json.field("filename", filename);
    json.field("recordDigest", &record.record_digest);
    Some(format!("{} {timestamp} {}", urlkey(url), json.finish()))
}

/// `warc/revisit` for a revisit; else the HTTP or record `Content-Type`
/// up to its first `;` or space.
fn mime(record: &ScannedRecord) -> Option<String> {
    if record.kind == "revisit" {
        return Some("warc/revisit".into());
    }
    let content_type = if record.kind == "response" {
        record.http_content_type.as_deref()
    } else {
        record.content_type.as_deref()
    }?;
    let mime = content_type
        .split([';', ' ', '\t', '\r', '\n'])
        .next()
        .unwrap_or_default();
    Some(mime.trim().to_string())
}

/// `2026-11-22T09:00:00Z` → `20261122090000` (14 digits, fractions dropped).
pub fn timestamp(warc_date: &str) -> Option<String> {
    let digits: String = warc_date
        .chars()
        .take_while(|c| *c != '.')
        .filter(char::is_ascii_digit)
        .take(14)
        .collect();
    (digits.len() >= 4).then(|| format!("{digits:0<14}"))
}

/// A flat JSON object printed as Python's `json.dumps` does.
pub struct PyJson(String);

impl PyJson {
    pub fn new() -> Self {
        PyJson(String::from("{"))
    }

    pub fn field(&mut self, name: &str, value: &str) -> &mut Self {
        self.key(name);
        push_py_string(&mut self.0, value);
        self
    }

    pub fn number(&mut self, name: &str, value: u64) -> &mut Self {
        self.key(name);
        self.0.push_str(&value.to_string());
        self
    }

    pub fn finish(&mut self) -> String {
        self.0.push('}');
        std::mem::take(&mut self.0)
    }

    fn key(&mut self, name: &str) {
        if self.0.len() > 1 {
            self.0.push_str(", ");
        }
        push_py_string(&mut self.0, name);
        self.0.push_str(": ");
    }
}

impl Default for PyJson {
    fn default() -> Self {
        Self::new()
    }
}

/// A JSON string with `ensure_ascii`: control and non-ASCII characters as
/// `\uXXXX` (UTF-16, so surrogate pairs past the BMP).
fn push_py_string(out: &mut String, value: &str) {
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if c.is_ascii() && !c.is_ascii_control() => out.push(c),
            c => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response() -> ScannedRecord {
        ScannedRecord {
            kind: "response".into(),
            target_uri: Some("http://www.example.com/A?b=1&a=2".into()),
            date: Some("2026-11-22T09:08:07Z".into()),
            content_type: Some("application/http;msgtype=response".into()),
            payload_digest: Some("sha1:ABC".into()),
            http_status: Some("200".into()),
            http_content_type: Some("text/html; charset=utf-8".into()),
            offset: 1234,
            length: 567,
            record_digest: "sha256:00ff".into(),
        }
    }

    #[test]
    fn a_response_line_has_pywbs_fields_in_order() {
        assert_eq!(
            line(&response(), "crawldeck-00000.warc.gz").unwrap(),
            "com,example)/a?a=2&b=1 20261122090807 {\"url\": \"http://www.example.com/A?b=1&a=2\", \
             \"mime\": \"text/html\", \"status\": \"200\", \"digest\": \"sha1:ABC\", \
             \"length\": \"567\", \"offset\": \"1234\", \"filename\": \"crawldeck-00000.warc.gz\", \
             \"recordDigest\": \"sha256:00ff\"}"
        );
    }

    #[test]
    fn a_revisit_is_warc_revisit_and_requests_are_not_indexed() {
        let revisit = ScannedRecord {
            kind: "revisit".into(),
            http_status: Some("304".into()),
            ..response()
        };
        let got = line(&revisit, "f.warc.gz").unwrap();
        assert!(
            got.contains("\"mime\": \"warc/revisit\", \"status\": \"304\""),
            "{got}"
        );
        for kind in ["request", "warcinfo"] {
            let record = ScannedRecord {
                kind: kind.into(),
                ..response()
            };
            assert_eq!(line(&record, "f.warc.gz"), None, "{kind}");
        }
        let fields = ScannedRecord {
            kind: "metadata".into(),
            content_type: Some("application/warc-fields".into()),
            ..response()
        };
        assert_eq!(line(&fields, "f.warc.gz"), None);
    }

    #[test]
    fn a_resource_takes_its_records_content_type_and_has_no_status() {
        let resource = ScannedRecord {
            kind: "resource".into(),
            content_type: Some("image/png".into()),
            http_status: None,
            http_content_type: None,
            ..response()
        };
        let got = line(&resource, "f.warc.gz").unwrap();
        assert!(got.contains("\"mime\": \"image/png\", \"digest\""), "{got}");
    }

    #[test]
    fn strings_are_escaped_as_python_prints_them() {
        let mut json = PyJson::new();
        json.field("t", "a\"b\\c\u{1}é😀").number("n", 7);
        assert_eq!(
            json.finish(),
            "{\"t\": \"a\\\"b\\\\c\\u0001\\u00e9\\ud83d\\ude00\", \"n\": 7}"
        );
    }

    #[test]
    fn timestamps_are_fourteen_digits() {
        assert_eq!(timestamp("2026-11-22T09:08:07Z").unwrap(), "20261122090807");
        assert_eq!(
            timestamp("2026-11-22T09:08:07.123456Z").unwrap(),
            "20261122090807"
        );
        assert_eq!(timestamp("2026-11-22").unwrap(), "20261122000000");
        assert_eq!(timestamp("nonsense"), None);
    }
}
