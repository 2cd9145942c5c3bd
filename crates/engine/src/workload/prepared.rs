//! The request each connection sends, from one rule for every protocol.
//!
//! A request is the attack's own (method, URL, headers, body) or a target's from a file laid
//! over it. One rule decides what goes out, whichever client speaks:
//!
//! - **Host**: the target's own `Host` header, else the target's host (an absolute URL in the
//!   file), else the attack's `Host` (from the URL, or `-H Host:`). HTTP/1.1 sends it as the
//!   `Host` header, HTTP/2 as `:authority`.
//! - **Headers**: the attack's, except those the target gives; then the target's, in order
//!   (a target giving `X-A` twice sends both).
//! - **Body**: the target's, else the attack's.
//!
//! The attack's own request is prepared once in each client's form (the lean client's bytes,
//! hyper's URI and header map), so a run without targets builds nothing per request; a
//! catalogue object's request is written into place around its path and host ([`Frame`]).

use bytes::{BufMut, Bytes, BytesMut};
use http::header::{CONTENT_LENGTH, HOST};
use http::{HeaderMap, HeaderName, HeaderValue, Method, Uri};
use http_body_util::Full;

use crate::plan::{AttackPlan, Protocol};
use crate::targets::Target;

/// The attack's request, prepared once for the protocol the plan speaks.
#[derive(Debug)]
pub(crate) struct Prepared {
    method: Method,
    /// Origin-form path and query of the URL.
    path: http::uri::PathAndQuery,
    /// The attack's headers except Host.
    headers: HeaderMap,
    /// The attack's Host: the URL's authority unless given by hand.
    host: HeaderValue,
    body: Bytes,
    /// `http` or `https`.
    scheme: &'static str,
    /// The request without a target, in its client's form.
    own: Own,
}

/// The attack's own request, built once.
#[derive(Debug)]
enum Own {
    /// The lean HTTP/1.1 client: the whole request as bytes.
    Lean(Bytes),
    /// hyper: the URI (origin-form for HTTP/1.1, absolute for HTTP/2) and the header map.
    Hyper { uri: Uri, headers: HeaderMap },
    /// The lean HTTP/2 client: nothing beyond the fields.
    Fields,
}

/// One request: the attack's, or a target's laid over it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Request<'a> {
    prepared: &'a Prepared,
    target: Option<&'a Target>,
}

impl Prepared {
    pub(crate) fn new(plan: &AttackPlan) -> Self {
        let template = &plan.request;
        let mut headers = template.headers.clone();
        let host = headers
            .remove(HOST)
            .or_else(|| {
                let authority = template.url.authority()?;
                HeaderValue::from_str(authority.as_str()).ok()
            })
            .unwrap_or_else(|| HeaderValue::from_static("localhost"));
        let mut prepared = Prepared {
            method: template.method.clone(),
            path: template
                .url
                .path_and_query()
                .cloned()
                .unwrap_or_else(|| http::uri::PathAndQuery::from_static("/")),
            headers,
            host,
            body: template.body.clone(),
            scheme: if plan.tls.is_some() { "https" } else { "http" },
            own: Own::Fields,
        };
        let own = prepared.request(None);
        prepared.own = match plan.protocol {
            Protocol::Http1 {
                client: crate::plan::Client::Lean,
            } => Own::Lean(own.lean_bytes()),
            // The lean HTTP/2 client encodes the fields as they are (HPACK indexes them).
            Protocol::Http2 {
                client: crate::plan::Client::Lean,
                ..
            } => Own::Fields,
            protocol => Own::Hyper {
                uri: own.uri(protocol.names_authority()),
                headers: own.header_map(protocol.names_authority()),
            },
        };
        prepared
    }

    /// The attack's own request (`target` is `None`), or a target's over it.
    pub(crate) fn request<'a>(&'a self, target: Option<&'a Target>) -> Request<'a> {
        Request {
            prepared: self,
            target,
        }
    }

