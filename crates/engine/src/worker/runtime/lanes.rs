//! A lane's task on the tokio driver: it carries out what its lane answers, on a connection
//! of its own (or, riding, on its first lane's HTTP/2 connection), and tells the lane what
//! came of it. Connections to other TLS hosts (targets naming another host: other server
//! names) are the task's own too and outlive a reconnect of its main one.

use std::rc::Rc;
use std::task::{Context, Waker};
use std::time::Instant;

use super::idle::{Spot, Woken};
use super::state::Tokio;
use crate::model::Due;
use crate::protocol::{Conn, Link, Refused};
use crate::worker::lane::{Act, Exchanged, Lane, Phase};

/// A connection's count of requests, shared by its streams' lanes.
type Shared = Rc<std::cell::Cell<u32>>;
use crate::workload::{Drawn, Form};

/// A task's connections: its own, and those to other TLS hosts by server name.
struct Links<L> {
    main: Option<Conn<L>>,
    side: Vec<(Box<str>, Conn<L>)>,
}

/// Sends every request due by `now`, and opens lanes for those that wait; returns the next
/// due time, or `None` once nothing more will be dispatched.
pub(super) fn dispatch_due<L: Link>(driver: &Rc<Tokio<L>>, now: Instant) -> Option<Instant> {
    if driver.over.get() {
        return None;
    }
    let core = &driver.core;
    core.expire_waiting(now);
    let mut hand = |job| driver.idle.hand(job);
    let due = core.model.dispatch(
        (now, core.plan.timeout),
        core.stopping(),
        core.books(),
        &mut hand,
    );
    grow(driver);
    match due {
        Due::At(at) => Some(at),
        Due::Over => {
            driver.over.set(true);
            core.finish_dispatch();
            driver.idle.close_all();
            driver.wake_dispatcher.notify_one();
            None
        }
    }
}

/// Opens lanes while requests wait for one and the cap allows.
pub(super) fn grow<L: Link>(driver: &Rc<Tokio<L>>) {
    let streams = driver.core.plan.protocol.streams();
    for _ in 0..driver.core.model.to_open(streams) {
        driver.spawn(lane(driver.clone()));
    }
}

/// A lane of its own, from its first connect to its end.
pub(super) fn lane<L: Link>(driver: Rc<Tokio<L>>) -> impl Future<Output = ()> {
    run(driver, None)
}

/// A lane riding `conn` (another stream of a multiplexed connection), until it closes,
/// counting its requests in `served`, the connection's.
fn rider<L: Link>(driver: Rc<Tokio<L>>, conn: Conn<L>, served: Shared) -> impl Future<Output = ()> {
    run(driver, Some((conn, served)))
}

/// A lane's task: starts the lane (riding `conn` when given) and carries out what it
/// answers, until it is done.
async fn run<L: Link>(driver: Rc<Tokio<L>>, riding: Option<(Conn<L>, Shared)>) {
    let driver = &driver;
    let (mut lane, conn) = match riding {
        Some((conn, served)) => (Lane::<Shared>::rider(served), Some(conn)),
        None => (Lane::<Shared>::new(), None),
    };
    let mut links = Links {
        main: conn,
        side: Vec::new(),
    };
    let spot = Spot::default();
    let mut act = lane.start(&driver.core, Instant::now());
    loop {
        act = match act {
            Act::Done => {
                // Requests that still wait want another lane, even after the schedule.
                grow(driver);
                break;
            }
            Act::Connect => {
                links.main = None;
                Box::pin(connect(driver, &mut lane, &mut links)).await
            }
            Act::Send(drawn) => send(driver, &mut lane, &mut links, drawn).await,
            Act::Idle => idle(driver, &mut lane, &mut links, &spot).await,
            Act::Sleep | Act::Nothing => {
                if let Act::Sleep = act {
                    links.main = None;
                }
                match lane.deadline(&driver.core) {
                    Some(at) => {
                        tokio::time::sleep_until(at.into()).await;
                        lane.poll(&driver.core, Instant::now())
                    }
                    None => break,
                }
            }
        };
        driver.pass_on_stop();
    }
    driver.task_ended();
}

