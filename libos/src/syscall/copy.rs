//! `copy_file_range(2)` and `sendfile(2)`: copies between descriptors
//! inside the kernel, through the same read and write paths as `read` and
//! `write` (the file cache for reads, 9P writes), 64 KiB at a time.

use alloc::vec;

use crate::errno::Errno;
use crate::fd::{self, File, O_ACCMODE, O_APPEND, Object};
use crate::mm::user;

/// Most bytes one call copies, as Linux (`MAX_RW_COUNT`).
const MAX_RW_COUNT: u64 = 0x7fff_f000;
/// The copy buffer.
const CHUNK: usize = 64 * 1024;
const S_IFMT: u32 = 0o170000;
const S_IFREG: u32 = 0o100000;
const S_IFDIR: u32 = 0o040000;
/// `EOVERFLOW`.
const EOVERFLOW: Errno = Errno(75);
/// `EXDEV`.
const EXDEV: Errno = Errno(18);

/// The file position of a 9P file or a memory-only file (0 otherwise).
fn position(o: &Object) -> u64 {
    match o {
        Object::File(f) => match &**f {
            File::P9 { offset, .. } => *offset.lock(),
            File::Console { .. } => 0,
        },
        _ => o.regular().map_or(0, |r| *r.position().lock()),
    }
}

fn set_position(o: &Object, pos: u64) {
    match o {
        Object::File(f) => {
            if let File::P9 { offset, .. } = &**f {
                *offset.lock() = pos;
            }
        }
        _ => {
            if let Some(r) = o.regular() {
                *r.position().lock() = pos;
            }
        }
    }
}

/// Reads from the source at `at` (`None`: a generated file's own
/// position), into a kernel buffer.
fn read_some(o: &Object, at: u64, buf: &mut [u8]) -> Result<usize, Errno> {
    match o {
        Object::File(f) => super::read::pread_kernel(f, at, buf),
        Object::Synthetic(s) => s.read(Some(at), buf),
        Object::Device(d) => d.read(buf),
        _ => {
            let r = o.regular().ok_or(Errno::EINVAL)?;
            let bytes = r.read_at(at, buf.len());
            buf[..bytes.len()].copy_from_slice(&bytes);
            Ok(bytes.len())
        }
    }
}

/// Copies up to `count` bytes from `src` at `from` to `dst` at `to` (or
/// its position); returns the bytes copied. A failure after some bytes
/// were copied ends the copy with what was done, as Linux does.
fn copy(
    src: &Object,
    mut from: u64,
    dst: &Object,
    mut to: Option<u64>,
    count: u64,
) -> Result<u64, Errno> {
    let mut buf = vec![0u8; CHUNK.min(count as usize).max(1)];
    let mut total = 0u64;
    while total < count {
        let want = buf.len().min((count - total) as usize);
        let n = match read_some(src, from, &mut buf[..want]) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if total == 0 => return Err(e),
            Err(_) => break,
        };
        let w = match super::write::write_bytes(dst, to, &buf[..n]) {
            Ok(w) => w,
            // SIGPIPE only when nothing went (see `write::raise`).
            Err(e) if total == 0 => return Err(crate::signal::sigpipe(e, false)),
            Err(_) => break,
        };
        total += w;
        from += w;
        to = to.map(|t| t + w);
        if w < n as u64 {
            break;
        }
    }
    Ok(total)
}

/// `sendfile(out_fd, in_fd, offset, count)`: from a file (at `*offset`,
/// which is advanced, or at and past its position) to any writable
/// descriptor at its position. The checks are Linux's, in its order
/// (`sendfile64`, `do_sendfile`, `splice_direct_to_actor`).
pub fn sendfile(a: &[u64; 6]) -> Result<u64, Errno> {
    let explicit = read_offset(a[2])?;
    let src = fd::object(a[1])?;
    if src.status_flags() & O_ACCMODE == 1 {
        return Err(Errno::EBADF);
    }
    // Pipes, sockets and the console have no pread: no offset for them.
    let seekable = match &src {
        Object::File(f) => matches!(&**f, File::P9 { .. }),
        Object::Synthetic(_) | Object::Device(_) => true,
        _ => src.regular().is_some(),
    };
    if explicit.is_some() && !seekable {
        return Err(Errno::ESPIPE);
    }
    let count = a[3];
    if (count as i64) < 0
        || explicit.is_some_and(|p| p < 0 || p.checked_add(count as i64).is_none())
    {
        return Err(Errno::EINVAL);
    }
    let count = count.min(MAX_RW_COUNT);
    let out = fd::object(a[0])?;
    if out.status_flags() & O_ACCMODE == 0 {
        return Err(Errno::EBADF);
    }
    // Into a pipe the bytes are spliced; anything else refuses O_APPEND.
    if out.status_flags() & O_APPEND != 0 && !matches!(out, Object::PipeWrite(_)) {
        return Err(Errno::EINVAL);
    }
    // The source must be seekable (Linux 6.18's FMODE_LSEEK test); then
    // nothing to copy is 0, even from a directory, which has nothing to
    // read.
    if !seekable {
        return Err(Errno::EINVAL);
    }
    if count == 0 {
        return Ok(0);
    }
    let start = match (&src, explicit) {
        (Object::File(f), _) if matches!(&**f, File::P9 { dir: true, .. }) => {
            return Err(Errno::EINVAL);
        }
        (Object::Synthetic(_) | Object::Device(_), at) => at.map_or(0, |p| p as u64),
        (_, at) => at.map_or_else(|| position(&src), |p| p as u64),
    };
    let n = copy(&src, start, &out, None, count)?;
    match explicit {
        Some(_) => user::copy_in(a[2], &(start + n).to_le_bytes())?,
        None => set_position(&src, start + n),
    }
    Ok(n)
}

