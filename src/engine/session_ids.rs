//! Session ids in URLs: the same page under endless names. Well-known
//! session parameters are stripped during normalization (as Heritrix and
//! Nutch do by default); unknown ones are left to the trap detector.

use url::Url;

const MIN_SESSION_LEN: usize = 16;
const MAX_SESSION_LEN: usize = 256;

/// Query parameter names that carry a session id, compared case-insensitively.
const SESSION_PARAMS: [&str; 6] = [
    "jsessionid",
    "phpsessid",
    "sid",
    "sessionid",
    "session_id",
    "sessid",
];
/// Classic ASP appends a random suffix to the name: `ASPSESSIONIDQSCTRBDA=…`.
const ASP_SESSION_PREFIX: &str = "aspsessionid";
/// Java servlets put the id in the path: `/cart;jsessionid=…`.
const PATH_SESSION: &str = ";jsessionid=";

/// Long, from a hex or base64 alphabet, mixing character classes like a
/// random token does (words and dates do not).
pub fn random_looking(value: &str) -> bool {
    let len = value.len();
    if !(MIN_SESSION_LEN..=MAX_SESSION_LEN).contains(&len) {
        return false;
    }
    let b64 = |c: char| c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '=' | '_' | '-' | '%');
    if !value.chars().all(b64) {
        return false;
    }
    let digits = value.chars().filter(char::is_ascii_digit).count();
    let lower = value.chars().filter(char::is_ascii_lowercase).count();
    let upper = value.chars().filter(char::is_ascii_uppercase).count();
    let hex = value.chars().all(|c| c.is_ascii_hexdigit());
    let classes = [digits, lower, upper].iter().filter(|n| **n > 0).count();
    // Random hex has digits and letters; random base64 has at least two classes
    // and digits are not rare in it.
    if hex {
        digits > 0 && digits < len
    } else {
        classes >= 2 && digits * 16 >= len && value.contains(|c: char| c.is_ascii_alphabetic())
    }
}

/// Removes well-known session parameters whose value looks random, and a
/// `;jsessionid=` path parameter. True if the URL changed.
pub fn strip_session_ids(url: &mut Url) -> bool {
    let mut changed = false;
    if let Some(path) = without_path_session(url.path()) {
        url.set_path(&path);
        changed = true;
    }
    if let Some(query) = url.query().and_then(without_session_params) {
        url.set_query((!query.is_empty()).then_some(query.as_str()));
        changed = true;
    }
    changed
}

fn without_path_session(path: &str) -> Option<String> {
    if !path.contains(';') {
        return None;
    }
    // Every one of them: a path may carry the id once per segment.
    let mut stripped: Option<String> = None;
    loop {
        let current = stripped.as_deref().unwrap_or(path);
        let Some(start) = current.to_ascii_lowercase().find(PATH_SESSION) else {
            return stripped;
        };
        let end = current[start + 1..]
            .find(['/', ';'])
            .map_or(current.len(), |i| start + 1 + i);
        let next = format!("{}{}", &current[..start], &current[end..]);
        stripped = Some(next);
    }
}

/// The query without its session parameters; `None` when it has none (the
/// common case, no allocation).
fn without_session_params(query: &str) -> Option<String> {
    if !has_session_params(query) {
        return None;
    }
    let kept: Vec<&str> = query.split('&').filter(|p| !is_session_pair(p)).collect();
    Some(kept.join("&"))
}

/// Whether normalization would strip a session parameter from `query`.
pub(crate) fn has_session_params(query: &str) -> bool {
    query.split('&').any(is_session_pair)
}

fn is_session_pair(pair: &str) -> bool {
    let Some((name, value)) = pair.split_once('=') else {
        return false;
    };
    let known = SESSION_PARAMS.iter().any(|p| p.eq_ignore_ascii_case(name))
        || name
            .get(..ASP_SESSION_PREFIX.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(ASP_SESSION_PREFIX));
    known && random_looking(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_looking_values() {
        for yes in [
            "0123456789abcdef0123",
            "a8F3kQ9zLm2Xp7Rt",
            "5f2b8c1d9e7a6b4c3d2e1f0a",
        ] {
            assert!(random_looking(yes), "{yes}");
        }
        for no in [
            "short1a",
            "my-long-product-name",
            "2023102512301234",
            "deadbeefcafebabedead",
            "Summer-Sale-Collection",
            "price:asc,name:desc",
        ] {
            assert!(!random_looking(no), "{no}");
        }
    }

    fn stripped(input: &str) -> String {
        let mut url = Url::parse(input).expect("test URL parses");
        strip_session_ids(&mut url);
        url.to_string()
    }

    #[test]
    fn well_known_session_ids_are_stripped() {
        let sid = "5f2b8c1d9e7a6b4c3d2e1f0a9b8c7d6e";
        for (input, expected) in [
            (
                format!("http://a.example/item/3.html?sid={sid}"),
                "http://a.example/item/3.html",
            ),
            (
                format!("http://a.example/?PHPSESSID={sid}&page=2"),
                "http://a.example/?page=2",
            ),
            (
                format!("http://a.example/list?page=2&JSESSIONID={sid}&sort=asc"),
                "http://a.example/list?page=2&sort=asc",
            ),
            (
                format!("http://a.example/cart;jsessionid={sid}?x=1"),
                "http://a.example/cart?x=1",
            ),
            (
                format!("http://a.example/a;jsessionid={sid}/b"),
                "http://a.example/a/b",
            ),
            (
                format!("http://a.example/?ASPSESSIONIDQSCTRBDA={sid}"),
                "http://a.example/",
            ),
        ] {
            assert_eq!(stripped(&input), expected, "{input}");
        }
    }

    #[test]
    fn meaningful_parameters_stay() {
        for input in [
            "http://a.example/story?sid=42",
            "http://a.example/story?sid=summer-sale-collection",
            "http://a.example/item?id=5f2b8c1d9e7a6b4c3d2e1f0a9b8c7d6e",
            "http://a.example/?session=5f2b8c1d9e7a6b4c3d2e1f0a9b8c7d6e",
            "http://a.example/a;v=1/b",
            "http://a.example/?sid",
        ] {
            assert_eq!(stripped(input), input, "{input}");
        }
    }
}
