//! `read(2)`, `pread64(2)`, `readv(2)`, `preadv(2)`, `lseek(2)`: every kind
//! of descriptor.

use alloc::vec;
use alloc::vec::Vec;

use crate::errno::Errno;
use crate::fd::{self, File, Object};
use crate::mm::user;

/// At most this much is read per call from the library OS's own files.
const CHUNK: u64 = 1 << 20;

fn read_file(f: &File, offset: Option<u64>, addr: u64, len: u64) -> Result<u64, Errno> {
    let c = crate::p9::mounted().ok_or(Errno::EBADF)?;
    let (fid, pos, key, ino) = match f {
        File::P9 { dir: true, .. } => return Err(Errno::EISDIR),
        File::P9 {
            fid,
            offset: off,
            cache,
            ino,
            ..
        } => (*fid, offset.unwrap_or(*off.lock()), *cache, *ino),
        File::Console { fd: 0 } => {
            // stdin is the gateway's /dev/cons.
            let cons = c.walk_path("/dev/cons")?;
            let r = c.open(cons, 0).and_then(|_| {
                let mut buf = vec![0u8; len.min(4096) as usize];
                let n = c.read(cons, 0, &mut buf)?;
                user::copy_in(addr, &buf[..n])?;
                Ok(n as u64)
            });
            c.clunk(cons);
            return r;
        }
        File::Console { .. } => return Err(Errno::EBADF),
    };
    // A regular file reads in full up to its end, as on Linux (HotSpot
    // reads its CDS archive's regions with one unchecked read each), one
    // 9P message (iounit) at a time; a short reply means the end.
    let chunk = len.min(u64::from(c.iounit())) as usize;
    let mut buf = vec![0u8; chunk];
    let mut n = 0usize;
    while (n as u64) < len {
        let want = chunk.min((len - n as u64) as usize);
        let at = pos + n as u64;
        let got = match read_chunk(c, fid, key, ino, at, &mut buf[..want]) {
            Ok(g) => g,
            Err(e) if n == 0 => return Err(e),
            Err(_) => break,
        };
        // Up to a hole in the buffer, as Linux: the bytes before it count
        // (and move the position), none is EFAULT.
        let put = match user::copy_in_prefix(addr + n as u64, &buf[..got]) {
            Ok(p) => p,
            Err(e) if n == 0 => return Err(e),
            Err(_) => 0,
        };
        n += put;
        if got < want || put < got {
            break;
        }
    }
    if offset.is_none()
        && let File::P9 { offset: off, .. } = f
    {
        *off.lock() = pos + n as u64;
    }
    if n > 0
        && let File::P9 { path, .. } = f
    {
        crate::vfs::inotify::notify(path, crate::vfs::inotify::IN_ACCESS);
    }
    Ok(n as u64)
}

/// One read of a 9P file at `at` into a kernel buffer (at most one
/// message), through the file cache when the file has a key; what its
/// shared pages hold wins over the file's bytes (`mm::shared`).
fn read_chunk(
    c: &crate::p9::Client,
    fid: crate::p9::Fid,
    key: Option<u64>,
    ino: u64,
    at: u64,
    buf: &mut [u8],
) -> Result<usize, Errno> {
    use crate::drivers::doorbell::file_io;
    match key.and_then(|k| crate::cache::current().map(|cache| (k, cache))) {
        Some((k, cache)) => cache.read(k, at, buf, &mut |o, b| file_io(|| c.read(fid, o, b))),
        None => {
            let n = file_io(|| c.read(fid, at, buf))?;
            crate::mm::shared::overlay(ino, at, &mut buf[..n]);
            Ok(n)
        }
    }
}

/// Reads a 9P file at `at` into a kernel buffer (`copy_file_range`,
/// `sendfile`): up to one message's worth; 0 at the end of the file.
pub fn pread_kernel(f: &File, at: u64, buf: &mut [u8]) -> Result<usize, Errno> {
    let c = crate::p9::mounted().ok_or(Errno::EBADF)?;
    let File::P9 {
        fid, cache, ino, ..
    } = f
    else {
        return Err(Errno::EINVAL);
    };
    let want = buf.len().min(c.iounit() as usize);
    read_chunk(c, *fid, *cache, *ino, at, &mut buf[..want])
}

