//! Shared file pages: one frame per page of a file, however many mappings
//! show it, as Linux's page cache gives. Shared mappings map these frames
//! writable (their stores are what `msync`, `munmap` and exit write back);
//! private read-only ones map them read-only and copy on a write. The
//! library OS's own `write(2)`s to the file are copied into the pages, and
//! its `read(2)`s see the pages' bytes, so a mapping and the file calls
//! agree within the partition (not with other writers of the host file:
//! 9P has no coherence callbacks).
//!
//! A page is identified by its file's inode (the 9P qid path) and index.
//! Its frame lives while a page table maps it or while it holds stores not
//! yet written to the file (`dirty`: recorded when a dirty page is
//! unmapped, e.g. by `MADV_DONTNEED` or `PROT_NONE`, so the bytes survive
//! until written back or the next mapping shows them again).
//!
//! Lock order: `vma`'s space lock, then this set's, then the page tables'.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use super::frame::PAGE_SIZE;
use super::kernel::{clean_user_page, free_frames};
use super::phys_to_virt;
use crate::sync::IrqLock;

const PAGE: u64 = PAGE_SIZE as u64;

struct Page {
    pa: u64,
    /// Page-table entries mapping the frame.
    maps: u32,
    /// Holds stores not in the file that no mapping's dirty bit records.
    dirty: bool,
    /// A page of a file that lives in memory only (`memfd_create`): kept,
    /// mapped or not, until the file goes ([`forget`]).
    pinned: bool,
}

struct Set {
    pages: BTreeMap<(u64, u64), Page>,
    /// Frame → (inode, index).
    by_frame: BTreeMap<u64, (u64, u64)>,
}

static SET: IrqLock<Set> = IrqLock::new(Set {
    pages: BTreeMap::new(),
    by_frame: BTreeMap::new(),
});

/// Write generations, by inode hash: bumped by every write to a file. A
/// fault that read the file before a write and inserts after it would
/// install stale bytes, so it retries.
static WRITES: [AtomicU64; 64] = [const { AtomicU64::new(0) }; 64];

fn writes(ino: u64) -> &'static AtomicU64 {
    &WRITES[(ino % 64) as usize]
}

/// The write generation of `ino` to pass to [`insert`].
pub fn generation(ino: u64) -> u64 {
    writes(ino).load(Ordering::SeqCst)
}

/// The frame of page `index` of `ino`, with a new reference, if present.
pub fn get(ino: u64, index: u64) -> Option<u64> {
    let mut set = SET.lock();
    let p = set.pages.get_mut(&(ino, index))?;
    p.maps += 1;
    Some(p.pa)
}

/// What [`insert`] did with the offered frame.
pub enum Inserted {
    /// The frame is now the page's (one reference taken).
    Used(u64),
    /// Another frame was there first: map this one (a reference taken) and
    /// free the offered one.
    Existing(u64),
    /// The file was written since `generation`: the offered frame may be stale;
    /// free it and fault again.
    Stale,
}

/// Offers `pa`, filled from the file as of write generation `generation`, as page
/// `index` of `ino`.
pub fn insert(ino: u64, index: u64, pa: u64, generation: u64) -> Inserted {
    let mut set = SET.lock();
    if let Some(p) = set.pages.get_mut(&(ino, index)) {
        p.maps += 1;
        return Inserted::Existing(p.pa);
    }
    if writes(ino).load(Ordering::SeqCst) != generation {
        return Inserted::Stale;
    }
    set.pages.insert(
        (ino, index),
        Page {
            pa,
            maps: 1,
            dirty: false,
            pinned: false,
        },
    );
    set.by_frame.insert(pa, (ino, index));
    Inserted::Used(pa)
}

/// The frame of page `index` of the memory-only file `ino`, made (zeroed,
/// pinned) if it is not there yet; with `map` a page-table reference is
/// taken. `None`: no memory left.
pub fn mem_page(ino: u64, index: u64, map: bool) -> Option<u64> {
    {
        let mut set = SET.lock();
        if let Some(p) = set.pages.get_mut(&(ino, index)) {
            p.maps += u32::from(map);
            return Some(p.pa);
        }
    }
    let new = super::kernel::alloc_zeroed_frame()?;
    let mut set = SET.lock();
    if let Some(p) = set.pages.get_mut(&(ino, index)) {
        // Made meanwhile by another thread.
        p.maps += u32::from(map);
        let pa = p.pa;
        drop(set);
        free_frames(new, 1);
        return Some(pa);
    }
    set.pages.insert(
        (ino, index),
        Page {
            pa: new,
            maps: u32::from(map),
            dirty: false,
            pinned: true,
        },
    );
    set.by_frame.insert(new, (ino, index));
    Some(new)
}

