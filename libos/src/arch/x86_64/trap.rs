//! The IDT and the trap entry path.
//!
//! Every vector we use has a small assembly stub that pushes a uniform
//! [`TrapFrame`] and calls [`trap_dispatch`]. Exceptions the kernel does not
//! expect end the partition with a report: vector, error code, RIP, CR2.

use core::arch::{asm, global_asm};
use core::cell::UnsafeCell;

use super::gdt::{IST_DOUBLE_FAULT, IST_IRQ, IST_NMI, KERNEL_CS};

/// The local APIC timer's vector.
pub const VECTOR_TIMER: u8 = 0x30;
// The stub table names the dump-request vector by its number.
const _: () = assert!(astraea_abi::cache_dump::VECTOR == 0x41);
const _: () = assert!(astraea_abi::host_signal::VECTOR == 0x42);
const _: () = assert!(astraea_abi::snapshot::VECTOR == 0x43);
/// The APIC's spurious-interrupt vector.
pub const VECTOR_SPURIOUS: u8 = 0xff;

/// Registers saved on trap entry, in stack order (lowest address first).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
#[allow(missing_docs)]
pub struct TrapFrame {
    pub r15: u64,
    pub r14: u64,
    pub r13: u64,
    pub r12: u64,
    pub r11: u64,
    pub r10: u64,
    pub r9: u64,
    pub r8: u64,
    pub rbp: u64,
    pub rdi: u64,
    pub rsi: u64,
    pub rdx: u64,
    pub rcx: u64,
    pub rbx: u64,
    pub rax: u64,
    pub vector: u64,
    pub error: u64,
    pub rip: u64,
    pub cs: u64,
    pub rflags: u64,
    pub rsp: u64,
    pub ss: u64,
}

// The common path: save the general registers, call Rust with the frame,
// restore, drop vector and error code, return from the interrupt. The CPU
// aligned RSP to 16 before pushing its 5-word frame; 2 + 15 more words keep
// it aligned at the call.
global_asm!(
    ".global astraea_trap_common",
    "astraea_trap_common:",
    "push rax", "push rbx", "push rcx", "push rdx", "push rsi", "push rdi", "push rbp",
    "push r8", "push r9", "push r10", "push r11", "push r12", "push r13", "push r14", "push r15",
    "mov rdi, rsp",
    "cld",
    "call {dispatch}",
    "pop r15", "pop r14", "pop r13", "pop r12", "pop r11", "pop r10", "pop r9", "pop r8",
    "pop rbp", "pop rdi", "pop rsi", "pop rdx", "pop rcx", "pop rbx", "pop rax",
    "cmp qword ptr [rsp], {stub_mark}",
    "je 3f",
    "add rsp, 16",
    "iretq",
    // Back to the program through the resume stub (see user::RESUME_STUB):
    // the error-code slot holds the stack pointer for it.
    "3:",
    "mov rcx, [rsp + 8]",
    "mov r11, [rsp + 32]",
    "mov rsp, rcx",
    "mov rcx, {stub}",
    "sysretq",
    dispatch = sym trap_dispatch,
    stub_mark = const STUB_MARK,
    stub = const super::user::RESUME_AT,
);

