//! Signals: the process's dispositions, per-thread masks and pending sets,
//! and delivery on a Linux x86-64 `rt_sigframe` with the full XSAVE state.
//!
//! A signal is delivered when its thread returns to the program (the end
//! of a system call or of a trap). Synchronous faults (page faults, #DE,
//! #UD) are delivered at once, or end the partition if the program neither
//! catches them nor can (blocked or ignored), as Linux does.

use core::sync::atomic::{AtomicU64, Ordering};

use crate::arch::user::UserRegs;
use crate::errno::Errno;
use crate::mm::user;
use crate::sync::IrqLock;

/// `SIGSEGV` and friends.
#[allow(missing_docs)]
pub mod nr {
    pub const SIGILL: u32 = 4;
    pub const SIGTRAP: u32 = 5;
    pub const SIGABRT: u32 = 6;
    pub const SIGBUS: u32 = 7;
    pub const SIGFPE: u32 = 8;
    pub const SIGKILL: u32 = 9;
    pub const SIGSEGV: u32 = 11;
    pub const SIGPIPE: u32 = 13;
    pub const SIGCHLD: u32 = 17;
    pub const SIGCONT: u32 = 18;
    pub const SIGSTOP: u32 = 19;
    pub const SIGURG: u32 = 23;
    pub const SIGWINCH: u32 = 28;
}

/// `SEGV_MAPERR`, `SEGV_ACCERR`, `FPE_INTDIV`, `ILL_ILLOPN`, `BUS_ADRERR`,
/// `SI_USER`, `SI_TKILL`.
#[allow(missing_docs)]
pub mod code {
    pub const SI_USER: i32 = 0;
    pub const SI_QUEUE: i32 = -1;
    pub const SI_TIMER: i32 = -2;
    pub const SI_TKILL: i32 = -6;
    pub const SEGV_MAPERR: i32 = 1;
    pub const SEGV_ACCERR: i32 = 2;
    pub const BUS_ADRERR: i32 = 2;
    pub const FPE_INTDIV: i32 = 1;
    pub const FPE_FLTDIV: i32 = 3;
    pub const ILL_ILLOPN: i32 = 2;
    pub const TRAP_BRKPT: i32 = 1;
}

const SIG_DFL: u64 = 0;
const SIG_IGN: u64 = 1;
const SA_ONSTACK: u64 = 0x0800_0000;
const SA_RESTART: u64 = 0x1000_0000;
const SA_NODEFER: u64 = 0x4000_0000;
const SA_RESETHAND: u64 = 0x8000_0000;
const SS_ONSTACK: u32 = 1;
const SS_DISABLE: u32 = 2;

/// A `struct sigaction` as the kernel ABI has it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Action {
    /// Handler address, `SIG_DFL` or `SIG_IGN`.
    pub handler: u64,
    /// `SA_*`.
    pub flags: u64,
    /// Where the handler returns (calls `rt_sigreturn`).
    pub restorer: u64,
    /// Blocked while the handler runs.
    pub mask: u64,
}

static ACTIONS: IrqLock<[Action; 64]> = IrqLock::new(
    [Action {
        handler: 0,
        flags: 0,
        restorer: 0,
        mask: 0,
    }; 64],
);

/// Signals that cannot be caught, blocked or ignored.
const UNBLOCKABLE: u64 = (1 << (nr::SIGKILL - 1)) | (1 << (nr::SIGSTOP - 1));

/// The first real-time signal (the kernel's; libcs reserve a few).
const SIGRTMIN: u32 = 32;

fn bit(sig: u32) -> u64 {
    1u64 << (sig - 1)
}

/// Replaces the action for `sig`; returns the old one.
pub fn set_action(sig: u32, new: Option<Action>) -> Result<Action, Errno> {
    if !(1..=64).contains(&sig) || (new.is_some() && bit(sig) & UNBLOCKABLE != 0) {
        return Err(Errno::EINVAL);
    }
    let old = {
        let mut all = ACTIONS.lock();
        let old = all[sig as usize - 1];
        if let Some(a) = new {
            all[sig as usize - 1] = a;
        }
        old
    };
    if new.is_some() && ignored_now(sig) {
        flush(sig);
    }
    Ok(old)
}

