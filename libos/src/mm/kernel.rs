//! The kernel's memory: the global frame bitmap, the global allocator, the
//! kernel address space and kernel stacks with guard pages.
//!
//! Kernel memory is the direct map: guest-physical `pa` is at
//! `DIRECT_MAP + pa` (upper half), so the lower half is the program's.

use core::alloc::{GlobalAlloc, Layout};
use core::ptr::NonNull;

use super::chunk::{Heap, HeapStats, PageSource};
use super::frame::{FrameBitmap, PAGE_SIZE};
use super::paging::{AddressSpace, PageSize, PteFlags, TableAlloc};
use super::{phys_to_virt, virt_to_phys};
use crate::arch::cpu;
use crate::sync::IrqLock;

static FRAMES: IrqLock<FrameBitmap> = IrqLock::new(FrameBitmap::empty());
static KERNEL_SPACE: IrqLock<Option<AddressSpace>> = IrqLock::new(None);

/// Physical memory figures.
#[derive(Debug, Clone, Copy)]
pub struct MemStats {
    /// Pages covered by the bitmap (RAM and holes).
    pub total_pages: usize,
    /// Pages free.
    pub free_pages: usize,
    /// The heap's own counters.
    pub heap: HeapStats,
}

/// Current memory figures.
pub fn stats() -> MemStats {
    let f = FRAMES.lock();
    MemStats {
        total_pages: f.total_pages(),
        free_pages: f.free_pages(),
        heap: HEAP.0.lock().stats(),
    }
}

/// Sets up the frame bitmap over `[0, top)`: the bitmap itself is placed at
/// `bitmap_at` (page-aligned, identity-mapped, not in `reserved`), RAM ranges
/// are freed, then `reserved` ranges (kernel, boot data, bitmap) are taken.
///
/// # Safety
/// `ram` must describe real guest RAM, and `bitmap_at..+top/4K/8` must be
/// unused RAM that nothing else will touch.
pub unsafe fn init_frames(ram: &[(u64, u64)], reserved: &[(u64, u64)], top: u64, bitmap_at: u64) {
    let npages = (top / PAGE_SIZE as u64) as usize;
    let words = npages.div_ceil(64);
    // SAFETY: the caller guarantees the bitmap's memory is unused RAM; the
    // direct map makes it reachable.
    let bitmap =
        unsafe { core::slice::from_raw_parts_mut(phys_to_virt(bitmap_at) as *mut u64, words) };
    let mut free = [(0u64, 0u64); 8];
    let n = ram.len().min(free.len());
    for (slot, &(start, len)) in free.iter_mut().zip(ram) {
        *slot = (start, start + len);
    }
    free[..n].sort_unstable();
    let mut f = FRAMES.lock();
    f.init_free(0, npages, bitmap, &free[..n])
        .expect("RAM ranges from the VMM are disjoint and fit the bitmap");
    let mut fresh = bitmap_at + (words * 8) as u64;
    for &(start, end) in reserved {
        f.reserve_range(start, end);
        fresh = fresh.max(end);
    }
    f.reserve_range(bitmap_at, bitmap_at + (words * 8) as u64);
    FRESH_FROM.store(
        fresh.next_multiple_of(PAGE_SIZE as u64),
        core::sync::atomic::Ordering::Relaxed,
    );
}

/// Frames at or above this address have never been written since the VMM
/// created guest RAM (a zero-filled memfd): the allocator hands out the
/// lowest free frames first, and every frame that was ever allocated or
/// written (the boot data, reserved ranges freed later) lies below it.
/// Such a frame needs no zeroing, and zeroing it would cost a host page
/// fault through the direct map on top of the one the program's first
/// touch costs (docs/pvm.md).
static FRESH_FROM: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(u64::MAX);

