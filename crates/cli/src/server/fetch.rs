//! Reading a server's counters over the wire: one plain HTTP/1.0 GET (nginx's stub_status,
//! Squid's cache manager), one command on a Unix socket (HAProxy's stats socket); and one
//! POST (`--metrics-remote-write`). Blocking, each exchange bounded as a whole by its
//! [`Deadline`] and in size, never on the attack's path.

use anyhow::{Context as _, bail};

use crate::side::{self, Deadline};

/// The most a counters page (or a receiver's answer) may hold.
const LIMIT: usize = 4 << 20;

/// An `http://HOST:PORT/PATH` URL, split, its host resolved once (within the first
/// exchanges' deadlines) and kept.
#[derive(Debug, Clone)]
pub(crate) struct HttpUrl {
    pub(crate) authority: String,
    pub(crate) path: String,
    /// `user:password@` in the URL, as a Basic `Authorization` header (as curl sends it).
    authorization: Option<String>,
    resolver: side::Resolver,
}

impl PartialEq for HttpUrl {
    fn eq(&self, other: &HttpUrl) -> bool {
        (&self.authority, &self.path) == (&other.authority, &other.path)
    }
}

impl Eq for HttpUrl {}

impl HttpUrl {
    /// Parses `http://HOST[:PORT][/PATH]`; `what` names the flag in the error.
    pub(crate) fn parse(url: &str) -> Result<HttpUrl, String> {
        let shown = vload_engine::url::hide_passwords(url);
        if url.chars().any(|c| c.is_control() || c == ' ') {
            return Err(format!(
                "'{}' holds a space or a control character (CR, LF, tab): it would go onto the wire as more than a path; percent-encode it",
                shown.escape_debug()
            ));
        }
        // Credentials become a Basic Authorization header (a status page behind auth_basic,
        // Squid's cachemgr_passwd), never part of the host or of a message.
        let (userinfo, stripped) = match vload_engine::url::take_userinfo(url) {
            Some((userinfo, stripped)) => (Some(userinfo), stripped),
            None => (None, url.to_owned()),
        };
        let url = shown.as_str();
        let rest = stripped
            .strip_prefix("http://")
            .ok_or_else(|| format!("'{url}' is not an http:// URL"))?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        if authority.is_empty() || authority.contains('@') {
            return Err(format!("'{url}' names no host"));
        }
        let authority = if authority
            .rsplit_once(':')
            .is_some_and(|(_, p)| !p.contains(']'))
        {
            authority.to_owned()
        } else {
            format!("{authority}:80")
        };
        Ok(HttpUrl {
            resolver: side::Resolver::new(&authority),
            authority,
            path: path.to_owned(),
            authorization: userinfo.map(|u| vload_engine::url::basic_authorization(&u)),
        })
    }

    /// GETs the page before `deadline` and returns its body, anything but a 200 an error,
    /// with the answer's `Server` header (the server's version, where it gives it): one
    /// request, so a server that counts its pages counts one.
    pub(crate) fn get_page(&self, deadline: Deadline) -> anyhow::Result<(String, Option<String>)> {
        let (status, head, body) = self.exchange("GET", &[], &[], deadline)?;
        if code(&status) != "200" {
            bail!("the server answered {}", answered(&status, &head));
        }
        let server = head
            .lines()
            .filter_map(|l| l.split_once(':'))
            .find(|(name, _)| name.trim().eq_ignore_ascii_case("server"))
            .map(|(_, value)| value.trim().chars().take(100).collect());
        Ok((body, server))
    }

    /// POSTs `body` with `headers` before `deadline`; anything but a 2xx is an error, with
    /// the answer's first line of body.
    pub(crate) fn post(
        &self,
        body: &[u8],
        headers: &[(&str, &str)],
        deadline: Deadline,
    ) -> anyhow::Result<()> {
        let (status, head, answer) = self.exchange("POST", headers, body, deadline)?;
        if !code(&status).starts_with('2') {
            let first = answer.lines().next().unwrap_or_default().trim();
            bail!(
                "the receiver answered {}{}",
                answered(&status, &head),
                if first.is_empty() {
                    String::new()
                } else {
                    format!(": {}", vload_analyze::units::clean(first))
                }
            );
        }
        Ok(())
    }