/// Reads into `[addr, addr+len)` from `o` at `offset` (or the position).
pub fn read_object(o: &Object, offset: Option<u64>, addr: u64, len: u64) -> Result<u64, Errno> {
    // Below the lowest mappable address is still the program's for Linux
    // (`access_ok`): a read that takes before it copies (an eventfd, a
    // signalfd, a datagram) loses what it took there, as into any page
    // not mapped.
    let lost_below = matches!(o, Object::Like(l) if l.taken_before_copy())
        && addr
            .checked_add(len)
            .is_some_and(|end| end <= user::USER_MAX);
    if !lost_below {
        user::check_range(addr, len)?;
    }
    if o.status_flags() & fd::O_ACCMODE == 1 {
        return Err(Errno::EBADF);
    }
    let nonblock = o.nonblocking();
    let positional = |bytes: &[u8]| -> Result<u64, Errno> {
        user::copy_in(addr, bytes)?;
        Ok(bytes.len() as u64)
    };
    match o {
        Object::File(f) => read_file(f, offset, addr, len),
        Object::Synthetic(s) => {
            let mut buf = vec![0u8; len.min(CHUNK) as usize];
            let n = s.read(offset, &mut buf)?;
            positional(&buf[..n])
        }
        Object::Device(d) => {
            let mut buf = vec![0u8; len.min(CHUNK) as usize];
            let n = d.read(&mut buf)?;
            positional(&buf[..n])
        }
        Object::PipeRead(p) => {
            if offset.is_some() {
                return Err(Errno::ESPIPE);
            }
            let max = stream_room(o, &[(addr, len)], len.min(CHUNK))?;
            positional(&p.read(max as usize, nonblock)?)
        }
        Object::PipeWrite(_) => Err(Errno::EBADF),
        // No read operation.
        Object::Epoll(_) => Err(Errno::EINVAL),
        Object::Like(l) => {
            if let Some(m) = l.regular() {
                // Not through a write-only description (/proc/self/fd).
                if l.flags().load(core::sync::atomic::Ordering::Relaxed) & crate::fd::O_ACCMODE == 1
                {
                    return Err(Errno::EBADF);
                }
                // A memory-only file reads as a regular one.
                let max = len.min(CHUNK) as usize;
                return match offset {
                    Some(at) => positional(&m.read_at(at, max)),
                    None => positional(&l.read(max, nonblock)?),
                };
            }
            if offset.is_some() {
                return Err(Errno::ESPIPE);
            }
            let max = stream_room(o, &[(addr, len)], len.min(CHUNK))?;
            positional(&l.read(max as usize, nonblock)?)
        }
    }
}

/// Largest read served by a direct call (bigger ones trap).
const DIRECT_MAX: u64 = 64 * 1024;

/// `read`/`pread64` in a direct call (see `syscall::direct`), served only
/// when nothing can wait: a regular file whose bytes are all in the file
/// cache, copied into pages of the program that are already present and
/// writable. `None` to have the call trap instead (before any effect).
pub fn read_direct(a: &[u64; 6], positional: bool) -> Option<u64> {
    let (addr, len) = (a[1], a[2]);
    if len == 0 || len > DIRECT_MAX || positional && (a[3] as i64) < 0 {
        return None;
    }
    if crate::vfs::inotify::watching() {
        return None;
    }
    let c = crate::p9::mounted()?;
    if len > u64::from(c.iounit()) {
        return None;
    }
    let o = fd::object(a[0]).ok()?;
    if let Object::Like(l) = &o {
        let r = if positional {
            None
        } else {
            like_now(&**l, o.nonblocking(), addr, len)
        };
        super::release(o);
        return r;
    }
    let served = (|| {
        let Object::File(f) = &o else { return None };
        let File::P9 {
            dir: false,
            offset,
            cache: Some(key),
            ..
        } = &**f
        else {
            return None;
        };
        if o.status_flags() & fd::O_ACCMODE == 1 {
            return None;
        }
        let cache = crate::cache::current()?;
        // Interrupts off: no other thread can unmap the buffer between the
        // check and the copy, which goes straight from the cache's blocks
        // to the program's pages (nothing the host must map anew).
        let irq = crate::arch::cpu::irq_save();
        let r = (|| {
            if !user::present_writable(addr, len) {
                return None;
            }
            let pos = if positional { a[3] } else { *offset.lock() };
            // SAFETY: the range is present, writable user memory (checked
            // above, interrupts off); the program may race on it as with
            // any read(2), which only affects the bytes it sees.
            let out = unsafe { core::slice::from_raw_parts_mut(addr as *mut u8, len as usize) };
            // A miss would be 9P I/O, a wait: the call traps instead (the
            // bytes copied so far are rewritten by the trapped read).
            let n = cache
                .read(*key, pos, out, &mut |_, _| Err(Errno::EAGAIN))
                .ok()?;
            if !positional {
                *offset.lock() = pos + n as u64;
            }
            Some(n as u64)
        })();
        crate::arch::cpu::irq_restore(irq);
        r
    })();
    super::release(o);
    served
}

