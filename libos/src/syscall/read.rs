//! `read(2)`, `pread64(2)`, `lseek(2)`: files of the namespace and the console.

use alloc::vec;

use crate::errno::Errno;
use crate::fd::{self, File};
use crate::mm::user;

fn read_at(f: &File, offset: Option<u64>, addr: u64, len: u64) -> Result<u64, Errno> {
    user::check_range(addr, len)?;
    let c = crate::p9::mounted().ok_or(Errno::EBADF)?;
    let (fid, pos) = match f {
        File::P9 {
            fid, offset: off, ..
        } => (*fid, offset.unwrap_or(*off.lock())),
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
    let mut buf = vec![0u8; len.min(u64::from(c.iounit())) as usize];
    let n = c.read(fid, pos, &mut buf)?;
    user::copy_in(addr, &buf[..n])?;
    if offset.is_none()
        && let File::P9 { offset: off, .. } = f
    {
        *off.lock() = pos + n as u64;
    }
    Ok(n as u64)
}

/// `read(fd, buf, count)`.
pub fn read(a: &[u64; 6]) -> Result<u64, Errno> {
    read_at(&*fd::get(a[0])?, None, a[1], a[2])
}

/// `pread64(fd, buf, count, offset)`.
pub fn pread64(a: &[u64; 6]) -> Result<u64, Errno> {
    read_at(&*fd::get(a[0])?, Some(a[3]), a[1], a[2])
}

/// `lseek(fd, offset, whence)`.
pub fn lseek(a: &[u64; 6]) -> Result<u64, Errno> {
    let f = fd::get(a[0])?;
    let File::P9 { fid, offset, .. } = &*f else {
        return Err(Errno::ESPIPE);
    };
    let base = match a[2] {
        0 => 0,
        1 => *offset.lock() as i64,
        2 => {
            let c = crate::p9::mounted().ok_or(Errno::EBADF)?;
            c.getattr(*fid)?.size as i64
        }
        _ => return Err(Errno::EINVAL),
    };
    let pos = base
        .checked_add(a[1] as i64)
        .filter(|p| *p >= 0)
        .ok_or(Errno::EINVAL)?;
    *offset.lock() = pos as u64;
    Ok(pos as u64)
}
