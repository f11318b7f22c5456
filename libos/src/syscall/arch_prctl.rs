//! `arch_prctl(2)`: the thread pointer.

use crate::errno::Errno;

const ARCH_SET_FS: u64 = 0x1002;

/// `arch_prctl(code, addr)`.
pub fn arch_prctl(a: &[u64; 6]) -> Result<u64, Errno> {
    match a[0] {
        ARCH_SET_FS => {
            crate::mm::user::check_range(a[1], 0)?;
            crate::arch::user::set_fs_base(a[1]);
            Ok(0)
        }
        _ => Err(Errno::EINVAL),
    }
}
