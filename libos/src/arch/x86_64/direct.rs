//! Direct system calls on PVM hosts: the program enters the library OS by a
//! jump instead of a `syscall` trap (see `docs/syscall-entry.md`).
//!
//! On a PVM host the library OS and its program run at the same hardware
//! privilege and the library OS's pages are user pages, so a rewritten
//! system-call site (`crate::syscall::patch`) jumps through its stub to
//! [`direct_entry`], which switches to the thread's kernel stack and runs
//! [`direct_dispatch`] while the host still believes the vCPU is in user
//! mode. Whatever cannot be served that way (anything that may block, or
//! needs a privileged instruction) is declined: the stub then executes its
//! own `syscall`, which traps exactly as the original site did.
//!
//! An interrupt or page fault that arrives during a direct call is, for
//! the host, an event from user mode: its frame says user code segment, and
//! only its stack pointer (inside the thread's kernel stack) tells that the
//! library OS was running. [`in_direct_call`] is that test; the trap path
//! then treats the context as the kernel's (no signal delivery, the frame
//! kept below the interrupted stack pointer) but still leaves by `sysretq`,
//! which puts the host back in user mode.

use core::arch::naked_asm;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::user::KERNEL_RSP;

/// Whether direct entry is on (`--syscall-entry auto|direct`, PVM hosts
/// only). One byte, which the trap entry (`trap.rs`) also tests.
pub(super) static ON: AtomicBool = AtomicBool::new(false);
/// Direct calls served, and declined (executed by the stub's trap).
static SERVED: AtomicU64 = AtomicU64::new(0);
static DECLINED: AtomicU64 = AtomicU64::new(0);
/// Kernel pages the host had not mapped for a direct call, faulted in.
static WARMED: AtomicU64 = AtomicU64::new(0);

/// Bytes of a thread's kernel stack.
pub const KERNEL_STACK_BYTES: u64 = crate::sched::KERNEL_STACK_PAGES as u64 * 4096;

static SELFTEST: AtomicBool = AtomicBool::new(false);

/// Turns direct entry on (at boot, before the program starts): exceptions
/// move to the IST entry too; `selftest` also serves the test-only call of
/// `syscall::direct`.
pub fn enable(selftest: bool) {
    SELFTEST.store(selftest, Ordering::SeqCst);
    ON.store(true, Ordering::SeqCst);
    super::trap::enable_direct_calls();
}

/// Whether the test-only direct call is served (`direct.selftest=1`).
pub fn selftest() -> bool {
    SELFTEST.load(Ordering::Relaxed)
}

/// Whether direct entry is on.
pub fn enabled() -> bool {
    ON.load(Ordering::Relaxed)
}

/// (served, declined, kernel pages warmed) so far.
pub fn stats() -> (u64, u64, u64) {
    (
        SERVED.load(Ordering::Relaxed),
        DECLINED.load(Ordering::Relaxed),
        WARMED.load(Ordering::Relaxed),
    )
}

/// The address stubs jump to.
pub fn entry_address() -> u64 {
    direct_entry as *const () as u64
}

/// Whether an event whose frame has a user code segment and stack pointer
/// `rsp` interrupted a direct call (the library OS on the thread's kernel
/// stack) rather than the program.
#[inline]
pub fn in_direct_call(rsp: u64) -> bool {
    enabled() && KERNEL_RSP.load(Ordering::Relaxed).wrapping_sub(rsp) < KERNEL_STACK_BYTES
}

/// What a direct call saved, lowest address first.
#[repr(C)]
#[derive(Debug)]
#[allow(missing_docs)]
pub struct DirectFrame {
    pub r9: u64,
    pub r8: u64,
    pub r10: u64,
    pub rdx: u64,
    pub rsi: u64,
    pub rdi: u64,
    /// The number on entry; the result when served.
    pub rax: u64,
    pub rflags: u64,
    /// Where the program goes on: the stub's continuation after its
    /// `syscall` when served, 2 bytes before it (the `syscall`) when declined.
    pub cont: u64,
    pub user_rsp: u64,
}

