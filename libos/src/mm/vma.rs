//! The program's virtual memory areas and demand paging.
//!
//! An area is a page-aligned range with a protection and a backing (zeroed
//! memory, or a file read through 9P). Nothing is populated when an area is
//! made: the first touch faults, and the fault handler maps a small window of
//! pages around the address (one 9P read of up to 64 KiB for files), so
//! reservations of many GiB cost nothing until used.
//!
//! `PROT_NONE` cannot be expressed by an x86 page that is present, so a page
//! that is populated when its area becomes inaccessible is taken out of the
//! page tables and kept aside ("hidden") until the protection allows access
//! again; its contents survive, as on Linux.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::sync::Arc;
use core::fmt::Write;

use super::frame::PAGE_SIZE;
use super::kernel::{alloc_frames, free_frames, map_user_page, translate};
use super::paging::PteFlags;
use super::phys_to_virt;
use super::user::{USER_MAX, USER_MIN};
use crate::errno::Errno;
use crate::sync::IrqLock;

const PAGE: u64 = PAGE_SIZE as u64;

/// `PROT_READ`.
pub const PROT_READ: u32 = 1;
/// `PROT_WRITE`.
pub const PROT_WRITE: u32 = 2;
/// `PROT_EXEC`.
pub const PROT_EXEC: u32 = 4;

/// Pages mapped per fault at most (the fault-around window, 64 KiB).
const FAULT_AROUND: u64 = 16;

/// Where an area's bytes come from.
#[derive(Clone)]
pub enum Backing {
    /// Zero-filled memory.
    Anon,
    /// Pages past the end of a shared anonymous object (a shared anonymous
    /// mapping grown by `mremap`): every access is SIGBUS, as on Linux.
    Beyond,
    /// A file: page `start + i*4K` holds the file's bytes at `offset + i*4K`.
    /// The open file is kept, so the mapping outlives `close`.
    File {
        /// The open file.
        file: Arc<crate::fd::File>,
        /// File offset of the area's first byte.
        offset: u64,
    },
    /// A memory-only file (`memfd_create`): its pages, shared by every
    /// mapping of it, as `File` for a file of the namespace.
    Mem {
        /// The file (one with [`crate::fd::FileLike::regular`] calls: a
        /// `vfs::memfd::MemFd`).
        memfd: Arc<dyn crate::fd::FileLike>,
        /// File offset of the area's first byte.
        offset: u64,
    },
}

impl Backing {
    /// Whether it is a file of either kind.
    fn is_file(&self) -> bool {
        matches!(self, Backing::File { .. } | Backing::Mem { .. })
    }

    /// The file offset of the area's first byte (0 for memory).
    fn offset_mut(&mut self) -> Option<&mut u64> {
        match self {
            Backing::File { offset, .. } | Backing::Mem { offset, .. } => Some(offset),
            Backing::Anon | Backing::Beyond => None,
        }
    }
}

/// One area.
#[derive(Clone)]
pub struct Area {
    /// One past the last byte.
    pub end: u64,
    /// `PROT_*` bits.
    pub prot: u32,
    /// `MAP_SHARED`: the area's own copies of the file's pages are written
    /// back on `msync`, `munmap` and exit ([`write_back`]).
    pub shared: bool,
    /// Where the bytes come from.
    pub backing: Backing,
    /// The name in `/proc/self/maps` (a path, `[stack]`, `[heap]`), if any.
    pub name: Option<Arc<str>>,
    /// Linux's `VM_MAYWRITE` for a shared area: whether `mprotect` may add
    /// `PROT_WRITE` (the file was opened for writing and, if memory-only,
    /// not sealed against writes when mapped). Always true when private.
    pub may_write: bool,
    /// Linux's `VM_LOCKED` and `VM_LOCKONFAULT` bits ([`VM_LOCKED`],
    /// [`VM_LOCKONFAULT`]): `mlock`ed, populated at once or as touched.
    pub lock: u8,
}

impl Area {
    /// Linux's `is_data_mapping`: private, writable, not the stack.
    fn is_data(&self) -> bool {
        data_kind(self.shared, self.prot, &self.name)
    }

    /// Whether `self` is still `other`, the area a fault looked up before
    /// its I/O ran unlocked: the same extent, protection and sharing, and
    /// the same backing (the same open file at the same offset). A
    /// `mmap(MAP_FIXED)` of another file with the same protection over it
    /// meanwhile must not receive the old file's bytes.
    fn same_as(&self, other: &Area) -> bool {
        self.end == other.end
            && self.prot == other.prot
            && self.shared == other.shared
            && match (&self.backing, &other.backing) {
                (Backing::Anon, Backing::Anon) | (Backing::Beyond, Backing::Beyond) => true,
                (Backing::File { file: a, offset: x }, Backing::File { file: b, offset: y }) => {
                    Arc::ptr_eq(a, b) && x == y
                }
                (
                    Backing::Mem {
                        memfd: a,
                        offset: x,
                    },
                    Backing::Mem {
                        memfd: b,
                        offset: y,
                    },
                ) => Arc::ptr_eq(a, b) && x == y,
                _ => false,
            }
    }
}

/// Why a user access faulted, as the signal it raises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// SIGSEGV, `SEGV_MAPERR`: no area there.
    MapErr,
    /// SIGSEGV, `SEGV_ACCERR`: the area forbids this access.
    AccErr,
    /// SIGBUS, `BUS_ADRERR`: a file mapping past the end of its file.
    Bus,
    /// No memory left to populate the page.
    Oom,
}

/// Linux's `is_data_mapping` for an area's sharing, protection and name.
fn data_kind(shared: bool, prot: u32, name: &Option<Arc<str>>) -> bool {
    !shared && prot & PROT_WRITE != 0 && name.as_deref() != Some("[stack]")
}

/// `VM_LOCKED`: the area is `mlock`ed (its pages count in `VmLck`).
pub const VM_LOCKED: u8 = 1;
/// `VM_LOCKONFAULT`: with [`VM_LOCKED`], pages are locked as they are
/// touched instead of populated at once (`MLOCK_ONFAULT`, `MCL_ONFAULT`).
pub const VM_LOCKONFAULT: u8 = 2;

/// Every area by start address, plus the hidden frames of `PROT_NONE` pages.
struct Space {
    areas: BTreeMap<u64, Area>,
    hidden: BTreeMap<u64, u64>,
    /// The lock bits every new area gets (Linux's `mm->def_flags`, set by
    /// `mlockall(MCL_FUTURE)`).
    def_lock: u8,
}

static SPACE: IrqLock<Space> = IrqLock::new(Space {
    areas: BTreeMap::new(),
    hidden: BTreeMap::new(),
    def_lock: 0,
});

/// Top of the area `mmap` places mappings in when given no address.
pub const MMAP_TOP: u64 = 0x7f00_0000_0000;

fn pte_flags(prot: u32) -> PteFlags {
    let mut f = PteFlags::PRESENT | PteFlags::USER;
    if prot & PROT_WRITE != 0 {
        f |= PteFlags::WRITABLE;
    }
    if prot & PROT_EXEC == 0 {
        f |= PteFlags::NO_EXECUTE;
    }
    f
}

impl Space {
    /// The area containing `va`, as (start, area).
    fn find(&self, va: u64) -> Option<(u64, &Area)> {
        let (&s, a) = self.areas.range(..=va).next_back()?;
        (va < a.end).then_some((s, a))
    }

    /// Pages of locked areas (Linux's `mm->locked_vm`).
    fn locked_pages(&self) -> u64 {
        self.areas
            .iter()
            .filter(|(_, a)| a.lock & VM_LOCKED != 0)
            .map(|(&s, a)| (a.end - s) / PAGE)
            .sum()
    }

    /// Locked pages in the range at `start` of `len` bytes (its end capped
    /// at the top of the address space), as Linux's
    /// `count_mm_mlocked_page_nr` counts them.
    fn locked_in(&self, start: u64, len: u64) -> u64 {
        let end = start.saturating_add(len);
        let first = self.find(start).map_or(start, |(s, _)| s);
        let mut count = 0u64;
        for (&s, a) in self.areas.range(first..end) {
            if a.lock & VM_LOCKED == 0 {
                continue;
            }
            if start > s {
                count = count.wrapping_sub(start - s);
            }
            if end < a.end {
                count = count.wrapping_add(end - s);
                break;
            }
            count = count.wrapping_add(a.end - s);
        }
        count / PAGE
    }

    /// Pages of every area (Linux's `mm->total_vm`).
    fn total_pages(&self) -> u64 {
        self.areas.iter().map(|(&s, a)| (a.end - s) / PAGE).sum()
    }

    /// Pages of data areas (Linux's `mm->data_vm`).
    fn data_pages(&self) -> u64 {
        self.areas
            .iter()
            .filter(|(_, a)| a.is_data())
            .map(|(&s, a)| (a.end - s) / PAGE)
            .sum()
    }

    /// Pages of areas in `[start, end)`.
    fn pages_in(&self, start: u64, end: u64) -> u64 {
        let first = self.find(start).map_or(start, |(s, _)| s);
        self.areas
            .range(first..end)
            .map(|(&s, a)| (a.end.min(end) - s.max(start)) / PAGE)
            .sum()
    }

    /// Whether `pages` more pages stay within `RLIMIT_AS`.
    fn as_ok(&self, pages: u64) -> bool {
        use crate::process::{RLIM_INFINITY, RLIMIT_AS, rlimit};
        // No limit (the usual case): no walk over every area per mmap.
        let limit = rlimit(RLIMIT_AS).0;
        limit == RLIM_INFINITY || self.total_pages().saturating_add(pages) <= limit / PAGE
    }

