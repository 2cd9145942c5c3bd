//! Watching the server under test during an attack: its counters at the edges of the
//! measured window (`--server-stats`) and the server process's CPU per interval
//! (`--watch-pid`).
//!
//! The counters are read once a second on a thread of their own ([`Sampler`]), never on
//! the collector's: a source that is slow, silent or trickling costs its own samples (each
//! read ends by [`SAMPLE_BOUND`]), never the run's seconds.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use vload_engine::{AttackPlan, Progress};
use vload_schema::RunFile;

use crate::attack::flags::ServerArgs;
use crate::side::Deadline;

/// The whole of one read of the counters each second: a sample later than its second is
/// of no use to it.
const SAMPLE_BOUND: Duration = Duration::from_millis(900);

/// The whole of the first read, before anything is sent.
const FIRST_BOUND: Duration = Duration::from_secs(5);

/// The counters' reader on a thread of its own, one sample for each second it is asked.
struct Sampler {
    reader: Arc<Mutex<super::Reader>>,
    /// The counters before the attack (index 0), then after each interval.
    samples: Arc<Mutex<Vec<Option<super::Snapshot>>>>,
    /// The server's hit ratio over the newest second both of whose edges were read, for the
    /// live page (the record's seconds are made after the run).
    newest_hit_ratio: Arc<Mutex<Option<f64>>>,
    ask: Option<mpsc::Sender<usize>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Sampler {
    fn start(reader: super::Reader, first: super::Snapshot) -> anyhow::Result<Sampler> {
        let reader = Arc::new(Mutex::new(reader));
        let samples = Arc::new(Mutex::new(vec![Some(first)]));
        let newest_hit_ratio = Arc::new(Mutex::new(None));
        let (ask, asked) = mpsc::channel::<usize>();
        let thread = {
            let (reader, samples) = (reader.clone(), samples.clone());
            let newest = newest_hit_ratio.clone();
            std::thread::Builder::new()
                .name("vload-server-stats".into())
                .spawn(move || sample(&reader, (&samples, &newest), &asked))?
        };
        Ok(Sampler {
            reader,
            samples,
            newest_hit_ratio,
            ask: Some(ask),
            thread: Some(thread),
        })
    }

    /// Asks for the sample after interval `index` (1 for the first).
    fn ask(&self, index: usize) {
        if let Some(ask) = &self.ask {
            let _ = ask.send(index);
        }
    }

    /// Stops sampling (the read under way ends by its bound) and returns the reader and the
    /// samples, one per interval asked for.
    fn stop(mut self) -> (Arc<Mutex<super::Reader>>, Vec<Option<super::Snapshot>>) {
        drop(self.ask.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let samples = std::mem::take(&mut *lock(&self.samples));
        (self.reader, samples)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The sampler's thread: for each second asked, the newest only (a read that ran late skips
/// the seconds it overran, which stay unknown), each read ending by [`SAMPLE_BOUND`].
#[allow(
    clippy::print_stderr,
    reason = "a warning that the server record is incomplete"
)]
fn sample(
    reader: &Mutex<super::Reader>,
    (samples, newest): (&Mutex<Vec<Option<super::Snapshot>>>, &Mutex<Option<f64>>),
    asked: &mpsc::Receiver<usize>,
) {
    let mut warned = false;
    while let Ok(mut index) = asked.recv() {
        while let Ok(newer) = asked.try_recv() {
            index = newer;
        }
        let read = lock(reader).read(Deadline::after(SAMPLE_BOUND));
        let snapshot = match read {
            Ok(snapshot) => Some(snapshot),
            Err(e) => {
                if !warned {
                    warned = true;
                    crate::paint::say!(
                        "vload: warning: {e:#}; the seconds without counters are left unknown"
                    );
                }
                None
            }
        };
        let mut samples = lock(samples);
        if samples.len() <= index {
            samples.resize(index + 1, None);
        }
        // The second that ends here, when its start was read too: the live page's figure.
        if let (Some(end), Some(Some(start))) =
            (&snapshot, index.checked_sub(1).map(|i| &samples[i]))
        {
            let second = lock(reader).second(start, end);
            *lock(newest) = second.and_then(|c| c.hit_ratio());
        }
        samples[index] = snapshot;
    }
}

/// `--server-stats` and `--watch-pid`: the server's counters and CPU at the edges of the
/// measured window, and its CPU per interval.
pub(crate) struct ServerWatch {
    stats: Option<Sampler>,
    pid: Option<u32>,
    /// Intervals in the warm-up: the window opens when the last of them is reported.
    warmup_intervals: u64,
    /// Intervals reported so far.
    intervals: usize,
    /// Requests vload completed in the warm-up, to tell a stale edge snapshot.
    warmup_completed: u64,
    connections: u64,
    cpu_edge: Option<super::ProcessCpu>,
    /// CPU before the attack, then after each interval.
    cpu_samples: Vec<Option<super::ProcessCpu>>,
    /// A sample failed (the process ended): said once.
    cpu_lost: bool,
}

impl ServerWatch {
    pub(crate) fn start(args: &ServerArgs, plan: &AttackPlan) -> anyhow::Result<Self> {
        let warmup = plan.warmup;
        let stats = match &args.server_stats {
            Some(spec) => {
                let mut reader = super::Reader::open(spec);
                let first = reader.read(Deadline::after(FIRST_BOUND))?;
                Some(Sampler::start(reader, first)?)
            }
            None => None,
        };
        let cpu_start = args.watch_pid.map(super::process_cpu).transpose()?;
        let warmup_intervals = warmup.as_secs_f64().ceil() as u64;
        let open_now = warmup_intervals == 0;
        Ok(ServerWatch {
            stats,
            pid: args.watch_pid,
            warmup_intervals,
            intervals: 0,
            warmup_completed: 0,
            connections: u64::from(plan.connections()),
            cpu_edge: cpu_start.filter(|_| open_now),
            cpu_samples: vec![cpu_start],
            cpu_lost: false,
        })
    }

    #[allow(
        clippy::print_stderr,
        reason = "a warning that the server record is incomplete"
    )]
    pub(crate) fn on_interval(&mut self, p: &Progress) {
        self.intervals += 1;
        if let Some(pid) = self.pid {
            let sample = super::process_cpu(pid).ok();
            if sample.is_none() && !self.cpu_lost {
                self.cpu_lost = true;
                crate::paint::say!("vload: warning: --watch-pid {pid}: the process has ended");
            }
            self.cpu_samples.push(sample);
        }
        if let Some(stats) = &self.stats {
            stats.ask(self.intervals);
        }
        if p.warmup && p.elapsed.as_secs() == self.warmup_intervals {
            // The last warm-up interval: the measured window opens now.
            self.cpu_edge = self.cpu_samples.last().copied().flatten();
            self.warmup_completed = p.completed;
        }
    }