// Interrupts (not exceptions) arrive on their own IST stack and are moved
// at once to the stack they would have used without one: the interrupted
// kernel stack, or the thread's kernel stack top when they interrupted the
// program or the last instruction of a return to it (`sysretq` needs the
// program's stack pointer loaded while still in the kernel, and on a PVM
// host the virtual interrupt flag must already be set there, because the
// host keeps it for the program). Interrupts are off until the handler
// enables them, so the IST stack is never used twice at once.
global_asm!(
    ".global astraea_irq_entry",
    "astraea_irq_entry:",
    // IST: vector, error, rip, cs, rflags, rsp, ss; save two scratch registers.
    "push rax",
    "push rcx",
    "test byte ptr [rsp + 40], 3",
    "jnz 5f",
    "mov rax, [rsp + 56]",
    "movabs rcx, {direct_map}",
    "cmp rax, rcx",
    "jb 1f",
    "and rax, -16",
    // With exceptions on this stack too (direct calls), a kernel stack
    // overflow arrives here instead of as a double fault: the frame cannot
    // go into the guard page below the stack. Report it as the double
    // fault it would have been.
    "cmp byte ptr [rip + {direct_on}], 0",
    "je 2f",
    "mov rcx, [rip + {kernel_rsp}]",
    "sub rcx, rax",
    "cmp rcx, {kstack}",
    "jbe 2f",
    "cmp rcx, {kstack_and_guard}",
    "ja 2f",
    "pop rcx",
    "pop rax",
    "mov qword ptr [rsp], 8",
    "jmp astraea_trap_common",
    // A user code segment with the stack pointer in the thread's kernel
    // stack: a direct call (see `direct.rs`). Its frame goes below the
    // interrupted stack pointer, past the words the return writes for the
    // resume stub (160 bytes down).
    "5:",
    "cmp byte ptr [rip + {direct_on}], 0",
    "je 1f",
    "mov rax, [rip + {kernel_rsp}]",
    "sub rax, [rsp + 56]",
    "cmp rax, {kstack}",
    "jae 1f",
    "mov rax, [rsp + 56]",
    "sub rax, 256",
    "and rax, -16",
    "jmp 2f",
    "1:",
    "mov rax, [rip + {kernel_rsp}]",
    "2:",
    "sub rax, 56",
    "mov rcx, [rsp + 16]", "mov [rax], rcx",
    "mov rcx, [rsp + 24]", "mov [rax + 8], rcx",
    "mov rcx, [rsp + 32]", "mov [rax + 16], rcx",
    "mov rcx, [rsp + 40]", "mov [rax + 24], rcx",
    "mov rcx, [rsp + 48]", "mov [rax + 32], rcx",
    "mov rcx, [rsp + 56]", "mov [rax + 40], rcx",
    "mov rcx, [rsp + 64]", "mov [rax + 48], rcx",
    "mov rcx, [rsp]",
    "xchg rax, [rsp + 8]",
    "mov rsp, [rsp + 8]",
    "jmp astraea_trap_common",
    direct_map = const crate::mm::DIRECT_MAP,
    kernel_rsp = sym super::user::KERNEL_RSP,
    direct_on = sym super::direct::ON,
    kstack = const super::direct::KERNEL_STACK_BYTES,
    kstack_and_guard = const super::direct::KERNEL_STACK_BYTES + 2 * 4096,
);

// Exceptions come here: with direct calls on they arrive on the
// interrupts' IST stack (see `enable_direct_calls`) and are moved the same
// way, since from user mode the host would otherwise put the frame at the
// top of the thread's kernel stack, where a direct call keeps its own.
global_asm!(
    ".global astraea_exc_entry",
    "astraea_exc_entry:",
    "cmp byte ptr [rip + {direct_on}], 0",
    "jne astraea_irq_entry",
    "jmp astraea_trap_common",
    direct_on = sym super::direct::ON,
);

/// Routes exceptions through the IST entry, for direct calls (at boot,
/// before the program runs). NMIs, double faults and machine checks keep
/// their own stacks.
pub fn enable_direct_calls() {
    // SAFETY: boot, one CPU, interrupts off, before the program runs.
    let idt = unsafe { &mut *IDT.0.get() };
    for &(vec, stub) in stub_table() {
        if vec < 32 && !matches!(vec, 2 | 8 | 18) {
            idt[usize::from(vec)] = gate(stub as *const () as u64, IST_IRQ);
        }
    }
}