/// Changes the calling thread's mask (`how` as `rt_sigprocmask`); returns
/// the old mask.
pub fn set_mask(how: u64, set: Option<u64>) -> Result<u64, Errno> {
    let me = crate::sched::current();
    let old = me.user.sigmask.load(Ordering::Relaxed);
    if let Some(set) = set {
        let new = match how {
            0 => old | set,
            1 => old & !set,
            2 => set,
            _ => return Err(Errno::EINVAL),
        } & !UNBLOCKABLE;
        me.user.sigmask.store(new, Ordering::Relaxed);
    }
    Ok(old)
}

/// Replaces the calling thread's mask with `mask` for a wait (`ppoll`,
/// `pselect6`, `epoll_pwait`); [`end_wait_mask`] puts the old one back.
pub fn begin_wait_mask(mask: u64) {
    let me = crate::sched::current();
    let old = me.user.sigmask.swap(mask & !UNBLOCKABLE, Ordering::Relaxed);
    let mut saved = me.user.saved_sigmask.lock();
    if saved.is_none() {
        *saved = Some(old);
    }
}

/// Ends a wait under a mask from [`begin_wait_mask`]: the old mask comes
/// back now, unless the wait was interrupted (`EINTR`): then the signal's
/// delivery runs its handler under the wait's mask first and saves the old
/// one in its frame, as Linux does.
pub fn end_wait_mask(interrupted: bool) {
    if interrupted {
        return;
    }
    let me = crate::sched::current();
    let saved = me.user.saved_sigmask.lock().take();
    if let Some(m) = saved {
        me.user.sigmask.store(m, Ordering::Relaxed);
    }
}

/// Whether the calling thread has a signal it would take now (a blocking
/// call returns EINTR for it).
pub fn has_deliverable() -> bool {
    let me = crate::sched::current();
    pending_all(&me) & !me.user.sigmask.load(Ordering::Relaxed) != 0
}

/// Whether a system call cut short by the signal about to be delivered
/// restarts (its handler has `SA_RESTART`, or it runs none: an ignored
/// signal interrupts nothing) rather than failing with `EINTR`.
pub fn restart_allowed() -> bool {
    let me = crate::sched::current();
    let Some((sig, _)) = next_of(&me, !me.user.sigmask.load(Ordering::Relaxed)) else {
        return true;
    };
    let action = ACTIONS.lock()[sig as usize - 1];
    match action.handler {
        SIG_IGN => true,
        SIG_DFL => ignored_by_default(sig),
        _ => action.flags & SA_RESTART != 0,
    }
}

/// Whether the calling thread has a signal that ends a wait with `EINTR`:
/// one it would take now that is not ignored (Linux drops an ignored
/// signal when it is sent, so it never interrupts anything).
pub fn has_interrupting() -> bool {
    let me = crate::sched::current();
    let mut ready = pending_all(&me) & !me.user.sigmask.load(Ordering::Relaxed);
    if ready == 0 {
        return false;
    }
    let actions = ACTIONS.lock();
    while ready != 0 {
        let sig = ready.trailing_zeros() + 1;
        ready &= ready - 1;
        match actions[sig as usize - 1].handler {
            SIG_IGN => {}
            SIG_DFL if ignored_by_default(sig) => {}
            _ => return true,
        }
    }
    false
}

/// A `siginfo_t` as the handler receives it (128 bytes).
pub type SigInfo = [u8; 128];

/// Signals sent to the process as a whole (`kill`, `sigqueue`, a process
/// timer, the host), pending here until a thread that does not block one
/// takes it, as Linux's `shared_pending`: a thread takes its own
/// (thread-directed) pending signals first, then the process's, the
/// lowest-numbered of each first (`dequeue_signal`).
static SHARED_PENDING: AtomicU64 = AtomicU64::new(0);
/// Their queued instances with their `siginfo`, oldest first.
static SHARED_QUEUED: IrqLock<alloc::collections::VecDeque<(u32, SigInfo)>> =
    IrqLock::new(alloc::collections::VecDeque::new());

/// Every signal sent, counted (`epoll`'s edges for signalfds).
pub static SENT_WAKES: crate::vfs::Wakes = crate::vfs::Wakes::new();
/// signalfd readers waiting for a signal of their mask.
pub static SENT: crate::sched::WaitQueue = crate::sched::WaitQueue::new();

/// Tells signalfd readers and pollers that a signal was queued.
fn queued_wake() {
    SENT_WAKES.input();
    SENT.wake_all();
    crate::vfs::readiness_changed();
}

