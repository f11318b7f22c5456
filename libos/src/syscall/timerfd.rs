//! `timerfd_create(2)`, `timerfd_settime(2)`, `timerfd_gettime(2)`: timers
//! read as descriptors (see `vfs::timerfd`).

use alloc::sync::Arc;

use crate::errno::Errno;
use crate::fd::{self, O_CLOEXEC, O_NONBLOCK, Object};
use crate::mm::user;
use crate::vfs::timerfd::TimerFd;

const CLOCK_REALTIME: u64 = 0;
const CLOCK_MONOTONIC: u64 = 1;
const CLOCK_BOOTTIME: u64 = 7;
const CLOCK_REALTIME_ALARM: u64 = 8;
const CLOCK_BOOTTIME_ALARM: u64 = 9;
const TFD_TIMER_ABSTIME: u64 = 1;
const TFD_TIMER_CANCEL_ON_SET: u64 = 2;
const NS: u64 = 1_000_000_000;

/// `timerfd_create(clockid, flags)`.
pub fn timerfd_create(a: &[u64; 6]) -> Result<u64, Errno> {
    let (clock, flags) = (a[0] as u32 as u64, a[1] as u32);
    if flags & !(O_CLOEXEC | O_NONBLOCK) != 0 {
        return Err(Errno::EINVAL);
    }
    let realtime = match clock {
        CLOCK_REALTIME => true,
        CLOCK_MONOTONIC | CLOCK_BOOTTIME => false,
        // Alarm clocks need CAP_WAKE_ALARM.
        CLOCK_REALTIME_ALARM | CLOCK_BOOTTIME_ALARM => return Err(Errno::EPERM),
        _ => return Err(Errno::EINVAL),
    };
    let t = TimerFd::new(realtime, flags & O_NONBLOCK);
    fd::install_object(Object::Like(Arc::new(t)), flags & O_CLOEXEC != 0)
}

/// The timerfd open as `fd` (`EINVAL` for another kind of file).
fn timer(fd: u64) -> Result<Object, Errno> {
    let o = fd::object(fd)?;
    if o.like::<TimerFd>().is_none() {
        return Err(Errno::EINVAL);
    }
    Ok(o)
}

/// A `struct timespec` in nanoseconds; `EINVAL` if not normalized.
fn timespec(b: &[u8]) -> Result<u64, Errno> {
    let sec = i64::from_le_bytes(b[..8].try_into().map_err(|_| Errno::EFAULT)?);
    let nsec = i64::from_le_bytes(b[8..16].try_into().map_err(|_| Errno::EFAULT)?);
    if sec < 0 || !(0..NS as i64).contains(&nsec) {
        return Err(Errno::EINVAL);
    }
    Ok(super::timer::ktime(sec, nsec))
}

/// Writes a `struct itimerspec` (interval, value) at `addr`.
fn put_itimerspec(addr: u64, (value, interval): (u64, u64)) -> Result<(), Errno> {
    let mut b = [0u8; 32];
    for (i, ns) in [interval, value].into_iter().enumerate() {
        b[i * 16..i * 16 + 8].copy_from_slice(&(ns / NS).to_le_bytes());
        b[i * 16 + 8..i * 16 + 16].copy_from_slice(&(ns % NS).to_le_bytes());
    }
    user::copy_in(addr, &b)
}

/// `timerfd_settime(fd, flags, new_value, old_value)`.
/// Checked in Linux's order: the new time's copy, the flags and times,
/// then the descriptor.
pub fn timerfd_settime(a: &[u64; 6]) -> Result<u64, Errno> {
    let b = &user::read_array::<32>(a[2])?;
    let flags = a[1] as u32 as u64;
    if flags & !(TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET) != 0 {
        return Err(Errno::EINVAL);
    }
    let interval = timespec(&b[..16])?;
    let value = timespec(&b[16..])?;
    let o = timer(a[0])?;
    let t = o.like::<TimerFd>().ok_or(Errno::EINVAL)?;
    let old = t.set(value, interval, flags & TFD_TIMER_ABSTIME != 0);
    if a[3] != 0 {
        put_itimerspec(a[3], old)?;
    }
    Ok(0)
}

/// `timerfd_gettime(fd, curr_value)`.
pub fn timerfd_gettime(a: &[u64; 6]) -> Result<u64, Errno> {
    let o = timer(a[0])?;
    let t = o.like::<TimerFd>().ok_or(Errno::EINVAL)?;
    put_itimerspec(a[1], t.get())?;
    Ok(0)
}
