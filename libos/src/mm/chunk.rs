//! Small-object heap: power-of-two free lists on top of whole pages.
//!
//! Following Libra, requests up to [`MAX_CHUNK`] bytes are served from one
//! intrusive free list per power-of-two size class (16 … 2048 bytes); anything
//! larger goes straight to whole pages from a [`PageSource`]. Power-of-two
//! classes make every chunk naturally aligned to its own size, so alignment
//! requests up to the class size cost nothing, and alloc/free are O(1).
//!
//! Chunk pages are never returned to the source: once a page has been split for
//! a class it stays in that class's free list. Tracking per-page occupancy would
//! need either a header in every page (wasting half a page for 2048-byte chunks)
//! or a side table, and a library OS running one application reaches a steady
//! state quickly. Large (page) allocations are returned to the source on dealloc.
//!
//! Zero-size layouts get a dangling, well-aligned, non-null pointer and are
//! ignored on dealloc; they take no memory.

use core::alloc::Layout;
use core::ptr::{self, NonNull};

use super::frame::PAGE_SIZE;

/// Where the heap gets whole pages (the kernel backs this with the frame bitmap
/// and its identity map).
///
/// # Safety
///
/// The heap writes into the memory it is given from safe code, so implementors
/// must guarantee that a pointer returned by `alloc_pages(count)` is aligned to
/// 4096, valid for reads and writes of `count * 4096` bytes, and not used by
/// anyone else until it is handed back through `free_pages` with the same `count`.
pub unsafe trait PageSource {
    /// `count` (≥ 1) contiguous, 4 KiB-aligned pages, or `None` when out of memory.
    fn alloc_pages(&mut self, count: usize) -> Option<NonNull<u8>>;
    /// Gives back pages obtained from `alloc_pages` with the same `count`.
    fn free_pages(&mut self, ptr: NonNull<u8>, count: usize);
}

/// Smallest chunk: must hold a free-list link, and 16 keeps `u128`/SSE data aligned.
pub const MIN_CHUNK: usize = 16;
/// Largest chunk; bigger requests take whole pages (a 4K class would just be a page).
pub const MAX_CHUNK: usize = 2048;
/// Number of size classes: 16, 32, 64, 128, 256, 512, 1024, 2048.
pub const NUM_CLASSES: usize =
    (MAX_CHUNK.trailing_zeros() - MIN_CHUNK.trailing_zeros() + 1) as usize;

const _: () = assert!(MIN_CHUNK >= size_of::<FreeChunk>() && MIN_CHUNK >= align_of::<FreeChunk>());
const _: () =
    assert!(MAX_CHUNK <= PAGE_SIZE && MIN_CHUNK.is_power_of_two() && MAX_CHUNK.is_power_of_two());

/// Bytes of chunks in class `class`.
pub const fn class_size(class: usize) -> usize {
    MIN_CHUNK << class
}

/// Counters for debugging and for the kernel's memory statistics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HeapStats {
    /// Bytes handed out and not yet freed, counted at their rounded size (class
    /// size or whole pages), i.e. what they really consume.
    pub bytes_in_use: usize,
    /// Pages currently obtained from the source (chunk pages + large allocations).
    pub pages_held: usize,
    /// Of `pages_held`, pages split into chunks (kept forever, see module docs).
    pub chunk_pages: usize,
    /// Free chunks sitting in each class's list, index 0 = 16 bytes.
    pub free_chunks: [usize; NUM_CLASSES],
}

/// Link stored in the first word of every free chunk.
struct FreeChunk {
    next: Option<NonNull<FreeChunk>>,
}

/// The heap: one intrusive free list per size class plus counters.
///
/// Not locked and not a `GlobalAlloc` itself: the kernel wraps it in an
/// interrupt-safe lock and passes its page source on every call.
pub struct Heap {
    heads: [Option<NonNull<FreeChunk>>; NUM_CLASSES],
    stats: HeapStats,
}

// SAFETY: the free lists only point into chunk pages the heap obtained from its
// `PageSource` and owns exclusively (nothing else references a free chunk), and
// the heap has no thread- or CPU-local state, so moving it to another thread
// moves that ownership with it.
unsafe impl Send for Heap {}

impl Default for Heap {
    fn default() -> Self {
        Self::new()
    }
}

impl Heap {
    /// An empty heap; it takes pages from the source lazily.
    pub const fn new() -> Self {
        Self {
            heads: [None; NUM_CLASSES],
            stats: HeapStats {
                bytes_in_use: 0,
                pages_held: 0,
                chunk_pages: 0,
                free_chunks: [0; NUM_CLASSES],
            },
        }
    }

