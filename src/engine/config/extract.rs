//! `[[extract]]`: custom extraction, a named CSS selector evaluated on each
//! fetched HTML page (`--extract NAME=CSS`, `:extract NAME=CSS`). What the
//! operator writes and its checks; the evaluation is `extract::custom`.

use std::path::Path;

use serde::{Deserialize, Serialize};

/// Extractions one crawl may have: each costs every HTML page a selector run.
pub const MAX_EXTRACTIONS: usize = 32;
/// Longest name: it becomes a column header.
pub const MAX_NAME_CHARS: usize = 32;
/// Longest selector, in bytes.
pub const MAX_SELECTOR_BYTES: usize = 1024;

/// One extraction: values named `name`, from the elements `selector` matches.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtractionSpec {
    /// Letters, digits, `-` and `_`, starting with a letter.
    pub name: String,
    /// A CSS selector (as `:select` in the inspector takes).
    pub selector: String,
    /// Take this attribute of each element; `None`: its text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attribute: Option<String>,
}

impl ExtractionSpec {
    /// Reads `NAME=CSS` or `NAME=CSS@attr` and checks it. An `@` ends the
    /// selector only when an attribute name follows it to the end, so
    /// `a[href*="@"]` stays a selector.
    pub fn parse(text: &str) -> Result<ExtractionSpec, String> {
        let Some((name, rest)) = text.split_once('=') else {
            return Err(format!(
                "\"{text}\" is not NAME=CSS: write e.g. price=.price or image=meta[property=\"og:image\"]@content"
            ));
        };
        let rest = rest.trim();
        let (selector, attribute) = match rest.rsplit_once('@') {
            Some((css, attr)) if !css.trim().is_empty() && is_attribute_name(attr) => {
                (css.trim(), Some(attr.to_ascii_lowercase()))
            }
            _ => (rest, None),
        };
        ExtractionSpec::new(name, selector, attribute)
    }

    /// The extraction `name` of `selector` (its `attribute`, else its text), checked.
    pub fn new(
        name: &str,
        selector: &str,
        attribute: Option<String>,
    ) -> Result<ExtractionSpec, String> {
        let spec = ExtractionSpec {
            name: name.trim().to_string(),
            selector: selector.to_string(),
            attribute,
        };
        spec.check()?;
        Ok(spec)
    }

    /// Why this extraction cannot be used, naming the fix.
    pub fn check(&self) -> Result<(), String> {
        let name = &self.name;
        let good_name = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            && name.len() <= MAX_NAME_CHARS;
        if !good_name {
            return Err(format!(
                "extraction name \"{name}\": use 1 to {MAX_NAME_CHARS} letters, digits, '-' or '_', starting with a letter (e.g. price)"
            ));
        }
        if self.selector.trim().is_empty() {
            return Err(format!(
                "extraction {name}: the CSS selector is empty; write {name}=CSS"
            ));
        }
        if self.selector.len() > MAX_SELECTOR_BYTES {
            return Err(format!(
                "extraction {name}: the selector is longer than {MAX_SELECTOR_BYTES} bytes"
            ));
        }
        crate::engine::css::check_selector(&self.selector)
            .map_err(|e| format!("extraction {name}: {e}"))?;
        match &self.attribute {
            Some(attr) if !is_attribute_name(attr) => Err(format!(
                "extraction {name}: \"{attr}\" is not an attribute name (e.g. href, content, data-price)"
            )),
            _ => Ok(()),
        }
    }

    /// As the operator writes it: `NAME=CSS` or `NAME=CSS@attr`.
    pub fn describe(&self) -> String {
        match &self.attribute {
            Some(attr) => format!("{}={}@{attr}", self.name, self.selector),
            None => format!("{}={}", self.name, self.selector),
        }
    }
}

/// The extractions of the crawl in `data_dir`: those of its crawl.toml,
/// which flags and `:extract` write to; none without one. What a viewer
/// reads to know the columns of `pages` (a running crawl's snapshot has
/// their names too: `Snapshot::extractions`).
pub fn stored(data_dir: &Path) -> Result<Vec<ExtractionSpec>, super::ConfigError> {
    let path = data_dir.join(super::CONFIG_FILE);
    if !path.is_file() {
        return Ok(Vec::new());
    }
    Ok(super::CrawlConfig::load(&path)?.extract)
}