macro_rules! stubs {
    ($( $name:ident = $vec:literal $kind:ident ),* $(,)?) => {
        $( stubs!(@one $name, $vec, $kind); )*
        unsafe extern "C" { $( fn $name(); )* }
        /// (vector, stub) for every vector with an entry.
        fn stub_table() -> &'static [(u8, unsafe extern "C" fn())] {
            &[ $( ($vec, $name) ),* ]
        }
    };
    (@one $name:ident, $vec:literal, noerr) => {
        global_asm!(concat!(".global ", stringify!($name), "\n", stringify!($name), ":\n",
            "push 0\n", "push ", stringify!($vec), "\n", "jmp astraea_exc_entry\n"));
    };
    (@one $name:ident, $vec:literal, own_noerr) => {
        global_asm!(concat!(".global ", stringify!($name), "\n", stringify!($name), ":\n",
            "push 0\n", "push ", stringify!($vec), "\n", "jmp astraea_trap_common\n"));
    };
    (@one $name:ident, $vec:literal, own_err) => {
        global_asm!(concat!(".global ", stringify!($name), "\n", stringify!($name), ":\n",
            "push ", stringify!($vec), "\n", "jmp astraea_trap_common\n"));
    };
    (@one $name:ident, $vec:literal, irq) => {
        global_asm!(concat!(".global ", stringify!($name), "\n", stringify!($name), ":\n",
            "push 0\n", "push ", stringify!($vec), "\n", "jmp astraea_irq_entry\n"));
    };
    (@one $name:ident, $vec:literal, err) => {
        global_asm!(concat!(".global ", stringify!($name), "\n", stringify!($name), ":\n",
            "push ", stringify!($vec), "\n", "jmp astraea_exc_entry\n"));
    };
}

stubs! {
    trap_0 = 0 noerr, trap_1 = 1 noerr, trap_2 = 2 own_noerr, trap_3 = 3 noerr,
    trap_4 = 4 noerr, trap_5 = 5 noerr, trap_6 = 6 noerr, trap_7 = 7 noerr,
    trap_8 = 8 own_err, trap_9 = 9 noerr, trap_10 = 10 err, trap_11 = 11 err,
    trap_12 = 12 err, trap_13 = 13 err, trap_14 = 14 err, trap_15 = 15 noerr,
    trap_16 = 16 noerr, trap_17 = 17 err, trap_18 = 18 own_noerr, trap_19 = 19 noerr,
    trap_20 = 20 noerr, trap_21 = 21 err, trap_22 = 22 noerr, trap_23 = 23 noerr,
    trap_24 = 24 noerr, trap_25 = 25 noerr, trap_26 = 26 noerr, trap_27 = 27 noerr,
    trap_28 = 28 noerr, trap_29 = 29 err, trap_30 = 30 err, trap_31 = 31 noerr,
    trap_timer = 0x30 irq,
    trap_virtio9p = 0x40 irq,
    trap_cache_dump = 0x41 irq,
    trap_host_signal = 0x42 irq,
    trap_snapshot = 0x43 irq,
    trap_spurious = 0xff irq,
}

#[repr(C, align(16))]
#[derive(Clone, Copy)]
struct Gate([u64; 2]);

struct Idt(UnsafeCell<[Gate; 256]>);

// SAFETY: written only by `init` on the boot CPU before interrupts are enabled;
// afterwards only the CPU reads it.
unsafe impl Sync for Idt {}

static IDT: Idt = Idt(UnsafeCell::new([Gate([0, 0]); 256]));

fn gate(handler: u64, ist: u8) -> Gate {
    let lo = (handler & 0xffff)
        | (u64::from(KERNEL_CS) << 16)
        | (u64::from(ist) << 32)
        | (0x8e << 40) // present, DPL 0, 64-bit interrupt gate
        | (((handler >> 16) & 0xffff) << 48);
    Gate([lo, handler >> 32])
}

/// Fills and loads the IDT.
pub fn init() {
    // SAFETY: single-threaded boot, interrupts off; see `Idt`'s Sync note.
    let idt = unsafe { &mut *IDT.0.get() };
    for &(vec, stub) in stub_table() {
        let ist = match vec {
            8 => IST_DOUBLE_FAULT,
            2 | 18 => IST_NMI,
            v if v >= 32 => IST_IRQ,
            _ => 0,
        };
        idt[usize::from(vec)] = gate(stub as *const () as u64, ist);
    }
    load();
}

/// Loads the IDT on the calling CPU.
pub fn load() {
    #[repr(C, packed)]
    struct Ptr {
        limit: u16,
        base: u64,
    }
    let p = Ptr {
        limit: (256 * 16 - 1) as u16,
        base: IDT.0.get() as u64,
    };
    // SAFETY: the IDT is static and every present gate points at a stub above.
    unsafe { asm!("lidt [{}]", in(reg) &raw const p, options(nostack, preserves_flags)) };
}

