//! `getdents64(2)`: directory entries of an open 9P or generated directory.

use alloc::string::String;
use alloc::vec::Vec;

use crate::errno::Errno;
use crate::fd::{self, File, Object};
use crate::mm::user;
use crate::vfs::synthetic::Content;

/// Packs entries from index `*pos` into `linux_dirent64` records that fit
/// in `room` bytes, moving `*pos` past them.
fn pack(entries: &[(String, u8)], pos: &mut u64, room: usize) -> Result<Vec<u8>, Errno> {
    let mut out = Vec::new();
    let mut i = *pos as usize;
    while let Some((name, ty)) = entries.get(i) {
        let reclen = (19 + name.len() + 1).next_multiple_of(8);
        if out.len() + reclen > room {
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
    *pos = i as u64;
    Ok(out)
}

/// `getdents64(fd, dirp, count)`: the offset remembers how far the
/// listing got.
pub fn getdents64(a: &[u64; 6]) -> Result<u64, Errno> {
    let o = fd::object(a[0])?;
    let (out, cell, pos) = match &o {
        Object::File(f) => match &**f {
            File::P9 {
                fid, offset, path, ..
            } => {
                let c = crate::p9::mounted().ok_or(Errno::EBADF)?;
                let entries = c.readdir(*fid)?;
                crate::vfs::inotify::notify(
                    path,
                    crate::vfs::inotify::IN_ACCESS | crate::vfs::inotify::IN_ISDIR,
                );
                let mut pos = *offset.lock();
                (pack(&entries, &mut pos, a[2] as usize)?, offset, pos)
            }
            File::Console { .. } => return Err(Errno::ENOTDIR),
        },
        Object::Synthetic(s) => match &s.content {
            Content::Dir(entries) => {
                let mut pos = *s.offset.lock();
                (pack(entries, &mut pos, a[2] as usize)?, &s.offset, pos)
            }
            Content::Text(_) => return Err(Errno::ENOTDIR),
        },
        _ => return Err(Errno::ENOTDIR),
    };
    user::copy_in(a[1], &out)?;
    *cell.lock() = pos;
    Ok(out.len() as u64)
}