/// One zero-filled frame: a never-used frame as it is, a reused one zeroed.
pub fn alloc_zeroed_frame() -> Option<u64> {
    use core::sync::atomic::Ordering::Relaxed;
    let (pa, fresh) = {
        let mut f = FRAMES.lock();
        let pa = f.alloc(1, 1)?;
        // Checked and moved under the allocator's lock, so no other
        // allocation slips between.
        let fresh = pa >= FRESH_FROM.fetch_max(pa + PAGE_SIZE as u64, Relaxed);
        (pa, fresh)
    };
    if !fresh {
        // SAFETY: a frame just allocated to us, reached through the direct map.
        unsafe { core::ptr::write_bytes(phys_to_virt(pa) as *mut u8, 0, PAGE_SIZE) };
    }
    Some(pa)
}

/// `count` contiguous frames aligned to `align_pages` pages, or `None`.
pub fn alloc_frames(count: usize, align_pages: usize) -> Option<u64> {
    let pa = FRAMES.lock().alloc(count, align_pages)?;
    // The caller will write them: they are not fresh any more.
    FRESH_FROM.fetch_max(
        pa + (count * PAGE_SIZE) as u64,
        core::sync::atomic::Ordering::Relaxed,
    );
    Some(pa)
}

/// Returns frames from [`alloc_frames`].
pub fn free_frames(addr: u64, count: usize) {
    // Frames freed without having been allocated (a reserved range such as
    // a loaded cache image) have been written too.
    FRESH_FROM.fetch_max(
        addr + (count * PAGE_SIZE) as u64,
        core::sync::atomic::Ordering::Relaxed,
    );
    if let Err(e) = FRAMES.lock().free(addr, count) {
        panic!("freeing frames {addr:#x}+{count}: {e:?}");
    }
}

/// Pages for the heap, straight from the frame bitmap.
struct Frames;

// SAFETY: frames come from the bitmap, which hands each page to one owner
// until it is freed; the direct map makes them valid, 4K-aligned pointers.
unsafe impl PageSource for Frames {
    fn alloc_pages(&mut self, count: usize) -> Option<NonNull<u8>> {
        alloc_frames(count, 1).and_then(|pa| NonNull::new(phys_to_virt(pa) as *mut u8))
    }

    fn free_pages(&mut self, ptr: NonNull<u8>, count: usize) {
        free_frames(virt_to_phys(ptr.as_ptr() as u64), count);
    }
}

/// The kernel heap: the chunk lists behind an interrupt-safe lock.
struct KernelHeap(IrqLock<Heap>);

// SAFETY: `Heap` returns memory it owns exclusively, correctly sized and
// aligned for the layout, and the lock serialises all access.
unsafe impl GlobalAlloc for KernelHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.0.lock().alloc(layout, &mut Frames)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: GlobalAlloc's contract: ptr came from `alloc` with `layout`.
        unsafe { self.0.lock().dealloc(ptr, layout, &mut Frames) }
    }
}

#[global_allocator]
static HEAP: KernelHeap = KernelHeap(IrqLock::new(Heap::new()));

/// Page-table frames from the bitmap, reached through the direct map.
struct Tables;

impl TableAlloc for Tables {
    fn alloc_table(&mut self) -> Option<u64> {
        let pa = alloc_frames(1, 1)?;
        // SAFETY: the frame was just allocated to us; the direct map reaches it.
        unsafe { core::ptr::write_bytes(phys_to_virt(pa) as *mut u8, 0, PAGE_SIZE) };
        Some(pa)
    }

    fn free_table(&mut self, pa: u64) {
        free_frames(pa, 1);
    }

    fn table(&mut self, pa: u64) -> &mut [u64; 512] {
        // SAFETY: `pa` is a page-table frame owned by the kernel address
        // space, in the direct map, and only touched under KERNEL_SPACE's lock.
        unsafe { &mut *(phys_to_virt(pa) as *mut [u64; 512]) }
    }
}

/// Flags of every kernel mapping. On a PVM host running the kernel natively
/// the kernel executes at hardware CPL 3 and reaches only user pages (the
/// host separates nothing for it anyway; see docs/pvm.md), so there kernel
/// pages carry the USER bit too.
pub fn kernel_rw() -> PteFlags {
    let f = PteFlags::PRESENT | PteFlags::WRITABLE | PteFlags::GLOBAL;
    if cpu::pvm_native() {
        f | PteFlags::USER
    } else {
        f
    }
}

