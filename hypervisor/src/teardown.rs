//! Tearing a partition down off the command's critical path.
//!
//! When the guest has exited, what remains is the host's work: KVM
//! destroying the VM when its last descriptor closes (its shadow or nested
//! page tables, ≈ 2 ms on PVM) and the kernel unmapping guest RAM when the
//! process exits (≈ 2 ms). A shell or supervisor waiting for `astraea run`
//! waits for that too, though the program's exit status is known. So, at a
//! normal exit, [`hand_off`] starts a helper process that shares this
//! one's memory (`CLONE_VM`) and holds its own copies of the VM's
//! descriptors: when this process exits, neither is the last reference,
//! and both are released when the helper exits — right after this process
//! has (it waits for a pipe's end that only this process holds). The
//! helper closes every other descriptor first, so the program's streams
//! end and the host sockets close when this process exits, as before.

use std::os::fd::RawFd;

/// The helper's stack: it only makes system calls.
const STACK: usize = 64 << 10;

struct Args {
    /// The pipe's read end: end of file once this process has exited.
    wait: RawFd,
    /// The descriptors the helper keeps (ascending).
    keep: Vec<RawFd>,
}

/// Hands the release of `keep` (the VM's and its vCPUs' descriptors) and of
/// this process's memory to a helper process. Best effort: if the helper
/// cannot start, the teardown happens here as before. The caller must not
/// unmap guest RAM after this (leave it to the process's exit).
pub fn hand_off(keep: &[RawFd]) {
    // The helper closes the rest with `close_range` (Linux 5.9): without
    // it, it would hold the program's streams open, so the teardown stays
    // here. Closing a range of descriptors nobody has tells which.
    // SAFETY: close_range takes plain integers; no descriptor is that high.
    if unsafe { libc::syscall(libc::SYS_close_range, u32::MAX - 1, u32::MAX - 1, 0) } != 0 {
        tracing::debug!("teardown stays here: no close_range");
        return;
    }
    let mut keep = keep.to_vec();
    keep.sort_unstable();
    let mut fds = [0 as RawFd; 2];
    // SAFETY: pipe2 writes two descriptors into the array we pass.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        tracing::debug!(error = %std::io::Error::last_os_error(), "teardown stays here: no pipe");
        return;
    }
    let args = Box::leak(Box::new(Args { wait: fds[0], keep }));
    // SAFETY: a fresh anonymous mapping of STACK bytes, or MAP_FAILED.
    let stack = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            STACK,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
            -1,
            0,
        )
    };
    if stack == libc::MAP_FAILED {
        tracing::debug!("teardown stays here: no stack for the helper");
        return;
    }
    // SAFETY: `helper` runs on the top of the fresh stack, in a new process
    // sharing this one's memory (CLONE_VM) but not its descriptor table
    // (it gets copies) nor its threads; it reads `args`, which is leaked
    // and so outlives it, makes only raw system calls (no locks, no
    // allocation: other threads of this process may hold any lock) and
    // ends with `exit`. No signal is sent to us when it ends; it is
    // reaped by whoever inherits it.
    let pid = unsafe {
        libc::clone(
            helper,
            stack.cast::<u8>().add(STACK).cast(),
            libc::CLONE_VM,
            std::ptr::from_mut(args).cast(),
        )
    };
    // Our copy of the read end; the write end stays open until we exit.
    // SAFETY: closing a descriptor this function opened.
    unsafe { libc::close(fds[0]) };
    if pid < 0 {
        tracing::debug!(error = %std::io::Error::last_os_error(), "teardown stays here: no helper");
        // SAFETY: as above.
        unsafe { libc::close(fds[1]) };
    }
}

/// A system call without the C library: the helper must not touch `errno`,
/// which lives in the thread-local storage of the thread that cloned it
/// (still running in this process).
fn raw_syscall(nr: libc::c_long, a: u64, b: u64, c: u64) -> i64 {
    let ret: i64;
    // SAFETY: the Linux x86-64 system call convention: number in rax,
    // arguments in rdi, rsi, rdx; the kernel clobbers rcx and r11. The
    // callers pass only calls that touch no memory of ours but what they
    // name (`read` into a local byte).
    unsafe {
        std::arch::asm!(
            "syscall",
            inlateout("rax") nr => ret,
            in("rdi") a,
            in("rsi") b,
            in("rdx") c,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    ret
}

extern "C" fn helper(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the leaked `Args` hand_off passed; nothing frees it.
    let args = unsafe { &*arg.cast::<Args>() };
    // Every descriptor but those kept and the pipe's read end: the ranges
    // between them, then everything above.
    let mut keep: [RawFd; 16] = [-1; 16];
    let mut n = 0;
    for &fd in args.keep.iter().chain(std::iter::once(&args.wait)) {
        if n < keep.len() {
            keep[n] = fd;
            n += 1;
        }
    }
    keep[..n].sort_unstable();
    let mut from: u64 = 0;
    for &fd in &keep[..n] {
        let fd = fd as u64;
        if fd > from {
            raw_syscall(libc::SYS_close_range, from, fd - 1, 0);
        }
        from = fd + 1;
    }
    raw_syscall(libc::SYS_close_range, from, u64::from(u32::MAX), 0);
    // Until the process that started us has exited (its write end closes).
    let mut b = 0u8;
    while raw_syscall(libc::SYS_read, args.wait as u64, (&raw mut b) as u64, 1)
        == -i64::from(libc::EINTR)
    {}
    // Ends this helper; its memory and descriptors, the last references
    // now, are released by the kernel.
    raw_syscall(libc::SYS_exit, 0, 0, 0);
    0
}
