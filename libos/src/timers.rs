//! Interval timers that signal: POSIX timers (`timer_create`) and the
//! process's `setitimer` timers. One kernel thread sleeps until the next
//! deadline and sends the signals. Timers on a CPU-time clock (the
//! process's or a thread's, and `ITIMER_VIRTUAL`/`ITIMER_PROF`) are looked
//! at as Linux's tick would: CPU time runs at most as fast as the clock
//! on one vCPU, so the worker looks again when the rest could have been
//! used, and at most every tick. The worker also enforces `RLIMIT_CPU` on
//! the process's CPU time ([`cpu_limit`]).

use alloc::collections::BTreeMap;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::errno::Errno;
use crate::sync::IrqLock;

/// Who a timer's expiry tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Notify {
    /// The process (a thread that does not block the signal).
    Process(u32),
    /// One thread (`SIGEV_THREAD_ID`).
    Thread(u32, u64),
    /// The process, woken in the program thread that ran last
    /// (`ITIMER_VIRTUAL`, `ITIMER_PROF`: Linux signals the thread whose
    /// tick expired it).
    Running(u32),
    /// Nobody (`SIGEV_NONE`): the timer is only read.
    None,
}

/// The time a timer runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Base {
    /// The monotonic clock.
    Monotonic,
    /// The wall clock: absolute times are Unix times (its deadline is kept
    /// on the monotonic clock).
    Wall,
    /// CPU time: the deadline is in the target's CPU ns.
    Cpu(crate::clock::CpuTarget),
}

