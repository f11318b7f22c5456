//! The pluggable file cache between the program's file reads (and file
//! mappings) and the 9P client, as in Libra: a read-only file forwarded to
//! the controller once is served from partition memory afterwards.
//!
//! A policy is a [`FileCache`]; the partition runs one, chosen at launch
//! (`astraea run --cache none|ro[:SIZE]`), and it applies to the files of
//! the mounts the launch marks cacheable (by default the read-only ones).
//! Adding a policy means one new module implementing the trait and one arm
//! in [`configure`].
//!
//! Read-only semantics: a cached file is assumed not to change on the host
//! while the partition runs; a host-side change is not seen by a partition
//! that already cached the blocks it touches (see docs/cache.md).

mod block;
mod none;

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;

use crate::errno::Errno;

pub use block::BlockCache;
pub use none::NoCache;

/// Reads file bytes from the server: `(offset, buffer) -> bytes read`.
pub type Fetch<'a> = dyn FnMut(u64, &mut [u8]) -> Result<usize, Errno> + 'a;

/// What a policy counts.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stats {
    /// Reads (and page requests) served without the server.
    pub hits: u64,
    /// Blocks fetched from the server.
    pub misses: u64,
    /// Bytes fetched from the server.
    pub fetched_bytes: u64,
    /// Blocks dropped to stay within the budget.
    pub evictions: u64,
    /// Bytes held now.
    pub resident_bytes: u64,
    /// The budget in bytes.
    pub budget_bytes: u64,
}

/// A file-cache policy.
pub trait FileCache: Send + Sync {
    /// The policy's name (`none`, `ro`).
    fn name(&self) -> &'static str;

    /// Reads into `out` the bytes of file `key` at `offset`, using `fetch`
    /// for what the policy does not hold; returns how many (0 at the end).
    fn read(
        &self,
        key: u64,
        offset: u64,
        out: &mut [u8],
        fetch: &mut Fetch<'_>,
    ) -> Result<usize, Errno>;

    /// The frame holding the 4 KiB page at `offset` (page-aligned) of file
    /// `key`, pinned for mapping into the program read-only, and how many of
    /// its bytes are file data; `None` if the policy does not share pages
    /// (the caller then copies) or the page lies past the end of the file.
    fn map_page(
        &self,
        key: u64,
        offset: u64,
        fetch: &mut Fetch<'_>,
    ) -> Result<Option<(u64, usize)>, Errno> {
        let _ = (key, offset, fetch);
        Ok(None)
    }

    /// Whether the policy holds the byte at `offset` of file `key` now
    /// (`mincore`); never fetches.
    fn holds(&self, key: u64, offset: u64) -> bool {
        let _ = (key, offset);
        false
    }

    /// Unpins a frame from [`map_page`](Self::map_page).
    fn release_page(&self, pa: u64) {
        let _ = pa;
    }

    /// Every cached block as `(key, index, first frame, bytes)`, each pinned
    /// until [`release_page`](Self::release_page) of its frame (a dump reads
    /// them meanwhile).
    fn pinned_blocks(&self) -> Vec<(u64, u64, u64, usize)> {
        Vec::new()
    }

    /// Takes the 64 KiB-aligned frames at `pa` (a block of a cache image,
    /// `len` bytes of data) as block `index` of file `key`; `false` if the
    /// policy keeps no blocks (the caller then frees them).
    fn adopt(&self, key: u64, index: u64, pa: u64, len: usize) -> bool {
        let _ = (key, index, pa, len);
        false
    }

    /// The counters.
    fn stats(&self) -> Stats;
}

/// The namespace path of each cached file, by key, for dumps.
static PATHS: crate::sync::IrqLock<alloc::collections::BTreeMap<u64, String>> =
    crate::sync::IrqLock::new(alloc::collections::BTreeMap::new());

/// Records that file `key` was opened as `path`.
pub fn note_path(key: u64, path: &str) {
    PATHS
        .lock()
        .entry(key)
        .or_insert_with(|| String::from(path));
}

/// The identity of the file at `path` now: (size, mtime, inode).
fn identity(path: &str) -> Result<(u64, (u64, u32), u64), Errno> {
    let c = crate::p9::mounted().ok_or(Errno::ENOENT)?;
    let fid = c.walk_path(path)?;
    let st = c.getattr(fid);
    c.clunk(fid);
    let st = st?;
    Ok((st.size, (st.mtime_sec, st.mtime_nsec as u32), st.qid.path))
}

