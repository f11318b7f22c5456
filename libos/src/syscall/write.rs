//! `write(2)`, `pwrite64(2)`, `writev(2)`: the console, and files of the 9P
//! namespace.

use crate::console::{self, Stream};
use crate::errno::Errno;
use crate::fd::{self, File};
use crate::mm::user;

const O_APPEND: u32 = 0o2000;

/// Writes user bytes at `[addr, addr+len)` to `f` (at `at`, or at and past
/// the file position); returns how many were written.
fn write_to(f: &File, at: Option<u64>, addr: u64, len: u64) -> Result<u64, Errno> {
    let bytes = user::slice(addr, len)?;
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
            Ok(len)
        }
        File::P9 {
            fid, offset, flags, ..
        } => {
            let c = crate::p9::mounted().ok_or(Errno::EBADF)?;
            if flags & 3 == 0 {
                return Err(Errno::EBADF);
            }
            let mut pos = match at {
                Some(p) => p,
                None if flags & O_APPEND != 0 => c.getattr(*fid)?.size,
                None => *offset.lock(),
            };
            let mut done = 0u64;
            for chunk in bytes.chunks(c.iounit() as usize) {
                let n = c.write(*fid, pos, chunk)? as u64;
                done += n;
                pos += n;
                if n < chunk.len() as u64 {
                    break;
                }
            }
            if at.is_none() {
                *offset.lock() = pos;
            }
            Ok(done)
        }
    }
}

/// `write(fd, buf, count)`.
pub fn write(a: &[u64; 6]) -> Result<u64, Errno> {
    write_to(&*fd::get(a[0])?, None, a[1], a[2])
}

/// `pwrite64(fd, buf, count, offset)`.
pub fn pwrite64(a: &[u64; 6]) -> Result<u64, Errno> {
    write_to(&*fd::get(a[0])?, Some(a[3]), a[1], a[2])
}

/// `writev(fd, iov, iovcnt)`.
pub fn writev(a: &[u64; 6]) -> Result<u64, Errno> {
    let f = fd::get(a[0])?;
    if a[2] > 1024 {
        return Err(Errno::EINVAL);
    }
    let iov = user::slice(a[1], a[2] * 16)?;
    let mut total = 0u64;
    for v in iov.chunks_exact(16) {
        let base = u64::from_le_bytes(v[..8].try_into().map_err(|_| Errno::EFAULT)?);
        let len = u64::from_le_bytes(v[8..].try_into().map_err(|_| Errno::EFAULT)?);
        let n = write_to(&f, None, base, len)?;
        total += n;
        if n < len {
            break;
        }
    }
    Ok(total)
}
