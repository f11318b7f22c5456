//! Kernel threads and a preemptive round-robin scheduler with wake-up
//! preemption.
//!
//! Each CPU has its own run queue ([`Cpu`]); a thread runs for a time slice
//! unless it yields, blocks or sleeps first, or a thread wakes while it has
//! computed without blocking for [`WAKE_GRANULARITY_NS`]: woken threads go
//! ahead of preempted ones (see `enqueue`). The timer is tickless: the APIC
//! deadline is set to the end of the slice (only when other threads wait) or
//! the next sleeper's wake-up, whichever comes first. An idle CPU halts.
//!
//! Context switches happen with interrupts off; the previous thread is kept
//! alive until the next one runs, so a dead thread's stack is freed only after
//! the CPU has left it.

mod thread;
mod waitqueue;

use alloc::collections::{BTreeMap, VecDeque};
use alloc::sync::Arc;
use core::sync::atomic::{AtomicU64, Ordering};

pub use thread::{JoinHandle, State, Thread, ThreadRef};
/// Pages of a thread's kernel stack (the direct-call entry checks stack pointers against it).
pub const KERNEL_STACK_PAGES: usize = thread::STACK_PAGES;
pub use waitqueue::WaitQueue;

use crate::arch::{apic, context, cpu, gdt};
use crate::sync::IrqLock;
use crate::time;

/// Length of a time slice.
pub const SLICE_NS: u64 = 10_000_000;
/// Wake-up preemption, as Linux's scheduler does it: a thread that has
/// wanted the CPU without a break (not blocked) for this long gives it up at
/// once to a thread that wakes, and one that woke more recently gives it up
/// this long after it woke; either way a thread woken by I/O waits at most
/// about this behind one that computes, not a whole slice.
pub const WAKE_GRANULARITY_NS: u64 = 1_000_000;
/// The least the running thread keeps the CPU when a wake-up preempts it
/// (a preemption that no device interrupt brings costs a timer interrupt).
pub const MIN_RUN_NS: u64 = 100_000;

/// One CPU's scheduling state.
struct Cpu {
    current: Option<ThreadRef>,
    idle: Option<ThreadRef>,
    run_queue: VecDeque<ThreadRef>,
    /// The thread switched away from, dropped once the next one runs.
    last: Option<ThreadRef>,
    /// When the running thread got the CPU.
    slice_start_ns: u64,
    slice_end_ns: u64,
}

impl Cpu {
    /// The running thread starts a new time slice now.
    fn start_slice(&mut self) {
        self.slice_start_ns = time::monotonic_ns();
        self.slice_end_ns = self.slice_start_ns + SLICE_NS;
    }

    const fn new() -> Self {
        Self {
            current: None,
            idle: None,
            run_queue: VecDeque::new(),
            last: None,
            slice_start_ns: 0,
            slice_end_ns: 0,
        }
    }
}

/// Per-CPU run queues; with one vCPU there is one entry.
static CPUS: [IrqLock<Cpu>; 1] = [IrqLock::new(Cpu::new())];
/// Sleeping threads by (deadline, sequence number).
static TIMERS: IrqLock<BTreeMap<(u64, u64), ThreadRef>> = IrqLock::new(BTreeMap::new());
static TIMER_SEQ: AtomicU64 = AtomicU64::new(0);

/// Scheduler counters.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stats {
    /// Context switches.
    pub switches: u64,
    /// Switches forced by the end of a time slice.
    pub preemptions: u64,
    /// Timer interrupts taken.
    pub timer_interrupts: u64,
    /// Nanoseconds idle (halted).
    pub idle_ns: u64,
}

static SWITCHES: AtomicU64 = AtomicU64::new(0);
static PREEMPTIONS: AtomicU64 = AtomicU64::new(0);
static TIMER_IRQS: AtomicU64 = AtomicU64::new(0);

/// The scheduler's counters so far.
pub fn stats() -> Stats {
    Stats {
        switches: SWITCHES.load(Ordering::Relaxed),
        preemptions: PREEMPTIONS.load(Ordering::Relaxed),
        timer_interrupts: TIMER_IRQS.load(Ordering::Relaxed),
        idle_ns: IDLE_NS.load(Ordering::Relaxed),
    }
}

fn this_cpu() -> &'static IrqLock<Cpu> {
    &CPUS[0]
}

