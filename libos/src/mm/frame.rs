//! Page-granular physical frame allocator.
//!
//! Following Libra, physical memory is one bit per 4 KiB frame. A bitmap needs
//! no allocator to bootstrap (the caller hands in its storage), costs 1/32768 of
//! the memory it describes, and — unlike a free list — makes contiguous and
//! aligned runs (DMA buffers, 2 MiB pages) cheap to find. Small allocations are
//! the job of [`super::chunk`], which takes whole pages from here.

/// Size of one physical frame.
pub const PAGE_SIZE: usize = 4096;

const PAGE: u64 = PAGE_SIZE as u64;
const WORD_BITS: usize = u64::BITS as usize;

/// Why a [`FrameBitmap`] operation was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameError {
    /// The bitmap storage holds fewer than `npages` bits.
    BitmapTooSmall,
    /// An address (or the base) is not a multiple of [`PAGE_SIZE`].
    Misaligned,
    /// The pages are not (all) inside the covered range, or the range does not fit in `u64`.
    OutOfRange,
    /// At least one of the pages is already free.
    DoubleFree,
}

/// One bit per page over `[base, base + npages * PAGE_SIZE)`; a set bit means "used".
///
/// Used-as-1 lets the allocator skip fully used words with one comparison
/// against `u64::MAX`, which is the common case in a mostly full machine.
pub struct FrameBitmap {
    /// Physical address of page 0 (page aligned).
    base: u64,
    npages: usize,
    /// Exactly `npages.div_ceil(64)` words. Bits past `npages` in the last word
    /// stay set forever so they are never handed out.
    bitmap: &'static mut [u64],
    free: usize,
    /// Where the search starts: after the last allocation, so consecutive
    /// allocations do not rescan the densely used low pages, but moved back
    /// to the lowest page freed since, so memory freed is reused first. That
    /// keeps the working set small: on a shadow-paging host (PVM) every page
    /// touched for the first time costs a host page fault.
    cursor: usize,
}

impl FrameBitmap {
    /// A bitmap covering nothing, usable as a `static` initializer before [`init`](Self::init).
    pub const fn empty() -> Self {
        Self {
            base: 0,
            npages: 0,
            bitmap: &mut [],
            free: 0,
            cursor: 0,
        }
    }

    /// Covers `[base, base + npages * 4K)`. All pages start **used**: firmware
    /// memory maps list the usable ranges, so the caller frees exactly those with
    /// [`add_free_range`](Self::add_free_range) and never hands out a hole by mistake.
    ///
    /// Errors: `bitmap.len() < npages.div_ceil(64)` → `BitmapTooSmall`; `base` not
    /// page aligned → `Misaligned`; the covered range overflows `u64` → `OutOfRange`.
    /// On error `self` is unchanged.
    pub fn init(
        &mut self,
        base: u64,
        npages: usize,
        bitmap: &'static mut [u64],
    ) -> Result<(), FrameError> {
        let words = npages.div_ceil(WORD_BITS);
        if bitmap.len() < words {
            return Err(FrameError::BitmapTooSmall);
        }
        if !base.is_multiple_of(PAGE) {
            return Err(FrameError::Misaligned);
        }
        (npages as u64)
            .checked_mul(PAGE)
            .and_then(|bytes| base.checked_add(bytes))
            .ok_or(FrameError::OutOfRange)?;
        let bitmap = &mut bitmap[..words];
        bitmap.fill(u64::MAX);
        *self = Self {
            base,
            npages,
            bitmap,
            free: 0,
            cursor: 0,
        };
        Ok(())
    }

    /// Marks the whole pages inside `[start, end)` free. The range is shrunk to
    /// whole pages (a partial page may be shared with something else) and clipped
    /// to the covered range; pages already free stay free (this is for boot-time
    /// setup, not for returning allocations — use [`free`](Self::free) for that).
    pub fn add_free_range(&mut self, start: u64, end: u64) {
        let Some(lo) = start.max(self.base).checked_next_multiple_of(PAGE) else {
            return;
        };
        let hi = end.min(self.end()) & !(PAGE - 1);
        if let Some((first, count)) = self.page_span(lo, hi) {
            self.free += self.set_bits(first, count, false);
        }
    }

