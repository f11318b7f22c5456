//! `clone(2)` and `clone3(2)` for threads: the flags glibc's and musl's
//! `pthread_create` use (glibc ≥ 2.34 tries `clone3` first, and a refusal
//! would cost every new thread a second trapped call). A new process (no
//! `CLONE_VM`) answers ENOSYS: one process per partition.

use core::sync::atomic::Ordering;

use crate::errno::Errno;
use crate::mm::user;

const CLONE_VM: u64 = 0x100;
const CLONE_THREAD: u64 = 0x10000;
const CLONE_SETTLS: u64 = 0x80000;
const CLONE_PARENT_SETTID: u64 = 0x100000;
const CLONE_CHILD_CLEARTID: u64 = 0x200000;
const CLONE_CHILD_SETTID: u64 = 0x1000000;

/// `struct clone_args` as far as this kernel knows it (`CLONE_ARGS_SIZE_VER2`).
const CLONE_ARGS_SIZE: usize = 88;
/// The first version of `struct clone_args` (up to `tls`).
const CLONE_ARGS_SIZE_VER0: u64 = 64;
const CLONE_DETACHED: u64 = 0x0040_0000;
const CSIGNAL: u64 = 0xff;
const CLONE_NEWTIME: u64 = 0x80;
const CLONE_SIGHAND: u64 = 0x800;
const CLONE_PARENT: u64 = 0x8000;
const CLONE_CLEAR_SIGHAND: u64 = 0x1_0000_0000;
const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;
/// Linux's `MAX_PID_NS_LEVEL`: the most `set_tid` entries.
const MAX_PID_NS_LEVEL: u64 = 32;

/// `clone(flags, stack, parent_tid, child_tid, tls)`.
pub fn clone(a: &[u64; 6]) -> Result<u64, Errno> {
    thread(a[0], a[1], a[2], a[3], a[4])
}

/// `clone3(args, size)`: `clone`'s threads from a `struct clone_args`,
/// checked in Linux's order (`copy_clone_args_from_user`, then
/// `clone3_args_valid`).
pub fn clone3(a: &[u64; 6]) -> Result<u64, Errno> {
    let (uargs, size) = (a[0], a[1]);
    if size > 4096 {
        return Err(Errno::E2BIG);
    }
    if size < CLONE_ARGS_SIZE_VER0 {
        return Err(Errno::EINVAL);
    }
    let bytes = user::read_vec(uargs, size)?;
    // A larger struct from a newer libc is fine while what we do not know
    // of it is zero (`copy_struct_from_user`).
    if bytes.iter().skip(CLONE_ARGS_SIZE).any(|&b| b != 0) {
        return Err(Errno::E2BIG);
    }
    let field = |i: usize| {
        bytes.get(i * 8..i * 8 + 8).map_or(0, |b| {
            u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
        })
    };
    let (flags, _pidfd, ctid, ptid, exit_signal) =
        (field(0), field(1), field(2), field(3), field(4));
    let (stack, stack_size, tls, set_tid, set_tid_size, cgroup) =
        (field(5), field(6), field(7), field(8), field(9), field(10));
    if set_tid_size > MAX_PID_NS_LEVEL
        || (set_tid == 0 && set_tid_size > 0)
        || (set_tid != 0 && set_tid_size == 0)
        || exit_signal & !CSIGNAL != 0
        || exit_signal > 64
        || (flags & CLONE_INTO_CGROUP != 0 && (cgroup > i32::MAX as u64 || size < 88))
    {
        return Err(Errno::EINVAL);
    }
    if set_tid != 0 {
        user::check_readable(set_tid, set_tid_size * 4)?;
    }
    let valid = flags & !(0xffff_ffff | CLONE_CLEAR_SIGHAND | CLONE_INTO_CGROUP) == 0
        && flags & (CLONE_DETACHED | (CSIGNAL & !CLONE_NEWTIME)) == 0
        && flags & (CLONE_SIGHAND | CLONE_CLEAR_SIGHAND) != CLONE_SIGHAND | CLONE_CLEAR_SIGHAND
        && !(flags & (CLONE_THREAD | CLONE_PARENT) != 0 && exit_signal != 0)
        && if stack == 0 {
            stack_size == 0
        } else {
            stack_size != 0
                && stack
                    .checked_add(stack_size)
                    .is_some_and(|end| end <= user::USER_MAX)
        };
    if !valid {
        return Err(Errno::EINVAL);
    }
    if set_tid != 0 {
        // Choosing the new thread's id is for checkpoint/restore tools with
        // CAP_CHECKPOINT_RESTORE over the pid namespace.
        return Err(Errno::EPERM);
    }
    // The stack grows down from the end of the area.
    let top = if stack == 0 { 0 } else { stack + stack_size };
    thread(flags, top, ptid, ctid, tls)
}

