//! x86-64 4-level page tables (PML4 → PDPT → PD → PT) with 4 KiB and 2 MiB pages.
//!
//! Pure logic: tables are reached through [`TableAlloc`] by physical address, so
//! the kernel plugs in its identity map and frame bitmap while host tests use a
//! `Vec` arena.
//!
//! Conventions:
//! - Intermediate entries are always `PRESENT | WRITABLE | USER`; permissions are
//!   enforced at the leaf only (the CPU ANDs them along the walk, so a
//!   restrictive intermediate entry would silently override a leaf).
//! - `HUGE` is set only on PD entries (2 MiB pages); the mapper never creates
//!   1 GiB pages. Tables not built by this module may contain them: such entries
//!   are never descended into, `map` reports `AlreadyMapped`, `translate` `None`
//!   and modifying operations `Misaligned`.
//! - Leaves always have `PRESENT`; to revoke access, unmap.
//! - Page tables emptied by `unmap`/`unmap_range` (PT, PD, PDPT) are freed and
//!   their parent entry cleared; the PML4 is never freed.
//!
//! **TLB:** nothing here invalidates the TLB. After `unmap`, `unmap_range` and
//! `protect` the caller must `invlpg` every page of the affected range (for a
//! 2 MiB page one `invlpg` inside it suffices) or reload CR3 — and must do so
//! before a frame released through [`TableAlloc::free_table`] is reused, because
//! paging-structure caches may still reference it. `map` only turns non-present
//! entries present and needs no invalidation.

use core::ops::{BitAnd, BitOr, BitOrAssign};

/// Bits of an entry holding a 4 KiB-aligned physical address (tables, 4K pages).
const ADDR_MASK_4K: u64 = 0x000F_FFFF_FFFF_F000;
/// Bits of a PD entry holding a 2 MiB page's physical address.
const ADDR_MASK_2M: u64 = 0x000F_FFFF_FFE0_0000;
/// Everything that is not address: bits 0–11 and 52–63.
const FLAG_MASK: u64 = !ADDR_MASK_4K;
/// Physical addresses are at most 52 bits wide.
const MAX_PHYS: u64 = 1 << 52;
const SIZE_4K: u64 = 1 << 12;
const SIZE_2M: u64 = 1 << 21;
/// Entries per table.
const ENTRIES: usize = 512;
/// The 48 bits that index the tables; range arithmetic is done on these.
const VA_MASK: u64 = (1 << 48) - 1;

/// Flags of a page-table entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PteFlags(u64);

impl PteFlags {
    pub const PRESENT: Self = Self(1 << 0);
    pub const WRITABLE: Self = Self(1 << 1);
    pub const USER: Self = Self(1 << 2);
    pub const WRITE_THROUGH: Self = Self(1 << 3);
    pub const NO_CACHE: Self = Self(1 << 4);
    /// Set by the CPU on access; preserved by `protect`.
    pub const ACCESSED: Self = Self(1 << 5);
    /// Set by the CPU on write; preserved by `protect`.
    pub const DIRTY: Self = Self(1 << 6);
    /// Page-size bit: a PD entry maps a 2 MiB page. Managed by the mapper;
    /// ignored in flags passed in (in a 4K PTE this bit would mean PAT).
    pub const HUGE: Self = Self(1 << 7);
    pub const GLOBAL: Self = Self(1 << 8);
    /// Software bit: the frame is borrowed (a file-cache page shared with
    /// the cache), not owned by the mapping. `protect` never makes such a
    /// page writable, and unmapping hands it back instead of freeing it.
    pub const BORROWED: Self = Self(1 << 9);
    /// Software bit: the frame is a shared file page (`mm::shared`), one per
    /// page of a file however many mappings show it; unmapping drops a
    /// reference instead of freeing it. With `BORROWED` too it is shown
    /// read-only to a private mapping, which copies it on a write.
    pub const SHARED: Self = Self(1 << 10);
    /// Software bit: a private anonymous page that `MADV_DONTNEED` zeroed
    /// where it stands instead of unmapping it (`mincore` reports it not
    /// resident, as Linux would report the page it dropped). `protect`
    /// drops the bit.
    pub const ZEROED: Self = Self(1 << 11);
    /// Requires EFER.NXE, else the bit is reserved and faults.
    pub const NO_EXECUTE: Self = Self(1 << 63);

    /// No flags.
    pub const fn empty() -> Self {
        Self(0)
    }

    /// The raw bits.
    pub const fn bits(self) -> u64 {
        self.0
    }

    /// Flags from raw bits, dropping any address bits (12–51).
    pub const fn from_bits_truncate(bits: u64) -> Self {
        Self(bits & FLAG_MASK)
    }

    /// Whether all flags of `other` are set in `self`.
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// `self | other`, usable in `const` contexts.
    pub const fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    /// `self` without the flags of `other`.
    pub const fn difference(self, other: Self) -> Self {
        Self(self.0 & !other.0)
    }
}

impl BitOr for PteFlags {
    type Output = Self;
    fn bitor(self, rhs: Self) -> Self {
        self.union(rhs)
    }
}

impl BitOrAssign for PteFlags {
    fn bitor_assign(&mut self, rhs: Self) {
        *self = self.union(rhs);
    }
}

impl BitAnd for PteFlags {
    type Output = Self;
    fn bitand(self, rhs: Self) -> Self {
        Self(self.0 & rhs.0)
    }
}

/// Size of a leaf mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PageSize {
    Size4K,
    Size2M,
}

impl PageSize {
    /// Bytes covered by one page of this size.
    pub const fn bytes(self) -> u64 {
        match self {
            Self::Size4K => SIZE_4K,
            Self::Size2M => SIZE_2M,
        }
    }

    /// Table level holding the leaf (1 = PT, 2 = PD).
    const fn leaf_level(self) -> usize {
        match self {
            Self::Size4K => 1,
            Self::Size2M => 2,
        }
    }

    const fn addr_mask(self) -> u64 {
        match self {
            Self::Size4K => ADDR_MASK_4K,
            Self::Size2M => ADDR_MASK_2M,
        }
    }
}

/// Why a mapping operation failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapError {
    /// `TableAlloc::alloc_table` returned `None`.
    OutOfMemory,
    /// Something is already mapped where a new mapping was requested.
    AlreadyMapped,
    /// Nothing (of the requested size) is mapped at the address.
    NotMapped,
    /// An address is not aligned to the page size, a physical address exceeds
    /// 52 bits, or the operation meets a 1 GiB page this mapper does not manage.
    Misaligned,
    /// A virtual address (or range) is not canonical (bits 63..48 must copy bit 47).
    NonCanonical,
}

/// Result of [`AddressSpace::translate`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Translation {
    /// Physical address of the byte at `va` (page offset included).
    pub pa: u64,
    /// Leaf flags, without `HUGE` (that is what `size` says).
    pub flags: PteFlags,
    pub size: PageSize,
}

/// How the mapper reaches and allocates page-table frames (the kernel: identity
/// map + frame bitmap; tests: a `Vec` arena).
pub trait TableAlloc {
    /// Physical address of a **zeroed** 4 KiB frame, or `None` when out of memory.
    fn alloc_table(&mut self) -> Option<u64>;
    /// Returns a frame from `alloc_table` that no entry references any more.
    /// See the module docs about TLB invalidation before reusing it.
    fn free_table(&mut self, pa: u64);
    /// The table at physical address `pa` (always one from `alloc_table` or the root).
    fn table(&mut self, pa: u64) -> &mut [u64; ENTRIES];
}

