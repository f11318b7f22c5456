//! `poll(2)`, `ppoll(2)`, `select(2)`, `pselect6(2)`: readiness of any
//! descriptors. Files of the namespace, generated files and devices are
//! always ready; the console is ready to read (its reads wait themselves);
//! pipes, eventfds and timerfds report their state.
//!
//! A wait sleeps on the one readiness queue every pipe, eventfd and epoll
//! change wakes, until its time limit or the next expiry of a watched
//! timerfd (which wakes nobody), whichever comes first. A signal ends it
//! with `EINTR`.

use alloc::vec::Vec;

use crate::errno::Errno;
use crate::fd::{self, Object};
use crate::mm::user;
use crate::vfs::poll_bits::{
    POLLERR, POLLHUP, POLLIN, POLLNVAL, POLLOUT, POLLPRI, POLLRDNORM, POLLWRNORM,
};

/// The events an open description reports now.
fn events_of(o: &Object) -> u16 {
    o.poll(0)
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

/// Waits until `ready()` gives a non-zero count or the deadline (monotonic
/// ns; `None`: forever) passes; returns the last count, or `EINTR` when a
/// signal comes first. While asleep, `pending()` says (without taking
/// anything, unlike `ready()`) whether `ready()` would find something.
/// `expiry()` is the next time a watched object becomes ready without
/// waking the readiness queue (an armed timerfd): the sleep ends then too.
pub fn wait_ready(
    deadline: Option<u64>,
    expiry: &dyn Fn() -> Option<u64>,
    pending: &dyn Fn() -> bool,
    mut ready: impl FnMut() -> usize,
) -> Result<usize, Errno> {
    loop {
        let n = ready();
        if n > 0 {
            return Ok(n);
        }
        if deadline.is_some_and(|d| crate::time::monotonic_ns() >= d) {
            return Ok(0);
        }
        if crate::signal::has_interrupting() {
            return Err(Errno::EINTR);
        }
        let next = expiry();
        let until = match (deadline, next) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        // A timer armed (or re-armed) meanwhile changes the time to wake.
        crate::vfs::READINESS.wait_while_until(until, || {
            !pending() && !crate::signal::has_interrupting() && expiry() == next
        });
    }
}

/// Runs a wait under the signal mask at `mask_addr` (if not null; a
/// `sigset_t` of `size` bytes), as `ppoll`, `pselect6` and `epoll_pwait` do.
pub fn with_mask<T>(
    mask_addr: u64,
    size: u64,
    wait: impl FnOnce() -> Result<T, Errno>,
) -> Result<T, Errno> {
    if mask_addr == 0 {
        return wait();
    }
    if size != 8 {
        return Err(Errno::EINVAL);
    }
    let mask = u64::from_le_bytes(user::read_array::<8>(mask_addr)?);
    crate::signal::begin_wait_mask(mask);
    let r = wait();
    crate::signal::end_wait_mask(r.as_ref().err() == Some(&Errno::EINTR));
    r
}

/// Reads a `struct timespec` into a deadline; `None` for a null pointer.
pub fn timespec_deadline(addr: u64) -> Result<Option<u64>, Errno> {
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
    let b = &user::read_array::<16>(addr)?;
    let a = i64::from_le_bytes(b[..8].try_into().map_err(|_| Errno::EFAULT)?);
    let c = i64::from_le_bytes(b[8..].try_into().map_err(|_| Errno::EFAULT)?);
    Ok((a, c))
}

fn do_poll(fds_addr: u64, nfds: u64, deadline: Option<u64>) -> Result<u64, Errno> {
    // Linux: more entries than the program may have descriptors.
    if nfds > crate::process::rlimit(crate::process::RLIMIT_NOFILE).0 {
        return Err(Errno::EINVAL);
    }
    let raw = user::read_vec(fds_addr, nfds * 8)?;
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
    let expiry = || {
        watches
            .iter()
            .filter_map(|w| w.object.as_ref().and_then(Object::next_expiry))
            .min()
    };
    let n = wait_ready(deadline, &expiry, &|| count() > 0, count)?;
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

/// `ppoll(fds, nfds, timeout, sigmask, sigsetsize)`.
pub fn ppoll(a: &[u64; 6]) -> Result<u64, Errno> {
    let deadline = timespec_deadline(a[2])?;
    with_mask(a[3], a[4], || do_poll(a[0], a[1], deadline))
}

/// An `fd_set` of `nfds` bits (or none for a null pointer).
fn read_set(addr: u64, nfds: usize) -> Result<Option<Vec<u8>>, Errno> {
    if addr == 0 {
        return Ok(None);
    }
    Ok(Some(user::read_vec(addr, nfds.div_ceil(64) as u64 * 8)?))
}

fn bit(set: &[u8], i: usize) -> bool {
    set[i / 8] & (1 << (i % 8)) != 0
}

fn do_select(a: &[u64; 6], deadline: Option<u64>) -> Result<u64, Errno> {
    let nfds = a[0] as i32;
    if nfds < 0 {
        return Err(Errno::EINVAL);
    }
    // Linux looks no further than its descriptor table (`max_fds`).
    let nfds = (nfds as usize).min(fd::MAX_FDS);
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
    let expiry = || watched.iter().filter_map(|(_, o, _)| o.next_expiry()).min();
    let n = wait_ready(deadline, &expiry, &|| count() > 0, count)?;
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

/// `pselect6(nfds, readfds, writefds, exceptfds, timeout, sigmask)`:
/// `sigmask` points at (the mask's address, its size).
pub fn pselect6(a: &[u64; 6]) -> Result<u64, Errno> {
    let deadline = timespec_deadline(a[4])?;
    let (mask, size) = if a[5] == 0 { (0, 0) } else { read_pair(a[5])? };
    with_mask(mask as u64, size as u64, || do_select(a, deadline))
}
