//! Ring 3: entering user mode and the SYSCALL entry path.
//!
//! One CPU today: the entry stub keeps the user stack pointer in a static
//! scratch slot and switches to the current thread's kernel stack, whose top
//! the scheduler publishes in [`KERNEL_RSP`] (as it does in the TSS).

use core::arch::{asm, naked_asm};
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::cpu::wrmsr;
use super::gdt::{KERNEL_CS, USER_CS, USER_DS, USER32_CS};

const MSR_STAR: u32 = 0xc000_0081;
const MSR_LSTAR: u32 = 0xc000_0082;
const MSR_SFMASK: u32 = 0xc000_0084;
const MSR_FS_BASE: u32 = 0xc000_0100;
/// RFLAGS bits cleared on SYSCALL: TF, IF, DF, IOPL, NT, AC (as Linux).
const SFMASK: u64 = 0x4_7700;

/// Top of the running thread's kernel stack, for the SYSCALL entry.
pub static KERNEL_RSP: AtomicU64 = AtomicU64::new(0);
/// The user stack pointer while a system call runs (one CPU).
static USER_RSP: AtomicU64 = AtomicU64::new(0);

/// Registers saved by the SYSCALL entry, in stack order. The last five
/// words are shaped as an `iretq` frame.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
#[allow(missing_docs)]
pub struct SyscallFrame {
    pub r15: u64,
    pub r14: u64,
    pub r13: u64,
    pub r12: u64,
    pub rbp: u64,
    pub rbx: u64,
    pub r9: u64,
    pub r8: u64,
    pub r10: u64,
    pub rdx: u64,
    pub rsi: u64,
    pub rdi: u64,
    /// System call number on entry, result on exit.
    pub rax: u64,
    /// The program's rcx on return (Linux: its RIP, as SYSCALL left it),
    /// restored by the native `iretq` return.
    pub ret_rcx: u64,
    /// The program's r11 on return (Linux: its RFLAGS), likewise.
    pub ret_r11: u64,
    /// User RIP (SYSCALL put it in rcx).
    pub rcx: u64,
    /// The user code selector.
    pub cs: u64,
    /// User RFLAGS (SYSCALL put them in r11).
    pub r11: u64,
    pub user_rsp: u64,
    /// The user stack selector.
    pub ss: u64,
}

/// Where the program's resume stub lives (see [`RESUME_STUB`]).
pub const RESUME_AT: u64 = 0x7fff_f800_0000;

/// A few instructions mapped into the program's memory at [`RESUME_AT`]
/// ("[vdso]"): the kernel returns to the program with every register as it
/// chooses by `sysretq` to this stub, having put the program's rcx, r11 and
/// rip just below its red zone; the stub reloads them and jumps. `iretq`
/// cannot be used on PVM hosts: natively it runs at hardware CPL 3 without
/// the host noticing the switch to user mode, which `sysretq` (trapped and
/// emulated) does. The arithmetic flags come from r11 through `sysretq`.
pub const RESUME_STUB: [u8; 24] = [
    0x48, 0x8b, 0x0c, 0x24, // mov rcx, [rsp]
    0x4c, 0x8b, 0x5c, 0x24, 0x08, // mov r11, [rsp + 8]
    0x48, 0x8d, 0xa4, 0x24, 0xa0, 0x00, 0x00, 0x00, // lea rsp, [rsp + 160]
    0xff, 0xa4, 0x24, 0x70, 0xff, 0xff, 0xff, // jmp [rsp - 144]
];

/// How far below the program's stack pointer the stub's words go (rcx,
/// r11, rip, and a spare): past the 128-byte red zone.
pub const RESUME_SLOT_BELOW: u64 = 160;

