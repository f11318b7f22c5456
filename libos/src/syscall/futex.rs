//! `futex(2)`: threads wait on a 32-bit word of the program's memory until
//! another thread wakes them or a deadline passes. One process, so private
//! and shared futexes are the same: the key is the word's address.

use alloc::collections::{BTreeMap, VecDeque};
use alloc::sync::Arc;
use core::sync::atomic::{AtomicU64, Ordering};

use crate::arch::cpu;
use crate::errno::Errno;
use crate::mm::user;
use crate::sched::{self, ThreadRef};
use crate::sync::IrqLock;

use super::sleep::timespec_ns;

const FUTEX_WAIT: u64 = 0;
const FUTEX_WAKE: u64 = 1;
const FUTEX_REQUEUE: u64 = 3;
const FUTEX_CMP_REQUEUE: u64 = 4;
const FUTEX_WAKE_OP: u64 = 5;
const FUTEX_WAIT_BITSET: u64 = 9;
const FUTEX_WAKE_BITSET: u64 = 10;
const FUTEX_LOCK_PI: u64 = 6;
const FUTEX_UNLOCK_PI: u64 = 7;
const FUTEX_TRYLOCK_PI: u64 = 8;
const FUTEX_LOCK_PI2: u64 = 13;
const FUTEX_WAIT_REQUEUE_PI: u64 = 11;
const FUTEX_PRIVATE_FLAG: u64 = 128;
const FUTEX_CLOCK_REALTIME: u64 = 256;
const FUTEX_CMD_MASK: u64 = 0x7f;
const BITSET_ANY: u32 = u32::MAX;

struct Waiter {
    thread: ThreadRef,
    bitset: u32,
    /// The word it waits on: `FUTEX_REQUEUE` moves it (under `WAITERS`).
    key: AtomicU64,
    /// When it began to wait (monotonic ns).
    since: u64,
}

/// A waiter woken after waiting this long runs ahead of the ready threads
/// (`sched::make_ready_first`), as Linux's scheduler favours a task that
/// slept over those that kept the CPU. Without it, threads woken one at a
/// time to take a contended lock (glibc's `lll_lock`) queue behind threads
/// that barge in and take it again, and under thread churn thousands of
/// exiting Java threads were left waiting for it (the host: none).
const LONG_WAIT_NS: u64 = 1_000_000;

/// Waiters by word address, in arrival order.
static WAITERS: IrqLock<BTreeMap<u64, VecDeque<Arc<Waiter>>>> = IrqLock::new(BTreeMap::new());

