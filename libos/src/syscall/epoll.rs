//! `epoll_create(2)`, `epoll_create1(2)`, `epoll_ctl(2)`, `epoll_wait(2)`,
//! `epoll_pwait(2)`, `epoll_pwait2(2)` (see `vfs::epoll`). Errors come in
//! Linux's order; a wait ends with `EINTR` for a signal and is never
//! restarted, as on Linux.

use alloc::sync::Arc;
use alloc::vec::Vec;

use super::poll::{wait_ready, with_mask};
use crate::errno::Errno;
use crate::fd::{self, O_CLOEXEC, Object};
use crate::mm::user;
use crate::vfs::epoll::{EPOLLEXCLUSIVE, EXCLUSIVE_OK, Epoll, Op};

const EPOLL_CTL_ADD: u64 = 1;
const EPOLL_CTL_DEL: u64 = 2;
const EPOLL_CTL_MOD: u64 = 3;
/// A `struct epoll_event` (packed on x86-64: `u32` events, `u64` data).
const EVENT_SIZE: u64 = 12;
/// Linux's `EP_MAX_EVENTS`.
const MAX_EVENTS: u64 = i32::MAX as u64 / EVENT_SIZE;

fn create(flags: u32) -> Result<u64, Errno> {
    fd::install_object(Object::Epoll(Epoll::new()), flags & O_CLOEXEC != 0)
}

/// `epoll_create(size)`: `size` only has to be positive.
pub fn epoll_create(a: &[u64; 6]) -> Result<u64, Errno> {
    if a[0] as i32 <= 0 {
        return Err(Errno::EINVAL);
    }
    create(0)
}

/// `epoll_create1(flags)`: `EPOLL_CLOEXEC` is the one flag.
pub fn epoll_create1(a: &[u64; 6]) -> Result<u64, Errno> {
    let flags = a[0] as u32;
    if flags & !O_CLOEXEC != 0 {
        return Err(Errno::EINVAL);
    }
    create(flags)
}

/// `epoll_ctl(epfd, op, fd, event)`.
pub fn epoll_ctl(a: &[u64; 6]) -> Result<u64, Errno> {
    let (epfd, op, fd) = (a[0] as i32, a[1] as i32 as i64 as u64, a[2] as i32);
    // Linux reads the event first for every operation but DEL.
    let (events, data) = if op == EPOLL_CTL_DEL {
        (0, 0)
    } else {
        let b = user::read_array::<{ EVENT_SIZE as usize }>(a[3])?;
        let events = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        let data = u64::from_le_bytes([b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11]]);
        (events, data)
    };
    let ep = u64::try_from(epfd)
        .map_err(|_| Errno::EBADF)
        .and_then(fd::object)?;
    let target = u64::try_from(fd)
        .map_err(|_| Errno::EBADF)
        .and_then(fd::object)?;
    ctl(&ep, &target, op, fd, events, data)
}

/// `epoll_ctl` once the objects are known (and the event read).
fn ctl(
    ep: &Object,
    target: &Object,
    op: u64,
    fd: i32,
    events: u32,
    data: u64,
) -> Result<u64, Errno> {
    if !target.epoll_watchable() {
        return Err(Errno::EPERM);
    }
    let Object::Epoll(ep) = ep else {
        return Err(Errno::EINVAL);
    };
    if target.key() == Arc::as_ptr(ep) as *const u8 as usize {
        return Err(Errno::EINVAL);
    }
    if op != EPOLL_CTL_DEL && events & EPOLLEXCLUSIVE != 0 {
        if op == EPOLL_CTL_MOD {
            return Err(Errno::EINVAL);
        }
        if op == EPOLL_CTL_ADD
            && (matches!(target, Object::Epoll(_)) || events & !EXCLUSIVE_OK != 0)
        {
            return Err(Errno::EINVAL);
        }
    }
    let op = match op {
        EPOLL_CTL_ADD => Op::Add,
        EPOLL_CTL_DEL => Op::Del,
        EPOLL_CTL_MOD => Op::Mod,
        _ => return Err(Errno::EINVAL),
    };
    ep.ctl(op, fd, target, events, data)?;
    Ok(0)
}

/// `epoll_ctl` in a direct call (see `syscall::direct`): the event read
/// from a page present now; `None` to trap (a bad descriptor or event, so
/// that the errors come in Linux's order from the trapped call).
pub fn ctl_direct(a: &[u64; 6]) -> Option<u64> {
    let (epfd, op, fd) = (a[0] as i32, a[1] as i32 as i64 as u64, a[2] as i32);
    let (events, data) = if op == EPOLL_CTL_DEL {
        (0, 0)
    } else {
        let mut b = [0u8; EVENT_SIZE as usize];
        let irq = crate::arch::cpu::irq_save();
        let ok = user::present_readable(a[3], EVENT_SIZE);
        if ok {
            // SAFETY: 12 bytes of present user memory (checked above,
            // interrupts off).
            unsafe { core::ptr::copy_nonoverlapping(a[3] as *const u8, b.as_mut_ptr(), b.len()) };
        }
        crate::arch::cpu::irq_restore(irq);
        if !ok {
            return None;
        }
        let events = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        let data = u64::from_le_bytes([b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11]]);
        (events, data)
    };
    let ep = fd::object(u64::try_from(epfd).ok()?).ok()?;
    let Ok(target) = u64::try_from(fd)
        .map_err(|_| Errno::EBADF)
        .and_then(fd::object)
    else {
        super::release(ep);
        return None;
    };
    let r = ctl(&ep, &target, op, fd, events, data);
    super::release(target);
    super::release(ep);
    Some(r.unwrap_or_else(super::errno_value))
}

