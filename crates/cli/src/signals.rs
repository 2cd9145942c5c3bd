//! Signals during an attack: the first ends it (the run file is still written), a second
//! quits at once.

use vload_engine::Interrupt;

/// The signal that interrupted an attack, if one did (0 until then).
#[derive(Debug, Clone, Default)]
pub(crate) struct Signals(std::sync::Arc<std::sync::atomic::AtomicI32>);

impl Signals {
    /// The first signal received, if any.
    pub(crate) fn received(&self) -> Option<i32> {
        Some(self.0.load(std::sync::atomic::Ordering::SeqCst)).filter(|s| *s != 0)
    }

    /// Waits until `until`, or until a signal comes (at once when one already has): the
    /// waits after the run file is written (a linger, a history lock) end on a signal, which
    /// is returned.
    pub(crate) fn wait_until(&self, until: std::time::Instant) -> Option<i32> {
        loop {
            if let Some(signal) = self.received() {
                return Some(signal);
            }
            let left = until.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return None;
            }
            std::thread::sleep(left.min(std::time::Duration::from_millis(20)));
        }
    }
}

/// On SIGINT, SIGTERM or SIGHUP, triggers `interrupt` (the attack ends, the run file is still
/// written); on a second one, exits at once, since the user insists (a run file waiting for
/// a reader at a FIFO would otherwise hold the process forever).
pub(crate) fn watch(interrupt: Interrupt) -> anyhow::Result<Signals> {
    use tokio::signal::unix::{SignalKind, signal};
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    // Installed now, so a signal that comes before the thread runs is not lost.
    let (mut int, mut term, mut hup) = runtime.block_on(async {
        Ok::<_, std::io::Error>((
            signal(SignalKind::interrupt())?,
            signal(SignalKind::terminate())?,
            signal(SignalKind::hangup())?,
        ))
    })?;
    let signals = Signals::default();
    let seen = signals.0.clone();
    std::thread::Builder::new()
        .name("vload-signals".into())
        .spawn(move || {
            runtime.block_on(async {
                loop {
                    let number = tokio::select! {
                        _ = int.recv() => libc::SIGINT,
                        _ = term.recv() => libc::SIGTERM,
                        _ = hup.recv() => libc::SIGHUP,
                    };
                    let first = seen.compare_exchange(
                        0,
                        number,
                        std::sync::atomic::Ordering::SeqCst,
                        std::sync::atomic::Ordering::SeqCst,
                    );
                    if first.is_err() {
                        std::process::exit(128 + number);
                    }
                    interrupt.trigger();
                }
            });
        })?;
    Ok(signals)
}