/// Makes the running boot context the thread `main` and creates the idle thread.
pub fn init() {
    let main = Thread::new_boot("main");
    let idle = Thread::new_kernel("idle", alloc::boxed::Box::new(idle_loop))
        .expect("no memory for the idle thread");
    main.set_state(State::Running);
    let mut c = this_cpu().lock();
    c.current = Some(main);
    c.idle = Some(idle);
    c.start_slice();
}

/// A device that, while the CPU is busy, is polled instead of
/// interrupting (the 9P queue's completions): `idle(true)` before the CPU
/// halts (completions must interrupt now; it also collects those already
/// there), `idle(false)` once it runs threads again, `poll()` at every
/// scheduling point and tick, `pending()` while completions are expected.
pub struct PolledDevice {
    /// The CPU goes idle (true) or runs threads again (false).
    pub idle: fn(bool),
    /// Collects completions that came.
    pub poll: fn(),
    /// Tells the device about requests it has not been told of (before
    /// the CPU returns to the program, and at every tick).
    pub flush: fn(),
    /// Whether completions are outstanding (a tick then bounds their wait).
    pub pending: fn() -> bool,
}

static POLLED: spin::Once<PolledDevice> = spin::Once::new();

/// Registers the polled device (once).
pub fn set_polled_device(d: PolledDevice) {
    POLLED.call_once(|| d);
}

/// How often a busy CPU looks for completions at the latest.
const POLL_TICK_NS: u64 = 1_000_000;

