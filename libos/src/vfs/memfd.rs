//! `memfd_create(2)`: a file that lives in the partition's memory only.
//! Its pages are shared pages (`mm::shared`, pinned) keyed by an inode of
//! its own, so every mapping of it (`MAP_SHARED` at several addresses, as
//! ZGC maps its heap) and its `read`/`write` see the same bytes; nothing
//! goes to 9P. The pages go when the last descriptor and the last mapping
//! do. ZGC commits memory with `fallocate` and gives it back with
//! `FALLOC_FL_PUNCH_HOLE`, and checks with `fstatfs` that it is on tmpfs.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::errno::Errno;
use crate::fd::RegularLike as _;
use crate::mm::shared;
use crate::sync::IrqLock;

const PAGE: u64 = 4096;
/// The largest size (Linux's `MAX_LFS_FILESIZE`).
const MAX_SIZE: u64 = i64::MAX as u64;
/// `FALLOC_FL_KEEP_SIZE`.
const KEEP_SIZE: u32 = 1;
/// `FALLOC_FL_PUNCH_HOLE`.
const PUNCH_HOLE: u32 = 2;
/// tmpfs's `f_type`.
const TMPFS_MAGIC: u64 = 0x0102_1994;
/// `F_SEAL_SEAL`: no more seals.
pub const SEAL_SEAL: u32 = 1;
/// `F_SEAL_SHRINK`: the size may not go down.
pub const SEAL_SHRINK: u32 = 2;
/// `F_SEAL_GROW`: the size may not go up.
pub const SEAL_GROW: u32 = 4;
/// `F_SEAL_WRITE`: the contents may not change.
pub const SEAL_WRITE: u32 = 8;
/// `F_SEAL_FUTURE_WRITE`: no new way to change the contents.
pub const SEAL_FUTURE_WRITE: u32 = 0x10;
/// `F_SEAL_EXEC`: the mode's execute bits may not change.
pub const SEAL_EXEC: u32 = 0x20;
const ALL_SEALS: u32 =
    SEAL_SEAL | SEAL_SHRINK | SEAL_GROW | SEAL_WRITE | SEAL_FUTURE_WRITE | SEAL_EXEC;

/// Inodes of memory-only files: above any 9P qid path the gateway gives
/// (those are below 2^63).
static NEXT_INO: AtomicU64 = AtomicU64::new(1 << 63);

/// A memory-only file: what every open file description of it shares.
struct Inode {
    ino: u64,
    name: String,
    size: IrqLock<u64>,
    /// `F_SEAL_*` bits.
    seals: AtomicU32,
}

impl Drop for Inode {
    /// The last description is closed and nothing maps the file: its pages go.
    fn drop(&mut self) {
        shared::forget(self.ino);
    }
}

/// An open file description of a memory-only file (`dup` shares it; an
/// open of `/proc/self/fd/N` makes another, [`MemFd::reopen`]).
pub struct MemFd {
    inode: Arc<Inode>,
    /// The file position of `read`/`write`.
    pos: IrqLock<u64>,
    /// `O_*` status flags.
    pub flags: AtomicU32,
}

impl MemFd {
    /// A new empty file named `name` (shown as `/memfd:NAME (deleted)`)
    /// with seals `seals` (`F_SEAL_SEAL` unless sealing is allowed).
    pub fn new(name: String, seals: u32) -> MemFd {
        MemFd {
            inode: Arc::new(Inode {
                ino: NEXT_INO.fetch_add(1, Ordering::Relaxed),
                name,
                size: IrqLock::new(0),
                seals: AtomicU32::new(seals),
            }),
            pos: IrqLock::new(0),
            flags: AtomicU32::new(2),
        }
    }

    /// A new open file description of the same file, with status flags
    /// `flags` (access mode included) and its own position at 0: what
    /// opening `/proc/self/fd/N` gives on Linux.
    pub fn reopen(&self, flags: u32) -> MemFd {
        MemFd {
            inode: self.inode.clone(),
            pos: IrqLock::new(0),
            flags: AtomicU32::new(flags),
        }
    }

    /// `EPERM` if a seal in `seals` is set.
    fn sealed(&self, seals: u32) -> Result<(), Errno> {
        if self.inode.seals.load(Ordering::Relaxed) & seals != 0 {
            return Err(Errno::EPERM);
        }
        Ok(())
    }
}

impl crate::fd::RegularLike for MemFd {
    /// Its inode (the key of its pages).
    fn ino(&self) -> u64 {
        self.inode.ino
    }

    /// The file position of `read`, `write` and `lseek`.
    fn position(&self) -> &IrqLock<u64> {
        &self.pos
    }

    /// Its size in bytes.
    fn size(&self) -> u64 {
        *self.inode.size.lock()
    }

    /// `ftruncate`: pages wholly past a smaller size that nothing maps go
    /// (their bytes with them); the last page's tail reads zeros again.
    fn set_size(&self, size: u64) -> Result<(), Errno> {
        if size > MAX_SIZE {
            return Err(Errno::EINVAL);
        }
        if size > self.size() {
            crate::signal::fsize_grow_ok(size)?;
        }
        let mut s = self.inode.size.lock();
        let old = *s;
        if size < old {
            self.sealed(SEAL_SHRINK)?;
        } else if size > old {
            self.sealed(SEAL_GROW)?;
        }
        *s = size;
        drop(s);
        if size < old {
            // Mappings lose the pages wholly past the end (a later access
            // is SIGBUS), as Linux's truncate unmaps them.
            crate::mm::vma::file_truncated(self.inode.ino, size);
        }
        Ok(())
    }

