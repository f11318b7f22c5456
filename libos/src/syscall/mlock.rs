//! `mlock(2)`, `mlock2(2)`, `munlock(2)`, `mlockall(2)`, `munlockall(2)`:
//! memory locking with Linux's accounting. A partition has no swap, so a
//! lock changes no residency by itself; what a program sees is Linux's:
//! the pages are populated at once (unless `MLOCK_ONFAULT`), they count in
//! `VmLck` against `RLIMIT_MEMLOCK` (the program has no `CAP_IPC_LOCK`:
//! `EPERM` under a limit of 0, `ENOMEM` past it, `EAGAIN` for a locked
//! `mmap`, `brk` or `mremap` past it), `mlockall(MCL_FUTURE)` locks later
//! mappings, and `madvise` refuses to drop locked pages
//! (`tests/progs/mlockdiff.c`).

use crate::errno::Errno;
use crate::mm::vma::{self, MCL_CURRENT, MCL_FUTURE, MCL_ONFAULT, VM_LOCKED, VM_LOCKONFAULT};
use crate::process::{RLIMIT_MEMLOCK, rlimit};

const MLOCK_ONFAULT: u32 = 1;

/// Linux's `can_do_mlock` for a program without `CAP_IPC_LOCK`.
fn can_lock() -> Result<(), Errno> {
    if rlimit(RLIMIT_MEMLOCK).0 == 0 {
        return Err(Errno::EPERM);
    }
    Ok(())
}

/// The page-aligned range of `start`/`len` as Linux rounds it (the length
/// wraps as Linux's `PAGE_ALIGN` does: a huge one can become 0).
fn pages(start: u64, len: u64) -> (u64, u64) {
    let len = len.wrapping_add(start & 0xfff).wrapping_add(0xfff) & !0xfff;
    (start & !0xfff, len)
}

/// `mlock(start, len)`: the areas locked and populated, within
/// `RLIMIT_MEMLOCK` (`ENOMEM`; `EPERM` under a limit of 0).
pub fn mlock(a: &[u64; 6]) -> Result<u64, Errno> {
    can_lock()?;
    let (start, len) = pages(a[0], a[1]);
    vma::set_lock(start, len, VM_LOCKED, true)?;
    Ok(0)
}

/// `mlock2(start, len, flags)`: `MLOCK_ONFAULT` locks pages as they are
/// touched.
pub fn mlock2(a: &[u64; 6]) -> Result<u64, Errno> {
    let flags = a[2] as u32;
    if flags & !MLOCK_ONFAULT != 0 {
        return Err(Errno::EINVAL);
    }
    can_lock()?;
    let lock = if flags & MLOCK_ONFAULT != 0 {
        VM_LOCKED | VM_LOCKONFAULT
    } else {
        VM_LOCKED
    };
    let (start, len) = pages(a[0], a[1]);
    vma::set_lock(start, len, lock, true)?;
    Ok(0)
}

/// `munlock(start, len)`: no limit, no privilege.
pub fn munlock(a: &[u64; 6]) -> Result<u64, Errno> {
    let (start, len) = pages(a[0], a[1]);
    vma::set_lock(start, len, 0, false)?;
    Ok(0)
}

/// `mlockall(flags)`: `MCL_CURRENT` locks every area (`ENOMEM` when the
/// address space is larger than `RLIMIT_MEMLOCK`), `MCL_FUTURE` later ones.
pub fn mlockall(a: &[u64; 6]) -> Result<u64, Errno> {
    let flags = a[0] as u32;
    if flags == 0 || flags & !(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT) != 0 || flags == MCL_ONFAULT
    {
        return Err(Errno::EINVAL);
    }
    can_lock()?;
    vma::lock_all(flags)?;
    Ok(0)
}

/// `munlockall()`: every area unlocked, and later ones too.
pub fn munlockall(_: &[u64; 6]) -> Result<u64, Errno> {
    vma::lock_all(0)?;
    Ok(0)
}