    /// The attack's request cut where a path and a Host go, for requests that differ only
    /// in those (a catalogue's objects).
    pub(crate) fn frame(&self) -> Frame {
        let own = self.request(None);
        let mut rest = Vec::new();
        rest.extend_from_slice(b"\r\n");
        let body = own.body();
        let mut has_length = false;
        for (name, value) in own.headers() {
            has_length |= name == CONTENT_LENGTH;
            header_line(&mut rest, name.as_str().as_bytes(), value.as_bytes());
        }
        if (!body.is_empty() || own.expects_body()) && !has_length {
            let mut length = itoa::Buffer::new();
            header_line(
                &mut rest,
                b"content-length",
                length.format(body.len()).as_bytes(),
            );
        }
        rest.extend_from_slice(b"\r\n");
        rest.extend_from_slice(&body);
        let mut method = own.method().as_str().as_bytes().to_vec();
        method.push(b' ');
        Frame {
            method,
            host: own.host().as_bytes().to_vec(),
            rest,
            head: own.is_head(),
            body: body.len() as u64,
        }
    }
}

/// The attack's lean HTTP/1.1 request around the two places a catalogue object changes:
/// `METHOD PATH HTTP/1.1`, `host: HOST`, then the attack's headers, length and body, the
/// same bytes [`Request::lean_bytes`] gives for a target of that path and Host.
#[derive(Debug, Clone)]
pub(crate) struct Frame {
    /// The method and a space.
    method: Vec<u8>,
    /// The attack's Host, for objects without a host of their own.
    host: Vec<u8>,
    /// After the Host's value: its line's end, the attack's headers, the length, the blank
    /// line and the body.
    rest: Vec<u8>,
    /// The method is HEAD.
    pub(crate) head: bool,
    /// The body's length.
    pub(crate) body: u64,
}

impl Frame {
    /// Writes one request into `out`: `path` writes the path and query, `host` the Host's
    /// value (false: it wrote nothing, the attack's Host goes), `lines` more header lines
    /// after it, each after a line end.
    pub(crate) fn write(
        &self,
        out: &mut BytesMut,
        path: impl FnOnce(&mut BytesMut),
        host: impl FnOnce(&mut BytesMut) -> bool,
        lines: impl FnOnce(&mut BytesMut),
    ) {
        out.reserve(self.method.len() + 64 + self.host.len() + self.rest.len());
        out.put_slice(&self.method);
        path(out);
        out.put_slice(b" HTTP/1.1\r\nhost: ");
        if !host(out) {
            out.put_slice(&self.host);
        }
        lines(out);
        out.put_slice(&self.rest);
    }
}

