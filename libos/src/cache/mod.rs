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

    /// Adds a block from a cache image (a no-op for policies that keep none).
    fn import(&self, key: u64, index: u64, data: &[u8]) -> Result<(), Errno> {
        let _ = (key, index, data);
        Ok(())
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
/// each cached file's identity, then its blocks, straight from their frames.
pub fn dump() {
    use crate::cache_image::{END_RECORD, FileId, MAGIC, block_header, file_record};
    let Some(c) = current() else { return };
    let blocks = c.pinned_blocks();
    let send = |b: &[u8]| crate::console::to_vmm(astraea_abi::port::CACHE_DUMP, b);
    send(MAGIC);
    let mut files = 0usize;
    let mut written = alloc::collections::BTreeSet::new();
    for &(key, ..) in &blocks {
        if written.contains(&key) {
            continue;
        }
        let Some(path) = PATHS.lock().get(&key).cloned() else {
            continue;
        };
        match identity(&path) {
            Ok((size, mtime, inode)) if inode == key => {
                send(&file_record(&FileId {
                    path: &path,
                    size,
                    mtime,
                    inode,
                }));
                written.insert(key);
                files += 1;
            }
            _ => {}
        }
    }
    let mut bytes = 0u64;
    for &(key, index, pa, len) in &blocks {
        if written.contains(&key) {
            send(&block_header(key, index, len as u32));
            // SAFETY: the block is pinned, so its `len` bytes of contiguous
            // frames stay allocated and unchanged while the VMM copies them.
            let data = unsafe {
                core::slice::from_raw_parts(crate::mm::phys_to_virt(pa) as *const u8, len)
            };
            send(data);
            bytes += len as u64;
        }
        c.release_page(pa);
    }
    send(&END_RECORD);
    log::info!("file cache dumped: {files} files, {} KiB", bytes / 1024);
}

/// Loads the blocks of an image the VMM placed at `image` whose files
/// are unchanged on the host; returns (files loaded, files skipped, blocks).
pub fn load(image: &[u8]) -> (usize, usize, usize) {
    use crate::cache_image::{Reader, Record};
    let Some(c) = current() else { return (0, 0, 0) };
    if c.name() == "none" {
        return (0, 0, 0);
    }
    let reader = match Reader::new(image) {
        Ok(r) => r,
        Err(e) => {
            crate::eprintln!("astraea: the cache image is not usable ({e:?}); starting cold");
            return (0, 0, 0);
        }
    };
    let mut valid = alloc::collections::BTreeSet::new();
    let (mut loaded, mut skipped, mut blocks) = (0, 0, 0);
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
            Ok(Record::Block { inode, index, data }) => {
                if valid.contains(&inode) && c.import(inode, index, data).is_ok() {
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
    (loaded, skipped, blocks)
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
    let mounts = words
        .filter_map(|w| w.rsplit_once('='))
        .map(|(m, p)| (String::from(m), p != "none"))
        .collect();
    CONFIG.call_once(|| Config { cache, mounts });
}

/// Whether `path` lies under `mount` (both absolute).
fn under(path: &str, mount: &str) -> bool {
    mount == "/"
        || path == mount
        || (path.starts_with(mount) && path.as_bytes().get(mount.len()) == Some(&b'/'))
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