impl Base {
    /// The base's now, in the units of its deadlines (`None`: a thread
    /// whose CPU time it counts has exited; its timers never fire).
    pub fn now(self) -> Option<u64> {
        match self {
            Base::Monotonic | Base::Wall => Some(crate::time::monotonic_ns()),
            Base::Cpu(c) => c.read().ok(),
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Timer {
    notify: Notify,
    base: Base,
    /// The next expiry on `base`; 0 when disarmed.
    deadline: u64,
    /// The last expiry it was armed for, once disarmed: Linux reads a
    /// disarmed `SIGEV_NONE` timer's remaining time from it
    /// (`common_timer_get`), so that one shows the time left to where it
    /// was set before.
    stale: u64,
    /// ns between expiries; 0 for one.
    interval: u64,
    /// Expiries missed at the last one (`timer_getoverrun`).
    overrun: u32,
    /// `sigev_value`, delivered in the signal's `si_value`.
    value: u64,
}

/// Timer ids of `setitimer`'s three timers (below every POSIX id).
pub const ITIMER_BASE: i64 = -3;

static TIMERS: IrqLock<BTreeMap<i64, Timer>> = IrqLock::new(BTreeMap::new());

/// The `siginfo` of an expiry of timer `id`: `SI_TIMER` with the timer's
/// id, overrun and value for a POSIX timer, `SI_KERNEL` for `setitimer`'s.
fn info(id: i64, t: &Timer) -> crate::signal::SigInfo {
    use crate::signal::code::SI_TIMER;
    if id < 0 {
        return kernel_info();
    }
    let mut b = [0u8; 128];
    b[8..12].copy_from_slice(&SI_TIMER.to_le_bytes());
    b[16..20].copy_from_slice(&(id as i32).to_le_bytes());
    b[20..24].copy_from_slice(&t.overrun.to_le_bytes());
    b[24..32].copy_from_slice(&t.value.to_le_bytes());
    b
}
/// A `siginfo` with `SI_KERNEL` and nothing else (Linux's `SEND_SIG_PRIV`).
fn kernel_info() -> crate::signal::SigInfo {
    const SI_KERNEL: i32 = 0x80;
    let mut b = [0u8; 128];
    b[8..12].copy_from_slice(&SI_KERNEL.to_le_bytes());
    b
}

static NEXT_ID: IrqLock<i64> = IrqLock::new(0);
static WORKER: spin::Once<crate::sched::ThreadRef> = spin::Once::new();
static KICKED: AtomicBool = AtomicBool::new(false);
/// The deadline the worker sleeps until (`u64::MAX`: none), as of its last
/// look at the timers, kept under `TIMERS`' lock; 0 before it runs. A
/// timer armed for later needs no wake-up: the worker looks again then.
static WORKER_NEXT: AtomicU64 = AtomicU64::new(0);

/// Makes a disarmed timer on `base` whose signals carry `value` (`None`:
/// its id, as Linux does without a `sigevent`); returns its id.
pub fn create(notify: Notify, base: Base, value: Option<u64>) -> Result<i64, Errno> {
    let mut next = NEXT_ID.lock();
    let mut t = TIMERS.lock();
    // Linux's limit is RLIMIT_SIGPENDING; this one is generous.
    if t.len() >= 4096 {
        return Err(Errno::EAGAIN);
    }
    let id = *next;
    *next += 1;
    t.insert(
        id,
        Timer {
            notify,
            base,
            deadline: 0,
            stale: 0,
            interval: 0,
            overrun: 0,
            value: value.unwrap_or(id as u64),
        },
    );
    Ok(id)
}

/// Deletes timer `id`.
pub fn delete(id: i64) -> Result<(), Errno> {
    TIMERS.lock().remove(&id).map(|_| ()).ok_or(Errno::EINVAL)
}

/// Arms timer `id` to expire at `deadline` on its base (0 disarms) and
/// every `interval` ns after; returns the old (remaining, interval). An
/// `setitimer` timer is made on first use with `make`'s notification and
/// base.
pub fn set(
    id: i64,
    deadline: u64,
    interval: u64,
    make: Option<(Notify, Base)>,
) -> Result<(u64, u64), Errno> {
    let now = crate::time::monotonic_ns();
    let old = {
        let mut all = TIMERS.lock();
        if let Some((notify, base)) = make {
            all.entry(id).or_insert(Timer {
                notify,
                base,
                deadline: 0,
                stale: 0,
                interval: 0,
                overrun: 0,
                value: 0,
            });
        }
        let t = all.get_mut(&id).ok_or(Errno::EINVAL)?;
        let old = (remaining(t, now), t.interval);
        if deadline == 0 && t.deadline != 0 {
            t.stale = t.deadline;
        }
        t.deadline = deadline;
        // A disarmed timer has no interval, but for `ITIMER_VIRTUAL` and
        // `ITIMER_PROF`, whose interval Linux keeps (`set_cpu_itimer`).
        let keep = id < 0 && matches!(t.base, Base::Cpu(_));
        t.interval = if deadline == 0 && !keep { 0 } else { interval };
        t.overrun = 0;
        // Disarmed, or due after the worker's next look: no wake-up (a
        // watchdog `alarm` re-armed before every step costs no switch). A
        // CPU-time deadline is no time on the clock: always a look.
        let cpu = matches!(t.base, Base::Cpu(_));
        let sooner = deadline != 0 && (cpu || deadline < WORKER_NEXT.load(Ordering::SeqCst));
        (old, sooner || WORKER_NEXT.load(Ordering::SeqCst) == 0)
    };
    let (old, wake) = old;
    if wake {
        kick();
    }
    Ok(old)
}

/// Timer `id`'s (remaining ns, interval ns); `EINVAL` if there is none (an
/// unused `setitimer` timer reads as disarmed).
pub fn get(id: i64) -> Result<(u64, u64), Errno> {
    let now = crate::time::monotonic_ns();
    match TIMERS.lock().get_mut(&id) {
        Some(t) => {
            forward(t, now);
            Ok((remaining(t, now), t.interval))
        }
        None if id < 0 => Ok((0, 0)),
        None => Err(Errno::EINVAL),
    }
}

/// Moves a periodic `SIGEV_NONE` timer's expiry past `now`, as Linux's
/// `common_timer_get` does when the timer is read (such a timer is never
/// queued, so nothing else moves it: its expiry stays where it was set
/// until it is read, and a disarm leaves it there).
fn forward(t: &mut Timer, now: u64) {
    if t.notify == Notify::None
        && !matches!(t.base, Base::Cpu(_))
        && t.deadline != 0
        && t.deadline <= now
        && let Some(missed) = (now - t.deadline).checked_div(t.interval)
    {
        t.deadline = t
            .deadline
            .saturating_add((missed + 1).saturating_mul(t.interval));
    }
}

/// Reads timer `id` as `timer_settime` does before changing it when the
/// old setting is asked for (Linux reads it then, which moves a periodic
/// `SIGEV_NONE` timer on: see [`forward`]).
pub fn read_before_set(id: i64) {
    let now = crate::time::monotonic_ns();
    if let Some(t) = TIMERS.lock().get_mut(&id) {
        forward(t, now);
    }
}

/// The base timer `id` runs on.
pub fn base(id: i64) -> Result<Base, Errno> {
    TIMERS.lock().get(&id).map(|t| t.base).ok_or(Errno::EINVAL)
}

/// The overrun count of timer `id`'s last expiry.
pub fn overrun(id: i64) -> Result<u32, Errno> {
    TIMERS
        .lock()
        .get(&id)
        .map(|t| t.overrun)
        .ok_or(Errno::EINVAL)
}

/// Timer `t`'s time to its next expiry as of monotonic `now`, as Linux's
/// `common_timer_get` reads it: whether or not the worker has serviced an
/// expiry yet, a periodic timer on the clock is read as moved on past
/// `now`; an expired one-shot reads 0 without a signal (`SIGEV_NONE`) and
/// 1 ns, about to expire, with one.
fn remaining(t: &Timer, now: u64) -> u64 {
    let hrtimer = !matches!(t.base, Base::Cpu(_));
    if t.deadline == 0 {
        return if t.notify == Notify::None && hrtimer {
            t.stale.saturating_sub(now)
        } else {
            0
        };
    }
    let now = match t.base {
        Base::Cpu(c) => c.read().unwrap_or(0),
        _ => now,
    };
    if t.deadline > now {
        return t.deadline - now;
    }
    match (now - t.deadline).checked_div(t.interval) {
        Some(missed) if hrtimer => {
            let next = t
                .deadline
                .saturating_add((missed + 1).saturating_mul(t.interval));
            next.saturating_sub(now).max(1)
        }
        None if t.notify == Notify::None && hrtimer => 0,
        _ => 1,
    }
}

/// Wakes the worker (starting it on first use) to look at the deadlines.
fn kick() {
    let w = WORKER.call_once(|| {
        crate::sched::spawn("timers", worker)
            .map(|h| h.thread().clone())
            .expect("cannot start the timer thread")
    });
    KICKED.store(true, Ordering::SeqCst);
    crate::sched::make_ready(w.clone());
}

/// `RLIMIT_CPU` changed (or the process started with one): the worker
/// looks at it.
pub fn cpu_limit_changed() {
    let soft = crate::process::rlimit(crate::process::RLIMIT_CPU).0;
    if soft != crate::process::RLIM_INFINITY || WORKER.get().is_some() {
        kick();
    }
}

/// Linux's `RLIMIT_CPU` check (`check_process_timers`), done by the worker:
/// at the hard limit `SIGKILL`; at the soft one `SIGXCPU`, and the soft
/// limit moves a second on (so another comes each CPU second). Only with a
/// soft limit, as Linux. Returns when to look again (monotonic ns): CPU
/// time runs at most as fast as the clock, so not before the rest of the
/// limit has passed on it.
fn cpu_limit(now: u64) -> Option<u64> {
    use crate::process::{RLIM_INFINITY, RLIMIT_CPU, rlimit, set_rlimit};
    const SEC: u64 = 1_000_000_000;
    let (soft, hard) = rlimit(RLIMIT_CPU);
    if soft == RLIM_INFINITY {
        return None;
    }
    let (user, sys) = crate::syscall::rusage::cpu_ns();
    let cpu = user + sys;
    let info = kernel_info();
    if hard != RLIM_INFINITY && cpu >= hard.saturating_mul(SEC) {
        let _ = crate::signal::send_process(crate::signal::nr::SIGKILL, info);
        return None;
    }
    let mut soft = soft;
    if cpu >= soft.saturating_mul(SEC) {
        let _ = crate::signal::send_process(SIGXCPU, info);
        soft += 1;
        set_rlimit(RLIMIT_CPU, (soft, hard));
    }
    // Looked at no more often than Linux's tick would.
    let left = soft
        .saturating_mul(SEC)
        .saturating_sub(cpu)
        .max(crate::time::coarse_res_ns());
    Some(now.saturating_add(left))
}

/// `SIGXCPU`.
const SIGXCPU: u32 = 24;

fn worker() {
    loop {
        KICKED.store(false, Ordering::SeqCst);
        let now = crate::time::monotonic_ns();
        let mut fire = alloc::vec::Vec::new();
        let mut next: Option<u64> = cpu_limit(now);
        {
            let mut all = TIMERS.lock();
            for (&id, t) in all.iter_mut() {
                // A `SIGEV_NONE` timer is never queued: it is only read.
                if t.deadline == 0 || t.notify == Notify::None {
                    continue;
                }
                let Some(at) = (match t.base {
                    Base::Cpu(c) => c.read().ok(),
                    _ => Some(now),
                }) else {
                    continue;
                };
                if t.deadline <= at {
                    match (at - t.deadline).checked_div(t.interval) {
                        Some(missed) => {
                            t.overrun = u32::try_from(missed).unwrap_or(i32::MAX as u32);
                            t.deadline += (missed + 1) * t.interval;
                        }
                        None => {
                            t.stale = t.deadline;
                            t.deadline = 0;
                        }
                    }
                    fire.push((t.notify, info(id, t)));
                }
                if t.deadline != 0 {
                    // A CPU-time deadline: not before the rest could have
                    // been used, nor sooner than a tick.
                    let look = match t.base {
                        Base::Cpu(_) => {
                            now.saturating_add((t.deadline - at).max(crate::time::coarse_res_ns()))
                        }
                        _ => t.deadline,
                    };
                    next = Some(next.map_or(look, |n| n.min(look)));
                }
            }
            WORKER_NEXT.store(next.unwrap_or(u64::MAX), Ordering::SeqCst);
        }
        for (n, info) in fire {
            let _ = match n {
                Notify::Process(sig) => crate::signal::send_process(sig, info),
                Notify::Thread(sig, tid) => crate::signal::send_info(tid, sig, info),
                Notify::Running(sig) => crate::signal::send_process_to(
                    sig,
                    info,
                    Some(crate::sched::last_program_thread()),
                ),
                Notify::None => Ok(()),
            };
        }
        let irq = crate::arch::cpu::irq_save();
        if !KICKED.load(Ordering::SeqCst) {
            let key = next.map(|d| crate::sched::add_timer(d, crate::sched::current()));
            crate::sched::block();
            if let Some(k) = key {
                crate::sched::cancel_timer(k);
            }
        }
        crate::arch::cpu::irq_restore(irq);
    }
}