impl<'a> Request<'a> {
    fn over(&self) -> Option<&'a HeaderMap> {
        self.target.map(|t| &t.headers)
    }

    pub(crate) fn method(&self) -> &'a Method {
        self.target
            .and_then(|t| t.method.as_ref())
            .unwrap_or(&self.prepared.method)
    }

    pub(crate) fn path(&self) -> &'a str {
        self.target
            .map_or(self.prepared.path.as_str(), |t| t.path.as_str())
    }

    /// `http` or `https`.
    pub(crate) fn scheme(&self) -> &'static str {
        self.prepared.scheme
    }

    /// True for the methods whose request carries a body, even an empty one (it then says
    /// `Content-Length: 0`).
    pub(crate) fn expects_body(&self) -> bool {
        matches!(*self.method(), Method::POST | Method::PUT | Method::PATCH)
    }

    /// True for HEAD, whose response has no body.
    pub(crate) fn is_head(&self) -> bool {
        *self.method() == Method::HEAD
    }

    pub(crate) fn body(&self) -> Bytes {
        match self.target {
            Some(t) if !t.body.is_empty() => t.body.clone(),
            _ => self.prepared.body.clone(),
        }
    }

    /// The Host (HTTP/1.1) or `:authority` (HTTP/2): the target's Host header, else the
    /// target's host, else the attack's.
    pub(crate) fn host(&self) -> HostValue<'a> {
        if let Some(value) = self.over().and_then(|h| h.get(HOST)) {
            return HostValue::Header(value);
        }
        match self.target.and_then(|t| t.authority.as_ref()) {
            Some(authority) => HostValue::Text(authority.as_str()),
            None => HostValue::Header(&self.prepared.host),
        }
    }

    /// Every header but Host: the attack's, except those the target gives; then the
    /// target's own.
    pub(crate) fn headers(&self) -> impl Iterator<Item = (&'a HeaderName, &'a HeaderValue)> + 'a {
        let over = self.over();
        let base = self
            .prepared
            .headers
            .iter()
            .filter(move |(name, _)| !over.is_some_and(|o| o.contains_key(*name)));
        let own = over
            .into_iter()
            .flat_map(HeaderMap::iter)
            .filter(|(name, _)| *name != HOST);
        base.chain(own)
    }

    /// The bytes the lean HTTP/1.1 client writes.
    pub(crate) fn lean_bytes(&self) -> Bytes {
        match (&self.prepared.own, self.target) {
            (Own::Lean(bytes), None) => bytes.clone(),
            _ => {
                let mut out = BytesMut::with_capacity(256 + self.path().len());
                self.serialize(&mut out);
                out.freeze()
            }
        }
    }

    /// Writes the bytes the lean HTTP/1.1 client sends into `out`, after what is there.
    pub(crate) fn write_lean(&self, out: &mut BytesMut) {
        match (&self.prepared.own, self.target) {
            (Own::Lean(bytes), None) => out.extend_from_slice(bytes),
            _ => self.serialize(out),
        }
    }

    /// The request hyper sends, over HTTP/1.1 or HTTP/2.
    pub(crate) fn hyper(&self, http2: bool) -> http::Request<Full<Bytes>> {
        self.with_body(http2, Full::new(self.body()))
    }

    fn with_body<B>(&self, http2: bool, body: B) -> http::Request<B> {
        let (uri, headers) = match (&self.prepared.own, self.target) {
            (Own::Hyper { uri, headers }, None) => (uri.clone(), headers.clone()),
            _ => (self.uri(http2), self.header_map(http2)),
        };
        let mut request = http::Request::new(body);
        *request.method_mut() = self.method().clone();
        *request.uri_mut() = uri;
        *request.headers_mut() = headers;
        request
    }

    /// Origin-form for HTTP/1.1; absolute for HTTP/2, whose `:authority` replaces Host.
    fn uri(&self, http2: bool) -> Uri {
        let path = self.path();
        let uri = if http2 {
            let authority = String::from_utf8_lossy(self.host().as_bytes()).into_owned();
            format!("{}://{authority}{path}", self.prepared.scheme).parse()
        } else {
            path.parse()
        };
        uri.unwrap_or_else(|_| Uri::from(self.prepared.path.clone()))
    }

    fn header_map(&self, http2: bool) -> HeaderMap {
        let mut map = HeaderMap::with_capacity(self.prepared.headers.len() + 1);
        if !http2 && let Some(host) = self.host().to_value() {
            map.insert(HOST, host);
        }
        for (name, value) in self.headers() {
            map.append(name, value.clone());
        }
        map
    }

    /// Writes the whole HTTP/1.1 request into `out`: request line, Host, headers,
    /// Content-Length when there is a body or the method expects one, body.
    fn serialize(&self, out: &mut impl BufMut) {
        let (method, path, body) = (self.method(), self.path(), self.body());
        out.put_slice(method.as_str().as_bytes());
        out.put_u8(b' ');
        out.put_slice(path.as_bytes());
        out.put_slice(b" HTTP/1.1\r\n");
        header_line(out, b"host", self.host().as_bytes());
        let mut has_length = false;
        for (name, value) in self.headers() {
            has_length |= name == CONTENT_LENGTH;
            header_line(out, name.as_str().as_bytes(), value.as_bytes());
        }
        if (!body.is_empty() || self.expects_body()) && !has_length {
            let mut length = itoa::Buffer::new();
            header_line(out, b"content-length", length.format(body.len()).as_bytes());
        }
        out.put_slice(b"\r\n");
        out.put_slice(&body);
    }
}

fn header_line(out: &mut impl BufMut, name: &[u8], value: &[u8]) {
    out.put_slice(name);
    out.put_slice(b": ");
    out.put_slice(value);
    out.put_slice(b"\r\n");
}

