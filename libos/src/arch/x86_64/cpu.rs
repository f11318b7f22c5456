//! Single instructions: port I/O, MSRs, TSC, interrupt flag, halting.
//!
//! These are the kernel's only inline-asm wrappers besides the trap entry and
//! the context switch; each is safe to call because none of them breaks Rust's
//! memory model by itself (the callers of `wrmsr` choose what they write).

use core::arch::asm;
use core::sync::atomic::{AtomicU64, Ordering};

use astraea_abi::pvm;

/// Writes a 32-bit value to an I/O port (a hypercall in a partition).
#[inline]
pub fn outl(port: u16, value: u32) {
    // SAFETY: port output has no memory effects visible to Rust; the ports we
    // use are hypercalls or legacy devices the VMM emulates.
    unsafe {
        asm!("out dx, eax", in("dx") port, in("eax") value, options(nostack, preserves_flags))
    };
}

/// Writes a byte to an I/O port.
#[inline]
pub fn outb(port: u16, value: u8) {
    // SAFETY: as for `outl`.
    unsafe { asm!("out dx, al", in("dx") port, in("al") value, options(nostack, preserves_flags)) };
}

/// Reads a byte from an I/O port.
#[inline]
pub fn inb(port: u16) -> u8 {
    let v: u8;
    // SAFETY: as for `outl`: port input changes no memory Rust sees.
    unsafe { asm!("in al, dx", in("dx") port, out("al") v, options(nostack, preserves_flags)) };
    v
}

/// Reads a 32-bit value from an I/O port (a hypercall in a partition).
#[inline]
pub fn inl(port: u16) -> u32 {
    let v: u32;
    // SAFETY: as for `outl`: port input changes no memory Rust sees.
    unsafe { asm!("in eax, dx", in("dx") port, out("eax") v, options(nostack, preserves_flags)) };
    v
}

/// Reads the time-stamp counter.
#[inline]
pub fn rdtsc() -> u64 {
    let (lo, hi): (u32, u32);
    // SAFETY: rdtsc only reads the counter into eax:edx.
    unsafe {
        asm!("rdtsc", out("eax") lo, out("edx") hi, options(nomem, nostack, preserves_flags))
    };
    (u64::from(hi) << 32) | u64::from(lo)
}

/// Reads a model-specific register.
#[inline]
pub fn rdmsr(msr: u32) -> u64 {
    let (lo, hi): (u32, u32);
    // SAFETY: callers only name MSRs that exist on every x86-64 CPU KVM offers
    // with the CPUID we set; reading has no memory effects.
    unsafe {
        asm!("rdmsr", in("ecx") msr, out("eax") lo, out("edx") hi, options(nomem, nostack, preserves_flags))
    };
    (u64::from(hi) << 32) | u64::from(lo)
}

/// Writes a model-specific register.
///
/// # Safety
/// The MSR and value must not break the kernel's invariants (e.g. EFER, the
/// segment bases or the APIC base that the kernel relies on).
#[inline]
pub unsafe fn wrmsr(msr: u32, value: u64) {
    // SAFETY: the caller vouches for the MSR and value.
    unsafe {
        asm!("wrmsr", in("ecx") msr, in("eax") value as u32, in("edx") (value >> 32) as u32,
             options(nostack, preserves_flags))
    };
}

/// On a PVM host running us natively: the address of the page holding the
/// virtual interrupt flag (0 otherwise). There, the hardware IF is always 1
/// and `cli`/`sti` trap to the host, so the kernel's interrupt flag is a byte
/// in this page that the host reads before injecting an interrupt.
pub(super) static PV_VIF: AtomicU64 = AtomicU64::new(0);

fn vif() -> Option<u64> {
    match PV_VIF.load(Ordering::Relaxed) {
        0 => None,
        v => Some(v),
    }
}

/// Records that the VMM registered `page` (guest-physical, identity-mapped,
/// reserved) as the virtual-IF page of a PVM host: the kernel already runs
/// natively, and from now on the interrupt flag is that page's byte.
/// Interrupts are off (the VMM zeroed the page).
pub fn pvm_native_mode(page: u64) {
    PV_VIF.store(page, Ordering::SeqCst);
}

/// Whether the kernel runs natively on a PVM host.
pub fn pvm_native() -> bool {
    vif().is_some()
}

fn vif_byte(page: u64, off: u64) -> *mut u8 {
    (page + off) as *mut u8
}

/// Lets the host deliver an interrupt that arrived while the virtual IF was
/// clear: any trap does; this hypercall is the cheapest harmless one.
fn pvm_deliver_pending(page: u64) {
    // SAFETY: reading the host-written pending byte of our registered page.
    if unsafe { core::ptr::read_volatile(vif_byte(page, pvm::VIF_PENDING)) } != 0 {
        // SAFETY: the flush-one-TLB-entry hypercall only drops a TLB entry.
        unsafe {
            asm!("xchg rbx, {zero}", "int 0x1b", "xchg rbx, {zero}",
                 zero = inout(reg) 0u64 => _, inout("rax") pvm::HC_FLUSH_TLB_ONE => _,
                 options(nostack))
        };
    }
}

