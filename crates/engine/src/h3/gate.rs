//! The first HTTP/3 of a connection resumed with early data, held back until the server
//! says it took that data.
//!
//! When a server refuses early data, QUIC keeps the connection (the handshake completes in
//! one round trip) but forgets every stream opened before it: HTTP/3 must start again over
//! it (RFC 9114, 3.3; ngtcp2's clients make a new nghttp3 connection). The first h3
//! instance must then leave the connection alone: h3 answers the lost streams' errors by
//! closing the QUIC connection, and its driver would take the server's control stream from
//! the second instance. So, until the server's word: its closes are muted and it accepts no
//! stream from the server (quinn holds them); once the early data is taken, it goes on as
//! any; once refused, it stays shut and its driver is ended.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use h3::quic::{self, ConnectionErrorIncoming, StreamErrorIncoming};

/// What the server said of the early data, as the first h3 instance needs to know it.
#[derive(Default)]
pub(super) struct Gate {
    /// `None` until the server's word; then whether it took the early data.
    taken: Cell<Option<bool>>,
    /// The driver waiting to accept the server's streams.
    waiting: RefCell<Option<Waker>>,
}

impl Gate {
    /// A gate already open: the handshake completed before the first request.
    pub(super) fn open() -> Rc<Gate> {
        let gate = Gate::default();
        gate.taken.set(Some(true));
        Rc::new(gate)
    }

    /// The server's word: `taken` opens the gate, a refusal shuts it for good.
    pub(super) fn said(&self, taken: bool) {
        self.taken.set(Some(taken));
        if let Some(waker) = self.waiting.take() {
            waker.wake();
        }
    }

    fn is_open(&self) -> bool {
        self.taken.get() == Some(true)
    }

    /// Ready when the h3 instance may go on; pending (waker kept while the word is awaited,
    /// none once refused, as its driver is ended then) otherwise.
    fn poll_open(&self, cx: &mut Context<'_>) -> Poll<()> {
        match self.taken.get() {
            Some(true) => Poll::Ready(()),
            Some(false) => Poll::Pending,
            None => {
                *self.waiting.borrow_mut() = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

/// h3's view of a QUIC connection (`C`) or its stream opener, through a [`Gate`].
pub(super) struct Gated<C> {
    pub(super) inner: C,
    pub(super) gate: Rc<Gate>,
}

impl quic::Connection<Bytes> for Gated<h3_quinn::Connection> {
    type RecvStream = h3_quinn::RecvStream;
    type OpenStreams = Gated<h3_quinn::OpenStreams>;

    fn poll_accept_recv(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Self::RecvStream, ConnectionErrorIncoming>> {
        std::task::ready!(self.gate.poll_open(cx));
        quic::Connection::<Bytes>::poll_accept_recv(&mut self.inner, cx)
    }

    fn poll_accept_bidi(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Self::BidiStream, ConnectionErrorIncoming>> {
        std::task::ready!(self.gate.poll_open(cx));
        quic::Connection::<Bytes>::poll_accept_bidi(&mut self.inner, cx)
    }

    fn opener(&self) -> Self::OpenStreams {
        Gated {
            inner: quic::Connection::<Bytes>::opener(&self.inner),
            gate: self.gate.clone(),
        }
    }
}

impl<O: quic::OpenStreams<Bytes>> quic::OpenStreams<Bytes> for Gated<O> {
    type BidiStream = O::BidiStream;
    type SendStream = O::SendStream;

    fn poll_open_bidi(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Self::BidiStream, StreamErrorIncoming>> {
        self.inner.poll_open_bidi(cx)
    }

    fn poll_open_send(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Self::SendStream, StreamErrorIncoming>> {
        self.inner.poll_open_send(cx)
    }

    fn close(&mut self, code: h3::error::Code, reason: &[u8]) {
        if self.gate.is_open() {
            self.inner.close(code, reason);
        }
    }
}

impl Clone for Gated<h3_quinn::OpenStreams> {
    fn clone(&self) -> Self {
        Gated {
            inner: self.inner.clone(),
            gate: self.gate.clone(),
        }
    }
}