/// The entry: rax = number, arguments as for `syscall`, r11 = the stub's
/// continuation (its `syscall` instruction is the 2 bytes before). rcx and
/// r11 are free, as `syscall` clobbers them; every other register, the
/// flags and the red zone below the program's stack pointer survive.
#[unsafe(naked)]
unsafe extern "C" fn direct_entry() {
    naked_asm!(
        "mov rcx, rsp",
        // From here the stack pointer is in the thread's kernel stack, and an
        // interrupt knows a direct call is running (`in_direct_call`).
        "mov rsp, [rip + {kernel_rsp}]",
        "push rcx",
        "push r11",
        "pushfq",
        "push rax",
        "push rdi",
        "push rsi",
        "push rdx",
        "push r10",
        "push r8",
        "push r9",
        "mov rdi, rsp",
        "cld",
        "call {dispatch}",
        "pop r9",
        "pop r8",
        "pop r10",
        "pop rdx",
        "pop rsi",
        "pop rdi",
        "pop rax",
        // The thread's upgrade flag, just above its entry stack top.
        "mov rcx, [rip + {kernel_rsp}]",
        "cmp qword ptr [rcx], 0",
        "jne 3f",
        "popfq",
        "pop r11",
        "pop rcx",
        "mov rsp, rcx",
        "jmp r11",
        // Upgraded: the host believes the vCPU is in supervisor mode, and
        // only a trapped `sysretq` takes it back to user mode. rcx and r11
        // end as after a real `syscall` (return address, flags). From the
        // flag's clearing to `sysretq`, an event counts the call as
        // upgraded by its instruction pointer (`upgraded`).
        "3:",
        "mov qword ptr [rcx], 0",
        ".global astraea_direct_upgraded_tail",
        "astraea_direct_upgraded_tail:",
        "pop r11",
        "pop rcx",
        "pop rsp",
        ".global astraea_direct_sysret",
        "astraea_direct_sysret:",
        "sysretq",
        // A new thread's first return to the program ([`start_user`]), rdi
        // = its registers (`UserRegs`) on its kernel stack. Here, inside
        // the entry, so that a fault of the last two instructions on the
        // program's stack is recognised (`in_entry_code`).
        ".global astraea_direct_thread_start",
        "astraea_direct_thread_start:",
        "mov rsp, rdi",
        "mov rcx, [rip + {kernel_rsp}]",
        "cmp qword ptr [rcx], 0",
        "jne 4f",
        "pop r8",
        "pop r9",
        "pop r10",
        "pop r11",
        "pop r12",
        "pop r13",
        "pop r14",
        "pop r15",
        "pop rdi",
        "pop rsi",
        "pop rbp",
        "pop rbx",
        "pop rdx",
        "pop rax",
        // Past rcx, rsp and rip, to rflags: rcx and r11 end as after a
        // served direct call (the program's stack pointer, its address).
        "add rsp, 24",
        "mov r11, [rsp - 8]",
        "mov rcx, [rsp - 16]",
        "popfq",
        "mov rsp, rcx",
        "jmp r11",
        // Upgraded (resumed by the scheduler, or a fault on the way): the
        // host believes the vCPU is in supervisor mode, so events arrive
        // as the kernel's and the usual return by `sysretq` follows.
        "4:",
        "mov qword ptr [rcx], 0",
        "and rsp, -16",
        "call {resume}",
        "ud2",
        ".global astraea_direct_entry_end",
        "astraea_direct_entry_end:",
        kernel_rsp = sym KERNEL_RSP,
        dispatch = sym direct_dispatch,
        resume = sym super::user::resume_user,
    );
}