/// The signal the calling thread takes next among `allowed`: its own
/// first, then the process's (`true`).
fn next_of(me: &crate::sched::ThreadRef, allowed: u64) -> Option<(u32, bool)> {
    let own = me.user.pending.load(Ordering::Acquire) & allowed;
    if own != 0 {
        return Some((own.trailing_zeros() + 1, false));
    }
    let shared = SHARED_PENDING.load(Ordering::Acquire) & allowed;
    (shared != 0).then(|| (shared.trailing_zeros() + 1, true))
}

/// All signals pending for the calling thread: its own and the process's.
fn pending_all(me: &crate::sched::ThreadRef) -> u64 {
    me.user.pending.load(Ordering::Acquire) | SHARED_PENDING.load(Ordering::Acquire)
}

/// Takes one instance of `sig` from the thread's own queue or the
/// process's: its `siginfo`, if one was queued.
fn dequeue(me: &crate::sched::ThreadRef, sig: u32, shared: bool) -> Option<SigInfo> {
    let take = |q: &mut alloc::collections::VecDeque<(u32, SigInfo)>, pending: &AtomicU64| {
        let at = q.iter().position(|(s, _)| *s == sig);
        let sent = at.and_then(|i| q.remove(i)).map(|(_, b)| b);
        // Another instance (a real-time signal's) stays pending.
        if !q.iter().any(|(s, _)| *s == sig) {
            pending.fetch_and(!bit(sig), Ordering::AcqRel);
        }
        sent
    };
    if shared {
        take(&mut SHARED_QUEUED.lock(), &SHARED_PENDING)
    } else {
        take(&mut me.user.queued.lock(), &me.user.pending)
    }
}

/// Whether `sig`'s disposition ignores it (`SIG_IGN`, or `SIG_DFL` of a
/// signal ignored by default).
fn ignored_now(sig: u32) -> bool {
    match ACTIONS.lock()[sig as usize - 1].handler {
        SIG_IGN => true,
        SIG_DFL => ignored_by_default(sig),
        _ => false,
    }
}

/// Drops every pending instance of `sig`, the process's and each
/// thread's (a disposition that ignores it was set: Linux's
/// `do_sigaction`).
fn flush(sig: u32) {
    let drop_from = |q: &mut alloc::collections::VecDeque<(u32, SigInfo)>, pending: &AtomicU64| {
        q.retain(|(s, _)| *s != sig);
        pending.fetch_and(!bit(sig), Ordering::AcqRel);
    };
    drop_from(&mut SHARED_QUEUED.lock(), &SHARED_PENDING);
    for tid in crate::process::tids() {
        if let Some(t) = crate::process::thread(tid) {
            drop_from(&mut t.user.queued.lock(), &t.user.pending);
        }
    }
}

/// Queues `sig` with `info` on `q`/`pending`: a standard signal already
/// pending keeps its first `siginfo`, real-time ones queue; `true` when
/// the queue is full (the signal itself stays pending).
fn enqueue(
    q: &mut alloc::collections::VecDeque<(u32, SigInfo)>,
    pending: &AtomicU64,
    sig: u32,
    info: SigInfo,
) -> bool {
    let was = pending.fetch_or(bit(sig), Ordering::AcqRel) & bit(sig) != 0;
    if was && sig < SIGRTMIN {
        false
    } else if q.len() >= MAX_QUEUED {
        true
    } else {
        q.push_back((sig, info));
        false
    }
}

/// Sends `sig` with `info` to the process (`kill`, `sigqueue`): pending
/// for the process, and a thread that does not block it — the main one
/// first — is woken to take it. Dropped at once if its disposition
/// ignores it and the main thread does not block it (Linux's
/// `sig_ignored`). `EAGAIN` when the queue is full.
pub fn send_process(sig: u32, info: SigInfo) -> Result<(), Errno> {
    send_process_to(sig, info, None)
}

