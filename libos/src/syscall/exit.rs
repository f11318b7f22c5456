//! `exit(2)` and `exit_group(2)`: one process, so both end the partition.

use crate::errno::Errno;

/// `exit(status)`.
pub fn exit(a: &[u64; 6]) -> Result<u64, Errno> {
    crate::boot::exit((a[0] & 0xff) as i32)
}

/// `exit_group(status)`.
pub fn exit_group(a: &[u64; 6]) -> Result<u64, Errno> {
    crate::boot::exit((a[0] & 0xff) as i32)
}
