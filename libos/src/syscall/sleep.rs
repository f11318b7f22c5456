//! `nanosleep(2)`, `clock_nanosleep(2)`, `sched_yield(2)`, `time(2)`.

use crate::errno::Errno;
use crate::mm::user;

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
/// `TIMER_ABSTIME`, until a time of the clock: the wall and monotonic
/// clocks, and the process's or another thread's CPU time. Checked in
/// Linux's order: the clock, whether it can be slept on, the time, then
/// what the clock itself refuses.
pub fn clock_nanosleep(a: &[u64; 6]) -> Result<u64, Errno> {
    use crate::clock::Clock;
    let clock = Clock::of(a[0])?;
    // Linux sleeps on neither the calling thread's fixed CPU-time clock,
    // the raw and coarse clocks, nor dynamic ones.
    let thread_fixed = a[0] as u32 == 3;
    if thread_fixed || matches!(clock, Clock::Raw | Clock::Coarse | Clock::Dynamic) {
        return Err(Errno::EOPNOTSUPP);
    }
    let ns = timespec_ns(a[2])?;
    let absolute = a[1] & TIMER_ABSTIME != 0;
    match clock {
        Clock::Alarm(_) if !clock.present() => Err(Errno::EOPNOTSUPP),
        Clock::Alarm(_) if a[1] & !TIMER_ABSTIME != 0 => Err(Errno::EINVAL),
        // Alarm clocks need CAP_WAKE_ALARM.
        Clock::Alarm(_) => Err(Errno::EPERM),
        Clock::Cpu(c) => {
            let me = crate::sched::current().id();
            if c.thread && (c.id == 0 || c.id == me) {
                return Err(Errno::EINVAL);
            }
            sleep_cpu(c.target()?, ns, absolute, a[3])
        }
        _ if !absolute => sleep_relative(ns, a[3]),
        _ => {
            let now_mono = crate::time::monotonic_ns();
            let deadline = if clock.wall() {
                // The realtime clock is the monotonic one plus the boot
                // time.
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
    }
}

/// Sleeps until CPU time `target` reaches `ns` (from now unless
/// `absolute`), looking at it as Linux's tick would: when the rest could
/// have been used (CPU time runs at most as fast as the clock on one
/// vCPU), at most every tick. A signal ends it with `EINTR`, the CPU time
/// left in `rem` for a relative sleep.
fn sleep_cpu(
    target: crate::clock::CpuTarget,
    ns: u64,
    absolute: bool,
    rem: u64,
) -> Result<u64, Errno> {
    let deadline = if absolute {
        ns
    } else {
        target.read()?.saturating_add(ns)
    };
    loop {
        let now = target.read()?;
        if now >= deadline {
            return Ok(0);
        }
        let look = crate::time::monotonic_ns()
            .saturating_add((deadline - now).max(crate::time::coarse_res_ns()));
        if !crate::sched::sleep_until_interruptible(look) {
            if rem != 0 && !absolute {
                let left = deadline.saturating_sub(target.read().unwrap_or(deadline));
                let mut b = [0u8; 16];
                b[..8].copy_from_slice(&(left / 1_000_000_000).to_le_bytes());
                b[8..].copy_from_slice(&(left % 1_000_000_000).to_le_bytes());
                user::copy_in(rem, &b)?;
            }
            return Err(Errno::EINTR);
        }
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
