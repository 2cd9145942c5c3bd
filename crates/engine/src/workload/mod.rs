//! What each request carries: the attack's own request, or one drawn from target files or a
//! catalogue, in the form its client sends, with its groups in the breakdowns.
//!
//! A worker's [`Workload`] draws the next request ([`Workload::draw`]) when a connection is
//! about to send one. The lean HTTP/1.1 client takes bytes ([`Wire`]): a held list's
//! requests were prepared once before the attack ([`Held`]), a catalogue object's request is
//! written into place around its path and host ([`Frame`](prepared::Frame)), and only a list too long to hold
//! is parsed and written as it is read. The other clients (HTTP/2, hyper's) build their
//! requests from the drawn target laid over the attack's ([`Workload::request`]).
//! Nothing here does I/O but reading a long list's file, or knows which driver sends.

mod catalogue;
mod drawn;
mod files;
mod held;
mod prepared;

use std::cell::RefCell;
use std::sync::Arc;

use bytes::BytesMut;

use crate::breakdown::{Dimensions, Tags};
use crate::plan::AttackPlan;
use crate::targets::Target;
use catalogue::CatalogueDraws;
pub(crate) use drawn::{Drawn, Form, Wire};
use files::Picked;
pub(crate) use files::{FileStream, pass_share};
pub(crate) use held::Held;
pub(crate) use prepared::{Prepared, Request};

/// How much a worker's request arena grows by: requests written for it (catalogue objects,
/// targets read from a long list) are cut from it, one allocation every few hundred, and a
/// block is reused once every request cut from it has been sent.
const ARENA: usize = 16 * 1024;

/// Where a worker's requests come from.
#[derive(Debug)]
pub(crate) enum Source {
    /// The attack's own request, every time.
    Own,
    /// Target files: the worker's walk, over the lists held in memory if they are.
    Files(FileStream, Option<Arc<Held>>),
    /// A catalogue's objects, as this worker draws them.
    Catalogue(Box<vload_cache::Sampler>),
}

/// One worker's requests (see the module's docs).
pub(crate) struct Workload {
    prepared: Prepared,
    /// The lean HTTP/1.1 client sends: requests are drawn as bytes.
    wire: bool,
    dims: Arc<Dimensions>,
    /// What drawing changes, borrowed only while a request is drawn.
    draws: RefCell<Draws>,
}

struct Draws {
    source: Source,
    /// A catalogue's request frame.
    catalogue: Option<CatalogueDraws>,
    arena: BytesMut,
}

impl Workload {
    /// The requests of `plan` from `source`, grouped by `dims`.
    pub(crate) fn new(plan: &AttackPlan, source: Source, dims: Arc<Dimensions>) -> Workload {
        let prepared = Prepared::new(plan);
        let wire = plan.protocol.sends_prepared_bytes();
        let catalogue = matches!(source, Source::Catalogue(_))
            .then(|| CatalogueDraws::new(wire.then(|| prepared.frame()), plan.watched_objects));
        let writes = catalogue.is_some() || matches!(source, Source::Files(_, None));
        Workload {
            prepared,
            wire,
            dims,
            draws: RefCell::new(Draws {
                source,
                catalogue,
                // Its first allocation sets the size of every later one (BytesMut keeps it).
                arena: BytesMut::with_capacity(if writes { ARENA } else { 0 }),
            }),
        }
    }

    /// The next request; `None` when this worker has no share of the target files.
    pub(crate) fn draw(&self) -> Option<Drawn> {
        let mut draws = self.draws.borrow_mut();
        let Draws {
            source,
            catalogue,
            arena,
        } = &mut *draws;
        match source {
            Source::Own => Some(Drawn {
                tags: Tags::UNDRAWN,
                form: Form::Own,
                watched: false,
                object: None,
            }),
            Source::Catalogue(sampler) => {
                let draws = catalogue.as_ref().expect("a catalogue has its draws");
                Some(draws.draw(sampler, &self.dims, arena))
            }
            Source::Files(stream, held) => {
                let (picked, from) = stream.next()?;
                Some(match (picked, held) {
                    (Picked::Held { set, index }, Some(held)) => {
                        held.drawn(set, index, from.pass, &self.dims)
                    }
                    (Picked::Read(target), _) => {
                        let tags = self.dims.tags(&target, from);
                        Drawn {
                            tags,
                            form: self.form(*target, arena),
                            watched: false,
                            object: None,
                        }
                    }
                    (Picked::Held { .. }, None) => unreachable!("a held pick has its lists"),
                })
            }
        }
    }

    /// A target read from its file, as its client takes it: written into `arena` for the
    /// lean HTTP/1.1 client.
    fn form(&self, target: Target, arena: &mut BytesMut) -> Form {
        if !self.wire {
            return Form::Target(Box::new(target));
        }
        let request = self.prepared.request(Some(&target));
        request.write_lean(arena);
        let wire = Wire {
            bytes: arena.split().freeze(),
            head: request.is_head(),
            body: request.body().len() as u64,
        };
        Form::Wire {
            wire,
            authority: target.authority,
        }
    }

