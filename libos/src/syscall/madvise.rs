//! `madvise(2)`: advice about a range of the program's memory. Dropping
//! pages and populating them are honoured; advice about paging policy,
//! huge pages, forks and core dumps has nothing to act on in a partition
//! (no swap, 4 KiB pages, one process, no core dumps) and is accepted, as
//! `MappedByteBuffer.load()` needs `MADV_WILLNEED` to succeed. Advice Linux
//! does not know is `EINVAL`, as on Linux. Each area is checked in address
//! order as Linux walks them (`refusal`), locked ones included
//! (`tests/progs/mlockdiff.c`).

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
/// `FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE`, what `MADV_REMOVE` does.
const PUNCH_HOLE_KEEP_SIZE: u32 = 0x03;

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
    if end > crate::mm::user::USER_MAX {
        return Err(Errno::ENOMEM);
    }
    if matches!(advice, MADV_POPULATE_READ | MADV_POPULATE_WRITE) {
        return populate(addr, end, advice == MADV_POPULATE_WRITE).map(|()| 0);
    }
    // As Linux's walk over the areas: advice an area refuses ends the walk
    // there with its error, the areas before it taken; a hole is ENOMEM
    // once the walk is done.
    let kinds = vma::kinds(addr, end);
    let refused = kinds
        .iter()
        .find_map(|k| refusal(advice, k).map(|e| (k.start, e)));
    let upto = refused.map_or(end, |(at, _)| at);
    if advice == MADV_REMOVE && upto > addr {
        // Linux punches the range out of the file (or shared memory),
        // so every mapping of it reads zeros there.
        for (backing, off, len) in vma::shared_file_ranges(addr, upto) {
            match backing {
                vma::Backing::Mem { memfd, .. } => {
                    if let Some(m) = memfd.regular() {
                        m.fallocate(PUNCH_HOLE_KEEP_SIZE, off, len)?;
                    }
                }
                vma::Backing::File { file, .. } => {
                    crate::syscall::fallocate::punch(&file, off, len)?;
                }
                vma::Backing::Anon | vma::Backing::Beyond => {}
            }
        }
    }
    // MADV_FREE leaves the pages as they are: Linux frees them only under
    // memory pressure, and until then they read back as they were (and a
    // program must accept either).
    if matches!(advice, MADV_DONTNEED | MADV_DONTNEED_LOCKED | MADV_REMOVE) && upto > addr {
        vma::discard(addr, upto - addr, advice != MADV_REMOVE)?;
    }
    if let Some((_, e)) = refused {
        return Err(e);
    }
    if vma::covered(addr, end) {
        Ok(0)
    } else {
        Err(Errno::ENOMEM)
    }
}

/// Why an area refuses `advice`, as Linux's per-area checks: locked pages
/// are not dropped nor aged (`MADV_DONTNEED_LOCKED` drops them);
/// `MADV_FREE` and the fork advice take only private anonymous memory;
/// `MADV_REMOVE` needs a shared mapping of a file or of shared memory (a
/// shared file mapping is taken to be writable).
fn refusal(advice: u64, k: &vma::Kind) -> Option<Errno> {
    let anon_private = !k.file && !k.shared;
    match advice {
        MADV_DONTNEED | MADV_COLD | MADV_PAGEOUT if k.locked => Some(Errno::EINVAL),
        MADV_FREE if k.locked || !anon_private => Some(Errno::EINVAL),
        MADV_WIPEONFORK | MADV_KEEPONFORK if !anon_private => Some(Errno::EINVAL),
        MADV_REMOVE if k.locked || anon_private => Some(Errno::EINVAL),
        MADV_REMOVE if !k.shared => Some(Errno::EACCES),
        _ => None,
    }
}

/// `MADV_POPULATE_READ`/`WRITE` (Linux's `madvise_populate`): page by
/// page until the first failure: `ENOMEM` at a hole, `EINVAL` at an area
/// that forbids the access, `EFAULT` where the access would raise a
/// signal (a file's end).
fn populate(addr: u64, end: u64, write: bool) -> Result<(), Errno> {
    let mut at = addr;
    for k in vma::kinds(addr, end) {
        if k.start > at {
            return Err(Errno::ENOMEM);
        }
        let (lo, hi) = (k.start, k.end);
        let need = if write {
            vma::PROT_WRITE
        } else {
            vma::PROT_READ
        };
        if k.prot & need == 0 {
            return Err(Errno::EINVAL);
        }
        vma::ensure(lo, hi - lo, write)?;
        at = hi;
    }
    if at < end { Err(Errno::ENOMEM) } else { Ok(()) }
}