/// Connects the lane: the request it holds bounds the connect (its deadline passed, it fails
/// as timed out); the dialer's own timeouts bound each step (TCP, TLS, the HTTP/2 preface).
async fn connect<L: Link>(
    driver: &Rc<Tokio<L>>,
    lane: &mut Lane<Shared>,
    links: &mut Links<L>,
) -> Act {
    let core = &driver.core;
    let bound = match *lane.phase() {
        Phase::Connecting { job: Some(job), .. } => Some(job.deadline(core.plan.timeout)),
        _ => None,
    };
    let dial = Conn::<L>::open(&driver.dial, None, core.plan.timeout);
    let connected = match bound {
        Some(deadline) => match tokio::time::timeout_at(deadline.into(), dial).await {
            Ok(connected) => connected,
            Err(_) => return lane.poll(core, Instant::now()),
        },
        None => dial.await,
    };
    let now = Instant::now();
    match connected {
        Err(Refused { failure, transport }) => {
            // The transport was made and the protocol's handshake failed: opened all the same.
            if let Some((tcp, tls)) = transport {
                core.recorder.connected(now, tcp, tls);
            }
            lane.refused(core, now, failure)
        }
        Ok((conn, took, handshake)) => {
            links.main = Some(conn);
            // Connected first: the lane's count starts anew, and its riders share it.
            let act = lane.connected(core, now, (took, handshake));
            let conn = links.main.as_ref().expect("just connected");
            for _ in 1..core.plan.protocol.streams() {
                if let Some(stream) = conn.stream(core.plan.timeout) {
                    driver.spawn(rider(driver.clone(), stream, lane.connection_count()));
                }
            }
            act
        }
    }
}

/// Sends `drawn` and waits for its whole response, on the main connection or, for a target
/// on another TLS host, on the connection to that host; then dispatches what fell due
/// meanwhile.
async fn send<L: Link>(
    driver: &Rc<Tokio<L>>,
    lane: &mut Lane<Shared>,
    links: &mut Links<L>,
    drawn: Drawn,
) -> Act {
    let core = &driver.core;
    let Phase::Exchange { job, .. } = *lane.phase() else {
        return Act::Nothing;
    };
    let deadline = job.deadline(core.plan.timeout);
    let act = match other_tls_host(driver, &drawn) {
        None => {
            let conn = links.main.as_mut().expect("a lane sends on its connection");
            let result = exchange(driver, conn, &drawn, deadline).await;
            // An HTTP/2 stream's failure (a reset, a timeout that cancelled it) leaves the
            // connection and its other streams as they were.
            let survives = conn.is_multiplexed() && conn.is_open();
            let exchanged = counts(driver, conn, survives);
            let reusable = conn.is_open();
            lane.ended(core, Instant::now(), result, exchanged, reusable)
        }
        Some(host) => {
            let side = exchange_as(driver, links, &host, &drawn, deadline);
            let (result, exchanged) = Box::pin(side).await;
            // The task's own connection is untouched.
            let reusable = links.main.as_ref().is_some_and(Conn::is_open);
            lane.ended(core, Instant::now(), result, exchanged, reusable)
        }
    };
    if !driver.over.get() {
        // Whatever fell due meanwhile goes out now, not when the timer is next polled.
        dispatch_due(driver, Instant::now());
    }
    act
}

/// How an exchange ended: a response, a failure, or `None` at its deadline.
type Outcome = Option<Result<crate::response::Response, crate::failure::Failure>>;

/// One exchange on `conn` under `deadline`.
async fn exchange<L: Link>(
    driver: &Tokio<L>,
    conn: &mut Conn<L>,
    drawn: &Drawn,
    deadline: Instant,
) -> Outcome {
    let request = driver.core.workload.request(drawn);
    let wire = match &drawn.form {
        Form::Wire { wire, .. } => Some(wire),
        _ => None,
    };
    conn.exchange(request, wire, deadline).await
}

/// What crossed `conn` in its last exchange (counted whatever the outcome: an endless body
/// that times out still arrived), and bytes the server sent unasked.
fn counts<L: Link>(driver: &Tokio<L>, conn: &mut Conn<L>, survives: bool) -> Exchanged {
    let counts = conn.take_counts();
    if counts.stray > 0 {
        driver.core.recorder.stray(Instant::now());
    }
    Exchanged {
        received: counts.received,
        written: counts.written,
        survives,
        first_byte: counts.first_byte,
        wire: counts.wire,
    }
}

