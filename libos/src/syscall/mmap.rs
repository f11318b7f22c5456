//! `mmap(2)`, `munmap(2)`, `mprotect(2)`: anonymous memory for now, mapped
//! eagerly; file mappings and demand paging come with the Linux personality.

use crate::errno::Errno;
use crate::mm::user::{self, Prot};
use crate::process::MEMORY;

const PROT_WRITE: u64 = 2;
const PROT_EXEC: u64 = 4;
const MAP_FIXED: u64 = 0x10;
const MAP_ANONYMOUS: u64 = 0x20;
const MAP_FIXED_NOREPLACE: u64 = 0x10_0000;

/// `mmap(addr, length, prot, flags, fd, offset)`.
pub fn mmap(a: &[u64; 6]) -> Result<u64, Errno> {
    let (addr, len, prot, flags) = (a[0], a[1], a[2], a[3]);
    if len == 0 {
        return Err(Errno::EINVAL);
    }
    if flags & MAP_ANONYMOUS == 0 {
        return Err(Errno::ENODEV);
    }
    let len = len.checked_next_multiple_of(4096).ok_or(Errno::ENOMEM)?;
    let p = Prot {
        write: prot & PROT_WRITE != 0,
        exec: prot & PROT_EXEC != 0,
    };
    let mut m = MEMORY.lock();
    let at = if flags & (MAP_FIXED | MAP_FIXED_NOREPLACE) != 0 {
        if addr % 4096 != 0 {
            return Err(Errno::EINVAL);
        }
        addr
    } else {
        m.mmap_next = m.mmap_next.checked_sub(len).ok_or(Errno::ENOMEM)?;
        m.mmap_next
    };
    drop(m);
    user::map_anonymous(at, len, p)?;
    Ok(at)
}

/// `munmap(addr, length)`: accepted; the pages stay until unmapping exists.
pub fn munmap(_: &[u64; 6]) -> Result<u64, Errno> {
    Ok(0)
}

/// `mprotect(addr, length, prot)`: accepted; protections change later.
pub fn mprotect(_: &[u64; 6]) -> Result<u64, Errno> {
    Ok(0)
}
