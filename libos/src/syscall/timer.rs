//! `timer_create(2)`, `timer_settime(2)`, `timer_gettime(2)`,
//! `timer_getoverrun(2)`, `timer_delete(2)`, `setitimer(2)`,
//! `getitimer(2)`, `alarm(2)`: timers that signal (see `timers`).

use crate::errno::Errno;
use crate::mm::user;
use crate::timers::{self, ITIMER_BASE, Notify};

const NS: u64 = 1_000_000_000;
const SIGALRM: u32 = 14;
const SIGVTALRM: u32 = 26;
const SIGPROF: u32 = 27;
const SIGEV_SIGNAL: u32 = 0;
const SIGEV_NONE: u32 = 1;
const SIGEV_THREAD_ID: u32 = 4;
const TIMER_ABSTIME: u64 = 1;

fn word(b: &[u8], at: usize) -> Result<i64, Errno> {
    Ok(i64::from_le_bytes(
        b.get(at..at + 8)
            .ok_or(Errno::EFAULT)?
            .try_into()
            .map_err(|_| Errno::EFAULT)?,
    ))
}

/// Whether `clock` may drive a timer, and whether it is the wall clock.
fn clock_kind(clock: u64) -> Result<bool, Errno> {
    match clock as u32 as i32 {
        // REALTIME, TAI
        0 | 11 => Ok(true),
        // MONOTONIC, PROCESS_CPUTIME, THREAD_CPUTIME (elapsed time stands
        // for CPU time), BOOTTIME
        1 | 2 | 3 | 7 => Ok(false),
        // The alarm clocks need CAP_WAKE_ALARM.
        8 | 9 => Err(Errno::EPERM),
        _ => Err(Errno::EINVAL),
    }
}

/// `timer_create(clockid, sevp, timerid)`.
pub fn timer_create(a: &[u64; 6]) -> Result<u64, Errno> {
    let wall = clock_kind(a[0])?;
    let value = (a[1] != 0)
        .then(|| user::read_array::<8>(a[1]).map(u64::from_le_bytes))
        .transpose()?;
    let notify = if a[1] == 0 {
        Notify::Process(SIGALRM)
    } else {
        let ev = &user::read_array::<64>(a[1])?;
        let signo = u32::from_le_bytes([ev[8], ev[9], ev[10], ev[11]]);
        let how = u32::from_le_bytes([ev[12], ev[13], ev[14], ev[15]]);
        let tid = u32::from_le_bytes([ev[16], ev[17], ev[18], ev[19]]) as u64;
        let valid = (1..=64).contains(&signo);
        match how {
            SIGEV_NONE => Notify::None,
            SIGEV_SIGNAL if valid => Notify::Process(signo),
            SIGEV_THREAD_ID if valid => {
                crate::process::thread(tid).ok_or(Errno::EINVAL)?;
                Notify::Thread(signo, tid)
            }
            _ => return Err(Errno::EINVAL),
        }
    };
    // The id reaches the program before the timer exists for it.
    let id = timers::create(notify, wall, value)?;
    if let Err(e) = user::copy_in(a[2], &(id as i32).to_le_bytes()) {
        let _ = timers::delete(id);
        return Err(e);
    }
    Ok(0)
}

fn timer_id(v: u64) -> Result<i64, Errno> {
    let id = v as i32 as i64;
    if id < 0 {
        return Err(Errno::EINVAL);
    }
    Ok(id)
}

/// A `struct timespec` in ns; `EINVAL` unless normalized.
fn timespec(b: &[u8], at: usize) -> Result<u64, Errno> {
    let (sec, nsec) = (word(b, at)?, word(b, at + 8)?);
    if sec < 0 || !(0..NS as i64).contains(&nsec) {
        return Err(Errno::EINVAL);
    }
    Ok((sec as u64).saturating_mul(NS).saturating_add(nsec as u64))
}

fn put_pair(addr: u64, (value, interval): (u64, u64), unit: u64) -> Result<(), Errno> {
    let mut b = [0u8; 32];
    for (i, ns) in [interval, value].into_iter().enumerate() {
        b[i * 16..i * 16 + 8].copy_from_slice(&(ns / NS).to_le_bytes());
        b[i * 16 + 8..i * 16 + 16].copy_from_slice(&((ns % NS) / unit).to_le_bytes());
    }
    user::copy_in(addr, &b)
}

