//! Watching the server under test during an attack: its counters at the edges of the
//! measured window (`--server-stats`) and the server process's CPU per interval
//! (`--watch-pid`).

use vload_engine::{AttackPlan, Progress};
use vload_schema::RunFile;

use crate::attack::flags::ServerArgs;

/// `--server-stats` and `--watch-pid`: the server's counters and CPU at the edges of the
/// measured window, and its CPU per interval.
pub(crate) struct ServerWatch {
    stats: Option<super::Reader>,
    pid: Option<u32>,
    /// Intervals in the warm-up: the window opens when the last of them is reported.
    warmup_intervals: u64,
    stats_start: Option<super::Snapshot>,
    stats_edge: Option<super::Snapshot>,
    /// The counters before the attack, then after each interval.
    stats_samples: Vec<Option<super::Snapshot>>,
    /// A read failed: said once.
    stats_lost: bool,
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
        let mut stats = args.server_stats.as_ref().map(super::Reader::open);
        let stats_start = stats.as_mut().map(super::Reader::read).transpose()?;
        let cpu_start = args.watch_pid.map(super::process_cpu).transpose()?;
        let warmup_intervals = warmup.as_secs_f64().ceil() as u64;
        let open_now = warmup_intervals == 0;
        Ok(ServerWatch {
            stats,
            pid: args.watch_pid,
            warmup_intervals,
            stats_edge: stats_start.clone().filter(|_| open_now),
            stats_samples: vec![stats_start.clone()],
            stats_lost: false,
            stats_start,
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
        if let Some(pid) = self.pid {
            let sample = super::process_cpu(pid).ok();
            if sample.is_none() && !self.cpu_lost {
                self.cpu_lost = true;
                crate::paint::say!("vload: warning: --watch-pid {pid}: the process has ended");
            }
            self.cpu_samples.push(sample);
        }
        if let Some(stats) = &mut self.stats {
            let sample = match stats.read() {
                Ok(snapshot) => Some(snapshot),
                Err(e) => {
                    if !self.stats_lost {
                        self.stats_lost = true;
                        crate::paint::say!("vload: warning: {e:#}");
                    }
                    None
                }
            };
            self.stats_samples.push(sample);
        }
        if p.warmup && p.elapsed.as_secs() == self.warmup_intervals {
            // The last warm-up interval: the measured window opens now.
            self.cpu_edge = self.cpu_samples.last().copied().flatten();
            self.warmup_completed = p.completed;
            self.stats_edge = self.stats_samples.last().cloned().flatten();
        }
    }

    /// Adds the server's record to `run`; a server that cannot be read now costs its record,
    /// never the run.
    #[allow(
        clippy::print_stderr,
        reason = "a warning that the server record is incomplete"
    )]
    pub(crate) fn finish(mut self, run: &mut RunFile) {
        if self.stats.is_none() && self.pid.is_none() {
            return;
        }
        let mut record = vload_schema::ServerRecord {
            stats: None,
            process: None,
        };
        if let (Some(stats), Some(start)) = (&mut self.stats, &self.stats_start) {
            // Every request vload completed, warm-up included, was one the server counted.
            let expected: u64 = run.intervals.iter().map(|i| i.completed).sum();
            let window = match stats.settled(start, expected) {
                Err(e) => Err(format!("{e:#}")),
                Ok(end) => {
                    // A server may publish a busy connection's counts late (Varnish when it
                    // closes, or with feature +busy_stats_rate every few requests): an edge
                    // snapshot that missed the warm-up's requests is stale, and the whole
                    // attack is kept instead.
                    let fresh = self.stats_edge.as_ref().filter(|edge| {
                        let seen = stats.common(start, edge).requests.unwrap_or(0);
                        let slack = 2 * self.connections + self.warmup_completed / 100;
                        seen.abs_diff(self.warmup_completed) <= slack
                    });
                    match fresh {
                        Some(edge) => stats.window("measured", edge, &end),
                        None => stats.window("attack", start, &end),
                    }
                }
            };
            match window {
                Ok(window) => record.stats = Some(window),
                Err(why) => crate::paint::say!("vload: warning: no server counters kept: {why}"),
            }
            for (interval, pair) in run.intervals.iter_mut().zip(self.stats_samples.windows(2)) {
                if let [Some(a), Some(b)] = pair {
                    interval.server = Some(stats.common(a, b));
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