/// A Host as the target or the attack gives it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum HostValue<'a> {
    Header(&'a HeaderValue),
    Text(&'a str),
}

impl<'a> HostValue<'a> {
    pub(crate) fn as_bytes(&self) -> &'a [u8] {
        match *self {
            HostValue::Header(v) => v.as_bytes(),
            HostValue::Text(t) => t.as_bytes(),
        }
    }

    fn to_value(self) -> Option<HeaderValue> {
        match self {
            HostValue::Header(v) => Some(v.clone()),
            HostValue::Text(t) => HeaderValue::from_str(t).ok(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::str::FromStr as _;

    use super::*;
    use crate::plan::{Load, RequestTemplate, Stop};

    fn plan(
        protocol: Protocol,
        host: Option<&str>,
        method: Method,
        body: &'static [u8],
    ) -> AttackPlan {
        let mut request = RequestTemplate::get("http://a.example:8080/p?q=1".parse().unwrap());
        request.method = method;
        request.body = Bytes::from_static(body);
        request
            .headers
            .insert("x-test", HeaderValue::from_static("1"));
        if let Some(host) = host {
            request
                .headers
                .insert(HOST, HeaderValue::from_str(host).unwrap());
        }
        let mut plan = AttackPlan::new(
            request,
            "127.0.0.1:1".parse().unwrap(),
            Load::Closed { connections: 1 },
            Stop {
                duration: None,
                requests: Some(1),
            },
        );
        plan.protocol = protocol;
        plan
    }

    fn target(authority: Option<&str>, headers: &[(&str, &str)]) -> Target {
        let mut map = HeaderMap::new();
        for (n, v) in headers {
            map.append(
                HeaderName::from_str(n).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        Target {
            method: None,
            authority: authority.map(|a| a.parse().unwrap()),
            https: authority.map(|_| false),
            path: "/t".parse().unwrap(),
            headers: map,
            body: Bytes::new(),
        }
    }

    fn text(bytes: Bytes) -> String {
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    #[test]
    fn requests_serialise_with_host_and_length() {
        let p = Prepared::new(&plan(Protocol::default(), None, Method::POST, b"hi"));
        assert_eq!(
            text(p.request(None).lean_bytes()),
            "POST /p?q=1 HTTP/1.1\r\nhost: a.example:8080\r\nx-test: 1\r\ncontent-length: 2\r\n\r\nhi"
        );
    }

    #[test]
    fn a_targets_host_and_headers_replace_the_attacks() {
        let p = Prepared::new(&plan(Protocol::default(), Some("base"), Method::GET, b""));
        let t = target(
            Some("t.example"),
            &[("x-test", "target"), ("x-b", "1"), ("x-b", "2")],
        );
        assert_eq!(
            text(p.request(Some(&t)).lean_bytes()),
            "GET /t HTTP/1.1\r\nhost: t.example\r\nx-test: target\r\nx-b: 1\r\nx-b: 2\r\n\r\n",
            "every value of a target's header goes out"
        );
        let t = target(Some("t.example"), &[("host", "explicit")]);
        let lines = text(p.request(Some(&t)).lean_bytes());
        assert!(
            lines.contains("host: explicit\r\n"),
            "the target's own Host wins: {lines}"
        );
        assert_eq!(lines.matches("host:").count(), 1, "{lines}");
        assert!(
            text(p.request(None).lean_bytes()).contains("host: base\r\n"),
            "the attack's Host without a target host"
        );
    }

    #[test]
    fn hyper_forms_follow_the_same_rule() {
        let t = target(Some("t.example"), &[("x-b", "1"), ("x-b", "2")]);
        let h1 = Prepared::new(&plan(
            Protocol::Http1 {
                client: crate::plan::Client::Hyper,
            },
            None,
            Method::GET,
            b"",
        ));
        let r = h1.request(Some(&t)).hyper(false);
        assert_eq!(r.uri(), "/t");
        assert_eq!(r.headers()[HOST], "t.example");
        assert_eq!(r.headers().get_all("x-b").iter().count(), 2);
        let own = h1.request(None).hyper(false);
        assert_eq!(own.uri(), "/p?q=1");
        assert_eq!(own.headers()[HOST], "a.example:8080");
        let h2 = Prepared::new(&plan(
            Protocol::Http2 {
                streams: 4,
                client: crate::plan::Client::Hyper,
            },
            Some("named"),
            Method::GET,
            b"",
        ));
        let r = h2.request(Some(&t)).hyper(true);
        assert_eq!(r.uri(), "http://t.example/t");
        assert!(r.headers().get(HOST).is_none(), ":authority replaces Host");
        let own = h2.request(None).hyper(true);
        assert_eq!(own.uri(), "http://named/p?q=1");
        assert_eq!(own.headers()["x-test"], "1");
    }
}
