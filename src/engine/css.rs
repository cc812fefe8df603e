//! CSS selectors as the operator types them (`:select`, `[[extract]]`):
//! parsed by scraper, with its complaints in words. A leaf: the inspector
//! and the settings' checks both use it.

use scraper::Selector;

/// Why a CSS selector cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad CSS selector `{selector}`: {message}")]
pub struct SelectError {
    /// The selector as typed.
    pub selector: String,
    /// The parser's complaint.
    pub message: String,
}

/// Whether `selector` parses as CSS.
pub fn check_selector(selector: &str) -> Result<(), SelectError> {
    parse_selector(selector).map(|_| ())
}

pub(crate) fn parse_selector(selector: &str) -> Result<Selector, SelectError> {
    Selector::parse(selector).map_err(|e| SelectError {
        selector: selector.to_string(),
        message: selector_complaint(&e),
    })
}

/// The parser's complaint in words: scraper prints some kinds as an internal
/// error ("please report this") with a Rust debug dump.
fn selector_complaint(e: &scraper::error::SelectorErrorKind) -> String {
    use scraper::error::SelectorErrorKind as Kind;
    let Kind::UnexpectedSelectorParseError(kind) = e else {
        return e.to_string();
    };
    // `DanglingCombinator` → "dangling combinator".
    let name = format!("{kind:?}");
    let mut words = String::new();
    for c in name.chars() {
        if c.is_ascii_uppercase() && !words.is_empty() {
            words.push(' ');
        }
        words.push(c.to_ascii_lowercase());
    }
    words
}