/// One address space, identified by the physical address of its PML4.
#[derive(Debug)]
pub struct AddressSpace {
    pml4: u64,
}

impl AddressSpace {
    /// A fresh, empty address space.
    pub fn new(ta: &mut impl TableAlloc) -> Result<Self, MapError> {
        let pml4 = ta.alloc_table().ok_or(MapError::OutOfMemory)?;
        debug_assert!(
            ta.table(pml4).iter().all(|&e| e == 0),
            "alloc_table must zero"
        );
        Ok(Self { pml4 })
    }

    /// Adopts an existing PML4 (e.g. the one the loader left in CR3).
    pub fn from_root(pml4: u64) -> Self {
        Self { pml4 }
    }

    /// Physical address of the PML4, the value for CR3.
    pub fn root(&self) -> u64 {
        self.pml4
    }

    /// Maps one page `va → pa`. `va` and `pa` must be aligned to `size`.
    /// `PRESENT` is added to `flags` and `HUGE` is controlled by `size`.
    ///
    /// All-or-nothing: if anything is mapped in the page's range the result is
    /// `AlreadyMapped`, and on `OutOfMemory` the tables allocated so far are
    /// released again — in both cases the tree is unchanged.
    pub fn map(
        &mut self,
        ta: &mut impl TableAlloc,
        va: u64,
        pa: u64,
        size: PageSize,
        flags: PteFlags,
    ) -> Result<(), MapError> {
        check_canonical(va)?;
        let bytes = size.bytes();
        if !va.is_multiple_of(bytes) || !pa.is_multiple_of(bytes) || pa >= MAX_PHYS {
            return Err(MapError::Misaligned);
        }
        let leaf_level = size.leaf_level();

        // Walk the existing part of the path without changing anything.
        let mut table = self.pml4;
        let mut level = 4;
        while level > leaf_level {
            let e = entry(ta, table, va, level);
            if !present(e) {
                break;
            }
            if huge(e) {
                return Err(MapError::AlreadyMapped);
            }
            table = child(e);
            level -= 1;
        }
        if level == leaf_level && present(entry(ta, table, va, level)) {
            return Err(MapError::AlreadyMapped);
        }

        // Allocate every missing table before linking any, so running out of
        // memory half way leaves no empty tables behind.
        let missing = level - leaf_level;
        let mut fresh = [0u64; 3];
        for got in 0..missing {
            let Some(t) = ta.alloc_table() else {
                for &t in &fresh[..got] {
                    ta.free_table(t);
                }
                return Err(MapError::OutOfMemory);
            };
            fresh[got] = t;
        }
        for &t in &fresh[..missing] {
            debug_assert!(ta.table(t).iter().all(|&e| e == 0), "alloc_table must zero");
            set_entry(ta, table, va, level, t | TABLE_FLAGS);
            table = t;
            level -= 1;
        }
        set_entry(ta, table, va, leaf_level, leaf_entry(pa, flags, size));
        Ok(())
    }

    /// Maps `[va, va + len)` → `[pa, pa + len)` (`len` rounded up to 4 KiB),
    /// using 2 MiB pages wherever `va` and `pa` are both 2 MiB aligned and at
    /// least 2 MiB remain, 4 KiB pages elsewhere.
    ///
    /// All-or-nothing like [`map`](Self::map): on error the pages mapped by this
    /// call are unmapped again (no invalidation needed, they were never visible
    /// as anything else).
    pub fn map_range(
        &mut self,
        ta: &mut impl TableAlloc,
        va: u64,
        pa: u64,
        len: u64,
        flags: PteFlags,
    ) -> Result<(), MapError> {
        let (start, end) = check_range(va, len)?;
        let len = end - start;
        if !pa.is_multiple_of(SIZE_4K) || pa.checked_add(len).is_none_or(|e| e > MAX_PHYS) {
            return Err(MapError::Misaligned);
        }
        let mut off = 0;
        while off < len {
            let (v, p) = (va + off, pa + off);
            let size =
                if v.is_multiple_of(SIZE_2M) && p.is_multiple_of(SIZE_2M) && len - off >= SIZE_2M {
                    PageSize::Size2M
                } else {
                    PageSize::Size4K
                };
            if let Err(err) = self.map(ta, v, p, size, flags) {
                // Everything in [start, start + off) is whole pages mapped just now,
                // so this neither splits nor fails.
                let undo = unmap_level(ta, self.pml4, 4, start, start + off, &mut |_, _| {});
                debug_assert!(undo.is_ok());
                return Err(err);
            }
            off += size.bytes();
            // The rest of this table's span: write sibling leaf entries
            // directly instead of walking from the root for every page (boot
            // maps the whole of RAM this way). Only whole pages of the same
            // size with aligned addresses qualify.
            let level = size.leaf_level();
            let bytes = size.bytes();
            let span = bytes * ENTRIES as u64;
            let span_end = ((v | (span - 1)) - va).saturating_add(1);
            let pt = self.leaf_table(ta, v, level);
            let t = ta.table(pt);
            let mut clash = false;
            while off < span_end
                && len - off >= bytes
                && (size == PageSize::Size4K || (pa + off).is_multiple_of(bytes))
            {
                let e = &mut t[index(va + off, level)];
                if present(*e) {
                    clash = true;
                    break;
                }
                *e = leaf_entry(pa + off, flags, size);
                off += bytes;
            }
            if clash {
                let undo = unmap_level(ta, self.pml4, 4, start, start + off, &mut |_, _| {});
                debug_assert!(undo.is_ok());
                return Err(MapError::AlreadyMapped);
            }
        }
        Ok(())
    }

    /// The table at `leaf_level` that holds the leaf entry for `va`, which
    /// the caller has just mapped.
    fn leaf_table(&self, ta: &mut impl TableAlloc, va: u64, leaf_level: usize) -> u64 {
        let mut table = self.pml4;
        for level in (leaf_level + 1..=4).rev() {
            table = child(entry(ta, table, va, level));
        }
        table
    }

    /// Unmaps the page of `size` containing `va` and returns its physical
    /// address. A 4 KiB unmap inside a 2 MiB page first splits it into 512 4 KiB
    /// entries with the same flags (which may fail with `OutOfMemory`, leaving
    /// the 2 MiB page intact). A 2 MiB unmap where the region is mapped with
    /// 4 KiB pages is `NotMapped` (use [`unmap_range`](Self::unmap_range)).
    pub fn unmap(
        &mut self,
        ta: &mut impl TableAlloc,
        va: u64,
        size: PageSize,
    ) -> Result<u64, MapError> {
        check_canonical(va)?;
        let va = va & !(size.bytes() - 1);
        let leaf_level = size.leaf_level();
        // path[l] = table at level l on the way to va.
        let mut path = [0u64; 5];
        path[4] = self.pml4;
        let mut level = 4;
        loop {
            let e = entry(ta, path[level], va, level);
            if !present(e) {
                return Err(MapError::NotMapped);
            }
            if level == leaf_level {
                if level == 2 && !huge(e) {
                    return Err(MapError::NotMapped);
                }
                break;
            }
            if huge(e) {
                if level != 2 {
                    return Err(MapError::Misaligned);
                }
                split(ta, path[level], va)?;
                continue; // re-read the entry, now a table
            }
            path[level - 1] = child(e);
            level -= 1;
        }
        let e = entry(ta, path[leaf_level], va, leaf_level);
        set_entry(ta, path[leaf_level], va, leaf_level, 0);
        // Free tables that became empty, bottom up, stopping below the PML4.
        for l in leaf_level..4 {
            if !is_empty(ta, path[l]) {
                break;
            }
            ta.free_table(path[l]);
            set_entry(ta, path[l + 1], va, l + 1, 0);
        }
        Ok(e & size.addr_mask())
    }