fn idle_loop() {
    loop {
        let irq = cpu::irq_save();
        if let Some(d) = POLLED.get() {
            (d.idle)(true);
        }
        if !this_cpu().lock().run_queue.is_empty() {
            // Collecting completions made a thread ready: run it.
            cpu::irq_restore(irq);
            yield_now();
            continue;
        }
        // Kept from an earlier round that woke without a thread to run (an
        // early timer): the CPU has been idle since then.
        let _ = IDLE_SINCE.compare_exchange(
            0,
            time::monotonic_ns(),
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
        cpu::enable_and_halt();
    }
}

/// Whether another thread is ready to run on this CPU (a waiter then
/// leaves the CPU to it rather than spin).
pub fn others_ready() -> bool {
    !this_cpu().lock().run_queue.is_empty()
}

/// Tells the polled device of requests queued for it (the CPU is about to
/// leave the library OS for the program).
pub fn flush_devices() {
    if let Some(d) = POLLED.get() {
        (d.flush)();
    }
}

/// Polls the polled device (a scheduling point).
pub fn poll_devices() {
    if let Some(d) = POLLED.get() {
        (d.poll)();
    }
}

/// Nanoseconds the CPU spent halted with nothing to run (counted when the
/// idle thread leaves the CPU).
static IDLE_NS: AtomicU64 = AtomicU64::new(0);
/// When the idle thread last halted.
static IDLE_SINCE: AtomicU64 = AtomicU64::new(0);

/// The running thread.
pub fn current() -> ThreadRef {
    this_cpu()
        .lock()
        .current
        .clone()
        .expect("scheduler not initialised")
}

/// Starts a kernel thread running `f`.
pub fn spawn<F>(name: &str, f: F) -> Option<JoinHandle>
where
    F: FnOnce() + Send + 'static,
{
    let t = create(name, f)?;
    make_ready(t.clone());
    Some(JoinHandle::new(t))
}

/// Creates a kernel thread running `f` without starting it: it runs once
/// [`make_ready`] is called on it (`clone` writes the new thread's id into
/// the program's memory first, as Linux does before the child can run).
pub fn create<F>(name: &str, f: F) -> Option<ThreadRef>
where
    F: FnOnce() + Send + 'static,
{
    Thread::new_kernel(name, alloc::boxed::Box::new(f))
}

/// Whether the CPU is running its idle thread.
pub fn current_is_idle() -> bool {
    let c = this_cpu().lock();
    matches!((&c.current, &c.idle), (Some(cur), Some(idle)) if Arc::ptr_eq(cur, idle))
}

/// Makes a blocked (or new) thread runnable; no effect on a ready or
/// running one.
pub fn make_ready(t: ThreadRef) {
    enqueue(t, false);
}

/// [`make_ready`], but ahead of the other ready threads (a thread that
/// waited long, see `syscall::futex`).
pub fn make_ready_first(t: ThreadRef) {
    enqueue(t, true);
}

fn enqueue(t: ThreadRef, first: bool) {
    // Only a blocked (or new) thread joins the run queue: a thread woken by
    // one source (a futex) may still be due from another (its timeout).
    if !t.ready_if_blocked() {
        return;
    }
    let now = time::monotonic_ns();
    t.woke_ns.store(now, Ordering::Relaxed);
    t.preempted_ns.store(0, Ordering::Relaxed);
    let mut c = this_cpu().lock();
    if first {
        c.run_queue.push_front(t);
    } else {
        // Ahead of threads the timer took the CPU from, as Linux's fair
        // scheduler runs a thread that slept before ones that kept
        // computing; but not of one that has waited a slice already, so
        // threads that keep waking each other cannot starve it.
        let at = c.run_queue.iter().position(|q| {
            let p = q.preempted_ns.load(Ordering::Relaxed);
            p != 0 && now.saturating_sub(p) < SLICE_NS
        });
        match at {
            Some(i) => c.run_queue.insert(i, t),
            None => c.run_queue.push_back(t),
        }
    }
    // The running thread's slice ends a granule after it woke, if that is
    // sooner (the idle thread's is moot: a wake-up leaves it at once).
    let woke = c
        .current
        .as_ref()
        .map_or(0, |cur| cur.woke_ns.load(Ordering::Relaxed));
    let by = woke
        .saturating_add(WAKE_GRANULARITY_NS)
        .max(c.slice_start_ns.saturating_add(MIN_RUN_NS))
        .max(now);
    if by < c.slice_end_ns {
        c.slice_end_ns = by;
    }
    program_timer(&c);
}

/// Gives the CPU to the next ready thread, if any.
pub fn yield_now() {
    let irq = cpu::irq_save();
    {
        let mut c = this_cpu().lock();
        if c.run_queue.is_empty() {
            drop(c);
            cpu::irq_restore(irq);
            return;
        }
        let cur = c.current.clone().expect("scheduler not initialised");
        cur.set_state(State::Ready);
        c.run_queue.push_back(cur);
    }
    schedule();
    cpu::irq_restore(irq);
}

/// Runs the blocked thread `t` now, ahead of the run queue, and the caller
/// right after it (a hand-off: `t` has work the caller just gave it, such
/// as bytes to send, and blocks again soon). No effect unless `t` is
/// blocked; never from the idle thread.
pub fn hand_off(t: ThreadRef) {
    let irq = cpu::irq_save();
    if t.state() != State::Blocked || current_is_idle() {
        make_ready(t);
        cpu::irq_restore(irq);
        return;
    }
    {
        let mut c = this_cpu().lock();
        let cur = c.current.clone().expect("scheduler not initialised");
        cur.set_state(State::Ready);
        t.set_state(State::Ready);
        c.run_queue.push_front(cur);
        c.run_queue.push_front(t);
    }
    schedule();
    cpu::irq_restore(irq);
}

/// Blocks the current thread until [`make_ready`] is called on it. The
/// caller has put it somewhere a waker will find it, with interrupts off.
pub(crate) fn block_current() {
    debug_assert!(!cpu::interrupts_enabled());
    current().set_state(State::Blocked);
    schedule();
}

/// Sleeps for at least `ns` nanoseconds.
pub fn sleep_ns(ns: u64) {
    sleep_until_ns(time::monotonic_ns().saturating_add(ns));
}

/// Sleeps until the monotonic clock reaches `deadline` (ns since boot).
pub fn sleep_until_ns(deadline: u64) {
    while time::monotonic_ns() < deadline {
        let irq = cpu::irq_save();
        let me = current();
        let seq = TIMER_SEQ.fetch_add(1, Ordering::Relaxed);
        TIMERS.lock().insert((deadline, seq), me);
        block_current();
        cpu::irq_restore(irq);
    }
}

/// [`sleep_until_ns`], cut short by a signal the thread will take:
/// false if it was.
pub fn sleep_until_interruptible(deadline: u64) -> bool {
    while time::monotonic_ns() < deadline {
        let irq = cpu::irq_save();
        if crate::signal::has_interrupting() {
            cpu::irq_restore(irq);
            return false;
        }
        let me = current();
        let seq = TIMER_SEQ.fetch_add(1, Ordering::Relaxed);
        let key = (deadline, seq);
        TIMERS.lock().insert(key, me);
        block_current();
        TIMERS.lock().remove(&key);
        cpu::irq_restore(irq);
    }
    true
}

/// Ends the calling thread (a program thread's `exit`).
pub fn exit_thread() -> ! {
    exit_current()
}

pub(crate) fn exit_current() -> ! {
    cpu::irq_save();
    let me = current();
    me.finish();
    me.set_state(State::Dead);
    drop(me);
    schedule();
    unreachable!("a dead thread was scheduled");
}

/// Wakes `t` at `deadline` (monotonic ns) unless cancelled; returns the
/// key for [`cancel_timer`].
pub fn add_timer(deadline: u64, t: ThreadRef) -> (u64, u64) {
    let key = (deadline, TIMER_SEQ.fetch_add(1, Ordering::Relaxed));
    TIMERS.lock().insert(key, t);
    let c = this_cpu().lock();
    program_timer(&c);
    key
}

/// Removes a timer from [`add_timer`] if it has not fired.
pub fn cancel_timer(key: (u64, u64)) {
    TIMERS.lock().remove(&key);
}

/// Blocks the current thread until another makes it ready (interrupts
/// must be off; the caller re-checks why it woke).
pub fn block() {
    block_current();
}

/// The program thread that last left the CPU (its id; 0 before any did):
/// the one a CPU-time itimer's tick charged (see `timers`).
static LAST_PROGRAM: AtomicU64 = AtomicU64::new(0);

/// The program thread that last ran: the current one if it is a program
/// thread, else the one that last left the CPU.
pub fn last_program_thread() -> u64 {
    let c = current();
    if c.user.active.load(Ordering::Relaxed) {
        c.id()
    } else {
        LAST_PROGRAM.load(Ordering::Relaxed)
    }
}

/// Charges `prev` for its run on the CPU and starts `next`'s.
fn account_switch(prev: &Thread, next: &Thread) {
    if prev.user.active.load(Ordering::Relaxed) {
        LAST_PROGRAM.store(prev.id(), Ordering::Relaxed);
    }
    let now = time::monotonic_ns();
    let since = prev.user.on_cpu_since.load(Ordering::Relaxed);
    prev.user
        .cpu_ns
        .fetch_add(now.saturating_sub(since), Ordering::Relaxed);
    next.user.on_cpu_since.store(now, Ordering::Relaxed);
}

/// The CPU time `t` has used (ns), its current run included. With one CPU,
/// a thread other than the caller is not running.
pub fn cpu_ns(t: &Thread) -> u64 {
    // With interrupts off: a preemption between the two loads would pair
    // the time used before it with the start of the run after it, and the
    // clock would go backwards (`CLOCK_THREAD_CPUTIME_ID`, memdiff).
    let irq = cpu::irq_save();
    let used = t.user.cpu_ns.load(Ordering::Relaxed);
    let ns = if t.id() == current().id() {
        let since = t.user.on_cpu_since.load(Ordering::Relaxed);
        used + time::monotonic_ns().saturating_sub(since)
    } else {
        used
    };
    cpu::irq_restore(irq);
    ns
}

/// Switches to the next thread. Interrupts must be off; the caller has set
/// the current thread's state (and queued it if it stays runnable).
fn schedule() {
    switch_threads(false);
}

/// Whether the current thread may leave the CPU inside a direct system
/// call ([`leave_direct`]): switching from there needs `wrfsbase` (an MSR
/// write would upgrade every switch) and the thread's own kernel stack.
pub fn can_leave_direct() -> bool {
    crate::arch::user::fsgsbase() && current().stack_top().is_some()
}

/// The current thread, inside a direct system call (`arch::direct`),
/// leaves the CPU: `yielding` puts it at the back of the run queue (the
/// caller saw others there), otherwise it blocks (the caller put it where
/// a waker finds it). Interrupts off. If the next thread also left the CPU
/// inside a direct call, the switch happens in whatever mode the host
/// believes the vCPU is in, user mode included, with no event through the
/// host; otherwise the call is upgraded first and the scheduler switches
/// as always. Returns once the thread runs again, in either mode.
pub fn leave_direct(yielding: bool) {
    poll_devices();
    let me = current();
    me.resume_direct.store(true, Ordering::Relaxed);
    let direct = {
        let mut c = this_cpu().lock();
        if yielding {
            me.set_state(State::Ready);
            c.run_queue.push_back(me.clone());
        } else {
            me.set_state(State::Blocked);
        }
        c.run_queue
            .front()
            .is_some_and(|t| t.resume_direct.load(Ordering::Relaxed) && t.stack_top().is_some())
    };
    if direct {
        switch_threads(true);
    } else {
        crate::arch::direct::enter_supervisor();
        switch_threads(false);
    }
    // Set again only by the next `leave_direct` (a switch to this thread
    // cleared it, unless it was the only one to run).
    me.resume_direct.store(false, Ordering::Relaxed);
}

/// Marks a new thread, not yet ready, as one that left the CPU inside a
/// direct call: its entry must then return to the program by
/// `arch::direct::start_user`, which handles both modes it may start in.
pub fn start_as_direct(t: &ThreadRef) {
    t.resume_direct.store(true, Ordering::Relaxed);
}

/// Switches to the next thread; `direct`: from a direct call to a thread
/// that left the CPU in one ([`leave_direct`]), in the host mode of the
/// moment.
fn switch_threads(direct: bool) {
    crate::sync::assert_none_held("a thread switch");
    if !direct {
        poll_devices();
    }
    let (save, next_rsp, tops) = {
        let mut c = this_cpu().lock();
        let next = match c.run_queue.pop_front() {
            Some(t) => t,
            None => c.idle.clone().expect("scheduler not initialised"),
        };
        let prev = c.current.take().expect("scheduler not initialised");
        if Arc::ptr_eq(&prev, &next) {
            prev.set_state(State::Running);
            c.current = Some(prev);
            c.start_slice();
            program_timer(&c);
            return;
        }
        next.set_state(State::Running);
        account_switch(&prev, &next);
        if c.idle.as_ref().is_some_and(|i| Arc::ptr_eq(i, &prev)) {
            if let Some(d) = POLLED.get() {
                (d.idle)(false);
            }
            let since = IDLE_SINCE.swap(0, Ordering::Relaxed);
            if since != 0 {
                IDLE_NS.fetch_add(
                    time::monotonic_ns().saturating_sub(since),
                    Ordering::Relaxed,
                );
            }
        }
        let resume_direct = next.resume_direct.swap(false, Ordering::Relaxed);
        let tops = match (prev.stack_top(), next.stack_top()) {
            (Some(cur), Some(top)) if direct => {
                gdt::set_kernel_stack(top);
                // SAFETY: `next` is not running. Cleared while the entry
                // stack is still ours: an upgrade from here on marks our
                // word, which `switch_direct` carries over.
                unsafe { crate::arch::direct::set_upgraded(top, false) };
                Some((top, cur))
            }
            (_, Some(top)) => {
                gdt::set_kernel_stack(top);
                crate::arch::user::set_syscall_stack(top);
                if resume_direct {
                    // It goes on inside its direct call in supervisor mode
                    // (where this switch runs): it must leave by `sysretq`.
                    // SAFETY: `next` is not running.
                    unsafe { crate::arch::direct::set_upgraded(top, true) };
                }
                None
            }
            (_, None) => None,
        };
        crate::arch::fpu::switch_user_state(&prev, &next);
        let save = prev.context_ptr();
        let next_rsp = next.saved_rsp();
        c.current = Some(next);
        debug_assert!(c.last.is_none());
        c.last = Some(prev);
        c.start_slice();
        program_timer(&c);
        (save, next_rsp, tops)
    };
    SWITCHES.fetch_add(1, Ordering::Relaxed);
    match tops {
        // SAFETY: as below; both tops are the threads' entry stack tops and
        // the next one's upgrade word was cleared above.
        Some((top, cur)) => unsafe { context::switch_direct(save, next_rsp, top, cur) },
        // SAFETY: interrupts are off; `next_rsp` was saved by `switch` or built by
        // `init_stack` for a thread that is alive (the CPU holds it as current),
        // and `save` points into `prev`, which `last` keeps alive until
        // `finish_switch` runs on the other side.
        None => unsafe { context::switch(save, next_rsp) },
    }
    finish_switch();
}

/// Runs on the new thread right after a switch: releases the previous one
/// (freeing its stack if it has exited).
pub(crate) fn finish_switch() {
    let last = this_cpu().lock().last.take();
    drop(last);
}

/// TSC value the APIC deadline is armed for (0: not armed).
static ARMED_TSC: AtomicU64 = AtomicU64::new(0);

/// Makes sure the APIC deadline fires no later than the end of the slice (if
/// others wait) or the next sleeper, whichever is first.
///
/// The deadline MSR write traps to the hypervisor, so it is only written when
/// the wanted deadline is earlier than the armed one: an early interrupt is
/// harmless (the handler re-arms), and context switches stay free of traps.
fn program_timer(c: &Cpu) {
    let mut next = u64::MAX;
    if !c.run_queue.is_empty() {
        next = c.slice_end_ns;
    }
    if let Some((&(d, _), _)) = TIMERS.lock().first_key_value() {
        next = next.min(d);
    }
    if crate::profile::on() {
        next = next.min(time::monotonic_ns() + crate::profile::PERIOD_NS);
    }
    // Completions are polled while the CPU is busy: a tick bounds how long
    // one waits when no system call or switch comes sooner.
    let is_idle =
        matches!((&c.current, &c.idle), (Some(cur), Some(idle)) if Arc::ptr_eq(cur, idle));
    if !is_idle && POLLED.get().is_some_and(|d| (d.pending)()) {
        next = next.min(time::monotonic_ns() + POLL_TICK_NS);
    }
    if next == u64::MAX {
        return;
    }
    let want = time::deadline_tsc(next).max(1);
    let armed = ARMED_TSC.load(Ordering::Relaxed);
    if armed == 0 || want < armed {
        ARMED_TSC.store(want, Ordering::Relaxed);
        apic::set_deadline(want);
    }
}

/// The APIC's deadline is gone (a partition restored from a snapshot runs
/// on a fresh vCPU): arms it anew. Interrupts off.
pub fn timer_lost() {
    ARMED_TSC.store(0, Ordering::Relaxed);
    program_timer(&this_cpu().lock());
}

/// End of a device interrupt: if it made a thread runnable, run it now
/// when the CPU was idle or the running thread's turn has ended (a wake-up
/// preempts it), rather than at the next timer interrupt.
pub(crate) fn device_interrupt_exit() {
    preempt_if_due(time::monotonic_ns());
}

/// The timer interrupt: wakes sleepers whose time has come and preempts the
/// running thread at the end of its slice.
pub(crate) fn timer_interrupt() {
    TIMER_IRQS.fetch_add(1, Ordering::Relaxed);
    ARMED_TSC.store(0, Ordering::Relaxed);
    flush_devices();
    poll_devices();
    let now = time::monotonic_ns();
    loop {
        let due = {
            let mut timers = TIMERS.lock();
            match timers.first_key_value() {
                Some((&(d, _), _)) if d <= now => timers.pop_first().map(|(_, t)| t),
                _ => None,
            }
        };
        match due {
            Some(t) => make_ready(t),
            None => break,
        }
    }
    // Read again: a thread the loop woke may have ended the running
    // one's turn just now (wake-up preemption), which this interrupt can
    // do at once rather than by another one.
    if !preempt_if_due(time::monotonic_ns()) {
        program_timer(&this_cpu().lock());
    }
}

/// End of an interrupt: switches if another thread is ready and the
/// running one's turn has ended (or the CPU is idle); the preempted thread
/// goes to the back of the run queue. Whether it switched.
fn preempt_if_due(now: u64) -> bool {
    let preempt = {
        let mut c = this_cpu().lock();
        let cur = c.current.clone().expect("scheduler not initialised");
        let is_idle = c.idle.as_ref().is_some_and(|i| Arc::ptr_eq(i, &cur));
        if c.run_queue.is_empty() || (!is_idle && now < c.slice_end_ns) {
            false
        } else {
            if !is_idle {
                cur.set_state(State::Ready);
                cur.preempted_ns.store(now.max(1), Ordering::Relaxed);
                c.run_queue.push_back(cur);
                PREEMPTIONS.fetch_add(1, Ordering::Relaxed);
            }
            true
        }
    };
    if preempt {
        schedule();
    }
    preempt
}

/// Timer interrupts taken so far.
pub fn timer_irqs() -> u64 {
    TIMER_IRQS.load(Ordering::Relaxed)
}

/// Whether no other thread is ready to run on this CPU.
pub fn run_queue_empty() -> bool {
    this_cpu().lock().run_queue.is_empty()
}