/// Whether `rip` is an `int 0x1b` of the kernel's: [`pvm_deliver_pending`]'s
/// (rbx = 0) or [`invlpg`]'s TLB flush (rbx = the address). A direct call,
/// in user mode for the host, gets `#UD` there.
pub fn is_deliver_pending_hypercall(rip: u64) -> bool {
    // SAFETY: `rip` is where the kernel itself was executing.
    rip >= crate::mm::DIRECT_MAP
        && unsafe { core::ptr::read_unaligned(rip as *const [u8; 2]) } == [0xcd, 0x1b]
}

/// Whether interrupts are enabled on this CPU.
#[inline]
pub fn interrupts_enabled() -> bool {
    if let Some(page) = vif() {
        // SAFETY: our registered page; the byte is the virtual IF.
        return unsafe { core::ptr::read_volatile(vif_byte(page, pvm::VIF_IF)) } != 0;
    }
    let flags: u64;
    // SAFETY: pushes and pops RFLAGS on the current stack; no other effect.
    unsafe { asm!("pushfq", "pop {}", out(reg) flags, options(nomem, preserves_flags)) };
    flags & (1 << 9) != 0
}

/// Disables interrupts and returns whether they were enabled.
#[inline]
pub fn irq_save() -> bool {
    let was = interrupts_enabled();
    if let Some(page) = vif() {
        // SAFETY: our registered page; clearing the virtual IF.
        unsafe { core::ptr::write_volatile(vif_byte(page, pvm::VIF_IF), 0) };
        core::sync::atomic::compiler_fence(Ordering::SeqCst);
        return was;
    }
    // SAFETY: clearing IF only delays interrupts.
    unsafe { asm!("cli", options(nomem, nostack)) };
    was
}

/// Re-enables interrupts if `was_enabled`.
#[inline]
pub fn irq_restore(was_enabled: bool) {
    if !was_enabled {
        return;
    }
    if let Some(page) = vif() {
        core::sync::atomic::compiler_fence(Ordering::SeqCst);
        // SAFETY: our registered page; setting the virtual IF.
        unsafe { core::ptr::write_volatile(vif_byte(page, pvm::VIF_IF), 1) };
        pvm_deliver_pending(page);
        return;
    }
    // SAFETY: the IDT is loaded before interrupts are first enabled.
    unsafe { asm!("sti", options(nomem, nostack)) };
}

/// Enables interrupts and halts until the next one, atomically (no wake-up
/// can slip in between `sti` and `hlt`).
#[inline]
pub fn enable_and_halt() {
    if let Some(page) = vif() {
        // On PVM `hlt` traps and the host halts the vCPU only if no interrupt
        // is deliverable, so setting the virtual IF first loses no wake-up.
        // SAFETY: our registered page; setting the virtual IF.
        unsafe { core::ptr::write_volatile(vif_byte(page, pvm::VIF_IF), 1) };
        pvm_deliver_pending(page);
        // SAFETY: `hlt` waits for an interrupt; the IDT is loaded.
        unsafe { asm!("hlt", options(nomem, nostack)) };
        return;
    }
    // SAFETY: `sti; hlt` only waits for an interrupt; the IDT is loaded.
    unsafe { asm!("sti", "hlt", options(nomem, nostack)) };
}

/// Spin-loop hint.
#[inline]
pub fn pause() {
    core::hint::spin_loop();
}

/// Reads CR2, the faulting address of the last page fault.
#[inline]
pub fn cr2() -> u64 {
    let v: u64;
    // SAFETY: reading CR2 has no side effects.
    unsafe { asm!("mov {}, cr2", out(reg) v, options(nomem, nostack, preserves_flags)) };
    v
}

/// Reads CR3, the root page table.
#[inline]
pub fn cr3() -> u64 {
    let v: u64;
    // SAFETY: reading CR3 has no side effects.
    unsafe { asm!("mov {}, cr3", out(reg) v, options(nomem, nostack, preserves_flags)) };
    v
}

/// Loads a new root page table.
///
/// # Safety
/// `pml4` must map the running code, its stack and all kernel data exactly as
/// the current tables do.
#[inline]
pub unsafe fn write_cr3(pml4: u64) {
    // SAFETY: the caller guarantees the new tables map everything in use.
    unsafe { asm!("mov cr3, {}", in(reg) pml4, options(nostack, preserves_flags)) };
}

/// Invalidates the TLB entry for one page. On a PVM host by its hypercall
/// (rbx = the address, never 0 here: page 0 is never mapped), which costs
/// about half the emulated `invlpg` (16 pages: 29 against 56 µs). In a
/// direct call it is `#UD`, and the trap handler upgrades the call so that
/// it runs (`trap::direct_fault`).
#[inline]
pub fn invlpg(va: u64) {
    if vif().is_some() && va != 0 {
        // SAFETY: the flush-one-TLB-entry hypercall only drops a TLB entry.
        unsafe {
            asm!("xchg rbx, {va}", "int 0x1b", "xchg rbx, {va}",
                 va = inout(reg) va => _, inout("rax") pvm::HC_FLUSH_TLB_ONE => _,
                 options(nostack))
        };
        return;
    }
    // SAFETY: dropping a TLB entry is always safe; it is refetched from the tables.
    unsafe { asm!("invlpg [{}]", in(reg) va, options(nostack, preserves_flags)) };
}