/// [`send_process`], woken in thread `prefer` if it does not block `sig`
/// (Linux sends a CPU-time itimer's signal to the thread its tick charged:
/// profilers' samples are of the thread that ran).
pub fn send_process_to(sig: u32, mut info: SigInfo, prefer: Option<u64>) -> Result<(), Errno> {
    if !(1..=64).contains(&sig) {
        return Err(Errno::EINVAL);
    }
    let main = crate::process::thread(crate::process::pid());
    if ignored_now(sig)
        && main
            .as_ref()
            .is_none_or(|t| t.user.sigmask.load(Ordering::Relaxed) & bit(sig) == 0)
    {
        return Ok(());
    }
    info[0..4].copy_from_slice(&(sig as i32).to_le_bytes());
    let full = enqueue(&mut SHARED_QUEUED.lock(), &SHARED_PENDING, sig, info);
    queued_wake();
    let preferred = prefer
        .and_then(crate::process::thread)
        .filter(|t| t.user.sigmask.load(Ordering::Relaxed) & bit(sig) == 0);
    if let Some(t) = preferred
        .or_else(|| crate::process::thread_not_blocking(sig).and_then(crate::process::thread))
    {
        crate::sched::make_ready(t);
    }
    if full { Err(Errno::EAGAIN) } else { Ok(()) }
}

/// The most signal instances queued per thread (Linux's `RLIMIT_SIGPENDING`
/// is per user and larger; a real-time `sigqueue` past it fails `EAGAIN`).
const MAX_QUEUED: usize = 4096;

/// The `siginfo` of a signal sent by this process with `code` (`SI_USER`
/// from `kill`, `SI_TKILL` from `tkill`/`tgkill`): the sender's pid and uid.
pub fn sent_info(sig: u32, code: i32) -> SigInfo {
    let mut b = [0u8; 128];
    b[0..4].copy_from_slice(&(sig as i32).to_le_bytes());
    b[8..12].copy_from_slice(&code.to_le_bytes());
    b[16..20].copy_from_slice(&(crate::process::pid() as u32).to_le_bytes());
    b[20..24].copy_from_slice(&crate::vfs::identity::ids().0.to_le_bytes());
    b
}

/// Marks `sig` pending for the thread `tid` (as `tkill` sends it) and
/// wakes it if it waits.
pub fn send(tid: u64, sig: u32) -> Result<(), Errno> {
    send_info(tid, sig, sent_info(sig, code::SI_TKILL))
}

/// Marks `sig` pending for the thread `tid` with `info` (its `si_signo` is
/// set here) and wakes it if it waits. A standard signal already pending
/// keeps its first `siginfo`; real-time ones queue, each delivered with its
/// own (Linux; tests/progs/memdiff.c). `EAGAIN` when the queue is full
/// (the signal itself stays pending).
pub fn send_info(tid: u64, sig: u32, mut info: SigInfo) -> Result<(), Errno> {
    if !(1..=64).contains(&sig) {
        return Err(Errno::EINVAL);
    }
    let t = crate::process::thread(tid).ok_or(Errno::ESRCH)?;
    // An ignored signal the thread does not block is dropped when sent.
    if ignored_now(sig) && t.user.sigmask.load(Ordering::Relaxed) & bit(sig) == 0 {
        return Ok(());
    }
    info[0..4].copy_from_slice(&(sig as i32).to_le_bytes());
    let full = enqueue(&mut t.user.queued.lock(), &t.user.pending, sig, info);
    queued_wake();
    crate::sched::make_ready(t);
    if full { Err(Errno::EAGAIN) } else { Ok(()) }
}

/// Raises `SIGPIPE` at the calling thread for a write that failed with
/// `EPIPE` (a pipe without readers, a socket shut down or reset; not with
/// `MSG_NOSIGNAL`), as Linux does; returns the error.
pub fn sigpipe(e: Errno, nosignal: bool) -> Errno {
    if e == Errno::EPIPE && !nosignal {
        let me = crate::sched::current().id();
        let _ = send_info(me, nr::SIGPIPE, sent_info(nr::SIGPIPE, code::SI_USER));
    }
    e
}

/// `SIGXFSZ`.
const SIGXFSZ: u32 = 25;

/// Linux's `generic_write_check_limits` for a write of `count` bytes at
/// `pos` of a regular file: how many may be written under `RLIMIT_FSIZE`
/// (fewer where the limit falls inside), or, at or past the limit,
/// `SIGXFSZ` to the caller and `EFBIG` (HotSpot ignores the signal, so Java
/// sees "File too large").
pub fn fsize_clamp(pos: u64, count: u64) -> Result<u64, Errno> {
    let limit = crate::process::rlimit(crate::process::RLIMIT_FSIZE).0;
    if limit == crate::process::RLIM_INFINITY || count == 0 {
        return Ok(count);
    }
    if pos >= limit {
        return Err(fsize_exceeded());
    }
    Ok(count.min(limit - pos))
}

