//! `open(2)` and `openat(2)`: files of the 9P namespace.

use alloc::string::String;

use crate::errno::Errno;
use crate::fd::{self, File};
use crate::mm::user;

const AT_FDCWD: i64 = -100;
const O_ACCMODE: u32 = 3;
const O_CREAT: u32 = 0o100;
const O_DIRECTORY: u32 = 0o200000;
const O_CLOEXEC: u32 = 0o2000000;

/// Reads a NUL-terminated path from user memory (at most 4096 bytes).
pub fn user_path(addr: u64) -> Result<String, Errno> {
    let mut out = alloc::vec::Vec::new();
    for i in 0..4096u64 {
        let b = user::slice(addr + i, 1)?[0];
        if b == 0 {
            return String::from_utf8(out).map_err(|_| Errno::EINVAL);
        }
        out.push(b);
    }
    Err(Errno::ENAMETOOLONG)
}

/// Resolves a path relative to a directory descriptor (only `AT_FDCWD` and
/// absolute paths for now).
pub fn resolve(dirfd: u64, path: &str) -> Result<String, Errno> {
    // dirfd is a C int: only its low 32 bits count.
    if !path.starts_with('/') && i64::from(dirfd as i32) != AT_FDCWD {
        let dir = fd::get(dirfd)?;
        return match &*dir {
            File::P9 { path: base, .. } => Ok(fd::absolute(&alloc::format!("{base}/{path}"))),
            File::Console { .. } => Err(Errno::ENOTDIR),
        };
    }
    Ok(fd::absolute(path))
}

fn open_path(path: String, flags: u32, mode: u32) -> Result<u64, Errno> {
    let c = crate::p9::mounted().ok_or(Errno::ENOENT)?;
    let lflags = flags & !(O_CLOEXEC);
    let fid = match c.walk_path(&path) {
        Ok(fid) => {
            if let Err(e) = c.open(fid, lflags & !O_CREAT) {
                c.clunk(fid);
                return Err(e);
            }
            fid
        }
        Err(Errno::ENOENT) if flags & O_CREAT != 0 => {
            let (dir, name) = path.rsplit_once('/').ok_or(Errno::EINVAL)?;
            let dfid = c.walk_path(if dir.is_empty() { "/" } else { dir })?;
            if let Err(e) = c.create(dfid, name, lflags & !O_CREAT & !O_DIRECTORY, mode & 0o7777) {
                c.clunk(dfid);
                return Err(e);
            }
            dfid
        }
        Err(e) => return Err(e),
    };
    fd::install(File::P9 {
        fid,
        offset: crate::sync::IrqLock::new(0),
        path,
        flags: flags & (O_ACCMODE | 0o2000),
    })
}

/// `open(path, flags, mode)`.
pub fn open(a: &[u64; 6]) -> Result<u64, Errno> {
    let p = user_path(a[0])?;
    open_path(fd::absolute(&p), a[1] as u32, a[2] as u32)
}

/// `openat(dirfd, path, flags, mode)`.
pub fn openat(a: &[u64; 6]) -> Result<u64, Errno> {
    let p = user_path(a[1])?;
    open_path(resolve(a[0], &p)?, a[2] as u32, a[3] as u32)
}

/// `close(fd)`.
pub fn close(a: &[u64; 6]) -> Result<u64, Errno> {
    fd::close(a[0])?;
    Ok(0)
}
