//! `poll(2)`, `ppoll(2)`, `select(2)`, `pselect6(2)`: readiness of any
//! descriptors. Files of the namespace, generated files and devices are
//! always ready; the console is ready to read (its reads wait themselves);
//! pipes, eventfds and timerfds report their state.
//!
//! A wait with no time limit sleeps on the one readiness queue every pipe
//! and eventfd change wakes. A wait with a limit polls every millisecond
//! until then: the scheduler has no timed wait on a queue yet.

use alloc::vec::Vec;

use crate::errno::Errno;
use crate::fd::{self, File, Object};
use crate::mm::user;
use crate::vfs::poll_bits::{
    POLLERR, POLLHUP, POLLIN, POLLNVAL, POLLOUT, POLLPRI, POLLRDNORM, POLLWRNORM,
};

/// How often a wait with a time limit looks again.
const POLL_STEP_NS: u64 = 1_000_000;

/// The events an open description reports now.
fn events_of(o: &Object) -> u16 {
    let always = POLLIN | POLLRDNORM | POLLOUT | POLLWRNORM;
    match o {
        Object::File(f) => match &**f {
            File::Console { fd: 0 } => POLLIN | POLLRDNORM,
            File::Console { .. } => POLLOUT | POLLWRNORM,
            File::P9 { .. } => always,
        },
        Object::Synthetic(_) | Object::Device(_) => always,
        Object::PipeRead(p) => p.poll(),
        Object::PipeWrite(p) => p.poll(),
        Object::EventFd(e) => e.poll(),
        Object::TimerFd(t) => t.poll(),
        Object::Inotify(i) => i.poll(),
    }
}

/// One descriptor being watched.
struct Watch {
    /// A negative descriptor is skipped (revents 0).
    skip: bool,
    /// `None`: not open.
    object: Option<Object>,
    /// The events asked for.
    wanted: u16,
}

impl Watch {
    /// The events to report: those asked for, plus the ones always reported.
    fn revents(&self) -> u16 {
        match &self.object {
            _ if self.skip => 0,
            None => POLLNVAL,
            Some(o) => events_of(o) & (self.wanted | POLLERR | POLLHUP),
        }
    }
}

/// Whether `o` can become ready without anyone waking the readiness queue
/// (an armed timerfd expires by itself), so a wait must look again.
fn self_readying(o: &Object) -> bool {
    matches!(o, Object::TimerFd(t) if t.armed())
}

/// Waits until `ready()` gives a non-zero count or the deadline (monotonic
/// ns; `None`: forever) passes; returns the last count. While `timed()`,
/// a wait without a deadline also looks again every step.
fn wait_ready(
    deadline: Option<u64>,
    timed: &dyn Fn() -> bool,
    mut ready: impl FnMut() -> usize,
) -> usize {
    loop {
        let n = ready();
        if n > 0 {
            return n;
        }
        match deadline {
            None if timed() => crate::sched::sleep_ns(POLL_STEP_NS),
            None => crate::vfs::READINESS.wait_while(|| ready() == 0 && !timed()),
            Some(d) => {
                let now = crate::time::monotonic_ns();
                if now >= d {
                    return 0;
                }
                crate::sched::sleep_ns((d - now).min(POLL_STEP_NS));
            }
        }
    }
}