    /// Looks up `va`; `None` if it is not mapped or not canonical.
    pub fn translate(&self, ta: &mut impl TableAlloc, va: u64) -> Option<Translation> {
        if check_canonical(va).is_err() {
            return None;
        }
        let mut table = self.pml4;
        for level in (1..=4).rev() {
            let e = entry(ta, table, va, level);
            if !present(e) {
                return None;
            }
            let size = match level {
                1 => PageSize::Size4K,
                2 if huge(e) => PageSize::Size2M,
                3 if huge(e) => return None, // 1 GiB pages are not managed here
                _ => {
                    table = child(e);
                    continue;
                }
            };
            let offset = va & (size.bytes() - 1);
            return Some(Translation {
                pa: (e & size.addr_mask()) | offset,
                flags: PteFlags::from_bits_truncate(e).difference(PteFlags::HUGE),
                size,
            });
        }
        None
    }

    /// Clears the CPU-set `DIRTY` bit of the 4 KiB page at `va` if it maps
    /// frame `pa`; returns whether the bit was set (the caller flushes the
    /// TLB entry).
    pub fn clean(&mut self, ta: &mut impl TableAlloc, va: u64, pa: u64) -> bool {
        let Some(table) = self.table_of_4k(ta, va) else {
            return false;
        };
        let e = entry(ta, table, va, 1);
        if !present(e) || e & ADDR_MASK_4K != pa || e & PteFlags::DIRTY.0 == 0 {
            return false;
        }
        set_entry(ta, table, va, 1, e & !PteFlags::DIRTY.0);
        true
    }

    /// Sets the leaf flags of every mapped page in `[va, va + len)` (`va` 4 KiB
    /// aligned, `len` rounded up to 4 KiB); holes are skipped. 2 MiB pages only
    /// partly inside the range are split first. `PRESENT` is forced and the
    /// CPU-maintained `ACCESSED`/`DIRTY` bits are kept.
    ///
    /// On `OutOfMemory` (from a split) part of the range may already have the new
    /// flags; every entry is valid at all times.
    pub fn protect(
        &mut self,
        ta: &mut impl TableAlloc,
        va: u64,
        len: u64,
        flags: PteFlags,
    ) -> Result<(), MapError> {
        self.protect_each(ta, va, len, flags, &mut |_, _, _| {})
    }

    /// [`protect`](Self::protect), calling `changed(va, old, new)` for every
    /// leaf it rewrites (so the caller can flush exactly the translations
    /// that lost a permission).
    pub fn protect_each(
        &mut self,
        ta: &mut impl TableAlloc,
        va: u64,
        len: u64,
        flags: PteFlags,
        changed: &mut dyn FnMut(u64, u64, u64),
    ) -> Result<(), MapError> {
        let (start, end) = check_range(va, len)?;
        protect_level(ta, self.pml4, 4, start, end, flags, changed)
    }

    /// The page table (level 1) that maps the 4 KiB page at `va`, if every
    /// level above it is present and none maps a large page.
    fn table_of_4k(&self, ta: &mut impl TableAlloc, va: u64) -> Option<u64> {
        check_canonical(va).ok()?;
        let mut table = self.pml4;
        for level in (2..=4).rev() {
            let e = entry(ta, table, va, level);
            if !present(e) || huge(e) {
                return None;
            }
            table = child(e);
        }
        Some(table)
    }

    /// Calls `f(va, entry)` for every present leaf in `[va, va + len)`, in
    /// address order, changing nothing (a 2 MiB leaf once, `HUGE` set).
    pub fn leaves(
        &self,
        ta: &mut impl TableAlloc,
        va: u64,
        len: u64,
        f: &mut dyn FnMut(u64, u64),
    ) -> Result<(), MapError> {
        let (start, end) = check_range(va, len)?;
        leaves_level(ta, self.pml4, 4, start, end, f)
    }

    /// Sets `bits` in the leaf entry of the 4 KiB page at `va` if it is
    /// present; returns whether it was.
    pub fn set_leaf_bits(&mut self, ta: &mut impl TableAlloc, va: u64, bits: u64) -> bool {
        let Some(table) = self.table_of_4k(ta, va) else {
            return false;
        };
        let e = entry(ta, table, va, 1);
        if !present(e) {
            return false;
        }
        set_entry(ta, table, va, 1, e | bits);
        true
    }

    /// Unmaps every page in `[va, va + len)` (`va` 4 KiB aligned, `len` rounded
    /// up to 4 KiB); holes are fine. 2 MiB pages fully inside are removed whole,
    /// partial ones are split first. Tables left empty are freed.
    ///
    /// On `OutOfMemory` (from a split) part of the range may already be unmapped.
    pub fn unmap_range(
        &mut self,
        ta: &mut impl TableAlloc,
        va: u64,
        len: u64,
    ) -> Result<(), MapError> {
        self.unmap_range_each(ta, va, len, &mut |_, _| {})
    }

    /// [`unmap_range`](Self::unmap_range), calling `removed(va, entry)` for
    /// every leaf it takes out (so the caller can free the frames behind
    /// them); a 2 MiB leaf is reported once, with `HUGE` set in `entry`.
    pub fn unmap_range_each(
        &mut self,
        ta: &mut impl TableAlloc,
        va: u64,
        len: u64,
        removed: &mut dyn FnMut(u64, u64),
    ) -> Result<(), MapError> {
        let (start, end) = check_range(va, len)?;
        unmap_level(ta, self.pml4, 4, start, end, removed)
    }
}

/// Flags of every intermediate entry (see module docs).
const TABLE_FLAGS: u64 = PteFlags::PRESENT.0 | PteFlags::WRITABLE.0 | PteFlags::USER.0;

fn leaf_entry(pa: u64, flags: PteFlags, size: PageSize) -> u64 {
    let mut e = pa | (flags.0 & FLAG_MASK & !PteFlags::HUGE.0) | PteFlags::PRESENT.0;
    if size == PageSize::Size2M {
        e |= PteFlags::HUGE.0;
    }
    e
}

fn check_canonical(va: u64) -> Result<(), MapError> {
    if (((va << 16) as i64) >> 16) as u64 == va {
        Ok(())
    } else {
        Err(MapError::NonCanonical)
    }
}

/// Validates `[va, va + len)` and returns it as 48-bit table-index space
/// `[start, end)` (`end <= 2^48`). The range must stay in one canonical half.
fn check_range(va: u64, len: u64) -> Result<(u64, u64), MapError> {
    if !va.is_multiple_of(SIZE_4K) {
        return Err(MapError::Misaligned);
    }
    check_canonical(va)?;
    let len = len
        .checked_next_multiple_of(SIZE_4K)
        .ok_or(MapError::NonCanonical)?;
    let start = va & VA_MASK;
    let half_end = if va & (1 << 47) == 0 {
        1 << 47
    } else {
        1 << 48
    };
    let end = start
        .checked_add(len)
        .filter(|&e| e <= half_end)
        .ok_or(MapError::NonCanonical)?;
    Ok((start, end))
}

