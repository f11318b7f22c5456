//! `memfd_create(2)`: a file in the partition's memory (`vfs::memfd`).

use alloc::string::String;
use alloc::sync::Arc;

use crate::errno::Errno;
use crate::fd::{self, Object};
use crate::mm::user;

const MFD_CLOEXEC: u64 = 1;
const MFD_ALLOW_SEALING: u64 = 2;
const MFD_HUGETLB: u64 = 4;
const MFD_NOEXEC_SEAL: u64 = 8;
const MFD_EXEC: u64 = 0x10;
/// The longest name (Linux's `MFD_NAME_MAX_LEN`).
const NAME_MAX: usize = 249;

/// `memfd_create(name, flags)`. Huge-page files (`MFD_HUGETLB`) are
/// `EINVAL`, as on a kernel without huge pages set aside. Seals
/// (`fcntl(F_ADD_SEALS)`) are kept by the file (`vfs::memfd`).
pub fn memfd_create(a: &[u64; 6]) -> Result<u64, Errno> {
    let flags = a[1];
    if flags & !(MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_HUGETLB | MFD_NOEXEC_SEAL | MFD_EXEC) != 0
        || flags & (MFD_NOEXEC_SEAL | MFD_EXEC) == MFD_NOEXEC_SEAL | MFD_EXEC
        || flags & MFD_HUGETLB != 0
    {
        return Err(Errno::EINVAL);
    }
    let (name, true) = user::read_cstr(a[0], NAME_MAX + 1)? else {
        return Err(Errno::EINVAL);
    };
    let name = String::from_utf8_lossy(&name).into_owned();
    use crate::vfs::memfd::{SEAL_EXEC, SEAL_SEAL};
    // Without MFD_ALLOW_SEALING a memfd is sealed against sealing;
    // MFD_NOEXEC_SEAL allows it and seals the execute bits.
    let seals = if flags & MFD_NOEXEC_SEAL != 0 {
        SEAL_EXEC
    } else if flags & MFD_ALLOW_SEALING != 0 {
        0
    } else {
        SEAL_SEAL
    };
    let m = crate::vfs::memfd::MemFd::new(name, seals);
    fd::install_object(Object::Like(Arc::new(m)), flags & MFD_CLOEXEC != 0)
}