/// Builds the kernel's own page tables and switches to them: the kernel image
/// readable, writable and executable with 4 KiB pages; the rest of RAM
/// writable and never executable, with 2 MiB pages where possible; page 0
/// unmapped so that null pointers fault.
pub fn init_paging(ram: &[(u64, u64)], kernel: (u64, u64)) {
    // `kernel` is the image's range in the direct map; work in physical terms.
    let kernel = (virt_to_phys(kernel.0), virt_to_phys(kernel.1));
    let rw = kernel_rw();
    let nx = rw | PteFlags::NO_EXECUTE;
    let kstart = kernel.0 & !0xfff;
    let kend = kernel.1.next_multiple_of(PAGE_SIZE as u64);
    let mut space = AddressSpace::new(&mut Tables).expect("no memory for the kernel page tables");
    for &(start, len) in ram {
        let (s, e) = (start.max(PAGE_SIZE as u64), start + len);
        // RAM below the kernel, the kernel, RAM above it.
        for (a, b, flags) in [
            (s, kstart.min(e), nx),
            (kstart.max(s), kend.min(e), rw),
            (kend.max(s), e, nx),
        ] {
            if a < b {
                if flags.contains(PteFlags::NO_EXECUTE) {
                    space.map_range(&mut Tables, phys_to_virt(a), a, b - a, flags)
                } else {
                    map_4k(&mut space, a, b, flags)
                }
                .expect("mapping kernel memory");
            }
        }
    }
    let root = space.root();
    // SAFETY: the new tables direct-map all RAM, including this code (kernel
    // image), the current stack (boot stack or a RAM frame) and all data,
    // at the addresses the VMM's boot tables gave them.
    unsafe { cpu::write_cr3(root) };
    *KERNEL_SPACE.lock() = Some(space);
}

/// Maps guest-physical `[a, b)` into the direct map with 4 KiB pages.
fn map_4k(
    space: &mut AddressSpace,
    a: u64,
    b: u64,
    flags: PteFlags,
) -> Result<(), super::paging::MapError> {
    let mut pa = a;
    while pa < b {
        space.map(&mut Tables, phys_to_virt(pa), pa, PageSize::Size4K, flags)?;
        pa += PAGE_SIZE as u64;
    }
    Ok(())
}

/// Looks up how the kernel maps `va`.
pub fn translate(va: u64) -> Option<super::paging::Translation> {
    KERNEL_SPACE.lock().as_ref()?.translate(&mut Tables, va)
}

/// Maps `len` bytes of device memory at guest-physical `pa` into the direct
/// map (uncached, never executable); returns its kernel address.
pub fn map_mmio(pa: u64, len: u64) -> Result<u64, super::paging::MapError> {
    let flags = kernel_rw() | PteFlags::NO_CACHE | PteFlags::WRITE_THROUGH | PteFlags::NO_EXECUTE;
    let mut ks = KERNEL_SPACE.lock();
    let space = ks.as_mut().ok_or(super::paging::MapError::NotMapped)?;
    map_4k(
        space,
        pa & !0xfff,
        (pa + len).next_multiple_of(PAGE_SIZE as u64),
        flags,
    )?;
    Ok(phys_to_virt(pa))
}

/// Maps one user page `va → pa` with `flags` in the one address space.
pub fn map_user_page(va: u64, pa: u64, flags: PteFlags) -> Result<(), crate::errno::Errno> {
    let mut ks = KERNEL_SPACE.lock();
    let space = ks.as_mut().ok_or(crate::errno::Errno::ENOMEM)?;
    space
        .map(&mut Tables, va, pa, PageSize::Size4K, flags)
        .map_err(|e| match e {
            super::paging::MapError::OutOfMemory => crate::errno::Errno::ENOMEM,
            _ => crate::errno::Errno::EEXIST,
        })
}

/// Unmaps every user page in `[va, va+len)`: owned frames are freed,
/// borrowed ones (file-cache pages) handed back to the cache, shared file
/// pages released (`mm::shared`).
pub fn unmap_user_range(va: u64, len: u64) {
    unmap_user_range_keep(va, len, &mut |_, pa| free_frames(pa, 1));
}

