//! `mmap(2)`, `munmap(2)`, `mprotect(2)`, `msync(2)`: areas of the
//! program's memory, populated on first touch (see `mm::vma`), or at once
//! when locked (`MAP_LOCKED`, `mlockall(MCL_FUTURE)`).

use alloc::sync::Arc;

use crate::errno::Errno;
use crate::mm::vma::{self, Backing, Placement};

const MAP_SHARED: u64 = 0x1;
const MAP_PRIVATE: u64 = 0x2;
const MAP_TYPE: u64 = 0xf;
const MAP_SHARED_VALIDATE: u64 = 0x3;
const MAP_FIXED: u64 = 0x10;
const MAP_ANONYMOUS: u64 = 0x20;
const MAP_LOCKED: u64 = 0x2000;
const MAP_POPULATE: u64 = 0x8000;
const MAP_FIXED_NOREPLACE: u64 = 0x10_0000;
const PROT_ALL: u64 = 0x7;
const PROT_WRITE: u64 = 0x2;

/// `mmap(addr, length, prot, flags, fd, offset)`.
pub fn mmap(a: &[u64; 6]) -> Result<u64, Errno> {
    let (addr, len, prot, flags, offset) = (a[0], a[1], a[2], a[3], a[5]);
    check(len, prot, offset)?;
    let kind = flags & MAP_TYPE;
    let shared = kind == MAP_SHARED || kind == MAP_SHARED_VALIDATE;
    if !shared && kind != MAP_PRIVATE {
        return Err(Errno::EINVAL);
    }
    let (backing, name) = if flags & MAP_ANONYMOUS != 0 {
        (Backing::Anon, None)
    } else if let Some(memfd) = memfd(a[4])? {
        // A memory-only file: readable, and writable for a shared
        // writable mapping, as any file.
        let mode = memfd.flags().load(core::sync::atomic::Ordering::Relaxed) & 3;
        if mode == 1 || (shared && prot & PROT_WRITE != 0 && mode != 2) {
            return Err(Errno::EACCES);
        }
        let seals = memfd.regular().map_or(0, |m| m.seals());
        if shared
            && prot & PROT_WRITE != 0
            && seals & (crate::vfs::memfd::SEAL_WRITE | crate::vfs::memfd::SEAL_FUTURE_WRITE) != 0
        {
            return Err(Errno::EPERM);
        }
        let name = Arc::<str>::from(memfd.proc_link().as_str());
        (Backing::Mem { memfd, offset }, Some(name))
    } else {
        let file = crate::fd::get(a[4])?;
        let name = match &*file {
            crate::fd::File::P9 {
                path, flags, dir, ..
            } => {
                // As Linux (do_mmap): the descriptor must be readable, and
                // writable too for a shared writable mapping; only then is
                // a directory found to have no pages to map.
                let mode = flags.load(core::sync::atomic::Ordering::Relaxed) & 3;
                if mode == 1 || (shared && prot & PROT_WRITE != 0 && mode != 2) {
                    return Err(Errno::EACCES);
                }
                if *dir {
                    return Err(Errno::ENODEV);
                }
                Arc::<str>::from(path.as_str())
            }
            _ => return Err(Errno::ENODEV),
        };
        (Backing::File { file, offset }, Some(name))
    };
    let placement = if flags & MAP_FIXED != 0 {
        Placement::Fixed(addr)
    } else if flags & MAP_FIXED_NOREPLACE != 0 {
        Placement::NoReplace(addr)
    } else {
        Placement::Hint(addr & !0xfff)
    };
    let locked = flags & MAP_LOCKED != 0;
    let at = vma::map(placement, len, prot as u32, shared, backing, name, locked)?;
    if flags & MAP_POPULATE != 0 {
        // Best effort, as on Linux: what cannot be populated faults later.
        vma::map_populate(at, at.saturating_add(len));
    }
    Ok(at)
}

/// `mmap(a)` by a direct call when it makes a private anonymous area
/// without populating it and replaces (with `MAP_FIXED`) only anonymous
/// areas: a call that never waits for I/O (HotSpot's stack guard pages are
/// such `MAP_FIXED` maps over the thread's stack, glibc's stacks new ones).
/// `None` otherwise (the call traps).
pub fn anonymous_direct(a: &[u64; 6]) -> Option<Result<u64, Errno>> {
    let (addr, len, prot, flags, offset) = (a[0], a[1], a[2], a[3], a[5]);
    if flags & MAP_ANONYMOUS == 0
        || flags & MAP_TYPE != MAP_PRIVATE
        || flags & (MAP_POPULATE | MAP_LOCKED) != 0
    {
        return None;
    }
    if flags & MAP_FIXED == 0 {
        return Some(mmap(a));
    }
    if let Err(e) = check(len, prot, offset) {
        return Some(Err(e));
    }
    vma::map_anonymous_no_io(Placement::Fixed(addr), len, prot as u32)
}

/// `mmap`'s checks of its arguments that come before the mapping's type.
fn check(len: u64, prot: u64, offset: u64) -> Result<(), Errno> {
    if len == 0 || !offset.is_multiple_of(4096) || prot & !PROT_ALL != 0 {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

/// The memory-only file behind `fd`, if that is what it is.
fn memfd(fd: u64) -> Result<Option<Arc<dyn crate::fd::FileLike>>, Errno> {
    match crate::fd::object(fd)? {
        crate::fd::Object::Like(l) if l.regular().is_some() => Ok(Some(l)),
        _ => Ok(None),
    }
}

/// `munmap(addr, length)`: shared file mappings reach their files first.
pub fn munmap(a: &[u64; 6]) -> Result<u64, Errno> {
    if let Some(end) = a[0].checked_add(a[1]) {
        vma::write_back(a[0], end)?;
    }
    vma::unmap(a[0], a[1])?;
    Ok(0)
}

const MS_ASYNC: u64 = 1;
const MS_INVALIDATE: u64 = 2;
const MS_SYNC: u64 = 4;

/// `msync(addr, length, flags)`: the modified pages of shared file mappings
/// in the range are written to their files (at once, even for `MS_ASYNC`).
pub fn msync(a: &[u64; 6]) -> Result<u64, Errno> {
    let flags = a[2];
    if !a[0].is_multiple_of(4096)
        || flags & !(MS_ASYNC | MS_INVALIDATE | MS_SYNC) != 0
        || flags & (MS_ASYNC | MS_SYNC) == MS_ASYNC | MS_SYNC
    {
        return Err(Errno::EINVAL);
    }
    let end = a[0].checked_add(a[1]).ok_or(Errno::ENOMEM)?;
    vma::write_back(a[0], end)?;
    Ok(0)
}

/// `mprotect(addr, length, prot)`.
pub fn mprotect(a: &[u64; 6]) -> Result<u64, Errno> {
    if a[2] & !(PROT_ALL | 0x0100_0000 | 0x0200_0000) != 0 {
        return Err(Errno::EINVAL);
    }
    vma::protect(a[0], a[1], (a[2] & PROT_ALL) as u32)?;
    Ok(0)
}
