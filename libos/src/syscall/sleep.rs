//! `nanosleep(2)`, `clock_nanosleep(2)`, `sched_yield(2)`, `time(2)`.

use crate::errno::Errno;
use crate::mm::user;

const CLOCK_REALTIME: u64 = 0;
const CLOCK_MONOTONIC: u64 = 1;
const CLOCK_BOOTTIME: u64 = 7;
const CLOCK_REALTIME_ALARM: u64 = 8;
const CLOCK_BOOTTIME_ALARM: u64 = 9;
const CLOCK_TAI: u64 = 11;
const TIMER_ABSTIME: u64 = 1;

/// A `struct timespec` in nanoseconds (`EINVAL` if malformed).
pub fn timespec_ns(addr: u64) -> Result<u64, Errno> {
    let b = &user::read_array::<16>(addr)?;
    let sec = i64::from_le_bytes(b[..8].try_into().map_err(|_| Errno::EFAULT)?);
    let nsec = i64::from_le_bytes(b[8..].try_into().map_err(|_| Errno::EFAULT)?);
    if sec < 0 || !(0..1_000_000_000).contains(&nsec) {
        return Err(Errno::EINVAL);
    }
    Ok((sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(nsec as u64))
}

/// Sleeps `ns`; a signal the thread takes ends it with `EINTR` (never
/// restarted, whatever `SA_RESTART` says, as Linux), the time left in
/// `rem` if given.
fn sleep_relative(ns: u64, rem: u64) -> Result<u64, Errno> {
    let deadline = crate::time::monotonic_ns().saturating_add(ns);
    if crate::sched::sleep_until_interruptible(deadline) {
        return Ok(0);
    }
    if rem != 0 {
        let left = deadline.saturating_sub(crate::time::monotonic_ns());
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&(left / 1_000_000_000).to_le_bytes());
        b[8..].copy_from_slice(&(left % 1_000_000_000).to_le_bytes());
        user::copy_in(rem, &b)?;
    }
    Err(Errno::EINTR)
}

/// `nanosleep(req, rem)`.
pub fn nanosleep(a: &[u64; 6]) -> Result<u64, Errno> {
    let ns = timespec_ns(a[0])?;
    sleep_relative(ns, a[1])
}

/// `clock_nanosleep(clock, flags, req, rem)`: relative or, with
/// `TIMER_ABSTIME`, until a time of the realtime or monotonic clock.
pub fn clock_nanosleep(a: &[u64; 6]) -> Result<u64, Errno> {
    let realtime = match a[0] {
        CLOCK_REALTIME | CLOCK_REALTIME_ALARM | CLOCK_TAI => true,
        CLOCK_MONOTONIC | CLOCK_BOOTTIME | CLOCK_BOOTTIME_ALARM => false,
        // Clocks Linux knows but cannot sleep on (the thread CPU-time, raw
        // and coarse clocks) answer EOPNOTSUPP there; others EINVAL.
        3..=6 => return Err(Errno::EOPNOTSUPP),
        _ => return Err(Errno::EINVAL),
    };
    let ns = timespec_ns(a[2])?;
    if a[1] & TIMER_ABSTIME == 0 {
        return sleep_relative(ns, a[3]);
    }
    let now_mono = crate::time::monotonic_ns();
    let deadline = if realtime {
        // The realtime clock is the monotonic one plus the boot time.
        let now_real = crate::time::realtime_ns();
        now_mono.saturating_add(ns.saturating_sub(now_real))
    } else {
        ns
    };
    if crate::sched::sleep_until_interruptible(deadline) {
        Ok(0)
    } else {
        Err(Errno::EINTR)
    }
}

/// `sched_yield()`.
pub fn sched_yield(_: &[u64; 6]) -> Result<u64, Errno> {
    crate::sched::yield_now();
    Ok(0)
}

/// `time(tloc)`: seconds since the epoch.
pub fn time(a: &[u64; 6]) -> Result<u64, Errno> {
    let s = crate::time::realtime_ns() / 1_000_000_000;
    if a[0] != 0 {
        user::copy_in(a[0], &s.to_le_bytes())?;
    }
    Ok(s)
}
