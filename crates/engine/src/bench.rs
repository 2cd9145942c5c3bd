//! Entry points for `vload-benches`: the engine's per-request paths, reachable from the
//! criterion benches. Not a stable API.

use vload_schema::HistogramSettings;

use crate::AttackPlan;
use crate::plan::Protocol;
use crate::record::IntervalStats;
use crate::workload::Prepared;

/// One worker's per-second statistics.
#[derive(Debug)]
pub struct Interval(IntervalStats);

impl Default for Interval {
    fn default() -> Self {
        Interval(IntervalStats::new(&HistogramSettings::default()))
    }
}

impl Interval {
    /// What the worker records for one completed open-loop request: response, service and
    /// dispatch-lag times, the status and the cache class.
    pub fn record_request(&mut self, response_ns: u64, service_ns: u64, status: u16) {
        let s = &mut self.0;
        s.sent += 1;
        s.completed += 1;
        s.intended += 1;
        s.dispatch_lag.record(response_ns - service_ns);
        s.service.record(service_ns);
        s.response.record(response_ns);
        s.hit.record(response_ns);
        s.count_status(status);
        s.count_cache((
            crate::cache::CacheClass::Hit,
            Some(crate::cache::CacheSource::XVarnish),
            crate::cache::Layers::default(),
            None,
        ));
    }

    /// The once-a-second swap: the full interval out, an empty one in.
    pub fn take(&mut self) -> Interval {
        Interval(self.0.take())
    }

    /// What the collector does with each worker's interval.
    pub fn merge(&mut self, other: &Interval) {
        self.0.merge(&other.0);
    }

    /// Requests recorded.
    pub fn completed(&self) -> u64 {
        self.0.completed
    }
}

/// The request of an attack, prepared as the workers prepare it.
#[derive(Debug)]
pub struct Requests(Prepared, Protocol);

impl Requests {
    /// Prepares `plan`'s request (for its protocol and client).
    pub fn new(plan: &AttackPlan) -> Self {
        Requests(Prepared::new(plan), plan.protocol)
    }

    /// One request as the connection takes it; returns its size in bytes (lean) or its
    /// header count (hyper), so the work cannot be optimised away.
    pub fn next(&self) -> usize {
        let request = self.0.request(None);
        match self.1 {
            Protocol::Http1 {
                client: crate::plan::Client::Lean,
            } => request.lean_bytes().len(),
            protocol => request.hyper(protocol.names_authority()).headers().len(),
        }
    }
}

/// Parses a response head and classifies its cache headers as the lean client does;
/// returns the status and the head's length.
pub fn parse_response(head: &[u8]) -> Option<(u16, usize, bool)> {
    let h = crate::h1::parse_head(head, false).ok()??;
    Some((h.status, h.len, h.cache.0.is_hit()))
}

/// Classifies a `HeaderMap` as the hyper path does; true for a hit.
pub fn classify_map(headers: &http::HeaderMap) -> bool {
    crate::cache::classify(headers).0.is_hit()
}
