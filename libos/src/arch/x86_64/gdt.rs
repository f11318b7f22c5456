//! The GDT and TSS. The selectors are Linux's (kernel code 0x10, data 0x18,
//! user 32-bit code 0x23, user data 0x2b, user code 0x33): SYSCALL/SYSRET
//! need this order, and on a PVM host user mode runs on the host's own
//! descriptor table, whose user selectors are exactly these.

use core::arch::asm;
use core::cell::UnsafeCell;

/// Kernel code selector.
pub const KERNEL_CS: u16 = 0x10;
/// Kernel data selector.
pub const KERNEL_DS: u16 = 0x18;
/// User 32-bit code selector (RPL 3); SYSRET derives the others from it.
pub const USER32_CS: u16 = 0x20 | 3;
/// User data selector (RPL 3).
pub const USER_DS: u16 = 0x28 | 3;
/// User code selector (RPL 3).
pub const USER_CS: u16 = 0x30 | 3;
const TSS_SEL: u16 = 0x40;

/// IST slot for double faults (a stack overflow must still be reported).
pub const IST_DOUBLE_FAULT: u8 = 1;
/// IST slot for NMIs and machine checks.
pub const IST_NMI: u8 = 2;
/// IST slot where device and timer interrupts arrive, to be moved at once to
/// the right stack (see `trap.rs`): an interrupt may arrive in the last
/// instruction of a return to the program, when the stack is already the
/// program's.
pub const IST_IRQ: u8 = 3;
const IST_SIZE: usize = 16 * 1024;

#[repr(C, packed(4))]
struct Tss {
    _r0: u32,
    rsp: [u64; 3],
    _r1: u64,
    ist: [u64; 7],
    _r2: u64,
    _r3: u16,
    iomap_base: u16,
}

#[repr(C, align(16))]
struct Stack([u8; IST_SIZE]);

struct CpuTables {
    gdt: [u64; 10],
    tss: Tss,
    ist: [Stack; 3],
}

/// Per-CPU descriptor tables. One CPU for now; the array grows with SMP.
struct PerCpuTables(UnsafeCell<CpuTables>);

// SAFETY: each CPU touches only its own entry, and only with interrupts off
// (at init and in the scheduler when it updates RSP0).
unsafe impl Sync for PerCpuTables {}

static TABLES: PerCpuTables = PerCpuTables(UnsafeCell::new(CpuTables {
    gdt: [
        0,
        0,                     // 0x08: unused (Linux: 32-bit kernel code)
        0x00af_9a00_0000_ffff, // 0x10: kernel code, 64-bit, DPL 0
        0x00cf_9200_0000_ffff, // 0x18: kernel data
        0x00cf_fa00_0000_ffff, // 0x20: user code, 32-bit, DPL 3
        0x00cf_f200_0000_ffff, // 0x28: user data, DPL 3
        0x00af_fa00_0000_ffff, // 0x30: user code, 64-bit, DPL 3
        0,                     // 0x38: unused
        0,                     // 0x40: TSS (low), filled at init
        0,                     // 0x48: TSS (high)
    ],
    tss: Tss {
        _r0: 0,
        rsp: [0; 3],
        _r1: 0,
        ist: [0; 7],
        _r2: 0,
        _r3: 0,
        iomap_base: core::mem::size_of::<Tss>() as u16,
    },
    ist: [
        Stack([0; IST_SIZE]),
        Stack([0; IST_SIZE]),
        Stack([0; IST_SIZE]),
    ],
}));

#[repr(C, packed)]
struct DescriptorPointer {
    limit: u16,
    base: u64,
}

/// Loads the GDT and TSS on this CPU and reloads every segment register.
pub fn init() {
    let t = TABLES.0.get();
    // SAFETY: called once per CPU at boot with interrupts off; nothing else
    // references the tables yet.
    let t = unsafe { &mut *t };
    for (i, s) in t.ist.iter().enumerate() {
        t.tss.ist[i] = s.0.as_ptr() as u64 + IST_SIZE as u64;
    }
    let base = &raw const t.tss as u64;
    let limit = (core::mem::size_of::<Tss>() - 1) as u64;
    t.gdt[8] = (limit & 0xffff)
        | ((base & 0xff_ffff) << 16)
        | (0x89 << 40) // present, 64-bit available TSS
        | (((limit >> 16) & 0xf) << 48)
        | (((base >> 24) & 0xff) << 56);
    t.gdt[9] = base >> 32;
    let ptr = DescriptorPointer {
        limit: (core::mem::size_of_val(&t.gdt) - 1) as u16,
        base: t.gdt.as_ptr() as u64,
    };
    // SAFETY: the GDT is static and its kernel code/data descriptors match the
    // selectors loaded here; the far return reloads CS with KERNEL_CS.
    unsafe {
        asm!(
            "lgdt [{ptr}]",
            "push {cs}",
            "lea {tmp}, [rip + 2f]",
            "push {tmp}",
            "retfq",
            "2:",
            "mov ss, {ds:x}",
            // 64-bit code needs no data segments; null ones are also what a
            // PVM host requires to run the kernel natively.
            "xor {tmp:e}, {tmp:e}",
            "mov ds, {tmp:x}",
            "mov es, {tmp:x}",
            "mov fs, {tmp:x}",
            "mov gs, {tmp:x}",
            "ltr {tss:x}",
            ptr = in(reg) &raw const ptr,
            cs = in(reg) u64::from(KERNEL_CS),
            ds = in(reg) u64::from(KERNEL_DS),
            tss = in(reg) u64::from(TSS_SEL),
            tmp = out(reg) _,
        );
    }
}

/// Sets the stack the CPU switches to on an interrupt or syscall from ring 3.
pub fn set_kernel_stack(top: u64) {
    // SAFETY: called by the scheduler with interrupts off on this CPU; the
    // TSS field is plain data read by the CPU only at ring transitions.
    unsafe { (*TABLES.0.get()).tss.rsp[0] = top };
}
