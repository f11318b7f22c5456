//! The program's FPU, SSE and AVX registers: one XSAVE area per program
//! thread, switched lazily. The kernel itself never touches these registers
//! (the kernel target is soft-float), so they keep the state of the last
//! program thread that ran (the "owner") across switches to kernel threads;
//! they are saved only when another program thread takes the CPU.

use alloc::alloc::{Layout, alloc_zeroed, dealloc};
use core::arch::asm;
use core::arch::x86_64::__cpuid_count;

use crate::sched::ThreadRef;
use crate::sync::IrqLock;

/// A 64-byte aligned XSAVE area sized for every feature the CPU has.
pub struct FpuArea {
    ptr: *mut u8,
    layout: Layout,
}

// SAFETY: the area is plain memory owned by one thread's context; it is
// touched only under that thread's `fpu` lock.
unsafe impl Send for FpuArea {}

impl FpuArea {
    fn new() -> Option<Self> {
        let layout = Layout::from_size_align(area_size(), 64).ok()?;
        // SAFETY: a non-zero size; freed in Drop with the same layout.
        let ptr = unsafe { alloc_zeroed(layout) };
        (!ptr.is_null()).then_some(Self { ptr, layout })
    }

    /// The saved bytes (the signal frame copies them).
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr` owns `layout.size()` initialised bytes.
        unsafe { core::slice::from_raw_parts(self.ptr, self.layout.size()) }
    }
}

impl Drop for FpuArea {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.ptr, self.layout) };
    }
}

/// Bytes of an XSAVE area covering every supported component (at least
/// the legacy 512 + header 64).
pub fn area_size() -> usize {
    // Asked once: CPUID traps to the host in a guest (3.5 µs here), and
    // every new thread and signal frame needs the size.
    static SIZE: spin::Once<usize> = spin::Once::new();
    *SIZE.call_once(|| {
        // CPUID leaf 0xD exists on every CPU with XSAVE (x86-64-v2 and later).
        let r = __cpuid_count(0xd, 0);
        (r.ecx as usize).max(576).next_multiple_of(64)
    })
}

/// Every state component the CPU has enabled.
fn xcr0() -> u64 {
    let (lo, hi): (u32, u32);
    // SAFETY: XGETBV with ECX=0 only reads XCR0.
    unsafe { asm!("xgetbv", in("ecx") 0, out("eax") lo, out("edx") hi, options(nomem, nostack)) };
    (u64::from(hi) << 32) | u64::from(lo)
}

/// Saves the live registers into `area`.
pub fn save(area: &mut FpuArea) {
    let mask = xcr0();
    // SAFETY: `area` is 64-byte aligned and large enough for every enabled
    // component (sized from CPUID 0xD).
    unsafe {
        asm!("xsave64 [{}]", in(reg) area.ptr, in("eax") mask as u32, in("edx") (mask >> 32) as u32, options(nostack));
    }
}

/// Loads the registers from `area`.
pub fn restore(area: &FpuArea) {
    let mask = xcr0();
    // SAFETY: `area` was written by `save` or zeroed (a zeroed header loads
    // the initial state); it is aligned and large enough.
    unsafe {
        asm!("xrstor64 [{}]", in(reg) area.ptr, in("eax") mask as u32, in("edx") (mask >> 32) as u32, options(nostack));
    }
}

/// The program thread whose state is in the registers.
static OWNER: IrqLock<Option<ThreadRef>> = IrqLock::new(None);

/// Called by the scheduler (interrupts off) before switching to `next`.
pub fn switch_user_state(_prev: &ThreadRef, next: &ThreadRef) {
    use core::sync::atomic::Ordering;
    if !next.user.active.load(Ordering::Relaxed) {
        return;
    }
    let fs = next.user.fs_base.load(Ordering::Relaxed);
    super::user::set_fs_base_cached(fs);
    take_registers(&mut OWNER.lock(), next);
}

/// Makes `next` the owner of the registers: the previous owner's state is
/// saved (unless it has exited) and `next`'s loaded. A thread without a
/// saved state keeps what the registers hold; only the first thread has
/// none (every clone starts from a copy of its creator's, see [`fork`]).
fn take_registers(owner: &mut Option<ThreadRef>, next: &ThreadRef) {
    if owner
        .as_ref()
        .is_some_and(|o| alloc::sync::Arc::ptr_eq(o, next))
    {
        return;
    }
    if let Some(o) = owner.as_ref() {
        save_state_of(o);
    }
    if let Some(a) = next.user.fpu.lock().as_ref() {
        restore(a);
    }
    *owner = Some(next.clone());
}

/// A copy of the calling thread's registers, for a thread it creates
/// (Linux's `clone` copies the parent's FPU state). The caller is in a
/// system call, so it owns the registers and they hold its state.
pub fn fork() -> Option<FpuArea> {
    let irq = super::cpu::irq_save();
    let mut a = FpuArea::new();
    if let Some(a) = a.as_mut() {
        save(a);
    }
    super::cpu::irq_restore(irq);
    a
}

/// The current thread starts running program code: it takes the registers
/// (with the state [`fork`] gave it, if any) and its FS base. Until this
/// call a new thread is a kernel thread, for which the scheduler switches
/// neither; without it the previous owner's state would never be saved
/// and the new thread's would be taken for it, and a switch away and back
/// before the thread became active would leave another thread's FS base
/// (its thread pointer) in place.
pub fn claim(me: &ThreadRef) {
    use core::sync::atomic::Ordering;
    let irq = super::cpu::irq_save();
    super::user::set_fs_base_cached(me.user.fs_base.load(Ordering::Relaxed));
    take_registers(&mut OWNER.lock(), me);
    super::cpu::irq_restore(irq);
}

/// Saves the registers' owner's state in its area and leaves the registers
/// without an owner (a snapshot: a restored CPU starts with fresh
/// registers, and the owner's next switch in loads its area). Interrupts
/// must be off.
pub fn release() {
    if let Some(o) = OWNER.lock().take() {
        save_state_of(&o);
    }
}

/// Saves the registers into `o`'s area (made on first use), unless it has
/// exited. `o` owns the registers.
fn save_state_of(o: &ThreadRef) {
    if o.state() == crate::sched::State::Dead {
        return;
    }
    let mut a = o.user.fpu.lock();
    if a.is_none() {
        *a = FpuArea::new();
    }
    if let Some(a) = a.as_mut() {
        save(a);
    }
}

/// The state components the CPU has enabled (XCR0).
pub fn enabled() -> u64 {
    xcr0()
}

/// Saves the live registers into the program's memory at `addr` (64-byte
/// aligned, [`area_size`] bytes, writable: the signal frame checked it).
pub fn save_to_user(addr: u64) {
    let size = area_size();
    // XSAVE leaves the header's reserved bytes as they were; XRSTOR wants zeros.
    let zeros = alloc::vec![0u8; size];
    if crate::mm::user::copy_in(addr, &zeros).is_err() {
        return;
    }
    let mask = xcr0();
    // SAFETY: [addr, addr+size) is present, writable program memory (just
    // written above), 64-byte aligned; XSAVE writes only inside it.
    unsafe {
        asm!("xsave64 [{}]", in(reg) addr, in("eax") mask as u32, in("edx") (mask >> 32) as u32, options(nostack));
    }
}

/// Loads the registers from a signal frame's XSAVE area at `addr`, after
/// checking what would make XRSTOR fault (the program may have changed it).
pub fn restore_from_user(addr: u64) -> Result<(), crate::errno::Errno> {
    use crate::errno::Errno;
    if !addr.is_multiple_of(64) {
        return Err(Errno::EFAULT);
    }
    let size = area_size() as u64;
    // Faulted in first; then checked and loaded with interrupts off, so no
    // other thread of the program can change or unmap the area between the
    // check and XRSTOR (which would fault in the library OS).
    crate::mm::user::check_readable(addr, size)?;
    let irq = super::cpu::irq_save();
    let r = restore_checked(addr, size);
    super::cpu::irq_restore(irq);
    r
}

/// [`restore_from_user`] with interrupts off.
fn restore_checked(addr: u64, size: u64) -> Result<(), crate::errno::Errno> {
    use crate::errno::Errno;
    if !crate::mm::user::present_readable(addr, size) {
        return Err(Errno::EFAULT);
    }
    // SAFETY: present program memory (checked just now, interrupts off).
    let b = unsafe { core::slice::from_raw_parts(addr as *const u8, size as usize) };
    let word = |o: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&b[o..o + 8]);
        u64::from_le_bytes(w)
    };
    let mxcsr = u32::from_le_bytes([b[24], b[25], b[26], b[27]]);
    let xstate_bv = word(512);
    let xcomp_bv = word(520);
    if mxcsr & 0xffff_0000 != 0
        || xstate_bv & !xcr0() != 0
        || xcomp_bv != 0
        || b[528..576].iter().any(|&x| x != 0)
    {
        return Err(Errno::EFAULT);
    }
    let mask = xcr0();
    // SAFETY: the area is present program memory, aligned, and its header
    // and MXCSR were checked so that XRSTOR does not fault.
    unsafe {
        asm!("xrstor64 [{}]", in(reg) addr, in("eax") mask as u32, in("edx") (mask >> 32) as u32, options(nostack));
    }
    Ok(())
}
