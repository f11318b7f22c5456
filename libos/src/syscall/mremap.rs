//! `mremap(2)`: resizing and moving mappings (see `mm::vma::remap`).

use crate::errno::Errno;

/// `mremap(old_address, old_size, new_size, flags, new_address)`.
pub fn mremap(a: &[u64; 6]) -> Result<u64, Errno> {
    crate::mm::vma::remap(a[0], a[1], a[2], a[3] as u32, a[4])
}
