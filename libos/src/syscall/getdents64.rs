//! `getdents64(2)`: directory entries of an open 9P directory.

use alloc::vec::Vec;

use crate::errno::Errno;
use crate::fd::{self, File};
use crate::mm::user;

/// `getdents64(fd, dirp, count)`: returns every entry on the first call
/// that has room, then 0 (the offset remembers how far the listing got).
pub fn getdents64(a: &[u64; 6]) -> Result<u64, Errno> {
    let f = fd::get(a[0])?;
    let File::P9 { fid, offset, .. } = &*f else {
        return Err(Errno::ENOTDIR);
    };
    let c = crate::p9::mounted().ok_or(Errno::EBADF)?;
    let entries = c.readdir(*fid)?;
    let mut pos = offset.lock();
    let mut out = Vec::new();
    let mut i = *pos as usize;
    while let Some((name, ty)) = entries.get(i) {
        let reclen = (19 + name.len() + 1).next_multiple_of(8);
        if out.len() + reclen > a[2] as usize {
            break;
        }
        let start = out.len();
        out.extend_from_slice(&(i as u64 + 1).to_le_bytes()); // d_ino
        out.extend_from_slice(&(i as u64 + 1).to_le_bytes()); // d_off
        out.extend_from_slice(&(reclen as u16).to_le_bytes());
        out.push(*ty);
        out.extend_from_slice(name.as_bytes());
        out.resize(start + reclen, 0);
        i += 1;
    }
    if out.is_empty() && i < entries.len() {
        return Err(Errno::EINVAL);
    }
    user::copy_in(a[1], &out)?;
    *pos = i as u64;
    Ok(out.len() as u64)
}