    /// Whether `pages` more data pages stay within `RLIMIT_DATA` (a limit
    /// of 0 lets them up to the hard limit, Linux's allowance for Valgrind).
    fn data_ok(&self, pages: u64) -> bool {
        use crate::process::{RLIMIT_DATA, rlimit};
        let (soft, hard) = rlimit(RLIMIT_DATA);
        if soft == crate::process::RLIM_INFINITY {
            return true;
        }
        let after = self.data_pages().saturating_add(pages);
        after <= soft / PAGE || (soft == 0 && after <= hard / PAGE)
    }

    /// Linux's `may_expand_vm`: whether `pages` more pages of an area (a
    /// data one if `data`) stay within `RLIMIT_AS` and `RLIMIT_DATA`.
    fn may_expand(&self, data: bool, pages: u64) -> bool {
        self.as_ok(pages) && (!data || self.data_ok(pages))
    }

    /// Whether `pages` more locked pages stay within `RLIMIT_MEMLOCK`
    /// (Linux's `mlock_future_ok`; the program has no `CAP_IPC_LOCK`).
    fn lock_ok(&self, pages: u64) -> bool {
        self.locked_pages().saturating_add(pages) <= memlock_limit_pages()
    }

    fn overlaps(&self, start: u64, end: u64) -> bool {
        if let Some((_, a)) = self.areas.range(..start).next_back()
            && a.end > start
        {
            return true;
        }
        self.areas.range(start..end).next().is_some()
    }

    /// Whether `[start, end)` holds only anonymous areas (or nothing):
    /// replacing them needs no I/O (no shared file page to write back, no
    /// file to close).
    fn only_anonymous(&self, start: u64, end: u64) -> bool {
        let first = self.find(start).map_or(start, |(s, _)| s);
        self.areas
            .range(first..end)
            .all(|(_, a)| matches!(a.backing, Backing::Anon | Backing::Beyond))
    }

    /// Splits the area containing `at` (if any) so that an area starts there.
    fn split_at(&mut self, at: u64) {
        let Some((s, a)) = self.find(at) else { return };
        if s == at {
            return;
        }
        let mut upper = a.clone();
        if let Some(offset) = upper.backing.offset_mut() {
            *offset += at - s;
        }
        if let Some(lower) = self.areas.get_mut(&s) {
            lower.end = at;
        }
        self.areas.insert(at, upper);
    }

    /// Joins the areas meeting `[start, end]` with their neighbours where
    /// Linux would have one area: the same protection, sharing, lock,
    /// name and kind, and (for files) the next bytes of the same open
    /// file. `mprotect` and `mlock` split areas; joining them again keeps
    /// the areas Linux's walks see (and `/proc/self/maps`) Linux's.
    fn merge(&mut self, start: u64, end: u64) {
        let first = self
            .areas
            .range(..start)
            .next_back()
            .map_or(start, |(&s, _)| s);
        let starts: alloc::vec::Vec<u64> = self.areas.range(first..=end).map(|(&s, _)| s).collect();
        let mut prev: Option<u64> = None;
        for s in starts {
            let joins = prev.is_some_and(|p| {
                let (Some(a), Some(b)) = (self.areas.get(&p), self.areas.get(&s)) else {
                    return false;
                };
                a.end == s
                    && a.prot == b.prot
                    && a.shared == b.shared
                    && a.lock == b.lock
                    && a.may_write == b.may_write
                    && a.name == b.name
                    && match (&a.backing, &b.backing) {
                        // Two shared anonymous areas are two objects
                        // (Linux's shmem files): never one area.
                        (Backing::Anon, Backing::Anon) => !a.shared,
                        (
                            Backing::File { file: f, offset: x },
                            Backing::File { file: g, offset: y },
                        ) => Arc::ptr_eq(f, g) && x + (s - p) == *y,
                        (
                            Backing::Mem {
                                memfd: f,
                                offset: x,
                            },
                            Backing::Mem {
                                memfd: g,
                                offset: y,
                            },
                        ) => Arc::ptr_eq(f, g) && x + (s - p) == *y,
                        _ => false,
                    }
            });
            if joins
                && let Some(p) = prev
                && let Some(b) = self.areas.remove(&s)
                && let Some(a) = self.areas.get_mut(&p)
            {
                a.end = b.end;
                continue;
            }
            prev = Some(s);
        }
    }

    /// Removes `[start, end)` from the areas (splitting at the edges), and
    /// unmaps and frees its pages. The removed areas are returned for the
    /// caller to drop after unlocking: the last reference to a mapped file
    /// closes it, which is 9P I/O that may sleep.
    #[must_use = "drop the removed areas after unlocking"]
    fn remove(&mut self, start: u64, end: u64) -> alloc::vec::Vec<Area> {
        self.split_at(start);
        self.split_at(end);
        let starts: alloc::vec::Vec<u64> = self.areas.range(start..end).map(|(&s, _)| s).collect();
        let mut gone = alloc::vec::Vec::with_capacity(starts.len());
        for s in starts {
            gone.extend(self.areas.remove(&s));
        }
        let hidden: alloc::vec::Vec<u64> = self.hidden.range(start..end).map(|(&v, _)| v).collect();
        for v in hidden {
            if let Some(pa) = self.hidden.remove(&v) {
                free_frames(pa, 1);
            }
        }
        super::kernel::unmap_user_range(start, end - start);
        gone
    }

    /// A free range of `len` bytes: at `hint` if that is free, else the
    /// highest gap below [`MMAP_TOP`].
    fn find_free(&self, hint: u64, len: u64) -> Option<u64> {
        if hint >= USER_MIN
            && hint.is_multiple_of(PAGE)
            && hint.checked_add(len).is_some_and(|e| e <= USER_MAX)
            && !self.overlaps(hint, hint + len)
        {
            return Some(hint);
        }
        let mut cursor = MMAP_TOP;
        for (&s, a) in self.areas.range(..MMAP_TOP).rev() {
            if a.end <= cursor && cursor - a.end >= len {
                return Some(cursor - len);
            }
            cursor = cursor.min(s);
        }
        (cursor >= USER_MIN + len).then(|| cursor - len)
    }
}

/// How `map` picks the address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// A hint: used when free, else anywhere.
    Hint(u64),
    /// `MAP_FIXED`: exactly there, replacing what was mapped.
    Fixed(u64),
    /// `MAP_FIXED_NOREPLACE`: exactly there, `EEXIST` if anything is.
    NoReplace(u64),
}

/// Makes a new area of `len` bytes (rounded up to pages); returns its start.
/// `map_locked` (`MAP_LOCKED`) locks it, as `mlockall(MCL_FUTURE)` locks
/// every new area: within `RLIMIT_MEMLOCK` (else `EAGAIN`, and `EPERM` for
/// `MAP_LOCKED` under a limit of 0), and populated at once.
pub fn map(
    placement: Placement,
    len: u64,
    prot: u32,
    shared: bool,
    backing: Backing,
    name: Option<Arc<str>>,
    map_locked: bool,
) -> Result<u64, Errno> {
    // Stores in shared file mappings about to be replaced (whole pages)
    // reach their files.
    if let Placement::Fixed(a) = placement {
        let pages = len.checked_next_multiple_of(PAGE).unwrap_or(u64::MAX);
        let _ = write_back(a, a.saturating_add(pages));
    }
    let start = place(
        placement, len, prot, shared, backing, name, map_locked, false,
    )?
    .ok_or(Errno::EINVAL)?;
    let _ = populate_locked(start, start.saturating_add(len), false);
    Ok(start)
}

/// [`map`] of a private anonymous area for a direct call, which must not
/// wait for I/O: `None` when `MAP_FIXED` would replace anything but
/// anonymous areas (a shared file page to write back, a file to close),
/// or when new areas are locked (populating them is the trap path's);
/// decided under the same lock as the mapping, so another thread cannot
/// map a file there in between.
pub fn map_anonymous_no_io(
    placement: Placement,
    len: u64,
    prot: u32,
) -> Option<Result<u64, Errno>> {
    place(
        placement,
        len,
        prot,
        false,
        Backing::Anon,
        None,
        false,
        true,
    )
    .transpose()
}

#[allow(clippy::too_many_arguments)]
fn place(
    placement: Placement,
    len: u64,
    prot: u32,
    shared: bool,
    backing: Backing,
    name: Option<Arc<str>>,
    map_locked: bool,
    only_anonymous: bool,
) -> Result<Option<u64>, Errno> {
    let len = len.checked_next_multiple_of(PAGE).ok_or(Errno::ENOMEM)?;
    if len == 0 {
        return Err(Errno::EINVAL);
    }
    // Replaced areas die after the lock is released (see `Space::remove`).
    let mut _replaced = alloc::vec::Vec::new();
    let mut sp = SPACE.lock();
    if only_anonymous && sp.def_lock != 0 {
        return Ok(None);
    }
    let mut replace = false;
    let start = match placement {
        Placement::Hint(h) => sp.find_free(h, len).ok_or(Errno::ENOMEM)?,
        Placement::Fixed(a) | Placement::NoReplace(a) => {
            if !a.is_multiple_of(PAGE) {
                return Err(Errno::EINVAL);
            }
            let end = a.checked_add(len).ok_or(Errno::ENOMEM)?;
            if a < USER_MIN || end > USER_MAX {
                return Err(Errno::ENOMEM);
            }
            if sp.overlaps(a, end) {
                if matches!(placement, Placement::NoReplace(_)) {
                    return Err(Errno::EEXIST);
                }
                if only_anonymous && !sp.only_anonymous(a, end) {
                    return Ok(None);
                }
                replace = true;
            }
            a
        }
    };
    // As Linux's `do_mmap`, after the placement and before anything is
    // replaced (whose locked pages still count).
    let lock = sp.def_lock | if map_locked { VM_LOCKED } else { 0 };
    if map_locked && crate::process::rlimit(crate::process::RLIMIT_MEMLOCK).0 == 0 {
        return Err(Errno::EPERM);
    }
    if lock & VM_LOCKED != 0 && !sp.lock_ok(len / PAGE) {
        return Err(Errno::EAGAIN);
    }
    // RLIMIT_AS and RLIMIT_DATA, counting what `MAP_FIXED` replaces as gone.
    if !sp.may_expand(data_kind(shared, prot, &name), len / PAGE) {
        // Past a limit: what `MAP_FIXED` replaces counts as gone.
        let replaced = if replace {
            sp.pages_in(start, start + len)
        } else {
            0
        };
        if !sp.may_expand(data_kind(shared, prot, &name), len / PAGE - replaced) {
            return Err(Errno::ENOMEM);
        }
    }
    if replace {
        _replaced = sp.remove(start, start + len);
    }
    // An anonymous area that continues the one before it with the same
    // properties joins it (the break grows this way).
    if let Backing::Anon = backing
        && let Some((_, prev)) = sp.areas.range_mut(..start).next_back()
        && prev.end == start
        && prev.prot == prot
        && !prev.shared
        && !shared
        && matches!(prev.backing, Backing::Anon)
        && prev.name == name
        && prev.lock == lock
    {
        prev.end = start + len;
        return Ok(Some(start));
    }
    let may_write = !shared || may_write_shared(&backing);
    sp.areas.insert(
        start,
        Area {
            end: start + len,
            prot,
            shared,
            backing,
            name,
            may_write,
            lock,
        },
    );
    Ok(Some(start))
}

