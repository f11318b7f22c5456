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

/// A source position: the `loff_t` the caller passed, or the file's own.
fn read_loff(addr: u64) -> Result<Option<u64>, Errno> {
    if addr == 0 {
        return Ok(None);
    }
    let v = i64::from_le_bytes(user::read_array::<8>(addr)?);
    if v < 0 {
        return Err(Errno::EINVAL);
    }
    Ok(Some(v as u64))
}

/// The file position of a 9P file.
fn position(f: &File) -> u64 {
    match f {
        File::P9 { offset, .. } => *offset.lock(),
        File::Console { .. } => 0,
    }
}

fn set_position(f: &File, pos: u64) {
    if let File::P9 { offset, .. } = f {
        *offset.lock() = pos;
    }
}

/// Whether `o` is a regular 9P file (`EISDIR` for a directory).
fn regular(o: &Object) -> Result<bool, Errno> {
    let Object::File(f) = o else {
        return Ok(false);
    };
    let File::P9 { fid, .. } = &**f else {
        return Ok(false);
    };
    let st = crate::p9::mounted().ok_or(Errno::EBADF)?.getattr(*fid)?;
    match st.mode & S_IFMT {
        S_IFREG => Ok(true),
        S_IFDIR => Err(Errno::EISDIR),
        _ => Ok(false),
    }
}

/// Reads from the source at `at` (`None`: a generated file's own
/// position), into a kernel buffer.
fn read_some(o: &Object, at: u64, buf: &mut [u8]) -> Result<usize, Errno> {
    match o {
        Object::File(f) => super::read::pread_kernel(f, at, buf),
        Object::Synthetic(s) => s.read(Some(at), buf),
        Object::Device(d) => d.read(buf),
        _ => Err(Errno::EINVAL),
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
/// descriptor at its position.
pub fn sendfile(a: &[u64; 6]) -> Result<u64, Errno> {
    let out = fd::object(a[0])?;
    let src = fd::object(a[1])?;
    let count = a[3].min(MAX_RW_COUNT);
    if src.status_flags() & O_ACCMODE == 1 || out.status_flags() & O_ACCMODE == 0 {
        return Err(Errno::EBADF);
    }
    if out.status_flags() & O_APPEND != 0 {
        return Err(Errno::EINVAL);
    }
    let explicit = read_loff(a[2])?;
    let start = match (&src, explicit) {
        (_, Some(at)) => at,
        (Object::File(f), None) => position(f),
        (Object::Synthetic(_) | Object::Device(_), None) => 0,
        _ => return Err(Errno::EINVAL),
    };
    if matches!(&src, Object::File(f) if !matches!(&**f, File::P9 { .. })) {
        return Err(Errno::EINVAL);
    }
    if count == 0 {
        return Ok(0);
    }
    let n = copy(&src, start, &out, None, count)?;
    match (explicit, &src) {
        (Some(_), _) => user::copy_in(a[2], &(start + n).to_le_bytes())?,
        (None, Object::File(f)) => set_position(f, start + n),
        _ => {}
    }
    Ok(n)
}

/// `copy_file_range(fd_in, off_in, fd_out, off_out, len, flags)`: between
/// two regular files; each offset is the caller's (advanced) or the
/// file's position (advanced).
pub fn copy_file_range(a: &[u64; 6]) -> Result<u64, Errno> {
    if a[5] != 0 {
        return Err(Errno::EINVAL);
    }
    let src = fd::object(a[0])?;
    let dst = fd::object(a[2])?;
    if src.status_flags() & O_ACCMODE == 1
        || dst.status_flags() & O_ACCMODE == 0
        || dst.status_flags() & O_APPEND != 0
    {
        return Err(Errno::EBADF);
    }
    if !regular(&src)? || !regular(&dst)? {
        return Err(Errno::EINVAL);
    }
    let (Object::File(fin), Object::File(fout)) = (&src, &dst) else {
        return Err(Errno::EINVAL);
    };
    let off_in = read_loff(a[1])?;
    let off_out = read_loff(a[3])?;
    let from = off_in.unwrap_or_else(|| position(fin));
    let to = off_out.unwrap_or_else(|| position(fout));
    let len = a[4].min(MAX_RW_COUNT);
    // The same file, overlapping ranges: Linux refuses.
    if alloc::sync::Arc::ptr_eq(fin, fout)
        && from < to.saturating_add(len)
        && to < from.saturating_add(len)
    {
        return Err(Errno::EINVAL);
    }
    if len == 0 {
        return Ok(0);
    }
    let n = copy(&src, from, &dst, Some(to), len)?;
    match off_in {
        Some(_) => user::copy_in(a[1], &(from + n).to_le_bytes())?,
        None => set_position(fin, from + n),
    }
    match off_out {
        Some(_) => user::copy_in(a[3], &(to + n).to_le_bytes())?,
        None => set_position(fout, to + n),
    }
    Ok(n)
}
