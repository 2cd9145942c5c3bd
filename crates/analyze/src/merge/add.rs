//! Adding up what runs recorded: counts without overflow, latency records (histograms add,
//! moments merge).

use vload_schema::{EncodedHistogram, LatencyRecord};

use super::error::MergeError;

/// A histogram and the moments of the same values, being added up.
pub(super) type Accumulator = Option<(hdrhistogram::Histogram<u64>, vload_schema::Moments)>;

/// The latency records a run may have, in the order `merge` destructures them.
pub(super) const OPTIONAL: [fn(&vload_schema::Latency) -> Option<&LatencyRecord>; 11] = [
    |l| l.response.as_ref(),
    |l| l.dispatch_lag.as_ref(),
    |l| l.hit.as_ref(),
    |l| l.miss.as_ref(),
    |l| l.tls_handshake.as_ref(),
    |l| l.tcp_connect.as_ref(),
    |l| l.queue_wait.as_ref(),
    |l| l.first_byte.as_ref(),
    |l| l.transfer.as_ref(),
    |l| l.origin.as_ref(),
    |l| l.proxy_added.as_ref(),
];

pub(super) fn add_record(
    into: &mut Option<(hdrhistogram::Histogram<u64>, vload_schema::Moments)>,
    record: &LatencyRecord,
    name: &str,
) -> Result<(), MergeError> {
    let h = record.histogram.decode()?;
    match into {
        Some((sum, moments)) => {
            sum.add(&h)
                .map_err(|_| MergeError::Layout(name.to_owned()))?;
            moments.merge(&record.moments);
        }
        None => *into = Some((h, record.moments)),
    }
    Ok(())
}

pub(super) fn finish(
    acc: Option<(hdrhistogram::Histogram<u64>, vload_schema::Moments)>,
) -> Result<Option<LatencyRecord>, MergeError> {
    acc.map(|(h, moments)| {
        Ok(LatencyRecord {
            histogram: EncodedHistogram::encode(&h)?,
            moments,
        })
    })
    .transpose()
}

/// Adds counts without overflowing: every count a run file holds is bounded when it is read
/// (see `RunFile::validate`), so a saturated sum takes thousands of extreme files.
/// Adds one run's cache layers to the sums, layer by layer (a run that saw fewer layers adds
/// nothing to the others).
pub(super) fn add_layers(
    into: &mut Vec<vload_schema::LayerCounts>,
    from: &[vload_schema::LayerCounts],
) {
    if into.len() < from.len() {
        into.resize(from.len(), vload_schema::LayerCounts::default());
    }
    for (a, b) in into.iter_mut().zip(from) {
        add(&mut a.reached, b.reached);
        add(&mut a.hits, b.hits);
        add(&mut a.misses, b.misses);
    }
}

pub(super) fn add(into: &mut u64, n: u64) {
    *into = into.saturating_add(n);
}