    /// Allocates memory for `layout`; null when out of memory or when a large
    /// allocation asks for alignment above 4096 (pages only guarantee 4096).
    ///
    /// `max(size, align)` up to [`MAX_CHUNK`] is served from the matching class
    /// (refilled by splitting one fresh page); larger sizes take
    /// `size.div_ceil(4096)` whole pages.
    pub fn alloc(&mut self, layout: Layout, src: &mut impl PageSource) -> *mut u8 {
        if layout.size() == 0 {
            return ptr::without_provenance_mut(layout.align());
        }
        match class_of(layout) {
            Some(class) => self
                .alloc_chunk(class, src)
                .map_or(ptr::null_mut(), NonNull::as_ptr),
            None => self.alloc_large(layout, src),
        }
    }

    /// Frees memory from [`alloc`](Self::alloc). Chunks go back to their class
    /// list; large allocations go back to `src`.
    ///
    /// # Safety
    ///
    /// `ptr` must have been returned (non-null) by `alloc` on this heap with the
    /// same `layout`, not freed since, and no longer be used by the caller; for
    /// large allocations `src` must be the source the pages came from.
    pub unsafe fn dealloc(&mut self, ptr: *mut u8, layout: Layout, src: &mut impl PageSource) {
        if layout.size() == 0 {
            return;
        }
        let Some(chunk) = NonNull::new(ptr) else {
            debug_assert!(false, "dealloc of null");
            return;
        };
        match class_of(layout) {
            Some(class) => {
                // SAFETY: by the caller's contract `chunk` is a chunk of class
                // `class` carved from a page this heap owns, and the caller no
                // longer uses it, so it may hold a free-list link again.
                unsafe { self.push(class, chunk) };
                self.stats.bytes_in_use -= class_size(class);
            }
            None => {
                let pages = pages_for(layout.size());
                src.free_pages(chunk, pages);
                self.stats.pages_held -= pages;
                self.stats.bytes_in_use -= pages * PAGE_SIZE;
            }
        }
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> HeapStats {
        self.stats
    }

    fn alloc_chunk(&mut self, class: usize, src: &mut impl PageSource) -> Option<NonNull<u8>> {
        if self.heads[class].is_none() {
            self.refill(class, src)?;
        }
        let chunk = self.pop(class)?;
        self.stats.bytes_in_use += class_size(class);
        Some(chunk)
    }

    fn alloc_large(&mut self, layout: Layout, src: &mut impl PageSource) -> *mut u8 {
        if layout.align() > PAGE_SIZE {
            return ptr::null_mut();
        }
        let pages = pages_for(layout.size());
        let Some(p) = src.alloc_pages(pages) else {
            return ptr::null_mut();
        };
        debug_assert!(p.as_ptr().addr().is_multiple_of(PAGE_SIZE));
        self.stats.pages_held += pages;
        self.stats.bytes_in_use += pages * PAGE_SIZE;
        p.as_ptr()
    }

    /// Takes one page from `src` and splits it into chunks of `class`.
    fn refill(&mut self, class: usize, src: &mut impl PageSource) -> Option<()> {
        let page = src.alloc_pages(1)?;
        debug_assert!(page.as_ptr().addr().is_multiple_of(PAGE_SIZE));
        self.stats.pages_held += 1;
        self.stats.chunk_pages += 1;
        let size = class_size(class);
        // Push in reverse so the lowest address is handed out first.
        for i in (0..PAGE_SIZE / size).rev() {
            // SAFETY: the page is ours (PageSource contract: 4K-aligned, valid for
            // 4096 bytes, unshared) and `i * size + size <= 4096`, so each chunk
            // lies inside it, is `size`-aligned (≥ MIN_CHUNK) and is unused.
            unsafe { self.push(class, page.add(i * size)) };
        }
        Some(())
    }

    /// # Safety
    ///
    /// `chunk` must be valid for writes of `class_size(class)` bytes, aligned to
    /// it, owned by this heap and not in use by anyone (nor already in a list).
    unsafe fn push(&mut self, class: usize, chunk: NonNull<u8>) {
        let node = chunk.cast::<FreeChunk>();
        // SAFETY: by the contract the chunk is writable, at least MIN_CHUNK bytes
        // and MIN_CHUNK-aligned, which the const assertions show is enough for a
        // `FreeChunk`; nobody else accesses it.
        unsafe {
            node.write(FreeChunk {
                next: self.heads[class],
            });
        }
        self.heads[class] = Some(node);
        self.stats.free_chunks[class] += 1;
    }

    fn pop(&mut self, class: usize) -> Option<NonNull<u8>> {
        let node = self.heads[class]?;
        // SAFETY: every node in a list was written by `push` into a chunk the heap
        // owns, and a chunk is only handed out after being popped, so nothing has
        // overwritten the link.
        self.heads[class] = unsafe { node.read().next };
        self.stats.free_chunks[class] -= 1;
        Some(node.cast())
    }
}

/// Size class for `layout`, or `None` if it needs whole pages.
fn class_of(layout: Layout) -> Option<usize> {
    let size = layout.size().max(layout.align()).max(MIN_CHUNK);
    if size > MAX_CHUNK {
        return None;
    }
    Some((size.next_power_of_two().trailing_zeros() - MIN_CHUNK.trailing_zeros()) as usize)
}

fn pages_for(size: usize) -> usize {
    size.div_ceil(PAGE_SIZE)
}

#[cfg(test)]
mod tests {
    use super::super::testutil::XorShift;
    use super::*;
    use std::collections::HashMap;
    use std::vec::Vec;

