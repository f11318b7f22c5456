//! `set_tid_address(2)`: remembered for thread exit (clear and wake comes
//! with threads); returns the caller's tid.

use crate::errno::Errno;

/// `set_tid_address(tidptr)`.
pub fn set_tid_address(_: &[u64; 6]) -> Result<u64, Errno> {
    Ok(crate::sched::current().id())
}