/// Bit position of the lowest virtual-address bit indexing `level` (1 = PT … 4 = PML4).
const fn shift(level: usize) -> u32 {
    12 + 9 * (level as u32 - 1)
}

fn index(va: u64, level: usize) -> usize {
    ((va >> shift(level)) as usize) & (ENTRIES - 1)
}

fn entry(ta: &mut impl TableAlloc, table: u64, va: u64, level: usize) -> u64 {
    ta.table(table)[index(va, level)]
}

fn set_entry(ta: &mut impl TableAlloc, table: u64, va: u64, level: usize, value: u64) {
    ta.table(table)[index(va, level)] = value;
}

fn present(e: u64) -> bool {
    e & PteFlags::PRESENT.0 != 0
}

fn huge(e: u64) -> bool {
    e & PteFlags::HUGE.0 != 0
}

fn child(e: u64) -> u64 {
    e & ADDR_MASK_4K
}

fn is_empty(ta: &mut impl TableAlloc, table: u64) -> bool {
    ta.table(table).iter().all(|&e| !present(e))
}

/// Replaces the 2 MiB entry covering `va` in PD `pd` by a PT of 512 4 KiB
/// entries with the same flags. On `OutOfMemory` nothing changes.
fn split(ta: &mut impl TableAlloc, pd: u64, va: u64) -> Result<(), MapError> {
    let e = entry(ta, pd, va, 2);
    debug_assert!(present(e) && huge(e));
    let pt = ta.alloc_table().ok_or(MapError::OutOfMemory)?;
    let base = e & ADDR_MASK_2M;
    let flags = e & FLAG_MASK & !PteFlags::HUGE.0;
    for (i, slot) in ta.table(pt).iter_mut().enumerate() {
        *slot = (base + i as u64 * SIZE_4K) | flags;
    }
    set_entry(ta, pd, va, 2, pt | TABLE_FLAGS);
    Ok(())
}

/// Calls `f(ta, span, entry)` for every present entry of `table` (at `level`)
/// overlapping `[start, end)`; `span` is the part of the range inside that entry.
fn for_each_present<T: TableAlloc>(
    ta: &mut T,
    table: u64,
    level: usize,
    start: u64,
    end: u64,
    mut f: impl FnMut(&mut T, Span, u64) -> Result<(), MapError>,
) -> Result<(), MapError> {
    let size = 1u64 << shift(level);
    let mut cur = start;
    while cur < end {
        let entry_start = cur & !(size - 1);
        let entry_end = entry_start + size;
        let sub_end = end.min(entry_end);
        let e = entry(ta, table, cur, level);
        if present(e) {
            let whole = cur == entry_start && sub_end == entry_end;
            f(
                ta,
                Span {
                    start: cur,
                    end: sub_end,
                    whole,
                },
                e,
            )?;
        }
        cur = sub_end;
    }
    Ok(())
}

/// Part of a range falling inside one entry.
#[derive(Clone, Copy)]
struct Span {
    start: u64,
    end: u64,
    /// The range covers the entry's whole region.
    whole: bool,
}

fn protect_level(
    ta: &mut impl TableAlloc,
    table: u64,
    level: usize,
    start: u64,
    end: u64,
    flags: PteFlags,
    changed: &mut dyn FnMut(u64, u64, u64),
) -> Result<(), MapError> {
    for_each_present(ta, table, level, start, end, |ta, span, e| {
        if level == 1 || (level == 2 && huge(e) && span.whole) {
            let size = if level == 1 {
                PageSize::Size4K
            } else {
                PageSize::Size2M
            };
            let kept = e
                & (PteFlags::ACCESSED.0
                    | PteFlags::DIRTY.0
                    | PteFlags::BORROWED.0
                    | PteFlags::SHARED.0);
            let mut flags = flags;
            if e & PteFlags::BORROWED.0 != 0 {
                flags = flags.difference(PteFlags::WRITABLE);
            }
            let new = leaf_entry(e & size.addr_mask(), flags, size) | kept;
            set_entry(ta, table, span.start, level, new);
            changed(span.start, e, new);
            return Ok(());
        }
        if huge(e) {
            if level != 2 {
                return Err(MapError::Misaligned);
            }
            split(ta, table, span.start)?;
        }
        let next = child(entry(ta, table, span.start, level));
        protect_level(ta, next, level - 1, span.start, span.end, flags, changed)
    })
}

fn leaves_level(
    ta: &mut impl TableAlloc,
    table: u64,
    level: usize,
    start: u64,
    end: u64,
    f: &mut dyn FnMut(u64, u64),
) -> Result<(), MapError> {
    for_each_present(ta, table, level, start, end, |ta, span, e| {
        if level == 1 || huge(e) {
            f(span.start, e);
            return Ok(());
        }
        leaves_level(ta, child(e), level - 1, span.start, span.end, f)
    })
}

fn unmap_level(
    ta: &mut impl TableAlloc,
    table: u64,
    level: usize,
    start: u64,
    end: u64,
    removed: &mut dyn FnMut(u64, u64),
) -> Result<(), MapError> {
    for_each_present(ta, table, level, start, end, |ta, span, e| {
        if level == 1 || (level == 2 && huge(e) && span.whole) {
            set_entry(ta, table, span.start, level, 0);
            removed(span.start, e);
            return Ok(());
        }
        if huge(e) {
            if level != 2 {
                return Err(MapError::Misaligned);
            }
            split(ta, table, span.start)?;
        }
        let next = child(entry(ta, table, span.start, level));
        let res = unmap_level(ta, next, level - 1, span.start, span.end, removed);
        // Free the child even when a deeper split failed, if it ended up empty.
        if is_empty(ta, next) {
            ta.free_table(next);
            set_entry(ta, table, span.start, level, 0);
        }
        res
    })
}

#[cfg(test)]
mod tests {
    use super::super::testutil::XorShift;
    use super::*;
    use std::boxed::Box;
    use std::collections::HashMap;
    use std::vec::Vec;

    const ARENA_BASE: u64 = 0x7700_0000;
    /// Written into freed tables so a use after free shows up as garbage entries.
    const POISON: u64 = 0xDEAD_BEEF_DEAD_BEEF;

    /// Page tables in a `Vec`, "physical" address = ARENA_BASE + index * 4K.
    #[derive(Default)]
    struct Arena {
        tables: Vec<Box<[u64; ENTRIES]>>,
        free: Vec<usize>,
        live: usize,
        allocs: usize,
        limit: Option<usize>,
    }

    impl Arena {
        fn idx(&self, pa: u64) -> usize {
            assert!(
                pa >= ARENA_BASE && pa.is_multiple_of(SIZE_4K),
                "bad table pa {pa:#x}"
            );
            let i = ((pa - ARENA_BASE) / SIZE_4K) as usize;
            assert!(i < self.tables.len(), "bad table pa {pa:#x}");
            i
        }
    }

    impl TableAlloc for Arena {
        fn alloc_table(&mut self) -> Option<u64> {
            if self.limit.is_some_and(|l| self.live >= l) {
                return None;
            }
            let i = match self.free.pop() {
                Some(i) => i,
                None => {
                    self.tables.push(Box::new([0; ENTRIES]));
                    self.tables.len() - 1
                }
            };
            *self.tables[i] = [0; ENTRIES];
            self.live += 1;
            self.allocs += 1;
            Some(ARENA_BASE + i as u64 * SIZE_4K)
        }

