//! `timer_create(2)`, `timer_settime(2)`, `timer_gettime(2)`,
//! `timer_getoverrun(2)`, `timer_delete(2)`, `setitimer(2)`,
//! `getitimer(2)`, `alarm(2)`: timers that signal (see `timers`).

use crate::clock::{Clock, CpuTarget};
use crate::errno::Errno;
use crate::mm::user;
use crate::timers::{self, Base, ITIMER_BASE, Notify};

const NS: u64 = 1_000_000_000;
const SIGALRM: u32 = 14;
const SIGVTALRM: u32 = 26;
const SIGPROF: u32 = 27;
const SIGEV_SIGNAL: u32 = 0;
const SIGEV_NONE: u32 = 1;
/// glibc makes a thread for it; given to the kernel as is, it signals.
const SIGEV_THREAD: u32 = 2;
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

/// `timer_create(clockid, sevp, timerid)`, checked in Linux's order: the
/// `sigevent`'s copy, the clock, the notification, the id's copy, then
/// what the clock itself refuses (alarm clocks, other processes' CPU
/// time).
pub fn timer_create(a: &[u64; 6]) -> Result<u64, Errno> {
    let ev = (a[1] != 0)
        .then(|| user::read_array::<64>(a[1]))
        .transpose()?;
    let clock = Clock::of(a[0])?;
    if matches!(clock, Clock::Raw | Clock::Coarse | Clock::Dynamic) {
        return Err(Errno::EOPNOTSUPP);
    }
    let (notify, value) = match &ev {
        None => (Notify::Process(SIGALRM), None),
        Some(ev) => {
            let value = u64::from_le_bytes(ev[..8].try_into().map_err(|_| Errno::EFAULT)?);
            let signo = u32::from_le_bytes([ev[8], ev[9], ev[10], ev[11]]);
            let how = u32::from_le_bytes([ev[12], ev[13], ev[14], ev[15]]);
            let tid = u32::from_le_bytes([ev[16], ev[17], ev[18], ev[19]]) as u64;
            let valid = (1..=64).contains(&signo);
            let notify = match how {
                SIGEV_NONE => Notify::None,
                SIGEV_SIGNAL | SIGEV_THREAD if valid => Notify::Process(signo),
                SIGEV_THREAD_ID if valid => {
                    crate::process::thread(tid).ok_or(Errno::EINVAL)?;
                    Notify::Thread(signo, tid)
                }
                _ => return Err(Errno::EINVAL),
            };
            (notify, Some(value))
        }
    };
    let base = match clock {
        Clock::Cpu(c) => c.target().map(Base::Cpu),
        Clock::Alarm(_) if !clock.present() => Err(Errno::EOPNOTSUPP),
        // Alarm clocks need CAP_WAKE_ALARM.
        Clock::Alarm(_) => Err(Errno::EPERM),
        c if c.wall() => Ok(Base::Wall),
        _ => Ok(Base::Monotonic),
    };
    // The id reaches the program before the timer exists for it.
    let id = timers::create(notify, base.unwrap_or(Base::Monotonic), value)?;
    let made = user::copy_in(a[2], &(id as i32).to_le_bytes()).and(base);
    if let Err(e) = made {
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
    Ok(ktime(sec, nsec))
}

/// Seconds and ns as Linux's `ktime_t`, which saturates at `KTIME_MAX`
/// (about 292 years): a time beyond reads back as that.
pub fn ktime(sec: i64, nsec: i64) -> u64 {
    (sec as u64)
        .saturating_mul(NS)
        .saturating_add(nsec as u64)
        .min(i64::MAX as u64)
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
    if a[2] == 0 {
        return Err(Errno::EINVAL);
    }
    let id = timer_id(a[0])?;
    let b = &user::read_array::<32>(a[2])?;
    let interval = timespec(b, 0)?;
    let value = timespec(b, 16)?;
    let base = timers::base(id)?;
    let deadline = if value == 0 {
        0
    } else if a[1] & TIMER_ABSTIME != 0 {
        // An absolute time on the timer's clock: the wall clock's is moved
        // onto the monotonic one (which the timers run on).
        let target = if base == Base::Wall {
            let now = crate::time::monotonic_ns();
            now.saturating_add(value.saturating_sub(crate::time::realtime_ns()))
        } else {
            value
        };
        target.max(1)
    } else {
        // A thread gone: its clock stands still.
        base.now().unwrap_or(0).saturating_add(value)
    };
    if a[3] != 0 {
        timers::read_before_set(id);
    }
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

/// `setitimer`'s timer `which`: (id, signal, base): `ITIMER_REAL` on the
/// clock, `ITIMER_VIRTUAL` on the process's user time, `ITIMER_PROF` on
/// its user and system time.
fn itimer(which: u64) -> Result<(i64, u32, Base), Errno> {
    let cpu = |user_only| Base::Cpu(CpuTarget::Process { user_only });
    match which as u32 {
        0 => Ok((ITIMER_BASE, SIGALRM, Base::Monotonic)),
        1 => Ok((ITIMER_BASE + 1, SIGVTALRM, cpu(true))),
        2 => Ok((ITIMER_BASE + 2, SIGPROF, cpu(false))),
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
    let (id, sig, base) = itimer(a[0])?;
    let (value, interval) = if a[1] == 0 {
        (0, 0)
    } else {
        let b = &user::read_array::<32>(a[1])?;
        (timeval(b, 16)?, timeval(b, 0)?)
    };
    let deadline = match base {
        _ if value == 0 => 0,
        // Linux adds a tick to a CPU-time itimer's first expiry
        // (`set_cpu_itimer`), which its remaining time then shows.
        Base::Cpu(_) => base
            .now()
            .unwrap_or(0)
            .saturating_add(value)
            .saturating_add(crate::time::coarse_res_ns()),
        _ => crate::time::monotonic_ns().saturating_add(value),
    };
    let notify = match base {
        Base::Cpu(_) => Notify::Running(sig),
        _ => Notify::Process(sig),
    };
    let old = timers::set(id, deadline, interval, Some((notify, base)))?;
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
    let (id, _, _) = itimer(a[0])?;
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
    let (left, _) = timers::set(
        ITIMER_BASE,
        deadline,
        0,
        Some((Notify::Process(SIGALRM), Base::Monotonic)),
    )?;
    if left == 0 {
        return Ok(0);
    }
    Ok(((left + NS / 2) / NS).max(1))
}
