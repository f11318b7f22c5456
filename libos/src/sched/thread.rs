//! A kernel thread: its stack, saved context and state.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::sync::Arc;
use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};

use super::WaitQueue;
use crate::arch::context;
use crate::mm::KernelStack;
use crate::sync::IrqLock;

/// Pages in a kernel thread's stack (plus one guard page below).
pub(crate) const STACK_PAGES: usize = 16;

/// A thread's scheduling state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum State {
    /// In a run queue.
    Ready = 0,
    /// On a CPU.
    Running = 1,
    /// Waiting on a wait queue or a timer.
    Blocked = 2,
    /// Finished; freed once no one refers to it.
    Dead = 3,
}

/// A shared handle to a thread.
pub type ThreadRef = Arc<Thread>;

type Entry = Box<dyn FnOnce() + Send>;

/// A kernel thread.
pub struct Thread {
    /// Thread id (atomic only so that the program's first thread can take
    /// the process id the VMM chose: see [`Thread::renumber`]).
    id: AtomicU64,
    name: String,
    state: AtomicU8,
    /// Stack pointer saved by the context switch while the thread is off-CPU.
    rsp: UnsafeCell<u64>,
    stack: Option<KernelStack>,
    entry: IrqLock<Option<Entry>>,
    done: AtomicBool,
    exited: WaitQueue,
    /// Its 9P requests may wait for the network indefinitely (a socket's
    /// posted read or listen): they leave room in the queue for others.
    posts: AtomicBool,
    /// In a read or write of a file of the namespace (see
    /// `drivers::doorbell::file_io`).
    file_io: AtomicBool,
    /// It left the CPU inside a direct system call (`sched::leave_direct`),
    /// where it can go on in either mode of a PVM host: another direct call
    /// may switch to it without entering supervisor mode.
    pub(crate) resume_direct: AtomicBool,
    /// When it last became ready after blocking (monotonic ns): how long it
    /// has wanted the CPU without a break (`sched::enqueue`).
    pub(crate) woke_ns: AtomicU64,
    /// When an interrupt last took the CPU from it while it ran (monotonic
    /// ns; 0 once it blocks): a thread woken since goes ahead of it in the
    /// run queue for a slice (`sched::enqueue`).
    pub(crate) preempted_ns: AtomicU64,
    /// What a thread of the program has besides its kernel context.
    pub user: UserCtx,
}

/// A program thread's state: its thread pointer, the address cleared on
/// exit, its FPU/SSE/AVX registers while off the CPU, its signal mask.
pub struct UserCtx {
    /// Whether the thread runs program code (its FPU state is switched).
    pub active: AtomicBool,
    /// The FS base (`arch_prctl(ARCH_SET_FS)`, `CLONE_SETTLS`).
    pub fs_base: AtomicU64,
    /// `set_tid_address` / `CLONE_CHILD_CLEARTID`: zeroed and woken at exit.
    pub clear_child_tid: AtomicU64,
    /// `set_robust_list`: the head of the robust futexes it holds, walked
    /// at exit (0: none).
    pub robust_list: AtomicU64,
    /// Blocked signals (bit n-1 for signal n).
    pub sigmask: AtomicU64,
    /// The mask to go back to after a wait that replaced it (`ppoll`,
    /// `epoll_pwait`): restored when the wait ends, or, when it ended for a
    /// signal, by the delivery of that signal (saved in its frame).
    pub saved_sigmask: IrqLock<Option<u64>>,
    /// Signals sent to this thread and not yet delivered.
    pub pending: AtomicU64,
    /// The `siginfo` of each signal instance sent and not yet delivered, in
    /// the order sent: one per pending standard signal (the first sent),
    /// every instance of a real-time one (they queue).
    pub queued: IrqLock<alloc::collections::VecDeque<(u32, crate::signal::SigInfo)>>,
    /// `sigaltstack`: (base, size, flags).
    pub altstack: IrqLock<(u64, u64, u32)>,
    /// The saved extended state (XSAVE area), while another thread owns the FPU.
    pub fpu: IrqLock<Option<crate::arch::fpu::FpuArea>>,
    /// Nanoseconds on the CPU before its current run (see `sched::cpu_ns`).
    pub cpu_ns: AtomicU64,
    /// When it last got the CPU (monotonic ns).
    pub on_cpu_since: AtomicU64,
}

impl UserCtx {
    const fn new() -> Self {
        Self {
            active: AtomicBool::new(false),
            fs_base: AtomicU64::new(0),
            clear_child_tid: AtomicU64::new(0),
            robust_list: AtomicU64::new(0),
            sigmask: AtomicU64::new(0),
            saved_sigmask: IrqLock::new(None),
            pending: AtomicU64::new(0),
            queued: IrqLock::new(alloc::collections::VecDeque::new()),
            altstack: IrqLock::new((0, 0, 2)),
            fpu: IrqLock::new(None),
            cpu_ns: AtomicU64::new(0),
            on_cpu_since: AtomicU64::new(0),
        }
    }
}