        fn free_table(&mut self, pa: u64) {
            let i = self.idx(pa);
            assert!(!self.free.contains(&i), "double free of table {pa:#x}");
            *self.tables[i] = [POISON; ENTRIES];
            self.free.push(i);
            self.live -= 1;
        }

        fn table(&mut self, pa: u64) -> &mut [u64; ENTRIES] {
            let i = self.idx(pa);
            assert!(!self.free.contains(&i), "use after free of table {pa:#x}");
            &mut self.tables[i]
        }
    }

    fn setup() -> (Arena, AddressSpace) {
        let mut ta = Arena::default();
        let space = AddressSpace::new(&mut ta).unwrap();
        (ta, space)
    }

    const P: PteFlags = PteFlags::PRESENT;
    const RW: PteFlags = PteFlags::PRESENT.union(PteFlags::WRITABLE);

    #[test]
    fn flags_ops() {
        let f = PteFlags::WRITABLE | PteFlags::USER;
        assert!(f.contains(PteFlags::USER));
        assert!(!f.contains(PteFlags::PRESENT));
        assert_eq!(f & PteFlags::USER, PteFlags::USER);
        let mut g = PteFlags::empty();
        g |= PteFlags::NO_EXECUTE;
        assert_eq!(g.bits(), 1 << 63);
        assert_eq!(PteFlags::from_bits_truncate(0x1234_5007).bits(), 0x7);
        assert_eq!(f.difference(PteFlags::USER), PteFlags::WRITABLE);
        assert_eq!(PageSize::Size4K.bytes(), 4096);
        assert_eq!(PageSize::Size2M.bytes(), 2 << 20);
    }

    #[test]
    fn map_translate_4k() {
        let (mut ta, mut s) = setup();
        let va = 0x4000_1000;
        s.map(&mut ta, va, 0x1234_5000, PageSize::Size4K, RW)
            .unwrap();
        assert_eq!(ta.live, 4, "PML4 + PDPT + PD + PT");
        let t = s.translate(&mut ta, va + 0x123).unwrap();
        assert_eq!(t.pa, 0x1234_5123);
        assert_eq!(t.size, PageSize::Size4K);
        assert_eq!(t.flags, RW);
        assert_eq!(s.translate(&mut ta, va + 0x1000), None);
        assert_eq!(s.translate(&mut ta, va - 1), None);
        // A neighbour shares all tables.
        s.map(&mut ta, va + 0x1000, 0x9000, PageSize::Size4K, P)
            .unwrap();
        assert_eq!(ta.live, 4);
        assert_eq!(s.translate(&mut ta, va + 0x1fff).unwrap().pa, 0x9fff);
        assert_eq!(
            s.unmap(&mut ta, va + 0x10, PageSize::Size4K),
            Ok(0x1234_5000)
        );
        assert_eq!(s.translate(&mut ta, va), None);
        assert_eq!(
            s.unmap(&mut ta, va, PageSize::Size4K),
            Err(MapError::NotMapped)
        );
        assert_eq!(ta.live, 4);
        assert_eq!(s.unmap(&mut ta, va + 0x1000, PageSize::Size4K), Ok(0x9000));
        assert_eq!(ta.live, 1, "emptied PT, PD and PDPT freed");
        assert!(ta.table(s.root()).iter().all(|&e| e == 0));
    }

    #[test]
    fn leaves_report_present_pages_and_set_leaf_bits_marks_one() {
        let (mut ta, mut s) = setup();
        let va = 0x7000_0000;
        for i in [0u64, 2, 3, 500] {
            s.map(
                &mut ta,
                va + i * 0x1000,
                0x10_0000 + i * 0x1000,
                PageSize::Size4K,
                RW,
            )
            .unwrap();
        }
        s.map(&mut ta, va + SIZE_2M, 0x4000_0000, PageSize::Size2M, P)
            .unwrap();
        let mut seen = alloc::vec::Vec::new();
        s.leaves(&mut ta, va, 2 * SIZE_2M, &mut |v, e| seen.push((v, e)))
            .unwrap();
        let vas: alloc::vec::Vec<u64> = seen.iter().map(|p| p.0).collect();
        assert_eq!(
            vas,
            [
                va,
                va + 0x2000,
                va + 0x3000,
                va + 500 * 0x1000,
                va + SIZE_2M
            ]
        );
        assert_eq!(seen[1].1 & ADDR_MASK_4K, 0x10_2000);
        assert_ne!(seen[4].1 & PteFlags::HUGE.bits(), 0);
        // Only inside the range asked for.
        let mut n = 0;
        s.leaves(&mut ta, va + 0x1000, 0x2000, &mut |_, _| n += 1)
            .unwrap();
        assert_eq!(n, 1);
        let z = PteFlags::ZEROED.bits();
        assert!(s.set_leaf_bits(&mut ta, va + 0x2000, z));
        assert!(!s.set_leaf_bits(&mut ta, va + 0x1000, z), "not present");
        assert!(!s.set_leaf_bits(&mut ta, va + SIZE_2M, z), "2 MiB leaf");
        let t = s.translate(&mut ta, va + 0x2000).unwrap();
        assert_eq!(t.flags, RW | PteFlags::ZEROED);
        assert_eq!(t.pa, 0x10_2000);
        // `protect` drops the mark.
        s.protect(&mut ta, va + 0x2000, 0x1000, P).unwrap();
        assert_eq!(s.translate(&mut ta, va + 0x2000).unwrap().flags, P);
    }

    #[test]
    fn map_translate_2m() {
        let (mut ta, mut s) = setup();
        let va = 0x8060_0000;
        let pa = 0x1_0020_0000;
        s.map(&mut ta, va, pa, PageSize::Size2M, RW).unwrap();
        assert_eq!(ta.live, 3, "PML4 + PDPT + PD, no PT");
        for off in [0, 0x1234, SIZE_2M - 1] {
            let t = s.translate(&mut ta, va + off).unwrap();
            assert_eq!(t.pa, pa + off);
            assert_eq!(t.size, PageSize::Size2M);
            assert_eq!(t.flags, RW, "HUGE is not reported as a flag");
        }
        assert_eq!(s.translate(&mut ta, va + SIZE_2M), None);
        assert_eq!(s.unmap(&mut ta, va + 0x5000, PageSize::Size2M), Ok(pa));
        assert_eq!(s.translate(&mut ta, va), None);
        assert_eq!(ta.live, 1);
    }

    #[test]
    fn flags_appear_and_intermediates_are_permissive() {
        let (mut ta, mut s) = setup();
        let user_nx = PteFlags::USER | PteFlags::NO_EXECUTE | PteFlags::WRITABLE;
        s.map(&mut ta, 0x40_0000, 0x40_0000, PageSize::Size4K, user_nx)
            .unwrap();
        let t = s.translate(&mut ta, 0x40_0000).unwrap();
        assert!(
            t.flags.contains(user_nx | PteFlags::PRESENT),
            "PRESENT is implied"
        );
        s.map(
            &mut ta,
            0x60_0000,
            0x60_0000,
            PageSize::Size2M,
            PteFlags::GLOBAL | P,
        )
        .unwrap();
        let t = s.translate(&mut ta, 0x60_0000).unwrap();
        assert_eq!(t.flags, PteFlags::GLOBAL | P);
        assert!(!t.flags.contains(PteFlags::WRITABLE) && !t.flags.contains(PteFlags::USER));
        // HUGE in the caller's flags does not leak into a 4K leaf.
        s.map(
            &mut ta,
            0x80_0000,
            0x1000,
            PageSize::Size4K,
            P | PteFlags::HUGE,
        )
        .unwrap();
        let t = s.translate(&mut ta, 0x80_0000).unwrap();
        assert_eq!((t.size, t.flags), (PageSize::Size4K, P));
        // Walk by hand: every intermediate entry is PRESENT|WRITABLE|USER.
        let pml4e = ta.table(s.root())[0];
        assert_eq!(pml4e & FLAG_MASK, TABLE_FLAGS);
        let pdpte = ta.table(child(pml4e))[0];
        assert_eq!(pdpte & FLAG_MASK, TABLE_FLAGS);
        let pde = ta.table(child(pdpte))[2];
        assert_eq!(pde & FLAG_MASK, TABLE_FLAGS);
        let huge_pde = ta.table(child(pdpte))[3];
        assert_eq!(
            huge_pde & FLAG_MASK,
            (PteFlags::GLOBAL | P | PteFlags::HUGE).bits()
        );
    }