/// Arranges for the program to resume at `rip` with stack `rsp` and these
/// rcx/r11 values through the stub; returns (stub address, stack pointer for
/// `sysretq`), or `None` if the words cannot be written to its stack.
pub fn resume_via_stub(rip: u64, rsp: u64, rcx: u64, r11: u64) -> Option<(u64, u64)> {
    let slot = rsp.checked_sub(RESUME_SLOT_BELOW)?;
    let mut words = [0u8; 32];
    words[..8].copy_from_slice(&rcx.to_le_bytes());
    words[8..16].copy_from_slice(&r11.to_le_bytes());
    words[16..24].copy_from_slice(&rip.to_le_bytes());
    crate::mm::user::copy_in(slot, &words).ok()?;
    Some((RESUME_AT, slot))
}

/// Enables SYSCALL/SYSRET with the kernel's selectors and entry point.
pub fn init() {
    let star = (u64::from(USER32_CS) << 48) | (u64::from(KERNEL_CS) << 32);
    // SAFETY: STAR/LSTAR/SFMASK only define the SYSCALL entry; the selectors
    // match the GDT and the entry stub below is a valid kernel entry.
    unsafe {
        wrmsr(MSR_STAR, star);
        wrmsr(MSR_LSTAR, syscall_entry as *const () as u64);
        wrmsr(MSR_SFMASK, SFMASK);
    }
}

/// The FS base in the CPU now (an MSR write traps on PVM hosts, so it is
/// written only when it changes).
static FS_NOW: AtomicU64 = AtomicU64::new(0);

/// Sets the current thread's user thread pointer (`arch_prctl(ARCH_SET_FS)`).
pub fn set_fs_base(base: u64) {
    crate::sched::current()
        .user
        .fs_base
        .store(base, Ordering::Relaxed);
    set_fs_base_cached(base);
}

/// Whether `wrfsbase` works here: a PVM host runs the guest with its own
/// CR4, and the VMM says (`cpu.fsgsbase=1`) when that has FSGSBASE. The
/// instruction costs a few cycles where the MSR write traps to the host
/// (one per switch between program threads).
static FSGSBASE: AtomicBool = AtomicBool::new(false);

/// Uses `wrfsbase` for the FS base from now on (at boot).
pub fn use_fsgsbase() {
    FSGSBASE.store(true, Ordering::Relaxed);
}

/// Whether the FS base is written by `wrfsbase` ([`use_fsgsbase`]).
pub fn fsgsbase() -> bool {
    FSGSBASE.load(Ordering::Relaxed)
}

/// Forgets which FS base the CPU holds (a restored CPU holds none), so that
/// the next [`set_fs_base_cached`] writes it.
pub fn forget_fs_base() {
    // Not canonical: no thread's FS base.
    FS_NOW.store(u64::MAX, Ordering::Relaxed);
}

/// Loads `base` into FS unless it is there already.
pub fn set_fs_base_cached(base: u64) {
    if FS_NOW.swap(base, Ordering::Relaxed) != base {
        if FSGSBASE.load(Ordering::Relaxed) {
            // SAFETY: the VMM checked that the hardware CR4 enables the
            // instruction; FS is used only by user code.
            unsafe { asm!("wrfsbase {}", in(reg) base, options(nostack, preserves_flags)) };
        } else {
            // SAFETY: FS is used only by user code; the kernel never reads it.
            unsafe { wrmsr(MSR_FS_BASE, base) };
        }
    }
}

/// The system-call frame of the current thread's system call in progress:
/// the entry pushes it at the very top of the thread's kernel stack.
pub fn current_syscall_frame() -> *mut SyscallFrame {
    (KERNEL_RSP.load(Ordering::Relaxed) - core::mem::size_of::<SyscallFrame>() as u64)
        as *mut SyscallFrame
}

/// Every register of the program, as a signal frame holds them. The
/// layout is fixed: a new thread's direct first return pops it
/// (`direct::start_user`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
#[allow(missing_docs)]
pub struct UserRegs {
    pub r8: u64,
    pub r9: u64,
    pub r10: u64,
    pub r11: u64,
    pub r12: u64,
    pub r13: u64,
    pub r14: u64,
    pub r15: u64,
    pub rdi: u64,
    pub rsi: u64,
    pub rbp: u64,
    pub rbx: u64,
    pub rdx: u64,
    pub rax: u64,
    pub rcx: u64,
    pub rsp: u64,
    pub rip: u64,
    pub rflags: u64,
}