// SAFETY: `rsp` is only touched by the scheduler with interrupts off, while the
// thread is not running (the switch writes it as the thread leaves the CPU and
// reads it when it is chosen); every other field is Sync.
unsafe impl Sync for Thread {}
// SAFETY: as above; the entry closure is Send.
unsafe impl Send for Thread {}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl Thread {
    fn alloc(name: &str, stack: Option<KernelStack>, entry: Option<Entry>) -> ThreadRef {
        Arc::new(Thread {
            id: AtomicU64::new(NEXT_ID.fetch_add(1, Ordering::Relaxed)),
            name: String::from(name),
            // Not yet in a run queue: `make_ready` puts it there.
            state: AtomicU8::new(State::Blocked as u8),
            rsp: UnsafeCell::new(0),
            stack,
            entry: IrqLock::new(entry),
            done: AtomicBool::new(false),
            exited: WaitQueue::new(),
            posts: AtomicBool::new(false),
            file_io: AtomicBool::new(false),
            resume_direct: AtomicBool::new(false),
            woke_ns: AtomicU64::new(0),
            preempted_ns: AtomicU64::new(0),
            user: UserCtx::new(),
        })
    }

    /// The context that booted the kernel, running on the boot stack.
    pub(crate) fn new_boot(name: &str) -> ThreadRef {
        Self::alloc(name, None, None)
    }

    /// A new thread that will run `entry` on its own stack.
    pub(crate) fn new_kernel(name: &str, entry: Entry) -> Option<ThreadRef> {
        let stack = KernelStack::new(STACK_PAGES)?;
        let top = stack.entry_top();
        let t = Self::alloc(name, Some(stack), Some(entry));
        // SAFETY: `top` is the aligned entry top of the thread's own fresh stack.
        let sp = unsafe { context::init_stack(top, thread_start, 0) };
        // SAFETY: the thread is not yet visible to the scheduler.
        unsafe { *t.rsp.get() = sp };
        Some(t)
    }

    /// Marks the thread as one whose 9P requests may wait indefinitely.
    pub fn set_posts(&self) {
        self.posts.store(true, Ordering::Relaxed);
    }

    /// Whether its 9P requests may wait indefinitely.
    pub fn posts(&self) -> bool {
        self.posts.load(Ordering::Relaxed)
    }

    /// Marks the thread as reading or writing a file of the namespace
    /// (`drivers::doorbell::file_io`), or no longer.
    pub fn set_file_io(&self, on: bool) {
        self.file_io.store(on, Ordering::Relaxed);
    }

    /// Whether it is reading or writing a file of the namespace.
    pub fn file_io(&self) -> bool {
        self.file_io.load(Ordering::Relaxed)
    }

    /// Thread id.
    pub fn id(&self) -> u64 {
        self.id.load(Ordering::Relaxed)
    }

    /// Gives the thread the id `id`, and the threads made after it the ids
    /// that follow. For the program's first thread before the program runs
    /// (its id is the process id), while nothing has recorded the old one.
    pub(crate) fn renumber(&self, id: u64) {
        self.id.store(id, Ordering::Relaxed);
        NEXT_ID.fetch_max(id + 1, Ordering::Relaxed);
    }

    /// Thread name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Current state.
    pub fn state(&self) -> State {
        match self.state.load(Ordering::Acquire) {
            0 => State::Ready,
            1 => State::Running,
            2 => State::Blocked,
            _ => State::Dead,
        }
    }

    pub(crate) fn set_state(&self, s: State) {
        self.state.store(s as u8, Ordering::Release);
    }

    /// Blocked → Ready in one step; whether this call did it. Two wakers
    /// (a system call and an interrupt handler that preempts it) must not
    /// both queue the thread.
    pub(crate) fn ready_if_blocked(&self) -> bool {
        self.state
            .compare_exchange(
                State::Blocked as u8,
                State::Ready as u8,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_ok()
    }

    pub(crate) fn context_ptr(&self) -> *mut u64 {
        self.rsp.get()
    }

    pub(crate) fn saved_rsp(&self) -> u64 {
        // SAFETY: called by the scheduler with interrupts off for a thread
        // that is not running, so no switch writes `rsp` concurrently.
        unsafe { *self.rsp.get() }
    }

    /// Where entries from the program start its kernel stack.
    pub(crate) fn stack_top(&self) -> Option<u64> {
        self.stack.as_ref().map(KernelStack::entry_top)
    }

    /// Marks the thread finished and wakes its joiners.
    pub(crate) fn finish(&self) {
        self.done.store(true, Ordering::Release);
        self.exited.wake_all();
    }
}

/// The first code a new thread runs (via the context-switch trampoline).
extern "C" fn thread_start(_: u64) -> ! {
    super::finish_switch();
    crate::arch::cpu::irq_restore(true);
    let entry = super::current().entry.lock().take();
    if let Some(f) = entry {
        f();
    }
    super::exit_current()
}

/// Waits for a thread to finish.
pub struct JoinHandle {
    thread: ThreadRef,
}

impl JoinHandle {
    pub(crate) fn new(thread: ThreadRef) -> Self {
        Self { thread }
    }

    /// The thread.
    pub fn thread(&self) -> &ThreadRef {
        &self.thread
    }

    /// Blocks until the thread has finished.
    pub fn join(self) {
        let t = &self.thread;
        t.exited.wait_while(|| !t.done.load(Ordering::Acquire));
    }
}