    #[test]
    fn already_mapped_changes_nothing() {
        let (mut ta, mut s) = setup();
        s.map(&mut ta, 0x20_3000, 0x5000, PageSize::Size4K, RW)
            .unwrap();
        s.map(&mut ta, 0x40_0000, 0xA0_0000, PageSize::Size2M, RW)
            .unwrap();
        let live = ta.live;
        let n = ta.tables.len();
        let snapshot: Vec<[u64; ENTRIES]> = ta.tables.iter().map(|t| **t).collect();
        let e = Err(MapError::AlreadyMapped);
        assert_eq!(s.map(&mut ta, 0x20_3000, 0x6000, PageSize::Size4K, P), e);
        assert_eq!(
            s.map(&mut ta, 0x20_0000, 0x20_0000, PageSize::Size2M, P),
            e,
            "2M over a 4K"
        );
        assert_eq!(s.map(&mut ta, 0x40_0000, 0x20_0000, PageSize::Size2M, P), e);
        assert_eq!(
            s.map(&mut ta, 0x41_0000, 0x1000, PageSize::Size4K, P),
            e,
            "4K inside a 2M"
        );
        assert_eq!(s.map_range(&mut ta, 0x3F_F000, 0x1000, 0x2000, P), e);
        assert_eq!(ta.live, live);
        // (map_range created and released a PT past the first `n` tables.)
        let after: Vec<[u64; ENTRIES]> = ta.tables[..n].iter().map(|t| **t).collect();
        assert_eq!(after, snapshot);
        assert_eq!(s.translate(&mut ta, 0x20_3000).unwrap().pa, 0x5000);
    }

    #[test]
    fn out_of_memory_leaves_nothing_behind() {
        let (mut ta, mut s) = setup();
        ta.limit = Some(3);
        assert_eq!(
            s.map(&mut ta, 0x1000, 0x1000, PageSize::Size4K, P),
            Err(MapError::OutOfMemory)
        );
        assert_eq!(ta.live, 1);
        assert!(ta.table(s.root()).iter().all(|&e| e == 0));
        s.map(&mut ta, 0, 0, PageSize::Size2M, P).unwrap();
        // Splitting needs a fourth table.
        assert_eq!(
            s.unmap(&mut ta, 0x1000, PageSize::Size4K),
            Err(MapError::OutOfMemory)
        );
        assert_eq!(s.translate(&mut ta, 0x1000).unwrap().size, PageSize::Size2M);
        ta.limit = None;
        let mut ta2 = Arena {
            limit: Some(2),
            ..Default::default()
        };
        assert!(AddressSpace::new(&mut ta2).is_ok());
        ta2.limit = Some(0);
        assert_eq!(
            AddressSpace::new(&mut ta2).unwrap_err(),
            MapError::OutOfMemory
        );
    }

    #[test]
    fn misaligned_rejected() {
        let (mut ta, mut s) = setup();
        let m = Err(MapError::Misaligned);
        assert_eq!(s.map(&mut ta, 0x1001, 0x1000, PageSize::Size4K, P), m);
        assert_eq!(s.map(&mut ta, 0x1000, 0x1800, PageSize::Size4K, P), m);
        assert_eq!(s.map(&mut ta, 0x20_1000, 0x20_0000, PageSize::Size2M, P), m);
        assert_eq!(s.map(&mut ta, 0x20_0000, 0x20_1000, PageSize::Size2M, P), m);
        assert_eq!(s.map(&mut ta, 0x1000, 1 << 52, PageSize::Size4K, P), m);
        assert_eq!(s.map_range(&mut ta, 0x1000, 0x1001, 0x1000, P), m);
        assert_eq!(
            s.map_range(&mut ta, 0x1000, (1 << 52) - 0x1000, 0x2000, P),
            m
        );
        assert_eq!(s.protect(&mut ta, 0x1001, 0x1000, P), m);
        assert_eq!(s.unmap_range(&mut ta, 0x1001, 0x1000), m);
        assert_eq!(ta.live, 1);
    }

    #[test]
    fn non_canonical_rejected() {
        let (mut ta, mut s) = setup();
        let n = Err(MapError::NonCanonical);
        let hole = 0x0000_8000_0000_0000;
        assert_eq!(s.map(&mut ta, hole, 0, PageSize::Size4K, P), n);
        assert_eq!(
            s.map(&mut ta, 0xFFFF_7FFF_FFFF_F000, 0, PageSize::Size4K, P),
            n
        );
        assert_eq!(
            s.map(&mut ta, 0x0001_0000_0000_0000, 0, PageSize::Size2M, P),
            n
        );
        assert_eq!(
            s.unmap(&mut ta, hole, PageSize::Size4K),
            Err(MapError::NonCanonical)
        );
        assert_eq!(s.translate(&mut ta, hole), None);
        assert_eq!(s.protect(&mut ta, hole, 0x1000, P), n);
        assert_eq!(s.unmap_range(&mut ta, hole, 0x1000), n);
        // Ranges must not run into the hole or past the top.
        assert_eq!(s.map_range(&mut ta, 0x7FFF_FFFF_F000, 0, 0x2000, P), n);
        assert_eq!(s.unmap_range(&mut ta, 0xFFFF_FFFF_FFFF_F000, 0x2000), n);
        assert_eq!(s.unmap_range(&mut ta, 0x1000, u64::MAX), n);
        assert_eq!(ta.live, 1);
        // The very ends of both halves work.
        s.map_range(&mut ta, 0x7FFF_FFFF_F000, 0x1000, 0x1000, P)
            .unwrap();
        s.map(&mut ta, 0xFFFF_8000_0000_0000, 0x2000, PageSize::Size4K, P)
            .unwrap();
        s.map_range(&mut ta, 0xFFFF_FFFF_FFC0_0000, 0x40_0000, 0x40_0000, RW)
            .unwrap();
        let t = s.translate(&mut ta, 0xFFFF_FFFF_FFFF_FFFF).unwrap();
        assert_eq!((t.pa, t.size), (0x7F_FFFF, PageSize::Size2M));
        assert_eq!(s.translate(&mut ta, 0x7FFF_FFFF_FFFF).unwrap().pa, 0x1FFF);
        s.unmap_range(&mut ta, 0xFFFF_FFFF_FFC0_0000, 0x40_0000)
            .unwrap();
        s.unmap_range(&mut ta, 0xFFFF_8000_0000_0000, 0x1000)
            .unwrap();
        s.unmap_range(&mut ta, 0x7FFF_FFFF_F000, 0x1000).unwrap();
        assert_eq!(ta.live, 1);
    }