/// `VM_MAYWRITE` of a new shared mapping of `backing` (see [`Area::may_write`]).
fn may_write_shared(backing: &Backing) -> bool {
    use core::sync::atomic::Ordering::Relaxed;
    match backing {
        Backing::File { file, .. } => match &**file {
            crate::fd::File::P9 { flags, .. } => flags.load(Relaxed) & 3 == 2,
            _ => true,
        },
        Backing::Mem { memfd, .. } => {
            let sealed = memfd.regular().map_or(0, |m| m.seals())
                & (crate::vfs::memfd::SEAL_WRITE | crate::vfs::memfd::SEAL_FUTURE_WRITE);
            memfd.flags().load(Relaxed) & 3 == 2 && sealed == 0
        }
        Backing::Anon | Backing::Beyond => true,
    }
}

/// `MREMAP_MAYMOVE`.
pub const MREMAP_MAYMOVE: u32 = 1;
/// `MREMAP_FIXED`.
pub const MREMAP_FIXED: u32 = 2;
/// `MREMAP_DONTUNMAP`.
pub const MREMAP_DONTUNMAP: u32 = 4;

/// `mremap`: resizes the mapping at `[old, old+old_len)` to `new_len`
/// bytes, in place when it can, else (with `MREMAP_MAYMOVE`) somewhere
/// else (with `MREMAP_FIXED`, at `new_addr`), moving its pages without
/// copying them. Returns where it is. Linux's rules: the old range lies in
/// one area (else `EFAULT`); growing in place needs the room after it
/// (else `ENOMEM` without `MREMAP_MAYMOVE`).
pub fn remap(
    old: u64,
    old_len: u64,
    new_len: u64,
    flags: u32,
    new_addr: u64,
) -> Result<u64, Errno> {
    if !old.is_multiple_of(PAGE)
        || flags & !(MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP) != 0
        || (flags & (MREMAP_FIXED | MREMAP_DONTUNMAP) != 0 && flags & MREMAP_MAYMOVE == 0)
    {
        return Err(Errno::EINVAL);
    }
    let old_len = old_len
        .checked_next_multiple_of(PAGE)
        .ok_or(Errno::EINVAL)?;
    let new_len = new_len
        .checked_next_multiple_of(PAGE)
        .ok_or(Errno::EINVAL)?;
    if new_len == 0 {
        return Err(Errno::EINVAL);
    }
    if flags & MREMAP_DONTUNMAP != 0 && old_len != new_len {
        return Err(Errno::EINVAL);
    }
    let fixed = flags & MREMAP_FIXED != 0;
    if fixed {
        let end = new_addr.checked_add(new_len).ok_or(Errno::EINVAL)?;
        if !new_addr.is_multiple_of(PAGE) || new_addr < USER_MIN || end > USER_MAX {
            return Err(Errno::EINVAL);
        }
        // The two ranges may not overlap.
        if new_addr < old.saturating_add(old_len.max(1)) && old < end {
            return Err(Errno::EINVAL);
        }
    }
    // Stores in shared file pages about to be replaced reach their files.
    if fixed {
        let _ = write_back(new_addr, new_addr + new_len);
    }
    let mut gone = alloc::vec::Vec::new();
    let r = remap_locked(
        &mut SPACE.lock(),
        old,
        old_len,
        new_len,
        flags,
        new_addr,
        &mut gone,
    );
    write_orphans(&gone);
    drop(gone);
    if let Ok(at) = r
        && new_len > old_len
    {
        let _ = populate_locked(at, at.saturating_add(new_len), false);
    }
    r
}

fn remap_locked(
    sp: &mut Space,
    old: u64,
    old_len: u64,
    new_len: u64,
    flags: u32,
    new_addr: u64,
    gone: &mut alloc::vec::Vec<Area>,
) -> Result<u64, Errno> {
    let (start, area) = sp
        .find(old)
        .map(|(s, a)| (s, a.clone()))
        .ok_or(Errno::EFAULT)?;
    if old_len == 0 {
        // A second mapping of the same shared pages (Linux's duplication).
        if !area.shared || flags & MREMAP_MAYMOVE == 0 {
            return Err(Errno::EINVAL);
        }
    } else if old + old_len > area.end {
        return Err(Errno::EFAULT);
    }
    // A locked area grows only within RLIMIT_MEMLOCK (Linux's
    // `resize_is_valid`); a duplicate (`old_len` 0) is all new pages.
    let grow = new_len.saturating_sub(old_len);
    if grow > 0 && area.lock & VM_LOCKED != 0 && !sp.lock_ok(grow / PAGE) {
        return Err(Errno::EAGAIN);
    }
    if grow > 0 && !sp.may_expand(area.is_data(), grow / PAGE) {
        return Err(Errno::ENOMEM);
    }
    let fixed = flags & MREMAP_FIXED != 0;
    if !fixed && old_len != 0 {
        if new_len <= old_len {
            if new_len < old_len {
                gone.extend(sp.remove(old + new_len, old + old_len));
            }
            return Ok(old);
        }
        // Grow in place: the range must end where its area does and the
        // room after it be free.
        let grown = old.checked_add(new_len).filter(|&e| e <= USER_MAX);
        if let Some(end) = grown
            && old + old_len == area.end
            && !sp.overlaps(area.end, end)
        {
            grow_area(sp, start, &area, end);
            return Ok(old);
        }
        if flags & MREMAP_MAYMOVE == 0 {
            return Err(Errno::ENOMEM);
        }
    }
    // Move: the destination first (what was there goes), then the pages.
    let dest = if fixed {
        gone.extend(sp.remove(new_addr, new_addr + new_len));
        new_addr
    } else {
        sp.find_free(0, new_len).ok_or(Errno::ENOMEM)?
    };
    if old_len == 0 {
        let mut dup = area.clone();
        dup.end = dest + new_len;
        if let Some(offset) = dup.backing.offset_mut() {
            *offset += old - start;
        }
        sp.areas.insert(dest, dup);
        return Ok(dest);
    }
    if new_len < old_len {
        gone.extend(sp.remove(old + new_len, old + old_len));
    }
    let kept = old_len.min(new_len);
    sp.split_at(old);
    sp.split_at(old + kept);
    let Some(mut moved) = sp.areas.remove(&old) else {
        return Err(Errno::EFAULT);
    };
    let delta_end = moved.end;
    // Pages: every present one changes address, flags and frame kept.
    let mut va = old;
    while va < delta_end {
        if let Some(e) = super::kernel::take_user_page(va) {
            let pa = e & 0x000f_ffff_ffff_f000;
            let flags = PteFlags::from_bits_truncate(e);
            if map_user_page(dest + (va - old), pa, flags).is_err() {
                super::kernel::release_taken(e);
            }
        }
        va += PAGE;
    }
    let hidden: alloc::vec::Vec<(u64, u64)> = sp
        .hidden
        .range(old..delta_end)
        .map(|(&v, &p)| (v, p))
        .collect();
    for (v, pa) in hidden {
        sp.hidden.remove(&v);
        sp.hidden.insert(dest + (v - old), pa);
    }
    let backing = moved.backing.clone();
    let shared_anon = moved.shared && matches!(backing, Backing::Anon);
    moved.end = dest + kept;
    sp.areas.insert(dest, moved.clone());
    if new_len > kept {
        grow_area(sp, dest, &moved, dest + new_len);
    }
    if flags & MREMAP_DONTUNMAP != 0 {
        // The old range stays mapped, empty: zeros or the file again.
        let mut empty = moved;
        empty.end = old + kept;
        // Linux clears the old area's lock: its pages went with the move.
        empty.lock = 0;
        if shared_anon {
            empty.backing = Backing::Anon;
        }
        sp.areas.insert(old, empty);
    }
    Ok(dest)
}

/// Extends the area at `start` to `end`: a file area maps the file further,
/// an anonymous one more zeros; a shared anonymous object does not grow,
/// so its new pages are SIGBUS (`Backing::Beyond`).
fn grow_area(sp: &mut Space, start: u64, area: &Area, end: u64) {
    if area.shared && matches!(area.backing, Backing::Anon | Backing::Beyond) {
        let tail = Area {
            end,
            prot: area.prot,
            shared: true,
            backing: Backing::Beyond,
            name: area.name.clone(),
            may_write: area.may_write,
            lock: area.lock,
        };
        sp.areas.insert(area.end, tail);
    } else if let Some(a) = sp.areas.get_mut(&start) {
        a.end = end;
    }
}