    /// The request a drawn one sends, for the clients that build it from fields (HTTP/2,
    /// hyper's): the attack's own, or the drawn target over it.
    pub(crate) fn request<'a>(&'a self, drawn: &'a Drawn) -> Request<'a> {
        match &drawn.form {
            Form::Target(target) => self.prepared.request(Some(target)),
            Form::Own | Form::Wire { .. } => self.prepared.request(None),
        }
    }

    /// The attack's own request as the lean HTTP/1.1 client writes it.
    pub(crate) fn own_wire(&self) -> Wire {
        let own = self.prepared.request(None);
        Wire {
            bytes: own.lean_bytes(),
            head: own.is_head(),
            body: own.body().len() as u64,
        }
    }
}

impl std::fmt::Debug for Workload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workload")
            .field("wire", &self.wire)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use http::{HeaderValue, Method};

    use super::*;
    use crate::plan::{Client, Load, Protocol, RequestTemplate, Stop};

    fn plan(protocol: Protocol, method: Method, body: &'static [u8]) -> AttackPlan {
        let mut request = RequestTemplate::get("http://a.example:8080/p".parse().unwrap());
        request.method = method;
        request.body = Bytes::from_static(body);
        request
            .headers
            .insert("x-test", HeaderValue::from_static("1"));
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
        plan.catalogue = Some(vload_cache::Catalogue {
            objects: 1000,
            hosts: 3,
            ttl: Some((10, 100)),
            churn_per_s: None,
            ..vload_cache::Catalogue::default()
        });
        plan
    }

    /// What the other clients are given for the same draws, as the lean client would write it.
    fn as_targets(plan: &AttackPlan, n: usize) -> Vec<(Tags, Bytes)> {
        let protocol = Protocol::Http1 {
            client: Client::Hyper,
        };
        let mut other = plan.clone();
        other.protocol = protocol;
        let sampler = plan.catalogue.as_ref().unwrap().sampler(0, 1);
        let dims = Arc::new(Dimensions::new(plan, None));
        let workload = Workload::new(&other, Source::Catalogue(Box::new(sampler)), dims);
        (0..n)
            .map(|_| {
                let drawn = workload.draw().unwrap();
                let bytes = workload.request(&drawn).lean_bytes();
                (drawn.tags, bytes)
            })
            .collect()
    }

    #[test]
    fn a_catalogue_request_written_in_place_is_the_targets_request() {
        let cases = [
            (Method::GET, &b""[..], None),
            (Method::POST, b"abc", None),
            (Method::GET, b"", Some("4")),
            (Method::GET, b"", Some("4:vary")),
            (Method::GET, b"", Some("ranges")),
        ];
        for (method, body, variants) in cases {
            let mut plan = plan(Protocol::default(), method, body);
            if let Some(catalogue) = plan.catalogue.as_mut() {
                catalogue.variants = variants
                    .filter(|v| *v != "ranges")
                    .map(|v| v.parse().unwrap());
                catalogue.ranges = (variants == Some("ranges")).then(|| "50%".parse().unwrap());
            }
            let sampler = plan.catalogue.as_ref().unwrap().sampler(0, 1);
            let dims = Arc::new(Dimensions::new(&plan, None));
            let workload = Workload::new(&plan, Source::Catalogue(Box::new(sampler)), dims);
            let mut ranged = 0;
            for (tags, expected) in as_targets(&plan, 200) {
                let drawn = workload.draw().unwrap();
                assert_eq!(drawn.tags, tags);
                let wire = drawn.into_wire().expect("a catalogue object's bytes");
                let text = String::from_utf8_lossy(&wire.bytes);
                // The same request line and header lines; the variant's header may come
                // before the attack's own in place, after them as a target.
                let lines = |t: &str| {
                    let mut lines: Vec<String> = t.split("\r\n").map(str::to_owned).collect();
                    lines[1..].sort();
                    lines
                };
                assert_eq!(lines(&text), lines(&String::from_utf8_lossy(&expected)));
                match variants {
                    Some("4") => assert!(text.contains("&utm_source=v"), "{text}"),
                    Some("ranges") => ranged += usize::from(text.contains("\r\nrange: bytes=")),
                    Some(_) => assert!(
                        text.contains("&header=Vary:Accept-Language HTTP/1.1\r\n")
                            && text.contains("\r\naccept-language: v"),
                        "{text}"
                    ),
                    None => assert!(!text.contains("utm_") && !text.contains("Vary"), "{text}"),
                }
                assert_eq!(wire.body, body.len() as u64);
            }
            if variants == Some("ranges") {
                assert!((60..140).contains(&ranged), "{ranged} of 200 asked a range");
            }
        }
    }

    #[test]
    fn the_attacks_own_request_is_drawn_without_bytes() {
        let mut plan = plan(Protocol::default(), Method::GET, b"");
        plan.catalogue = None;
        let dims = Arc::new(Dimensions::new(&plan, None));
        let workload = Workload::new(&plan, Source::Own, dims);
        assert!(workload.draw().unwrap().into_wire().is_none());
        let own = workload.own_wire();
        assert!(
            own.bytes
                .starts_with(b"GET /p HTTP/1.1\r\nhost: a.example:8080\r\n")
        );
    }
}
