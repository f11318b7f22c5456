//! `pause(2)`, `rt_sigsuspend(2)`, `rt_sigtimedwait(2)`: waiting for a
//! signal. HotSpot's suspend/resume (JFR's thread sampler, safepoint
//! handshakes on some paths) parks the sampled thread in its signal handler
//! with `sigsuspend` until the sampler resumes it.

use core::sync::atomic::Ordering;

use crate::errno::Errno;
use crate::mm::user;
use crate::sched::WaitQueue;

/// Threads in `rt_sigtimedwait`: a sent signal wakes its target thread
/// whatever it waits on, so nothing else is woken through this queue.
static SIGWAIT: WaitQueue = WaitQueue::new();

/// A `sigset_t` of `size` bytes (8, as the kernel's) at `addr`.
fn sigset(addr: u64, size: u64) -> Result<u64, Errno> {
    if size != 8 {
        return Err(Errno::EINVAL);
    }
    Ok(u64::from_le_bytes(user::read_array::<8>(addr)?))
}

/// Sleeps until a signal the thread takes (handled or fatal) arrives;
/// always `EINTR`, never restarted (Linux's `ERESTARTNOHAND` after a
/// handler).
fn wait_for_signal() -> Errno {
    while crate::sched::sleep_until_interruptible(u64::MAX) {}
    Errno::EINTR
}

/// `pause()`.
pub fn pause(_: &[u64; 6]) -> Result<u64, Errno> {
    Err(wait_for_signal())
}

/// `rt_sigsuspend(mask, size)`: waits under `mask` for a signal; its handler
/// runs under `mask` too, and the mask from before comes back when it
/// returns (the frame saves it).
pub fn rt_sigsuspend(a: &[u64; 6]) -> Result<u64, Errno> {
    let mask = sigset(a[0], a[1])?;
    crate::signal::begin_wait_mask(mask);
    let e = wait_for_signal();
    crate::signal::end_wait_mask(true);
    Err(e)
}

/// `rt_sigtimedwait(set, info, timeout, size)`: takes a pending signal of
/// `set` (waiting for one up to `timeout`, `EAGAIN` after it) without
/// running its handler; returns its number and writes its `siginfo`. A
/// signal outside `set` that the thread takes ends the wait with `EINTR`.
pub fn rt_sigtimedwait(a: &[u64; 6]) -> Result<u64, Errno> {
    const UNBLOCKABLE: u64 = (1 << (9 - 1)) | (1 << (19 - 1));
    let set = sigset(a[0], a[3])? & !UNBLOCKABLE;
    let deadline = super::poll::timespec_deadline(a[2])?;
    if let Some(info) = (a[1] != 0).then_some(a[1]) {
        user::check_range(info, 128)?;
    }
    // As Linux's do_sigtimedwait, the set is unblocked while the thread
    // waits, so a signal sent to the process (which goes to a thread that
    // does not block it) finds this one; the mask comes back before the
    // call returns, so a signal taken here never runs a handler.
    let me = crate::sched::current();
    let old = me.user.sigmask.fetch_and(!set, Ordering::Relaxed);
    let r = wait_taking(set, deadline);
    me.user.sigmask.store(old, Ordering::Relaxed);
    let (sig, info) = r?;
    if a[1] != 0 {
        user::copy_in(a[1], &info)?;
    }
    Ok(u64::from(sig))
}

/// Takes a pending signal of `set`, waiting up to `deadline` for one.
fn wait_taking(set: u64, deadline: Option<u64>) -> Result<(u32, crate::signal::SigInfo), Errno> {
    loop {
        if let Some(taken) = crate::signal::take_pending(set) {
            return Ok(taken);
        }
        let timed_out = SIGWAIT
            .wait_while_interruptible_until(deadline, || !crate::signal::pending_in(set))
            .map_err(|_| Errno::EINTR)?;
        if timed_out {
            return Err(Errno::EAGAIN);
        }
    }
}