/// A new thread made by `clone` while direct entry is on starts as if it
/// had left the CPU inside a direct call (`sched::leave_direct`): a thread
/// waiting in a direct call (its creator, in glibc's and HotSpot's start
/// handshakes) can switch to it with no event through the host, and its
/// first return to the program is then a jump, with every register from
/// `r` but rcx and r11 (clobbered, as by `syscall`). When the scheduler
/// started it in supervisor mode (its upgrade word set), or something on
/// the way upgraded it, it returns by `sysretq` as [`resume_user`] does.
///
/// [`resume_user`]: super::user::resume_user
pub fn start_user(r: &super::user::UserRegs) -> ! {
    let mut regs = *r;
    // As `SyscallFrame::set_user_regs`: only the arithmetic flags, DF, TF
    // and AC come from the program, IF is set.
    regs.rflags = (r.rflags & 0x4_0dd5) | 0x202;
    if regs.rflags & 0x100 != 0 {
        // A trap flag would single-step the jump's last instructions.
        enter_supervisor();
    }
    // SAFETY: `regs` lives in this frame, which is never left: the tail
    // moves the stack pointer to it and pops it (or hands it to
    // `resume_user`, which copies it before using the stack below).
    unsafe {
        core::arch::asm!(
            "jmp astraea_direct_thread_start",
            in("rdi") &raw const regs,
            options(noreturn),
        )
    }
}

extern "C" fn direct_dispatch(f: &mut DirectFrame) {
    match crate::syscall::direct(f.rax, [f.rdi, f.rsi, f.rdx, f.r10, f.r8, f.r9]) {
        Some(v) => {
            f.rax = v;
            SERVED.fetch_add(1, Ordering::Relaxed);
        }
        None => {
            f.cont -= 2;
            DECLINED.fetch_add(1, Ordering::Relaxed);
        }
    }
}

unsafe extern "C" {
    fn astraea_direct_upgraded_tail();
    fn astraea_direct_sysret();
    fn astraea_direct_entry_end();
}

/// Whether `rip` is an instruction of [`direct_entry`]. Its first two run
/// on the program's stack (and its last ones again), where a fault looks
/// like the program's own: a fetch of the entry's page, or the read of
/// `KERNEL_RSP`, when the host has dropped its user-mode mapping of that
/// library-OS page (as it may after a TLB flush). The trap handler then
/// touches the page ([`warm_entry`]) and lets the instruction run again.
pub fn in_entry_code(rip: u64) -> bool {
    let start = direct_entry as *const () as u64;
    let end = astraea_direct_entry_end as *const () as u64;
    enabled() && (start..end).contains(&rip)
}

/// Whether `rip` is the upgraded exit's `sysretq`: an interrupt there
/// (the stack pointer already the program's) finishes that return itself.
pub fn at_upgraded_exit(rip: u64) -> bool {
    enabled() && rip == astraea_direct_sysret as *const () as u64
}

/// The current thread's upgrade flag: the word at its entry stack top
/// (`KernelStack::entry_top`), which nothing else writes. Zero whenever no
/// direct call of the thread is upgraded: set only by [`upgrade`], cleared
/// by the call's way out. Kept out of the call's frame, which a fault in
/// the entry's first pushes may be upgrading before it exists.
fn flag() -> *mut u64 {
    KERNEL_RSP.load(Ordering::Relaxed) as *mut u64
}

/// Whether the current thread's direct call, interrupted at `rip`, was
/// upgraded.
pub fn upgraded(rip: u64) -> bool {
    let tail = astraea_direct_upgraded_tail as *const () as u64;
    let sysret = astraea_direct_sysret as *const () as u64;
    // SAFETY: the flag word of the current thread's kernel stack.
    (tail..sysret).contains(&rip) || unsafe { flag().read_volatile() } != 0
}

/// Lets the current thread's interrupted direct call go on in supervisor
/// mode for the host: the event returns by a native `iretq`, which the host
/// does not see, and the call leaves by `sysretq`. A PVM host maps a
/// library-OS page written for the first time in user mode never (touching
/// it in supervisor mode does not help, unlike a read).
pub fn upgrade() {
    UPGRADED.fetch_add(1, Ordering::Relaxed);
    // SAFETY: the flag word of the current thread's kernel stack.
    unsafe { flag().write_volatile(1) };
}

static UPGRADED: AtomicU64 = AtomicU64::new(0);

