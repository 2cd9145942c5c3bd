//! Reading target files, line by line: URL lists, vegeta's http format, JSON lines, access
//! logs.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use base64::Engine as _;
use bytes::Bytes;
use http::uri::{Authority, PathAndQuery};
use http::{HeaderMap, HeaderName, HeaderValue, Method, Uri};

use super::types::{Target, TargetError, TargetFormat, TargetSet};

/// One step of a reader.
pub(crate) enum Item {
    Target(Target),
    Bad(TargetError),
    /// A log line with a method that is not replayed.
    OtherMethod,
}

/// Reads targets from one file, streaming.
pub(crate) struct TargetReader {
    reader: BufReader<File>,
    /// The current line's bytes.
    buf: Vec<u8>,
    line: u64,
    pub(super) set: TargetSet,
}

/// The longest line a target file may have. A file that is not one (a binary, a single
/// 10 GB line) is refused at its first long line instead of read whole into memory.
pub(super) const MAX_LINE: usize = 1 << 20;

impl TargetReader {
    pub(crate) fn open(set: &TargetSet) -> Result<Self, TargetError> {
        let file = File::open(&set.path).map_err(|e| TargetError {
            file: display(&set.path),
            line: 0,
            message: format!("cannot open: {e}"),
        })?;
        Ok(TargetReader {
            reader: BufReader::with_capacity(64 * 1024, file),
            buf: Vec::new(),
            line: 0,
            set: set.clone(),
        })
    }

    fn bad(&self, line: u64, message: impl Into<String>) -> Item {
        Item::Bad(TargetError {
            file: display(&self.set.path),
            line,
            message: message.into(),
        })
    }

    fn next_line(&mut self) -> Option<Result<String, Item>> {
        use std::io::Read as _;
        self.buf.clear();
        let read = (&mut self.reader)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut self.buf);
        match read {
            Ok(0) => return None,
            Ok(_) => self.line += 1,
            Err(e) => {
                self.line += 1;
                return Some(Err(self.bad(self.line, format!("cannot read: {e}"))));
            }
        }
        if self.buf.len() > MAX_LINE {
            // Skip the rest of the line in bounded steps, so --skip-bad-lines can go on.
            while !self.buf.ends_with(b"\n") {
                self.buf.clear();
                match (&mut self.reader)
                    .take(64 * 1024)
                    .read_until(b'\n', &mut self.buf)
                {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
            }
            let message = format!(
                "line longer than {} MiB: is this a target file?",
                MAX_LINE >> 20
            );
            return Some(Err(self.bad(self.line, message)));
        }
        let mut text = &self.buf[..];
        text = text.strip_suffix(b"\n").unwrap_or(text);
        text = text.strip_suffix(b"\r").unwrap_or(text);
        Some(
            std::str::from_utf8(text)
                .map(str::to_owned)
                .map_err(|_| self.bad(self.line, "not UTF-8 text: is this a target file?")),
        )
    }

    /// The next target, malformed line or skipped log line; `None` at the end of the file.
    pub(crate) fn next_item(&mut self) -> Option<Item> {
        loop {
            let text = match self.next_line()? {
                Ok(text) => text,
                Err(item) => return Some(item),
            };
            let trimmed = text.trim();
            if trimmed.is_empty()
                || (trimmed.starts_with('#') && self.set.format != TargetFormat::Log)
            {
                continue;
            }
            let start = self.line;
            let parsed = match self.set.format {
                TargetFormat::Urls => parse_url(trimmed).map(Item::Target),
                TargetFormat::JsonLines => parse_json(trimmed).map(Item::Target),
                TargetFormat::Log => parse_log(trimmed),
                TargetFormat::Vegeta => self.parse_vegeta(trimmed).map(Item::Target),
            };
            return Some(parsed.unwrap_or_else(|message| self.bad(start, message)));
        }
    }

    /// A vegeta target: this line, then header and `@body` lines up to a blank line.
    fn parse_vegeta(&mut self, first: &str) -> Result<Target, String> {
        let (method, url) = first
            .split_once(char::is_whitespace)
            .ok_or("expected 'METHOD URL'")?;
        let mut target = parse_url(url.trim())?;
        target.method = Some(
            Method::from_bytes(method.as_bytes())
                .map_err(|_| format!("invalid method '{method}'"))?,
        );
        while let Some(line) = self.next_line() {
            let line = line.map_err(|_| "cannot read the next line".to_owned())?;
            let line = line.trim();
            if line.is_empty() {
                break;
            }
            if let Some(file) = line.strip_prefix('@') {
                let dir = self.set.path.parent().unwrap_or(Path::new("."));
                let body = std::fs::read(dir.join(file))
                    .map_err(|e| format!("cannot read body file '{file}': {e}"))?;
                target.body = Bytes::from(body);
                continue;
            }
            let (name, value) = line
                .split_once(':')
                .ok_or_else(|| format!("expected 'Name: value' or '@file', got '{line}'"))?;
            let name = HeaderName::from_bytes(name.trim().as_bytes())
                .map_err(|_| format!("invalid header name '{name}'"))?;
            let value = HeaderValue::from_str(value.trim())
                .map_err(|_| format!("invalid value for header '{name}'"))?;
            target.headers.append(name, value);
        }
        Ok(target)
    }
}