/// `munmap`: removes whatever is mapped in `[start, start+len)`.
pub fn unmap(start: u64, len: u64) -> Result<(), Errno> {
    let end = range_end(start, len)?;
    let gone = SPACE.lock().remove(start, end);
    write_orphans(&gone);
    drop(gone);
    Ok(())
}

fn range_end(start: u64, len: u64) -> Result<u64, Errno> {
    if !start.is_multiple_of(PAGE) || len == 0 {
        return Err(Errno::EINVAL);
    }
    let end = start
        .checked_add(len)
        .and_then(|e| e.checked_next_multiple_of(PAGE))
        .ok_or(Errno::EINVAL)?;
    if start < USER_MIN || end > USER_MAX {
        return Err(Errno::EINVAL);
    }
    Ok(end)
}

/// `mprotect`: every page in the range must be mapped (else `ENOMEM`).
/// As Linux, the areas before the first hole are changed all the same
/// (only a range that starts unmapped changes nothing): `ENOMEM` comes
/// after (tests/progs/memdiff.c).
pub fn protect(start: u64, len: u64, prot: u32) -> Result<(), Errno> {
    let want = range_end(start, len)?;
    let mut sp = SPACE.lock();
    let mut end = start;
    while end < want {
        match sp.find(end) {
            Some((_, a)) => end = a.end.min(want),
            None => break,
        }
    }
    if end == start && want > start {
        return Err(Errno::ENOMEM);
    }
    let mut r = if end < want {
        Err(Errno::ENOMEM)
    } else {
        Ok(())
    };
    // Walked as Linux walks the areas, each refusal ending the walk there
    // with the areas before it changed: write access to a shared area that
    // may not have it (a file opened read-only, a memory-only file sealed
    // against writes) is EACCES; a private area that becomes writable
    // (data) past RLIMIT_DATA is ENOMEM.
    if prot & PROT_WRITE != 0 {
        let first = sp.find(start).map_or(start, |(s, _)| s);
        let mut added = 0u64;
        let mut refused = None;
        for (&s, a) in sp.areas.range(first..end) {
            let (lo, hi) = (s.max(start), a.end.min(end));
            if a.shared && !a.may_write {
                refused = Some((lo, Errno::EACCES));
                break;
            }
            if !a.is_data() && data_kind(a.shared, prot, &a.name) {
                let n = (hi - lo) / PAGE;
                // Linux: refused when the data limit is what stops it.
                if sp.as_ok(n) && !sp.data_ok(added + n) {
                    refused = Some((lo, Errno::ENOMEM));
                    break;
                }
                added += n;
            }
        }
        if let Some((at, e)) = refused {
            end = at;
            r = Err(e);
            if end == start {
                return r;
            }
        }
    }
    sp.split_at(start);
    sp.split_at(end);
    for (_, a) in sp.areas.range_mut(start..end) {
        a.prot = prot;
    }
    sp.merge(start, end);
    if prot & (PROT_READ | PROT_WRITE | PROT_EXEC) == 0 {
        // Hide populated pages: no present x86 page can forbid reads.
        let mut taken = alloc::vec::Vec::new();
        super::kernel::unmap_user_range_keep(start, end - start, &mut |va, pa| {
            taken.push((va, pa));
        });
        sp.hidden.extend(taken);
    } else {
        super::kernel::protect_user_range(start, end - start, pte_flags(prot));
        let back: alloc::vec::Vec<(u64, u64)> =
            sp.hidden.range(start..end).map(|(&v, &p)| (v, p)).collect();
        for (va, pa) in back {
            sp.hidden.remove(&va);
            if map_user_page(va, pa, pte_flags(prot)).is_err() {
                free_frames(pa, 1);
            }
        }
    }
    r
}

/// `RLIMIT_MEMLOCK`'s soft limit in pages.
fn memlock_limit_pages() -> u64 {
    crate::process::rlimit(crate::process::RLIMIT_MEMLOCK).0 / PAGE
}

/// Bytes of locked areas, for `VmLck`.
pub fn locked_bytes() -> u64 {
    SPACE.lock().locked_pages() * PAGE
}

/// Bytes of data areas (private and writable, not the stack), for
/// `VmData`: what `RLIMIT_DATA` limits.
pub fn data_bytes() -> u64 {
    SPACE.lock().data_pages() * PAGE
}

/// `mlock`, `mlock2` and `munlock` of the page-aligned range at `start` of
/// `len` bytes (Linux's `do_mlock` and `apply_vma_lock_flags`): every area
/// in it gets the lock bits `lock`, in address order. When locking
/// (`check_limit`), `ENOMEM` first if the pages locked would pass
/// `RLIMIT_MEMLOCK` (those of the range already locked counted once); then
/// `EINVAL` for a range that wraps, `ENOMEM` for one that starts unmapped
/// (nothing changes) or has a hole (the areas before it change). Locked
/// pages are populated at once, unless `VM_LOCKONFAULT`: `ENOMEM` (the
/// lock kept) where one cannot be (`PROT_NONE`, past a file's end).
pub fn set_lock(start: u64, len: u64, lock: u8, check_limit: bool) -> Result<(), Errno> {
    let end = start.wrapping_add(len);
    {
        let mut sp = SPACE.lock();
        if check_limit {
            let limit = memlock_limit_pages();
            let mut locked = len / PAGE + sp.locked_pages();
            if locked > limit {
                locked = locked.wrapping_sub(sp.locked_in(start, len));
            }
            if locked > limit {
                return Err(Errno::ENOMEM);
            }
        }
        if end < start {
            return Err(Errno::EINVAL);
        }
        if end == start {
            return Ok(());
        }
        if sp.find(start).is_none() {
            return Err(Errno::ENOMEM);
        }
        let mut at = start;
        while at < end {
            let Some((_, a)) = sp.find(at) else { break };
            let (stop, same) = (a.end.min(end), a.lock == lock);
            if !same {
                sp.split_at(at);
                sp.split_at(stop);
                if let Some(a) = sp.areas.get_mut(&at) {
                    a.lock = lock;
                }
            }
            at = stop;
        }
        sp.merge(start, at);
        if at < end {
            return Err(Errno::ENOMEM);
        }
    }
    // Linux's `__mlock_posix_error_return`: a page that cannot be
    // populated is ENOMEM, no memory for one EAGAIN.
    populate_locked(start, end, lock == VM_LOCKED).map_err(|e| match e {
        Errno::EFAULT => Errno::ENOMEM,
        Errno::ENOMEM => Errno::EAGAIN,
        e => e,
    })
}

/// `MCL_CURRENT`.
pub const MCL_CURRENT: u32 = 1;
/// `MCL_FUTURE`.
pub const MCL_FUTURE: u32 = 2;
/// `MCL_ONFAULT`.
pub const MCL_ONFAULT: u32 = 4;

/// `mlockall(flags)` with checked flags, or `munlockall` (`flags` 0), as
/// Linux's `apply_mlockall_flags`: `MCL_FUTURE` sets the lock bits of new
/// areas (anything else clears them), `MCL_CURRENT` locks every area and
/// populates them, 0 unlocks every area. `ENOMEM` for `MCL_CURRENT` when
/// the whole address space is larger than `RLIMIT_MEMLOCK`.
pub fn lock_all(flags: u32) -> Result<(), Errno> {
    let onfault = if flags & MCL_ONFAULT != 0 {
        VM_LOCKONFAULT
    } else {
        0
    };
    {
        let mut sp = SPACE.lock();
        if flags & MCL_CURRENT != 0 {
            let total: u64 = sp.areas.iter().map(|(&s, a)| (a.end - s) / PAGE).sum();
            if total > memlock_limit_pages() {
                return Err(Errno::ENOMEM);
            }
        }
        sp.def_lock = 0;
        if flags & MCL_FUTURE != 0 {
            sp.def_lock = VM_LOCKED | onfault;
            if flags & MCL_CURRENT == 0 {
                return Ok(());
            }
        }
        let lock = if flags & MCL_CURRENT != 0 {
            VM_LOCKED | onfault
        } else {
            0
        };
        for a in sp.areas.values_mut() {
            a.lock = lock;
        }
        sp.merge(USER_MIN, USER_MAX);
    }
    if flags & MCL_CURRENT != 0 {
        let _ = populate_locked(USER_MIN, USER_MAX, false);
    }
    Ok(())
}

/// Populates the locked areas (not `VM_LOCKONFAULT`) in `[start, end)`, as
/// Linux's `__mm_populate` after locking: writable private areas for
/// writing (their copies made), others for reading. With `report`
/// (`mlock`'s), the first area that cannot be (`PROT_NONE`, a file's end)
/// stops it with `EFAULT`; without (`mlockall`, `MAP_LOCKED`), such pages
/// are left and the others populated.
fn populate_locked(start: u64, end: u64, report: bool) -> Result<(), Errno> {
    populate_areas(start, end, report, true)
}

/// `MAP_POPULATE`: every area in `[start, end)` populated as a locked one
/// would be (a private writable one gets its copies now, so later stores
/// to the file do not show through it, as on Linux); what cannot be is left.
pub fn map_populate(start: u64, end: u64) {
    let _ = populate_areas(start, end, false, false);
}

fn populate_areas(start: u64, end: u64, report: bool, locked_only: bool) -> Result<(), Errno> {
    let ranges: alloc::vec::Vec<(u64, u64, u32, bool)> = {
        let sp = SPACE.lock();
        let first = sp.find(start).map_or(start, |(s, _)| s);
        sp.areas
            .range(first..end)
            .filter(|(_, a)| {
                if locked_only {
                    a.lock == VM_LOCKED
                } else {
                    true
                }
            })
            .map(|(&s, a)| {
                let write = a.prot & PROT_WRITE != 0 && !a.shared;
                (s.max(start), a.end.min(end), a.prot, write)
            })
            .collect()
    };
    for (lo, hi, prot, write) in ranges {
        let r = if prot & (PROT_READ | PROT_WRITE | PROT_EXEC) == 0 {
            Err(Errno::EFAULT)
        } else {
            ensure(lo, hi - lo, write)
        };
        if report {
            r?;
        }
    }
    Ok(())
}