/// Linux's `inode_newsize_ok` for a file growing to `size` (`truncate`,
/// `fallocate`): `SIGXFSZ` and `EFBIG` past `RLIMIT_FSIZE`.
pub fn fsize_grow_ok(size: u64) -> Result<(), Errno> {
    let limit = crate::process::rlimit(crate::process::RLIMIT_FSIZE).0;
    if limit != crate::process::RLIM_INFINITY && size > limit {
        return Err(fsize_exceeded());
    }
    Ok(())
}

fn fsize_exceeded() -> Errno {
    let me = crate::sched::current().id();
    let _ = send_info(me, SIGXFSZ, sent_info(SIGXFSZ, code::SI_USER));
    Errno::EFBIG
}

/// Signals the VMM forwarded before the program had a thread to take
/// them (bit `n - 1` for signal `n`); the first program thread gets them.
static FROM_HOST_EARLY: AtomicU64 = AtomicU64::new(0);

/// Signals sent to the VMM process for the program (`kill` of `astraea
/// run`, Ctrl-C on its terminal; bit `n - 1` for signal `n`): each goes to
/// the process as Linux directs a process signal — to a thread that does not
/// block it, else the main thread, where it waits until unblocked. Called
/// from the interrupt handler (only irq-safe locks are taken).
pub fn from_host(bits: u32) {
    let mut bits = u64::from(bits) | FROM_HOST_EARLY.swap(0, Ordering::AcqRel);
    while bits != 0 {
        let sig = bits.trailing_zeros() + 1;
        bits &= bits - 1;
        if crate::process::tids().is_empty() {
            FROM_HOST_EARLY.fetch_or(bit(sig), Ordering::AcqRel);
        } else {
            // From outside the partition: `SI_USER`, no sender it knows.
            let mut info = sent_info(sig, code::SI_USER);
            info[16..24].fill(0);
            let _ = send_process(sig, info);
        }
    }
}

/// Hands the signals that came before the first program thread to it.
pub fn deliver_early_host_signals() {
    if FROM_HOST_EARLY.load(Ordering::Acquire) != 0 {
        from_host(0);
    }
}

/// What a signal carries into its handler.
#[derive(Debug, Clone, Copy)]
pub struct Info {
    /// The signal.
    pub signo: u32,
    /// `si_code`.
    pub code: i32,
    /// `si_addr` for faults.
    pub addr: u64,
    /// The trap number and error code (the sigcontext's `trapno`/`err`).
    pub trap: (u64, u64),
    /// A sent signal's whole `siginfo` (`kill`, `tkill`, `sigqueue`).
    pub sent: Option<SigInfo>,
}

impl Info {
    fn bytes(&self) -> [u8; 128] {
        if let Some(b) = self.sent {
            return b;
        }
        let mut b = [0u8; 128];
        b[0..4].copy_from_slice(&(self.signo as i32).to_le_bytes());
        b[8..12].copy_from_slice(&self.code.to_le_bytes());
        if self.code > 0 {
            b[16..24].copy_from_slice(&self.addr.to_le_bytes());
        } else {
            // si_pid, si_uid: the process itself.
            b[16..20].copy_from_slice(&(crate::process::pid() as u32).to_le_bytes());
        }
        b
    }
}

/// Ends the partition as Linux ends a process killed by `info.signo`.
pub fn die(info: &Info, regs: &UserRegs) -> ! {
    if info.code <= 0 && info.trap.0 == 0 {
        // Sent (kill, the host's SIGTERM), not a fault: where the program
        // was says nothing.
        crate::eprintln!(
            "astraea: the program was killed by signal {} ({})",
            info.signo,
            name(info.signo)
        );
        crate::boot::exit(128 + info.signo as i32)
    }
    crate::eprintln!(
        "astraea: the program was killed by signal {} ({}) at rip={:#x}, address {:#x}{}",
        info.signo,
        name(info.signo),
        regs.rip,
        info.addr,
        match info.trap {
            (14, e) => alloc::format!(
                " ({} {} page)",
                if e & 2 != 0 {
                    "write to a"
                } else if e & 0x10 != 0 {
                    "instruction fetch from a"
                } else {
                    "read of a"
                },
                if e & 1 != 0 { "protected" } else { "missing" }
            ),
            (0, _) => alloc::string::String::new(),
            (v, e) => alloc::format!(" (exception {v}, error {e:#x})"),
        }
    );
    crate::boot::exit(128 + info.signo as i32)
}