fn empty_target(authority: Option<Authority>, https: Option<bool>, path: PathAndQuery) -> Target {
    Target {
        method: None,
        authority,
        https,
        path,
        headers: HeaderMap::new(),
        body: Bytes::new(),
    }
}

/// A path (`/a?b`) or an absolute `http://` URL.
fn parse_url(text: &str) -> Result<Target, String> {
    // A path typed with non-ASCII characters or spaces goes out encoded, as curl sends it.
    let text = &*crate::url::encode_url(text);
    if text.starts_with('/') {
        let text = &*crate::url::encode_target(text);
        let path = text
            .parse::<PathAndQuery>()
            .map_err(|e| format!("invalid path '{text}': {e}"))?;
        return Ok(empty_target(None, None, path));
    }
    // Credentials in the URL go out as Basic auth, as for the attack's URL: never in the
    // Host header, an error message or the run file.
    let (userinfo, stripped) = match crate::url::take_userinfo(text) {
        Some((userinfo, url)) => (Some(userinfo), url),
        None => (None, text.to_owned()),
    };
    let text = stripped.as_str();
    let uri: Uri = text
        .parse()
        .map_err(|e| format!("invalid URL '{text}': {e}"))?;
    match uri.scheme_str() {
        // The attack's URL decides plain or TLS; a target's scheme only names its host.
        Some("http" | "https") => {}
        _ => {
            return Err(format!(
                "invalid URL '{text}': expected a path like /a or http://host/a"
            ));
        }
    }
    let authority = uri
        .authority()
        .cloned()
        .ok_or_else(|| format!("invalid URL '{text}': no host"))?;
    check_port(&authority).map_err(|why| format!("invalid URL '{text}': {why}"))?;
    let path = uri
        .path_and_query()
        .cloned()
        .unwrap_or_else(|| PathAndQuery::from_static("/"));
    let https = uri.scheme_str() == Some("https");
    let mut target = empty_target(Some(authority), Some(https), path);
    if let Some(userinfo) = userinfo {
        let value = http::HeaderValue::from_str(&crate::url::basic_authorization(&userinfo))
            .map_err(|e| format!("invalid credentials in the URL '{text}': {e}"))?;
        target.headers.insert(http::header::AUTHORIZATION, value);
    }
    Ok(target)
}

/// The port of an authority, when it names one, must be 1-65535: the `http` crate reads
/// `:99999` as no port at all, which would send the load to port 80.
pub fn check_port(authority: &Authority) -> Result<(), String> {
    let rest = &authority.as_str()[authority.host().len()..];
    match rest.strip_prefix(':') {
        None | Some("") => Ok(()),
        Some(port) => match port.parse::<u16>() {
            Ok(p) if p > 0 => Ok(()),
            _ => Err(format!("port {port} is not a port (1 to 65535)")),
        },
    }
}

fn parse_json(text: &str) -> Result<Target, String> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("invalid JSON: {e}"))?;
    let url = value
        .get("url")
        .and_then(|u| u.as_str())
        .ok_or("missing \"url\"")?;
    let mut target = parse_url(url)?;
    if let Some(method) = value.get("method").and_then(|m| m.as_str()) {
        target.method = Some(
            Method::from_bytes(method.as_bytes())
                .map_err(|_| format!("invalid method '{method}'"))?,
        );
    }
    if let Some(headers) = value
        .get("header")
        .or_else(|| value.get("headers"))
        .and_then(|h| h.as_object())
    {
        for (name, values) in headers {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| format!("invalid header name '{name}'"))?;
            let list: Vec<&serde_json::Value> = match values {
                serde_json::Value::Array(a) => a.iter().collect(),
                other => vec![other],
            };
            for v in list {
                let v = v.as_str().ok_or_else(|| {
                    format!("header '{name}' must be a string or a list of strings")
                })?;
                target.headers.append(
                    &name,
                    HeaderValue::from_str(v)
                        .map_err(|_| format!("invalid value for header '{name}'"))?,
                );
            }
        }
    }
    if let Some(body) = value.get("body").and_then(|b| b.as_str()) {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(body)
            .map_err(|_| "\"body\" must be base64")?;
        target.body = Bytes::from(bytes);
    }
    Ok(target)
}

/// `host ident user [date] "GET /path HTTP/1.1" status bytes "referer" "agent"`; varnishncsa
/// writes the absolute URL, `"GET http://host/path HTTP/1.1"`, which keeps the Host.
fn parse_log(line: &str) -> Result<Item, String> {
    let start = line
        .find('"')
        .ok_or("expected a quoted request line (NCSA combined format)")?;
    let rest = &line[start + 1..];
    let end = rest.find('"').ok_or("unterminated request line")?;
    let mut parts = rest[..end].split_whitespace();
    let (Some(method), Some(target)) = (parts.next(), parts.next()) else {
        return Err(format!(
            "expected 'METHOD URL PROTOCOL', got '{}'",
            &rest[..end]
        ));
    };
    let method =
        Method::from_bytes(method.as_bytes()).map_err(|_| format!("invalid method '{method}'"))?;
    if method != Method::GET && method != Method::HEAD {
        return Ok(Item::OtherMethod);
    }
    let mut t = parse_url(target)?;
    t.method = Some(method);
    Ok(Item::Target(t))
}

pub(super) fn display(path: &Path) -> String {
    path.display().to_string()
}
