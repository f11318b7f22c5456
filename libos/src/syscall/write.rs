//! `write(2)`, `pwrite64(2)`, `writev(2)`, `pwritev(2)`: the console, files
//! of the 9P namespace, and the library OS's own files.

use super::read::Rwf;
use crate::console::{self, Stream};
use crate::errno::Errno;
use crate::fd::{self, File, O_ACCMODE, O_APPEND, Object};
use crate::mm::user;
use crate::vfs::gather::Gather;
use alloc::vec::Vec;

/// What a write takes its bytes from: the kernel's own (a gathered
/// `writev`, `sendfile`), or the program's memory, copied a piece at a time
/// as the write goes, so that a page another thread unmaps meanwhile ends
/// the write early (`EFAULT` or the count so far, as on Linux) instead of
/// faulting in the kernel.
#[derive(Clone, Copy)]
enum Source<'a> {
    Kernel(&'a [u8]),
    User { addr: u64, len: u64 },
}

impl Source<'_> {
    fn len(&self) -> usize {
        match self {
            Source::Kernel(b) => b.len(),
            Source::User { len, .. } => *len as usize,
        }
    }

    /// Bytes `[off, off+n)`: borrowed, or copied into `buf`. Fewer than
    /// `n` when a hole in the program's memory starts inside, `EFAULT` when
    /// one starts at `off`.
    fn piece<'b>(&'b self, off: usize, n: usize, buf: &'b mut Vec<u8>) -> Result<&'b [u8], Errno> {
        match self {
            Source::Kernel(b) => Ok(&b[off..off + n]),
            Source::User { addr, .. } => {
                buf.clear();
                match user::read_append(buf, addr + off as u64, n as u64) {
                    Ok(()) => Ok(buf),
                    Err((0, e)) => Err(e),
                    Err(_) => Ok(buf),
                }
            }
        }
    }
}

/// Writes `src` to `f` (at `at`, or at and past the file position);
/// returns how many bytes were written.
fn write_file(
    f: &File,
    at: Option<u64>,
    src: Source<'_>,
    append: Option<bool>,
) -> Result<u64, Errno> {
    let total = src.len();
    let mut buf = Vec::new();
    match f {
        File::Console { fd } => {
            // The VMM reads console buffers by guest-physical address, and
            // user memory is not identity-mapped: go through a kernel copy.
            let s = if *fd == 2 {
                Stream::Stderr
            } else {
                Stream::Stdout
            };
            let mut done = 0;
            while done < total {
                let piece = match src.piece(done, (total - done).min(64 * 1024), &mut buf) {
                    Ok(p) => p,
                    Err(_) if done > 0 => break,
                    Err(e) => return Err(e),
                };
                console::write(s, piece);
                done += piece.len();
            }
            Ok(done as u64)
        }
        File::P9 {
            fid,
            offset,
            flags,
            ino,
            ..
        } => {
            let c = crate::p9::mounted().ok_or(Errno::EBADF)?;
            let flags = flags.load(core::sync::atomic::Ordering::Relaxed);
            if flags & O_ACCMODE == 0 {
                return Err(Errno::EBADF);
            }
            if total == 0 {
                // Nothing written moves nothing, not even with O_APPEND.
                return Ok(0);
            }
            // With O_APPEND every write goes to the end, pwrite's too (a
            // documented Linux bug that programs see).
            let mut pos = match at {
                _ if append.unwrap_or(flags & O_APPEND != 0) => c.getattr(*fid)?.size,
                Some(p) => p,
                None => *offset.lock(),
            };
            let total = crate::signal::fsize_clamp(pos, total as u64)? as usize;
            let mut done = 0usize;
            let mut failed = None;
            while done < total {
                let want = (total - done).min(c.iounit() as usize);
                let piece = match src.piece(done, want, &mut buf) {
                    Ok(p) => p,
                    Err(e) => {
                        failed = Some(e);
                        break;
                    }
                };
                let n = crate::drivers::doorbell::file_io(|| c.write(*fid, pos, piece))?;
                crate::mm::shared::wrote(*ino, pos, &piece[..n]);
                done += n;
                pos += n as u64;
                if n < want {
                    break;
                }
            }
            if at.is_none() {
                *offset.lock() = pos;
            }
            if done > 0
                && let File::P9 { path, .. } = f
            {
                crate::vfs::inotify::notify(path, crate::vfs::inotify::IN_MODIFY);
            }
            match failed {
                Some(e) if done == 0 => Err(e),
                _ => Ok(done as u64),
            }
        }
    }
}