/// Writes the cache's contents to the VMM (`astraea run --cache-dump`):
/// each cached file's identity and block records, then the blocks' data
/// in 64 KiB slots, straight from their frames.
pub fn dump() {
    use crate::cache_image::{END_RECORD, FileId, MAGIC, MAX_BLOCK, block_record, file_record};
    static ZEROS: [u8; 4096] = [0; 4096];
    let Some(c) = current() else { return };
    let blocks = c.pinned_blocks();
    let send = |b: &[u8]| crate::console::to_vmm(astraea_abi::port::CACHE_DUMP, b);
    let mut meta = MAGIC.to_vec();
    let mut files = alloc::collections::BTreeSet::new();
    for &(key, ..) in &blocks {
        if files.contains(&key) {
            continue;
        }
        let Some(path) = PATHS.lock().get(&key).cloned() else {
            continue;
        };
        if let Ok((size, mtime, inode)) = identity(&path)
            && inode == key
        {
            meta.extend(file_record(&FileId {
                path: &path,
                size,
                mtime,
                inode,
            }));
            files.insert(key);
        }
    }
    let kept: Vec<_> = blocks.iter().filter(|b| files.contains(&b.0)).collect();
    let records = kept.len() * crate::cache_image::BLOCK_RECORD + END_RECORD.len();
    let slot = MAX_BLOCK as u64;
    let data_start = ((meta.len() + records) as u64).next_multiple_of(slot);
    for (i, &&(key, index, _, len)) in kept.iter().enumerate() {
        meta.extend(block_record(
            key,
            index,
            len as u32,
            data_start + i as u64 * slot,
        ));
    }
    meta.extend(END_RECORD);
    send(&meta);
    let mut pad = data_start as usize - meta.len();
    while pad > 0 {
        let n = pad.min(ZEROS.len());
        send(&ZEROS[..n]);
        pad -= n;
    }
    for &&(_, _, pa, _) in &kept {
        // SAFETY: the block is pinned, so its 64 KiB of contiguous frames
        // (data, then zeros) stay allocated and unchanged while the VMM
        // copies them.
        let data = unsafe {
            core::slice::from_raw_parts(crate::mm::phys_to_virt(pa) as *const u8, MAX_BLOCK)
        };
        send(data);
    }
    for &(_, _, pa, _) in &blocks {
        c.release_page(pa);
    }
    log::info!(
        "file cache dumped: {} files, {} blocks ({} KiB)",
        files.len(),
        kept.len(),
        kept.len() * 64
    );
}

/// Loads a cache image the VMM placed at guest-physical `gpa`: the blocks
/// of files unchanged on the host become cache blocks where they lie; every
/// other page of the image is freed. Returns (files loaded, files skipped,
/// blocks).
pub fn load(gpa: u64, image: &[u8]) -> (usize, usize, usize) {
    use crate::cache_image::{MAX_BLOCK, Reader, Record};
    let mut adopted = alloc::collections::BTreeSet::new();
    let (mut loaded, mut skipped, mut blocks) = (0, 0, 0);
    let policy = current().filter(|c| c.name() != "none");
    match (policy, Reader::new(image)) {
        (None, _) => {}
        (Some(_), Err(e)) => {
            crate::eprintln!("astraea: the cache image is not usable ({e:?}); starting cold");
        }
        (Some(c), Ok(reader)) => {
            let mut valid = alloc::collections::BTreeSet::new();
            for rec in reader {
                match rec {
                    Ok(Record::File(id)) => match identity(id.path) {
                        Ok((size, mtime, inode))
                            if size == id.size && mtime == id.mtime && inode == id.inode =>
                        {
                            valid.insert(inode);
                            note_path(inode, id.path);
                            loaded += 1;
                        }
                        _ => {
                            crate::eprintln!(
                                "astraea: warning: {} changed on the host since the cache image was made; its blocks are not loaded",
                                id.path
                            );
                            skipped += 1;
                        }
                    },
                    Ok(Record::Block {
                        inode,
                        index,
                        data,
                        offset,
                    }) => {
                        if valid.contains(&inode)
                            && !adopted.contains(&offset)
                            && c.adopt(inode, index, gpa + offset, data.len())
                        {
                            adopted.insert(offset);
                            blocks += 1;
                        }
                    }
                    Err(e) => {
                        crate::eprintln!(
                            "astraea: the cache image is damaged ({e:?}); the rest is ignored"
                        );
                        break;
                    }
                }
            }
        }
    }
    // Free what was not adopted, a 64 KiB slot (or the last pages) at a time.
    let slot = MAX_BLOCK as u64;
    let end = gpa + (image.len() as u64).next_multiple_of(4096);
    let mut at = gpa;
    while at < end {
        let n = slot.min(end - at);
        if !adopted.contains(&(at - gpa)) {
            crate::mm::free_frames(at, (n / 4096) as usize);
        }
        at += n;
    }
    (loaded, skipped, blocks)
}

/// The partition's policy, whatever it applies to.
pub fn current() -> Option<&'static dyn FileCache> {
    CONFIG.get().map(|c| &*c.cache)
}