    /// The newest second's server hit ratio (`--server-stats`) and the cores its process
    /// used (`--watch-pid`), for the live page; `None` where not watched or not read.
    pub(crate) fn latest(&self) -> (Option<f64>, Option<f64>) {
        let hit = self.stats.as_ref().and_then(|s| *lock(&s.newest_hit_ratio));
        let cores = match self.cpu_samples.as_slice() {
            [.., Some(a), Some(b)] => {
                let ticks = (b.user + b.system).saturating_sub(a.user + a.system);
                Some(ticks as f64 * super::tick_s())
            }
            _ => None,
        };
        (hit, cores)
    }

    /// Adds the server's record to `run`; a server that cannot be read now costs its record,
    /// never the run.
    #[allow(
        clippy::print_stderr,
        reason = "a warning that the server record is incomplete"
    )]
    pub(crate) fn finish(self, run: &mut RunFile) {
        if self.stats.is_none() && self.pid.is_none() {
            return;
        }
        let mut record = vload_schema::ServerRecord {
            stats: None,
            process: None,
        };
        if let Some(sampler) = self.stats {
            let (reader, mut samples) = sampler.stop();
            samples.resize(self.intervals + 1, None);
            let mut stats = lock(&reader);
            let start = samples[0]
                .clone()
                .expect("the first read is the attack's start");
            let edge = if self.warmup_intervals > 0 {
                samples
                    .get(self.warmup_intervals as usize)
                    .cloned()
                    .flatten()
            } else {
                Some(start.clone())
            };
            // Every request vload completed, warm-up included, was one the server counted.
            let expected: u64 = run.intervals.iter().map(|i| i.completed).sum();
            let window = match stats.settled(&start, expected, run.interrupted) {
                Err(e) => Err(format!("{e:#}")),
                Ok(end) => {
                    // A server may publish a busy connection's counts late (Varnish when it
                    // closes, or with feature +busy_stats_rate every few requests): an edge
                    // snapshot that missed the warm-up's requests is stale, and the whole
                    // attack is kept instead.
                    let fresh = edge.as_ref().filter(|edge| {
                        let seen = stats.common(&start, edge).requests.unwrap_or(0);
                        let slack = 2 * self.connections + self.warmup_completed / 100;
                        seen.abs_diff(self.warmup_completed) <= slack
                    });
                    match fresh {
                        Some(edge) => stats.window("measured", edge, &end),
                        None => stats.window("attack", &start, &end),
                    }
                }
            };
            match window {
                Ok(window) => record.stats = Some(window),
                Err(why) => crate::paint::say!("vload: warning: no server counters kept: {why}"),
            }
            for (interval, pair) in run.intervals.iter_mut().zip(samples.windows(2)) {
                if let [Some(a), Some(b)] = pair {
                    interval.server = stats.second(a, b);
                }
            }
        }
        if let Some(pid) = self.pid {
            let end = super::process_cpu(pid)
                .ok()
                .or_else(|| self.cpu_samples.iter().rev().flatten().next().copied());
            match (self.cpu_edge, end) {
                (Some(start), Some(end)) => {
                    record.process = Some(super::process_window(pid, start, end));
                }
                _ => crate::paint::say!("vload: warning: --watch-pid {pid}: no CPU time kept"),
            }
            let tick = super::tick_s();
            for (interval, pair) in run.intervals.iter_mut().zip(self.cpu_samples.windows(2)) {
                if let [Some(a), Some(b)] = pair {
                    let ticks = (b.user + b.system).saturating_sub(a.user + a.system);
                    interval.server_cpu_s = Some(ticks as f64 * tick);
                }
            }
        }
        run.server = Some(record);
    }
}