/// Writes `[addr, addr+len)` to `o` at `at` (or the position).
pub fn write_object(o: &Object, at: Option<u64>, addr: u64, len: u64) -> Result<u64, Errno> {
    write_object_with(o, at, addr, len, Rwf::default())
}

/// [`write_object`] with `pwritev2`'s flags.
fn write_object_with(
    o: &Object,
    at: Option<u64>,
    addr: u64,
    len: u64,
    rwf: Rwf,
) -> Result<u64, Errno> {
    user::check_range(addr, len)?;
    if is_stream(o) {
        return gather_write(o, at, &[(addr, len)], o.nonblocking() || rwf.nowait);
    }
    if let (Some(m), Some(append)) = (o.regular(), rwf.append) {
        // A memory-only file at its end (`RWF_APPEND`) or at the offset or
        // position whatever `O_APPEND` says (`RWF_NOAPPEND`); the position
        // moves past a write that used it.
        let pos = match (append, at) {
            (true, _) => m.size(),
            (false, Some(p)) => p,
            (false, None) => *m.position().lock(),
        };
        let n = write_source(o, Some(pos), Source::User { addr, len }, Some(append))?;
        if at.is_none() {
            *m.position().lock() = pos + n;
        }
        return Ok(n);
    }
    write_source(o, at, Source::User { addr, len }, rwf.append)
}

/// Writes `bytes` (the kernel's) to `o` at `at` (or the position).
pub fn write_bytes(o: &Object, at: Option<u64>, bytes: &[u8]) -> Result<u64, Errno> {
    write_source(o, at, Source::Kernel(bytes), None)
}

/// Whether a positional write of `o` is `ESPIPE` before anything else
/// (Linux's `FMODE_PWRITE`): a stream, or a pipe's read end.
pub(super) fn unseekable(o: &Object) -> bool {
    is_stream(o) || matches!(o, Object::PipeRead(_))
}

/// Whether `o` takes a write's bytes as one stream (a pipe, a socket…),
/// which is handed kernel copies (it may wait for room part-way).
fn is_stream(o: &Object) -> bool {
    matches!(o, Object::Like(_) | Object::PipeWrite(_)) && o.regular().is_none()
}

/// `append`: `pwritev2`'s `RWF_APPEND`/`RWF_NOAPPEND` for a file of the
/// namespace (`None`: as its `O_APPEND` says).
fn write_source(
    o: &Object,
    at: Option<u64>,
    src: Source<'_>,
    append: Option<bool>,
) -> Result<u64, Errno> {
    let len = src.len() as u64;
    // A memory-only file opened read-only (through /proc/self/fd).
    if let Object::Like(l) = o
        && o.regular().is_some()
        && l.flags().load(core::sync::atomic::Ordering::Relaxed) & crate::fd::O_ACCMODE == 0
    {
        return Err(Errno::EBADF);
    }
    if let (Some(m), Some(at)) = (o.regular(), at) {
        // `pwrite` of a memory-only file, as a regular one: with O_APPEND
        // at the end (Linux's documented bug, as for a file of the
        // namespace) unless `RWF_NOAPPEND` said otherwise.
        let at = match append {
            None if o.status_flags() & O_APPEND != 0 => m.size(),
            _ => at,
        };
        return match src {
            Source::Kernel(bytes) => m.write_at(at, bytes).map(|n| n as u64),
            Source::User { addr, len } => {
                let mut v = Vec::new();
                // Up to a hole in the program's memory, as a file write.
                if let Err((_, e)) = user::read_append(&mut v, addr, len)
                    && v.is_empty()
                {
                    return Err(e);
                }
                m.write_at(at, &v).map(|n| n as u64)
            }
        };
    }
    match (o, src) {
        (Object::File(f), src) => write_file(f, at, src, append),
        (Object::Synthetic(_) | Object::PipeRead(_), _) => Err(Errno::EBADF),
        (Object::Epoll(_), _) => Err(Errno::EINVAL),
        (Object::Device(d), _) => d.write(len),
        (Object::PipeWrite(_) | Object::Like(_), _) if at.is_some() => Err(Errno::ESPIPE),
        (Object::PipeWrite(p), Source::Kernel(bytes)) => {
            p.write(bytes, o.nonblocking()).map(|n| n as u64)
        }
        (Object::Like(l), Source::Kernel(bytes)) => {
            l.write(bytes, o.nonblocking()).map(|n| n as u64)
        }
        (Object::PipeWrite(_) | Object::Like(_), Source::User { addr, len }) => {
            gather_write(o, at, &[(addr, len)], o.nonblocking())
        }
    }
}

