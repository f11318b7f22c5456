//! `mincore(2)`: which pages of a range are in memory.
//!
//! A page is resident when it is populated in the program's page tables (or
//! kept aside while `PROT_NONE`, as Linux keeps such pages in memory), or,
//! in a file mapping, when the file cache holds it (as Linux's page cache:
//! files on cached read-only mounts). Files that are not cached count only
//! the pages this mapping has.

use crate::errno::Errno;
use crate::mm::{user, vma};

/// `mincore(addr, length, vec)`: one byte per page, bit 0 set when resident.
/// As Linux: `EINVAL` for an unaligned `addr`, `ENOMEM` when the range
/// reaches outside the address space or any part of it is unmapped,
/// `EFAULT` when `vec` cannot be written.
pub fn mincore(a: &[u64; 6]) -> Result<u64, Errno> {
    let (addr, len, vec) = (a[0], a[1], a[2]);
    if !addr.is_multiple_of(4096) {
        return Err(Errno::EINVAL);
    }
    let end = addr
        .checked_add(len)
        .and_then(|e| e.checked_next_multiple_of(4096))
        .ok_or(Errno::ENOMEM)?;
    if end > user::USER_MAX {
        return Err(Errno::ENOMEM);
    }
    if len == 0 {
        return Ok(0);
    }
    // A chunk of pages at a time, so a huge range needs no huge buffer.
    const CHUNK: u64 = 4096 * 4096;
    let mut at = addr;
    while at < end {
        let stop = end.min(at.saturating_add(CHUNK));
        let bytes: alloc::vec::Vec<u8> =
            vma::resident(at, stop)?.into_iter().map(u8::from).collect();
        user::copy_in(vec + (at - addr) / 4096, &bytes)?;
        at = stop;
    }
    Ok(0)
}