    /// Pages from the host allocator, counted and checked on return.
    #[derive(Default)]
    struct TestSource {
        live: HashMap<usize, (NonNull<u8>, usize)>,
        pages: usize,
        limit: Option<usize>,
    }

    // SAFETY: `alloc_pages` returns fresh `std::alloc` blocks of exactly
    // `count * 4096` bytes aligned to 4096, owned by the caller until freed.
    unsafe impl PageSource for TestSource {
        fn alloc_pages(&mut self, count: usize) -> Option<NonNull<u8>> {
            assert!(count > 0);
            if self.limit.is_some_and(|l| self.pages + count > l) {
                return None;
            }
            let layout = Layout::from_size_align(count * PAGE_SIZE, PAGE_SIZE).unwrap();
            // SAFETY: the layout has non-zero size.
            let p = NonNull::new(unsafe { std::alloc::alloc(layout) })?;
            self.live.insert(p.as_ptr().addr(), (p, count));
            self.pages += count;
            Some(p)
        }

        fn free_pages(&mut self, ptr: NonNull<u8>, count: usize) {
            assert_eq!(
                self.live.remove(&ptr.as_ptr().addr()),
                Some((ptr, count)),
                "bad free"
            );
            self.pages -= count;
            let layout = Layout::from_size_align(count * PAGE_SIZE, PAGE_SIZE).unwrap();
            // SAFETY: allocated above with this very layout and not yet freed.
            unsafe { std::alloc::dealloc(ptr.as_ptr(), layout) };
        }
    }

    impl Drop for TestSource {
        fn drop(&mut self) {
            for &(p, count) in self.live.values() {
                let layout = Layout::from_size_align(count * PAGE_SIZE, PAGE_SIZE).unwrap();
                // SAFETY: every entry of `live` is an outstanding block allocated
                // with this layout; the heap using it is gone by now (tests drop
                // the heap first or never touch its memory again).
                unsafe { std::alloc::dealloc(p.as_ptr(), layout) };
            }
        }
    }

    fn layout(size: usize, align: usize) -> Layout {
        Layout::from_size_align(size, align).unwrap()
    }

    #[test]
    fn heap_is_send() {
        fn assert_send<T: Send>() {}
        assert_send::<Heap>();
    }

    #[test]
    fn every_class() {
        let mut src = TestSource::default();
        let mut heap = Heap::new();
        for class in 0..NUM_CLASSES {
            let size = class_size(class);
            let smallest = if class == 0 { 1 } else { size / 2 + 1 };
            for req in [smallest, size] {
                let before = heap.stats();
                let p = heap.alloc(layout(req, 1), &mut src);
                assert!(!p.is_null());
                assert!(
                    p.addr().is_multiple_of(size),
                    "class {class} chunk not size-aligned"
                );
                let after = heap.stats();
                assert_eq!(after.bytes_in_use, before.bytes_in_use + size);
                // SAFETY: fresh allocation of `req` bytes.
                unsafe { ptr::write_bytes(p, 0xAB, req) };
                // SAFETY: allocated just above with this layout.
                unsafe { heap.dealloc(p, layout(req, 1), &mut src) };
                assert_eq!(heap.stats().bytes_in_use, before.bytes_in_use);
            }
            // One page per class; both requests reused the same chunk.
            assert_eq!(heap.stats().free_chunks[class], PAGE_SIZE / size);
        }
        let s = heap.stats();
        assert_eq!(s.chunk_pages, NUM_CLASSES);
        assert_eq!(s.pages_held, NUM_CLASSES);
        assert_eq!(src.pages, NUM_CLASSES);
        assert_eq!(s.bytes_in_use, 0);
    }

