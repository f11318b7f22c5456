//! `getpid(2)`, `gettid(2)`: the process is its first thread.

use crate::errno::Errno;

/// `getpid()`.
pub fn getpid(_: &[u64; 6]) -> Result<u64, Errno> {
    Ok(crate::process::pid())
}

/// `gettid()`.
pub fn gettid(_: &[u64; 6]) -> Result<u64, Errno> {
    Ok(crate::sched::current().id())
}