/// The files behind the shared file mappings in `[start, end)`, with the
/// byte range each maps there: what `MADV_REMOVE` punches out of them.
pub fn shared_file_ranges(start: u64, end: u64) -> alloc::vec::Vec<(Backing, u64, u64)> {
    let sp = SPACE.lock();
    let first = sp.find(start).map_or(start, |(s, _)| s);
    sp.areas
        .range(first..end)
        .filter(|(_, a)| a.shared && a.backing.is_file())
        .filter_map(|(&s, a)| {
            let (lo, hi) = (s.max(start), a.end.min(end));
            let mut b = a.backing.clone();
            let off = b.offset_mut()?;
            *off += lo - s;
            let at = *off;
            Some((b, at, hi - lo))
        })
        .collect()
}

/// `madvise(MADV_DONTNEED)` (`keep_shared_anon`) or `MADV_REMOVE`: drops
/// the pages; the next touch gives zeros (private anonymous) or the file's
/// bytes again. Shared anonymous memory is a shmem object in Linux: its
/// pages survive `MADV_DONTNEED` (only the mapping goes) and only
/// `MADV_REMOVE` punches them out, so with `keep_shared_anon` those areas
/// keep their pages (still mapped, which reads the same).
pub fn discard(start: u64, len: u64, keep_shared_anon: bool) -> Result<(), Errno> {
    let end = range_end(start, len)?;
    let mut sp = SPACE.lock();
    let mut ranges = alloc::vec::Vec::new();
    let mut from = start;
    if keep_shared_anon {
        let first = sp.find(start).map_or(start, |(s, _)| s);
        for (&s, a) in sp.areas.range(first..end) {
            if a.shared && !a.backing.is_file() {
                if s > from {
                    ranges.push((from, s));
                }
                from = from.max(a.end.min(end));
            }
        }
    }
    if from < end {
        ranges.push((from, end));
    }
    for (s, e) in ranges {
        let hidden: alloc::vec::Vec<u64> = sp.hidden.range(s..e).map(|(&v, _)| v).collect();
        for v in hidden {
            if let Some(pa) = sp.hidden.remove(&v) {
                free_frames(pa, 1);
            }
        }
        // Private anonymous parts may keep used pages, zeroed; file-backed
        // ones must read the file again, so their pages go.
        let first = sp.find(s).map_or(s, |(a, _)| a);
        let mut from = s;
        for (&a, area) in sp.areas.range(first..e) {
            let (lo, hi) = (a.max(s), area.end.min(e));
            if lo >= hi {
                continue;
            }
            if matches!(area.backing, Backing::Anon) && !area.shared {
                if lo > from {
                    super::kernel::unmap_user_range(from, lo - from);
                }
                super::kernel::discard_anon(lo, hi - lo);
                from = hi;
            }
        }
        if e > from {
            super::kernel::unmap_user_range(from, e - from);
        }
    }
    Ok(())
}

/// Fault counters, for the exit report (`--log info`).
pub struct FaultStats {
    /// Faults served with zeroed pages.
    pub anon: core::sync::atomic::AtomicU64,
    /// Faults served from files.
    pub file: core::sync::atomic::AtomicU64,
    /// Bytes read from files by faults.
    pub file_bytes: core::sync::atomic::AtomicU64,
    /// Nanoseconds spent in faults.
    pub ns: core::sync::atomic::AtomicU64,
    /// Nanoseconds of that spent reading files.
    pub io_ns: core::sync::atomic::AtomicU64,
}

/// The counters.
pub static STATS: FaultStats = FaultStats {
    anon: core::sync::atomic::AtomicU64::new(0),
    file: core::sync::atomic::AtomicU64::new(0),
    file_bytes: core::sync::atomic::AtomicU64::new(0),
    ns: core::sync::atomic::AtomicU64::new(0),
    io_ns: core::sync::atomic::AtomicU64::new(0),
};

/// Handles a fault at `va` by populating it if its area allows `write`
/// (or `exec`) access.
pub fn fault(va: u64, write: bool, exec: bool) -> Result<(), Fault> {
    let t0 = crate::time::monotonic_ns();
    let r = fault_inner(va, write, exec);
    STATS.ns.fetch_add(
        crate::time::monotonic_ns() - t0,
        core::sync::atomic::Ordering::Relaxed,
    );
    r
}

fn fault_inner(va: u64, write: bool, exec: bool) -> Result<(), Fault> {
    let page = va & !(PAGE - 1);
    let (start, area) = {
        let sp = SPACE.lock();
        let (s, a) = sp.find(page).ok_or(Fault::MapErr)?;
        (s, a.clone())
    };
    let allowed = if write {
        area.prot & PROT_WRITE != 0
    } else if exec {
        area.prot & PROT_EXEC != 0
    } else {
        area.prot & (PROT_READ | PROT_WRITE | PROT_EXEC) != 0
    };
    if !allowed {
        return Err(Fault::AccErr);
    }
    if let Some(t) = translate(page)
        && t.flags.contains(PteFlags::USER)
    {
        if write && t.flags.contains(PteFlags::BORROWED) {
            // A write to a file-cache page of a private mapping: the
            // mapping gets its own copy.
            return copy_on_write(page, &area, start);
        }
        // Present: another path populated it, or the access was allowed
        // after all (a stale TLB entry).
        crate::arch::cpu::invlpg(page);
        return Ok(());
    }
    // The window: up to FAULT_AROUND pages, aligned, inside the area.
    let win = FAULT_AROUND * PAGE;
    let lo = (page & !(win - 1)).max(start);
    let hi = ((page & !(win - 1)) + win).min(area.end);
    match &area.backing {
        Backing::Beyond => Err(Fault::Bus),
        Backing::Mem { memfd, offset } => {
            STATS
                .file
                .fetch_add(1, core::sync::atomic::Ordering::Relaxed);
            let memfd = memfd.regular().ok_or(Fault::Bus)?;
            mem_fault(lo, hi, page, write, &area, start, memfd, *offset)
        }
        Backing::Anon => {
            STATS
                .anon
                .fetch_add(1, core::sync::atomic::Ordering::Relaxed);
            populate(lo, hi, page, &area, start, None)
        }
        Backing::File { file, offset } => {
            STATS
                .file
                .fetch_add(1, core::sync::atomic::Ordering::Relaxed);
            let c = crate::p9::mounted().ok_or(Fault::Bus)?;
            let crate::fd::File::P9 {
                fid, cache, ino, ..
            } = &**file
            else {
                return Err(Fault::Bus);
            };
            if let (Some(key), Some(policy)) = (cache, crate::cache::current()) {
                let file_at = |va: u64| offset + (va - start);
                return map_cached(lo, hi, page, write, &area, start, &mut |va| {
                    policy.map_page(*key, file_at(va), &mut |o, b| {
                        let t = crate::time::monotonic_ns();
                        let r = c.read(*fid, o, b);
                        STATS.io_ns.fetch_add(
                            crate::time::monotonic_ns() - t,
                            core::sync::atomic::Ordering::Relaxed,
                        );
                        if let Ok(n) = r {
                            STATS
                                .file_bytes
                                .fetch_add(n as u64, core::sync::atomic::Ordering::Relaxed);
                        }
                        r
                    })
                });
            }
            // Shared mappings and read-only private ones show the file's
            // shared pages (a private one copies a page it writes).
            let through_shared = area.shared || area.prot & PROT_WRITE == 0;
            if through_shared
                && let Some(pa) = super::shared::get(*ino, (offset + (page - start)) / PAGE)
            {
                return map_shared_page(page, pa, &area, start);
            }
            let seen = super::shared::generation(*ino);
            let t_io = crate::time::monotonic_ns();
            let mut buf = alloc::vec![0u8; (hi - lo) as usize];
            let mut got = 0usize;
            while got < buf.len() {
                let n = c
                    .read(*fid, offset + (lo - start) + got as u64, &mut buf[got..])
                    .map_err(|_| Fault::Bus)?;
                if n == 0 {
                    break;
                }
                got += n;
            }
            STATS.io_ns.fetch_add(
                crate::time::monotonic_ns() - t_io,
                core::sync::atomic::Ordering::Relaxed,
            );
            STATS
                .file_bytes
                .fetch_add(got as u64, core::sync::atomic::Ordering::Relaxed);
            // Pages wholly past the end of the file are SIGBUS territory.
            let valid_end = lo + (got as u64).next_multiple_of(PAGE);
            if page >= valid_end {
                return Err(Fault::Bus);
            }
            if through_shared {
                let shown = SharedWindow {
                    ino: *ino,
                    offset: *offset,
                    generation: seen,
                    data: &buf[..got],
                };
                return populate_shared(lo, hi.min(valid_end), page, &area, start, &shown);
            }
            populate(lo, hi.min(valid_end), page, &area, start, Some(&buf))
        }
    }
}

/// A fault on a memory-only file's mapping: a shared one maps the file's
/// page itself (made, zeroed, if new); a private one its own copy on a
/// write, the file's page read-only (copied on a later write) otherwise.
/// Past the end of the file: SIGBUS.
///
/// A shared mapping maps the whole fault-around window `[lo, hi)` at once
/// (its pages made if new), as a file's: ZGC touches its heap in order.
#[allow(clippy::too_many_arguments)]
fn mem_fault(
    lo: u64,
    hi: u64,
    page: u64,
    write: bool,
    area: &Area,
    start: u64,
    memfd: &dyn crate::fd::RegularLike,
    offset: u64,
) -> Result<(), Fault> {
    let (lo, hi) = if area.shared {
        (lo, hi)
    } else {
        (page, page + PAGE)
    };
    let mut va = lo;
    while va < hi {
        if va != page && translate(va).is_some() {
            va += PAGE;
            continue;
        }
        let index = (offset + (va - start)) / PAGE;
        match memfd.map_page(index) {
            Ok(pa) => map_shared_page(va, pa, area, start)?,
            // Past the end of the file (SIGBUS there) or out of memory:
            // the faulting page fails, the window's others are left.
            Err(past_end) if va == page => {
                return Err(if past_end { Fault::Bus } else { Fault::Oom });
            }
            Err(_) if va < page => va = page - PAGE,
            Err(_) => break,
        }
        va += PAGE;
    }
    if write && !area.shared {
        return copy_on_write(page, area, start);
    }
    Ok(())
}