    #[test]
    fn refill_splits_one_page_in_address_order() {
        let mut src = TestSource::default();
        let mut heap = Heap::new();
        let ptrs: Vec<*mut u8> = (0..PAGE_SIZE / 64)
            .map(|_| heap.alloc(layout(64, 8), &mut src))
            .collect();
        assert_eq!(src.pages, 1);
        for w in ptrs.windows(2) {
            assert_eq!(w[1].addr() - w[0].addr(), 64);
        }
        assert_eq!(heap.stats().free_chunks[2], 0);
        let next = heap.alloc(layout(64, 8), &mut src);
        assert_eq!(src.pages, 2);
        assert_eq!(heap.stats().free_chunks[2], PAGE_SIZE / 64 - 1);
        for p in ptrs.into_iter().chain([next]) {
            // SAFETY: allocated above with this layout.
            unsafe { heap.dealloc(p, layout(64, 8), &mut src) };
        }
        // Chunk pages stay in their class (see module docs).
        let s = heap.stats();
        assert_eq!((s.pages_held, src.pages), (2, 2));
        assert_eq!(s.free_chunks[2], 2 * PAGE_SIZE / 64);
        // Reuse needs no new page.
        let again: Vec<*mut u8> = (0..2 * PAGE_SIZE / 64)
            .map(|_| heap.alloc(layout(64, 8), &mut src))
            .collect();
        assert_eq!(src.pages, 2);
        for p in again {
            // SAFETY: allocated above with this layout.
            unsafe { heap.dealloc(p, layout(64, 8), &mut src) };
        }
    }

    #[test]
    fn alignment_up_to_4096() {
        let mut src = TestSource::default();
        let mut heap = Heap::new();
        for shift in 0..=12 {
            let align = 1usize << shift;
            for size in [1, 24, 100, 3000, 5000, 9000] {
                let l = layout(size, align);
                let p = heap.alloc(l, &mut src);
                assert!(!p.is_null());
                assert!(p.addr().is_multiple_of(align), "size {size} align {align}");
                // SAFETY: fresh allocation of `size` bytes.
                unsafe { ptr::write_bytes(p, 0x5A, size) };
                // SAFETY: allocated just above with this layout.
                unsafe { heap.dealloc(p, l, &mut src) };
            }
        }
        // Small size, page alignment: served by whole pages (class would be 4096).
        let before = src.pages;
        let p = heap.alloc(layout(8, 4096), &mut src);
        assert_eq!(src.pages, before + 1);
        // SAFETY: allocated just above with this layout.
        unsafe { heap.dealloc(p, layout(8, 4096), &mut src) };
        assert_eq!(src.pages, before);
        // Above page alignment is unsupported.
        assert!(heap.alloc(layout(8, 8192), &mut src).is_null());
        assert!(heap.alloc(layout(10_000, 8192), &mut src).is_null());
        assert_eq!(heap.stats().bytes_in_use, 0);
    }

    #[test]
    fn large_allocs_take_and_return_pages() {
        let mut src = TestSource::default();
        let mut heap = Heap::new();
        let l = layout(MAX_CHUNK + 1, 8);
        let a = heap.alloc(l, &mut src);
        assert_eq!(src.pages, 1);
        let b = heap.alloc(layout(3 * PAGE_SIZE + 1, 16), &mut src);
        assert_eq!(src.pages, 5);
        assert!(a.addr().is_multiple_of(PAGE_SIZE) && b.addr().is_multiple_of(PAGE_SIZE));
        let s = heap.stats();
        assert_eq!(
            (s.pages_held, s.chunk_pages, s.bytes_in_use),
            (5, 0, 5 * PAGE_SIZE)
        );
        // SAFETY: allocated above with these layouts.
        unsafe {
            heap.dealloc(b, layout(3 * PAGE_SIZE + 1, 16), &mut src);
            heap.dealloc(a, l, &mut src);
        }
        assert_eq!(src.pages, 0);
        assert!(src.live.is_empty());
        assert_eq!(heap.stats(), HeapStats::default());
    }

    #[test]
    fn out_of_memory_is_null() {
        let mut src = TestSource::default();
        src.limit = Some(2);
        let mut heap = Heap::new();
        assert!(heap.alloc(layout(3 * PAGE_SIZE, 8), &mut src).is_null());
        let big = heap.alloc(layout(PAGE_SIZE, 8), &mut src);
        assert!(!big.is_null());
        let small = heap.alloc(layout(2048, 8), &mut src);
        let small2 = heap.alloc(layout(2048, 8), &mut src);
        assert!(!small.is_null() && !small2.is_null());
        assert!(heap.alloc(layout(2048, 8), &mut src).is_null());
        assert!(heap.alloc(layout(16, 8), &mut src).is_null());
        assert_eq!(heap.stats().bytes_in_use, PAGE_SIZE + 2 * 2048);
        // SAFETY: allocated above with these layouts.
        unsafe {
            heap.dealloc(big, layout(PAGE_SIZE, 8), &mut src);
            heap.dealloc(small, layout(2048, 8), &mut src);
            heap.dealloc(small2, layout(2048, 8), &mut src);
        }
        assert!(!heap.alloc(layout(16, 8), &mut src).is_null());
    }

