//! The `ro` policy: a read-only block cache. Files are cached in 64 KiB
//! blocks of physically contiguous frames; many small reads are served
//! from one block fetch, and file mappings map the blocks' pages directly
//! (read-only, copied on write), so a page of `lib/modules` or of the CDS
//! archive exists once whether it is read or mapped. Blocks are dropped
//! least-recently-used first to stay within a memory budget; a block with
//! pages mapped by the program stays until they are unmapped.

use alloc::collections::BTreeMap;

use super::{Fetch, FileCache, Stats};
use crate::errno::Errno;
use crate::mm::{alloc_frames, free_frames, phys_to_virt};
use crate::sync::IrqLock;

/// Bytes per block.
pub const BLOCK: u64 = 64 * 1024;
/// Blocks fetched at once for a sequential reader (256 KiB).
const READ_AHEAD: usize = 4;
const PAGES: usize = (BLOCK / 4096) as usize;

struct Block {
    /// First frame (the block is `PAGES` contiguous, aligned frames).
    pa: u64,
    /// Bytes of file data in it (less than `BLOCK` only at the end).
    len: usize,
    /// Pages of it the program maps.
    pins: u32,
    /// Last use, for LRU.
    tick: u64,
}

struct Inner {
    blocks: BTreeMap<(u64, u64), Block>,
    /// The last block fetched per file, to spot sequential readers.
    last: BTreeMap<u64, u64>,
    by_pa: BTreeMap<u64, (u64, u64)>,
    tick: u64,
    stats: Stats,
}

/// The read-only block cache.
pub struct BlockCache {
    inner: IrqLock<Inner>,
    budget: u64,
}

impl BlockCache {
    /// A cache that holds at most `budget` bytes of blocks.
    pub fn new(budget: u64) -> Self {
        Self {
            inner: IrqLock::new(Inner {
                blocks: BTreeMap::new(),
                last: BTreeMap::new(),
                by_pa: BTreeMap::new(),
                tick: 0,
                stats: Stats {
                    budget_bytes: budget,
                    ..Stats::default()
                },
            }),
            budget: budget.max(BLOCK),
        }
    }

    /// The block `idx` of `key`, fetched if needed: `(first frame, bytes)`;
    /// with `pin`, one page of it is pinned before the lock is dropped.
    fn block(
        &self,
        key: u64,
        idx: u64,
        pin: bool,
        fetch: &mut Fetch<'_>,
    ) -> Result<(u64, usize), Errno> {
        if let Some(hit) = self.lookup(key, idx, pin) {
            return Ok(hit);
        }
        // Read-ahead: a miss right after the block before it was fetched
        // is a sequential reader; fetch several blocks in one go (one 9P
        // read when the message size allows).
        let count = {
            let mut g = self.inner.lock();
            let seq = g.last.get(&key).is_some_and(|&l| l + 1 == idx);
            if g.last.len() >= 4096 {
                g.last.clear();
            }
            let n = if seq { READ_AHEAD } else { 1 };
            g.last.insert(key, idx + n as u64 - 1);
            n
        };
        // Fetch without the lock: 9P waits.
        let pa = match alloc_frames(PAGES * count, PAGES) {
            Some(pa) => pa,
            None if count > 1 => return self.block_one(key, idx, pin, fetch),
            None => return Err(Errno::ENOMEM),
        };
        let total = BLOCK as usize * count;
        // SAFETY: `PAGES * count` fresh frames owned by us, reached through
        // the direct map; nothing else refers to them until they are inserted.
        let buf = unsafe { core::slice::from_raw_parts_mut(phys_to_virt(pa) as *mut u8, total) };
        let mut len = 0usize;
        while len < buf.len() {
            let n = match fetch(idx * BLOCK + len as u64, &mut buf[len..]) {
                Ok(n) => n,
                Err(e) => {
                    free_frames(pa, PAGES * count);
                    return Err(e);
                }
            };
            if n == 0 {
                break;
            }
            len += n;
        }
        buf[len..].fill(0);
        let mut g = self.inner.lock();
        let inner = &mut *g;
        inner.tick += 1;
        let tick = inner.tick;
        let mut spare = alloc::vec::Vec::new();
        let mut first = None;
        for i in 0..count {
            let bpa = pa + (i as u64) * BLOCK;
            let blen = len.saturating_sub(i * BLOCK as usize).min(BLOCK as usize);
            let k = (key, idx + i as u64);
            let want_pin = pin && i == 0;
            if let Some(b) = inner.blocks.get_mut(&k) {
                // Another thread fetched it meanwhile.
                b.tick = tick;
                if want_pin {
                    b.pins += 1;
                }
                if i == 0 {
                    first = Some((b.pa, b.len));
                }
                spare.push(bpa);
                continue;
            }
            if i > 0 && blen == 0 {
                // Past the end of the file.
                spare.push(bpa);
                continue;
            }
            inner.stats.misses += 1;
            inner.stats.fetched_bytes += blen as u64;
            inner.stats.resident_bytes += BLOCK;
            inner.blocks.insert(
                k,
                Block {
                    pa: bpa,
                    len: blen,
                    pins: u32::from(want_pin),
                    tick,
                },
            );
            inner.by_pa.insert(bpa, k);
            if i == 0 {
                first = Some((bpa, blen));
            }
        }
        let evicted = evict(inner, self.budget);
        drop(g);
        for f in spare.into_iter().chain(evicted) {
            free_frames(f, PAGES);
        }
        first.ok_or(Errno::EIO)
    }

