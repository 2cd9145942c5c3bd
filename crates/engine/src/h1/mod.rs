//! vload's lean HTTP/1.1 client connection, the default for HTTP/1.1 (hyper's stays as
//! `--http1-client hyper`).
//!
//! A load generator sends the same few requests millions of times and only needs each
//! response's status, cache headers and body length. So the request is written from bytes
//! prepared once, the response head is parsed in place by `httparse` (hyper's own parser)
//! without building a `HeaderMap`, and the body is counted and dropped without a channel
//! or a task: one `write` and usually one `read` per request, no allocation. Framing follows
//! RFC 9112: no body for HEAD, 1xx, 204 and 304; chunked when the last transfer coding is
//! chunked; else Content-Length; else until the server closes.

mod buffer;
mod conn;
mod decode;
mod head;

pub(crate) use buffer::{BUFFER, grow_if_filled, make_room};
pub(crate) use conn::H1Conn;
pub(crate) use decode::{Decoder, Step};
pub(crate) use head::{forget_memo, parse_head};