/// The most pages one `MADV_DONTNEED` zeroes where they stand (see
/// [`discard_anon`]); the rest are unmapped and freed, so a large discard
/// still gives its memory back.
const ZERO_IN_PLACE_MAX: usize = 32;

/// `MADV_DONTNEED` of private anonymous memory in `[va, va+len)`: the next
/// read of every page gives zeros. A page the program has used (accessed
/// bit set, up to [`ZERO_IN_PLACE_MAX`]) is zeroed where it stands and
/// stays mapped, marked [`PteFlags::ZEROED`]; every other page is unmapped
/// and freed as [`unmap_user_range`] does (an unused one needs no flush).
/// A thread's exiting stack is the case this is for: glibc (and HotSpot)
/// discard the whole stack, of which the thread used a few pages, and the
/// next thread given that stack uses the same ones. Unmapping them cost a
/// flush each (a hypercall on PVM), and the next thread a fault and a
/// shadow fault per page; zeroing is a 4 KiB `memset`. The caller holds
/// the address-space lock (interrupts off), so no thread of the program
/// stores into a page while it is zeroed.
pub fn discard_anon(va: u64, len: u64) {
    let end = va + len;
    let mut keep: alloc::vec::Vec<(u64, u64)> = alloc::vec::Vec::new();
    {
        let mut ks = KERNEL_SPACE.lock();
        let Some(space) = ks.as_mut() else { return };
        let owned = PteFlags::SHARED.bits() | PteFlags::BORROWED.bits() | PteFlags::HUGE.bits();
        let used = PteFlags::ACCESSED.bits() | PteFlags::USER.bits();
        let _ = space.leaves(&mut Tables, va, len, &mut |v, e| {
            if keep.len() < ZERO_IN_PLACE_MAX && e & owned == 0 && e & used == used {
                keep.push((v, e & 0x000f_ffff_ffff_f000));
            }
        });
        for &(v, pa) in &keep {
            // SAFETY: `pa` is the frame the program's own private page maps
            // (neither shared nor borrowed), reached through the direct map;
            // exactly one page is written.
            unsafe { core::ptr::write_bytes(phys_to_virt(pa) as *mut u8, 0, PAGE_SIZE) };
            space.set_leaf_bits(&mut Tables, v, PteFlags::ZEROED.bits());
        }
    }
    let mut from = va;
    for &(v, _) in &keep {
        if v > from {
            unmap_user_range(from, v - from);
        }
        from = v + PAGE_SIZE as u64;
    }
    if end > from {
        unmap_user_range(from, end - from);
    }
}

/// Unmaps every user page in `[va, va+len)`, handing each owned
/// `(va, frame)` to `taken` instead of freeing it; borrowed frames go back
/// to the file cache.
pub fn unmap_user_range_keep(va: u64, len: u64, taken: &mut dyn FnMut(u64, u64)) {
    let mut pages = alloc::vec::Vec::new();
    {
        let mut ks = KERNEL_SPACE.lock();
        let Some(space) = ks.as_mut() else { return };
        let r = space.unmap_range_each(&mut Tables, va, len, &mut |v, e| {
            // User memory is mapped with 4 KiB pages only.
            pages.push((v, e));
        });
        if let Err(e) = r {
            log::warn!("unmapping user memory {va:#x}+{len:#x}: {e:?}");
        }
    }
    flush_user(
        &pages
            .iter()
            .filter(|p| may_be_cached(p.1))
            .map(|p| p.0)
            .collect::<alloc::vec::Vec<_>>(),
    );
    for (v, e) in pages {
        let pa = e & 0x000f_ffff_ffff_f000;
        if e & PteFlags::SHARED.bits() != 0 {
            // A store through a writable shared mapping leaves its page
            // dirty for the file even once unmapped.
            let stored =
                e & (PteFlags::DIRTY.bits() | PteFlags::BORROWED.bits()) == PteFlags::DIRTY.bits();
            super::shared::unref(pa, stored);
        } else if e & PteFlags::BORROWED.bits() != 0 {
            crate::cache::release_page(pa);
        } else {
            taken(v, pa);
        }
    }
}

