//! Where a page's text blocks begin and end, and which of its elements are
//! navigation (boilerplate), for the content measure (`near_dup`).

use super::scan::Tag;
use crate::engine::near_dup::FeatureBuilder;

/// Elements that sit inside a line of text: they do not end a block.
const INLINE: [&str; 31] = [
    "a", "abbr", "b", "bdi", "bdo", "big", "cite", "code", "data", "dfn", "em", "font", "i", "img",
    "kbd", "label", "mark", "nobr", "q", "s", "samp", "small", "span", "strike", "strong", "sub",
    "sup", "time", "tt", "u", "var",
];

/// Elements that hold a site's navigation, not a page's content.
const LANDMARKS: [&str; 4] = ["nav", "header", "footer", "aside"];

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
    pub(super) fn start_tag(&mut self, tag: &Tag<'_>) {
        if !is_inline(tag.name) {
            self.features.end_block();
        }
        match &mut self.region {
            Some(region) if region.is(tag.name) => region.depth += 1,
            Some(_) => {}
            None if tag.name.len() <= NAME_MAX && is_navigation(tag) => {
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
    INLINE
        .iter()
        .any(|t| name.eq_ignore_ascii_case(t.as_bytes()))
}

/// A landmark element, an element with a navigation role, or one whose class
/// or id names navigation.
fn is_navigation(tag: &Tag<'_>) -> bool {
    if LANDMARKS.iter().any(|l| tag.is(l)) {
        return true;
    }
    let names = |attribute: &str, list: &[&str]| {
        tag.attribute(attribute).is_some_and(|value| {
            value.split(|b| b.is_ascii_whitespace()).any(|token| {
                list.iter()
                    .any(|n| token.eq_ignore_ascii_case(n.as_bytes()))
            })
        })
    };
    names("role", &ROLES) || names("class", &NAV_NAMES) || names("id", &NAV_NAMES)
}