/// A direct `read` of a socket or eventfd: what it holds now, copied into
/// present, writable pages; `None` (nothing taken) when the read would
/// wait or the buffer is not mapped yet.
fn like_now(l: &dyn fd::FileLike, nonblock: bool, addr: u64, len: u64) -> Option<u64> {
    // Interrupts off from the check to the copy: the pages stay mapped.
    let irq = crate::arch::cpu::irq_save();
    let r = (|| {
        if !user::present_writable(addr, len) {
            return None;
        }
        match l.read_now(len as usize)? {
            Ok(bytes) => {
                let n = bytes.len().min(len as usize);
                // SAFETY: `[addr, addr+len)` is present, writable user
                // memory (checked above, interrupts off) and `n <= len`.
                unsafe { core::ptr::copy_nonoverlapping(bytes.as_ptr(), addr as *mut u8, n) };
                Some(n as u64)
            }
            // Nothing there: a blocking read waits, trapped.
            Err(Errno::EAGAIN) if !nonblock => None,
            Err(e) => Some(super::errno_value(e)),
        }
    })();
    crate::arch::cpu::irq_restore(irq);
    r
}

/// `read(fd, buf, count)`.
pub fn read(a: &[u64; 6]) -> Result<u64, Errno> {
    read_object(&fd::object(a[0])?, None, a[1], a[2])
}

/// `pread64(fd, buf, count, offset)`.
pub fn pread64(a: &[u64; 6]) -> Result<u64, Errno> {
    if (a[3] as i64) < 0 {
        return Err(Errno::EINVAL);
    }
    read_object(&fd::object(a[0])?, Some(a[3]), a[1], a[2])
}

/// The (base, length) pairs of a user `iovec` array.
pub fn iovecs(addr: u64, count: u64) -> Result<Vec<(u64, u64)>, Errno> {
    if count > 1024 {
        return Err(Errno::EINVAL);
    }
    let iov = user::read_vec(addr, count * 16)?;
    iov.chunks_exact(16)
        .map(|v| {
            let base = u64::from_le_bytes(v[..8].try_into().map_err(|_| Errno::EFAULT)?);
            let len = u64::from_le_bytes(v[8..].try_into().map_err(|_| Errno::EFAULT)?);
            Ok((base, len))
        })
        .collect()
}

/// The most a read of stream `o` may take into `pieces` (`want` bytes in
/// all) when the program's buffer has a hole, so that no byte is taken
/// that could not be delivered, as on Linux: a pipe fills whole buffers
/// (pages) before the hole, a socket copies nothing (`EFAULT`, the bytes
/// stay for the next read); what Linux takes before copying (an eventfd's
/// counter) is read and lost to the hole.
pub fn stream_room(o: &Object, pieces: &[(u64, u64)], want: u64) -> Result<u64, Errno> {
    let room = user::writable_prefix(pieces, want);
    if room >= want {
        return Ok(want);
    }
    match o {
        Object::PipeRead(_) if room >= 4096 => Ok(room - room % 4096),
        Object::Like(l) if l.taken_before_copy() => Ok(want),
        _ => Err(Errno::EFAULT),
    }
}