/// Maps the file cache's own pages over the not-yet-present pages of
/// `[lo, hi)`, read-only and marked borrowed (a write copies; see
/// [`copy_on_write`]); `page_of(va)` pins and returns the cache page.
fn map_cached(
    lo: u64,
    hi: u64,
    page: u64,
    write: bool,
    area: &Area,
    start: u64,
    page_of: &mut dyn FnMut(u64) -> Result<Option<(u64, usize)>, Errno>,
) -> Result<(), Fault> {
    let flags = pte_flags(area.prot).difference(PteFlags::WRITABLE) | PteFlags::BORROWED;
    // A writable private mapping (a data segment, the CDS archive's
    // read-write region) gets its own copies of the whole window at once:
    // a copy costs far less than the write fault per page it saves.
    let copy = area.prot & PROT_WRITE != 0 && !area.shared;
    let mut va = lo;
    while va < hi {
        if translate(va).is_some() {
            va += PAGE;
            continue;
        }
        // The window around the faulting page is best effort: a page
        // before it that cannot be had is skipped (the faulting page must
        // still be mapped or fail on its own), one after it ends the window.
        let got = match page_of(va) {
            Ok(g) => g,
            Err(_) if va < page => {
                va = page;
                continue;
            }
            Err(_) if va > page => break,
            Err(Errno::ENOMEM) => return Err(Fault::Oom),
            Err(_) => return Err(Fault::Bus),
        };
        let Some((pa, valid)) = got else {
            return Err(Fault::Bus);
        };
        if valid == 0 {
            // Past the end of the file.
            crate::cache::release_page(pa);
            if va == page {
                return Err(Fault::Bus);
            }
            if va < page {
                va = page;
                continue;
            }
            break;
        }
        let owned = if copy {
            let Some(new) = alloc_frames(1, 1) else {
                crate::cache::release_page(pa);
                if va < page {
                    va = page;
                    continue;
                }
                return if va == page { Err(Fault::Oom) } else { Ok(()) };
            };
            // SAFETY: `pa` is a pinned cache page and `new` a fresh frame of
            // ours; both are whole pages in the direct map.
            unsafe {
                core::ptr::copy_nonoverlapping(
                    phys_to_virt(pa) as *const u8,
                    phys_to_virt(new) as *mut u8,
                    PAGE_SIZE,
                );
            }
            crate::cache::release_page(pa);
            Some(new)
        } else {
            None
        };
        let sp = SPACE.lock();
        let same = matches!(sp.find(va), Some((s, a)) if s == start && a.same_as(area));
        let mapped = same
            && match owned {
                Some(new) => map_user_page(va, new, pte_flags(area.prot)).is_ok(),
                None => map_user_page(va, pa, flags).is_ok(),
            };
        drop(sp);
        if !mapped {
            match owned {
                Some(new) => free_frames(new, 1),
                None => crate::cache::release_page(pa),
            }
            if !same {
                return Ok(());
            }
        }
        va += PAGE;
    }
    if write && !copy {
        return copy_on_write(page, area, start);
    }
    Ok(())
}

/// Gives a private mapping its own writable copy of the borrowed page at `page`.
fn copy_on_write(page: u64, area: &Area, start: u64) -> Result<(), Fault> {
    let sp = SPACE.lock();
    match sp.find(page) {
        Some((s, a)) if s == start && a.same_as(area) => {}
        _ => return Ok(()),
    }
    let Some(e) = super::kernel::take_user_page(page) else {
        return Ok(());
    };
    let old = e & 0x000f_ffff_ffff_f000;
    let borrowed = e & PteFlags::BORROWED.bits() != 0;
    let new = if borrowed {
        let new = alloc_frames(1, 1).ok_or(Fault::Oom)?;
        // SAFETY: `old` is a cache page (still pinned by this mapping) and
        // `new` a fresh frame of ours; both are whole pages in the direct map.
        unsafe {
            core::ptr::copy_nonoverlapping(
                phys_to_virt(old) as *const u8,
                phys_to_virt(new) as *mut u8,
                PAGE_SIZE,
            );
        }
        if e & PteFlags::SHARED.bits() != 0 {
            super::shared::unref(old, false);
        } else {
            crate::cache::release_page(old);
        }
        new
    } else {
        old
    };
    if map_user_page(page, new, pte_flags(area.prot)).is_err() {
        free_frames(new, 1);
        return Err(Fault::Oom);
    }
    drop(sp);
    Ok(())
}

/// Page-table flags for a shared file page in `area`: writable as the area
/// allows when shared; read-only and copied on a write when private.
fn shared_flags(area: &Area) -> PteFlags {
    if area.shared {
        pte_flags(area.prot) | PteFlags::SHARED
    } else {
        pte_flags(area.prot).difference(PteFlags::WRITABLE) | PteFlags::SHARED | PteFlags::BORROWED
    }
}

/// Maps shared file page `pa` (a reference already taken) at `page`, if the
/// area is unchanged; else drops the reference (the access faults again).
fn map_shared_page(page: u64, pa: u64, area: &Area, start: u64) -> Result<(), Fault> {
    let sp = SPACE.lock();
    let same = matches!(sp.find(page), Some((s, a)) if s == start && a.same_as(area));
    let mapped =
        same && translate(page).is_none() && map_user_page(page, pa, shared_flags(area)).is_ok();
    drop(sp);
    if !mapped {
        super::shared::unref(pa, false);
    }
    Ok(())
}

/// A window of a file read for a fault, to become its shared pages.
struct SharedWindow<'a> {
    ino: u64,
    /// The area's file offset.
    offset: u64,
    /// The write generation before the read (`shared::insert`).
    generation: u64,
    /// The bytes read, from the window's first page on.
    data: &'a [u8],
}

/// Maps the file's shared pages over the not-yet-present pages of
/// `[lo, hi)`: the page already in the set, else a new one filled from the
/// window, if the area is unchanged.
fn populate_shared(
    lo: u64,
    hi: u64,
    page: u64,
    area: &Area,
    start: u64,
    w: &SharedWindow<'_>,
) -> Result<(), Fault> {
    let sp = SPACE.lock();
    match sp.find(page) {
        Some((s, a)) if s == start && a.same_as(area) => {}
        _ => return Ok(()),
    }
    let flags = shared_flags(area);
    let mut va = lo;
    while va < hi {
        if translate(va).is_some() {
            va += PAGE;
            continue;
        }
        let index = (w.offset + (va - start)) / PAGE;
        let pa = match super::shared::get(w.ino, index) {
            Some(pa) => pa,
            None => {
                let off = (va - lo) as usize;
                let Some(src) = w.data.get(off..).filter(|s| !s.is_empty()) else {
                    break;
                };
                let Some(new) = alloc_frames(1, 1) else {
                    if va == page {
                        return Err(Fault::Oom);
                    }
                    break;
                };
                let n = src.len().min(PAGE_SIZE);
                let dst = phys_to_virt(new) as *mut u8;
                // SAFETY: a frame we own, reached through the direct map;
                // exactly one page is written.
                unsafe {
                    core::ptr::copy_nonoverlapping(src.as_ptr(), dst, n);
                    core::ptr::write_bytes(dst.add(n), 0, PAGE_SIZE - n);
                }
                match super::shared::insert(w.ino, index, new, w.generation) {
                    super::shared::Inserted::Used(pa) => pa,
                    super::shared::Inserted::Existing(pa) => {
                        free_frames(new, 1);
                        pa
                    }
                    super::shared::Inserted::Stale => {
                        // The file was written meanwhile: what was read may
                        // be old. The access faults again and rereads.
                        free_frames(new, 1);
                        return Ok(());
                    }
                }
            }
        };
        if map_user_page(va, pa, flags).is_err() {
            super::shared::unref(pa, false);
            if va == page {
                return Err(Fault::Oom);
            }
        }
        va += PAGE;
    }
    Ok(())
}

/// Maps fresh frames over the not-yet-present pages of `[lo, hi)` (filled
/// from `data`, which starts at `lo`, or zeroed), if the area is unchanged.
fn populate(
    lo: u64,
    hi: u64,
    page: u64,
    area: &Area,
    start: u64,
    data: Option<&[u8]>,
) -> Result<(), Fault> {
    let mut sp = SPACE.lock();
    // The I/O ran unlocked: give up quietly if the area changed meanwhile
    // (the access retries and faults again).
    match sp.find(page) {
        Some((s, a)) if s == start && a.same_as(area) => {}
        _ => return Ok(()),
    }
    let flags = pte_flags(area.prot);
    let mut va = lo;
    while va < hi {
        if translate(va).is_none() {
            let pa = match sp.hidden.remove(&va) {
                Some(pa) => pa,
                None => {
                    let off = (va - lo) as usize;
                    let src = data.and_then(|d| d.get(off..)).filter(|s| !s.is_empty());
                    // Zero pages come zeroed (and never-used frames are not
                    // touched at all: see `alloc_zeroed_frame`).
                    let Some(pa) = (if src.is_some() {
                        alloc_frames(1, 1)
                    } else {
                        super::kernel::alloc_zeroed_frame()
                    }) else {
                        if va == page {
                            return Err(Fault::Oom);
                        }
                        break;
                    };
                    if let Some(src) = src {
                        let dst = phys_to_virt(pa) as *mut u8;
                        let n = src.len().min(PAGE_SIZE);
                        // SAFETY: a frame we own, reached through the direct
                        // map; exactly one page is written.
                        unsafe {
                            core::ptr::copy_nonoverlapping(src.as_ptr(), dst, n);
                            core::ptr::write_bytes(dst.add(n), 0, PAGE_SIZE - n);
                        }
                    }
                    pa
                }
            };
            if map_user_page(va, pa, flags).is_err() {
                free_frames(pa, 1);
                if va == page {
                    return Err(Fault::Oom);
                }
            }
        }
        va += PAGE;
    }
    Ok(())
}

