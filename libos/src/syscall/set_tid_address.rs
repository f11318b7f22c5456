//! `set_tid_address(2)`: the word cleared and woken when the thread exits.

use core::sync::atomic::Ordering;

use crate::errno::Errno;

/// `set_tid_address(tidptr)`: returns the caller's thread id.
pub fn set_tid_address(a: &[u64; 6]) -> Result<u64, Errno> {
    let me = crate::sched::current();
    me.user.clear_child_tid.store(a[0], Ordering::Relaxed);
    Ok(me.id())
}