/// Clears the dirty bit of the user page at `va` if it maps `pa`; returns
/// whether it was set.
pub fn clean_user_page(va: u64, pa: u64) -> bool {
    let was = {
        let mut ks = KERNEL_SPACE.lock();
        let Some(space) = ks.as_mut() else {
            return false;
        };
        space.clean(&mut Tables, va, pa)
    };
    if was {
        cpu::invlpg(va);
    }
    was
}

/// Releases the frame behind a leaf entry taken by [`take_user_page`] that
/// could not be mapped again: freed, handed back to the file cache, or
/// released as a shared file page.
pub fn release_taken(e: u64) {
    let pa = e & 0x000f_ffff_ffff_f000;
    if e & PteFlags::SHARED.bits() != 0 {
        super::shared::unref(
            pa,
            e & (PteFlags::DIRTY.bits() | PteFlags::BORROWED.bits()) == PteFlags::DIRTY.bits(),
        );
    } else if e & PteFlags::BORROWED.bits() != 0 {
        crate::cache::release_page(pa);
    } else {
        free_frames(pa, 1);
    }
}

/// Unmaps one user page, returning its leaf entry (frame and flags) without
/// freeing or releasing anything.
pub fn take_user_page(va: u64) -> Option<u64> {
    let e = {
        let mut ks = KERNEL_SPACE.lock();
        let space = ks.as_mut()?;
        let t = space.translate(&mut Tables, va)?;
        space.unmap(&mut Tables, va, PageSize::Size4K).ok()?;
        (t.pa & !0xfff) | t.flags.bits()
    };
    if may_be_cached(e) {
        cpu::invlpg(va);
    }
    Some(e)
}

/// Sets the flags of every present user page in `[va, va+len)`.
///
/// Only translations that lose a permission (writing, or executing) are
/// flushed, and of those only the ones that may be cached
/// ([`may_be_cached`]). One that gains a permission may stay stale: the
/// access it now allows faults at most once, and the fault handler finds
/// the page present and allowed and returns (as Linux's spurious-fault
/// path does). A JVM's thread start and end (`mprotect` of its stack's
/// guard zone) and its code cache's changes touch pages that were never
/// used, or only gain rights, and so flush nothing.
pub fn protect_user_range(va: u64, len: u64, flags: PteFlags) {
    let mut lost = alloc::vec::Vec::new();
    {
        let mut ks = KERNEL_SPACE.lock();
        let Some(space) = ks.as_mut() else { return };
        let r = space.protect_each(&mut Tables, va, len, flags, &mut |v, old, new| {
            if loses_permission(old, new) && may_be_cached(old) {
                lost.push(v);
            }
        });
        if let Err(e) = r {
            log::warn!("protecting user memory {va:#x}+{len:#x}: {e:?}");
        }
    }
    flush_user(&lost);
}

/// Whether leaf entry `new` allows less than `old`: no longer writable, or
/// no longer executable.
fn loses_permission(old: u64, new: u64) -> bool {
    let w = PteFlags::WRITABLE.bits();
    let nx = PteFlags::NO_EXECUTE.bits();
    (old & w != 0 && new & w == 0) || (old & nx == 0 && new & nx != 0)
}

/// Whether a user page's translation, whose leaf entry was `e`, may be
/// cached and so needs a flush once the entry changes. On a PVM host, no:
/// unless the accessed bit is set. Its shadow MMU (KVM's) makes a shadow
/// entry, the only thing the hardware's TLB can cache for a guest page,
/// only from a walk that sets the guest entry's accessed bit first, and
/// prefetches and resyncs only entries with it set. So an entry that the
/// program never used has nothing to flush. Most pages a fault maps around
/// the faulting one never are: a thread's exiting `madvise` of its stack
/// flushed about 16 pages, of which about 2 had been used (each flush is a
/// hypercall of ≈ 1.8 µs). Elsewhere the CPU's own caching rules apply, and
/// every present entry is flushed.
fn may_be_cached(e: u64) -> bool {
    !cpu::pvm_native() || e & PteFlags::ACCESSED.bits() != 0
}