/// The signal's name.
pub fn name(sig: u32) -> &'static str {
    match sig {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        nr::SIGILL => "SIGILL",
        nr::SIGTRAP => "SIGTRAP",
        nr::SIGABRT => "SIGABRT",
        nr::SIGBUS => "SIGBUS",
        nr::SIGFPE => "SIGFPE",
        nr::SIGKILL => "SIGKILL",
        10 => "SIGUSR1",
        nr::SIGSEGV => "SIGSEGV",
        12 => "SIGUSR2",
        nr::SIGPIPE => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        _ => "signal",
    }
}

fn ignored_by_default(sig: u32) -> bool {
    matches!(sig, nr::SIGCHLD | nr::SIGCONT | nr::SIGURG | nr::SIGWINCH)
}

/// A synchronous fault: delivered now into `regs` (which then enter the
/// handler), or the end of the partition.
pub fn fault(info: &Info, regs: &mut UserRegs) {
    let me = crate::sched::current();
    let action = ACTIONS.lock()[info.signo as usize - 1];
    let blocked = me.user.sigmask.load(Ordering::Relaxed) & bit(info.signo) != 0;
    if action.handler == SIG_DFL || action.handler == SIG_IGN || blocked {
        die(info, regs);
    }
    if enter_handler(info, &action, regs, None).is_err() {
        // No room for the frame: Linux forces SIGSEGV; we end here.
        die(info, regs);
    }
}

/// Delivers every pending, unblocked signal of the calling thread into
/// `regs`, as Linux does before it returns to the program: the lowest
/// first, each next one's frame on top of the last (under the mask its
/// handler set), so the last delivered runs first; `true` if `regs`
/// changed. (One at a time, a second pending signal waited for the first
/// handler's next system call and ran nested in it: tests/progs/memdiff.c.)
pub fn deliver_pending(regs: &mut UserRegs) -> bool {
    let mut changed = false;
    while let Some(c) = deliver_one(regs) {
        changed |= c;
    }
    // A wait's mask not used by a delivery goes.
    let me = crate::sched::current();
    let saved = me.user.saved_sigmask.lock().take();
    if let Some(m) = saved {
        me.user.sigmask.store(m, Ordering::Relaxed);
    }
    changed
}

/// Delivers the lowest pending, unblocked signal: `None` if there is none,
/// else whether `regs` changed.
fn deliver_one(regs: &mut UserRegs) -> Option<bool> {
    let me = crate::sched::current();
    let (sig, shared) = next_of(&me, !me.user.sigmask.load(Ordering::Relaxed))?;
    let sent = dequeue(&me, sig, shared);
    let action = ACTIONS.lock()[sig as usize - 1];
    let sent = sent.unwrap_or_else(|| sent_info(sig, code::SI_TKILL));
    let info = Info {
        signo: sig,
        code: i32::from_le_bytes([sent[8], sent[9], sent[10], sent[11]]),
        addr: 0,
        trap: (0, 0),
        sent: Some(sent),
    };
    Some(match action.handler {
        SIG_IGN => false,
        SIG_DFL if ignored_by_default(sig) => false,
        SIG_DFL => die(&info, regs),
        _ => {
            // After a wait under its own mask (`sigsuspend`, `ppoll`), the
            // handler runs under that mask and the frame saves the one from
            // before the wait (restored by `rt_sigreturn`), as Linux's.
            let saved = me.user.saved_sigmask.lock().take();
            if enter_handler(&info, &action, regs, saved).is_err() {
                die(&info, regs);
            }
            true
        }
    })
}

/// Takes the lowest pending signal of the calling thread in `set`, with its
/// `siginfo`, without running anything (`rt_sigtimedwait`): `None` if none
/// is pending.
pub fn take_pending(set: u64) -> Option<(u32, SigInfo)> {
    let me = crate::sched::current();
    let (sig, shared) = next_of(&me, set)?;
    let sent = dequeue(&me, sig, shared);
    Some((sig, sent.unwrap_or_else(|| sent_info(sig, code::SI_TKILL))))
}

