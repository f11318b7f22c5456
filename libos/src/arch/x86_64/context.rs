//! Switching between kernel threads: save the callee-saved registers on the
//! old stack, store its stack pointer, load the new one, restore.

use core::arch::naked_asm;

/// Saves the callee-saved registers on the stack (both switches).
macro_rules! push_callee_saved {
    () => {
        "push rbp\npush rbx\npush r12\npush r13\npush r14\npush r15"
    };
}

/// Restores what [`push_callee_saved`] saved.
macro_rules! pop_callee_saved {
    () => {
        "pop r15\npop r14\npop r13\npop r12\npop rbx\npop rbp"
    };
}

/// Saves the current context, storing its stack pointer in `*save_rsp`, and
/// resumes the context whose stack pointer is `next_rsp`.
///
/// # Safety
/// `next_rsp` must be a stack pointer saved by this function (or prepared by
/// [`init_stack`]) whose stack is still alive, and interrupts must be off.
#[unsafe(naked)]
pub unsafe extern "C" fn switch(save_rsp: *mut u64, next_rsp: u64) {
    naked_asm!(
        push_callee_saved!(),
        "mov [rdi], rsp",
        "mov rsp, rsi",
        pop_callee_saved!(),
        "ret",
    );
}

/// [`switch`] for a thread leaving the CPU inside a direct system call
/// (`super::direct`), possibly in user mode for a PVM host, to another
/// suspended in one (`sched::leave_direct`). The next thread's entry stack
/// top `next_top` becomes the kernel stack of system calls and events
/// (`KERNEL_RSP`) only once the old stack pointer is saved, and just
/// before the stack changes, so that an event in between finds the stack
/// pointer inside the stack `KERNEL_RSP` names. If the call was upgraded
/// meanwhile (the word at `cur_top` set: the host now believes the vCPU
/// is in supervisor mode), the next thread's word at `next_top` is set as
/// well, a write that supervisor mode makes safely.
///
/// # Safety
/// As [`switch`]; `cur_top` and `next_top` are the entry stack tops of
/// the current and the next thread, and the next thread's upgrade word is
/// 0 (its caller cleared it).
#[unsafe(naked)]
pub unsafe extern "C" fn switch_direct(
    save_rsp: *mut u64,
    next_rsp: u64,
    next_top: u64,
    cur_top: u64,
) {
    naked_asm!(
        push_callee_saved!(),
        "mov [rdi], rsp",
        "mov [rip + {kernel_rsp}], rdx",
        "mov rsp, rsi",
        "cmp qword ptr [rcx], 0",
        "je 2f",
        "mov qword ptr [rdx], 1",
        "2:",
        pop_callee_saved!(),
        "ret",
        kernel_rsp = sym super::user::KERNEL_RSP,
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

/// Saves the callee-saved registers on the stack and the stack pointer in
/// `*save_rsp`, then calls `f(arg)` and returns 0 when it returns. A
/// partition restored from a snapshot taken inside `f` comes back out of
/// this call through [`resume_saved`], returning 1 (like `setjmp`).
///
/// # Safety
/// Interrupts must be off until this returns; `save_rsp` must stay valid.
#[unsafe(naked)]
pub unsafe extern "C" fn save_then(save_rsp: *mut u64, f: extern "C" fn(u64), arg: u64) -> u64 {
    naked_asm!(
        push_callee_saved!(),
        "mov [rdi], rsp",
        // Six pushes after the return address: realign for the call.
        "sub rsp, 8",
        "mov rdi, rdx",
        "call rsi",
        "add rsp, 8",
        pop_callee_saved!(),
        "xor eax, eax",
        "ret",
    );
}

/// Continues the context [`save_then`] saved at `rsp`: its call returns 1.
///
/// # Safety
/// `rsp` must be what [`save_then`] stored, its stack intact (the memory of
/// the partition the snapshot was taken of), interrupts off.
#[unsafe(naked)]
pub unsafe extern "C" fn resume_saved(rsp: u64) -> ! {
    naked_asm!("mov rsp, rdi", pop_callee_saved!(), "mov eax, 1", "ret",);
}
