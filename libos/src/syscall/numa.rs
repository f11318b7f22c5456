//! `get_mempolicy(2)`, `set_mempolicy(2)`, `mbind(2)`: `ENOSYS`, as from a
//! Linux kernel built without NUMA (a partition has one memory node).
//! libnuma's `numa_available()` then says no, and the JVM turns `UseNUMA`
//! off by itself (ZGC and Parallel GC switch it on by default).

use crate::errno::Errno;

/// `get_mempolicy(mode, nodemask, maxnode, addr, flags)`.
pub fn get_mempolicy(_: &[u64; 6]) -> Result<u64, Errno> {
    Err(Errno::ENOSYS)
}

/// `set_mempolicy(mode, nodemask, maxnode)`.
pub fn set_mempolicy(_: &[u64; 6]) -> Result<u64, Errno> {
    Err(Errno::ENOSYS)
}

/// `mbind(addr, len, mode, nodemask, maxnode, flags)`.
pub fn mbind(_: &[u64; 6]) -> Result<u64, Errno> {
    Err(Errno::ENOSYS)
}