/// Whether the calling thread has a signal of `set` pending.
pub fn pending_in(set: u64) -> bool {
    pending_all(&crate::sched::current()) & set != 0
}

/// The calling thread's pending signals that its mask blocks
/// (`rt_sigpending`).
pub fn pending_blocked() -> u64 {
    let me = crate::sched::current();
    pending_all(&me) & me.user.sigmask.load(Ordering::Relaxed)
}

/// Offsets in the frame (Linux's `struct rt_sigframe`): the return
/// address, then `ucontext` (flags, link, stack, sigcontext, mask), then
/// `siginfo`; the XSAVE area lies above, 64-byte aligned.
const UC: u64 = 8;
const UC_MCONTEXT: u64 = 40;
const UC_SIGMASK: u64 = 296;
const UC_SIZE: u64 = 304;
const INFO: u64 = UC + UC_SIZE;
const FRAME_SIZE: u64 = INFO + 128;
const UC_FP_XSTATE: u64 = 1;
const FP_XSTATE_MAGIC1: u32 = 0x4650_5853;
const FP_XSTATE_MAGIC2: u32 = 0x4650_5845;

/// Builds the handler's frame and enters it; the frame saves `saved` (a
/// wait's mask from before it) or else the current mask.
fn enter_handler(
    info: &Info,
    action: &Action,
    regs: &mut UserRegs,
    saved: Option<u64>,
) -> Result<(), Errno> {
    let me = crate::sched::current();
    let (ss_sp, ss_size, ss_flags) = *me.user.altstack.lock();
    let on_alt = ss_flags & SS_DISABLE == 0 && regs.rsp > ss_sp && regs.rsp <= ss_sp + ss_size;
    let mut sp = if action.flags & SA_ONSTACK != 0 && ss_flags & SS_DISABLE == 0 && !on_alt {
        ss_sp + ss_size
    } else {
        regs.rsp.wrapping_sub(128)
    };
    let xsize = crate::arch::fpu::area_size() as u64;
    // The XSAVE area plus the 4-byte trailing magic.
    sp = sp.wrapping_sub(xsize + 4) & !63;
    let fpstate = sp;
    sp = (sp.wrapping_sub(FRAME_SIZE) & !15).wrapping_sub(8);
    let frame = sp;
    user::check_range(frame, fpstate + xsize + 4 - frame)?;
    crate::mm::vma::ensure(frame, fpstate + xsize + 4 - frame, true)?;

    // The extended state goes straight from the registers to the frame.
    crate::arch::fpu::save_to_user(fpstate);
    let xfeatures = crate::arch::fpu::enabled();
    let mut sw = [0u8; 48];
    sw[0..4].copy_from_slice(&FP_XSTATE_MAGIC1.to_le_bytes());
    sw[4..8].copy_from_slice(&((xsize + 4) as u32).to_le_bytes());
    sw[8..16].copy_from_slice(&xfeatures.to_le_bytes());
    sw[16..20].copy_from_slice(&(xsize as u32).to_le_bytes());
    user::copy_in(fpstate + 464, &sw)?;
    user::copy_in(fpstate + xsize, &FP_XSTATE_MAGIC2.to_le_bytes())?;

    let now_mask = me.user.sigmask.load(Ordering::Relaxed);
    let old_mask = saved.unwrap_or(now_mask);
    let mut f = [0u8; FRAME_SIZE as usize];
    let put = |f: &mut [u8], off: u64, v: u64| {
        f[off as usize..off as usize + 8].copy_from_slice(&v.to_le_bytes());
    };
    put(&mut f, 0, action.restorer);
    put(&mut f, UC, UC_FP_XSTATE);
    put(&mut f, UC + 16, ss_sp);
    put(
        &mut f,
        UC + 24,
        u64::from(if on_alt { SS_ONSTACK } else { ss_flags }),
    );
    put(&mut f, UC + 32, ss_size);
    let m = UC + UC_MCONTEXT;
    for (i, v) in [
        regs.r8,
        regs.r9,
        regs.r10,
        regs.r11,
        regs.r12,
        regs.r13,
        regs.r14,
        regs.r15,
        regs.rdi,
        regs.rsi,
        regs.rbp,
        regs.rbx,
        regs.rdx,
        regs.rax,
        regs.rcx,
        regs.rsp,
        regs.rip,
        regs.rflags,
    ]
    .into_iter()
    .enumerate()
    {
        put(&mut f, m + 8 * i as u64, v);
    }
    // cs, gs, fs, ss as 16-bit fields.
    let segs: u64 = 0x33 | (0x2b << 48);
    put(&mut f, m + 144, segs);
    put(&mut f, m + 152, info.trap.1);
    put(&mut f, m + 160, info.trap.0);
    put(&mut f, m + 168, old_mask);
    put(&mut f, m + 176, if info.code > 0 { info.addr } else { 0 });
    put(&mut f, m + 184, fpstate);
    put(&mut f, UC + UC_SIGMASK, old_mask);
    f[INFO as usize..].copy_from_slice(&info.bytes());
    user::copy_in(frame, &f)?;

    let mut mask = now_mask | action.mask;
    if action.flags & SA_NODEFER == 0 {
        mask |= bit(info.signo);
    }
    me.user
        .sigmask
        .store(mask & !UNBLOCKABLE, Ordering::Relaxed);
    if action.flags & SA_RESETHAND != 0 {
        // Only the handler goes back to `SIG_DFL`: the flags and the mask
        // stay, as `sigaction` then reports (Linux's `get_signal`).
        ACTIONS.lock()[info.signo as usize - 1].handler = SIG_DFL;
    }
    regs.rsp = frame;
    regs.rip = action.handler;
    regs.rdi = u64::from(info.signo);
    regs.rsi = frame + INFO;
    regs.rdx = frame + UC;
    regs.rax = 0;
    // DF, TF and RF clear in the handler, as Linux does.
    regs.rflags &= !(0x400 | 0x100 | 0x1_0000);
    Ok(())
}