/// Name of an exception vector.
pub fn exception_name(v: u64) -> &'static str {
    match v {
        0 => "#DE divide error",
        1 => "#DB debug",
        2 => "NMI",
        3 => "#BP breakpoint",
        4 => "#OF overflow",
        5 => "#BR bound range",
        6 => "#UD invalid opcode",
        7 => "#NM device not available",
        8 => "#DF double fault",
        10 => "#TS invalid TSS",
        11 => "#NP segment not present",
        12 => "#SS stack fault",
        13 => "#GP general protection",
        14 => "#PF page fault",
        16 => "#MF x87 floating point",
        17 => "#AC alignment check",
        18 => "#MC machine check",
        19 => "#XM SIMD floating point",
        20 => "#VE virtualization",
        21 => "#CP control protection",
        _ => "reserved exception",
    }
}

extern "C" fn trap_dispatch(frame: &mut TrapFrame) {
    let pvm = super::cpu::pvm_native();
    if pvm {
        // A PVM host clears the virtual IF as an interrupt gate clears IF;
        // make sure of it for every event, since `iretq` at hardware CPL 3
        // cannot restore it.
        super::cpu::irq_save();
    }
    // An event in a direct call: the library OS was running (on its stack,
    // in user mode as far as the host knows).
    let direct = frame.cs & 3 == 3 && super::direct::in_direct_call(frame.rsp);
    if frame.cs & 3 == 3 && !direct && super::direct::at_upgraded_exit(frame.rip) {
        // The last instruction of an upgraded direct call's return: do its
        // `sysretq` here (this event returns to the program the usual way).
        frame.rip = frame.rcx;
        frame.rflags = (frame.r11 & 0x4_0dd5) | 0x202;
    }
    if frame.cs & 3 == 3 && !direct && (frame.vector >= 32 || frame.vector == 1) {
        finish_resume_stub(frame);
    }
    // The direct entry's own instructions on the program's stack: a
    // library-OS page the host no longer maps for user mode is touched and
    // the instruction runs again (the program's state is intact there).
    let entry_fault = frame.cs & 3 == 3
        && !direct
        && frame.vector == 14
        && super::direct::in_entry_code(frame.rip)
        && super::direct::warm_entry(super::cpu::cr2(), frame.error & 2 != 0);
    if entry_fault {
        // Handled: back to the entry's instruction, as the program.
    } else if direct && frame.vector < 32 {
        direct_fault(frame);
    } else {
        dispatch(frame);
    }
    if direct && super::direct::upgraded(frame.rip) {
        // The call goes on in supervisor mode for the host: a native
        // `iretq`, which the host does not see.
        super::cpu::irq_restore(frame.rflags & (1 << 9) != 0);
        return;
    }
    if direct {
        // Back by `sysretq` through the resume stub, so that the host
        // returns to user mode; its words go below the interrupted stack
        // pointer, where the frame left room (see `astraea_irq_entry`).
        let slot = frame.rsp - super::user::RESUME_SLOT_BELOW;
        // SAFETY: `slot` is in the thread's kernel stack, below the direct
        // call's live data and above this frame.
        unsafe {
            let w = slot as *mut u64;
            w.write(frame.rcx);
            w.add(1).write(frame.r11);
            w.add(2).write(frame.rip);
        }
        frame.vector = STUB_MARK;
        frame.error = slot;
        // The host holds interrupts by the virtual IF in user mode too, and
        // the frame carries the call's flag (clear inside a lock).
        super::cpu::irq_restore(frame.rflags & (1 << 9) != 0);
        return;
    }
    if frame.cs & 3 == 3 {
        // Requests queued meanwhile reach the device before the program runs.
        crate::sched::flush_devices();
        let mut regs = frame.user_regs();
        if crate::signal::deliver_pending(&mut regs) {
            frame.set_user_regs(&regs);
        }
    }
    if pvm && frame.cs & 3 == 3 {
        // Back to the program: `iretq` would leave the host believing the
        // vCPU is still in supervisor mode; `sysretq` through the stub does
        // not, and sets the flags (IF included) from r11.
        if let Some((_, slot)) =
            super::user::resume_via_stub(frame.rip, frame.rsp, frame.rcx, frame.r11)
        {
            frame.vector = STUB_MARK;
            frame.error = slot;
            // The host keeps the virtual interrupt flag for the program as
            // `sysretq` finds it: set. An interrupt in the last instructions
            // of the way out is moved off the program's stack (see
            // `astraea_irq_entry`).
            super::cpu::irq_restore(true);
            return;
        }
    }
    if pvm {
        // The frame's RFLAGS carries the interrupted context's virtual IF.
        super::cpu::irq_restore(frame.rflags & (1 << 9) != 0);
    }
}