    /// [`init`](Self::init) followed by freeing the whole pages of each range
    /// in `free`, which must be sorted and disjoint (else `Err(OutOfRange)` and
    /// nothing is freed). Whole words are cleared with one fill each instead
    /// of page by page: boot calls this for all of RAM, and a partition's
    /// kernel may run without hardware virtualisation, where every instruction
    /// counts (see docs/pvm.md).
    pub fn init_free(
        &mut self,
        base: u64,
        npages: usize,
        bitmap: &'static mut [u64],
        free: &[(u64, u64)],
    ) -> Result<(), FrameError> {
        if free.windows(2).any(|w| w[0].1 > w[1].0) || free.iter().any(|r| r.0 > r.1) {
            return Err(FrameError::OutOfRange);
        }
        self.init(base, npages, bitmap)?;
        for &(start, end) in free {
            let Some(lo) = start.max(self.base).checked_next_multiple_of(PAGE) else {
                continue;
            };
            let hi = end.min(self.end()) & !(PAGE - 1);
            let Some((first, count)) = self.page_span(lo, hi) else {
                continue;
            };
            let last = first + count;
            // Partial words at both ends, whole words in between.
            let (fw, lw) = (first.div_ceil(WORD_BITS), last / WORD_BITS);
            if fw > lw {
                // Inside one word.
                let w = first / WORD_BITS;
                let mask = (((1u128 << (last - first)) - 1) << (first % WORD_BITS)) as u64;
                self.bitmap[w] &= !mask;
            } else {
                if first % WORD_BITS != 0 {
                    self.bitmap[first / WORD_BITS] &= (1u64 << (first % WORD_BITS)) - 1;
                }
                self.bitmap[fw..lw].fill(0);
                if last % WORD_BITS != 0 {
                    self.bitmap[lw] &= !((1u64 << (last % WORD_BITS)) - 1);
                }
            }
            self.free += count;
        }
        Ok(())
    }

    /// Marks every page touching `[start, end)` used (rounds outward, since a
    /// partially reserved page must not be handed out), clipped to the covered range.
    pub fn reserve_range(&mut self, start: u64, end: u64) {
        let lo = (start & !(PAGE - 1)).max(self.base);
        let hi = end
            .checked_next_multiple_of(PAGE)
            .unwrap_or(u64::MAX)
            .min(self.end());
        if let Some((first, count)) = self.page_span(lo, hi) {
            self.free -= self.set_bits(first, count, true);
        }
    }

    /// Allocates `count` contiguous free pages whose first physical address is a
    /// multiple of `align_pages * 4K` (`align_pages` a power of two; 512 gives a
    /// 2 MiB aligned run). Next-fit from the cursor, wrapping around once.
    ///
    /// Returns `None` when no such run exists, `count` is 0, or `align_pages` is
    /// not a power of two.
    pub fn alloc(&mut self, count: usize, align_pages: usize) -> Option<u64> {
        if count == 0 || count > self.free || !align_pages.is_power_of_two() {
            return None;
        }
        let first = self
            .find_run(self.cursor, self.npages, count, align_pages)
            .or_else(|| self.find_run(0, self.cursor, count, align_pages))?;
        self.set_bits(first, count, true);
        self.free -= count;
        self.cursor = first + count;
        if self.cursor >= self.npages {
            self.cursor = 0;
        }
        Some(self.addr_of(first))
    }

    /// Returns `count` pages starting at `addr` to the pool.
    ///
    /// All-or-nothing: a misaligned address, a run leaving the covered range, or
    /// any page of the run already being free is reported and changes nothing, so
    /// a buggy caller cannot silently corrupt the free count.
    pub fn free(&mut self, addr: u64, count: usize) -> Result<(), FrameError> {
        if !addr.is_multiple_of(PAGE) {
            return Err(FrameError::Misaligned);
        }
        let first = addr
            .checked_sub(self.base)
            .and_then(|off| usize::try_from(off / PAGE).ok())
            .ok_or(FrameError::OutOfRange)?;
        let end = first
            .checked_add(count)
            .filter(|&end| end <= self.npages)
            .ok_or(FrameError::OutOfRange)?;
        if self.find_bit(first, end, false).is_some() {
            return Err(FrameError::DoubleFree);
        }
        self.set_bits(first, count, false);
        self.free += count;
        self.cursor = self.cursor.min(first);
        Ok(())
    }