/// A write system call's result: `EPIPE` raises `SIGPIPE` (a write that
/// got some bytes through before the pipe or connection broke returns
/// their count and raises nothing, as Linux).
/// Message sockets (UDP, Unix datagram and seqpacket) raise nothing.
fn raise(o: &Object, r: Result<u64, Errno>) -> Result<u64, Errno> {
    r.map_err(|e| {
        // Looked at only for EPIPE: every write comes through here.
        let quiet = e != Errno::EPIPE || o.socket().is_some_and(|s| !s.is_stream());
        crate::signal::sigpipe(e, quiet)
    })
}

/// `write(fd, buf, count)`.
pub fn write(a: &[u64; 6]) -> Result<u64, Errno> {
    let o = fd::object(a[0])?;
    raise(&o, write_object(&o, None, a[1], a[2]))
}

/// `pwrite64(fd, buf, count, offset)`.
pub fn pwrite64(a: &[u64; 6]) -> Result<u64, Errno> {
    if (a[3] as i64) < 0 {
        return Err(Errno::EINVAL);
    }
    let o = fd::object(a[0])?;
    raise(&o, write_object(&o, Some(a[3]), a[1], a[2]))
}

/// Writes the program's `pieces` to a stream: a pipe or a Unix stream
/// socket takes them a buffer at a time, as Linux's do (see `Gather`);
/// another socket gets kernel copies of up to 1 MiB, each one message to
/// the gateway (a hole in the program's memory ends the write with
/// nothing of the copy it was in).
/// `nonblock`: the description's, or `RWF_NOWAIT`'s.
fn gather_write(
    o: &Object,
    at: Option<u64>,
    pieces: &[(u64, u64)],
    nonblock: bool,
) -> Result<u64, Errno> {
    if at.is_some() {
        return Err(Errno::ESPIPE);
    }
    // A pipe or a Unix stream takes the write as Linux's do, a buffer at
    // a time from the program's memory.
    let mut src = Gather::user(pieces, user::read_append);
    let taken = match o {
        Object::PipeWrite(p) => Some(p.write_from(&mut src, nonblock)),
        Object::Like(l) => l.write_from(&mut src, nonblock),
        _ => None,
    };
    if let Some(r) = taken {
        return r.map(|n| n as u64);
    }
    let want: u64 = pieces.iter().map(|p| p.1).sum();
    let message = o.socket().is_some_and(|s| !s.is_stream());
    // An empty write to a message socket is an empty message (Linux's
    // `sock_write_iter` sends it; the checks of a send apply).
    if want == 0 && message {
        return write_source(o, None, Source::Kernel(&[]), None);
    }
    // A message goes whole (past any send buffer: EMSGSIZE), a stream in
    // copies of 1 MiB.
    let gather: usize = if message { 16 << 20 } else { 1 << 20 };
    let mut total = 0u64;
    let mut chunk = Vec::with_capacity((want as usize).min(gather));
    // The next byte to gather: piece `i`, `off` bytes into it.
    let (mut i, mut off) = (0usize, 0u64);
    let mut hole = None;
    while i < pieces.len() && hole.is_none() {
        chunk.clear();
        while chunk.len() < gather && i < pieces.len() {
            let (base, len) = pieces[i];
            let take = (len - off).min((gather - chunk.len()) as u64);
            if take > 0
                && let Err((_, e)) = user::read_append(&mut chunk, base + off, take)
            {
                // A socket keeps nothing of the message it was copying.
                chunk.clear();
                hole = Some(e);
                break;
            }
            off += take;
            if off == len {
                (i, off) = (i + 1, 0);
            }
        }
        if chunk.is_empty() {
            break;
        }
        let sent = match o {
            Object::Like(l) => l.write(&chunk, nonblock).map(|n| n as u64),
            _ => write_source(o, None, Source::Kernel(&chunk), None),
        };
        let n = match sent {
            Ok(n) => n,
            Err(_) if total > 0 => return Ok(total),
            Err(e) => return Err(e),
        };
        total += n;
        if (n as usize) < chunk.len() {
            return Ok(total);
        }
    }
    match hole {
        Some(e) if total == 0 => Err(e),
        _ => Ok(total),
    }
}