/// `copy_file_range(fd_in, off_in, fd_out, off_out, len, flags)`: between
/// two regular files; each offset is the caller's (advanced) or the
/// file's position (advanced). The checks are Linux's, in its order
/// (`vfs_copy_file_range`, `generic_copy_file_checks`, `rw_verify_area`).
pub fn copy_file_range(a: &[u64; 6]) -> Result<u64, Errno> {
    let src = fd::object(a[0])?;
    let dst = fd::object(a[2])?;
    let off_in = read_offset(a[1])?;
    let off_out = read_offset(a[3])?;
    if a[5] != 0 {
        return Err(Errno::EINVAL);
    }
    let (sin, sout) = (attr(&src)?, attr(&dst)?);
    let kind = |st: &Option<Attr>| st.as_ref().map(|s| s.mode & S_IFMT);
    let (kin, kout) = (kind(&sin), kind(&sout));
    if kin == Some(S_IFDIR) || kout == Some(S_IFDIR) {
        return Err(Errno::EISDIR);
    }
    let (Some(sin), Some(sout)) = (sin, sout) else {
        return Err(Errno::EINVAL);
    };
    if kin != Some(S_IFREG) || kout != Some(S_IFREG) {
        return Err(Errno::EINVAL);
    }
    if src.status_flags() & O_ACCMODE == 1
        || dst.status_flags() & O_ACCMODE == 0
        || dst.status_flags() & O_APPEND != 0
    {
        return Err(Errno::EBADF);
    }
    // A memory-only file (tmpfs on Linux) and a host file are two file
    // systems, neither with a copy method of its own.
    if sin.memory != sout.memory {
        return Err(EXDEV);
    }
    let from = off_in.unwrap_or_else(|| position(&src) as i64);
    let to = off_out.unwrap_or_else(|| position(&dst) as i64);
    let len = a[4];
    // loff_t + size_t wraps as unsigned in Linux's check.
    if (from as u64).checked_add(len).is_none() || (to as u64).checked_add(len).is_none() {
        return Err(EOVERFLOW);
    }
    // The copy stops at the source's end; then the same file's ranges
    // must not overlap (its inode, whichever descriptions).
    let count = if from >= sin.size as i64 {
        0
    } else {
        // Unsigned, as Linux's: a negative offset fails below.
        len.min(sin.size.wrapping_sub(from as u64))
    };
    if sin.ino == sout.ino
        && to.wrapping_add(count as i64) > from
        && to < from.wrapping_add(count as i64)
    {
        return Err(Errno::EINVAL);
    }
    if from < 0 || to < 0 {
        return Err(Errno::EINVAL);
    }
    let (from, to) = (from as u64, to as u64);
    // Never past the source's end as it was: a copy within one file
    // would otherwise read what it has just written.
    let count = count.min(MAX_RW_COUNT);
    if count == 0 {
        return Ok(0);
    }
    let n = copy(&src, from, &dst, Some(to), count)?;
    match off_in {
        Some(_) => user::copy_in(a[1], &(from + n).to_le_bytes())?,
        None => set_position(&src, from + n),
    }
    match off_out {
        Some(_) => user::copy_in(a[3], &(to + n).to_le_bytes())?,
        None => set_position(&dst, to + n),
    }
    Ok(n)
}

/// A caller's `loff_t`, unchecked (`None`: no pointer).
fn read_offset(addr: u64) -> Result<Option<i64>, Errno> {
    if addr == 0 {
        return Ok(None);
    }
    Ok(Some(i64::from_le_bytes(user::read_array::<8>(addr)?)))
}

/// What `copy_file_range` checks of a file.
struct Attr {
    mode: u32,
    size: u64,
    ino: u64,
    /// A memory-only file (a memfd), not one of the namespace.
    memory: bool,
}

/// The attributes of a 9P file or a memory-only file (`None` for anything
/// else).
fn attr(o: &Object) -> Result<Option<Attr>, Errno> {
    if let Some(r) = o.regular() {
        return Ok(Some(Attr {
            mode: S_IFREG,
            size: r.size(),
            ino: r.ino(),
            memory: true,
        }));
    }
    let Object::File(f) = o else { return Ok(None) };
    let File::P9 { fid, ino, .. } = &**f else {
        return Ok(None);
    };
    let st = crate::p9::mounted().ok_or(Errno::EBADF)?.getattr(*fid)?;
    Ok(Some(Attr {
        mode: st.mode,
        size: st.size,
        ino: *ino,
        memory: false,
    }))
}
