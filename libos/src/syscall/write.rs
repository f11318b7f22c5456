//! `write(2)` and `writev(2)`: for now the console only (fd 1 and 2).

use crate::console::{self, Stream};
use crate::errno::Errno;
use crate::mm::user;

fn stream(fd: u64) -> Result<Stream, Errno> {
    match &*crate::fd::get(fd)? {
        crate::fd::File::Console { fd: 2 } => Ok(Stream::Stderr),
        crate::fd::File::Console { .. } => Ok(Stream::Stdout),
        crate::fd::File::P9 { .. } => Err(Errno::EBADF),
    }
}

/// Sends user bytes to the console. The VMM reads the console buffer by
/// guest-physical address, and user memory is not identity-mapped, so the
/// bytes go through a kernel buffer.
fn to_console(s: Stream, addr: u64, len: u64) -> Result<(), Errno> {
    let bytes = user::slice(addr, len)?;
    let mut kernel_copy = alloc::vec::Vec::new();
    for chunk in bytes.chunks(64 * 1024) {
        kernel_copy.clear();
        kernel_copy.extend_from_slice(chunk);
        console::write(s, &kernel_copy);
    }
    Ok(())
}

/// `write(fd, buf, count)`.
pub fn write(a: &[u64; 6]) -> Result<u64, Errno> {
    to_console(stream(a[0])?, a[1], a[2])?;
    Ok(a[2])
}

/// `writev(fd, iov, iovcnt)`.
pub fn writev(a: &[u64; 6]) -> Result<u64, Errno> {
    let s = stream(a[0])?;
    if a[2] > 1024 {
        return Err(Errno::EINVAL);
    }
    let iov = user::slice(a[1], a[2] * 16)?;
    let mut total = 0u64;
    for v in iov.chunks_exact(16) {
        let base = u64::from_le_bytes(v[..8].try_into().map_err(|_| Errno::EFAULT)?);
        let len = u64::from_le_bytes(v[8..].try_into().map_err(|_| Errno::EFAULT)?);
        to_console(s, base, len)?;
        total += len;
    }
    Ok(total)
}