/// An interrupt (or a single-step trap) that stopped the program inside the
/// resume stub: finish the stub's work in the frame, so that the program
/// resumes where the stub was going. Otherwise the return from this trap
/// writes its own words over the stub's slot (the same place, when the
/// stub has already moved the stack pointer back) and the program's
/// return address is lost; a signal frame would overwrite it as well.
fn finish_resume_stub(f: &mut TrapFrame) {
    use super::user::RESUME_AT;
    let Some(off) = f.rip.checked_sub(RESUME_AT) else {
        return;
    };
    let word = |a: u64| {
        crate::mm::user::read_array::<8>(a)
            .ok()
            .map(u64::from_le_bytes)
    };
    let sp = f.rsp;
    // Instruction boundaries of RESUME_STUB: mov rcx (0), mov r11 (4),
    // lea rsp (9), jmp (17).
    let (rcx, r11, rip, rsp) = match off {
        0 => (word(sp), word(sp + 8), word(sp + 16), sp + 160),
        4 => (Some(f.rcx), word(sp + 8), word(sp + 16), sp + 160),
        9 => (Some(f.rcx), Some(f.r11), word(sp + 16), sp + 160),
        17 => (Some(f.rcx), Some(f.r11), word(sp.wrapping_sub(144)), sp),
        _ => return,
    };
    if let (Some(rcx), Some(r11), Some(rip)) = (rcx, r11, rip) {
        f.rcx = rcx;
        f.r11 = r11;
        f.rip = rip;
        f.rsp = rsp;
    }
}

/// Put in a frame's vector slot: return to the program by `sysretq`.
const STUB_MARK: u64 = 0x5eed;

fn dispatch(frame: &mut TrapFrame) {
    match frame.vector {
        v if v == u64::from(VECTOR_TIMER) => {
            if crate::profile::on() {
                crate::profile::sample(
                    frame.rip,
                    frame.cs & 3 == 3,
                    crate::sched::current_is_idle(),
                );
            }
            super::apic::timer_interrupt()
        }
        v if v == u64::from(VECTOR_SPURIOUS) => {}
        v if v == u64::from(astraea_abi::virtio9p::VECTOR) => {
            super::apic::eoi();
            crate::drivers::virtio9p::interrupt();
            crate::sched::device_interrupt_exit();
        }
        v if v == u64::from(astraea_abi::cache_dump::VECTOR) => {
            super::apic::eoi();
            crate::boot::cache_dump_requested();
            crate::sched::device_interrupt_exit();
        }
        v if v == u64::from(astraea_abi::snapshot::VECTOR) => {
            super::apic::eoi();
            crate::snapshot::requested_by_vmm();
            crate::sched::device_interrupt_exit();
        }
        v if v == u64::from(astraea_abi::host_signal::VECTOR) => {
            super::apic::eoi();
            crate::signal::from_host(super::cpu::inl(astraea_abi::port::HOST_SIGNALS));
            crate::sched::device_interrupt_exit();
        }
        // `direct::enter_supervisor` found the call in supervisor mode
        // already, between its test and its `ud2`.
        6 if frame.cs & 3 == 0 && super::direct::is_upgrade_request(frame.rip) => frame.rip += 2,
        v if v < 32 && frame.cs & 3 == 3 => user_fault(frame),
        14 => kernel_user_fault(frame),
        v if v < 32 => unhandled_exception(frame),
        v => log::warn!("unexpected interrupt vector {v:#x}"),
    }
}