    #[test]
    fn split_on_4k_unmap_in_2m_page() {
        let (mut ta, mut s) = setup();
        let va = 0x4000_0000;
        let pa = 0x8000_0000;
        let flags = RW | PteFlags::USER | PteFlags::NO_EXECUTE;
        s.map(&mut ta, va, pa, PageSize::Size2M, flags).unwrap();
        assert_eq!(
            s.unmap(&mut ta, va + 5 * SIZE_4K + 0x77, PageSize::Size4K),
            Ok(pa + 5 * SIZE_4K)
        );
        assert_eq!(ta.live, 4, "a PT was added");
        assert_eq!(s.translate(&mut ta, va + 5 * SIZE_4K), None);
        for i in (0..512).filter(|&i| i != 5) {
            let t = s.translate(&mut ta, va + i * SIZE_4K + 8).unwrap();
            assert_eq!(t.pa, pa + i * SIZE_4K + 8);
            assert_eq!(t.size, PageSize::Size4K);
            assert_eq!(t.flags, flags);
        }
        // A 2M unmap no longer sees a 2M page there.
        assert_eq!(
            s.unmap(&mut ta, va, PageSize::Size2M),
            Err(MapError::NotMapped)
        );
        s.unmap_range(&mut ta, va, SIZE_2M).unwrap();
        assert_eq!(ta.live, 1);
    }

    #[test]
    fn protect_partial_2m() {
        let (mut ta, mut s) = setup();
        let va = 0x20_0000;
        s.map_range(&mut ta, va, 0x60_0000, 2 * SIZE_2M, RW)
            .unwrap();
        // Pretend the CPU touched the first page.
        let pdpt = child(ta.table(s.root())[0]);
        let pd = child(ta.table(pdpt)[0]);
        ta.table(pd)[1] |= (PteFlags::ACCESSED | PteFlags::DIRTY).bits();
        let ro_nx = P | PteFlags::NO_EXECUTE;
        s.protect(&mut ta, va + 10 * SIZE_4K, 2 * SIZE_4K - 100, ro_nx)
            .unwrap();
        for i in 0..512 {
            let t = s.translate(&mut ta, va + i * SIZE_4K).unwrap();
            assert_eq!(t.size, PageSize::Size4K);
            assert_eq!(t.pa, 0x60_0000 + i * SIZE_4K);
            let base = if i == 10 || i == 11 { ro_nx } else { RW };
            assert_eq!(
                t.flags,
                base | PteFlags::ACCESSED | PteFlags::DIRTY,
                "page {i}"
            );
        }
        // The second 2 MiB page is untouched.
        let t = s.translate(&mut ta, va + SIZE_2M).unwrap();
        assert_eq!((t.size, t.flags), (PageSize::Size2M, RW));
        // Protecting a whole 2 MiB page keeps it whole.
        s.protect(&mut ta, va + SIZE_2M, SIZE_2M, PteFlags::USER)
            .unwrap();
        let t = s.translate(&mut ta, va + SIZE_2M + 0x1234).unwrap();
        assert_eq!(
            (t.size, t.flags, t.pa),
            (PageSize::Size2M, P | PteFlags::USER, 0x80_1234)
        );
        // Holes are skipped.
        s.protect(&mut ta, 0, 0x1_0000_0000, RW).unwrap();
        assert_eq!(s.translate(&mut ta, 0x1000), None);
        assert_eq!(s.translate(&mut ta, va + SIZE_2M).unwrap().flags, RW);
        assert_eq!(
            s.translate(&mut ta, va + 10 * SIZE_4K).unwrap().flags,
            RW | PteFlags::ACCESSED | PteFlags::DIRTY
        );
    }

    #[test]
    fn unmap_range_frees_empty_tables() {
        let (mut ta, mut s) = setup();
        // 4K pages across two PTs, a 2M page, and something in another PDPT.
        s.map_range(&mut ta, 0x1F_C000, 0x1000_0000, 0x8000, RW)
            .unwrap();
        s.map(&mut ta, 0x60_0000, 0x20_0000, PageSize::Size2M, RW)
            .unwrap();
        s.map(&mut ta, 0x80_0000_0000, 0x3000, PageSize::Size4K, RW)
            .unwrap();
        // PML4, PDPT, PD, 2 PTs; second PML4 slot: PDPT, PD, PT.
        assert_eq!(ta.live, 8);
        // Partial removal keeps tables that still hold mappings.
        s.unmap_range(&mut ta, 0x1F_C000, 0x4000).unwrap();
        assert_eq!(ta.live, 7, "first PT emptied and freed");
        assert_eq!(s.translate(&mut ta, 0x20_0000).unwrap().pa, 0x1000_4000);
        // Partial 2M removal splits.
        s.unmap_range(&mut ta, 0x60_0000, 0x1000).unwrap();
        assert_eq!(ta.live, 8);
        assert_eq!(
            s.translate(&mut ta, 0x60_1000).unwrap().size,
            PageSize::Size4K
        );
        // A range with holes covering everything in the low 512 GiB.
        s.unmap_range(&mut ta, 0, 0x80_0000_0000).unwrap();
        assert_eq!(ta.live, 4, "PML4 + the other path");
        assert_eq!(ta.table(s.root())[0], 0);
        assert!(s.translate(&mut ta, 0x80_0000_0000).is_some());
        s.unmap_range(&mut ta, 0x80_0000_0000, 0x1000).unwrap();
        assert_eq!(ta.live, 1);
        assert!(ta.table(s.root()).iter().all(|&e| e == 0));
        // Unmapping nothing is fine.
        s.unmap_range(&mut ta, 0x1000, 0x10_0000).unwrap();
        s.unmap_range(&mut ta, 0x1000, 0).unwrap();
    }

    #[test]
    fn unmap_range_removes_whole_2m_pages_without_split() {
        let (mut ta, mut s) = setup();
        s.map_range(&mut ta, 0x4000_0000, 0, 4 * SIZE_2M, RW)
            .unwrap();
        assert_eq!(ta.live, 3);
        let allocs = ta.allocs;
        s.unmap_range(&mut ta, 0x4020_0000, 2 * SIZE_2M).unwrap();
        assert_eq!(ta.allocs, allocs, "no split for fully covered 2M pages");
        assert!(s.translate(&mut ta, 0x4000_0000).is_some());
        assert!(s.translate(&mut ta, 0x4020_0000).is_none());
        assert!(s.translate(&mut ta, 0x405F_FFFF).is_none());
        assert!(s.translate(&mut ta, 0x4060_0000).is_some());
    }

