//! `getdents64(2)`: directory entries of an open 9P or generated directory.

use alloc::string::String;
use alloc::vec::Vec;

use crate::errno::Errno;
use crate::fd::{self, File, Object};
use crate::mm::user;
use crate::vfs::synthetic::Content;

/// Appends one `linux_dirent64` record if it fits in `room` bytes.
fn record(out: &mut Vec<u8>, room: usize, ino: u64, off: u64, ty: u8, name: &str) -> bool {
    let reclen = (19 + name.len() + 1).next_multiple_of(8);
    if out.len() + reclen > room {
        return false;
    }
    let start = out.len();
    out.extend_from_slice(&ino.to_le_bytes());
    out.extend_from_slice(&off.to_le_bytes());
    out.extend_from_slice(&(reclen as u16).to_le_bytes());
    out.push(ty);
    out.extend_from_slice(name.as_bytes());
    out.resize(start + reclen, 0);
    true
}

/// Packs entries from index `*pos` into `linux_dirent64` records that fit
/// in `room` bytes, moving `*pos` past them.
fn pack(entries: &[(String, u8)], pos: &mut u64, room: usize) -> Result<Vec<u8>, Errno> {
    let mut out = Vec::new();
    let mut i = *pos as usize;
    while let Some((name, ty)) = entries.get(i) {
        let next = i as u64 + 1;
        if !record(&mut out, room, next, next, *ty, name) {
            break;
        }
        i += 1;
    }
    if out.is_empty() && i < entries.len() {
        return Err(Errno::EINVAL);
    }
    *pos = i as u64;
    Ok(out)
}

/// Reads a 9P directory from the server's position `*pos` (the host
/// file system's own cookie, which `lseek` and `telldir` see as the
/// offset) into records that fit in `room` bytes, moving `*pos` past them.
/// The position is the host's, so entries added or removed meanwhile show
/// or not as they would on the host (a listing that reached its end stays
/// there; removing entries read so far skips nothing).
fn read_p9(
    c: &crate::p9::Client,
    fid: crate::p9::Fid,
    pos: &mut u64,
    room: usize,
) -> Result<Vec<u8>, Errno> {
    let mut out = Vec::new();
    loop {
        // A 9P entry is about the size of its record: ask for a little
        // more than the room left, and keep what fits.
        let want = (room - out.len() + 64).min(u32::MAX as usize) as u32;
        let entries = c.readdir_at(fid, *pos, want)?;
        if entries.is_empty() {
            return Ok(out);
        }
        for e in &entries {
            if !record(&mut out, room, e.ino, e.next, e.ty, &e.name) {
                return if out.is_empty() {
                    Err(Errno::EINVAL)
                } else {
                    Ok(out)
                };
            }
            *pos = e.next;
        }
    }
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
                let mut pos = *offset.lock();
                let out = read_p9(c, *fid, &mut pos, a[2] as usize)?;
                crate::vfs::inotify::notify(
                    path,
                    crate::vfs::inotify::IN_ACCESS | crate::vfs::inotify::IN_ISDIR,
                );
                (out, offset, pos)
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
