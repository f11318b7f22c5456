//! `arch_prctl(2)`: the thread pointer.

use core::sync::atomic::Ordering;

use crate::errno::Errno;

const ARCH_SET_FS: u64 = 0x1002;
const ARCH_GET_FS: u64 = 0x1003;

/// `arch_prctl(code, addr)`.
pub fn arch_prctl(a: &[u64; 6]) -> Result<u64, Errno> {
    match a[0] {
        ARCH_SET_FS => {
            if a[1] >= crate::mm::user::USER_MAX {
                return Err(Errno::EPERM);
            }
            crate::arch::user::set_fs_base(a[1]);
            Ok(0)
        }
        ARCH_GET_FS => {
            let fs = crate::sched::current().user.fs_base.load(Ordering::Relaxed);
            crate::mm::user::copy_in(a[1], &fs.to_le_bytes())?;
            Ok(0)
        }
        _ => Err(Errno::EINVAL),
    }
}