/// Hands back a borrowed page the program no longer maps.
pub fn release_page(pa: u64) {
    if let Some(c) = current() {
        c.release_page(pa);
    }
}
/// Which files the policy applies to: mount points in the partition's
/// namespace, each cached or not; the longest matching one decides.
struct Config {
    cache: Box<dyn FileCache>,
    mounts: Vec<(String, bool)>,
}

static CONFIG: spin::Once<Config> = spin::Once::new();

/// Chooses the policy from the launch's description,
/// `POLICY[:BYTES] MOUNT=ro|none…` (e.g. `ro:268435456 /=ro /home/me=none`):
/// files under a mount marked `ro` go through the policy. `none` or an
/// empty description disables caching.
pub fn configure(spec: &str, default_budget: u64) {
    let mut words = spec.split_ascii_whitespace();
    let policy = words.next().unwrap_or("none");
    let (name, budget) = match policy.split_once(':') {
        Some((n, b)) => (n, b.parse().unwrap_or(default_budget)),
        None => (policy, default_budget),
    };
    let cache: Box<dyn FileCache> = match name {
        "ro" => Box::new(BlockCache::new(budget)),
        "none" => Box::new(NoCache::default()),
        other => {
            log::warn!("unknown file-cache policy {other:?}: files are not cached");
            Box::new(NoCache::default())
        }
    };
    let mut mounts: Vec<(String, bool)> = words
        .filter_map(|w| w.rsplit_once('='))
        .map(|(m, p)| (String::from(m), p != "none"))
        .collect();
    // Parents before their children (`mount_points`).
    mounts.sort_by(|a, b| (a.0.len(), &a.0).cmp(&(b.0.len(), &b.0)));
    mounts.dedup_by(|a, b| a.0 == b.0);
    CONFIG.call_once(|| Config { cache, mounts });
}

/// Whether `path` lies under `mount` (both absolute).
fn under(path: &str, mount: &str) -> bool {
    mount == "/"
        || path == mount
        || (path.starts_with(mount) && path.as_bytes().get(mount.len()) == Some(&b'/'))
}

/// The namespace's mount points as the launch listed them (parents before
/// their children).
pub fn mount_points() -> impl Iterator<Item = &'static str> {
    CONFIG
        .get()
        .into_iter()
        .flat_map(|c| c.mounts.iter().map(|(m, _)| m.as_str()))
}

/// The index in [`mount_points`] of the mount `path` lies under (the
/// longest match; 0 when none does).
pub fn mount_index(path: &str) -> usize {
    mount_points()
        .enumerate()
        .filter(|(_, m)| under(path, m))
        .max_by_key(|(_, m)| m.len())
        .map_or(0, |(i, _)| i)
}

/// The partition's policy, if one applies to `path`.
pub fn for_path(path: &str) -> Option<&'static dyn FileCache> {
    let c = CONFIG.get()?;
    if c.cache.name() == "none" {
        return None;
    }
    let best = c
        .mounts
        .iter()
        .filter(|(m, _)| under(path, m))
        .max_by_key(|(m, _)| m.len())?;
    best.1.then_some(&*c.cache)
}

/// Attributes and failed lookups of paths on cached (read-only) mounts:
/// `stat`, `access` and `open` of a path seen before need no round trip
/// (the JVM and javac probe many class-path entries that do not exist).
static ATTRS: crate::sync::IrqLock<
    alloc::collections::BTreeMap<String, Result<astraea_9p::Stat, Errno>>,
> = crate::sync::IrqLock::new(alloc::collections::BTreeMap::new());

/// Most paths remembered; beyond it the table starts over.
const MAX_ATTRS: usize = 16384;

/// What is known of `path` on a cached mount: its attributes, or `ENOENT`.
pub fn lookup_attr(path: &str) -> Option<Result<astraea_9p::Stat, Errno>> {
    for_path(path)?;
    ATTRS.lock().get(path).copied()
}

/// Forgets what is known of `path`'s attributes (after a change made here).
pub fn forget_attr(path: &str) {
    if for_path(path).is_none() {
        return;
    }
    let mut a = ATTRS.lock();
    a.remove(path);
    a.remove(alloc::format!("{path}\0nofollow").as_str());
}

/// Remembers the outcome of looking up `path`, if it is on a cached mount
/// and the outcome is final (attributes, or `ENOENT`).
pub fn remember_attr(path: &str, r: &Result<astraea_9p::Stat, Errno>) {
    if for_path(path).is_none() || matches!(r, Err(e) if *e != Errno::ENOENT) {
        return;
    }
    let mut a = ATTRS.lock();
    if a.len() >= MAX_ATTRS {
        a.clear();
    }
    a.insert(String::from(path), *r);
}