    /// [`block`](Self::block) without read-ahead (when memory is short).
    fn block_one(
        &self,
        key: u64,
        idx: u64,
        pin: bool,
        fetch: &mut Fetch<'_>,
    ) -> Result<(u64, usize), Errno> {
        self.inner.lock().last.remove(&key);
        self.block(key, idx, pin, fetch)
    }

    fn lookup(&self, key: u64, idx: u64, pin: bool) -> Option<(u64, usize)> {
        let mut g = self.inner.lock();
        let inner = &mut *g;
        inner.tick += 1;
        let tick = inner.tick;
        let b = inner.blocks.get_mut(&(key, idx))?;
        b.tick = tick;
        if pin {
            b.pins += 1;
        }
        let hit = (b.pa, b.len);
        inner.stats.hits += 1;
        Some(hit)
    }
}

/// Drops unpinned blocks, oldest first, until the cache fits `budget`;
/// returns their frames.
fn evict(inner: &mut Inner, budget: u64) -> alloc::vec::Vec<u64> {
    let mut out = alloc::vec::Vec::new();
    while inner.stats.resident_bytes > budget {
        let victim = inner
            .blocks
            .iter()
            .filter(|(_, b)| b.pins == 0)
            .min_by_key(|(_, b)| b.tick)
            .map(|(k, b)| (*k, b.pa));
        let Some((k, pa)) = victim else { break };
        inner.blocks.remove(&k);
        inner.by_pa.remove(&pa);
        inner.stats.resident_bytes -= BLOCK;
        inner.stats.evictions += 1;
        out.push(pa);
    }
    out
}

impl FileCache for BlockCache {
    fn name(&self) -> &'static str {
        "ro"
    }

    fn read(
        &self,
        key: u64,
        offset: u64,
        out: &mut [u8],
        fetch: &mut Fetch<'_>,
    ) -> Result<usize, Errno> {
        let mut done = 0usize;
        while done < out.len() {
            let at = offset + done as u64;
            let (idx, within) = (at / BLOCK, (at % BLOCK) as usize);
            let (pa, len) = self.block(key, idx, false, fetch)?;
            if within >= len {
                break;
            }
            let n = (len - within).min(out.len() - done);
            // Copy under the lock, which keeps the block from being evicted
            // (and its frames reused) meanwhile.
            let g = self.inner.lock();
            if g.by_pa.get(&pa) != Some(&(key, idx)) {
                // Evicted between the fetch and now: fetch it again.
                continue;
            }
            // SAFETY: the block is still cached (checked under the lock), so
            // its `BLOCK` bytes of frames are allocated and initialised.
            let src = unsafe {
                core::slice::from_raw_parts(phys_to_virt(pa) as *const u8, BLOCK as usize)
            };
            out[done..done + n].copy_from_slice(&src[within..within + n]);
            drop(g);
            done += n;
            if len < BLOCK as usize && within + n >= len {
                break;
            }
        }
        Ok(done)
    }

    fn map_page(
        &self,
        key: u64,
        offset: u64,
        fetch: &mut Fetch<'_>,
    ) -> Result<Option<(u64, usize)>, Errno> {
        let (idx, within) = (offset / BLOCK, (offset % BLOCK) as usize);
        let (pa, len) = self.block(key, idx, true, fetch)?;
        let valid = len.saturating_sub(within).min(4096);
        Ok(Some((pa + within as u64, valid)))
    }

    fn holds(&self, key: u64, offset: u64) -> bool {
        self.inner
            .lock()
            .blocks
            .get(&(key, offset / BLOCK))
            .is_some_and(|b| offset % BLOCK < b.len as u64)
    }

    fn release_page(&self, pa: u64) {
        let base = pa & !(BLOCK - 1);
        let mut g = self.inner.lock();
        let inner = &mut *g;
        if let Some(k) = inner.by_pa.get(&base).copied()
            && let Some(b) = inner.blocks.get_mut(&k)
        {
            b.pins = b.pins.saturating_sub(1);
        }
    }

    fn pinned_blocks(&self) -> alloc::vec::Vec<(u64, u64, u64, usize)> {
        let mut g = self.inner.lock();
        g.blocks
            .iter_mut()
            .map(|(&(key, idx), b)| {
                b.pins += 1;
                (key, idx, b.pa, b.len)
            })
            .collect()
    }

    fn adopt(&self, key: u64, index: u64, pa: u64, len: usize) -> bool {
        if !pa.is_multiple_of(BLOCK) || len > BLOCK as usize {
            return false;
        }
        let mut g = self.inner.lock();
        let inner = &mut *g;
        if inner.blocks.contains_key(&(key, index)) {
            return false;
        }
        inner.tick += 1;
        let tick = inner.tick;
        inner.stats.resident_bytes += BLOCK;
        inner.blocks.insert(
            (key, index),
            Block {
                pa,
                len,
                pins: 0,
                tick,
            },
        );
        inner.by_pa.insert(pa, (key, index));
        let evicted = evict(inner, self.budget);
        drop(g);
        for f in evicted {
            free_frames(f, PAGES);
        }
        true
    }

    fn stats(&self) -> Stats {
        self.inner.lock().stats
    }
}
