//! Target lists held in memory, each target prepared once, before the attack, as its client
//! sends it and with its groups in the breakdowns: a draw is then an index.
//!
//! For the lean HTTP/1.1 client every request's bytes lie one after another in one buffer,
//! and a target is a small record of where (32 bytes, so that a list of 10,000 walks through
//! 320 KB rather than the 2.4 MB its targets take, and stays in the CPU's cache).

use bytes::{Bytes, BytesMut};
use http::uri::Authority;

use super::drawn::{Drawn, Form, Wire};
use super::prepared::Prepared;
use crate::breakdown::{Dimensions, Drawn as From, Tags};
use crate::targets::Target;

/// Every set's targets, prepared.
#[derive(Debug)]
pub(crate) struct Held {
    /// The lean HTTP/1.1 client's requests, one after another.
    bytes: Bytes,
    /// Per set, where each target's request lies in `bytes`, with its groups.
    spots: Vec<Vec<Spot>>,
    /// Per set, each target's host when it named one and TLS needs it (the server name of a
    /// target on another host); empty otherwise.
    authorities: Vec<Vec<Option<Authority>>>,
    /// Per set, the targets themselves, for the clients that build their requests; empty
    /// for the lean HTTP/1.1 client.
    targets: Vec<Vec<Target>>,
}

/// Where one target's request lies, and its groups (the pass is set as it is drawn).
#[derive(Debug, Clone, Copy)]
struct Spot {
    start: usize,
    end: usize,
    body: u64,
    head: bool,
    tags: Tags,
}

impl Held {
    /// Prepares the lists `loaded` for requests over `prepared`: as bytes when `wire` (the
    /// lean HTTP/1.1 client), keeping each target's host when `tls`, or as targets. Each
    /// target is dropped as it is prepared, so the lists are not held twice.
    pub(crate) fn prepare(
        loaded: Vec<Vec<Target>>,
        prepared: &Prepared,
        dims: &Dimensions,
        (wire, tls): (bool, bool),
    ) -> Held {
        let mut held = Held {
            bytes: Bytes::new(),
            spots: Vec::new(),
            authorities: Vec::new(),
            targets: Vec::new(),
        };
        if !wire {
            held.targets = loaded;
            let tagged = |(set, targets): (usize, &Vec<Target>)| {
                let from = From { set, pass: 0 };
                let spots = targets.iter().map(|t| Spot::tagged(dims.tags(t, from)));
                spots.collect()
            };
            held.spots = held.targets.iter().enumerate().map(tagged).collect();
            return held;
        }
        let size: usize = loaded
            .iter()
            .flatten()
            .map(|t| 64 + t.path.as_str().len() + t.body.len())
            .sum();
        let mut buffer = BytesMut::with_capacity(size);
        for (set, targets) in loaded.into_iter().enumerate() {
            let from = From { set, pass: 0 };
            let mut spots = Vec::with_capacity(targets.len());
            let mut authorities = Vec::new();
            for target in targets {
                let request = prepared.request(Some(&target));
                let start = buffer.len();
                request.write_lean(&mut buffer);
                spots.push(Spot {
                    start,
                    end: buffer.len(),
                    body: request.body().len() as u64,
                    head: request.is_head(),
                    tags: dims.tags(&target, from),
                });
                if tls {
                    authorities.push(target.authority);
                }
            }
            held.spots.push(spots);
            held.authorities.push(authorities);
        }
        held.bytes = buffer.freeze();
        held
    }

    /// Target `index` of set `set`, drawn in pass `pass`.
    pub(super) fn drawn(&self, set: usize, index: usize, pass: u64, dims: &Dimensions) -> Drawn {
        let spot = self.spots[set][index];
        let tags = dims.with_pass(spot.tags, pass);
        let form = match self.targets.get(set) {
            Some(targets) => Form::Target(Box::new(targets[index].clone())),
            None => Form::Wire {
                wire: Wire {
                    bytes: self.bytes.slice(spot.start..spot.end),
                    head: spot.head,
                    body: spot.body,
                },
                authority: self.authorities[set].get(index).cloned().flatten(),
            },
        };
        Drawn {
            tags,
            form,
            watched: false,
            object: None,
        }
    }
}

impl Spot {
    /// A target kept whole: only its groups.
    fn tagged(tags: Tags) -> Spot {
        Spot {
            start: 0,
            end: 0,
            body: 0,
            head: false,
            tags,
        }
    }
}