    #[test]
    fn map_range_picks_2m_when_aligned() {
        let (mut ta, mut s) = setup();
        let va = 0x1F_E000;
        let pa = 0x5F_E000;
        let len = 2 * SIZE_4K + SIZE_2M + 3 * SIZE_4K;
        s.map_range(&mut ta, va, pa, len, RW).unwrap();
        let size_at =
            |ta: &mut Arena, s: &AddressSpace, v: u64| s.translate(ta, v).map(|t| (t.size, t.pa));
        assert_eq!(size_at(&mut ta, &s, va), Some((PageSize::Size4K, pa)));
        assert_eq!(
            size_at(&mut ta, &s, 0x1F_F000),
            Some((PageSize::Size4K, 0x5F_F000))
        );
        assert_eq!(
            size_at(&mut ta, &s, 0x20_0000),
            Some((PageSize::Size2M, 0x60_0000))
        );
        assert_eq!(
            size_at(&mut ta, &s, 0x3F_FFFF),
            Some((PageSize::Size2M, 0x7F_FFFF))
        );
        assert_eq!(
            size_at(&mut ta, &s, 0x40_2000),
            Some((PageSize::Size4K, 0x80_2000))
        );
        assert_eq!(size_at(&mut ta, &s, 0x40_3000), None);
        // va aligned but pa not: 4K pages only.
        s.map_range(&mut ta, 0x4000_0000, 0x1000, SIZE_2M + 1, RW)
            .unwrap();
        for i in 0..513 {
            let t = s.translate(&mut ta, 0x4000_0000 + i * SIZE_4K).unwrap();
            assert_eq!((t.size, t.pa), (PageSize::Size4K, 0x1000 + i * SIZE_4K));
        }
        assert_eq!(
            s.translate(&mut ta, 0x4000_0000 + 513 * SIZE_4K),
            None,
            "len rounded up to one page"
        );
    }

    #[test]
    fn map_range_rolls_back_on_error() {
        let (mut ta, mut s) = setup();
        s.map(&mut ta, 0x60_5000, 0x1000, PageSize::Size4K, RW)
            .unwrap();
        let live = ta.live;
        let res = s.map_range(&mut ta, 0x1F_F000, 0x1F_F000, 0x41_0000, RW);
        assert_eq!(res, Err(MapError::AlreadyMapped));
        assert_eq!(ta.live, live);
        for v in [0x1F_F000, 0x20_0000, 0x40_0000, 0x60_4000] {
            assert_eq!(s.translate(&mut ta, v), None);
        }
        assert_eq!(s.translate(&mut ta, 0x60_5000).unwrap().pa, 0x1000);
        // Out of memory half way: also rolled back.
        ta.limit = Some(live + 1);
        let res = s.map_range(&mut ta, 0x3FF0_0000, 0, 0x20_0000, RW);
        assert_eq!(res, Err(MapError::OutOfMemory));
        assert_eq!(ta.live, live);
        assert_eq!(s.translate(&mut ta, 0x3FF0_0000), None);
    }

    #[test]
    fn root_roundtrip_and_foreign_1g_page() {
        let (mut ta, s) = setup();
        let root = s.root();
        let mut s2 = AddressSpace::from_root(root);
        assert_eq!(s2.root(), root);
        // Hand-build a 1 GiB page at 1 GiB, as a loader might.
        let pdpt = ta.alloc_table().unwrap();
        ta.table(root)[0] = pdpt | TABLE_FLAGS;
        ta.table(pdpt)[1] = 0x4000_0000 | (RW | PteFlags::HUGE).bits();
        let va = 0x4000_0000;
        assert_eq!(
            s2.map(&mut ta, va + 0x1000, 0, PageSize::Size4K, P),
            Err(MapError::AlreadyMapped)
        );
        assert_eq!(
            s2.map(&mut ta, va, 0, PageSize::Size2M, P),
            Err(MapError::AlreadyMapped)
        );
        assert_eq!(s2.translate(&mut ta, va), None);
        assert_eq!(
            s2.unmap(&mut ta, va, PageSize::Size4K),
            Err(MapError::Misaligned)
        );
        assert_eq!(
            s2.protect(&mut ta, va, 0x1000, P),
            Err(MapError::Misaligned)
        );
        assert_eq!(
            s2.unmap_range(&mut ta, va, 0x1000),
            Err(MapError::Misaligned)
        );
        assert_eq!(
            ta.table(pdpt)[1],
            0x4000_0000 | (RW | PteFlags::HUGE).bits()
        );
    }

    /// Random map/map_range/unmap/unmap_range/protect against a per-4K-page model.
    #[test]
    fn randomized_against_model() {
        let (mut ta, mut s) = setup();
        // Window of 4 x 2 MiB straddling a PD boundary and a PDPT boundary.
        let window = 0x3FC0_0000u64;
        let npages = 4 * 512;
        let mut model: HashMap<u64, (u64, PteFlags)> = HashMap::new();
        let mut rng = XorShift(0xA076_1D64_78BD_642F);
        let flag_choices = [RW, P, P | PteFlags::USER, RW | PteFlags::NO_EXECUTE];
        for step in 0..3000 {
            let flags = flag_choices[rng.below(4) as usize];
            let page = rng.below(npages);
            let va = window + page * SIZE_4K;
            match rng.below(5) {
                0 => {
                    let size = if rng.below(2) == 0 {
                        PageSize::Size4K
                    } else {
                        PageSize::Size2M
                    };
                    let va = va & !(size.bytes() - 1);
                    let pa = (rng.below(1 << 20) * SIZE_4K) & !(size.bytes() - 1);
                    let pages = size.bytes() / SIZE_4K;
                    let free = (0..pages).all(|i| !model.contains_key(&(va + i * SIZE_4K)));
                    let res = s.map(&mut ta, va, pa, size, flags);
                    if free {
                        res.unwrap();
                        for i in 0..pages {
                            model.insert(va + i * SIZE_4K, (pa + i * SIZE_4K, flags));
                        }
                    } else {
                        assert_eq!(res, Err(MapError::AlreadyMapped), "step {step}");
                    }
                }
                1 => {
                    let pages = 1 + rng.below(600).min(npages - page - 1);
                    let pa = rng.below(1 << 20) * SIZE_4K;
                    let free = (0..pages).all(|i| !model.contains_key(&(va + i * SIZE_4K)));
                    let res = s.map_range(&mut ta, va, pa, pages * SIZE_4K, flags);
                    if free {
                        res.unwrap();
                        for i in 0..pages {
                            model.insert(va + i * SIZE_4K, (pa + i * SIZE_4K, flags));
                        }
                    } else {
                        assert_eq!(res, Err(MapError::AlreadyMapped), "step {step}");
                    }
                }
                2 => {
                    let res = s.unmap(&mut ta, va, PageSize::Size4K);
                    match model.remove(&va) {
                        Some((pa, _)) => assert_eq!(res, Ok(pa), "step {step}"),
                        None => assert_eq!(res, Err(MapError::NotMapped), "step {step}"),
                    }
                }
                3 => {
                    let pages = 1 + rng.below(700).min(npages - page - 1);
                    s.unmap_range(&mut ta, va, pages * SIZE_4K).unwrap();
                    for i in 0..pages {
                        model.remove(&(va + i * SIZE_4K));
                    }
                }
                _ => {
                    let pages = 1 + rng.below(700).min(npages - page - 1);
                    s.protect(&mut ta, va, pages * SIZE_4K, flags).unwrap();
                    for i in 0..pages {
                        if let Some(m) = model.get_mut(&(va + i * SIZE_4K)) {
                            m.1 = flags | P;
                        }
                    }
                }
            }
            if step % 50 == 0 || model.is_empty() {
                for p in 0..npages {
                    let v = window + p * SIZE_4K;
                    let got = s
                        .translate(&mut ta, v + 0x10)
                        .map(|t| (t.pa - 0x10, t.flags));
                    assert_eq!(got, model.get(&v).copied(), "step {step} page {p}");
                }
            }
            if model.is_empty() {
                assert_eq!(ta.live, 1, "step {step}: all tables freed");
            }
        }
        s.unmap_range(&mut ta, window, npages * SIZE_4K).unwrap();
        assert_eq!(ta.live, 1);
    }
}
