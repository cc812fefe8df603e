//! A tag's end and its attributes, read by the HTML tokenizer's tag states
//! (before/after attribute name, attribute value, self-closing start tag):
//! finding where a tag ends and reading its attributes walk the same steps,
//! so a `>` the tokenizer reads inside a value never ends a tag, and one it
//! reads as the end always does.

use memchr::memchr;

/// A start tag: its name and the bytes of its attributes.
pub(in crate::engine::extract) struct Tag<'a> {
    pub name: &'a [u8],
    /// From after the name through the closing `>`.
    pub(super) attributes: &'a [u8],
}

impl<'a> Tag<'a> {
    pub fn is(&self, name: &str) -> bool {
        self.name.eq_ignore_ascii_case(name.as_bytes())
    }

    /// The tag's attribute bytes, unparsed.
    pub fn raw_attributes(&self) -> &'a [u8] {
        self.attributes
    }

    /// The raw value of the first attribute called `name` (entities not
    /// decoded); an attribute without a value gives an empty one.
    pub fn attribute(&self, name: &str) -> Option<&'a [u8]> {
        Attributes::of(self.attributes)
            .find(|(n, _)| n.eq_ignore_ascii_case(name.as_bytes()))
            .map(|(_, value)| value)
    }
}

/// One step through a tag's attributes.
enum Step {
    /// An attribute's name and value (empty without one), and where the next step starts.
    Attribute {
        name: (usize, usize),
        value: (usize, usize),
        next: usize,
    },
    /// The tag ends just before this index (after its `>`).
    End(usize),
    /// The input ends inside the tag: the tokenizer emits no tag.
    Unterminated,
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'\x0c')
}

/// Reads from `at` (after a tag name or an attribute) to the next attribute or the tag's end.
fn step(bytes: &[u8], at: usize) -> Step {
    // A `/` not followed by `>` is read again as if it were a space.
    let at = skip_while(bytes, at, |b| is_space(b) || b == b'/');
    match bytes.get(at) {
        None => return Step::Unterminated,
        Some(b'>') => return Step::End(at + 1),
        _ => {}
    }
    // A name may begin with `=`; it ends at a space, `/`, `>` or `=`.
    let name_end = skip_while(bytes, at + 1, |b| {
        !(is_space(b) || b == b'/' || b == b'>' || b == b'=')
    });
    let name = (at, name_end);
    let after_name = skip_while(bytes, name_end, is_space);
    if bytes.get(after_name) != Some(&b'=') {
        let value = (name_end, name_end);
        return Step::Attribute {
            name,
            value,
            next: after_name,
        };
    }
    let value_start = skip_while(bytes, after_name + 1, is_space);
    match bytes.get(value_start) {
        None => Step::Unterminated,
        Some(&quote @ (b'"' | b'\'')) => match memchr(quote, &bytes[value_start + 1..]) {
            Some(len) => {
                let value = (value_start + 1, value_start + 1 + len);
                Step::Attribute {
                    name,
                    value,
                    next: value.1 + 1,
                }
            }
            None => Step::Unterminated,
        },
        // `<a href=>`: an empty value, then the end.
        Some(b'>') => {
            let value = (value_start, value_start);
            Step::Attribute {
                name,
                value,
                next: value_start,
            }
        }
        Some(_) => {
            let end = skip_while(bytes, value_start, |b| !(is_space(b) || b == b'>'));
            if end == bytes.len() {
                return Step::Unterminated;
            }
            Step::Attribute {
                name,
                value: (value_start, end),
                next: end,
            }
        }
    }
}

/// The length of the tag that starts at `tag[0] == b'<'`, through its `>`,
/// or `None` if the input ends first.
pub(super) fn tag_len(tag: &[u8]) -> Option<usize> {
    let name_end = 1 + tag_name(&tag[1..]).len();
    let mut at = name_end;
    loop {
        match step(tag, at) {
            Step::Attribute { next, .. } => at = next,
            Step::End(end) => return Some(end),
            Step::Unterminated => return None,
        }
    }
}

/// A tag's name: after `<` or `</`, up to a space, `/` or `>`.
pub(super) fn tag_name(after_lt: &[u8]) -> &[u8] {
    let end = after_lt
        .iter()
        .position(|&b| is_space(b) || b == b'/' || b == b'>')
        .unwrap_or(after_lt.len());
    &after_lt[..end]
}

/// Attribute `(name, value)` pairs of a tag's attribute bytes.
pub(super) struct Attributes<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Attributes<'a> {
    pub(super) fn of(bytes: &'a [u8]) -> Self {
        Attributes { bytes, at: 0 }
    }
}

impl<'a> Iterator for Attributes<'a> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        match step(self.bytes, self.at) {
            Step::Attribute { name, value, next } => {
                self.at = next;
                Some((&self.bytes[name.0..name.1], &self.bytes[value.0..value.1]))
            }
            Step::End(_) | Step::Unterminated => None,
        }
    }
}

fn skip_while(bytes: &[u8], from: usize, keep: impl Fn(u8) -> bool) -> usize {
    bytes[from.min(bytes.len())..]
        .iter()
        .position(|&b| !keep(b))
        .map_or(bytes.len(), |i| from + i)
}