    /// One request on a connection of its own: the status line, the head and the body.
    fn exchange(
        &self,
        method: &str,
        headers: &[(&str, &str)],
        body: &[u8],
        deadline: Deadline,
    ) -> anyhow::Result<(String, String, String)> {
        let address = self
            .resolver
            .resolve(deadline)
            .with_context(|| format!("cannot resolve {}", self.authority))?;
        let mut stream = side::connect(&address, deadline)
            .with_context(|| format!("cannot connect to {}", self.authority))?;
        let mut head = format!(
            "{method} {} HTTP/1.0\r\nHost: {}\r\nUser-Agent: vload\r\nConnection: close\r\n",
            self.path, self.authority
        );
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        if let Some(value) = &self.authorization {
            head.push_str(&format!("Authorization: {value}\r\n"));
        }
        if method == "POST" {
            head.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        head.push_str("\r\n");
        let wrote = side::write_all(&mut stream, head.as_bytes(), deadline)
            .and_then(|()| side::write_all(&mut stream, body, deadline));
        wrote.with_context(|| format!("writing to http://{}{}", self.authority, self.path))?;
        let bytes = side::read_to_end(&mut stream, LIMIT, deadline)
            .with_context(|| format!("reading http://{}{}", self.authority, self.path))?;
        if bytes.is_empty() {
            bail!("the server closed the connection without answering");
        }
        let text = String::from_utf8_lossy(&bytes);
        let (head, body) = text
            .split_once("\r\n\r\n")
            .context("the server's answer is not HTTP")?;
        let status = head.lines().next().unwrap_or_default().trim();
        if code(status).is_empty() {
            bail!("the server's answer is not HTTP");
        }
        Ok((status.to_owned(), head.to_owned(), body.to_owned()))
    }
}

/// A status in words: its code and reason (the standard one when the server gave none, as
/// HTTP/2 never does and HTTP/1.1 may not), and where a redirect points.
fn answered(status: &str, head: &str) -> String {
    let code = code(status);
    let given: Vec<&str> = status.split_whitespace().skip(2).collect();
    let reason = if given.is_empty() {
        code.parse::<u16>()
            .ok()
            .and_then(|c| http::StatusCode::from_u16(c).ok())
            .and_then(|c| c.canonical_reason())
            .unwrap_or("(no reason given)")
            .to_owned()
    } else {
        given.join(" ")
    };
    let mut words = vload_analyze::units::clean(&format!("{code} {reason}")).into_owned();
    if code.starts_with('3') {
        let location = head
            .lines()
            .filter_map(|l| l.split_once(':'))
            .find(|(name, _)| name.trim().eq_ignore_ascii_case("location"))
            .map(|(_, value)| value.trim());
        if let Some(to) = location {
            words.push_str(&format!(
                " (a redirect to {}: give the page's own URL)",
                vload_analyze::units::clean(to)
            ));
        }
    }
    words
}

/// The status code of a status line (`HTTP/1.1 204 No Content`: `204`).
fn code(status: &str) -> &str {
    status.split_whitespace().nth(1).unwrap_or_default()
}

/// Sends `command` on the Unix socket at `path` and returns all it answers before closing,
/// before `deadline`.
pub(crate) fn unix_command(
    path: &str,
    command: &str,
    deadline: Deadline,
) -> anyhow::Result<String> {
    let mut stream = side::connect_unix(std::path::Path::new(path), deadline)
        .with_context(|| format!("cannot connect to the socket {path}"))?;
    side::write_all(&mut stream, command.as_bytes(), deadline)
        .with_context(|| format!("writing to the socket {path}"))?;
    let bytes = side::read_to_end(&mut stream, LIMIT, deadline)
        .with_context(|| format!("reading the socket {path}"))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read as _, Write as _};

