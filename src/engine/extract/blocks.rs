//! Where a page's text blocks begin and end, and which of its elements are
//! navigation (boilerplate), for the content measure (`near_dup`).

use super::scan::Tag;
use crate::engine::near_dup::FeatureBuilder;

/// What an element is to the measure, by its name.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Sits inside a line of text: does not end a block.
    Inline,
    /// Holds a site's navigation, not a page's content.
    Landmark,
    /// Its role, class or id may mark navigation.
    Container,
    Other,
}

/// One match on the lower-cased name: this runs on every tag of every page.
fn kind(name: &[u8]) -> Kind {
    let mut lower = [0u8; 8];
    if name.len() > lower.len() {
        return Kind::Other;
    }
    for (l, b) in lower.iter_mut().zip(name) {
        *l = b.to_ascii_lowercase();
    }
    match &lower[..name.len()] {
        b"a" | b"abbr" | b"b" | b"bdi" | b"bdo" | b"big" | b"cite" | b"code" | b"data" | b"dfn"
        | b"em" | b"font" | b"i" | b"img" | b"kbd" | b"label" | b"mark" | b"nobr" | b"q" | b"s"
        | b"samp" | b"small" | b"span" | b"strike" | b"strong" | b"sub" | b"sup" | b"time"
        | b"tt" | b"u" | b"var" => Kind::Inline,
        b"nav" | b"header" | b"footer" | b"aside" => Kind::Landmark,
        b"div" | b"section" | b"ul" | b"table" | b"td" => Kind::Container,
        _ => Kind::Other,
    }
}

/// ARIA roles of the same.
const ROLES: [&str; 5] = [
    "navigation",
    "banner",
    "contentinfo",
    "complementary",
    "search",
];

/// Class and id names documentation generators and sites give navigation.
const NAV_NAMES: [&str; 12] = [
    "nav",
    "navbar",
    "navigation",
    "navheader",
    "navfooter",
    "sidebar",
    "sphinxsidebar",
    "related",
    "breadcrumb",
    "breadcrumbs",
    "footer",
    "menu",
];

/// Class names of line-number gutters beside source listings (rustdoc,
/// Pygments, highlight.js plugins): a column of 1, 2, 3 … that every long
/// listing shares, and that would decide the fingerprint of each.
const GUTTER_NAMES: [&str; 6] = [
    "line-numbers",
    "src-line-numbers",
    "linenos",
    "linenodiv",
    "hljs-ln-numbers",
    "gutter",
];

/// Longest element name a boilerplate region is tracked by.
const NAME_MAX: usize = 16;

/// The text blocks of a page as they stream past, with the boilerplate
/// region the text is in, if any: the outermost navigation element and how
/// deeply elements of its name nest inside it.
#[derive(Default)]
pub(super) struct Blocks {
    pub(super) features: FeatureBuilder,
    region: Option<Region>,
}

struct Region {
    name: [u8; NAME_MAX],
    len: usize,
    depth: u32,
}

impl Region {
    fn is(&self, name: &[u8]) -> bool {
        self.name[..self.len].eq_ignore_ascii_case(name)
    }
}

impl Blocks {
    pub(super) fn for_page(bytes: usize) -> Self {
        Blocks {
            features: FeatureBuilder::for_page(bytes),
            region: None,
        }
    }

    pub(super) fn start_tag(&mut self, tag: &Tag<'_>) {
        let kind = kind(tag.name);
        if kind != Kind::Inline {
            self.features.end_block();
        }
        match &mut self.region {
            Some(region) if region.is(tag.name) => region.depth += 1,
            Some(_) => {}
            None if tag.name.len() <= NAME_MAX && is_boilerplate(tag, kind) => {
                let mut name = [0; NAME_MAX];
                name[..tag.name.len()].copy_from_slice(tag.name);
                self.region = Some(Region {
                    name,
                    len: tag.name.len(),
                    depth: 1,
                });
                self.features.set_boilerplate(true);
            }
            None => {}
        }
    }

    pub(super) fn end_tag(&mut self, name: &[u8]) {
        if !is_inline(name) {
            self.features.end_block();
        }
        if let Some(region) = &mut self.region {
            if region.is(name) {
                region.depth -= 1;
                if region.depth == 0 {
                    self.region = None;
                    self.features.set_boilerplate(false);
                }
            }
        }
    }
}

fn is_inline(name: &[u8]) -> bool {
    kind(name) == Kind::Inline
}

/// A landmark element, a container (only those: reading every tag's
/// attributes would cost more than the rest of the measure) whose role,
/// class or id names navigation, or a line-number gutter.
fn is_boilerplate(tag: &Tag<'_>, kind: Kind) -> bool {
    let pre = tag.name.eq_ignore_ascii_case(b"pre");
    match kind {
        Kind::Landmark => return true,
        Kind::Container => {}
        Kind::Other if pre => {}
        _ => return false,
    }
    let names = |attribute: &str, list: &[&str]| {
        tag.attribute(attribute).is_some_and(|value| {
            value.split(|b| b.is_ascii_whitespace()).any(|token| {
                list.iter()
                    .any(|n| token.eq_ignore_ascii_case(n.as_bytes()))
            })
        })
    };
    names("class", &GUTTER_NAMES)
        || !pre && (names("role", &ROLES) || names("class", &NAV_NAMES) || names("id", &NAV_NAMES))
}
