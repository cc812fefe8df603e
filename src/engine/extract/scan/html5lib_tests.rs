//! The scanner against the html5lib tokenizer tests
//! (`tests/fixtures/html5lib-tests/tokenizer`, see `SOURCE.md` there).
//!
//! Every test that starts in the data state is run (the others start inside
//! a script, a `<title>` or CDATA, which the scanner only ever enters from a
//! start tag). The scanner *reports* a start tag when it calls
//! `Visitor::start_tag`: the extractor looks at every one (ids and anchors
//! for fragments, block and boilerplate elements for the content measure,
//! links and resources by name). So its start tags must be the suite's
//! `StartTag` tokens, all of them and in order, with
//! - the same name (ASCII lower-cased, a NUL as U+FFFD, as the tokenizer
//!   spells it);
//! - the same attribute names: those the scanner parses, lower-cased, the
//!   first of each name kept;
//! - for each, `Tag::attribute(name)` decoded as the extractor decodes a
//!   value (`entities::decode` in an attribute) equal to the suite's value.
//!
//! The self-closing flag is not compared: nothing reads it. The scanner's
//! end tags (`Visitor::end_tag`) must be the suite's `EndTag` tokens, by
//! name. Its text, each run with line breaks normalized as the tokenizer's
//! input is and decoded as the extractor decodes a title, joined, must be
//! the suite's `Character` data: no tag, comment or doctype of the
//! tokenizer's is shown as text, and no text is hidden.
//!
//! Skipped, and counted (the test prints the counts): tests whose input has
//! a lone surrogate (a page decoded to UTF-8 has none; no test of these
//! files has one), and tests where the suite keeps tokenizing after a
//! `<script>`, `<style>`, `<title>`, `<textarea>`, `<xmp>`, `<iframe>`,
//! `<noembed>`, `<noframes>` or `<plaintext>` start tag: the suite runs the
//! tokenizer alone, while a browser's tree builder switches it to raw text
//! there, as the scanner does (the real web depends on it: a script's
//! `"<a href=x>"` is no link). One test is skipped so: `<plaintext>foobar`,
//! whose text the scanner hands over as the element's content.
//! `xmlViolation.test` is not used: its output is coerced to an XML
//! infoset, not the tokenizer's.

use std::path::Path;

use serde_json::{Map, Value};

use super::super::entities;
use super::tag::Attributes;
use super::{scan, Tag, Visitor};

/// The suite's files that have data-state tests.
const FILES: [&str; 10] = [
    "domjs.test",
    "entities.test",
    "namedEntities.test",
    "numericEntities.test",
    "pendingSpecChanges.test",
    "test1.test",
    "test2.test",
    "test3.test",
    "test4.test",
    "unicodeChars.test",
];

/// Elements after whose start tag the scanner reads raw text (`markup`).
const RAW_TEXT_SWITCHES: [&str; 9] = [
    "script",
    "style",
    "title",
    "textarea",
    "xmp",
    "iframe",
    "noembed",
    "noframes",
    "plaintext",
];

/// Fewer checked cases means the files were misread.
const MIN_CHECKED: usize = 6000;
/// Fewer checked start tags means the tokens were misread.
const MIN_START_TAGS: usize = 400;

/// One test, its strings unescaped.
struct Case {
    file: &'static str,
    description: String,
    input: String,
    output: Vec<Value>,
}

#[derive(Default)]
struct Tally {
    checked: usize,
    start_tags: usize,
    skipped_surrogates: usize,
    skipped_raw_text: usize,
    failures: Vec<String>,
}

