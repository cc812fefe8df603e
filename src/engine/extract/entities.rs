//! HTML character-reference decoding for attribute values and title text
//! (the scanner hands both back raw), as the HTML tokenizer decodes them:
//! the standard's whole table of named references, legacy names without
//! `;`, and numeric references with their replacements.

use std::borrow::Cow;

use markup5ever::data::{C1_REPLACEMENTS, NAMED_ENTITIES};
use memchr::memchr2;

/// Decodes character references. In attribute values a legacy reference
/// without `;` followed by `=` or an alphanumeric is kept (`?a=1&copy=2`
/// stays a query), and a NUL is U+FFFD, as the tokenizer has them.
pub fn decode(input: &str, in_attribute: bool) -> Cow<'_, str> {
    // Outside attributes only `&` starts something to decode.
    let nul = if in_attribute { b'\0' } else { b'&' };
    if memchr2(b'&', nul, input.as_bytes()).is_none() {
        return Cow::Borrowed(input);
    }
    let mut out = String::with_capacity(input.len());
    let mut rest = input;
    while let Some(at) = rest.find(['&', nul as char]) {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        if rest.starts_with('\0') {
            out.push('\u{fffd}');
            rest = &rest[1..];
            continue;
        }
        let consumed = match rest.as_bytes().get(1) {
            Some(b'#') => numeric(rest, &mut out),
            _ => named(rest, in_attribute, &mut out),
        };
        if consumed == 0 {
            out.push('&');
            rest = &rest[1..];
        } else {
            rest = &rest[consumed..];
        }
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// `text` starts with `&#`: pushes the character and returns the bytes it
/// spans, or 0 if no digits follow.
fn numeric(text: &str, out: &mut String) -> usize {
    let (radix, prefix_len) = match text.as_bytes().get(2) {
        Some(b'x' | b'X') => (16, 3),
        _ => (10, 2),
    };
    let digits = &text[prefix_len..];
    let len = digits
        .bytes()
        .take_while(|b| (*b as char).is_digit(radix))
        .count();
    if len == 0 {
        return 0;
    }
    // Leading zeros are dropped and overlong numbers clamped to an invalid
    // code point, not parsed forever.
    let significant = digits[..len].trim_start_matches('0');
    let value = if significant.len() > 8 {
        u32::MAX
    } else {
        u32::from_str_radix(significant, radix).unwrap_or(0)
    };
    out.push(numeric_char(value));
    let semicolon = usize::from(digits[len..].starts_with(';'));
    prefix_len + len + semicolon
}

/// The character a numeric reference stands for: U+FFFD for NUL, a
/// surrogate or past Unicode, the windows-1252 character for a C1 control.
fn numeric_char(value: u32) -> char {
    match value {
        0x80..=0x9f => C1_REPLACEMENTS[(value - 0x80) as usize]
            .unwrap_or_else(|| char::from_u32(value).unwrap_or('\u{fffd}')),
        0 => '\u{fffd}',
        v => char::from_u32(v).unwrap_or('\u{fffd}'),
    }
}

/// `text` starts with `&`: pushes the longest named reference it starts
/// with and returns the bytes that spans, or 0 if none applies.
fn named(text: &str, in_attribute: bool, out: &mut String) -> usize {
    let body = &text[1..];
    let mut best = None;
    // Names are ASCII; the table holds every prefix of one (as no
    // character), so the walk stops where no name continues.
    for (i, b) in body.bytes().enumerate() {
        if !(b.is_ascii_alphanumeric() || b == b';') {
            break;
        }
        match NAMED_ENTITIES.get(&body[..=i]) {
            None => break,
            Some(&(0, _)) => {}
            Some(&chars) => best = Some((i + 1, chars)),
        }
    }
    let Some((len, (first, second))) = best else {
        return 0;
    };
    let next = body.as_bytes().get(len);
    if in_attribute
        && !body[..len].ends_with(';')
        && next.is_some_and(|b| *b == b'=' || b.is_ascii_alphanumeric())
    {
        return 0;
    }
    out.extend(char::from_u32(first));
    if second != 0 {
        out.extend(char::from_u32(second));
    }
    1 + len
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
    fn the_whole_table_and_legacy_names_without_semicolon() {
        assert_eq!(
            decode("&NotEqualTilde;&Afr;", true),
            "\u{2242}\u{338}\u{1d504}"
        );
        assert_eq!(decode("&COPY &AElig", false), "© Æ");
        // The longest name wins; in text a legacy prefix is decoded.
        assert_eq!(decode("&notin; &notit", false), "∉ ¬it");
        assert_eq!(decode("&notit", true), "&notit");
    }

    #[test]
    fn numeric_references_as_the_tokenizer_reads_them() {
        assert_eq!(decode("&#x80;&#150;&#x81;", false), "€–\u{81}");
        assert_eq!(decode("&#0000000000000065;&#x0000000000041", false), "AA");
        assert_eq!(decode("&#13;", false), "\r");
    }

    #[test]
    fn a_nul_in_an_attribute_is_a_replacement_character() {
        assert_eq!(decode("a\0b", true), "a\u{fffd}b");
        assert_eq!(decode("a\0b", false), "a\0b");
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
