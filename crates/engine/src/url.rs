//! URLs as people type them: a path with non-ASCII characters or spaces, credentials in the
//! authority. What goes on the wire is what curl would send.

use std::borrow::Cow;

/// `text` with every byte that may not appear raw in a request target (non-ASCII, control
/// characters, space) percent-encoded; escapes already there are kept. `http://h/café`
/// goes out as `/caf%C3%A9`, as curl and browsers send it.
pub fn encode_target(text: &str) -> Cow<'_, str> {
    let keep = |b: u8| b.is_ascii_graphic();
    if text.bytes().all(keep) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for b in text.bytes() {
        if keep(b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    Cow::Owned(out)
}

/// A URL's request target encoded (see [`encode_target`]), its scheme and authority kept.
pub fn encode_url(url: &str) -> Cow<'_, str> {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    match url[after_scheme..].find(['/', '?']) {
        Some(at) => {
            let (head, target) = url.split_at(after_scheme + at);
            match encode_target(target) {
                Cow::Borrowed(_) => Cow::Borrowed(url),
                Cow::Owned(target) => Cow::Owned(format!("{head}{target}")),
            }
        }
        None => Cow::Borrowed(url),
    }
}

/// Credentials written into a URL's authority (`http://user:secret@host/`), percent-decoded,
/// and the URL without them; `None` when it has none.
pub fn take_userinfo(url: &str) -> Option<(String, String)> {
    let after_scheme = url.find("://")? + 3;
    let authority_end = url[after_scheme..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |i| after_scheme + i);
    let authority = &url[after_scheme..authority_end];
    let at = authority.rfind('@')?;
    let stripped = format!(
        "{}{}{}",
        &url[..after_scheme],
        &authority[at + 1..],
        &url[authority_end..]
    );
    Some((percent_decode(&authority[..at]), stripped))
}

/// `text` with the password of every URL in it (`scheme://user:password@host`) hidden, so
/// an error or a label that quotes a URL never prints a secret.
pub fn hide_passwords(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        let end = tail
            .find(|c: char| matches!(c, '/' | '?' | '#' | '\'' | '"' | '`') || c.is_whitespace())
            .unwrap_or(tail.len());
        let authority = &tail[..end];
        match authority.rfind('@') {
            // A user name alone may be a token: hidden as well.
            Some(at) => {
                if let Some((user, _)) = authority[..at].split_once(':') {
                    out.push_str(user);
                    out.push(':');
                }
                out.push_str("(hidden)");
                out.push_str(&authority[at..]);
            }
            None => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// The value of a Basic `Authorization` header for `userinfo` (`user:password`), RFC 7617.
pub fn basic_authorization(userinfo: &str) -> String {
    use base64::Engine as _;
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(userinfo)
    )
}

/// `%XX` escapes decoded (invalid ones kept as they are).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(hi), Some(lo)) = (
                bytes.get(i + 1).copied().and_then(hex),
                bytes.get(i + 2).copied().and_then(hex),
            )
        {
            out.push((hi * 16 + lo) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Header values that must not be written into a run file or shown: credentials, by name
/// (Authorization, Cookie) or by what the name ends in (`X-Api-Key`, `X-Purge-Token`,
/// `X-Auth`, `X-Client-Secret`).
pub fn is_secret_header(name: &str) -> bool {
    let name = name.trim().to_ascii_lowercase();
    [
        "authorization",
        "proxy-authorization",
        "cookie",
        "set-cookie",
        "apikey",
    ]
    .contains(&name.as_str())
        || [
            "key",
            "token",
            "secret",
            "password",
            "passwd",
            "auth",
            "signature",
            "session",
        ]
        .iter()
        .any(|end| {
            name.strip_suffix(end)
                .is_some_and(|before| before.ends_with(['-', '_']))
                || name == *end
        })
}

/// What a run file keeps of a secret header's value: its scheme, if it has one.
pub fn redact(value: &str) -> String {
    match value.split_once(' ') {
        Some((scheme, _)) if !scheme.contains('=') => format!("{scheme} (redacted)"),
        _ => "(redacted)".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_ascii_and_spaces_are_encoded_escapes_kept() {
        assert_eq!(
            encode_url("http://h:8/café?q=a b"),
            "http://h:8/caf%C3%A9?q=a%20b"
        );
        assert_eq!(encode_url("http://h/a%20b"), "http://h/a%20b");
        assert!(matches!(encode_url("http://h/plain"), Cow::Borrowed(_)));
        assert_eq!(encode_target("/ü"), "/%C3%BC");
    }

    #[test]
    fn passwords_in_text_are_hidden() {
        assert_eq!(
            hide_passwords("invalid value 'nginx:http://u:s3cret@h:8/status' for x"),
            "invalid value 'nginx:http://u:(hidden)@h:8/status' for x"
        );
        assert_eq!(
            hide_passwords("a http://h/x@y and https://a:b@c"),
            "a http://h/x@y and https://a:(hidden)@c"
        );
        assert_eq!(hide_passwords("http://token@h/"), "http://(hidden)@h/");
        assert_eq!(hide_passwords("no url: a:b@c"), "no url: a:b@c");
    }

    #[test]
    fn credentials_leave_the_url_for_a_header() {
        let (userinfo, url) = take_userinfo("http://user:p%40ss@host:8080/a?b").unwrap();
        assert_eq!(userinfo, "user:p@ss");
        assert_eq!(url, "http://host:8080/a?b");
        assert_eq!(
            basic_authorization("Aladdin:open sesame"),
            "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=="
        );
        assert!(
            take_userinfo("http://host/a@b").is_none(),
            "an @ in the path"
        );
        assert_eq!(redact("Basic QWxh"), "Basic (redacted)");
        for secret in [
            "Authorization",
            "cookie",
            "X-Api-Key",
            "x-purge-key",
            "X-Auth-Token",
            "X-Client-Secret",
            "api_key",
            "Token",
        ] {
            assert!(is_secret_header(secret), "{secret}");
        }
        for plain in ["Host", "Accept", "X-Monkey", "Keep-Alive", "X-Cache-Tokens"] {
            assert!(!is_secret_header(plain), "{plain}");
        }
        assert_eq!(redact("session=abc"), "(redacted)");
    }
}
