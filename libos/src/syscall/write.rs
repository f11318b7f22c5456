//! `write(2)`, `pwrite64(2)`, `writev(2)`, `pwritev(2)`: the console, files
//! of the 9P namespace, and the library OS's own files.

use crate::console::{self, Stream};
use crate::errno::Errno;
use crate::fd::{self, File, O_ACCMODE, O_APPEND, Object};
use crate::mm::user;

/// Writes user bytes at `[addr, addr+len)` to `f` (at `at`, or at and past
/// the file position); returns how many were written.
fn write_file(f: &File, at: Option<u64>, bytes: &[u8]) -> Result<u64, Errno> {
    match f {
        File::Console { fd } => {
            // The VMM reads console buffers by guest-physical address, and
            // user memory is not identity-mapped: go through a kernel copy.
            let s = if *fd == 2 {
                Stream::Stderr
            } else {
                Stream::Stdout
            };
            let mut kernel_copy = alloc::vec::Vec::new();
            for chunk in bytes.chunks(64 * 1024) {
                kernel_copy.clear();
                kernel_copy.extend_from_slice(chunk);
                console::write(s, &kernel_copy);
            }
            Ok(bytes.len() as u64)
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
            if bytes.is_empty() {
                // Nothing written moves nothing, not even with O_APPEND.
                return Ok(0);
            }
            // With O_APPEND every write goes to the end, pwrite's too (a
            // documented Linux bug that programs see).
            let mut pos = match at {
                _ if flags & O_APPEND != 0 => c.getattr(*fid)?.size,
                Some(p) => p,
                None => *offset.lock(),
            };
            let mut done = 0u64;
            for chunk in bytes.chunks(c.iounit() as usize) {
                let n = c.write(*fid, pos, chunk)? as u64;
                crate::mm::shared::wrote(*ino, pos, &chunk[..n as usize]);
                done += n;
                pos += n;
                if n < chunk.len() as u64 {
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
            Ok(done)
        }
    }
}

/// Writes `[addr, addr+len)` to `o` at `at` (or the position).
pub fn write_object(o: &Object, at: Option<u64>, addr: u64, len: u64) -> Result<u64, Errno> {
    write_bytes(o, at, user::slice(addr, len)?)
}

/// Writes `bytes` (the program's or the kernel's) to `o` at `at` (or the
/// position).
pub fn write_bytes(o: &Object, at: Option<u64>, bytes: &[u8]) -> Result<u64, Errno> {
    let len = bytes.len() as u64;
    match o {
        Object::File(f) => write_file(f, at, bytes),
        Object::Synthetic(_) | Object::PipeRead(_) => Err(Errno::EBADF),
        Object::Epoll(_) => Err(Errno::EINVAL),
        Object::Device(d) => d.write(len),
        Object::PipeWrite(p) => {
            if at.is_some() {
                return Err(Errno::ESPIPE);
            }
            p.write(bytes, o.nonblocking())
                .map(|n| n as u64)
                .map_err(|e| crate::signal::sigpipe(e, false))
        }
        Object::Like(l) => {
            if at.is_some() {
                return Err(Errno::ESPIPE);
            }
            l.write(bytes, o.nonblocking()).map(|n| n as u64)
        }
    }
}

/// `write(fd, buf, count)`.
pub fn write(a: &[u64; 6]) -> Result<u64, Errno> {
    write_object(&fd::object(a[0])?, None, a[1], a[2])
}

/// `pwrite64(fd, buf, count, offset)`.
pub fn pwrite64(a: &[u64; 6]) -> Result<u64, Errno> {
    if (a[3] as i64) < 0 {
        return Err(Errno::EINVAL);
    }
    write_object(&fd::object(a[0])?, Some(a[3]), a[1], a[2])
}

fn writev_at(o: &Object, mut at: Option<u64>, iov: u64, count: u64) -> Result<u64, Errno> {
    if matches!(o, Object::Like(_) | Object::PipeWrite(_)) {
        // A stream gets the pieces gathered, as Linux does: a pipe write of
        // at most PIPE_BUF bytes stays atomic across them, a socket sends
        // one message to the gateway. Gathered 1 MiB at a time.
        const GATHER: usize = 1 << 20;
        let mut total = 0u64;
        let mut chunk = alloc::vec::Vec::new();
        let pieces = super::read::iovecs(iov, count)?;
        // The next byte to gather: piece `i`, `off` bytes into it.
        let (mut i, mut off) = (0usize, 0u64);
        while i < pieces.len() {
            chunk.clear();
            while chunk.len() < GATHER && i < pieces.len() {
                let (base, len) = pieces[i];
                let take = (len - off).min((GATHER - chunk.len()) as u64);
                if take > 0 {
                    chunk.extend_from_slice(user::slice(base + off, take)?);
                }
                off += take;
                if off == len {
                    (i, off) = (i + 1, 0);
                }
            }
            let n = match write_bytes(o, at, &chunk) {
                Ok(n) => n,
                Err(_) if total > 0 => break,
                Err(e) => return Err(e),
            };
            total += n;
            if (n as usize) < chunk.len() {
                break;
            }
        }
        return Ok(total);
    }
    let mut total = 0u64;
    for (base, len) in super::read::iovecs(iov, count)? {
        if len == 0 {
            continue;
        }
        let n = match write_object(o, at, base, len) {
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

/// `writev(fd, iov, iovcnt)`.
pub fn writev(a: &[u64; 6]) -> Result<u64, Errno> {
    writev_at(&fd::object(a[0])?, None, a[1], a[2])
}

/// `pwritev(fd, iov, iovcnt, offset)`.
pub fn pwritev(a: &[u64; 6]) -> Result<u64, Errno> {
    if (a[3] as i64) < 0 {
        return Err(Errno::EINVAL);
    }
    writev_at(&fd::object(a[0])?, Some(a[3]), a[1], a[2])
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
