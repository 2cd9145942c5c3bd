//! A microsecond-precise async sleep for vload's open-loop scheduler, hiccup probe and
//! test origin.
//!
//! tokio's timer wheel has a 1 ms resolution, which would add up to a millisecond of
//! dispatch lag to every open-loop request (wrk2's ±1 ms caveat), more than a whole
//! cache hit takes. On Linux a `timerfd` registered with the runtime's epoll wakes the
//! task at the deadline to within tens of microseconds, at the cost of one syscall per
//! wake-up (never per request: the scheduler dispatches everything due at each wake-up).
//! Elsewhere [`PreciseTimer`] falls back to tokio's timer.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> std::io::Result<()> {
//! use std::time::{Duration, Instant};
//! let timer = vload_timer::PreciseTimer::new()?;
//! let deadline = Instant::now() + Duration::from_micros(250);
//! timer.sleep_until(deadline).await;
//! assert!(Instant::now() >= deadline);
//! # Ok(())
//! # }
//! ```
//!
//! # Panics
//! [`PreciseTimer::new`] must be called inside a tokio runtime with I/O enabled.

use std::time::Instant;

#[cfg(target_os = "linux")]
mod imp {
    use std::io;
    use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
    use std::time::{Duration, Instant};

    use tokio::io::unix::AsyncFd;

    /// A non-blocking, close-on-exec `timerfd` on the monotonic clock (that of `Instant`).
    ///
    /// # Errors
    /// The kernel refuses one (out of descriptors).
    pub fn timerfd() -> io::Result<OwnedFd> {
        // SAFETY: plain syscall; the returned descriptor is checked before use.
        let raw = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh descriptor that nothing else owns.
        Ok(unsafe { OwnedFd::from_raw_fd(raw) })
    }

    /// Arms `fd` to expire once, `wait` from now. Arming resets its expiration count, so
    /// a level-triggered epoll stops reporting an expiry it was not read for.
    ///
    /// # Errors
    /// `fd` is not a timerfd.
    pub fn arm_timerfd(fd: BorrowedFd<'_>, wait: Duration) -> io::Result<()> {
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: wait.as_secs() as libc::time_t,
                tv_nsec: libc::c_long::from(wait.subsec_nanos() as i32),
            },
        };
        // SAFETY: a timerfd, a valid itimerspec, no old value wanted.
        if unsafe { libc::timerfd_settime(fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// A reusable one-shot timer backed by a `timerfd`.
    #[derive(Debug)]
    pub struct PreciseTimer {
        fd: AsyncFd<OwnedFd>,
    }

    impl PreciseTimer {
        /// Creates the timer.
        ///
        /// # Errors
        /// The kernel refuses a timerfd (out of descriptors).
        pub fn new() -> io::Result<Self> {
            let fd = timerfd()?;
            let interest = tokio::io::Interest::READABLE;
            // SAFETY: the AsyncFd owns the OwnedFd, which stays open and the same
            // descriptor until the AsyncFd drops it.
            let fd = unsafe { AsyncFd::register_with_interest(fd, interest) }
                .map_err(io::Error::from)?;
            Ok(PreciseTimer { fd })
        }

        /// Sleeps until `deadline`; returns at once if it has passed.
        ///
        /// # Cancel safety
        /// Cancel safe: a dropped sleep leaves the timer armed, and the next call re-arms it.
        pub async fn sleep_until(&self, deadline: Instant) {
            let Some(wait) = deadline
                .checked_duration_since(Instant::now())
                .filter(|d| !d.is_zero())
            else {
                return;
            };
            if arm_timerfd(self.fd.get_ref().as_fd(), wait).is_err() {
                return tokio::time::sleep_until(deadline.into()).await;
            }
            // The expiration count is not read: re-arming resets it, and the runtime's epoll
            // is edge-triggered, so each expiry wakes the task once whatever the count. A
            // readiness left from an earlier sleep dropped after its expiry is told from
            // this one's by the clock. One syscall less per wake-up.
            loop {
                let Ok(mut guard) = self.fd.readable().await else {
                    return tokio::time::sleep_until(deadline.into()).await;
                };
                guard.clear_ready();
                if Instant::now() >= deadline {
                    return;
                }
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use std::io;
    use std::time::Instant;

    /// Falls back to tokio's millisecond timer.
    #[derive(Debug)]
    pub struct PreciseTimer;

    impl PreciseTimer {
        /// Creates the timer.
        ///
        /// # Errors
        /// Never.
        pub fn new() -> io::Result<Self> {
            Ok(PreciseTimer)
        }

        /// Sleeps until `deadline` with tokio's 1 ms resolution.
        pub async fn sleep_until(&self, deadline: Instant) {
            tokio::time::sleep_until(deadline.into()).await
        }
    }
}

pub use imp::PreciseTimer;
#[cfg(target_os = "linux")]
pub use imp::{arm_timerfd, timerfd};

/// Lowers this thread's timer slack to 1 ns so that wake-ups are not batched by the
/// kernel's default 50 µs slack.
pub fn tighten_timer_slack() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_TIMERSLACK takes an integer and affects only this thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
    }
}

/// Nanoseconds from `earlier` to `later`, 0 if `later` is earlier.
#[inline]
pub fn nanos_between(earlier: Instant, later: Instant) -> u64 {
    later
        .saturating_duration_since(earlier)
        .as_nanos()
        .min(u128::from(u64::MAX)) as u64
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn precise_timer_wakes_close_to_the_deadline() {
        tighten_timer_slack();
        let timer = PreciseTimer::new().unwrap();
        let mut worst = Duration::ZERO;
        for _ in 0..20 {
            let deadline = Instant::now() + Duration::from_micros(300);
            timer.sleep_until(deadline).await;
            let now = Instant::now();
            assert!(now >= deadline, "never early");
            worst = worst.max(now - deadline);
        }
        // Loose bound for shared machines; tokio's own timer would be late by ~1 ms each time.
        assert!(
            worst < Duration::from_millis(50),
            "worst lateness {worst:?}"
        );
    }

    #[tokio::test]
    async fn past_deadlines_return_at_once() {
        let timer = PreciseTimer::new().unwrap();
        timer
            .sleep_until(Instant::now() - Duration::from_millis(5))
            .await;
    }
}