    /// `fallocate(mode, off, len)`: 0 makes room (the size grows to cover
    /// it; pages are made when touched), `PUNCH_HOLE | KEEP_SIZE` zeroes the
    /// range. Other modes are `EOPNOTSUPP`.
    fn fallocate(&self, mode: u32, off: u64, len: u64) -> Result<(), Errno> {
        let end = off.checked_add(len).ok_or(Errno::EFBIG)?;
        if len == 0 {
            return Err(Errno::EINVAL);
        }
        if end > MAX_SIZE {
            return Err(Errno::EFBIG);
        }
        match mode {
            0 | KEEP_SIZE => {
                if mode == 0 {
                    if end > self.size() {
                        crate::signal::fsize_grow_ok(end)?;
                    }
                    let mut s = self.inode.size.lock();
                    if end > *s {
                        self.sealed(SEAL_GROW)?;
                    }
                    *s = (*s).max(end);
                }
                Ok(())
            }
            m if m == PUNCH_HOLE | KEEP_SIZE => {
                self.sealed(SEAL_WRITE | SEAL_FUTURE_WRITE)?;
                shared::mem_zero(self.inode.ino, off, len);
                Ok(())
            }
            // A hole must keep the size.
            PUNCH_HOLE => Err(Errno::EINVAL),
            _ => Err(Errno::EOPNOTSUPP),
        }
    }

    /// Reads up to `max` bytes at `off` (pages never written read zeros).
    fn read_at(&self, off: u64, max: usize) -> Vec<u8> {
        let size = self.size();
        if off >= size {
            return Vec::new();
        }
        let n = (max as u64).min(size - off) as usize;
        let mut buf = alloc::vec![0u8; n];
        shared::overlay(self.inode.ino, off, &mut buf);
        buf
    }

    /// Writes `data` at `off`, growing the file; `ENOMEM` if no page can be
    /// had (what was written before stays).
    fn write_at(&self, off: u64, data: &[u8]) -> Result<usize, Errno> {
        if data.is_empty() {
            return Ok(0);
        }
        let data = &data[..crate::signal::fsize_clamp(off, data.len() as u64)? as usize];
        let end = off
            .checked_add(data.len() as u64)
            .filter(|&e| e <= MAX_SIZE)
            .ok_or(Errno::EFBIG)?;
        self.sealed(SEAL_WRITE | SEAL_FUTURE_WRITE)?;
        if end > self.size() {
            self.sealed(SEAL_GROW)?;
        }
        for index in off / PAGE..end.div_ceil(PAGE) {
            shared::mem_page(self.inode.ino, index, false).ok_or(Errno::ENOMEM)?;
        }
        shared::wrote(self.inode.ino, off, data);
        let mut s = self.inode.size.lock();
        *s = (*s).max(end);
        Ok(data.len())
    }

    /// The frame of page `index` for a mapping (a reference taken), made if
    /// new; `Err(true)` past the end of the file (SIGBUS), `Err(false)` out
    /// of memory.
    fn map_page(&self, index: u64) -> Result<u64, bool> {
        if index.saturating_mul(PAGE) >= self.size() {
            return Err(true);
        }
        shared::mem_page(self.inode.ino, index, true).ok_or(false)
    }

    /// Linux's memory-only files live on tmpfs (ZGC checks).
    fn statfs_magic(&self) -> u64 {
        TMPFS_MAGIC
    }

    fn seals(&self) -> u32 {
        self.inode.seals.load(Ordering::Relaxed)
    }

    fn add_seals(&self, seals: u32) -> Result<(), Errno> {
        if seals & !ALL_SEALS != 0 {
            return Err(Errno::EINVAL);
        }
        if self.flags.load(Ordering::Relaxed) & 3 == 0 {
            // Linux asks for a descriptor open for writing.
            return Err(Errno::EPERM);
        }
        self.sealed(SEAL_SEAL)?;
        if seals & SEAL_WRITE != 0 && crate::mm::vma::writable_shared_mapping(self.inode.ino) {
            return Err(Errno::EBUSY);
        }
        self.inode.seals.fetch_or(seals, Ordering::Relaxed);
        Ok(())
    }
}

impl crate::fd::FileLike for MemFd {
    fn read(&self, max: usize, _nonblock: bool) -> Result<Vec<u8>, Errno> {
        let mut pos = self.pos.lock();
        let out = self.read_at(*pos, max);
        *pos += out.len() as u64;
        Ok(out)
    }

    fn write(&self, data: &[u8], _nonblock: bool) -> Result<usize, Errno> {
        let mut pos = self.pos.lock();
        let at = if self.flags.load(Ordering::Relaxed) & crate::fd::O_APPEND != 0 {
            self.size()
        } else {
            *pos
        };
        let n = self.write_at(at, data)?;
        *pos = at + n as u64;
        Ok(n)
    }

    fn poll(&self) -> u16 {
        use super::poll_bits::{POLLIN, POLLOUT, POLLRDNORM, POLLWRNORM};
        POLLIN | POLLRDNORM | POLLOUT | POLLWRNORM
    }

    fn wakes(&self) -> [u64; 3] {
        [0; 3]
    }

    fn flags(&self) -> &AtomicU32 {
        &self.flags
    }

    fn mode(&self) -> u32 {
        0o100_777
    }

    fn own_inode(&self) -> bool {
        true
    }

    fn proc_link(&self) -> String {
        alloc::format!("/memfd:{} (deleted)", self.inode.name)
    }

    fn regular(&self) -> Option<&dyn crate::fd::RegularLike> {
        Some(self)
    }

    fn as_any(&self) -> &dyn core::any::Any {
        self
    }
}
