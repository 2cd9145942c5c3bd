//! vload's lean HTTP/2 client, the default for HTTP/2 (hyper's stays as
//! `--http2-client hyper`, to cross-check).
//!
//! One connection is one task, the driver, which owns the socket: it writes whatever the
//! streams queued since it last ran in one `write`, reads every frame that arrived in one
//! `read`, and hands each stream its response. A stream is a handle onto a slot of the
//! connection's shared state (single-threaded: `Rc<RefCell>`, no channels, no atomics but
//! the wake-ups): sending a request is encoding its header block into the connection's
//! output and waking the driver once for all the streams that did so in the same turn.
//! Responses are decoded for `:status` and the cache headers only (see [`hpack`]);
//! bodies are counted and dropped. Flow control: vload's windows are 2^30 - 1, as h2load's,
//! topped up when half is used; request bodies respect the server's windows.

mod conn;
mod frames;
mod head;
pub(crate) mod hpack;
mod receive;
mod state;

pub(crate) use conn::H2Conn;
pub(crate) use head::HeadFields;
#[cfg(test)]
pub(crate) use state::fuzzing;
pub(crate) use state::is_connection_specific;