#[test]
fn tags_attributes_and_text_are_the_tokenizers() {
    let mut tally = Tally::default();
    for file in FILES {
        for case in cases(file) {
            match case {
                Some(case) => check(case, &mut tally),
                None => tally.skipped_surrogates += 1,
            }
        }
    }
    eprintln!(
        "html5lib tokenizer tests: {} checked ({} start tags), {} skipped for a lone surrogate, \
         {} for raw text after a start tag, {} failed",
        tally.checked,
        tally.start_tags,
        tally.skipped_surrogates,
        tally.skipped_raw_text,
        tally.failures.len()
    );
    assert!(
        tally.failures.is_empty(),
        "{} of {} cases differ from the tokenizer:\n{}",
        tally.failures.len(),
        tally.checked,
        tally.failures.join("\n")
    );
    assert!(
        tally.checked >= MIN_CHECKED,
        "only {} cases checked",
        tally.checked
    );
    assert!(
        tally.start_tags >= MIN_START_TAGS,
        "only {} start tags checked",
        tally.start_tags
    );
}

fn check(case: Case, tally: &mut Tally) {
    if keeps_tokenizing_raw_text(&case.output) {
        tally.skipped_raw_text += 1;
        return;
    }
    tally.checked += 1;
    let mut seen = Seen::default();
    scan(case.input.as_bytes(), &mut seen);
    let expected_tags: Vec<(&str, &Map<String, Value>)> = tokens(&case.output, "StartTag")
        .filter_map(|fields| Some((fields.first()?.as_str()?, fields.get(1)?.as_object()?)))
        .collect();
    tally.start_tags += expected_tags.len();
    let mut problems = Vec::new();
    if seen.tags.len() != expected_tags.len() {
        problems.push(format!(
            "{} start tags, expected {}",
            seen.tags.len(),
            expected_tags.len()
        ));
    }
    for (tag, (name, attributes)) in seen.tags.iter().zip(&expected_tags) {
        compare_tag(tag, name, attributes, &mut problems);
    }
    let expected_end_tags: Vec<&str> = tokens(&case.output, "EndTag")
        .filter_map(|fields| fields.first()?.as_str())
        .collect();
    if seen.end_tags != expected_end_tags {
        problems.push(format!(
            "end tags {:?}, expected {expected_end_tags:?}",
            seen.end_tags
        ));
    }
    let expected_text: String = tokens(&case.output, "Character")
        .filter_map(|fields| fields.first()?.as_str())
        .collect();
    if seen.text != expected_text {
        problems.push(format!("text {:?}, expected {expected_text:?}", seen.text));
    }
    if !problems.is_empty() {
        tally.failures.push(format!(
            "{}: {:?} (input {:?}): {}",
            case.file,
            case.description,
            case.input,
            problems.join("; ")
        ));
    }
}

fn compare_tag(
    tag: &Tag<'_>,
    name: &str,
    expected: &Map<String, Value>,
    problems: &mut Vec<String>,
) {
    let seen_name = tokenizer_name(tag.name);
    if seen_name != name {
        problems.push(format!("start tag {seen_name:?}, expected {name:?}"));
        return;
    }
    let mut names: Vec<String> = Vec::new();
    for (raw_name, _) in Attributes::of(tag.attributes) {
        let attribute = tokenizer_name(raw_name);
        if !names.contains(&attribute) {
            names.push(attribute);
        }
    }
    let mut expected_names: Vec<String> = expected.keys().cloned().collect();
    names.sort();
    expected_names.sort();
    if names != expected_names {
        problems.push(format!(
            "<{name}> attributes {names:?}, expected {expected_names:?}"
        ));
    }
    for (attribute, value) in expected {
        let Some(raw) = tag.attribute(&attribute.replace('\u{fffd}', "\0")) else {
            problems.push(format!("<{name}> has no {attribute:?}"));
            continue;
        };
        let decoded = attribute_value(raw);
        if Some(decoded.as_str()) != value.as_str() {
            problems.push(format!(
                "<{name} {attribute}={decoded:?}>, expected {value}"
            ));
        }
    }
}

/// The fields of the suite's tokens of one kind (`["StartTag", name, ...]`).
fn tokens<'v>(output: &'v [Value], kind: &'v str) -> impl Iterator<Item = &'v [Value]> {
    output.iter().filter_map(move |token| {
        let token = token.as_array()?;
        (token.first()? == kind).then(|| &token[1..])
    })
}