/// Reads a `struct timespec` into a deadline; `None` for a null pointer.
fn timespec_deadline(addr: u64) -> Result<Option<u64>, Errno> {
    if addr == 0 {
        return Ok(None);
    }
    let (sec, nsec) = read_pair(addr)?;
    if sec < 0 || !(0..1_000_000_000).contains(&nsec) {
        return Err(Errno::EINVAL);
    }
    let ns = (sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(nsec as u64);
    Ok(Some(crate::time::monotonic_ns().saturating_add(ns)))
}

/// Two `i64`s at `addr` (a timespec or timeval).
fn read_pair(addr: u64) -> Result<(i64, i64), Errno> {
    let b = user::slice(addr, 16)?;
    let a = i64::from_le_bytes(b[..8].try_into().map_err(|_| Errno::EFAULT)?);
    let c = i64::from_le_bytes(b[8..].try_into().map_err(|_| Errno::EFAULT)?);
    Ok((a, c))
}

fn do_poll(fds_addr: u64, nfds: u64, deadline: Option<u64>) -> Result<u64, Errno> {
    if nfds > fd::MAX_FDS as u64 {
        return Err(Errno::EINVAL);
    }
    let raw = user::slice(fds_addr, nfds * 8)?.to_vec();
    let watches: Vec<Watch> = raw
        .chunks_exact(8)
        .map(|p| {
            let fd = i32::from_le_bytes([p[0], p[1], p[2], p[3]]);
            Watch {
                skip: fd < 0,
                object: u64::try_from(fd).ok().and_then(|fd| fd::object(fd).ok()),
                wanted: u16::from_le_bytes([p[4], p[5]]),
            }
        })
        .collect();
    let count = || watches.iter().filter(|w| w.revents() != 0).count();
    let timed = || {
        watches
            .iter()
            .any(|w| w.object.as_ref().is_some_and(self_readying))
    };
    let n = wait_ready(deadline, &timed, count);
    let mut out = raw;
    for (i, w) in watches.iter().enumerate() {
        out[i * 8 + 6..i * 8 + 8].copy_from_slice(&w.revents().to_le_bytes());
    }
    user::copy_in(fds_addr, &out)?;
    Ok(n as u64)
}

/// `poll(fds, nfds, timeout_ms)`.
pub fn poll(a: &[u64; 6]) -> Result<u64, Errno> {
    let ms = a[2] as i32;
    let deadline = (ms >= 0).then(|| crate::time::monotonic_ns() + ms as u64 * 1_000_000);
    do_poll(a[0], a[1], deadline)
}

/// `ppoll(fds, nfds, timeout, sigmask, sigsetsize)`: the signal mask is
/// not applied yet.
pub fn ppoll(a: &[u64; 6]) -> Result<u64, Errno> {
    do_poll(a[0], a[1], timespec_deadline(a[2])?)
}

/// An `fd_set` of `nfds` bits (or none for a null pointer).
fn read_set(addr: u64, nfds: usize) -> Result<Option<Vec<u8>>, Errno> {
    if addr == 0 {
        return Ok(None);
    }
    Ok(Some(
        user::slice(addr, nfds.div_ceil(64) as u64 * 8)?.to_vec(),
    ))
}

fn bit(set: &[u8], i: usize) -> bool {
    set[i / 8] & (1 << (i % 8)) != 0
}

fn do_select(a: &[u64; 6], deadline: Option<u64>) -> Result<u64, Errno> {
    let nfds = a[0] as i32;
    if nfds < 0 || nfds as usize > fd::MAX_FDS {
        return Err(Errno::EINVAL);
    }
    let nfds = nfds as usize;
    let sets = [
        read_set(a[1], nfds)?,
        read_set(a[2], nfds)?,
        read_set(a[3], nfds)?,
    ];
    // (descriptor, its object, which sets it is in)
    let mut watched: Vec<(usize, Object, [bool; 3])> = Vec::new();
    for i in 0..nfds {
        let inset = [0, 1, 2].map(|k| sets[k].as_ref().is_some_and(|s| bit(s, i)));
        if inset.iter().any(|b| *b) {
            watched.push((i, fd::object(i as u64)?, inset));
        }
    }
    let result = || -> [Vec<usize>; 3] {
        let mut r = [Vec::new(), Vec::new(), Vec::new()];
        for (i, o, inset) in &watched {
            let ev = events_of(o);
            if inset[0] && ev & (POLLIN | POLLRDNORM | POLLHUP | POLLERR) != 0 {
                r[0].push(*i);
            }
            if inset[1] && ev & (POLLOUT | POLLWRNORM | POLLERR) != 0 {
                r[1].push(*i);
            }
            if inset[2] && ev & POLLPRI != 0 {
                r[2].push(*i);
            }
        }
        r
    };
    let count = || result().iter().map(Vec::len).sum::<usize>();
    let timed = || watched.iter().any(|(_, o, _)| self_readying(o));
    let n = wait_ready(deadline, &timed, count);
    let ready = result();
    for (k, addr) in [a[1], a[2], a[3]].into_iter().enumerate() {
        if let Some(set) = &sets[k] {
            let mut out = alloc::vec![0u8; set.len()];
            for &i in &ready[k] {
                out[i / 8] |= 1 << (i % 8);
            }
            user::copy_in(addr, &out)?;
        }
    }
    Ok(n as u64)
}

/// `select(nfds, readfds, writefds, exceptfds, timeout)`: the timeout is a
/// `struct timeval`, and is updated with the time left, as Linux does.
pub fn select(a: &[u64; 6]) -> Result<u64, Errno> {
    let deadline = if a[4] == 0 {
        None
    } else {
        let (sec, usec) = read_pair(a[4])?;
        if sec < 0 || !(0..1_000_000).contains(&usec) {
            return Err(Errno::EINVAL);
        }
        let ns = (sec as u64)
            .saturating_mul(1_000_000_000)
            .saturating_add(usec as u64 * 1000);
        Some(crate::time::monotonic_ns().saturating_add(ns))
    };
    let n = do_select(a, deadline)?;
    if let Some(d) = deadline {
        let left = d.saturating_sub(crate::time::monotonic_ns());
        let mut tv = [0u8; 16];
        tv[..8].copy_from_slice(&(left / 1_000_000_000).to_le_bytes());
        tv[8..].copy_from_slice(&((left % 1_000_000_000) / 1000).to_le_bytes());
        user::copy_in(a[4], &tv)?;
    }
    Ok(n)
}

/// `pselect6(nfds, readfds, writefds, exceptfds, timeout, sigmask)`: the
/// signal mask is not applied yet.
pub fn pselect6(a: &[u64; 6]) -> Result<u64, Errno> {
    do_select(a, timespec_deadline(a[4])?)
}
