//! `exit(2)` ends the calling thread (the partition, for the last one);
//! `exit_group(2)` ends the partition with the program's status.

use core::sync::atomic::Ordering;

use crate::errno::Errno;

/// `exit(status)`.
pub fn exit(a: &[u64; 6]) -> Result<u64, Errno> {
    let status = (a[0] & 0xff) as i32;
    if crate::process::LIVE_THREADS.fetch_sub(1, Ordering::AcqRel) <= 1 {
        crate::boot::exit(status);
    }
    let me = crate::sched::current();
    crate::process::unregister(me.id());
    // Linux's `mm_release`: the robust futexes first, then the tid word.
    let head = me.user.robust_list.swap(0, Ordering::AcqRel);
    super::robust::exit_robust_list(me.id() as u32, head);
    // Then the PI futexes it still owns go to their waiters.
    super::futex_pi::exit(me.id() as u32);
    super::sched_policy::exit(me.id());
    let ctid = me.user.clear_child_tid.swap(0, Ordering::AcqRel);
    if ctid != 0 && crate::mm::user::copy_in(ctid, &0u32.to_le_bytes()).is_ok() {
        super::futex::wake(ctid, 1, u32::MAX);
    }
    me.user.active.store(false, Ordering::Release);
    drop(me);
    crate::sched::exit_thread()
}

/// `exit_group(status)`.
pub fn exit_group(a: &[u64; 6]) -> Result<u64, Errno> {
    crate::boot::exit((a[0] & 0xff) as i32)
}
