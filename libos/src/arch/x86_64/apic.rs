//! The local APIC in x2APIC mode (MSR access: no MMIO exits) with its timer in
//! TSC-deadline mode, so the scheduler programs absolute deadlines and the
//! kernel runs tickless.

use super::cpu::{outb, rdmsr, wrmsr};
use super::trap::{VECTOR_SPURIOUS, VECTOR_TIMER};

const IA32_APIC_BASE: u32 = 0x1b;
const IA32_TSC_DEADLINE: u32 = 0x6e0;
const X2APIC_ID: u32 = 0x802;
const X2APIC_EOI: u32 = 0x80b;
const X2APIC_SVR: u32 = 0x80f;
const X2APIC_LVT_TIMER: u32 = 0x832;
const X2APIC_LVT_LINT0: u32 = 0x835;
const X2APIC_LVT_LINT1: u32 = 0x836;
const X2APIC_LVT_ERROR: u32 = 0x837;
const LVT_MASKED: u64 = 1 << 16;
const LVT_TSC_DEADLINE: u64 = 0b10 << 17;

/// Why the APIC cannot be used.
#[derive(Debug, Clone, Copy)]
pub enum ApicError {
    /// CPUID does not report x2APIC.
    NoX2Apic,
    /// CPUID does not report the TSC-deadline timer.
    NoTscDeadline,
}

/// Enables the x2APIC on this CPU, masks the legacy inputs and sets up the
/// timer in TSC-deadline mode (disarmed).
pub fn init() -> Result<(), ApicError> {
    let ecx = core::arch::x86_64::__cpuid(1).ecx;
    if ecx & (1 << 21) == 0 {
        return Err(ApicError::NoX2Apic);
    }
    if ecx & (1 << 24) == 0 {
        return Err(ApicError::NoTscDeadline);
    }
    // Mask both 8259 PICs: every interrupt comes through the local APIC.
    outb(0x21, 0xff);
    outb(0xa1, 0xff);
    // SAFETY: enabling x2APIC mode (EN | EXTD) on a CPU that reports it keeps
    // the APIC base address; nothing in the kernel uses the xAPIC MMIO page.
    unsafe {
        let base = rdmsr(IA32_APIC_BASE);
        wrmsr(IA32_APIC_BASE, base | (1 << 11) | (1 << 10));
        wrmsr(X2APIC_SVR, 0x100 | u64::from(VECTOR_SPURIOUS));
        wrmsr(X2APIC_LVT_LINT0, LVT_MASKED);
        wrmsr(X2APIC_LVT_LINT1, LVT_MASKED);
        wrmsr(X2APIC_LVT_ERROR, LVT_MASKED);
        wrmsr(X2APIC_LVT_TIMER, LVT_TSC_DEADLINE | u64::from(VECTOR_TIMER));
    }
    Ok(())
}

/// This CPU's x2APIC ID.
pub fn id() -> u32 {
    rdmsr(X2APIC_ID) as u32
}

/// Arms the timer to fire when the TSC reaches `tsc` (0 disarms it).
pub fn set_deadline(tsc: u64) {
    // SAFETY: writing the deadline MSR only schedules a timer interrupt.
    unsafe { wrmsr(IA32_TSC_DEADLINE, tsc) };
}

/// Signals end of interrupt.
pub fn eoi() {
    // SAFETY: an EOI write acknowledges the interrupt in service.
    unsafe { wrmsr(X2APIC_EOI, 0) };
}

pub(super) fn timer_interrupt() {
    eoi();
    crate::sched::timer_interrupt();
}