/// The program's registers from a frame (`SyscallFrame`, `TrapFrame`):
/// the twelve general registers both keep under the same names, and the
/// four each keeps its own way.
macro_rules! user_regs_of {
    ($f:expr, rcx: $rcx:expr, r11: $r11:expr, rsp: $rsp:expr, rip: $rip:expr, rflags: $fl:expr) => {
        $crate::arch::user::UserRegs {
            r8: $f.r8,
            r9: $f.r9,
            r10: $f.r10,
            r11: $r11,
            r12: $f.r12,
            r13: $f.r13,
            r14: $f.r14,
            r15: $f.r15,
            rdi: $f.rdi,
            rsi: $f.rsi,
            rbp: $f.rbp,
            rbx: $f.rbx,
            rdx: $f.rdx,
            rax: $f.rax,
            rcx: $rcx,
            rsp: $rsp,
            rip: $rip,
            rflags: $fl,
        }
    };
}
pub(crate) use user_regs_of;

/// Copies the twelve general registers both frames name alike from `r`.
macro_rules! set_common_regs {
    ($f:expr, $r:expr) => {{
        let (f, r) = (&mut *$f, $r);
        f.r8 = r.r8;
        f.r9 = r.r9;
        f.r10 = r.r10;
        f.r12 = r.r12;
        f.r13 = r.r13;
        f.r14 = r.r14;
        f.r15 = r.r15;
        f.rdi = r.rdi;
        f.rsi = r.rsi;
        f.rbp = r.rbp;
        f.rbx = r.rbx;
        f.rdx = r.rdx;
        f.rax = r.rax;
    }};
}
pub(crate) use set_common_regs;

impl SyscallFrame {
    /// The program's registers as they were at the system call.
    pub fn user_regs(&self) -> UserRegs {
        // After SYSCALL, rcx holds the return address and r11 the flags
        // (and so do ret_rcx/ret_r11, until a full restore changes them).
        user_regs_of!(self, rcx: self.ret_rcx, r11: self.ret_r11, rsp: self.user_rsp, rip: self.rcx, rflags: self.r11)
    }

    /// Makes this frame's return land in the program with exactly `r`:
    /// natively by `iretq` from the frame, on a PVM host through the resume
    /// stub; `false` if the program's stack at `r.rsp` cannot take the
    /// stub's words.
    pub fn set_user_regs(&mut self, r: &UserRegs) -> bool {
        // Only the arithmetic flags, DF, TF and AC come from the program;
        // IF is always set.
        let rflags = (r.rflags & 0x4_0dd5) | 0x202;
        self.ret_rcx = r.rcx;
        self.ret_r11 = r.r11;
        if !super::cpu::pvm_native() {
            set_common_regs!(self, r);
            self.rcx = r.rip;
            self.r11 = rflags;
            self.user_rsp = r.rsp;
            self.cs = u64::from(USER_CS);
            self.ss = u64::from(USER_DS);
            return true;
        }
        let Some((stub, slot)) = resume_via_stub(r.rip, r.rsp, r.rcx, r.r11) else {
            return false;
        };
        set_common_regs!(self, r);
        self.rcx = stub;
        self.r11 = rflags;
        self.user_rsp = slot;
        self.cs = u64::from(USER_CS);
        self.ss = u64::from(USER_DS);
        true
    }
}