/// `timer_settime(timerid, flags, new_value, old_value)`.
pub fn timer_settime(a: &[u64; 6]) -> Result<u64, Errno> {
    let id = timer_id(a[0])?;
    let b = &user::read_array::<32>(a[2])?;
    let interval = timespec(b, 0)?;
    let value = timespec(b, 16)?;
    timers::get(id)?;
    let deadline = if value == 0 {
        0
    } else if a[1] & TIMER_ABSTIME != 0 {
        // An absolute time on the timer's clock: the wall clock's is moved
        // onto the monotonic one (which the timers run on).
        let target = if timers::wall(id) {
            let now = crate::time::monotonic_ns();
            now.saturating_add(value.saturating_sub(crate::time::realtime_ns()))
        } else {
            value
        };
        target.max(1)
    } else {
        crate::time::monotonic_ns().saturating_add(value)
    };
    let old = timers::set(id, deadline, interval, None)?;
    if a[3] != 0 {
        put_pair(a[3], old, 1)?;
    }
    Ok(0)
}

/// `timer_gettime(timerid, curr_value)`.
pub fn timer_gettime(a: &[u64; 6]) -> Result<u64, Errno> {
    let cur = timers::get(timer_id(a[0])?)?;
    put_pair(a[1], cur, 1)?;
    Ok(0)
}

/// `timer_getoverrun(timerid)`.
pub fn timer_getoverrun(a: &[u64; 6]) -> Result<u64, Errno> {
    timers::overrun(timer_id(a[0])?).map(u64::from)
}

/// `timer_delete(timerid)`.
pub fn timer_delete(a: &[u64; 6]) -> Result<u64, Errno> {
    timers::delete(timer_id(a[0])?).map(|_| 0)
}

/// `setitimer`'s timer `which`: (id, signal).
fn itimer(which: u64) -> Result<(i64, u32), Errno> {
    match which as u32 {
        0 => Ok((ITIMER_BASE, SIGALRM)),
        1 => Ok((ITIMER_BASE + 1, SIGVTALRM)),
        2 => Ok((ITIMER_BASE + 2, SIGPROF)),
        _ => Err(Errno::EINVAL),
    }
}

/// A `struct timeval` in ns; `EINVAL` unless normalized.
fn timeval(b: &[u8], at: usize) -> Result<u64, Errno> {
    let (sec, usec) = (word(b, at)?, word(b, at + 8)?);
    if sec < 0 || !(0..1_000_000).contains(&usec) {
        return Err(Errno::EINVAL);
    }
    Ok((sec as u64)
        .saturating_mul(NS)
        .saturating_add(usec as u64 * 1000))
}

/// `setitimer(which, new_value, old_value)`.
pub fn setitimer(a: &[u64; 6]) -> Result<u64, Errno> {
    let (id, sig) = itimer(a[0])?;
    let (value, interval) = if a[1] == 0 {
        (0, 0)
    } else {
        let b = &user::read_array::<32>(a[1])?;
        (timeval(b, 16)?, timeval(b, 0)?)
    };
    let deadline = if value == 0 {
        0
    } else {
        crate::time::monotonic_ns().saturating_add(value)
    };
    let old = timers::set(id, deadline, interval, Some(Notify::Process(sig)))?;
    if a[2] != 0 {
        put_itimerval(a[2], old)?;
    }
    Ok(0)
}

/// Writes a `struct itimerval`, rounding a remaining fraction of a
/// microsecond up (a running timer never reads as 0).
fn put_itimerval(addr: u64, (value, interval): (u64, u64)) -> Result<(), Errno> {
    let us = |ns: u64| ns.div_ceil(1000);
    let mut b = [0u8; 32];
    for (i, ns) in [interval, value].into_iter().enumerate() {
        let t = us(ns);
        b[i * 16..i * 16 + 8].copy_from_slice(&(t / 1_000_000).to_le_bytes());
        b[i * 16 + 8..i * 16 + 16].copy_from_slice(&(t % 1_000_000).to_le_bytes());
    }
    user::copy_in(addr, &b)
}

/// `getitimer(which, curr_value)`.
pub fn getitimer(a: &[u64; 6]) -> Result<u64, Errno> {
    let (id, _) = itimer(a[0])?;
    put_itimerval(a[1], timers::get(id)?)?;
    Ok(0)
}

/// `alarm(seconds)`: the seconds the previous alarm had left (rounded to
/// the nearest, at least 1 if it was set).
pub fn alarm(a: &[u64; 6]) -> Result<u64, Errno> {
    let secs = a[0] as u32 as u64;
    let deadline = if secs == 0 {
        0
    } else {
        crate::time::monotonic_ns().saturating_add(secs * NS)
    };
    let (left, _) = timers::set(ITIMER_BASE, deadline, 0, Some(Notify::Process(SIGALRM)))?;
    if left == 0 {
        return Ok(0);
    }
    Ok(((left + NS / 2) / NS).max(1))
}