/// Whether a positional read of `o` is `ESPIPE` before anything else
/// (Linux's `FMODE_PREAD`): a stream, or a pipe's write end.
fn unseekable(o: &Object) -> bool {
    stream_reader(o, false).is_some() || matches!(o, Object::PipeWrite(_))
}

/// Reads a stream (a pipe, a socket, an eventfd…) once, into a kernel
/// buffer; `None` for a file with a position. Nothing is read before the
/// caller's checks pass: the bytes would be lost. `nowait`: as if the
/// descriptor were non-blocking (`RWF_NOWAIT`).
fn stream_reader(
    o: &Object,
    nowait: bool,
) -> Option<impl FnOnce(usize) -> Result<Vec<u8>, Errno> + '_> {
    let nonblock = o.nonblocking() || nowait;
    match o {
        // A memory-only file reads as a regular one (`read_object`).
        Object::Like(l) if l.regular().is_some() => None,
        Object::Like(_) | Object::PipeRead(_) => Some(move |max: usize| match o {
            Object::Like(l) => l.read(max, nonblock),
            Object::PipeRead(p) => p.read(max, nonblock),
            _ => Err(Errno::EINVAL),
        }),
        _ => None,
    }
}

fn readv_at(
    o: &Object,
    mut offset: Option<u64>,
    iov: &[(u64, u64)],
    nowait: bool,
) -> Result<u64, Errno> {
    // A stream is read once and scattered, as Linux does: a second read
    // would wait for bytes the first did not find.
    if let Some(read) = stream_reader(o, nowait) {
        if offset.is_some() {
            return Err(Errno::ESPIPE);
        }
        for &(base, len) in iov {
            user::check_range(base, len)?;
        }
        let want: u64 = iov.iter().map(|&(_, n)| n).fold(0, u64::saturating_add);
        let want = stream_room(o, iov, want.min(CHUNK))?;
        let data = read(want as usize)?;
        let mut at = 0usize;
        for &(base, len) in iov {
            let n = (len as usize).min(data.len() - at);
            if n > 0 {
                user::copy_in(base, &data[at..at + n])?;
            }
            at += n;
        }
        return Ok(data.len() as u64);
    }
    let mut total = 0u64;
    for &(base, len) in iov {
        if len == 0 {
            continue;
        }
        let n = match read_object(o, offset, base, len) {
            Ok(n) => n,
            // What was read so far counts; the error shows on the next call.
            Err(_) if total > 0 => break,
            Err(e) => return Err(e),
        };
        total += n;
        offset = offset.map(|p| p + n);
        if n < len {
            break;
        }
    }
    Ok(total)
}

/// `EBADF` for a vector call that reads (`write` false) a descriptor
/// opened `O_WRONLY` or writes one opened `O_RDONLY`: Linux's `vfs_readv`
/// and `vfs_writev` look at the access mode before the vector.
pub fn vector_mode(o: &Object, write: bool) -> Result<(), Errno> {
    if o.status_flags() & fd::O_ACCMODE == u32::from(!write) {
        return Err(Errno::EBADF);
    }
    Ok(())
}

/// `readv(fd, iov, iovcnt)`: the access mode, then the vector.
pub fn readv(a: &[u64; 6]) -> Result<u64, Errno> {
    let o = fd::object(a[0])?;
    vector_mode(&o, false)?;
    readv_at(&o, None, &iovecs(a[1], a[2])?, false)
}

/// `preadv(fd, iov, iovcnt, offset)`: Linux's order of checks (the
/// offset, the descriptor, `ESPIPE`, the access mode, then the vector).
pub fn preadv(a: &[u64; 6]) -> Result<u64, Errno> {
    if (a[3] as i64) < 0 {
        return Err(Errno::EINVAL);
    }
    let o = fd::object(a[0])?;
    if unseekable(&o) {
        return Err(Errno::ESPIPE);
    }
    vector_mode(&o, false)?;
    readv_at(&o, Some(a[3]), &iovecs(a[1], a[2])?, false)
}