/// Enters the program with every register from `r` on the current kernel
/// stack (a new thread's first return to user mode); never returns.
pub fn resume_user(r: &UserRegs) -> ! {
    super::cpu::irq_save();
    let mut f = SyscallFrame::default();
    if !f.set_user_regs(r) {
        crate::syscall::fatal_user_state("a new thread's stack cannot be written", r.rsp);
    }
    if super::cpu::pvm_native() {
        // As on every return to the program (see `syscall_dispatch`).
        super::cpu::irq_restore(true);
    }
    // SAFETY: `f` is a complete frame on this stack; the exit path pops it
    // and leaves by `iretq` (natively) or by `sysretq` to the stub mapped in
    // the program (PVM).
    unsafe {
        asm!(
            "mov rsp, {f}",
            "jmp astraea_syscall_exit",
            f = in(reg) &raw const f,
            options(noreturn),
        )
    }
}

#[unsafe(naked)]
unsafe extern "C" fn syscall_entry() {
    naked_asm!(
        "mov [rip + {user_rsp}], rsp",
        "mov rsp, [rip + {kernel_rsp}]",
        "push {ss}",
        "push qword ptr [rip + {user_rsp}]",
        "push r11",
        "push {cs}",
        "push rcx",
        "push r11",
        "push rcx",
        "push rax",
        "push rdi",
        "push rsi",
        "push rdx",
        "push r10",
        "push r8",
        "push r9",
        "push rbx",
        "push rbp",
        "push r12",
        "push r13",
        "push r14",
        "push r15",
        "mov rdi, rsp",
        "cld",
        "call {dispatch}",
        ".global astraea_syscall_exit",
        "astraea_syscall_exit:",
        "pop r15",
        "pop r14",
        "pop r13",
        "pop r12",
        "pop rbp",
        "pop rbx",
        "pop r9",
        "pop r8",
        "pop r10",
        "pop rdx",
        "pop rsi",
        "pop rdi",
        "pop rax",
        "pop rcx",
        "pop r11",
        // Natively (no PVM virtual-IF page), `iretq` restores every register
        // the frame holds: rcx and r11 as well as rip, rflags and rsp.
        "cmp qword ptr [rip + {pv_vif}], 0",
        "jne 2f",
        "iretq",
        // On a PVM host `iretq` at hardware CPL 3 would leave the host
        // believing the vCPU is still in supervisor mode: `sysretq`, with
        // rcx and r11 from the frame (to the resume stub when a full restore
        // was asked for).
        "2:",
        "mov rcx, [rsp]",
        "mov r11, [rsp + 16]",
        "mov rsp, [rsp + 24]",
        "sysretq",
        pv_vif = sym super::cpu::PV_VIF,
        user_rsp = sym USER_RSP,
        kernel_rsp = sym KERNEL_RSP,
        dispatch = sym syscall_dispatch,
        ss = const USER_DS as u64,
        cs = const USER_CS as u64,
    );
}

extern "C" fn syscall_dispatch(frame: &mut SyscallFrame) {
    // System calls run with interrupts on, like Linux's.
    super::cpu::irq_restore(true);
    // With direct entry on, a site that traps is rewritten (once) to jump
    // into the library OS next time (see `syscall::patch`).
    crate::syscall::patch::on_trap(frame.rcx.wrapping_sub(2), frame.rax);
    crate::syscall::dispatch(frame);
    // A signal for this thread enters its handler now. On a PVM host not
    // after a full restore such as rt_sigreturn's, whose stub words the next
    // return handles; natively the frame is complete either way, and a
    // signal unblocked by the restore is delivered now, as Linux does.
    if !super::cpu::pvm_native() || frame.rcx != RESUME_AT {
        // Interrupts are on here, so a preemption can let another thread
        // send this one a signal after the delivery (or during the device
        // flush, an exit to the host): look again, as Linux's exit-to-user
        // loop does, or the thread would run
        // on with it pending until its next trap (never, for one that
        // computes alone). Bounded: each round delivers what it found.
        for _ in 0..8 {
            let mut regs = frame.user_regs();
            if crate::signal::deliver_pending(&mut regs) && !frame.set_user_regs(&regs) {
                crate::syscall::fatal_user_state("no room for a signal frame", regs.rsp);
            }
            // Requests the call queued reach the device now, together.
            crate::sched::flush_devices();
            if !crate::signal::has_deliverable() {
                break;
            }
        }
    } else {
        // Requests the call queued reach the device now, together.
        crate::sched::flush_devices();
    }
    // On a PVM host the virtual interrupt flag stays set: the host keeps it
    // for the program as `sysretq` finds it (an interrupt in the last
    // instruction before it is moved off the program's stack, see
    // `trap::astraea_irq_entry`). Elsewhere `sysretq` sets IF from r11.
    if !super::cpu::pvm_native() {
        super::cpu::irq_save();
    }
    // SYSRET to a non-canonical address would fault in ring 0.
    if (frame.rcx as i64) << 16 >> 16 != frame.rcx as i64 {
        crate::syscall::fatal_user_state("return address is not canonical", frame.rcx);
    }
}