/// A new thread of the program that returns from the call with 0 in
/// `rax` and `stack` (if not 0) as its stack pointer.
fn thread(flags: u64, stack: u64, ptid: u64, ctid: u64, tls: u64) -> Result<u64, Errno> {
    if flags & (CLONE_VM | CLONE_THREAD) != CLONE_VM | CLONE_THREAD {
        static SAID: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);
        if !SAID.swap(true, Ordering::Relaxed) {
            crate::eprintln!(
                "astraea: clone of a new process (fork) is not supported in a partition (one process per partition)"
            );
        }
        return Err(Errno::ENOSYS);
    }
    // SAFETY: we are inside this thread's system call; its frame sits at
    // the top of its kernel stack until the call returns.
    let parent = unsafe { *crate::arch::user::current_syscall_frame() };
    let mut regs = parent.user_regs();
    regs.rax = 0;
    if stack != 0 {
        regs.rsp = stack;
    }
    let me = crate::sched::current();
    let sigmask = me.user.sigmask.load(Ordering::Relaxed);
    let fs = if flags & CLONE_SETTLS != 0 {
        tls
    } else {
        me.user.fs_base.load(Ordering::Relaxed)
    };
    let fpu = crate::arch::fpu::fork();
    // A thread waiting in a direct call (the creator's start handshake)
    // can then switch to the new one without an event through the host.
    let direct = crate::arch::direct::enabled() && crate::arch::user::fsgsbase();
    crate::process::LIVE_THREADS.fetch_add(1, Ordering::AcqRel);
    let created = crate::sched::create("program", move || {
        let t = crate::sched::current();
        // Until `active` is set the scheduler switches nothing of the
        // program's for this thread; from then on every switch back
        // restores its FS base and registers, and `claim` loads them now.
        *t.user.fpu.lock() = fpu;
        t.user.active.store(true, Ordering::Release);
        crate::arch::fpu::claim(&t);
        // `resume_user` never returns: a reference held on this stack would
        // keep the thread (and its kernel stack) alive after it exits.
        drop(t);
        if direct {
            crate::arch::direct::start_user(&regs)
        } else {
            crate::arch::user::resume_user(&regs)
        }
    });
    let Some(child) = created else {
        crate::process::LIVE_THREADS.fetch_sub(1, Ordering::AcqRel);
        return Err(Errno::EAGAIN);
    };
    let tid = child.id();
    if direct {
        crate::sched::start_as_direct(&child);
    }
    // The thread is registered below, before it first runs, as on Linux
    // once `clone` returns: `pthread_kill` of it, a timer aimed at it and a
    // signal to the process all find it, with its mask.
    child.user.sigmask.store(sigmask, Ordering::Relaxed);
    child.user.fs_base.store(fs, Ordering::Relaxed);
    if flags & CLONE_CHILD_CLEARTID != 0 {
        child.user.clear_child_tid.store(ctid, Ordering::Relaxed);
    }
    // Both words are written before the child can run, as Linux does (and,
    // as there, a bad address is ignored): glibc's `pthread_join` waits on
    // that word, which the child's exit clears, so a child that ran and
    // exited first would have its cleared word overwritten with its id
    // and its joiner would wait for ever.
    if flags & CLONE_PARENT_SETTID != 0 {
        let _ = user::copy_in(ptid, &(tid as u32).to_le_bytes());
    }
    if flags & CLONE_CHILD_SETTID != 0 {
        // The memory is shared, so this is the child's word too.
        let _ = user::copy_in(ctid, &(tid as u32).to_le_bytes());
    }
    // Registered and made ready in one step: a signal sent between the two
    // would make it ready itself, and it could run before its words above
    // were written.
    super::sched_policy::inherit(crate::sched::current().id(), tid);
    let irq = crate::arch::cpu::irq_save();
    crate::process::register(&child);
    crate::sched::make_ready(child);
    crate::arch::cpu::irq_restore(irq);
    Ok(tid)
}