/// Zeroes the bytes `[off, off + len)` of the memory-only file `ino` where
/// it has pages (`FALLOC_FL_PUNCH_HOLE`: the pages stay, as zeros).
pub fn mem_zero(ino: u64, off: u64, len: u64) {
    let end = off.saturating_add(len);
    if len == 0 {
        return;
    }
    let set = SET.lock();
    for (&(_, index), p) in set.pages.range((ino, off / PAGE)..=(ino, (end - 1) / PAGE)) {
        let page_start = index * PAGE;
        let from = off.max(page_start);
        let to = end.min(page_start + PAGE);
        // SAFETY: a frame of this set (kept by the lock), direct-mapped; the
        // range stays inside the page.
        unsafe {
            core::ptr::write_bytes(
                (phys_to_virt(p.pa) + (from - page_start)) as *mut u8,
                0,
                (to - from) as usize,
            );
        }
    }
}

/// The memory-only file `ino` is gone (nothing refers to it): its pages
/// are freed, those some page table still maps once they are unmapped.
pub fn forget(ino: u64) {
    let mut freed = Vec::new();
    {
        let mut set = SET.lock();
        let keys: Vec<(u64, u64)> = set
            .pages
            .range((ino, 0)..=(ino, u64::MAX))
            .map(|(&k, _)| k)
            .collect();
        for k in keys {
            let Some(p) = set.pages.get_mut(&k) else {
                continue;
            };
            p.pinned = false;
            p.dirty = false;
            if p.maps == 0 {
                let pa = p.pa;
                set.pages.remove(&k);
                set.by_frame.remove(&pa);
                freed.push(pa);
            }
        }
    }
    for pa in freed {
        free_frames(pa, 1);
    }
}

/// Drops a page-table reference to frame `pa`; `stored`: the entry was
/// dirty. The frame is freed when nothing maps it and it holds no stores.
pub fn unref(pa: u64, stored: bool) {
    let mut set = SET.lock();
    let Some(&key) = set.by_frame.get(&pa) else {
        log::warn!("shared file page {pa:#x} released but not known");
        return;
    };
    let Some(p) = set.pages.get_mut(&key) else {
        return;
    };
    p.maps = p.maps.saturating_sub(1);
    p.dirty |= stored && !p.pinned;
    if p.maps == 0 && !p.dirty && !p.pinned {
        set.pages.remove(&key);
        set.by_frame.remove(&pa);
        drop(set);
        free_frames(pa, 1);
    }
}

/// Whether `ino` has any page here (a cheap test before the others).
pub fn has(ino: u64) -> bool {
    SET.lock()
        .pages
        .range((ino, 0)..=(ino, u64::MAX))
        .next()
        .is_some()
}

/// A copy of page `index` of `ino` if it holds stores the file lacks (its
/// own flag, or the dirty bit of the mapping at `va`), which then count as
/// written. The caller writes the copy to the file and then calls
/// [`release_if_unused`].
pub fn take_dirty(ino: u64, index: u64, va: u64) -> Option<Vec<u8>> {
    let mut set = SET.lock();
    let p = set.pages.get_mut(&(ino, index))?;
    let dirty = clean_user_page(va, p.pa) | p.dirty;
    if !dirty {
        return None;
    }
    p.dirty = false;
    Some(copy_of(p.pa))
}

/// Copies of the pages of `ino` that nothing maps but that hold stores
/// (index, bytes), which then count as written; as [`take_dirty`].
pub fn orphans(ino: u64) -> Vec<(u64, Vec<u8>)> {
    let mut set = SET.lock();
    let mut out = Vec::new();
    for (&(_, index), p) in set.pages.range_mut((ino, 0)..=(ino, u64::MAX)) {
        if p.maps == 0 && p.dirty {
            p.dirty = false;
            out.push((index, copy_of(p.pa)));
        }
    }
    out
}

/// Frees page `index` of `ino` if nothing maps it and it holds no stores
/// (after its bytes reached the file).
pub fn release_if_unused(ino: u64, index: u64) {
    let mut set = SET.lock();
    let Some(p) = set.pages.get(&(ino, index)) else {
        return;
    };
    if p.maps > 0 || p.dirty || p.pinned {
        return;
    }
    let pa = p.pa;
    set.pages.remove(&(ino, index));
    set.by_frame.remove(&pa);
    drop(set);
    free_frames(pa, 1);
}