/// Whether the current thread's direct call goes on in supervisor mode for
/// the host (upgraded). Only meaningful inside a direct call.
pub fn in_supervisor() -> bool {
    // SAFETY: the flag word of the current thread's kernel stack.
    unsafe { flag().read_volatile() != 0 }
}

/// Sets the upgrade word of the thread whose entry stack top is `top`: 1
/// when it is resumed in supervisor mode (by the scheduler), 0 before a
/// switch to it from a direct call (`context::switch_direct`).
///
/// # Safety
/// `top` is the entry stack top of a thread that is not running.
pub unsafe fn set_upgraded(top: u64, on: bool) {
    // SAFETY: the caller's promise; nothing else writes the word.
    unsafe { (top as *mut u64).write_volatile(u64::from(on)) };
}

/// Upgrades the current direct call on purpose (to switch to a thread that
/// left the CPU in supervisor mode): an invalid instruction at a known
/// address, which the trap handler steps over, leaving the host in
/// supervisor mode (one event through the host, as for any upgrade).
pub fn enter_supervisor() {
    if !in_supervisor() {
        // SAFETY: the trap handler recognises this `ud2` and skips it.
        unsafe { upgrade_request() };
    }
}

/// `ud2; ret`: the trap handler steps over the `ud2` ([`is_upgrade_request`]).
#[unsafe(naked)]
unsafe extern "C" fn upgrade_request() {
    naked_asm!("ud2", "ret");
}

/// Whether `rip` is [`enter_supervisor`]'s `ud2`.
pub fn is_upgrade_request(rip: u64) -> bool {
    rip == upgrade_request as *const () as u64
}

/// Direct calls that had to go on in supervisor mode.
pub fn upgrades() -> u64 {
    UPGRADED.load(Ordering::Relaxed)
}

/// A read fault in a direct call at a library-OS address: the host maps
/// such pages for user mode once the kernel has read them itself. Touch the
/// page (here, in supervisor mode) and let the call go on. `false` for
/// anything else (the caller upgrades the call or reports a bug).
pub fn warm(addr: u64, write: bool) -> bool {
    if addr < crate::mm::DIRECT_MAP || write {
        return false;
    }
    static LAST: AtomicU64 = AtomicU64::new(0);
    static REPEATS: AtomicU64 = AtomicU64::new(0);
    let page = addr & !0xfff;
    if LAST.swap(page, Ordering::Relaxed) == page {
        if REPEATS.fetch_add(1, Ordering::Relaxed) > 8 {
            return false;
        }
    } else {
        REPEATS.store(0, Ordering::Relaxed);
    }
    touch(page);
    true
}

/// [`warm`] for a fault of [`direct_entry`]'s instructions on the program's
/// stack ([`in_entry_code`]). The host may drop the entry page's user-mode
/// mapping again after every flush, so consecutive faults on one page are
/// normal here; only faults with no direct call finished since mean that
/// touching does not help (then `false`: the fault is reported).
pub fn warm_entry(addr: u64, write: bool) -> bool {
    if addr < crate::mm::DIRECT_MAP || write {
        return false;
    }
    static CALLS_AT_LAST: AtomicU64 = AtomicU64::new(u64::MAX);
    static STUCK: AtomicU64 = AtomicU64::new(0);
    let calls = SERVED.load(Ordering::Relaxed) + DECLINED.load(Ordering::Relaxed);
    if CALLS_AT_LAST.swap(calls, Ordering::Relaxed) == calls {
        if STUCK.fetch_add(1, Ordering::Relaxed) > 8 {
            return false;
        }
    } else {
        STUCK.store(0, Ordering::Relaxed);
    }
    touch(addr & !0xfff);
    true
}

/// Reads a word of the library-OS page `page` in supervisor mode, after
/// which the host maps it for user mode too.
fn touch(page: u64) {
    // SAFETY: `page` is a library-OS address the direct call was using; if
    // it is not mapped the kernel faults here and reports it.
    unsafe { core::ptr::read_volatile(page as *const u64) };
    WARMED.fetch_add(1, Ordering::Relaxed);
}