    #[test]
    fn urls() {
        let url = HttpUrl::parse("http://127.0.0.1:8080/status").unwrap();
        assert_eq!(url.authority, "127.0.0.1:8080");
        assert_eq!(url.path, "/status");
        assert_eq!(
            HttpUrl::parse("http://localhost").unwrap().authority,
            "localhost:80"
        );
        assert_eq!(
            HttpUrl::parse("http://[::1]/x").unwrap().authority,
            "[::1]:80"
        );
        assert_eq!(
            HttpUrl::parse("http://[::1]:81/x").unwrap().authority,
            "[::1]:81"
        );
        assert!(HttpUrl::parse("https://127.0.0.1/").is_err());
        assert!(HttpUrl::parse("http:///status").is_err());
        let err = HttpUrl::parse("http://127.0.0.1/a\r\nX-Smuggled: 1").unwrap_err();
        assert!(err.contains("control character"), "{err}");
        assert!(
            err.contains("\\r\\n"),
            "the error shows the CR LF escaped: {err}"
        );
    }

    #[test]
    fn a_page_that_is_not_there_is_an_error() {
        let err = get_error(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
        assert!(err.contains("404"), "{err}");
        assert!(
            unix_command(
                "/nonexistent/socket",
                "show stat\n",
                Deadline::after(std::time::Duration::from_secs(5))
            )
            .is_err()
        );
    }

    /// A page served once with `answer` (after reading the request), and the error its GET
    /// gives.
    fn get_error(answer: &'static [u8]) -> String {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = [0; 1024];
            let _ = s.read(&mut buf);
            s.write_all(answer).unwrap();
        });
        let err = HttpUrl::parse(&format!("http://127.0.0.1:{port}/status"))
            .unwrap()
            .get_page(Deadline::after(std::time::Duration::from_secs(5)))
            .unwrap_err();
        server.join().unwrap();
        format!("{err:#}")
    }

    /// #58: a peer closing without a byte is not "not HTTP"; a status line with no reason
    /// gets the standard one, and a redirect says where it points, all printable.
    #[test]
    fn an_answer_is_told_in_words_that_fit_it() {
        let err = get_error(b"");
        assert!(
            err.contains("closed the connection without answering"),
            "{err}"
        );
        assert!(!err.contains("not HTTP"), "{err}");
        let err = get_error(b"HTTP/1.1 307 \r\nLocation: /status/\r\nContent-Length: 0\r\n\r\n");
        assert!(err.contains("307 Temporary Redirect"), "{err}");
        assert!(err.contains("a redirect to /status/"), "{err}");
        let err = get_error(b"HTTP/1.1 302 Found\r\nLocation: /\x1b[2J\r\n\r\n");
        assert!(
            err.contains("302 Found") && err.contains("\\u{1b}"),
            "{err}"
        );
        assert!(!err.contains('\x1b'), "{err}");
        let err = get_error(b"HTTP/1.1 599\r\n\r\n");
        assert!(err.contains("599 (no reason given)"), "{err}");
    }

    /// #58: `user:password@` in a side URL is a Basic Authorization header, not a host.
    #[test]
    fn credentials_in_the_url_are_sent_as_basic_auth() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = [0; 1024];
            let n = s.read(&mut buf).unwrap();
            s.write_all(b"HTTP/1.1 200 OK\r\n\r\nfine").unwrap();
            String::from_utf8_lossy(&buf[..n]).into_owned()
        });
        let url =
            HttpUrl::parse(&format!("http://admin:s%40cret@127.0.0.1:{port}/status")).unwrap();
        assert_eq!(url.authority, format!("127.0.0.1:{port}"));
        let (body, _) = url
            .get_page(Deadline::after(std::time::Duration::from_secs(5)))
            .unwrap();
        assert_eq!(body, "fine");
        let request = server.join().unwrap();
        // admin:s@cret
        assert!(
            request.contains("Authorization: Basic YWRtaW46c0BjcmV0\r\n"),
            "{request}"
        );
        assert!(
            request.contains(&format!("Host: 127.0.0.1:{port}\r\n")),
            "{request}"
        );
    }
}