fn writev_at(o: &Object, at: Option<u64>, iov: u64, count: u64) -> Result<u64, Errno> {
    writev_pieces(o, at, &super::read::iovecs(iov, count)?, Rwf::default())
}

fn writev_pieces(
    o: &Object,
    mut at: Option<u64>,
    pieces: &[(u64, u64)],
    rwf: Rwf,
) -> Result<u64, Errno> {
    // Nothing to write: Linux's `vfs_writev` checks the file's mode
    // (`EBADF` for a read end, as `write` of nothing does), then returns 0
    // without calling the file — no empty message, no `EPIPE`.
    if pieces.iter().all(|p| p.1 == 0) {
        if is_stream(o) {
            return Ok(0);
        }
        return write_object(o, at, pieces.first().map_or(0, |p| p.0), 0);
    }
    if is_stream(o) {
        return gather_write(o, at, pieces, o.nonblocking() || rwf.nowait);
    }
    let mut total = 0u64;
    for &(base, len) in pieces {
        if len == 0 {
            continue;
        }
        let n = match write_object_with(o, at, base, len, rwf) {
            Ok(n) => n,
            Err(_) if total > 0 => break,
            Err(e) => return Err(e),
        };
        total += n;
        at = at.map(|p| p + n);
        if n < len {
            break;
        }
    }
    Ok(total)
}

/// `writev(fd, iov, iovcnt)`: the access mode, then the vector.
pub fn writev(a: &[u64; 6]) -> Result<u64, Errno> {
    let o = fd::object(a[0])?;
    super::read::vector_mode(&o, true)?;
    raise(&o, writev_at(&o, None, a[1], a[2]))
}

/// `pwritev(fd, iov, iovcnt, offset)`: Linux's order of checks (the
/// offset, the descriptor, `ESPIPE`, the access mode, then the vector).
pub fn pwritev(a: &[u64; 6]) -> Result<u64, Errno> {
    if (a[3] as i64) < 0 {
        return Err(Errno::EINVAL);
    }
    let o = fd::object(a[0])?;
    if unseekable(&o) {
        return Err(Errno::ESPIPE);
    }
    super::read::vector_mode(&o, true)?;
    raise(&o, writev_at(&o, Some(a[3]), a[1], a[2]))
}

/// `pwritev2(fd, iov, iovcnt, offset_lo, offset_hi, flags)`: `pwritev`,
/// or `writev` at offset -1, with `RWF_*` flags (`read::rw_flags`).
pub fn pwritev2(a: &[u64; 6]) -> Result<u64, Errno> {
    let c = super::read::v2_call(a, true)?;
    let r = writev_pieces(&c.o, c.at, &c.iov, c.rwf);
    if c.rwf.nosignal {
        return r;
    }
    raise(&c.o, r)
}

/// `write` in a direct call (see `syscall::direct`): into a socket's send
/// buffer while its writer is busy, or an eventfd, from pages present now;
/// `None` to have the call trap (before any effect).
pub fn write_direct(a: &[u64; 6]) -> Option<u64> {
    let (addr, len) = (a[1], a[2]);
    if len == 0 || len > 64 * 1024 {
        return None;
    }
    let o = fd::object(a[0]).ok()?;
    let r = match &o {
        Object::Like(l) => {
            let nonblock = o.nonblocking();
            // Interrupts off from the check to the copy: the pages stay mapped.
            let irq = crate::arch::cpu::irq_save();
            let r = if user::present_readable(addr, len) {
                // SAFETY: `[addr, addr+len)` is present user memory (checked
                // above, interrupts off); the program may race on it as with
                // any write(2), which only affects the bytes sent.
                let data = unsafe { core::slice::from_raw_parts(addr as *const u8, len as usize) };
                match l.write_now(data) {
                    Some(Ok(n)) => Some(n as u64),
                    // Full: a blocking write waits, trapped.
                    Some(Err(Errno::EAGAIN)) if !nonblock => None,
                    Some(Err(e)) => Some(super::errno_value(e)),
                    None => None,
                }
            } else {
                None
            };
            crate::arch::cpu::irq_restore(irq);
            r
        }
        _ => None,
    };
    super::release(o);
    r
}
