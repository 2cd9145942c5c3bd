//! A catalogue's objects as requests: each drawn object's path (and virtual host) written
//! straight into the request the lean HTTP/1.1 client sends, or made a target for the others.

use bytes::{BufMut as _, BytesMut};

use super::drawn::{Drawn, Form, Wire};
use super::prepared::Frame;
use crate::breakdown::Dimensions;
use crate::targets::Target;

/// How a worker turns drawn objects into requests.
#[derive(Debug)]
pub(super) struct CatalogueDraws {
    /// The attack's request around the object's path and host (lean HTTP/1.1); `None` for
    /// the clients that take a target.
    frame: Option<Frame>,
    /// Objects below this id are watched ([`crate::AttackPlan::watched_objects`]).
    watched: u64,
}

impl CatalogueDraws {
    pub(super) fn new(frame: Option<Frame>, watched: u64) -> CatalogueDraws {
        CatalogueDraws { frame, watched }
    }

    /// The next object's request, written into `arena` when it goes out as bytes.
    pub(super) fn draw(
        &self,
        sampler: &mut vload_cache::Sampler,
        dims: &Dimensions,
        arena: &mut BytesMut,
    ) -> Drawn {
        let id = sampler.next_id();
        let (class, variant, range) = (
            sampler.last_class(),
            sampler.last_variant(),
            sampler.last_range(),
        );
        let watched = id < self.watched;
        let catalogue = sampler.catalogue();
        let object = Some(catalogue.key(id, variant));
        let Some(frame) = &self.frame else {
            let target = target(catalogue, id, variant, range);
            let mut tags = dims.tags(&target, Default::default());
            dims.mark_drawn(&mut tags, class);
            return Drawn {
                tags,
                form: Form::Target(Box::new(target)),
                watched,
                object,
            };
        };
        let (mut start, mut end) = (0, 0);
        frame.write(
            arena,
            |out| {
                start = out.len();
                catalogue.write_variant_path(id, variant, |part| out.put_slice(part));
                end = out.len();
            },
            |out| catalogue.write_host(id, |part| out.put_slice(part)),
            |out| catalogue.write_header_lines(variant, range, |part| out.put_slice(part)),
        );
        let path = || String::from_utf8_lossy(&arena[start..end]).into_owned();
        let mut tags = dims.catalogue_tags(catalogue.site_of(id), path);
        dims.mark_drawn(&mut tags, class);
        Drawn {
            tags,
            form: Form::Wire {
                wire: Wire {
                    bytes: arena.split().freeze(),
                    head: frame.head,
                    body: frame.body,
                },
                authority: None,
            },
            watched,
            object,
        }
    }
}

/// Object `id`'s request as a target: its path, its virtual host when the catalogue has
/// several, its variant's header when the variants are headers, and its range.
fn target(
    catalogue: &vload_cache::Catalogue,
    id: u64,
    variant: Option<u32>,
    range: Option<vload_cache::ByteRange>,
) -> Target {
    let mut headers = http::HeaderMap::new();
    if let Some(host) = catalogue.host_of(id) {
        headers.insert(
            http::header::HOST,
            http::HeaderValue::from_str(&host).expect("site names are valid header values"),
        );
    }
    let mut lines = Vec::new();
    catalogue.write_header_lines(variant, range, |part| lines.extend_from_slice(part));
    let lines = lines
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l));
    for line in lines.filter(|l| !l.is_empty()) {
        let colon = line.iter().position(|&b| b == b':').expect("a header line");
        headers.append(
            http::HeaderName::from_bytes(&line[..colon]).expect("the catalogue's header names"),
            http::HeaderValue::from_bytes(&line[colon + 2..]).expect("its header values"),
        );
    }
    let mut path = Vec::with_capacity(64);
    catalogue.write_variant_path(id, variant, |part| path.extend_from_slice(part));
    Target {
        method: None,
        authority: None,
        https: None,
        path: http::uri::PathAndQuery::from_maybe_shared(bytes::Bytes::from(path))
            .expect("catalogue paths are valid"),
        headers,
        body: bytes::Bytes::new(),
    }
}
