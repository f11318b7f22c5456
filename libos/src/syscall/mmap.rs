//! `mmap(2)`, `munmap(2)`, `mprotect(2)`. Mappings are made eagerly; a
//! private file mapping is a copy of the file's bytes (enough for `ld.so`
//! and read-only data); demand paging and shared mappings come later.

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
    let file = if flags & MAP_ANONYMOUS == 0 {
        let f = crate::fd::get(a[4])?;
        match &*f {
            crate::fd::File::P9 { fid, .. } => Some(*fid),
            crate::fd::File::Console { .. } => return Err(Errno::ENODEV),
        }
    } else {
        None
    };
    if !a[5].is_multiple_of(4096) {
        return Err(Errno::EINVAL);
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
    if flags & MAP_FIXED != 0 {
        user::unmap(at, len)?;
    }
    user::map_anonymous(at, len, p)?;
    if let Some(fid) = file {
        fill_from_file(fid, a[5], at, len)?;
    }
    Ok(at)
}

/// Copies the file's bytes at `offset` into the fresh mapping (the rest
/// stays zero, as past the end of a file).
fn fill_from_file(fid: crate::p9::Fid, offset: u64, at: u64, len: u64) -> Result<(), Errno> {
    let c = crate::p9::mounted().ok_or(Errno::EBADF)?;
    let mut buf = alloc::vec![0u8; c.iounit() as usize];
    let mut done = 0u64;
    while done < len {
        let want = ((len - done) as usize).min(buf.len());
        let n = c.read(fid, offset + done, &mut buf[..want])?;
        if n == 0 {
            break;
        }
        user::copy_in(at + done, &buf[..n])?;
        done += n as u64;
    }
    Ok(())
}

/// `munmap(addr, length)`.
pub fn munmap(a: &[u64; 6]) -> Result<u64, Errno> {
    if !a[0].is_multiple_of(4096) || a[1] == 0 {
        return Err(Errno::EINVAL);
    }
    user::unmap(a[0], a[1].next_multiple_of(4096))?;
    Ok(0)
}

/// `mprotect(addr, length, prot)`: accepted; protections change later.
pub fn mprotect(_: &[u64; 6]) -> Result<u64, Errno> {
    Ok(0)
}
