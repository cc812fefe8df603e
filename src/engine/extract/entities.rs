//! HTML character-reference decoding for attribute values and title text
//! (the scanner hands both back raw).

use std::borrow::Cow;

/// Named references seen in URLs and titles. Longer lists buy little: unknown
/// names are left as written, which is what browsers do for unknown names too.
const NAMED: [(&str, char); 40] = [
    ("amp", '&'),
    ("lt", '<'),
    ("gt", '>'),
    ("quot", '"'),
    ("apos", '\''),
    ("nbsp", '\u{a0}'),
    ("copy", '©'),
    ("reg", '®'),
    ("trade", '™'),
    ("hellip", '…'),
    ("mdash", '—'),
    ("ndash", '–'),
    ("lsquo", '‘'),
    ("rsquo", '’'),
    ("ldquo", '“'),
    ("rdquo", '”'),
    ("laquo", '«'),
    ("raquo", '»'),
    ("middot", '·'),
    ("bull", '•'),
    ("euro", '€'),
    ("pound", '£'),
    ("yen", '¥'),
    ("sect", '§'),
    ("deg", '°'),
    ("times", '×'),
    ("eacute", 'é'),
    ("egrave", 'è'),
    ("aacute", 'á'),
    ("agrave", 'à'),
    ("auml", 'ä'),
    ("ouml", 'ö'),
    ("uuml", 'ü'),
    ("Auml", 'Ä'),
    ("Ouml", 'Ö'),
    ("Uuml", 'Ü'),
    ("szlig", 'ß'),
    ("ccedil", 'ç'),
    ("ntilde", 'ñ'),
    ("sol", '/'),
];

/// Names a browser also decodes without the trailing `;` (legacy references).
const LEGACY_WITHOUT_SEMICOLON: [&str; 7] = ["amp", "lt", "gt", "quot", "nbsp", "copy", "reg"];

/// Decodes character references. In attribute values a reference without `;`
/// followed by `=` or an alphanumeric is kept (`?a=1&copy=2` stays a query).
pub fn decode(input: &str, in_attribute: bool) -> Cow<'_, str> {
    if !input.contains('&') {
        return Cow::Borrowed(input);
    }
    let mut out = String::with_capacity(input.len());
    let mut rest = input;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        match decode_one(rest, in_attribute) {
            Some((ch, consumed)) => {
                out.push(ch);
                rest = &rest[consumed..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// `text` starts with `&`; returns the character and how many bytes it spans.
fn decode_one(text: &str, in_attribute: bool) -> Option<(char, usize)> {
    let body = &text[1..];
    if let Some(numeric) = body.strip_prefix('#') {
        let (digits, radix, prefix_len) = match numeric.strip_prefix(['x', 'X']) {
            Some(hex) => (hex, 16, 3),
            None => (numeric, 10, 2),
        };
        let len = digits
            .bytes()
            .take_while(|b| (*b as char).is_digit(radix))
            .count();
        if len == 0 {
            return None;
        }
        // Overlong numbers are clamped to an invalid code point, not parsed forever.
        let value = if len > 8 {
            u32::MAX
        } else {
            u32::from_str_radix(&digits[..len], radix).ok()?
        };
        let ch = match value {
            0 => '\u{fffd}',
            v => char::from_u32(v).unwrap_or('\u{fffd}'),
        };
        let semicolon = usize::from(digits[len..].starts_with(';'));
        return Some((ch, prefix_len + len + semicolon));
    }
    let name_len = body
        .bytes()
        .take(10)
        .take_while(u8::is_ascii_alphanumeric)
        .count();
    let name = &body[..name_len];
    let after = &body[name_len..];
    if after.starts_with(';') {
        let ch = NAMED.iter().find(|(n, _)| *n == name)?.1;
        return Some((ch, 1 + name_len + 1));
    }
    // Without `;`: the longest legacy name that prefixes the text.
    let (legacy, ch) = LEGACY_WITHOUT_SEMICOLON
        .iter()
        .filter(|n| body.starts_with(**n))
        .max_by_key(|n| n.len())
        .and_then(|n| NAMED.iter().find(|(name, _)| name == n))?;
    let next = body[legacy.len()..].bytes().next();
    if in_attribute && next.is_some_and(|b| b == b'=' || b.is_ascii_alphanumeric()) {
        return None;
    }
    Some((*ch, 1 + legacy.len()))
}

#[cfg(test)]
mod tests {
    use super::decode;

    #[test]
    fn decodes_named_and_numeric_references() {
        assert_eq!(decode("/a?x=1&amp;y=2", true), "/a?x=1&y=2");
        assert_eq!(
            decode("/a?x=1&#38;y=2&#x26;z=3&#X26;w", true),
            "/a?x=1&y=2&z=3&w"
        );
        assert_eq!(
            decode("Caf&eacute; &mdash; menu&hellip;", false),
            "Café — menu…"
        );
        assert_eq!(decode("no references", true), "no references");
    }

    #[test]
    fn leaves_unknown_and_ambiguous_references() {
        assert_eq!(decode("a&unknown;b", true), "a&unknown;b");
        assert_eq!(decode("?a=1&copy=2", true), "?a=1&copy=2");
        assert_eq!(decode("?a=1&ampx", true), "?a=1&ampx");
        assert_eq!(decode("fish &amp chips", true), "fish & chips");
        assert_eq!(decode("&copy 2026", false), "© 2026");
        assert_eq!(decode("trailing &", true), "trailing &");
        assert_eq!(decode("&#;&#x;", true), "&#;&#x;");
    }

    #[test]
    fn invalid_code_points_become_replacement_characters() {
        assert_eq!(
            decode("&#0;&#xD800;&#99999999999999;", false),
            "\u{fffd}\u{fffd}\u{fffd}"
        );
        assert_eq!(decode("&#x1F600;", false), "😀");
    }
}