/// `preadv2(fd, iov, iovcnt, offset_lo, offset_hi, flags)`: `preadv`, or
/// `readv` at offset -1, with `RWF_*` flags (`rw_flags`).
pub fn preadv2(a: &[u64; 6]) -> Result<u64, Errno> {
    let c = v2_call(a, false)?;
    readv_at(&c.o, c.at, &c.iov, c.rwf.nowait)
}

/// A `preadv2` or `pwritev2` call's arguments.
pub struct V2Call {
    pub o: Object,
    /// The offset; `None`: the file position (-1).
    pub at: Option<u64>,
    pub iov: Vec<(u64, u64)>,
    pub rwf: Rwf,
}

/// Reads a `preadv2`/`pwritev2` call's arguments, checked in Linux's
/// order: the offset (on x86-64 `offset_lo` whole, Linux's
/// `pos_from_hilo`; below -1 `EINVAL`), the descriptor, `ESPIPE` for an
/// offset on what has none, the access mode (Linux's `vfs_readv` and
/// `vfs_writev`), the vector, then the flags, which Linux looks at only for
/// a transfer of something.
pub fn v2_call(a: &[u64; 6], write: bool) -> Result<V2Call, Errno> {
    let pos = a[3] as i64;
    if pos < -1 {
        return Err(Errno::EINVAL);
    }
    let o = fd::object(a[0])?;
    let at = u64::try_from(pos).ok();
    let unseekable = if write {
        super::write::unseekable(&o)
    } else {
        unseekable(&o)
    };
    if at.is_some() && unseekable {
        return Err(Errno::ESPIPE);
    }
    vector_mode(&o, write)?;
    let iov = iovecs(a[1], a[2])?;
    let rwf = if iov.iter().all(|&(_, n)| n == 0) {
        Rwf::default()
    } else {
        rw_flags(&o, a[5] as u32, write)?
    };
    Ok(V2Call { o, at, iov, rwf })
}

/// `RWF_*` of `linux/fs.h`: what `preadv2` and `pwritev2` take.
const RWF_HIPRI: u32 = 0x1;
const RWF_NOWAIT: u32 = 0x8;
const RWF_APPEND: u32 = 0x10;
const RWF_NOAPPEND: u32 = 0x20;
const RWF_ATOMIC: u32 = 0x40;
const RWF_DONTCACHE: u32 = 0x80;
const RWF_NOSIGNAL: u32 = 0x100;
/// `RWF_HIPRI`, `RWF_DSYNC`, `RWF_SYNC` and the above (Linux 6.15+).
const RWF_SUPPORTED: u32 = 0x1ff;

/// What a `preadv2`/`pwritev2` call's flags ask of it.
#[derive(Default, Clone, Copy)]
pub struct Rwf {
    /// `RWF_NOWAIT`: `EAGAIN` rather than waiting, as if non-blocking.
    pub nowait: bool,
    /// `RWF_APPEND` (`Some(true)`: at the end) or `RWF_NOAPPEND`
    /// (`Some(false)`: at the offset even with `O_APPEND`).
    pub append: Option<bool>,
    /// `RWF_NOSIGNAL`: a write to a broken pipe or connection is `EPIPE`
    /// without `SIGPIPE`.
    pub nosignal: bool,
}

