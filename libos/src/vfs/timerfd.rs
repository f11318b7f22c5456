//! timerfd: a timer read as a descriptor. A read returns the number of
//! expirations since the last read (a `u64`), waiting for the first one;
//! `poll`/`select` report it readable once the timer has expired.
//!
//! [`Timer`] is the pure state machine (tested on the host); expirations are
//! counted when looked at, so an armed timer costs nothing while nobody
//! reads it.

/// An interval timer on the monotonic clock (nanoseconds since boot).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Timer {
    /// The next expiry; 0 when disarmed.
    pub next: u64,
    /// The period; 0 for a one-shot timer.
    pub interval: u64,
    /// Expirations not read yet.
    pub ticks: u64,
    /// Expirations ever (each one wakes the timer's queue: epoll's edges).
    pub fired: u64,
}

impl Timer {
    /// Counts the expirations up to `now`. Like Linux's timer, which
    /// stops until the next read, expirations wake once per read.
    pub fn advance(&mut self, now: u64) {
        if self.next == 0 || now < self.next {
            return;
        }
        if self.ticks == 0 {
            self.fired = self.fired.wrapping_add(1);
        }
        match (now - self.next).checked_div(self.interval) {
            // One-shot.
            None => {
                self.ticks = self.ticks.saturating_add(1);
                self.next = 0;
            }
            Some(missed) => {
                let k = missed + 1;
                self.ticks = self.ticks.saturating_add(k);
                self.next = self.next.saturating_add(k.saturating_mul(self.interval));
            }
        }
    }

    /// Arms (at `next`, 0 disarms) with `interval`, dropping unread
    /// expirations; returns the old (remaining, interval) as of `now`. A
    /// disarmed timer keeps the interval it was given, as Linux's.
    pub fn set(&mut self, now: u64, next: u64, interval: u64) -> (u64, u64) {
        let old = self.get(now);
        *self = Timer {
            next,
            interval,
            ticks: 0,
            fired: self.fired,
        };
        old
    }

    /// (time to the next expiry, interval) as of `now`; (0, 0) disarmed.
    pub fn get(&mut self, now: u64) -> (u64, u64) {
        self.advance(now);
        if self.next == 0 {
            return (0, self.interval);
        }
        (self.next - now, self.interval)
    }

    /// Takes the expirations counted up to `now`, if any.
    pub fn take(&mut self, now: u64) -> Option<u64> {
        self.advance(now);
        (self.ticks > 0).then(|| core::mem::take(&mut self.ticks))
    }
}

#[cfg(target_os = "none")]
pub use imp::TimerFd;

#[cfg(target_os = "none")]
mod imp {
    use core::sync::atomic::AtomicU32;

    use super::super::poll_bits::POLLIN;
    use super::Timer;
    use crate::errno::Errno;
    use crate::sched::WaitQueue;
    use crate::sync::IrqLock;

    /// A blocked read looks again at least this often, so a timer re-armed
    /// to an earlier time by another thread is not missed for long.
    const RECHECK_NS: u64 = 10_000_000;

    /// A timerfd.
    pub struct TimerFd {
        /// `CLOCK_REALTIME` deadlines are converted to the monotonic clock.
        pub realtime: bool,
        timer: IrqLock<Timer>,
        armed: WaitQueue,
        /// `O_*` status flags.
        pub flags: AtomicU32,
    }

    impl TimerFd {
        /// A disarmed timer.
        pub fn new(realtime: bool, flags: u32) -> Self {
            Self {
                realtime,
                timer: IrqLock::new(Timer::default()),
                armed: WaitQueue::new(),
                flags: AtomicU32::new(flags | 2),
            }
        }

        /// Arms or disarms: `value` is the first expiry (relative, or on
        /// the timer's clock when `absolute`), 0 disarms; returns the old
        /// (remaining, interval).
        pub fn set(&self, value: u64, interval: u64, absolute: bool) -> (u64, u64) {
            let now = crate::time::monotonic_ns();
            let next = match (value, absolute) {
                (0, _) => 0,
                (v, false) => now.saturating_add(v),
                (v, true) if self.realtime => {
                    // On the monotonic clock; a time already past fires now.
                    let wall = crate::time::realtime_ns();
                    now.saturating_add(v.saturating_sub(wall)).max(1)
                }
                (v, true) => v.max(1),
            };
            let old = self.timer.lock().set(now, next, interval);
            self.armed.wake_all();
            super::super::readiness_changed();
            old
        }

        /// (remaining, interval).
        pub fn get(&self) -> (u64, u64) {
            self.timer.lock().get(crate::time::monotonic_ns())
        }