/// Makes `[addr, addr+len)` present for a kernel access; `EFAULT` where the
/// program could not make that access itself.
pub fn ensure(addr: u64, len: u64, write: bool) -> Result<(), Errno> {
    if len == 0 {
        return Ok(());
    }
    let mut page = addr & !(PAGE - 1);
    let end = addr.checked_add(len).ok_or(Errno::EFAULT)?;
    while page < end {
        let ok = translate(page).is_some_and(|t| {
            t.flags.contains(PteFlags::USER) && (!write || t.flags.contains(PteFlags::WRITABLE))
        });
        if !ok {
            fault(page, write, false).map_err(|_| Errno::EFAULT)?;
        }
        page += PAGE;
    }
    Ok(())
}

/// The area containing `va`: (start, end, prot), for signal reports.
pub fn area_of(va: u64) -> Option<(u64, u64, u32)> {
    let sp = SPACE.lock();
    sp.find(va).map(|(s, a)| (s, a.end, a.prot))
}

/// Brings every page of the program's executable file mappings (its
/// libraries' code) into the file cache, at most `budget` bytes of them:
/// before a snapshot, so that the partitions restored from it find the
/// code the program has not run yet (its exit path, say) in memory instead
/// of reading it over 9P from a VMM that has just started, which answers
/// slowly at first. Returns the bytes it looked at.
pub fn cache_code(budget: u64) -> u64 {
    let (Some(c), Some(policy)) = (crate::p9::mounted(), crate::cache::current()) else {
        return 0;
    };
    // Copied out: the space's lock is not held across 9P requests.
    let code: alloc::vec::Vec<(u64, crate::p9::Fid, u64, u64)> = {
        let sp = SPACE.lock();
        sp.areas
            .iter()
            .filter(|(_, a)| a.prot & PROT_EXEC != 0)
            .filter_map(|(&s, a)| match &a.backing {
                Backing::File { file, offset } => match &**file {
                    crate::fd::File::P9 {
                        fid,
                        cache: Some(key),
                        ..
                    } => Some((*key, *fid, *offset, a.end - s)),
                    _ => None,
                },
                _ => None,
            })
            .collect()
    };
    let mut seen = 0;
    for (key, fid, offset, len) in code {
        let mut at = offset;
        while at < offset + len && seen < budget {
            let r = policy.map_page(key, at, &mut |o, b| c.read(fid, o, b));
            if let Ok(Some((pa, _))) = r {
                policy.release_page(pa);
            } else {
                // Past the file's end, or no page to share: nothing more here.
                break;
            }
            at += PAGE;
            seen += PAGE;
        }
    }
    seen
}

/// The text of `/proc/self/maps`: one line per area, Linux's format.
pub fn proc_maps() -> String {
    let sp = SPACE.lock();
    let mut out = String::new();
    for (&s, a) in &sp.areas {
        let r = |bit, c| if a.prot & bit != 0 { c } else { '-' };
        let offset = match &a.backing {
            Backing::File { offset, .. } | Backing::Mem { offset, .. } => *offset,
            Backing::Anon | Backing::Beyond => 0,
        };
        // A file's device and inode as `stat` gives them: profilers and
        // debuggers (async-profiler) take a mapping with inode 0 for
        // anonymous memory and skip its library.
        let (dev, ino) = match &a.backing {
            Backing::File { file, .. } => match &**file {
                crate::fd::File::P9 { path, ino, .. } => (crate::syscall::stat::dev_of(path), *ino),
                crate::fd::File::Console { .. } => (0, 0),
            },
            Backing::Mem { memfd, .. } => (
                crate::syscall::stat::FIRST_DEV,
                memfd.regular().map_or(0, |m| m.ino()),
            ),
            Backing::Anon | Backing::Beyond => (0, 0),
        };
        let line_start = out.len();
        let _ = write!(
            out,
            "{s:08x}-{:08x} {}{}{}{} {offset:08x} {:02x}:{:02x} {ino}",
            a.end,
            r(PROT_READ, 'r'),
            r(PROT_WRITE, 'w'),
            r(PROT_EXEC, 'x'),
            if a.shared { 's' } else { 'p' },
            (dev >> 8) & 0xfff,
            dev & 0xff,
        );
        if let Some(n) = &a.name {
            // Linux pads the name to column 73.
            let width = out.len() - line_start;
            for _ in width..73 {
                out.push(' ');
            }
            out.push_str(n);
        }
        out.push('\n');
    }
    out
}

/// Total bytes of all areas (VmSize) and populated bytes are not tracked
/// separately; this is the former.
pub fn total_size() -> u64 {
    SPACE.lock().areas.iter().map(|(&s, a)| a.end - s).sum()
}

/// Writes the modified pages of shared file mappings in `[start, end)` back
/// to their files (`msync`, `munmap`, exit), as Linux's page cache
/// eventually would: a page is modified when its mapping's dirty bit is set
/// or it kept stores while unmapped (`mm::shared`). Pages past the file's
/// end are not written (the file does not grow).
pub fn write_back(start: u64, end: u64) -> Result<(), Errno> {
    // Collect under the lock, write without it (9P waits).
    let mut work: alloc::vec::Vec<(Arc<crate::fd::File>, u64, alloc::vec::Vec<u8>)> =
        alloc::vec::Vec::new();
    {
        let sp = SPACE.lock();
        let first = sp
            .areas
            .range(..start)
            .next_back()
            .filter(|(_, a)| a.end > start)
            .map(|(&s, _)| s)
            .unwrap_or(start);
        for (&s, a) in sp.areas.range(first..end) {
            let Backing::File { file, offset } = &a.backing else {
                continue;
            };
            if !a.shared || !writable(file) {
                continue;
            }
            let Some(ino) = file_ino(file) else { continue };
            let lo = s.max(start) & !(PAGE - 1);
            let hi = a.end.min(end);
            if lo >= hi {
                continue;
            }
            let first_index = (offset + (lo - s)) / PAGE;
            let end_index = (offset + (hi - s)).div_ceil(PAGE);
            for index in super::shared::indices(ino, first_index, end_index) {
                let va = s + index * PAGE - offset;
                if let Some(bytes) = super::shared::take_dirty(ino, index, va) {
                    work.push((file.clone(), index, bytes));
                }
            }
        }
    }
    write_pages(work)
}

/// Writes whole pages `(file, index, bytes)` to their files, up to each
/// file's end, then lets the pages go if nothing maps them.
fn write_pages(
    work: alloc::vec::Vec<(Arc<crate::fd::File>, u64, alloc::vec::Vec<u8>)>,
) -> Result<(), Errno> {
    if work.is_empty() {
        return Ok(());
    }
    let c = crate::p9::mounted().ok_or(Errno::EIO)?;
    let mut sizes = BTreeMap::new();
    let mut result = Ok(());
    for (file, index, page) in work {
        let crate::fd::File::P9 { fid, ino, .. } = &*file else {
            continue;
        };
        let r = (|| {
            let size = match sizes.get(fid) {
                Some(&s) => s,
                None => {
                    let s = c.getattr(*fid)?.size;
                    sizes.insert(*fid, s);
                    s
                }
            };
            let off = index * PAGE;
            if off >= size {
                return Ok(());
            }
            let n = (size - off).min(PAGE) as usize;
            let mut done = 0;
            while done < n {
                let w = c.write(*fid, off + done as u64, &page[done..n])?;
                if w == 0 {
                    return Err(Errno::EIO);
                }
                done += w;
            }
            Ok(())
        })();
        super::shared::release_if_unused(*ino, index);
        if let Err(e) = r
            && result.is_ok()
        {
            result = Err(e);
        }
    }
    result
}

/// The inode of a 9P file (the key of its shared pages).
fn file_ino(file: &crate::fd::File) -> Option<u64> {
    match file {
        crate::fd::File::P9 { ino, .. } => Some(*ino),
        _ => None,
    }
}

/// Whether the file was opened for writing.
fn writable(file: &crate::fd::File) -> bool {
    match file {
        crate::fd::File::P9 { flags, .. } => {
            flags.load(core::sync::atomic::Ordering::Relaxed) & crate::fd::O_ACCMODE != 0
        }
        _ => false,
    }
}

/// Writes the stores held by unmapped shared pages of the files of `gone`
/// (areas just removed) through them.
fn write_orphans(gone: &[Area]) {
    let mut work = alloc::vec::Vec::new();
    for a in gone {
        let Backing::File { file, .. } = &a.backing else {
            continue;
        };
        if !a.shared || !writable(file) {
            continue;
        }
        let Some(ino) = file_ino(file) else { continue };
        for (index, bytes) in super::shared::orphans(ino) {
            work.push((file.clone(), index, bytes));
        }
    }
    if let Err(e) = write_pages(work) {
        log::warn!("writing unmapped shared file pages back: {e}");
    }
}

/// Whether a shared mapping of the memory-only file `ino` that is or may
/// become writable exists (Linux counts those with `VM_MAYWRITE`, read-only
/// ones included; `F_SEAL_WRITE` is refused then).
pub fn writable_shared_mapping(ino: u64) -> bool {
    SPACE.lock().areas.values().any(|a| {
        a.shared
            && a.may_write
            && matches!(&a.backing, Backing::Mem { memfd, .. }
                if memfd.regular().is_some_and(|m| m.ino() == ino))
    })
}

