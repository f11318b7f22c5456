//! `getrandom(2)`: the same source as `/dev/urandom`.

use alloc::vec;

use crate::errno::Errno;
use crate::mm::user;

/// `getrandom(buf, count, flags)`.
pub fn getrandom(a: &[u64; 6]) -> Result<u64, Errno> {
    let len = a[1].min(1 << 20) as usize;
    let mut out = vec![0u8; len];
    crate::vfs::dev::random_fill(&mut out);
    user::copy_in(a[0], &out)?;
    Ok(len as u64)
}
