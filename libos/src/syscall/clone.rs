//! `clone(2)` for threads: the flags glibc's and musl's `pthread_create`
//! use. A new process (no `CLONE_VM`) answers ENOSYS: one process per
//! partition. `clone3` answers ENOSYS too; both libcs fall back to `clone`.

use core::sync::atomic::Ordering;

use crate::errno::Errno;
use crate::mm::user;

const CLONE_VM: u64 = 0x100;
const CLONE_THREAD: u64 = 0x10000;
const CLONE_SETTLS: u64 = 0x80000;
const CLONE_PARENT_SETTID: u64 = 0x100000;
const CLONE_CHILD_CLEARTID: u64 = 0x200000;
const CLONE_CHILD_SETTID: u64 = 0x1000000;

/// `clone(flags, stack, parent_tid, child_tid, tls)`.
pub fn clone(a: &[u64; 6]) -> Result<u64, Errno> {
    let (flags, stack, ptid, ctid, tls) = (a[0], a[1], a[2], a[3], a[4]);
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
        crate::arch::user::resume_user(&regs)
    });
    let Some(child) = created else {
        crate::process::LIVE_THREADS.fetch_sub(1, Ordering::AcqRel);
        return Err(Errno::EAGAIN);
    };
    let tid = child.id();
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
    let irq = crate::arch::cpu::irq_save();
    crate::process::register(&child);
    crate::sched::make_ready(child);
    crate::arch::cpu::irq_restore(irq);
    Ok(tid)
}

/// `clone3(args, size)`: ENOSYS, so the libc uses `clone`.
pub fn clone3(_: &[u64; 6]) -> Result<u64, Errno> {
    Err(Errno::ENOSYS)
}