fn read_word(addr: u64) -> Result<u32, Errno> {
    if !addr.is_multiple_of(4) {
        return Err(Errno::EINVAL);
    }
    let w = &user::read_array::<4>(addr)?;
    Ok(u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
}

/// Waits while the word at `addr` holds `val`, until woken or until the
/// monotonic clock reaches `deadline`.
pub fn wait(addr: u64, val: u32, bitset: u32, deadline: Option<u64>) -> Result<u64, Errno> {
    if bitset == 0 {
        return Err(Errno::EINVAL);
    }
    // Fault the word in before interrupts go off.
    read_word(addr)?;
    loop {
        let irq = cpu::irq_save();
        // With interrupts off nothing else runs on this CPU: the check and
        // the enqueue are atomic with respect to wakers.
        let word = read_word(addr);
        if word != Ok(val) {
            cpu::irq_restore(irq);
            return Err(word.err().unwrap_or(Errno::EAGAIN));
        }
        // A signal already pending ends the wait before it starts (Linux
        // checks before it sleeps): a direct wait declines when it sees one,
        // and so does one that a signal woke, and both come here.
        let woken = if crate::signal::has_interrupting()
            || deadline.is_some_and(|d| d <= crate::time::monotonic_ns())
        {
            false
        } else {
            sleep(addr, bitset, deadline, sched::block)
        };
        cpu::irq_restore(irq);
        if woken {
            return Ok(0);
        }
        if crate::signal::has_deliverable() {
            // As Linux: a wait without a time limit restarts under
            // SA_RESTART; one with a limit fails with EINTR.
            return Err(if deadline.is_none() {
                Errno::ERESTARTSYS
            } else {
                Errno::EINTR
            });
        }
        if deadline.is_some_and(|d| d <= crate::time::monotonic_ns()) {
            return Err(Errno::ETIMEDOUT);
        }
        // Neither a wake, a signal nor the time limit: a wake-up meant for
        // something else (a wait queue the thread left early, a timer
        // cancelled too late). Linux waits again; so does this.
    }
}

/// Queues the current thread on `addr` (interrupts off, the word checked),
/// with a scheduler timer for `deadline`, and leaves the CPU by `block`
/// until a wake, the timer or a signal; returns whether a wake did it.
/// Either way the thread is off the queue and the timer when it returns.
pub(super) fn sleep(addr: u64, bitset: u32, deadline: Option<u64>, block: impl FnOnce()) -> bool {
    let me = Arc::new(Waiter {
        thread: sched::current(),
        bitset,
        key: AtomicU64::new(addr),
        since: crate::time::monotonic_ns(),
    });
    WAITERS
        .lock()
        .entry(addr)
        .or_default()
        .push_back(me.clone());
    let timer = deadline.map(|d| sched::add_timer(d, me.thread.clone()));
    block();
    if let Some(k) = timer {
        sched::cancel_timer(k);
    }
    // A waker takes the waiter off its queue under `WAITERS`: if it is no
    // longer queued, a wake counted it, whatever else woke the thread first
    // (its timer, a signal). Linux returns 0 then too.
    !remove(&me)
}

/// Whether a thread waits on `addr`.
pub(super) fn waiting(addr: u64) -> bool {
    WAITERS.lock().get(&addr).is_some_and(|q| !q.is_empty())
}

/// Takes the first waiter off `addr`'s queue (a PI futex's hand-over:
/// the caller makes it ready).
pub(super) fn take_first(addr: u64) -> Option<ThreadRef> {
    let mut all = WAITERS.lock();
    let q = all.get_mut(&addr)?;
    let w = q.pop_front();
    if q.is_empty() {
        all.remove(&addr);
    }
    w.map(|w| w.thread.clone())
}

/// Takes `w` off the queue it is on; whether it was still queued.
fn remove(w: &Arc<Waiter>) -> bool {
    let mut all = WAITERS.lock();
    let addr = w.key.load(Ordering::Relaxed);
    let Some(q) = all.get_mut(&addr) else {
        return false;
    };
    let before = q.len();
    q.retain(|x| !Arc::ptr_eq(x, w));
    let found = q.len() != before;
    if q.is_empty() {
        all.remove(&addr);
    }
    found
}

/// Wakes up to `n` waiters on `addr` whose bitset meets `bitset`.
pub fn wake(addr: u64, n: u32, bitset: u32) -> u64 {
    let mut woken = alloc::vec::Vec::new();
    {
        let mut all = WAITERS.lock();
        if let Some(q) = all.get_mut(&addr) {
            q.retain(|w| {
                if woken.len() < n as usize && w.bitset & bitset != 0 {
                    woken.push(w.clone());
                    false
                } else {
                    true
                }
            });
            if q.is_empty() {
                all.remove(&addr);
            }
        }
    }
    let now = crate::time::monotonic_ns();
    for w in &woken {
        if now.saturating_sub(w.since) >= LONG_WAIT_NS {
            sched::make_ready_first(w.thread.clone());
        } else {
            sched::make_ready(w.thread.clone());
        }
    }
    woken.len() as u64
}

/// Wakes `n` waiters on `from` and moves up to `m` others to wait on `to`.
fn requeue(from: u64, n: u32, to: u64, m: u32) -> u64 {
    // One step for waiters: none leaves `from` between the wake and the move.
    let irq = cpu::irq_save();
    let woke = wake(from, n, BITSET_ANY);
    let mut all = WAITERS.lock();
    let mut moved = alloc::vec::Vec::new();
    if let Some(q) = all.get_mut(&from) {
        while moved.len() < m as usize {
            match q.pop_front() {
                Some(w) => moved.push(w),
                None => break,
            }
        }
        if q.is_empty() {
            all.remove(&from);
        }
    }
    let count = moved.len() as u64;
    for w in &moved {
        w.key.store(to, Ordering::Relaxed);
    }
    all.entry(to).or_default().extend(moved);
    drop(all);
    cpu::irq_restore(irq);
    woke + count
}

/// `FUTEX_WAKE_OP`: changes the word at `addr2`, wakes on `addr`, and on
/// `addr2` too if the old value passes the comparison. As Linux's
/// `futex_atomic_op_inuser`: the arguments are 12-bit signed numbers, a
/// shift past 31 is taken modulo 32, the comparisons are signed; an
/// unknown operation is `ENOSYS` before the word is touched, an unknown
/// comparison `ENOSYS` after it was changed.
fn wake_op(addr: u64, n: u32, addr2: u64, n2: u32, op: u32) -> Result<u64, Errno> {
    let sign12 = |v: u32| ((v << 20) as i32) >> 20;
    let mut arg = sign12((op >> 12) & 0xfff);
    if op & (8 << 28) != 0 {
        arg = 1i32.wrapping_shl((arg & 31) as u32);
    }
    let change = (op >> 28) & 7;
    if change > 4 {
        return Err(Errno::ENOSYS);
    }
    let irq = cpu::irq_save();
    let r = (|| {
        let old = read_word(addr2)?;
        let arg = arg as u32;
        let new = match change {
            0 => arg,
            1 => old.wrapping_add(arg),
            2 => old | arg,
            3 => old & !arg,
            _ => old ^ arg,
        };
        user::copy_in(addr2, &new.to_le_bytes())?;
        let (old, cmparg) = (old as i32, sign12(op & 0xfff));
        let hit = match (op >> 24) & 0xf {
            0 => old == cmparg,
            1 => old != cmparg,
            2 => old < cmparg,
            3 => old <= cmparg,
            4 => old > cmparg,
            5 => old >= cmparg,
            _ => return Err(Errno::ENOSYS),
        };
        let mut woke = wake(addr, n, BITSET_ANY);
        if hit {
            woke += wake(addr2, n2, BITSET_ANY);
        }
        Ok(woke)
    })();
    cpu::irq_restore(irq);
    r
}

/// A futex wait in a direct call (see `syscall::direct`), on a word (and a
/// timespec) in pages already present: `EAGAIN` at once if the word no
/// longer holds the value; otherwise the thread waits there
/// (`sched::leave_direct`, with a scheduler timer for a time limit) and
/// returns 0 once woken, `ETIMEDOUT` once the time is up. `None` (the call
/// traps) when a page is not present, the timespec is invalid, a signal
/// is pending (the trapped wait delivers it), the thread cannot leave the
/// CPU from a direct call, or it ran again for a signal (the trapped wait,
/// which returns at once for a pending signal, handles it as Linux would).
pub fn wait_direct(a: &[u64; 6]) -> Option<u64> {
    let op = a[1] & FUTEX_CMD_MASK;
    let bitset = match op {
        // A clock is ENOSYS for FUTEX_WAIT: the trapped call says so.
        FUTEX_WAIT if a[1] & FUTEX_CLOCK_REALTIME == 0 => BITSET_ANY,
        FUTEX_WAIT_BITSET if a[5] as u32 != 0 => a[5] as u32,
        _ => return None,
    };
    let addr = a[0];
    if !addr.is_multiple_of(4) {
        return None;
    }
    let irq = cpu::irq_save();
    let r = wait_direct_off(a, op, bitset);
    cpu::irq_restore(irq);
    r
}

/// [`wait_direct`] with interrupts off (the pages checked stay present).
fn wait_direct_off(a: &[u64; 6], op: u64, bitset: u32) -> Option<u64> {
    let addr = a[0];
    if a[3] != 0 && !user::present_readable(a[3], 16) {
        return None;
    }
    let deadline = deadline(op, a[3]).ok()?;
    let errno = |e: Errno| Some((-i64::from(e.0)) as u64);
    match user::present_word(addr) {
        Some(w) if w != a[2] as u32 => return errno(Errno::EAGAIN),
        Some(_) if sched::can_leave_direct() && !crate::signal::has_deliverable() => {}
        _ => return None,
    }
    if deadline.is_some_and(|d| d <= crate::time::monotonic_ns()) {
        return errno(Errno::ETIMEDOUT);
    }
    // Interrupts off: the check and the enqueue are atomic for wakers.
    if sleep(addr, bitset, deadline, || sched::leave_direct(false)) {
        return Some(0);
    }
    if deadline.is_some_and(|d| d <= crate::time::monotonic_ns())
        && !crate::signal::has_deliverable()
    {
        return errno(Errno::ETIMEDOUT);
    }
    None
}

/// A wait's time limit as a monotonic deadline: `FUTEX_WAIT`'s timespec
/// at `ts` is relative, `FUTEX_WAIT_BITSET`'s absolute (on the wall clock
/// with `FUTEX_CLOCK_REALTIME`); 0: none.
fn deadline(op: u64, ts: u64) -> Result<Option<u64>, Errno> {
    if ts == 0 {
        return Ok(None);
    }
    let t = timespec_ns(ts)?;
    let now = crate::time::monotonic_ns();
    Ok(Some(if op & FUTEX_CMD_MASK == FUTEX_WAIT {
        now.saturating_add(t)
    } else if op & FUTEX_CLOCK_REALTIME != 0 {
        // Convert the wall-clock deadline to the monotonic clock.
        now.saturating_add(t.saturating_sub(crate::time::realtime_ns()))
    } else {
        t
    }))
}

/// Whether futex operation `op` only wakes (no wait, no change to memory).
pub fn is_wake(op: u64) -> bool {
    matches!(op & FUTEX_CMD_MASK, FUTEX_WAKE | FUTEX_WAKE_BITSET)
}

/// Whether futex command `cmd` reads a timeout (Linux's
/// `futex_cmd_has_timeout`).
fn has_timeout(cmd: u64) -> bool {
    matches!(
        cmd,
        FUTEX_WAIT | FUTEX_LOCK_PI | FUTEX_LOCK_PI2 | FUTEX_WAIT_BITSET | FUTEX_WAIT_REQUEUE_PI
    )
}

/// Linux's `get_futex_key`: `EINVAL` for an unaligned word, `EFAULT` past
/// user space; a shared futex's page must be mapped (writable, for
/// `write`), where a private one is only an address — a wake at NULL wakes
/// nobody.
pub(super) fn key(addr: u64, shared: bool, write: bool) -> Result<(), Errno> {
    if !addr.is_multiple_of(4) {
        return Err(Errno::EINVAL);
    }
    if addr.checked_add(4).is_none_or(|end| end > user::USER_MAX) {
        return Err(Errno::EFAULT);
    }
    if shared {
        user::check_range(addr, 4)?;
        crate::mm::vma::ensure(addr, 4, write)?;
        // "A RO anonymous page will never change and thus doesn't make
        // sense for futex operations" (Linux): EFAULT even to wait.
        const PROT_WRITE: u32 = 2;
        let kinds = crate::mm::vma::kinds(addr, addr + 4);
        if kinds
            .iter()
            .any(|k| !k.file && !k.shared && k.prot & PROT_WRITE == 0)
        {
            return Err(Errno::EFAULT);
        }
    }
    Ok(())
}

/// `futex(uaddr, op, val, timeout, uaddr2, val3)`, checked in Linux's
/// order (`sys_futex`, `do_futex`, then each operation's;
/// `tests/progs/futexdiff.c`): the timeout of a command that takes one,
/// then the clock flag (only `WAIT_BITSET` and `LOCK_PI2` take it), then
/// the operation's arguments and words.
pub fn futex(a: &[u64; 6]) -> Result<u64, Errno> {
    let (addr, op, val) = (a[0], a[1], a[2] as u32);
    let cmd = op & FUTEX_CMD_MASK;
    let shared = op & FUTEX_PRIVATE_FLAG == 0;
    // `FUTEX_LOCK_PI`'s time limit is always on the wall clock.
    let clock = if cmd == FUTEX_LOCK_PI {
        op | FUTEX_CLOCK_REALTIME
    } else {
        op
    };
    let deadline = if has_timeout(cmd) {
        deadline(clock, a[3])?
    } else {
        None
    };
    if op & FUTEX_CLOCK_REALTIME != 0
        && !matches!(
            cmd,
            FUTEX_WAIT_BITSET | FUTEX_WAIT_REQUEUE_PI | FUTEX_LOCK_PI2
        )
    {
        return Err(Errno::ENOSYS);
    }
    // The count that rides in the timeout argument.
    let val2 = a[3] as u32;
    // FUTEX_WAIT and FUTEX_WAKE match any bitset; the BITSET variants take
    // val3, which must not be 0 (checked before the word).
    let bitset = || match (cmd, a[5] as u32) {
        (FUTEX_WAIT | FUTEX_WAKE, _) => Ok(BITSET_ANY),
        (_, 0) => Err(Errno::EINVAL),
        (_, b) => Ok(b),
    };
    match cmd {
        FUTEX_WAIT | FUTEX_WAIT_BITSET => {
            let bitset = bitset()?;
            key(addr, shared, false)?;
            wait(addr, val, bitset, deadline)
        }
        FUTEX_WAKE | FUTEX_WAKE_BITSET => {
            let bitset = bitset()?;
            key(addr, shared, false)?;
            // Linux wakes at least one waiter even when asked for none (its
            // loop counts after each wake-up; tests/progs/memdiff.c).
            Ok(wake(addr, val.max(1), bitset))
        }
        FUTEX_REQUEUE | FUTEX_CMP_REQUEUE => {
            if (val as i32) < 0 || (val2 as i32) < 0 {
                return Err(Errno::EINVAL);
            }
            key(addr, shared, false)?;
            key(a[4], shared, false)?;
            if cmd == FUTEX_REQUEUE {
                return Ok(requeue(addr, val, a[4], val2));
            }
            // Faulted in first; then the comparison and the requeue happen
            // with interrupts off, as one step for waiters and wakers.
            read_word(addr)?;
            let irq = cpu::irq_save();
            let r = match read_word(addr) {
                Ok(w) if w == a[5] as u32 => Ok(requeue(addr, val, a[4], val2)),
                Ok(_) => Err(Errno::EAGAIN),
                Err(e) => Err(e),
            };
            cpu::irq_restore(irq);
            r
        }
        FUTEX_WAKE_OP => {
            key(addr, shared, false)?;
            key(a[4], shared, true)?;
            wake_op(addr, val.max(1), a[4], val2.max(1), a[5] as u32)
        }
        // Absolute, on the wall clock for FUTEX_LOCK_PI, on the monotonic
        // one (or the wall clock, asked) for FUTEX_LOCK_PI2.
        FUTEX_LOCK_PI | FUTEX_LOCK_PI2 => {
            key(addr, shared, true)?;
            super::futex_pi::lock(addr, deadline, false)
        }
        FUTEX_TRYLOCK_PI => {
            key(addr, shared, true)?;
            super::futex_pi::lock(addr, None, true)
        }
        FUTEX_UNLOCK_PI => super::futex_pi::unlock(addr, shared),
        _ => Err(Errno::ENOSYS),
    }
}