/// The common part of the waits: checks, waits until `deadline`, writes
/// the events.
fn wait(epfd: u64, addr: u64, max: u64, deadline: Option<u64>) -> Result<u64, Errno> {
    // Linux 6.18's order: the descriptor, the count, the buffer, the kind.
    let object = u64::try_from(epfd as i32)
        .map_err(|_| Errno::EBADF)
        .and_then(fd::object)?;
    let max = max as i32;
    if max <= 0 || max as u64 > MAX_EVENTS {
        return Err(Errno::EINVAL);
    }
    user::check_range(addr, max as u64 * EVENT_SIZE)?;
    let Object::Epoll(ep) = object else {
        return Err(Errno::EINVAL);
    };
    // As many events as the buffer has whole, writable entries for before
    // a hole: Linux leaves the rest ready (and fails with EFAULT, after the
    // wait, when not even one fits).
    let room = user::writable_prefix(&[(addr, max as u64 * EVENT_SIZE)], max as u64 * EVENT_SIZE)
        / EVENT_SIZE;
    let mut got: Vec<(u32, u64)> = Vec::new();
    // Taking events fires edge-triggered and one-shot registrations: only
    // the look that returns takes them.
    let n = wait_ready(
        deadline,
        &|| ep.next_expiry(),
        &|| ep.count_ready() > 0,
        || {
            if room == 0 {
                return ep.count_ready();
            }
            got = ep.take(room as usize);
            got.len()
        },
    )?;
    if room == 0 && n > 0 {
        return Err(Errno::EFAULT);
    }
    let mut out = Vec::with_capacity(got.len() * EVENT_SIZE as usize);
    for (events, data) in &got {
        out.extend_from_slice(&events.to_le_bytes());
        out.extend_from_slice(&data.to_le_bytes());
    }
    user::copy_in(addr, &out)?;
    Ok(got.len() as u64)
}

/// `epoll_wait` (and `epoll_pwait` without a signal mask) in a direct call
/// (see `syscall::direct`): the events ready now, written to the present,
/// writable part of the buffer (fewer than ready if it is shorter; the
/// rest stay ready); `None` to trap when none is ready and the call would
/// wait, or on any error.
pub fn wait_direct(a: &[u64; 6], pwait: bool) -> Option<u64> {
    if pwait && a[4] != 0 {
        return None;
    }
    let (addr, max, timeout) = (a[1], a[2] as i32, a[3] as i32);
    if max <= 0 || max as u64 > MAX_EVENTS {
        return None;
    }
    let object = fd::object(u64::try_from(a[0] as i32).ok()?).ok()?;
    let r = match &object {
        Object::Epoll(ep) => {
            // Interrupts off from the check to the copy: the pages stay mapped.
            let irq = crate::arch::cpu::irq_save();
            let room = user::present_writable_prefix(addr, max as u64 * EVENT_SIZE) / EVENT_SIZE;
            let got = if room == 0 {
                None
            } else if ep.count_ready() == 0 {
                (timeout == 0).then(Vec::new)
            } else {
                Some(ep.take(room as usize))
            };
            let r = match got {
                Some(got) if !got.is_empty() || timeout == 0 => {
                    for (i, (events, data)) in got.iter().enumerate() {
                        let at = addr + i as u64 * EVENT_SIZE;
                        // SAFETY: event `i` < `room` lies in the present,
                        // writable prefix checked above (interrupts off).
                        unsafe {
                            core::ptr::write_unaligned(at as *mut u32, *events);
                            core::ptr::write_unaligned((at + 4) as *mut u64, *data);
                        }
                    }
                    Some(got.len() as u64)
                }
                _ => None,
            };
            crate::arch::cpu::irq_restore(irq);
            r
        }
        _ => None,
    };
    super::release(object);
    r
}

/// A timeout in milliseconds as a deadline: negative waits forever.
fn ms_deadline(ms: u64) -> Option<u64> {
    let ms = ms as i32;
    (ms >= 0).then(|| crate::time::monotonic_ns().saturating_add(ms as u64 * 1_000_000))
}

/// `epoll_wait(epfd, events, maxevents, timeout_ms)`.
pub fn epoll_wait(a: &[u64; 6]) -> Result<u64, Errno> {
    wait(a[0], a[1], a[2], ms_deadline(a[3]))
}

/// `epoll_pwait(epfd, events, maxevents, timeout_ms, sigmask, sigsetsize)`:
/// waits under `sigmask`.
pub fn epoll_pwait(a: &[u64; 6]) -> Result<u64, Errno> {
    let deadline = ms_deadline(a[3]);
    with_mask(a[4], a[5], || wait(a[0], a[1], a[2], deadline))
}

/// `epoll_pwait2(epfd, events, maxevents, timeout, sigmask, sigsetsize)`:
/// the timeout is a `struct timespec` (null: forever).
pub fn epoll_pwait2(a: &[u64; 6]) -> Result<u64, Errno> {
    let deadline = super::poll::timespec_deadline(a[3])?;
    with_mask(a[4], a[5], || wait(a[0], a[1], a[2], deadline))
}