    /// Number of pages currently free.
    pub fn free_pages(&self) -> usize {
        self.free
    }

    /// Number of pages covered (free or not).
    pub fn total_pages(&self) -> usize {
        self.npages
    }

    /// Whether the page containing `addr` is covered and free.
    pub fn is_free(&self, addr: u64) -> bool {
        addr.checked_sub(self.base)
            .and_then(|off| usize::try_from(off / PAGE).ok())
            .is_some_and(|i| {
                i < self.npages && self.bitmap[i / WORD_BITS] & (1 << (i % WORD_BITS)) == 0
            })
    }

    /// One past the last covered byte (cannot overflow: checked in `init`).
    fn end(&self) -> u64 {
        self.base + self.npages as u64 * PAGE
    }

    fn addr_of(&self, index: usize) -> u64 {
        self.base + index as u64 * PAGE
    }

    /// Page-aligned `[lo, hi)` inside the covered range → (first index, count); `None` if empty.
    fn page_span(&self, lo: u64, hi: u64) -> Option<(usize, usize)> {
        if lo >= hi {
            return None;
        }
        // Both are within the covered range, whose page count fits in usize.
        let first = ((lo - self.base) / PAGE) as usize;
        let count = ((hi - lo) / PAGE) as usize;
        Some((first, count))
    }

    /// Sets (`used`) or clears bits `[first, first + count)` a word at a time and
    /// returns how many bits actually changed, so callers can keep `free` exact
    /// even when ranges overlap earlier ones.
    fn set_bits(&mut self, first: usize, count: usize, used: bool) -> usize {
        let end = first + count;
        let mut changed = 0;
        let mut i = first;
        while i < end {
            let bit = i % WORD_BITS;
            let n = (WORD_BITS - bit).min(end - i);
            let mask = if n == WORD_BITS {
                u64::MAX
            } else {
                ((1u64 << n) - 1) << bit
            };
            let word = &mut self.bitmap[i / WORD_BITS];
            if used {
                changed += (!*word & mask).count_ones() as usize;
                *word |= mask;
            } else {
                changed += (*word & mask).count_ones() as usize;
                *word &= !mask;
            }
            i += n;
        }
        changed
    }

    /// First index in `[from, to)` whose bit is `used`, a word at a time
    /// (a word with no matching bit is skipped in one step).
    fn find_bit(&self, from: usize, to: usize, used: bool) -> Option<usize> {
        let mut i = from;
        while i < to {
            let w = i / WORD_BITS;
            let word = if used {
                self.bitmap[w]
            } else {
                !self.bitmap[w]
            };
            let hits = word & (u64::MAX << (i % WORD_BITS));
            if hits != 0 {
                let found = w * WORD_BITS + hits.trailing_zeros() as usize;
                return (found < to).then_some(found);
            }
            i = (w + 1) * WORD_BITS;
        }
        None
    }

    /// Smallest index `>= i` whose physical address is `align`-page aligned.
    fn align_index(&self, i: usize, align: usize) -> Option<usize> {
        let base_pfn = self.base / PAGE;
        let pfn = base_pfn.checked_add(i as u64)?;
        let aligned = pfn.checked_next_multiple_of(align as u64)?;
        usize::try_from(aligned - base_pfn).ok()
    }

