//! Watching the server under test during an attack: Varnish's counters at the edges of the
//! measured window (`--server-stats`) and the server process's CPU per interval
//! (`--watch-pid`).

use vload_engine::{AttackPlan, Progress};
use vload_schema::RunFile;

use crate::attack::flags::ServerArgs;

/// `--server-stats` and `--watch-pid`: the server's counters and CPU at the edges of the
/// measured window, and its CPU per interval.
pub(crate) struct ServerWatch {
    varnish: Option<Option<String>>,
    pid: Option<u32>,
    /// Intervals in the warm-up: the window opens when the last of them is reported.
    warmup_intervals: u64,
    varnish_start: Option<super::VarnishSnapshot>,
    varnish_edge: Option<super::VarnishSnapshot>,
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
        let varnish = args.server_stats.clone().map(|s| match s {
            super::ServerStats::Varnish { instance } => instance,
        });
        let varnish_start = varnish
            .as_ref()
            .map(|instance| super::varnishstat(instance.as_deref()))
            .transpose()?;
        let cpu_start = args.watch_pid.map(super::process_cpu).transpose()?;
        let warmup_intervals = warmup.as_secs_f64().ceil() as u64;
        let open_now = warmup_intervals == 0;
        Ok(ServerWatch {
            varnish,
            pid: args.watch_pid,
            warmup_intervals,
            varnish_edge: varnish_start.clone().filter(|_| open_now),
            varnish_start,
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
        if p.warmup && p.elapsed.as_secs() == self.warmup_intervals {
            // The last warm-up interval: the measured window opens now.
            self.cpu_edge = self.cpu_samples.last().copied().flatten();
            self.warmup_completed = p.completed;
            if let Some(instance) = &self.varnish {
                match super::varnishstat(instance.as_deref()) {
                    Ok(snapshot) => self.varnish_edge = Some(snapshot),
                    Err(e) => crate::paint::say!("vload: warning: {e:#}"),
                }
            }
        }
    }

    /// Adds the server's record to `run`; a server that cannot be read now costs its record,
    /// never the run.
    #[allow(
        clippy::print_stderr,
        reason = "a warning that the server record is incomplete"
    )]
    pub(crate) fn finish(self, run: &mut RunFile) {
        if self.varnish.is_none() && self.pid.is_none() {
            return;
        }
        let mut record = vload_schema::ServerRecord {
            varnish: None,
            process: None,
        };
        if let Some(instance) = &self.varnish {
            let instance = instance.as_deref();
            // Every request vload completed, warm-up included, was one lookup.
            let expected: u64 = run.intervals.iter().map(|i| i.completed).sum();
            let settled = self
                .varnish_start
                .as_ref()
                .map(|start| super::settled_varnishstat(instance, start, expected));
            let window = match (&self.varnish_start, &self.varnish_edge, settled) {
                (_, _, Some(Err(e))) => Err(format!("{e:#}")),
                (Some(start), edge, Some(Ok(end))) => {
                    // Varnish publishes a busy connection's counts late (when it closes, or
                    // with feature +busy_stats_rate every few requests): an edge snapshot
                    // that missed the warm-up's requests is stale, and the whole attack is
                    // kept instead.
                    let fresh = edge.as_ref().filter(|edge| {
                        let seen = edge.client_req().saturating_sub(start.client_req());
                        let slack = 2 * self.connections + self.warmup_completed / 100;
                        seen.abs_diff(self.warmup_completed) <= slack
                    });
                    match fresh {
                        Some(edge) => super::varnish_window(instance, "measured", edge, &end),
                        None => super::varnish_window(instance, "attack", start, &end),
                    }
                }
                _ => unreachable!("the first snapshot was taken or start failed"),
            };
            match window {
                Ok(window) => record.varnish = Some(window),
                Err(why) => crate::paint::say!("vload: warning: no Varnish counters kept: {why}"),
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