/// Drops stale TLB entries for these user pages.
fn flush_user(pages: &[u64]) {
    if pages.len() <= 64 {
        for &v in pages {
            cpu::invlpg(v);
        }
    } else {
        flush_all_user();
    }
}

/// Reloading CR3 drops every non-global entry: all of user memory.
fn flush_all_user() {
    let root = KERNEL_SPACE.lock().as_ref().map(AddressSpace::root);
    if let Some(root) = root {
        // SAFETY: reloading the current root changes no mapping.
        unsafe { cpu::write_cr3(root) };
    }
}

/// A kernel thread's stack: contiguous frames whose lowest page is unmapped,
/// so an overflow faults instead of corrupting memory.
pub struct KernelStack {
    base: u64,
    pages: usize,
}

impl KernelStack {
    /// A stack of `pages` usable pages plus the guard page.
    pub fn new(pages: usize) -> Option<Self> {
        let base = match STACK_CACHE.lock().take(pages + 1) {
            Some(base) => base,
            None => {
                let base = alloc_frames(pages + 1, 1)?;
                set_guard(base, true);
                base
            }
        };
        let s = Self {
            base,
            pages: pages + 1,
        };
        // The words above the entry stack pointer (`entry_top`) start zero.
        // SAFETY: the stack's own last 16 bytes, in the direct map.
        unsafe { core::ptr::write_bytes((s.top() - 16) as *mut u8, 0, 16) };
        Some(s)
    }

    /// Where system calls, interrupts and exceptions from the program
    /// start this stack: 16 bytes below its end, which hold per-thread words
    /// of the direct system-call entry (`arch::x86_64::direct`).
    pub fn entry_top(&self) -> u64 {
        self.top() - 16
    }

    /// The initial stack pointer (16-byte aligned end).
    pub fn top(&self) -> u64 {
        phys_to_virt(self.base) + (self.pages * PAGE_SIZE) as u64
    }

    /// The unmapped guard page (kernel address).
    pub fn guard(&self) -> u64 {
        phys_to_virt(self.base)
    }
}

impl Drop for KernelStack {
    fn drop(&mut self) {
        if STACK_CACHE.lock().put(self.base, self.pages) {
            return;
        }
        set_guard(self.base, false);
        free_frames(self.base, self.pages);
    }
}

/// Stacks kept for reuse, at most this many.
pub const STACK_CACHE_MAX: usize = 64;

/// Freed kernel stacks, guard page still unmapped: a thread's start and end
/// then change no page table (a change costs a TLB flush that the PVM host
/// turns into a sync of its shadow tables; threads come and go by the
/// thousand under Java's thread churn).
struct StackCache {
    /// (first frame, frames with the guard) of each cached stack.
    stacks: [(u64, usize); STACK_CACHE_MAX],
    len: usize,
}

impl StackCache {
    /// A cached stack of `pages` frames, if one is there.
    fn take(&mut self, pages: usize) -> Option<u64> {
        let i = self.stacks[..self.len].iter().position(|s| s.1 == pages)?;
        let base = self.stacks[i].0;
        self.len -= 1;
        self.stacks[i] = self.stacks[self.len];
        Some(base)
    }

    /// Keeps a freed stack; false when the cache is full.
    fn put(&mut self, base: u64, pages: usize) -> bool {
        if self.len == STACK_CACHE_MAX {
            return false;
        }
        self.stacks[self.len] = (base, pages);
        self.len += 1;
        true
    }
}

static STACK_CACHE: IrqLock<StackCache> = IrqLock::new(StackCache {
    stacks: [(0, 0); STACK_CACHE_MAX],
    len: 0,
});

fn set_guard(pa: u64, guard: bool) {
    let page = phys_to_virt(pa);
    let mut ks = KERNEL_SPACE.lock();
    let Some(space) = ks.as_mut() else { return };
    let r = if guard {
        space.unmap(&mut Tables, page, PageSize::Size4K).map(|_| ())
    } else {
        let flags = kernel_rw() | PteFlags::NO_EXECUTE;
        space.map(&mut Tables, page, pa, PageSize::Size4K, flags)
    };
    r.expect("updating a stack guard page");
    cpu::invlpg(page);
}