/// An exception in a direct call: a library-OS page the host had not yet
/// mapped for user mode is touched and the call goes on; anything else is
/// a kernel bug, reported as one.
fn direct_fault(f: &mut TrapFrame) {
    if f.vector == 14 && super::direct::warm(super::cpu::cr2(), f.error & 2 != 0) {
        return;
    }
    if f.vector == 14
        && super::cpu::cr2() < crate::mm::user::USER_MAX
        && let Some(fixup) = super::user::copy_user_fixup(f.rip)
    {
        // A user copy in a direct call runs with interrupts off: no
        // populating here, the caller falls back to the trapped call.
        f.rip = fixup;
        return;
    }
    if f.vector == 6 && super::direct::is_upgrade_request(f.rip) {
        if !super::direct::upgraded(f.rip) {
            super::direct::upgrade();
        }
        f.rip += 2;
        return;
    }
    // A library-OS page written for the first time, or a privileged
    // instruction (`wrmsr`, `hlt`…): the host allows them in supervisor
    // mode only, so the call goes on there and the instruction runs again.
    let kernel_page = f.vector == 14 && super::cpu::cr2() >= crate::mm::DIRECT_MAP;
    if (kernel_page || f.vector == 13) && !super::direct::upgraded(f.rip) {
        super::direct::upgrade();
        return;
    }
    // The host holds an interrupt while the virtual IF is clear in a direct
    // call too, but its hypercall (`int 0x1b`) is an invalid instruction in
    // user mode. This trap is as good: the interrupt is delivered when
    // `trap_dispatch` sets the flag again on the way out.
    if f.vector == 6 && super::cpu::is_deliver_pending_hypercall(f.rip) {
        if f.rbx != 0 && !super::direct::upgraded(f.rip) {
            // A TLB flush (`cpu::invlpg`), not the harmless one: it must
            // happen, so the call goes on in supervisor mode and runs it.
            super::direct::upgrade();
        } else {
            f.rip += 2;
        }
        return;
    }
    unhandled_exception(f);
}

/// A page fault in the kernel. On the program's memory it is the kernel
/// reading or writing it for a system call, and the page may have gone
/// since the call checked it (another thread's `munmap`, `mprotect` or
/// `MADV_DONTNEED` while the call waited or was preempted): a page the areas
/// still allow is brought back, as for the program itself; otherwise the
/// user copy ends early ([`super::user::copy_user`]), and the call fails
/// with `EFAULT` as on Linux. Anything else is a kernel bug (a null or wild
/// pointer: the program's memory is only read and written through the copy
/// routines of `mm::user`).
fn kernel_user_fault(f: &mut TrapFrame) {
    let cr2 = super::cpu::cr2();
    if cr2 >= crate::mm::user::USER_MAX || f.error & 0x10 != 0 {
        unhandled_exception(f);
    }
    // Populating may wait (9P I/O, a frame): only where the kernel could
    // have waited itself, with interrupts on and no lock held.
    if f.rflags & (1 << 9) != 0 && crate::sync::held_lock().is_none() {
        super::cpu::irq_restore(true);
        let r = crate::mm::vma::fault(cr2, f.error & 2 != 0, false);
        super::cpu::irq_save();
        if r.is_ok() {
            return;
        }
    }
    if let Some(fixup) = super::user::copy_user_fixup(f.rip) {
        f.rip = fixup;
        return;
    }
    // A plain access that faults (not through `mm::user`'s copies, which
    // check first): a kernel bug, reported with the registers.
    unhandled_exception(f)
}

/// The decoded page-fault error code, printed without allocating (the fault
/// may have hit inside the allocator).
struct PfDetail(u64);

impl core::fmt::Display for PfDetail {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let e = self.0;
        write!(
            f,
            " ({} {} in {} mode{})",
            if e & 1 != 0 {
                "protection violation on"
            } else {
                "not-present page on"
            },
            if e & 0x10 != 0 {
                "instruction fetch"
            } else if e & 2 != 0 {
                "write"
            } else {
                "read"
            },
            if e & 4 != 0 { "user" } else { "kernel" },
            if e & 8 != 0 { ", reserved bit set" } else { "" },
        )
    }
}