/// A file was cut to `size` bytes through the library OS: the pages of its
/// mappings wholly past the end go (a touch then raises SIGBUS, as on
/// Linux, private copies included), and its shared pages follow.
pub fn file_truncated(ino: u64, size: u64) {
    let first = size.div_ceil(PAGE) * PAGE;
    {
        let sp = SPACE.lock();
        for (&s, a) in &sp.areas {
            let (this, offset) = match &a.backing {
                Backing::File { file, offset } => (file_ino(file), offset),
                Backing::Mem { memfd, offset } => (memfd.regular().map(|m| m.ino()), offset),
                Backing::Anon | Backing::Beyond => continue,
            };
            if this != Some(ino) {
                continue;
            }
            let from = if first > *offset {
                s + (first - offset)
            } else {
                s
            };
            if from < a.end {
                super::kernel::unmap_user_range(from, a.end - from);
            }
        }
    }
    super::shared::truncated(ino, size);
}

/// [`write_back`] over the whole address space (the program is exiting).
pub fn write_back_all() {
    if let Err(e) = write_back(USER_MIN, USER_MAX) {
        log::warn!("writing shared file mappings back at exit: {e}");
    }
}

/// A name for the mapping holding `va`, for the profiler: its file or
/// `[stack]`/`[heap]`, else its kind (`[anon rwx]` is JIT-compiled code).
pub fn describe(va: u64) -> String {
    let sp = SPACE.lock();
    match sp.find(va) {
        Some((_, a)) => match &a.name {
            Some(n) => String::from(&**n),
            None => {
                let x = if a.prot & PROT_EXEC != 0 { "x" } else { "-" };
                let w = if a.prot & PROT_WRITE != 0 { "w" } else { "-" };
                alloc::format!("[anon r{w}{x}]")
            }
        },
        None => String::from("[unmapped]"),
    }
}

/// Where `va` lies, for a profile: the area's name and, in a file's
/// mapping, the offset in the file (what `addr2line` takes).
pub fn locate(va: u64) -> String {
    let sp = SPACE.lock();
    match sp.find(va) {
        Some((start, a)) => match (&a.name, &a.backing) {
            (Some(n), Backing::File { offset, .. }) => {
                alloc::format!("{n}+{:#x}", va - start + offset)
            }
            _ => alloc::format!("{va:#x}"),
        },
        None => alloc::format!("{va:#x}"),
    }
}

/// `mincore`: whether each page of `[start, end)` (page-aligned) is in
/// memory — present in the page tables, kept aside while `PROT_NONE`, or
/// (for a file area) held by the file cache, as Linux's page cache would.
/// `ENOMEM` if any part of the range lies outside every area. Read-only.
pub fn resident(start: u64, end: u64) -> Result<alloc::vec::Vec<bool>, Errno> {
    // (start, end, cache key, file offset of start) of the file areas.
    let mut files: alloc::vec::Vec<(u64, u64, u64, u64)> = alloc::vec::Vec::new();
    let hidden: alloc::vec::Vec<u64> = {
        let sp = SPACE.lock();
        if !sp.covers(start, end) {
            return Err(Errno::ENOMEM);
        }
        let first = sp.find(start).map_or(start, |(s, _)| s);
        for (&s, a) in sp.areas.range(first..end) {
            if let Backing::File { file, offset } = &a.backing
                && let crate::fd::File::P9 { cache: Some(k), .. } = &**file
            {
                files.push((s, a.end, *k, *offset));
            }
        }
        sp.hidden.range(start..end).map(|(&v, _)| v).collect()
    };
    let cache = crate::cache::current();
    let cached = |p: u64| {
        cache.is_some_and(|c| {
            files
                .iter()
                .find(|f| f.0 <= p && p < f.1)
                .is_some_and(|&(s, _, k, off)| c.holds(k, off + (p - s)))
        })
    };
    Ok((start..end)
        .step_by(PAGE as usize)
        .map(|p| {
            hidden.binary_search(&p).is_ok()
                || translate(p).is_some_and(|t| {
                    t.flags.contains(PteFlags::USER) && !t.flags.contains(PteFlags::ZEROED)
                })
                || cached(p)
        })
        .collect())
}

/// Whether areas cover all of `[start, end)` with no gap (`madvise` and
/// `mincore` answer `ENOMEM` otherwise). Read-only.
pub fn covered(start: u64, end: u64) -> bool {
    SPACE.lock().covers(start, end)
}

impl Space {
    fn covers(&self, start: u64, end: u64) -> bool {
        let mut at = start;
        while at < end {
            match self.find(at) {
                Some((_, a)) => at = a.end,
                None => return false,
            }
        }
        true
    }
}

/// What `madvise` and futexes ask of an area.
#[derive(Debug, Clone, Copy)]
pub struct Kind {
    /// Where the area meets the range (its start, or the range's).
    pub start: u64,
    /// Where it stops meeting it (its end, or the range's).
    pub end: u64,
    /// File-backed (a file of the namespace or a memory-only file).
    pub file: bool,
    /// `MAP_SHARED`.
    pub shared: bool,
    /// `PROT_*` bits.
    pub prot: u32,
    /// `VM_LOCKED`.
    pub locked: bool,
}

/// Each area meeting `[start, end)`, in address order. Read-only.
pub fn kinds(start: u64, end: u64) -> alloc::vec::Vec<Kind> {
    let sp = SPACE.lock();
    let first = sp.find(start).map_or(start, |(s, _)| s);
    sp.areas
        .range(first..end)
        .map(|(&s, a)| Kind {
            start: s.max(start),
            end: a.end.min(end),
            file: a.backing.is_file(),
            shared: a.shared,
            prot: a.prot,
            locked: a.lock & VM_LOCKED != 0,
        })
        .collect()
}

/// The private, executable, read-only file mapping containing `va`, as
/// (file, area start, area end, file offset of the area's start): where a
/// system-call site may be rewritten (`syscall::patch`). `None` for
/// anything else (anonymous or writable code, shared mappings).
pub fn text_area(va: u64) -> Option<(Arc<crate::fd::File>, u64, u64, u64)> {
    let sp = SPACE.lock();
    let (s, a) = sp.find(va)?;
    match &a.backing {
        Backing::File { file, offset }
            if !a.shared && a.prot & PROT_EXEC != 0 && a.prot & PROT_WRITE == 0 =>
        {
            Some((file.clone(), s, a.end, *offset))
        }
        _ => None,
    }
}

/// Maps `len` bytes of zeroed memory with `prot` as close to `near` as
/// possible and no further than `reach` bytes from it (either side); returns
/// the start.
pub fn map_near(near: u64, reach: u64, len: u64, prot: u32, name: &str) -> Result<u64, Errno> {
    let len = len.next_multiple_of(PAGE);
    let lo_limit = near.saturating_sub(reach).max(USER_MIN);
    let hi_limit = near.saturating_add(reach).min(MMAP_TOP);
    let at = {
        let sp = SPACE.lock();
        // Gaps between areas, nearest candidate first.
        let mut best: Option<u64> = None;
        let mut consider = |gap_lo: u64, gap_hi: u64| {
            let lo = gap_lo.max(lo_limit);
            let hi = gap_hi.min(hi_limit);
            if hi <= lo || hi - lo < len {
                return;
            }
            // The end of the gap nearest `near`.
            let cand = if near >= hi { hi - len } else { lo };
            if best.is_none_or(|b| cand.abs_diff(near) < b.abs_diff(near)) {
                best = Some(cand);
            }
        };
        let mut cursor = USER_MIN;
        for (&s, a) in sp.areas.iter() {
            if s > cursor {
                consider(cursor, s);
            }
            cursor = cursor.max(a.end);
        }
        consider(cursor, MMAP_TOP);
        best.ok_or(Errno::ENOMEM)?
    };
    map(
        Placement::NoReplace(at),
        len,
        prot,
        false,
        Backing::Anon,
        Some(Arc::from(name)),
        false,
    )
}

/// Writes `bytes` over the program's code at `addr` in a private copy of
/// its pages, whatever their protection (as a debugger's poke does): the
/// file's cached pages other mappings share are never written. The bytes
/// change with interrupts off, so no other thread of this CPU sees half of
/// them.
pub fn patch_text(addr: u64, bytes: &[u8]) -> Result<(), Errno> {
    let end = addr.checked_add(bytes.len() as u64).ok_or(Errno::EFAULT)?;
    let first = addr & !(PAGE - 1);
    let mut page = first;
    while page < end {
        ensure(page, 1, false)?;
        let (start, area) = {
            let sp = SPACE.lock();
            let (s, a) = sp.find(page).ok_or(Errno::EFAULT)?;
            (s, a.clone())
        };
        if area.shared {
            return Err(Errno::EPERM);
        }
        if translate(page).is_some_and(|t| t.flags.contains(PteFlags::BORROWED)) {
            copy_on_write(page, &area, start).map_err(|_| Errno::ENOMEM)?;
        }
        page += PAGE;
    }
    let irq = crate::arch::cpu::irq_save();
    // Checked again with interrupts off: nothing may have replaced a page
    // since (another thread's munmap or fault).
    let mut ok = true;
    let mut page = first;
    while page < end {
        ok &= translate(page).is_some_and(|t| {
            t.flags.contains(PteFlags::USER) && !t.flags.contains(PteFlags::BORROWED)
        });
        page += PAGE;
    }
    if ok {
        for (i, b) in bytes.iter().enumerate() {
            let va = addr + i as u64;
            if let Some(t) = translate(va) {
                // SAFETY: a private frame of this mapping (checked above,
                // interrupts off), reached through the direct map.
                unsafe { core::ptr::write_volatile(phys_to_virt(t.pa) as *mut u8, *b) };
            }
        }
    }
    crate::arch::cpu::irq_restore(irq);
    if ok { Ok(()) } else { Err(Errno::EAGAIN) }
}