/// Checks every extraction, their number, and that names differ (ignoring case).
pub fn check_list(list: &[ExtractionSpec]) -> Result<(), String> {
    if list.len() > MAX_EXTRACTIONS {
        return Err(format!(
            "{} extractions; at most {MAX_EXTRACTIONS} (each runs on every HTML page)",
            list.len()
        ));
    }
    for (i, spec) in list.iter().enumerate() {
        spec.check()?;
        if list[..i]
            .iter()
            .any(|other| other.name.eq_ignore_ascii_case(&spec.name))
        {
            return Err(format!(
                "two extractions are named {}: give each its own name",
                spec.name
            ));
        }
    }
    Ok(())
}

/// Adds `spec` to `list`, replacing one of the same name (a flag over crawl.toml).
pub fn add_or_replace(list: &mut Vec<ExtractionSpec>, spec: ExtractionSpec) {
    match list
        .iter_mut()
        .find(|s| s.name.eq_ignore_ascii_case(&spec.name))
    {
        Some(slot) => *slot = spec,
        None => list.push(spec),
    }
}

/// An HTML attribute name as `@attr` takes it: `href`, `data-price`, `xml:lang`.
fn is_attribute_name(text: &str) -> bool {
    let mut chars = text.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.'))
        && text.len() <= 64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_css_and_attribute_are_read_and_an_at_inside_the_selector_stays() {
        let price = ExtractionSpec::parse("price=span.price").unwrap();
        assert_eq!(
            (price.name.as_str(), price.selector.as_str()),
            ("price", "span.price")
        );
        assert_eq!(price.attribute, None);
        let image = ExtractionSpec::parse("og_image=meta[property=\"og:image\"]@content").unwrap();
        assert_eq!(image.selector, "meta[property=\"og:image\"]");
        assert_eq!(image.attribute.as_deref(), Some("content"));
        assert_eq!(
            image.describe(),
            "og_image=meta[property=\"og:image\"]@content"
        );
        let mail = ExtractionSpec::parse("mail=a[href*=\"@example\"]").unwrap();
        assert_eq!(mail.selector, "a[href*=\"@example\"]");
        assert_eq!(mail.attribute, None);
        let spaced = ExtractionSpec::parse("crumbs=nav.breadcrumbs a").unwrap();
        assert_eq!(spaced.selector, "nav.breadcrumbs a");
    }

    #[test]
    fn bad_names_and_selectors_are_refused_with_the_fix() {
        let no_equals = ExtractionSpec::parse("price").unwrap_err();
        assert!(no_equals.contains("NAME=CSS"), "{no_equals}");
        for bad in [
            "=.x",
            "1st=.x",
            "a b=.x",
            "pr\u{1b}ice=.x",
            &format!("{}=.x", "n".repeat(33)),
        ] {
            let e = ExtractionSpec::parse(bad).unwrap_err();
            assert!(e.contains("letters, digits"), "{bad}: {e}");
        }
        let css = ExtractionSpec::parse("price=div[").unwrap_err();
        assert!(
            css.starts_with("extraction price: bad CSS selector"),
            "{css}"
        );
        let empty = ExtractionSpec::parse("price=").unwrap_err();
        assert!(empty.contains("empty"), "{empty}");
    }

    #[test]
    fn a_list_has_distinct_names_and_a_bounded_length() {
        let spec = |name: &str| ExtractionSpec::parse(&format!("{name}=p")).unwrap();
        let twice = check_list(&[spec("price"), spec("Price")]).unwrap_err();
        assert!(twice.contains("two extractions are named Price"), "{twice}");
        let many: Vec<_> = (0..=MAX_EXTRACTIONS)
            .map(|i| spec(&format!("x{i}")))
            .collect();
        assert!(check_list(&many).unwrap_err().contains("at most 32"));
        assert!(check_list(&many[..MAX_EXTRACTIONS]).is_ok());
        let mut list = vec![spec("price"), spec("sku")];
        add_or_replace(&mut list, ExtractionSpec::parse("price=.new").unwrap());
        assert_eq!(list.len(), 2);
        assert_eq!(list[0].selector, ".new");
    }
}
