//! Synthetic response bodies: fixed, streamed in chunks, paced, or failing mid-way.

use std::os::fd::RawFd;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use tokio::time::{Instant, Sleep};

/// Bytes every body is cut from: no allocation per response.
static FILL: [u8; CHUNK] = [b'x'; CHUNK];
const CHUNK: usize = 16 * 1024;

/// A response body of `len` bytes of `x`, or `Hello World`.
#[derive(Debug)]
pub(crate) struct SynthBody {
    /// A body that fits in one frame and has a known length.
    whole: Option<Bytes>,
    remaining: u64,
    sent: u64,
    /// Unknown length on the wire (HTTP/1.1 chunked encoding).
    chunked: bool,
    pace: Option<Pace>,
    /// Reset the connection once this many body bytes are out.
    reset_at: Option<(u64, RawFd)>,
    /// Gives the connection time to flush what was sent before the reset.
    reset_delay: Option<Pin<Box<Sleep>>>,
}

#[derive(Debug)]
struct Pace {
    bytes_per_s: u64,
    start: Instant,
    sleep: Pin<Box<Sleep>>,
}

/// Error that aborts a response on purpose.
#[derive(Debug, thiserror::Error)]
#[error("connection reset on purpose mid-body")]
pub(crate) struct ResetOnPurpose;

impl SynthBody {
    pub(crate) fn hello() -> Self {
        Self::from_static(b"Hello World")
    }

    fn from_static(bytes: &'static [u8]) -> Self {
        Self::from_bytes(Bytes::from_static(bytes))
    }

    pub(crate) fn from_bytes(bytes: Bytes) -> Self {
        SynthBody {
            remaining: bytes.len() as u64,
            whole: Some(bytes),
            sent: 0,
            chunked: false,
            pace: None,
            reset_at: None,
            reset_delay: None,
        }
    }

    pub(crate) fn sized(len: u64) -> Self {
        if len <= CHUNK as u64 {
            return Self::from_static(&FILL[..len as usize]);
        }
        SynthBody {
            whole: None,
            ..Self::from_static(b"")
        }
        .with_remaining(len)
    }

    fn with_remaining(mut self, len: u64) -> Self {
        self.remaining = len;
        self
    }

    pub(crate) fn chunked(mut self) -> Self {
        self.chunked = true;
        self.whole = None;
        self
    }

    pub(crate) fn paced(mut self, bytes_per_s: u64) -> Self {
        let start = Instant::now();
        let bytes_per_s = bytes_per_s.max(1);
        self.whole = None;
        self.pace = Some(Pace {
            bytes_per_s,
            start,
            sleep: Box::pin(tokio::time::sleep_until(start)),
        });
        self
    }

    /// Sends half the body (at least one byte where there is one), then resets.
    pub(crate) fn reset_midway(mut self, fd: RawFd) -> Self {
        self.whole = None;
        self.reset_at = Some((self.remaining / 2, fd));
        self
    }

    fn next_len(&mut self, cx: &mut Context<'_>) -> Poll<usize> {
        let mut len = self.remaining.min(CHUNK as u64);
        if let Some((at, _)) = self.reset_at {
            len = len.min(at.saturating_sub(self.sent).max(1));
        }
        if let Some(pace) = &mut self.pace {
            let elapsed = pace.start.elapsed().as_secs_f64();
            let allowed = (elapsed * pace.bytes_per_s as f64) as u64;
            let allowed = allowed.saturating_sub(self.sent);
            if allowed == 0 {
                let next = (self.sent + 1) as f64 / pace.bytes_per_s as f64;
                pace.sleep
                    .as_mut()
                    .reset(pace.start + Duration::from_secs_f64(next));
                ready!(pace.sleep.as_mut().poll(cx));
                return self.next_len(cx);
            }
            // Several frames a second, so the pacing is visible to the client.
            let per_frame = (pace.bytes_per_s / 20).max(1);
            len = len.min(allowed).min(per_frame);
        }
        Poll::Ready(len as usize)
    }
}

impl Body for SynthBody {
    type Data = Bytes;
    type Error = ResetOnPurpose;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if let Some((at, fd)) = self.reset_at
            && self.sent >= at
            && self.sent > 0
        {
            let delay = self
                .reset_delay
                .get_or_insert_with(|| Box::pin(tokio::time::sleep(Duration::from_millis(20))));
            ready!(delay.as_mut().poll(cx));
            crate::reset::reset_on_close(fd);
            return Poll::Ready(Some(Err(ResetOnPurpose)));
        }
        if let Some(whole) = self.whole.take() {
            self.remaining = 0;
            return Poll::Ready(Some(Ok(Frame::data(whole))));
        }
        if self.remaining == 0 {
            return Poll::Ready(None);
        }
        let len = ready!(self.next_len(cx));
        self.remaining -= len as u64;
        self.sent += len as u64;
        Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(&FILL[..len])))))
    }

    fn is_end_stream(&self) -> bool {
        self.remaining == 0 && self.reset_at.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        if self.chunked {
            SizeHint::default()
        } else {
            SizeHint::with_exact(self.remaining)
        }
    }
}
