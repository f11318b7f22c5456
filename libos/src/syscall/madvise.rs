//! `madvise(2)`: advice about a range of the program's memory. Dropping
//! pages and populating them are honoured; advice about paging policy,
//! huge pages, forks and core dumps has nothing to act on in a partition
//! (no swap, 4 KiB pages, one process, no core dumps) and is accepted, as
//! `MappedByteBuffer.load()` needs `MADV_WILLNEED` to succeed. Advice Linux
//! does not know is `EINVAL`, as on Linux.

use crate::errno::Errno;
use crate::mm::vma;

const MADV_NORMAL: u64 = 0;
const MADV_RANDOM: u64 = 1;
const MADV_SEQUENTIAL: u64 = 2;
const MADV_WILLNEED: u64 = 3;
const MADV_DONTNEED: u64 = 4;
const MADV_FREE: u64 = 8;
const MADV_REMOVE: u64 = 9;
const MADV_DONTFORK: u64 = 10;
const MADV_DOFORK: u64 = 11;
const MADV_MERGEABLE: u64 = 12;
const MADV_UNMERGEABLE: u64 = 13;
const MADV_HUGEPAGE: u64 = 14;
const MADV_NOHUGEPAGE: u64 = 15;
const MADV_DONTDUMP: u64 = 16;
const MADV_DODUMP: u64 = 17;
const MADV_WIPEONFORK: u64 = 18;
const MADV_KEEPONFORK: u64 = 19;
const MADV_COLD: u64 = 20;
const MADV_PAGEOUT: u64 = 21;
const MADV_POPULATE_READ: u64 = 22;
const MADV_POPULATE_WRITE: u64 = 23;
const MADV_DONTNEED_LOCKED: u64 = 24;
const MADV_COLLAPSE: u64 = 25;
const MADV_HWPOISON: u64 = 100;
const MADV_SOFT_OFFLINE: u64 = 101;

/// `madvise(addr, length, advice)`.
pub fn madvise(a: &[u64; 6]) -> Result<u64, Errno> {
    let (addr, len, advice) = (a[0], a[1], a[2] as u32 as u64);
    match advice {
        MADV_NORMAL | MADV_RANDOM | MADV_SEQUENTIAL | MADV_WILLNEED | MADV_DONTNEED | MADV_FREE
        | MADV_REMOVE | MADV_DONTFORK | MADV_DOFORK | MADV_MERGEABLE | MADV_UNMERGEABLE
        | MADV_HUGEPAGE | MADV_NOHUGEPAGE | MADV_DONTDUMP | MADV_DODUMP | MADV_WIPEONFORK
        | MADV_KEEPONFORK | MADV_COLD | MADV_PAGEOUT | MADV_POPULATE_READ | MADV_POPULATE_WRITE
        | MADV_DONTNEED_LOCKED | MADV_COLLAPSE => {}
        // Poisoning memory needs CAP_SYS_ADMIN, which the program lacks.
        MADV_HWPOISON | MADV_SOFT_OFFLINE => return Err(Errno::EPERM),
        // Including MADV_GUARD_INSTALL/REMOVE (Linux 6.13): not offered.
        _ => return Err(Errno::EINVAL),
    }
    if !addr.is_multiple_of(4096) {
        return Err(Errno::EINVAL);
    }
    let end = addr
        .checked_add(len)
        .and_then(|e| e.checked_next_multiple_of(4096))
        .ok_or(Errno::EINVAL)?;
    if end == addr {
        return Ok(0);
    }
    let covered = end <= crate::mm::user::USER_MAX && vma::covered(addr, end);
    // Advice that only private anonymous memory takes, and MADV_REMOVE,
    // which needs shared writable memory, as Linux checks per area.
    let kinds = vma::kinds(addr, end);
    match advice {
        MADV_FREE | MADV_WIPEONFORK | MADV_KEEPONFORK
            if kinds.iter().any(|&(file, shared, _)| file || shared) =>
        {
            return Err(Errno::EINVAL);
        }
        MADV_REMOVE if kinds.iter().any(|&(file, shared, _)| !file && !shared) => {
            return Err(Errno::EINVAL);
        }
        // Linux asks for a shared mapping that may become writable; a
        // shared file mapping is taken to be one.
        MADV_REMOVE if kinds.iter().any(|&(_, shared, _)| !shared) => {
            return Err(Errno::EACCES);
        }
        _ => {}
    }
    // MADV_FREE leaves the pages as they are: Linux frees them only under
    // memory pressure, and until then they read back as they were (and a
    // program must accept either).
    match advice {
        MADV_DONTNEED | MADV_DONTNEED_LOCKED | MADV_REMOVE if end <= crate::mm::user::USER_MAX => {
            vma::discard(addr, end - addr, advice != MADV_REMOVE)?;
        }
        MADV_POPULATE_READ | MADV_POPULATE_WRITE if covered => {
            // EFAULT where an access would have raised a signal, as Linux.
            vma::ensure(addr, end - addr, advice == MADV_POPULATE_WRITE)?;
        }
        _ => {}
    }
    if covered { Ok(0) } else { Err(Errno::ENOMEM) }
}