/// `rt_sigreturn`: the registers, mask and extended state saved in the
/// frame at `uc` (the program's stack pointer after the handler's `ret`).
pub fn sigreturn(uc: u64) -> Result<UserRegs, Errno> {
    let b = user::read_array::<{ UC_SIZE as usize }>(uc)?;
    let get = |off: u64| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&b[off as usize..off as usize + 8]);
        u64::from_le_bytes(w)
    };
    let m = UC_MCONTEXT;
    let g: [u64; 18] = core::array::from_fn(|i| get(m + 8 * i as u64));
    let regs = UserRegs {
        r8: g[0],
        r9: g[1],
        r10: g[2],
        r11: g[3],
        r12: g[4],
        r13: g[5],
        r14: g[6],
        r15: g[7],
        rdi: g[8],
        rsi: g[9],
        rbp: g[10],
        rbx: g[11],
        rdx: g[12],
        rax: g[13],
        rcx: g[14],
        rsp: g[15],
        rip: g[16],
        rflags: g[17],
    };
    let mask = get(UC_SIGMASK);
    let fpstate = get(m + 184);
    if fpstate != 0 {
        crate::arch::fpu::restore_from_user(fpstate)?;
    }
    crate::sched::current()
        .user
        .sigmask
        .store(mask & !UNBLOCKABLE, Ordering::Relaxed);
    Ok(regs)
}

/// `sigaltstack`: sets and/or returns the calling thread's alternate stack,
/// whose flags say `SS_ONSTACK` while the program's stack pointer `rsp` is
/// on it; changing it then is `EPERM` (as Linux; tests/progs/memdiff.c).
pub fn altstack(new: Option<(u64, u64, u32)>, rsp: u64) -> Result<(u64, u64, u32), Errno> {
    let me = crate::sched::current();
    let mut a = me.user.altstack.lock();
    let mut old = *a;
    let on_alt = old.2 & SS_DISABLE == 0 && rsp > old.0 && rsp <= old.0 + old.1;
    if on_alt {
        old.2 = SS_ONSTACK;
    }
    if let Some((sp, size, flags)) = new {
        if on_alt {
            return Err(Errno::EPERM);
        }
        if flags & !(SS_DISABLE | SS_ONSTACK | (1 << 31)) != 0 {
            return Err(Errno::EINVAL);
        }
        if flags & SS_DISABLE != 0 {
            *a = (0, 0, SS_DISABLE);
        } else {
            if size < 2048 {
                return Err(Errno::ENOMEM);
            }
            *a = (sp, size, 0);
        }
    }
    Ok(old)
}