/// The flags checked as Linux's `kiocb_set_rw_flags` and then the file's
/// own write path check them, for a file of the namespace as on a disk
/// file system (ext4) and a memory-only one as on tmpfs. `RWF_HIPRI`
/// (polled I/O), `RWF_DSYNC` and `RWF_SYNC` change nothing: writes reach
/// the gateway synchronously. `RWF_ATOMIC` needs an `O_DIRECT` file on a
/// device that can (`EOPNOTSUPP`, as for every file here); `RWF_NOWAIT`
/// is refused by tmpfs, and by ext4 for writes (buffered writes may
/// wait); `RWF_DONTCACHE` needs a disk file system.
pub fn rw_flags(o: &Object, flags: u32, write: bool) -> Result<Rwf, Errno> {
    // A directory has no `read_iter`: Linux's loop over the vector takes
    // no flag but `RWF_HIPRI`, before any other check (then `EISDIR` from
    // the read itself).
    if matches!(o, Object::File(f) if matches!(&**f, File::P9 { dir: true, .. })) {
        return match flags & !RWF_HIPRI {
            0 => Ok(Rwf::default()),
            _ => Err(Errno::EOPNOTSUPP),
        };
    }
    if flags & !RWF_SUPPORTED != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    if flags & RWF_APPEND != 0 && flags & RWF_NOAPPEND != 0 {
        return Err(Errno::EINVAL);
    }
    let memory = o.regular().is_some();
    let disk = matches!(o, Object::File(f) if matches!(&**f, File::P9 { dir: false, .. }));
    let nowait = flags & RWF_NOWAIT != 0;
    if (nowait && memory)
        || flags & RWF_ATOMIC != 0
        || (flags & RWF_DONTCACHE != 0 && !disk)
        || (nowait && write && disk)
    {
        return Err(Errno::EOPNOTSUPP);
    }
    let append = if !write {
        None
    } else if flags & RWF_APPEND != 0 {
        Some(true)
    } else if flags & RWF_NOAPPEND != 0 {
        Some(false)
    } else {
        None
    };
    Ok(Rwf {
        nowait,
        append,
        nosignal: flags & RWF_NOSIGNAL != 0,
    })
}

/// `lseek(fd, offset, whence)`.
pub fn lseek(a: &[u64; 6]) -> Result<u64, Errno> {
    lseek_object(&fd::object(a[0])?, a)
}

/// `lseek` in a direct call (see `syscall::direct`): `SEEK_SET` and
/// `SEEK_CUR` only move a position (the others may ask the file's size of
/// the gateway, a wait); `None` to trap.
pub fn lseek_direct(a: &[u64; 6]) -> Option<Result<u64, Errno>> {
    if a[2] > 1 {
        return None;
    }
    let o = match fd::object(a[0]) {
        Ok(o) => o,
        Err(e) => return Some(Err(e)),
    };
    let r = lseek_object(&o, a);
    super::release(o);
    Some(r)
}

fn lseek_object(o: &Object, a: &[u64; 6]) -> Result<u64, Errno> {
    let (cell, size) = match o {
        Object::File(f) => match &**f {
            // A directory's position is only set or moved (getdents64
            // reads it from the start); its end, data and holes are EINVAL,
            // as on tmpfs.
            File::P9 { dir: true, .. } if a[2] > 1 => return Err(Errno::EINVAL),
            File::P9 { fid, offset, .. } => {
                let size = if matches!(a[2], 2..=4) {
                    let c = crate::p9::mounted().ok_or(Errno::EBADF)?;
                    c.getattr(*fid)?.size
                } else {
                    0
                };
                (offset, size)
            }
            File::Console { .. } => return Err(Errno::ESPIPE),
        },
        Object::Synthetic(s) => (&s.offset, s.len()),
        Object::Like(l) if l.regular().is_some() => match l.regular() {
            Some(m) => (m.position(), m.size()),
            None => return Err(Errno::ESPIPE),
        },
        // Seeking a device succeeds and means nothing.
        Object::Device(_) => return Ok(0),
        _ => return Err(Errno::ESPIPE),
    };
    let base = match a[2] {
        0 => 0,
        1 => *cell.lock() as i64,
        2 => size as i64,
        // SEEK_DATA, SEEK_HOLE: 9P cannot ask where the holes are, so the
        // whole file is data, as in Linux's generic implementation.
        3 | 4 => {
            let off = a[1] as i64;
            if off < 0 || off as u64 >= size {
                return Err(Errno::ENXIO);
            }
            let pos = if a[2] == 3 { off as u64 } else { size };
            *cell.lock() = pos;
            return Ok(pos);
        }
        _ => return Err(Errno::EINVAL),
    };
    let pos = base
        .checked_add(a[1] as i64)
        .filter(|p| *p >= 0)
        .ok_or(Errno::EINVAL)?;
    *cell.lock() = pos as u64;
    Ok(pos as u64)
}