    /// First aligned start index in `[from, limit)` of `count` free pages.
    fn find_run(&self, from: usize, limit: usize, count: usize, align: usize) -> Option<usize> {
        let mut i = from;
        loop {
            i = self.align_index(i, align)?;
            if i >= limit || i.checked_add(count)? > self.npages {
                return None;
            }
            // Skip used pages (whole full words at once), then re-align.
            let free = self.find_bit(i, self.npages, false)?;
            if free != i {
                i = free;
                continue;
            }
            match self.find_bit(i, i + count, true) {
                None => return Some(i),
                Some(used) => i = used + 1,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::XorShift;
    use super::*;

    #[test]
    fn init_free_matches_add_free_range() {
        let ranges: &[&[(u64, u64)]] = &[
            &[(0, 0x10_0000)],
            &[(0x3000, 0x5000)],
            &[(0x1000, 0x2000), (0x2000, 0x41000), (0x80_0000, 0x100_0000)],
            &[(0x123, 0x40_0fff), (0x50_0000, 0x50_1000)],
            &[(0x3f000, 0x41000)],
            &[],
        ];
        for r in ranges {
            let mut a = FrameBitmap::empty();
            let mut b = FrameBitmap::empty();
            let words = 4096usize.div_ceil(64);
            a.init_free(0, 4096, Box::leak(vec![0u64; words].into_boxed_slice()), r)
                .unwrap();
            b.init(0, 4096, Box::leak(vec![0u64; words].into_boxed_slice()))
                .unwrap();
            for &(s, e) in *r {
                b.add_free_range(s, e);
            }
            assert_eq!(a.free_pages(), b.free_pages(), "{r:?}");
            for p in 0..4096u64 {
                assert_eq!(a.is_free(p * 4096), b.is_free(p * 4096), "{r:?} page {p}");
            }
        }
        let mut c = FrameBitmap::empty();
        let overlapping = [(0, 0x3000), (0x2000, 0x5000)];
        assert_eq!(
            c.init_free(
                0,
                64,
                Box::leak(vec![0u64; 1].into_boxed_slice()),
                &overlapping
            ),
            Err(FrameError::OutOfRange)
        );
    }
    use std::vec;
    use std::vec::Vec;

    fn storage(npages: usize) -> &'static mut [u64] {
        Box::leak(vec![0u64; npages.div_ceil(64)].into_boxed_slice())
    }

    /// A bitmap over `npages` pages at `base`, all free.
    fn all_free(base: u64, npages: usize) -> FrameBitmap {
        let mut fb = FrameBitmap::empty();
        fb.init(base, npages, storage(npages)).unwrap();
        fb.add_free_range(base, base + npages as u64 * PAGE);
        fb
    }

    #[test]
    fn init_starts_used_and_checks_storage() {
        let mut fb = FrameBitmap::empty();
        assert_eq!(fb.total_pages(), 0);
        assert_eq!(fb.alloc(1, 1), None);
        let small: &'static mut [u64] = Box::leak(vec![0u64; 1].into_boxed_slice());
        assert_eq!(fb.init(0, 65, small), Err(FrameError::BitmapTooSmall));
        assert_eq!(fb.init(0x1001, 8, storage(8)), Err(FrameError::Misaligned));
        assert_eq!(
            fb.init(u64::MAX - 0xfff, 2, storage(2)),
            Err(FrameError::OutOfRange)
        );
        fb.init(0x10_0000, 100, storage(100)).unwrap();
        assert_eq!(fb.total_pages(), 100);
        assert_eq!(fb.free_pages(), 0);
        assert!(!fb.is_free(0x10_0000));
        assert_eq!(fb.alloc(1, 1), None);
    }

    #[test]
    fn alloc_free_patterns() {
        let base = 0x4000_0000;
        let mut fb = all_free(base, 130);
        assert_eq!(fb.free_pages(), 130);
        let a = fb.alloc(1, 1).unwrap();
        let b = fb.alloc(3, 1).unwrap();
        let c = fb.alloc(70, 1).unwrap();
        assert_eq!(a, base);
        assert_eq!(b, base + PAGE);
        assert_eq!(c, base + 4 * PAGE);
        assert_eq!(fb.free_pages(), 130 - 74);
        for p in 0..74 {
            assert!(!fb.is_free(base + p * PAGE));
        }
        assert!(fb.is_free(base + 74 * PAGE));
        fb.free(b, 3).unwrap();
        assert!(fb.is_free(b) && fb.is_free(b + 2 * PAGE));
        assert_eq!(fb.free_pages(), 130 - 71);
        fb.free(a, 1).unwrap();
        fb.free(c, 70).unwrap();
        assert_eq!(fb.free_pages(), 130);
        // A run spanning several words.
        let big = fb.alloc(130, 1).unwrap();
        assert_eq!(big, base);
        assert_eq!(fb.free_pages(), 0);
        assert_eq!(fb.alloc(1, 1), None);
        assert_eq!(fb.alloc(0, 1), None);
    }

    #[test]
    fn alignment_honoured() {
        // Base deliberately not aligned to anything bigger than a page.
        let base = 0x10_3000;
        let mut fb = all_free(base, 300);
        fb.alloc(1, 1).unwrap();
        for align in [1usize, 2, 4, 8, 16, 32, 64] {
            let a = fb.alloc(3, align).unwrap();
            assert_eq!(a % (align as u64 * PAGE), 0, "align {align}");
        }
        assert_eq!(fb.alloc(1, 3), None, "non power of two");
        assert_eq!(fb.alloc(1, 0), None, "zero alignment");
    }

    #[test]
    fn two_mib_aligned_512_pages() {
        let base = 0x10_3000;
        let npages = 2048;
        let mut fb = all_free(base, npages);
        fb.alloc(5, 1).unwrap();
        let a = fb.alloc(512, 512).unwrap();
        assert_eq!(a % (2 << 20), 0);
        assert!(a >= base && a + 512 * PAGE <= base + npages as u64 * PAGE);
        for p in 0..512 {
            assert!(!fb.is_free(a + p * PAGE));
        }
        let b = fb.alloc(512, 512).unwrap();
        assert_eq!(b % (2 << 20), 0);
        assert_ne!(a, b);
        // 2048 pages starting at 0x103000 contain exactly three aligned 2 MiB runs
        // (0x200000, 0x400000, 0x600000); the last ends at 0x800000 <= 0x903000.
        assert!(fb.alloc(512, 512).is_some());
        assert_eq!(fb.alloc(512, 512), None);
    }

    #[test]
    fn exhaustion_returns_none() {
        let mut fb = all_free(0, 64);
        for i in 0..64 {
            assert_eq!(fb.alloc(1, 1), Some(i * PAGE));
        }
        assert_eq!(fb.alloc(1, 1), None);
        fb.free(10 * PAGE, 1).unwrap();
        fb.free(12 * PAGE, 1).unwrap();
        assert_eq!(fb.alloc(2, 1), None, "free pages exist but not contiguous");
        assert_eq!(fb.alloc(1, 1), Some(10 * PAGE));
    }

    #[test]
    fn double_free_detected_and_state_unchanged() {
        let mut fb = all_free(0x1000, 100);
        let a = fb.alloc(10, 1).unwrap();
        fb.free(a + 4 * PAGE, 1).unwrap();
        let before: Vec<u64> = fb.bitmap.to_vec();
        let free_before = fb.free_pages();
        assert_eq!(fb.free(a, 10), Err(FrameError::DoubleFree));
        assert_eq!(fb.free(a + 4 * PAGE, 1), Err(FrameError::DoubleFree));
        assert_eq!(fb.free(a + 1, 1), Err(FrameError::Misaligned));
        assert_eq!(fb.free(0, 1), Err(FrameError::OutOfRange));
        assert_eq!(fb.free(a, 101), Err(FrameError::OutOfRange));
        assert_eq!(fb.free(0x1000 + 100 * PAGE, 1), Err(FrameError::OutOfRange));
        assert_eq!(
            fb.free(!(PAGE - 1), usize::MAX),
            Err(FrameError::OutOfRange)
        );
        assert_eq!(fb.bitmap.to_vec(), before);
        assert_eq!(fb.free_pages(), free_before);
        fb.free(a, 4).unwrap();
        fb.free(a + 5 * PAGE, 5).unwrap();
        assert_eq!(fb.free_pages(), 100);
    }

    #[test]
    fn freed_pages_are_reused_first() {
        let mut fb = all_free(0, 8);
        let first: Vec<u64> = (0..6).map(|_| fb.alloc(1, 1).unwrap()).collect();
        assert_eq!(first, (0..6).map(|i| i * PAGE).collect::<Vec<_>>());
        fb.free(2 * PAGE, 1).unwrap();
        fb.free(0, 1).unwrap();
        // The lowest freed page comes back first, then the search goes on...
        assert_eq!(fb.alloc(1, 1), Some(0));
        assert_eq!(fb.alloc(1, 1), Some(2 * PAGE));
        assert_eq!(fb.alloc(1, 1), Some(6 * PAGE));
        assert_eq!(fb.alloc(1, 1), Some(7 * PAGE));
        assert_eq!(fb.alloc(1, 1), None);
        // ...and wraps around when the end is full.
        fb.free(3 * PAGE, 1).unwrap();
        assert_eq!(fb.alloc(1, 1), Some(3 * PAGE));
    }

    #[test]
    fn wrap_finds_run_before_cursor() {
        let mut fb = all_free(0, 128);
        fb.alloc(100, 1).unwrap();
        fb.alloc(20, 1).unwrap();
        fb.free(0, 50).unwrap();
        // Only 8 pages after the cursor; the 30-page run must come from the wrap.
        assert_eq!(fb.alloc(30, 1), Some(0));
    }

    #[test]
    fn add_free_range_clips_and_shrinks() {
        let base = 0x10_0000;
        let mut fb = FrameBitmap::empty();
        fb.init(base, 16, storage(16)).unwrap();
        // Partial pages at both ends are not freed.
        fb.add_free_range(base + 0x800, base + 3 * PAGE + 0x7ff);
        assert!(!fb.is_free(base));
        assert!(fb.is_free(base + PAGE) && fb.is_free(base + 2 * PAGE));
        assert!(!fb.is_free(base + 3 * PAGE));
        assert_eq!(fb.free_pages(), 2);
        // Overlapping and repeated ranges do not double count.
        fb.add_free_range(base, base + 3 * PAGE);
        assert_eq!(fb.free_pages(), 3);
        // Clipping on both sides of the covered range.
        fb.add_free_range(0, base + 5 * PAGE);
        assert_eq!(fb.free_pages(), 5);
        fb.add_free_range(base + 14 * PAGE, u64::MAX);
        assert_eq!(fb.free_pages(), 7);
        fb.add_free_range(0, base);
        fb.add_free_range(base + 16 * PAGE, u64::MAX);
        fb.add_free_range(base + 9 * PAGE, base + 8 * PAGE);
        fb.add_free_range(base + 0x100, base + 0x200);
        assert_eq!(fb.free_pages(), 7);
        assert!(!fb.is_free(base + 16 * PAGE));
        assert!(!fb.is_free(base - PAGE));
    }

    #[test]
    fn reserve_range_rounds_outward() {
        let base = 0x20_0000;
        let mut fb = all_free(base, 16);
        fb.reserve_range(base + PAGE + 0x10, base + 2 * PAGE + 1);
        assert!(fb.is_free(base));
        assert!(!fb.is_free(base + PAGE) && !fb.is_free(base + 2 * PAGE));
        assert!(fb.is_free(base + 3 * PAGE));
        assert_eq!(fb.free_pages(), 14);
        fb.reserve_range(base + PAGE, base + 4 * PAGE);
        assert_eq!(fb.free_pages(), 13);
        fb.reserve_range(0, base + PAGE);
        fb.reserve_range(base + 15 * PAGE, u64::MAX);
        assert_eq!(fb.free_pages(), 11);
        fb.reserve_range(u64::MAX - 5, u64::MAX);
        assert_eq!(fb.free_pages(), 11);
        assert_eq!(fb.alloc(1, 1), Some(base + 4 * PAGE));
    }

    /// Brute force: is there an aligned run of `count` free pages in the model?
    fn model_has_run(model: &[bool], base: u64, count: usize, align: usize) -> bool {
        (0..model.len()).any(|i| {
            (base / PAGE + i as u64).is_multiple_of(align as u64)
                && i + count <= model.len()
                && model[i..i + count].iter().all(|&free| free)
        })
    }

    #[test]
    fn randomized_against_model() {
        let base = 0x7_3000;
        let npages = 517;
        let mut fb = FrameBitmap::empty();
        fb.init(base, npages, storage(npages)).unwrap();
        let mut model = vec![false; npages];
        let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
        let mut live: Vec<(u64, usize)> = Vec::new();
        for step in 0..20_000 {
            match rng.below(10) {
                0..=3 => {
                    let max = if rng.below(8) == 0 { 64 } else { 6 };
                    let count = 1 + rng.below(max) as usize;
                    let align = 1 << rng.below(5);
                    match fb.alloc(count, align) {
                        Some(a) => {
                            assert_eq!(a % (align as u64 * PAGE), 0);
                            let i = ((a - base) / PAGE) as usize;
                            assert!(model[i..i + count].iter().all(|&f| f), "step {step}");
                            model[i..i + count].fill(false);
                            live.push((a, count));
                        }
                        None => assert!(!model_has_run(&model, base, count, align), "step {step}"),
                    }
                }
                4..=6 if !live.is_empty() => {
                    let (a, count) = live.swap_remove(rng.below(live.len() as u64) as usize);
                    fb.free(a, count).unwrap();
                    let i = ((a - base) / PAGE) as usize;
                    model[i..i + count].fill(true);
                }
                7 => {
                    // Free of something not allocated (or partly free): either it is
                    // entirely used in the model (then it must succeed) or rejected.
                    let i = rng.below(npages as u64) as usize;
                    let count = 1 + rng.below(4) as usize;
                    let a = base + i as u64 * PAGE;
                    let before = fb.bitmap.to_vec();
                    let fits = i + count <= npages;
                    let res = fb.free(a, count);
                    if !fits {
                        assert_eq!(res, Err(FrameError::OutOfRange));
                    } else if model[i..i + count].iter().any(|&f| f) {
                        assert_eq!(res, Err(FrameError::DoubleFree));
                        assert_eq!(fb.bitmap.to_vec(), before);
                    } else {
                        // Legitimately frees pages (e.g. reserved or part of a live
                        // allocation): apply to the model and forget overlapping allocations.
                        res.unwrap();
                        model[i..i + count].fill(true);
                        live.retain(|&(la, lc)| {
                            let li = ((la - base) / PAGE) as usize;
                            li + lc <= i || li >= i + count
                        });
                        // Pages of split allocations that stay used are now unowned; fine.
                    }
                }
                8 => {
                    let s = base + rng.below(npages as u64 * PAGE + 2 * PAGE);
                    let e = s + rng.below(40 * PAGE);
                    fb.add_free_range(s.saturating_sub(PAGE), e);
                    let lo = s.saturating_sub(PAGE).max(base).next_multiple_of(PAGE);
                    let hi = e.min(base + npages as u64 * PAGE) & !(PAGE - 1);
                    let mut p = lo;
                    while p < hi {
                        model[((p - base) / PAGE) as usize] = true;
                        p += PAGE;
                    }
                    live.retain(|&(la, lc)| la + lc as u64 * PAGE <= lo || la >= hi);
                }
                _ => {
                    let s = base + rng.below(npages as u64 * PAGE);
                    let e = s + rng.below(8 * PAGE);
                    fb.reserve_range(s, e);
                    let lo = s & !(PAGE - 1);
                    let hi = e.next_multiple_of(PAGE).min(base + npages as u64 * PAGE);
                    let mut p = lo;
                    while p < hi {
                        model[((p - base) / PAGE) as usize] = false;
                        p += PAGE;
                    }
                }
            }
            assert_eq!(fb.free_pages(), model.iter().filter(|&&f| f).count());
            if step % 97 == 0 {
                for (i, &f) in model.iter().enumerate() {
                    assert_eq!(
                        fb.is_free(base + i as u64 * PAGE),
                        f,
                        "step {step} page {i}"
                    );
                }
            }
        }
    }
}