/// An exception in the program: a page fault the memory areas allow is
/// served (demand paging) and the program goes on.
fn user_fault(f: &mut TrapFrame) {
    use crate::mm::vma::Fault;
    use crate::signal::{Info, code, nr};
    let mut info = Info {
        signo: nr::SIGSEGV,
        code: code::SEGV_MAPERR,
        addr: f.rip,
        trap: (f.vector, f.error),
        sent: None,
    };
    // The program runs with no kernel lock held: one still held here was
    // never released by the kernel path that took it.
    crate::sync::assert_none_held("a fault of the program");
    match f.vector {
        14 => {
            let cr2 = super::cpu::cr2();
            // Populating may wait for 9P I/O: run it with interrupts on, as
            // the program ran.
            super::cpu::irq_restore(true);
            let r = crate::mm::vma::fault(cr2, f.error & 2 != 0, f.error & 0x10 != 0);
            super::cpu::irq_save();
            info.addr = cr2;
            match r {
                Ok(()) => return,
                Err(Fault::MapErr) => {}
                Err(Fault::AccErr) => info.code = code::SEGV_ACCERR,
                Err(Fault::Bus) => {
                    info.signo = nr::SIGBUS;
                    info.code = code::BUS_ADRERR;
                }
                Err(Fault::Oom) => {
                    let mb = crate::mm::stats().total_pages / 256;
                    crate::eprintln!(
                        "astraea: the partition is out of memory ({mb} MiB) at address {cr2:#x}: run it with a larger --mem"
                    );
                    crate::boot::exit(128 + 9)
                }
            }
        }
        0 => {
            info.signo = nr::SIGFPE;
            info.code = code::FPE_INTDIV;
        }
        16 | 19 => {
            info.signo = nr::SIGFPE;
            info.code = code::FPE_FLTDIV;
        }
        6 => {
            info.signo = nr::SIGILL;
            info.code = code::ILL_ILLOPN;
        }
        1 | 3 => {
            info.signo = nr::SIGTRAP;
            info.code = code::TRAP_BRKPT;
        }
        // #GP and the rest: SIGSEGV with si_addr 0, as Linux reports them.
        _ => {
            info.code = 0x80; // SI_KERNEL
            info.addr = 0;
        }
    }
    let mut regs = f.user_regs();
    crate::signal::fault(&info, &mut regs);
    f.set_user_regs(&regs);
}

impl TrapFrame {
    /// The program's registers at the trap.
    pub fn user_regs(&self) -> crate::arch::user::UserRegs {
        super::user::user_regs_of!(self, rcx: self.rcx, r11: self.r11, rsp: self.rsp, rip: self.rip, rflags: self.rflags)
    }

    /// Makes the trap return to the program with `r`.
    pub fn set_user_regs(&mut self, r: &crate::arch::user::UserRegs) {
        super::user::set_common_regs!(self, r);
        self.r11 = r.r11;
        self.rcx = r.rcx;
        self.rsp = r.rsp;
        self.rip = r.rip;
        // The program's arithmetic flags, DF, TF and AC; IF stays set.
        self.rflags = (r.rflags & 0x4_0dd5) | 0x202;
    }
}

fn unhandled_exception(f: &TrapFrame) -> ! {
    let cr2 = super::cpu::cr2();
    let pf = (f.vector == 14).then_some(PfDetail(f.error));
    let stack_note = if f.vector == 8 {
        " (a kernel stack overflow ends here)"
    } else {
        ""
    };
    if let Some(l) = crate::sync::held_lock() {
        log::error!(
            "the kernel faulted holding the lock taken at {}:{}",
            l.file(),
            l.line()
        );
    }
    panic!(
        "unhandled exception {} (vector {}){stack_note} error={:#x} rip={:#x} cr2={:#x} rsp={:#x} cs={:#x} rflags={:#x}{}\n  \
         rax={:#x} rbx={:#x} rcx={:#x} rdx={:#x} rsi={:#x} rdi={:#x} rbp={:#x}",
        exception_name(f.vector),
        f.vector,
        f.error,
        f.rip,
        cr2,
        f.rsp,
        f.cs,
        f.rflags,
        pf.as_ref().map_or(&"" as &dyn core::fmt::Display, |p| p
            as &dyn core::fmt::Display),
        f.rax,
        f.rbx,
        f.rcx,
        f.rdx,
        f.rsi,
        f.rdi,
        f.rbp
    );
}
