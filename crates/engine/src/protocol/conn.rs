//! A connection of any protocol: a [`Link`] under the connection's one request timer, used
//! for one exchange at a time ([`Conn::exchange`]) and noticed when the server closes it while
//! idle.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use super::dial::Dial;
use super::link::{Counts, Link, Opened, Refused};
use crate::failure::Failure;
use crate::response::Response;
use crate::workload::{Request, Wire};

/// One connection (or one stream of a multiplexed one).
pub(crate) struct Conn<L> {
    link: L,
    /// The request timeout, moved only when an earlier deadline passes (one timer update per
    /// timeout period, not one per request).
    timer: Pin<Box<tokio::time::Sleep>>,
}

impl<L: Link> Conn<L> {
    /// Opens a connection as `dial` says (`server_name` as TLS's server name when given),
    /// its timer first set `timeout` from now.
    pub(crate) async fn open(
        dial: &Dial,
        server_name: Option<&str>,
        timeout: Duration,
    ) -> Result<(Conn<L>, Duration, Option<Duration>), Refused> {
        let Opened {
            link,
            connect,
            handshake,
        } = L::open(dial, server_name).await?;
        Ok((Conn::new(link, timeout), connect, handshake))
    }

    fn new(link: L, timeout: Duration) -> Conn<L> {
        Conn {
            link,
            timer: Box::pin(tokio::time::sleep(timeout)),
        }
    }

    /// False once the server closed the connection or an exchange broke it.
    pub(crate) fn is_open(&self) -> bool {
        self.link.is_open()
    }

    /// True when its requests fail one by one without the connection (HTTP/2's streams).
    pub(crate) fn is_multiplexed(&self) -> bool {
        L::MULTIPLEXED
    }

    /// Another stream on the same connection; `None` for a protocol of one request at a time.
    pub(crate) fn stream(&self, timeout: Duration) -> Option<Conn<L>> {
        self.link.stream().map(|link| Conn::new(link, timeout))
    }

    /// While idle: true once the connection has closed (the server's idle timeout).
    pub(crate) fn poll_closed(&mut self, cx: &mut Context<'_>) -> bool {
        self.link.poll_idle(cx);
        !self.link.is_open()
    }

    /// What crossed it since the last call, whether the exchanges completed or not.
    pub(crate) fn take_counts(&mut self) -> Counts {
        self.link.take_counts()
    }

    /// Sends one request and reads the whole response; `None` when `deadline` passed first.
    /// The lean HTTP/1.1 client writes `wire` when it is given (a request prepared as
    /// bytes), the others build theirs from `request`.
    pub(crate) async fn exchange(
        &mut self,
        request: Request<'_>,
        wire: Option<&Wire>,
        deadline: Instant,
    ) -> Option<Result<Response, Failure>> {
        let Conn { link, timer } = self;
        until(link.exchange(request, wire), timer, deadline).await
    }
}

/// Polls `future` until it finishes or `deadline` passes (`None`).
///
/// A future of its own rather than an `async fn`: an `async fn` keeps its argument and the
/// pinned copy both in the connection task's state, and every connection pays for that.
fn until<F: Future>(
    future: F,
    timer: &mut Pin<Box<tokio::time::Sleep>>,
    deadline: Instant,
) -> Until<'_, F> {
    Until {
        future,
        timer,
        deadline,
    }
}

pin_project_lite::pin_project! {
    /// [`until`]'s future.
    struct Until<'t, F> {
        #[pin]
        future: F,
        timer: &'t mut Pin<Box<tokio::time::Sleep>>,
        deadline: Instant,
    }
}

impl<F: Future> Future for Until<'_, F> {
    type Output = Option<F::Output>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Poll::Ready(output) = this.future.poll(cx) {
            return Poll::Ready(Some(output));
        }
        if timed_out(this.timer.as_mut(), *this.deadline, cx) {
            return Poll::Ready(None);
        }
        Poll::Pending
    }
}

/// True once `deadline` has passed. The connection's one timer is re-armed when it would
/// fire after `deadline` (a request that waited in the queue before this connection was
/// made is due to time out before the timer the connection started with), and when it
/// fired for an earlier deadline; a request that follows the last in time, the usual case,
/// costs no re-arming until then.
fn timed_out(
    mut timer: Pin<&mut tokio::time::Sleep>,
    deadline: Instant,
    cx: &mut Context<'_>,
) -> bool {
    let at = tokio::time::Instant::from_std(deadline);
    if timer.deadline() > at {
        timer.as_mut().reset(at);
    }
    if timer.as_mut().poll(cx).is_pending() {
        return false;
    }
    if Instant::now() >= deadline {
        return true;
    }
    timer.as_mut().reset(at);
    timer.poll(cx).is_ready()
}