/// A page's bytes.
fn copy_of(pa: u64) -> Vec<u8> {
    let mut copy = alloc::vec![0u8; PAGE_SIZE];
    // SAFETY: `pa` is a frame of the set, whose lock the caller holds so it
    // is not freed meanwhile; reached through the direct map, whole page.
    unsafe {
        core::ptr::copy_nonoverlapping(phys_to_virt(pa) as *const u8, copy.as_mut_ptr(), PAGE_SIZE);
    }
    copy
}

/// `bytes` were written to `ino` at `off` through the file: the pages show
/// them too.
pub fn wrote(ino: u64, off: u64, bytes: &[u8]) {
    writes(ino).fetch_add(1, Ordering::SeqCst);
    if bytes.is_empty() {
        return;
    }
    let end = off.saturating_add(bytes.len() as u64);
    let set = SET.lock();
    for (&(_, index), p) in set.pages.range((ino, off / PAGE)..=(ino, (end - 1) / PAGE)) {
        let page_start = index * PAGE;
        let from = off.max(page_start);
        let to = end.min(page_start + PAGE);
        let src = &bytes[(from - off) as usize..(to - off) as usize];
        // SAFETY: a frame of this set (kept by the lock), direct-mapped; the
        // range stays inside the page.
        unsafe {
            core::ptr::copy_nonoverlapping(
                src.as_ptr(),
                (phys_to_virt(p.pa) + (from - page_start)) as *mut u8,
                src.len(),
            );
        }
    }
}

/// `buf` was read from `ino` at `off` through the file: puts the pages'
/// bytes over it (they may hold stores not yet written back).
pub fn overlay(ino: u64, off: u64, buf: &mut [u8]) {
    if buf.is_empty() {
        return;
    }
    let end = off.saturating_add(buf.len() as u64);
    let set = SET.lock();
    for (&(_, index), p) in set.pages.range((ino, off / PAGE)..=(ino, (end - 1) / PAGE)) {
        let page_start = index * PAGE;
        let from = off.max(page_start);
        let to = end.min(page_start + PAGE);
        let dst = &mut buf[(from - off) as usize..(to - off) as usize];
        // SAFETY: as in `wrote`, reading instead.
        unsafe {
            core::ptr::copy_nonoverlapping(
                (phys_to_virt(p.pa) + (from - page_start)) as *const u8,
                dst.as_mut_ptr(),
                dst.len(),
            );
        }
    }
}

/// `ino` was cut to `size` bytes: the bytes of its last page past the end
/// read as zeros again, and the pages wholly past it, which the caller has
/// unmapped, are dropped with whatever they held (as Linux drops them).
pub fn truncated(ino: u64, size: u64) {
    writes(ino).fetch_add(1, Ordering::SeqCst);
    let first_gone = size.div_ceil(PAGE);
    let mut freed = Vec::new();
    {
        let mut set = SET.lock();
        if !size.is_multiple_of(PAGE)
            && let Some(p) = set.pages.get(&(ino, size / PAGE))
        {
            let cut = (size % PAGE) as usize;
            // SAFETY: a frame of this set (kept by the lock), direct-mapped;
            // the zeroed range ends at the page's end.
            unsafe {
                core::ptr::write_bytes(
                    (phys_to_virt(p.pa) as *mut u8).add(cut),
                    0,
                    PAGE_SIZE - cut,
                );
            }
        }
        let keys: Vec<(u64, u64)> = set
            .pages
            .range((ino, first_gone)..=(ino, u64::MAX))
            .map(|(&k, _)| k)
            .collect();
        for k in keys {
            let maps = set.pages.get(&k).map_or(0, |p| p.maps);
            if maps > 0 {
                // Still mapped somewhere the caller did not see (a race
                // with a fault): forget its stores, keep the frame.
                if let Some(p) = set.pages.get_mut(&k) {
                    p.dirty = false;
                }
                continue;
            }
            if let Some(p) = set.pages.remove(&k) {
                set.by_frame.remove(&p.pa);
                freed.push(p.pa);
            }
        }
    }
    for pa in freed {
        free_frames(pa, 1);
    }
}

/// Page indices of `ino` in `[first, end)` that are in the set.
pub fn indices(ino: u64, first: u64, end: u64) -> Vec<u64> {
    if first >= end {
        return Vec::new();
    }
    SET.lock()
        .pages
        .range((ino, first)..(ino, end))
        .map(|(&(_, i), _)| i)
        .collect()
}