/// Leaves the kernel for ring 3 at `rip` with stack `rsp` and every general
/// register zero; never returns (the program comes back only through system
/// calls and traps). Goes through the resume stub, which must be mapped.
///
/// # Safety
/// `rip` and `rsp` must be mapped user memory set up for the program.
pub unsafe fn enter_user(rip: u64, rsp: u64) -> ! {
    super::cpu::irq_save();
    let Some((stub, slot)) = resume_via_stub(rip, rsp, 0, 0x202) else {
        crate::syscall::fatal_user_state("the initial stack cannot be written", rsp);
    };
    if super::cpu::pvm_native() {
        // As on every return to the program (see `syscall_dispatch`).
        super::cpu::irq_restore(true);
    }
    // SAFETY: the caller vouches for the user mappings; `sysretq` enters
    // ring 3 with the user selectors from STAR and RFLAGS (IF set) from r11.
    unsafe {
        asm!(
            "mov rsp, {slot}",
            "xor eax, eax", "xor ebx, ebx", "xor edx, edx",
            "xor esi, esi", "xor edi, edi", "xor ebp, ebp",
            "xor r8d, r8d", "xor r9d, r9d", "xor r10d, r10d",
            "xor r12d, r12d", "xor r13d, r13d", "xor r14d, r14d", "xor r15d, r15d",
            "sysretq",
            slot = in(reg) slot,
            in("rcx") stub,
            in("r11") 0x202u64,
            options(noreturn),
        )
    }
}

/// Publishes the running thread's kernel stack top for the SYSCALL entry.
pub fn set_syscall_stack(top: u64) {
    KERNEL_RSP.store(top, Ordering::Relaxed);
}

/// Copies `len` bytes from `src` to `dst` where either may be the program's
/// memory, which another thread may unmap meanwhile: a page fault in the
/// copy that the memory areas do not allow ends it early instead of being a
/// kernel fault (the trap handler resumes at the fixup, Linux's exception
/// table reduced to one entry). Returns how many bytes were *not* copied.
///
/// # Safety
/// `dst..dst+len` and `src..src+len` are kernel memory or lie in the user
/// half (checked by the caller); kernel parts must be valid as for `memcpy`.
#[unsafe(naked)]
pub unsafe extern "C" fn copy_user(dst: *mut u8, src: *const u8, len: usize) -> usize {
    naked_asm!(
        "mov rcx, rdx",
        ".global astraea_copy_user_insn",
        "astraea_copy_user_insn:",
        // Interruptible and restartable: at a fault rcx counts what is left.
        "rep movsb",
        "xor eax, eax",
        "ret",
        ".global astraea_copy_user_fixup",
        "astraea_copy_user_fixup:",
        "mov rax, rcx",
        "ret",
    )
}

unsafe extern "C" {
    fn astraea_copy_user_insn();
    fn astraea_copy_user_fixup();
}

/// Where a fault at `rip` in the kernel resumes if it is the user copy's
/// (see [`copy_user`]).
pub fn copy_user_fixup(rip: u64) -> Option<u64> {
    (rip == astraea_copy_user_insn as *const () as u64)
        .then_some(astraea_copy_user_fixup as *const () as u64)
}
