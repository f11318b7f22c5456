//! `fallocate(2)`: space for a file of the 9P namespace. Blocks are the
//! host file system's business, so allocating is a size change (through
//! `Tsetattr`, as `ftruncate`) when the range reaches past the end, and
//! nothing otherwise; punching a hole or zeroing a range writes zeros over
//! the part inside the file, so it reads back as Linux's would (the host
//! file keeps its blocks). Collapsing, inserting and unsharing ranges and
//! writing zeroes to the device are `EOPNOTSUPP`, as on a file system
//! without them.

use alloc::vec;

use crate::errno::Errno;
use crate::fd::{self, File, O_ACCMODE, Object};

const FALLOC_FL_KEEP_SIZE: u64 = 0x01;
const FALLOC_FL_PUNCH_HOLE: u64 = 0x02;
const FALLOC_FL_COLLAPSE_RANGE: u64 = 0x08;
const FALLOC_FL_ZERO_RANGE: u64 = 0x10;
const FALLOC_FL_INSERT_RANGE: u64 = 0x20;
const FALLOC_FL_UNSHARE_RANGE: u64 = 0x40;
const FALLOC_FL_WRITE_ZEROES: u64 = 0x80;
const KNOWN: u64 = FALLOC_FL_KEEP_SIZE
    | FALLOC_FL_PUNCH_HOLE
    | FALLOC_FL_COLLAPSE_RANGE
    | FALLOC_FL_ZERO_RANGE
    | FALLOC_FL_INSERT_RANGE
    | FALLOC_FL_UNSHARE_RANGE
    | FALLOC_FL_WRITE_ZEROES;
const S_IFMT: u32 = 0o170000;
const S_IFREG: u32 = 0o100000;
const S_IFDIR: u32 = 0o040000;
/// The largest file size (`MAX_LFS_FILESIZE`).
const MAX_SIZE: u64 = i64::MAX as u64;
/// `EFBIG`.
const EFBIG: Errno = Errno(27);

/// `fallocate(fd, mode, offset, len)`.
pub fn fallocate(a: &[u64; 6]) -> Result<u64, Errno> {
    let (mode, offset, len) = (a[1] as u32 as u64, a[2] as i64, a[3] as i64);
    if offset < 0 || len <= 0 {
        return Err(Errno::EINVAL);
    }
    let (offset, len) = (offset as u64, len as u64);
    if mode & !KNOWN != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    // The rules of vfs_fallocate().
    if mode & FALLOC_FL_PUNCH_HOLE != 0 && mode & FALLOC_FL_KEEP_SIZE == 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    let exclusive = mode & !FALLOC_FL_KEEP_SIZE;
    if exclusive.count_ones() > 1 {
        return Err(Errno::EOPNOTSUPP);
    }
    // Linux 6.17's rule: the modes that change the size cannot keep it.
    if mode & (FALLOC_FL_COLLAPSE_RANGE | FALLOC_FL_INSERT_RANGE | FALLOC_FL_WRITE_ZEROES) != 0
        && mode & FALLOC_FL_KEEP_SIZE != 0
    {
        return Err(Errno::EOPNOTSUPP);
    }
    let o = fd::object(a[0])?;
    if o.status_flags() & O_ACCMODE == 0 {
        return Err(Errno::EBADF);
    }
    if let Some(m) = o.regular() {
        return m.fallocate(mode as u32, offset, len).map(|()| 0);
    }
    let (fid, ino, path) = match &o {
        Object::File(f) => match &**f {
            File::P9 { fid, ino, path, .. } => (*fid, *ino, path.as_str()),
            File::Console { .. } => return Err(Errno::ENODEV),
        },
        Object::PipeRead(_) | Object::PipeWrite(_) => return Err(Errno::ESPIPE),
        _ => return Err(Errno::ENODEV),
    };
    let c = crate::p9::mounted().ok_or(Errno::EBADF)?;
    let st = c.getattr(fid)?;
    match st.mode & S_IFMT {
        S_IFREG => {}
        S_IFDIR => return Err(Errno::EISDIR),
        _ => return Err(Errno::ENODEV),
    }
    let end = offset
        .checked_add(len)
        .filter(|&e| e <= MAX_SIZE)
        .ok_or(EFBIG)?;
    if mode & FALLOC_FL_KEEP_SIZE == 0 && end > st.size {
        crate::signal::fsize_grow_ok(end)?;
    }
    match exclusive {
        0 => {}
        FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE => zero(fid, ino, offset, end.min(st.size))?,
        _ => return Err(Errno::EOPNOTSUPP),
    }
    if mode & FALLOC_FL_KEEP_SIZE == 0 && end > st.size {
        c.truncate(fid, end)?;
    }
    crate::vfs::inotify::notify(path, crate::vfs::inotify::IN_MODIFY);
    Ok(0)
}

/// Writes zeros over `[offset, stop)` of the file `fid` (inode `ino`),
/// and into the partition's shared pages of it.
fn zero(fid: u32, ino: u64, offset: u64, stop: u64) -> Result<(), Errno> {
    let c = crate::p9::mounted().ok_or(Errno::EBADF)?;
    let zeros = vec![0u8; (c.iounit() as usize).min(64 * 1024)];
    let mut at = offset;
    while at < stop {
        let n = (zeros.len() as u64).min(stop - at) as usize;
        let w = c.write(fid, at, &zeros[..n])?;
        crate::mm::shared::wrote(ino, at, &zeros[..w]);
        if w == 0 {
            return Err(Errno::EIO);
        }
        at += w as u64;
    }
    Ok(())
}

/// `MADV_REMOVE` of a shared mapping of `file`: a hole punched at
/// `offset` for `len` bytes (within the file), as `fallocate` punches one.
pub fn punch(file: &File, offset: u64, len: u64) -> Result<(), Errno> {
    let File::P9 { fid, ino, path, .. } = file else {
        return Err(Errno::ENODEV);
    };
    let c = crate::p9::mounted().ok_or(Errno::EBADF)?;
    let size = c.getattr(*fid)?.size;
    zero(*fid, *ino, offset, offset.saturating_add(len).min(size))?;
    crate::vfs::inotify::notify(path, crate::vfs::inotify::IN_MODIFY);
    Ok(())
}