/// Over TLS, a target naming a host other than the URL's: that host, its server name.
fn other_tls_host<L>(driver: &Tokio<L>, drawn: &Drawn) -> Option<Box<str>> {
    let core = &driver.core;
    // Only target files name other hosts (a catalogue's go by their Host header).
    let tls = core.plan.targets.as_ref().and(core.plan.tls.as_ref())?;
    let primary = tls.server_name.as_str();
    let authority = match &drawn.form {
        Form::Target(target) => target.authority.as_ref(),
        Form::Wire { authority, .. } => authority.as_ref(),
        Form::Own => None,
    };
    let host = authority?.host();
    (!host.eq_ignore_ascii_case(primary)).then(|| host.into())
}

/// Sends `drawn` over the task's connection to `host` (its server name), made if needed,
/// under `deadline`; a failure there fails the request and leaves the main connection as it
/// is.
async fn exchange_as<L: Link>(
    driver: &Tokio<L>,
    links: &mut Links<L>,
    host: &str,
    drawn: &Drawn,
    deadline: Instant,
) -> (Outcome, Exchanged) {
    let survives = Exchanged {
        survives: true,
        ..Exchanged::default()
    };
    let found = links.side.iter().position(|(name, _)| **name == *host);
    let reused = found
        .map(|i| links.side.swap_remove(i))
        .and_then(|(name, mut side)| {
            // Notices a close by the server while the connection sat idle.
            side.poll_closed(&mut Context::from_waker(Waker::noop()));
            side.is_open().then_some((name, side))
        });
    let (name, mut side) = match reused {
        Some(side) => side,
        None => match Box::pin(Conn::open(
            &driver.dial,
            Some(host),
            driver.core.plan.timeout,
        ))
        .await
        {
            Ok((conn, took, handshake)) => {
                driver
                    .core
                    .recorder
                    .connected(Instant::now(), took, handshake);
                (host.into(), conn)
            }
            Err(Refused { failure, transport }) => {
                if let Some((tcp, tls)) = transport {
                    driver.core.recorder.connected(Instant::now(), tcp, tls);
                }
                return (Some(Err(failure)), survives);
            }
        },
    };
    let result = exchange(driver, &mut side, drawn, deadline).await;
    let exchanged = counts(driver, &mut side, true);
    if matches!(&result, Some(Ok(r)) if !r.close) && side.is_open() {
        links.side.push((name, side));
    }
    (result, exchanged)
}

/// Waits idle for a request, or for the connection's or the attack's end.
async fn idle<L: Link>(
    driver: &Rc<Tokio<L>>,
    lane: &mut Lane<Shared>,
    links: &mut Links<L>,
    spot: &Spot,
) -> Act {
    let core = &driver.core;
    let conn = links
        .main
        .as_mut()
        .expect("an idle lane has its connection");
    let stopped = driver.stopped.get() || core.model.dispatch_done();
    match driver.idle.wait(spot, conn, stopped).await {
        Woken::Job(job) => lane.handed(core, job, Instant::now(), conn.is_open()),
        Woken::Stop => lane.stop(core),
        Woken::Closed => {
            if conn.take_counts().stray > 0 {
                core.recorder.stray(Instant::now());
            }
            lane.closed_idle(core, Instant::now())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size of the future an `async fn` of one argument returns, without calling it.
    fn future_size<A, F: Future>(_: fn(A) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    fn future_size3<A, B, C, F: Future>(_: fn(A, B, C) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    /// Every connection carries its task's future for its whole life: at 10,000 connections
    /// each kilobyte of it is 10 MB. It was 3.2 KB while the connect, the path to other TLS
    /// hosts and hyper's response futures sat inline; a future that grows past this bound
    /// again wants one of them boxed (docs/ARCHITECTURE.md, "Memory per connection").
    #[test]
    fn a_lane_task_stays_small() {
        fn of<L: Link>(protocol: &str) {
            let own = future_size(lane::<L>);
            let riding = future_size3(rider::<L>);
            for (task, size) in [("lane", own), ("rider", riding)] {
                assert!(size <= 1536, "the {protocol} {task} task is {size} bytes");
            }
        }
        of::<crate::h1::H1Conn>("lean HTTP/1.1");
        of::<crate::h2::H2Conn>("lean HTTP/2");
        of::<crate::protocol::Hyper1>("hyper HTTP/1.1");
        of::<crate::protocol::Hyper2>("hyper HTTP/2");
    }
}
