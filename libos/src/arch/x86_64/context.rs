//! Switching between kernel threads: save the callee-saved registers on the
//! old stack, store its stack pointer, load the new one, restore.

use core::arch::naked_asm;

/// Saves the current context, storing its stack pointer in `*save_rsp`, and
/// resumes the context whose stack pointer is `next_rsp`.
///
/// # Safety
/// `next_rsp` must be a stack pointer saved by this function (or prepared by
/// [`init_stack`]) whose stack is still alive, and interrupts must be off.
#[unsafe(naked)]
pub unsafe extern "C" fn switch(save_rsp: *mut u64, next_rsp: u64) {
    naked_asm!(
        "push rbp",
        "push rbx",
        "push r12",
        "push r13",
        "push r14",
        "push r15",
        "mov [rdi], rsp",
        "mov rsp, rsi",
        "pop r15",
        "pop r14",
        "pop r13",
        "pop r12",
        "pop rbx",
        "pop rbp",
        "ret",
    );
}

/// Where a new thread starts: align the stack and call `entry`, which never returns.
#[unsafe(naked)]
unsafe extern "C" fn trampoline() -> ! {
    naked_asm!("mov rdi, r12", "and rsp, -16", "call r13", "ud2");
}

/// Prepares a fresh stack so that [`switch`] to it calls `entry(arg)`.
/// Returns the initial stack pointer.
///
/// # Safety
/// `top` must be the 16-byte aligned end of a writable stack of at least 64 bytes.
pub unsafe fn init_stack(top: u64, entry: extern "C" fn(u64) -> !, arg: u64) -> u64 {
    let frame: [u64; 8] = [
        0,                              // r15
        0,                              // r14
        entry as *const () as u64,      // r13
        arg,                            // r12
        0,                              // rbx
        0,                              // rbp
        trampoline as *const () as u64, // return address of `switch`
        0,                              // padding
    ];
    let sp = top - (frame.len() * 8) as u64;
    // SAFETY: the caller guarantees [top-64, top) is writable stack memory.
    unsafe { core::ptr::copy_nonoverlapping(frame.as_ptr(), sp as *mut u64, frame.len()) };
    sp
}