/// A tag or attribute name as the tokenizer emits it.
fn tokenizer_name(raw: &[u8]) -> String {
    String::from_utf8_lossy(&raw.to_ascii_lowercase()).replace('\0', "\u{fffd}")
}

/// An attribute value as the extractor reads it from a UTF-8 page.
fn attribute_value(raw: &[u8]) -> String {
    entities::decode(&String::from_utf8_lossy(raw), true).into_owned()
}

/// CR LF and lone CR as LF, as the tokenizer's input stream has them.
fn normalize_newlines(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\r', "\n")
}

/// Whether the suite tokenizes markup after a start tag that switches a
/// browser (and the scanner) to raw text.
fn keeps_tokenizing_raw_text(output: &[Value]) -> bool {
    let switch_at = output.iter().position(|token| {
        token.as_array().is_some_and(|t| {
            t.first().is_some_and(|kind| kind == "StartTag")
                && t.get(1)
                    .and_then(Value::as_str)
                    .is_some_and(|name| RAW_TEXT_SWITCHES.contains(&name))
        })
    });
    switch_at.is_some_and(|at| at + 1 < output.len())
}

/// What the scanner reported.
#[derive(Default)]
struct Seen<'a> {
    tags: Vec<Tag<'a>>,
    end_tags: Vec<String>,
    text: String,
}

impl<'a> Visitor<'a> for Seen<'a> {
    fn text(&mut self, bytes: &'a [u8]) {
        let text = normalize_newlines(&String::from_utf8_lossy(bytes));
        self.text.push_str(&entities::decode(&text, false));
    }

    fn start_tag(&mut self, tag: &Tag<'a>, _content: Option<&'a [u8]>) {
        self.tags.push(Tag {
            name: tag.name,
            attributes: tag.attributes,
        });
    }

    fn end_tag(&mut self, name: &'a [u8]) {
        self.end_tags.push(tokenizer_name(name));
    }
}

/// The data-state tests of one fixture file; `None` for one with a lone
/// surrogate.
fn cases(file: &'static str) -> Vec<Option<Case>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/html5lib-tests/tokenizer")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let json: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
    let tests = json["tests"]
        .as_array()
        .unwrap_or_else(|| panic!("{file}: no tests"));
    tests
        .iter()
        .filter(|test| starts_in_data_state(test))
        .map(|test| {
            let double_escaped = test["doubleEscaped"].as_bool().unwrap_or(false);
            let strings = |value: &Value| unescape_strings(value, double_escaped);
            let input = strings(&test["input"])?;
            let output = strings(&test["output"])?;
            Some(Case {
                file,
                description: test["description"].as_str()?.to_owned(),
                input: input.as_str()?.to_owned(),
                output: output.as_array()?.clone(),
            })
        })
        .collect()
}

fn starts_in_data_state(test: &Value) -> bool {
    match test.get("initialStates").and_then(Value::as_array) {
        None => true,
        Some(states) => states.iter().any(|s| s == "Data state"),
    }
}

/// `value` with the `\uXXXX` escapes in its strings replaced (a
/// `doubleEscaped` test's); `None` if one is a lone surrogate.
fn unescape_strings(value: &Value, double_escaped: bool) -> Option<Value> {
    if !double_escaped {
        return Some(value.clone());
    }
    Some(match value {
        Value::String(s) => Value::String(unescape(s)?),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| unescape_strings(v, true))
                .collect::<Option<_>>()?,
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| Some((unescape(k)?, unescape_strings(v, true)?)))
                .collect::<Option<_>>()?,
        ),
        other => other.clone(),
    })
}

fn unescape(s: &str) -> Option<String> {
    let mut units = Vec::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find("\\u") {
        units.extend(rest[..at].encode_utf16());
        let hex = rest.get(at + 2..at + 6).unwrap_or_default();
        let unit = u16::from_str_radix(hex, 16);
        units.push(unit.unwrap_or_else(|_| panic!("bad escape in {s:?}")));
        rest = &rest[at + 6..];
    }
    units.extend(rest.encode_utf16());
    String::from_utf16(&units).ok()
}