    #[test]
    fn zero_size_is_dangling_and_free() {
        let mut src = TestSource::default();
        let mut heap = Heap::new();
        for align in [1, 8, 64, 4096, 1 << 20] {
            let p = heap.alloc(layout(0, align), &mut src);
            assert!(!p.is_null());
            assert!(p.addr().is_multiple_of(align));
            // SAFETY: allocated just above with this layout.
            unsafe { heap.dealloc(p, layout(0, align), &mut src) };
        }
        assert_eq!(src.pages, 0);
        assert_eq!(heap.stats(), HeapStats::default());
    }

    fn check(p: *mut u8, l: Layout, pattern: u8) {
        // SAFETY: `p` is a live allocation of `l.size()` bytes that we filled.
        let bytes = unsafe { std::slice::from_raw_parts(p, l.size()) };
        assert!(
            bytes.iter().all(|&b| b == pattern),
            "allocation {p:p} was overwritten"
        );
    }

    #[test]
    fn random_alloc_free_no_overlap() {
        let mut src = TestSource::default();
        let mut heap = Heap::new();
        let mut rng = XorShift(0x2545_F491_4F6C_DD1D);
        let mut live: Vec<(*mut u8, Layout, u8)> = Vec::new();
        let mut expected_bytes = 0usize;
        for step in 0..30_000u32 {
            if live.is_empty() || rng.below(100) < 55 {
                let size = match rng.below(10) {
                    0 => 1 + (rng.below(20_000) as usize),
                    1 => 0,
                    _ => 1 + (rng.below(MAX_CHUNK as u64) as usize),
                };
                let align = 1usize << (rng.below(13) as usize);
                let l = layout(size, align);
                let p = heap.alloc(l, &mut src);
                assert!(!p.is_null());
                assert!(p.addr().is_multiple_of(align));
                let pattern = step as u8 | 1;
                if size > 0 {
                    // SAFETY: fresh allocation of `size` bytes.
                    unsafe { ptr::write_bytes(p, pattern, size) };
                    expected_bytes += match class_of(l) {
                        Some(c) => class_size(c),
                        None => pages_for(size) * PAGE_SIZE,
                    };
                }
                live.push((p, l, pattern));
            } else {
                let (p, l, pattern) = live.swap_remove(rng.below(live.len() as u64) as usize);
                check(p, l, pattern);
                if l.size() > 0 {
                    expected_bytes -= match class_of(l) {
                        Some(c) => class_size(c),
                        None => pages_for(l.size()) * PAGE_SIZE,
                    };
                }
                // SAFETY: allocated earlier with this layout, removed from `live`.
                unsafe { heap.dealloc(p, l, &mut src) };
            }
            assert_eq!(heap.stats().bytes_in_use, expected_bytes);
            if step % 1000 == 0 {
                for &(p, l, pattern) in &live {
                    check(p, l, pattern);
                }
                let mut ranges: Vec<(usize, usize)> = live
                    .iter()
                    .filter(|(_, l, _)| l.size() > 0)
                    .map(|(p, l, _)| (p.addr(), p.addr() + l.size()))
                    .collect();
                ranges.sort_unstable();
                for w in ranges.windows(2) {
                    assert!(w[0].1 <= w[1].0, "overlap {:x?}", w);
                }
            }
        }
        let s = heap.stats();
        assert_eq!(s.pages_held, src.pages);
        for (p, l, pattern) in live.drain(..) {
            check(p, l, pattern);
            // SAFETY: allocated earlier with this layout.
            unsafe { heap.dealloc(p, l, &mut src) };
        }
        let s = heap.stats();
        assert_eq!(s.bytes_in_use, 0);
        // Only chunk pages remain; all large allocations went back.
        assert_eq!(s.pages_held, s.chunk_pages);
        assert_eq!(src.pages, s.chunk_pages);
        let free_bytes: usize = (0..NUM_CLASSES)
            .map(|c| s.free_chunks[c] * class_size(c))
            .sum();
        assert_eq!(free_bytes, s.chunk_pages * PAGE_SIZE);
    }
}