        /// The expirations since the last read, waiting for one unless
        /// `nonblock`; `ERESTARTSYS` when a signal arrives meanwhile
        /// (noticed within [`RECHECK_NS`] of an armed timer): restarted
        /// after an `SA_RESTART` handler, as Linux's `timerfd_read`.
        pub fn read(&self, nonblock: bool) -> Result<u64, Errno> {
            loop {
                let now = crate::time::monotonic_ns();
                let next = {
                    let mut t = self.timer.lock();
                    if let Some(n) = t.take(now) {
                        return Ok(n);
                    }
                    t.next
                };
                if nonblock {
                    return Err(Errno::EAGAIN);
                }
                if crate::signal::has_deliverable() {
                    return Err(Errno::ERESTARTSYS);
                }
                if next == 0 {
                    self.armed.wait_while(|| {
                        self.timer.lock().next == 0 && !crate::signal::has_deliverable()
                    });
                } else {
                    crate::sched::sleep_until_ns(next.min(now + RECHECK_NS));
                }
            }
        }

        /// `poll` events.
        pub fn poll(&self) -> u16 {
            let mut t = self.timer.lock();
            t.advance(crate::time::monotonic_ns());
            // Linux reports POLLIN alone.
            if t.ticks > 0 { POLLIN } else { 0 }
        }

        /// Its expirations so far, as wake-ups keyed `EPOLLIN` (epoll's
        /// edges).
        pub fn wakes(&self) -> [u64; 3] {
            let mut t = self.timer.lock();
            t.advance(crate::time::monotonic_ns());
            [t.fired, 0, 0]
        }

        /// When it expires next (monotonic ns), if armed: a wait on it
        /// must end then, since expiry wakes nobody.
        pub fn next_expiry(&self) -> Option<u64> {
            let n = self.timer.lock().next;
            (n != 0).then_some(n)
        }

        /// Whether the timer is armed (a waiting `poll` must look again
        /// by itself: expiry wakes nobody).
        pub fn armed(&self) -> bool {
            self.timer.lock().next != 0
        }
    }

    impl crate::fd::FileLike for TimerFd {
        fn taken_before_copy(&self) -> bool {
            true
        }

        fn read(&self, max: usize, nonblock: bool) -> Result<alloc::vec::Vec<u8>, Errno> {
            if max < 8 {
                return Err(Errno::EINVAL);
            }
            Ok(TimerFd::read(self, nonblock)?.to_le_bytes().to_vec())
        }

        fn poll(&self) -> u16 {
            TimerFd::poll(self)
        }

        fn wakes(&self) -> [u64; 3] {
            TimerFd::wakes(self)
        }

        fn flags(&self) -> &AtomicU32 {
            &self.flags
        }

        fn mode(&self) -> u32 {
            0o600
        }

        fn next_expiry(&self) -> Option<u64> {
            TimerFd::next_expiry(self)
        }

        fn proc_link(&self) -> alloc::string::String {
            alloc::string::String::from("anon_inode:[timerfd]")
        }

        fn as_any(&self) -> &dyn core::any::Any {
            self
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Timer;

    #[test]
    fn one_shot_fires_once() {
        let mut t = Timer::default();
        assert_eq!(t.set(100, 150, 0), (0, 0));
        assert_eq!(t.take(149), None);
        assert_eq!(t.get(120), (30, 0));
        assert_eq!(t.take(150), Some(1));
        assert_eq!(t.take(10_000), None);
        assert_eq!(t.get(10_000), (0, 0));
    }

    #[test]
    fn periodic_counts_missed_periods() {
        let mut t = Timer::default();
        t.set(0, 100, 10);
        assert_eq!(t.take(99), None);
        assert_eq!(t.take(100), Some(1));
        assert_eq!(t.take(135), Some(3));
        assert_eq!(t.get(135), (5, 10));
        // Re-arming drops what was not read and reports the old setting.
        t.advance(200);
        assert_eq!(t.set(200, 0, 10), (10, 10));
        // Disarmed, it keeps the interval it was given (as Linux's).
        assert_eq!((t.next, t.interval, t.ticks), (0, 10, 0));
        assert_eq!(t.get(300), (0, 10));
    }

    #[test]
    fn expirations_wake_once_per_read() {
        let mut t = Timer::default();
        t.set(0, 100, 10);
        t.advance(100);
        t.advance(150);
        // Linux's timer stops until read: one wake-up for both periods.
        assert_eq!(t.fired, 1);
        assert_eq!(t.take(150), Some(6));
        t.advance(160);
        assert_eq!(t.fired, 2);
        // Re-arming keeps the count (a watcher compares it with its last).
        t.set(160, 0, 0);
        assert_eq!(t.fired, 2);
    }
}
