//! `getpid(2)` and `gettid(2)`: the one process is pid 1.

use crate::errno::Errno;

/// `getpid()`.
pub fn getpid(_: &[u64; 6]) -> Result<u64, Errno> {
    Ok(1)
}

/// `gettid()`: the kernel thread's id.
pub fn gettid(_: &[u64; 6]) -> Result<u64, Errno> {
    Ok(crate::sched::current().id())
}
