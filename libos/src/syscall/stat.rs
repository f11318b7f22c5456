//! `fstat(2)`, `newfstatat(2)`, `stat(2)`, `lstat(2)`: attributes from
//! `Tgetattr`, in the x86-64 `struct stat` layout.

use crate::errno::Errno;
use crate::fd::{self, File};
use crate::mm::user;

const AT_EMPTY_PATH: u64 = 0x1000;
const S_IFCHR: u32 = 0o020000;

fn put(buf: &mut [u8; 144], off: usize, v: u64) {
    buf[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

fn encode(st: &astraea_9p::Stat) -> [u8; 144] {
    let mut b = [0u8; 144];
    put(&mut b, 0, 0x39); // st_dev: "9"
    put(&mut b, 8, st.qid.path);
    put(&mut b, 16, st.nlink);
    b[24..28].copy_from_slice(&st.mode.to_le_bytes());
    b[28..32].copy_from_slice(&st.uid.to_le_bytes());
    b[32..36].copy_from_slice(&st.gid.to_le_bytes());
    put(&mut b, 40, st.rdev);
    put(&mut b, 48, st.size);
    put(&mut b, 56, st.blksize);
    put(&mut b, 64, st.blocks);
    put(&mut b, 72, st.atime_sec);
    put(&mut b, 80, st.atime_nsec);
    put(&mut b, 88, st.mtime_sec);
    put(&mut b, 96, st.mtime_nsec);
    put(&mut b, 104, st.ctime_sec);
    put(&mut b, 112, st.ctime_nsec);
    b
}

fn console_stat() -> [u8; 144] {
    let mut b = [0u8; 144];
    put(&mut b, 0, 0x3a);
    put(&mut b, 8, 1);
    put(&mut b, 16, 1);
    b[24..28].copy_from_slice(&(S_IFCHR | 0o620).to_le_bytes());
    put(&mut b, 40, 0x8800); // like /dev/pts/0
    put(&mut b, 56, 1024);
    b
}

fn stat_fd(fd: u64, out: u64) -> Result<u64, Errno> {
    let f = fd::get(fd)?;
    let buf = match &*f {
        File::Console { .. } => console_stat(),
        File::P9 { fid, .. } => encode(&crate::p9::mounted().ok_or(Errno::EBADF)?.getattr(*fid)?),
    };
    user::copy_in(out, &buf)?;
    Ok(0)
}

fn stat_path(path: &str, out: u64) -> Result<u64, Errno> {
    let c = crate::p9::mounted().ok_or(Errno::ENOENT)?;
    let fid = c.walk_path(path)?;
    let st = c.getattr(fid);
    c.clunk(fid);
    user::copy_in(out, &encode(&st?))?;
    Ok(0)
}

/// `fstat(fd, statbuf)`.
pub fn fstat(a: &[u64; 6]) -> Result<u64, Errno> {
    stat_fd(a[0], a[1])
}

/// `stat(path, statbuf)` (and `lstat`: symlinks are not followed by walks).
pub fn stat(a: &[u64; 6]) -> Result<u64, Errno> {
    stat_path(&fd::absolute(&super::open::user_path(a[0])?), a[1])
}

/// `newfstatat(dirfd, path, statbuf, flags)`.
pub fn newfstatat(a: &[u64; 6]) -> Result<u64, Errno> {
    let p = super::open::user_path(a[1])?;
    if p.is_empty() && a[3] & AT_EMPTY_PATH != 0 {
        return stat_fd(a[0], a[2]);
    }
    stat_path(&super::open::resolve(a[0], &p)?, a[2])
}

/// `statx(dirfd, path, flags, mask, statxbuf)`: the basic fields.
pub fn statx(a: &[u64; 6]) -> Result<u64, Errno> {
    let p = super::open::user_path(a[1])?;
    let st = if p.is_empty() && a[2] & AT_EMPTY_PATH != 0 {
        match &*fd::get(a[0])? {
            File::Console { .. } => None,
            File::P9 { fid, .. } => Some(crate::p9::mounted().ok_or(Errno::EBADF)?.getattr(*fid)?),
        }
    } else {
        let c = crate::p9::mounted().ok_or(Errno::ENOENT)?;
        let fid = c.walk_path(&super::open::resolve(a[0], &p)?)?;
        let st = c.getattr(fid);
        c.clunk(fid);
        Some(st?)
    };
    let mut b = [0u8; 256];
    let put32 =
        |b: &mut [u8; 256], off: usize, v: u32| b[off..off + 4].copy_from_slice(&v.to_le_bytes());
    let put64 =
        |b: &mut [u8; 256], off: usize, v: u64| b[off..off + 8].copy_from_slice(&v.to_le_bytes());
    match st {
        None => {
            put32(&mut b, 0, 0x7ff); // STATX_BASIC_STATS
            put32(&mut b, 4, 1024);
            put32(&mut b, 16, 1);
            b[28..30].copy_from_slice(&((S_IFCHR | 0o620) as u16).to_le_bytes());
            put64(&mut b, 32, 1);
        }
        Some(st) => {
            put32(&mut b, 0, 0x7ff);
            put32(&mut b, 4, st.blksize as u32);
            put32(&mut b, 16, st.nlink as u32);
            put32(&mut b, 20, st.uid);
            put32(&mut b, 24, st.gid);
            b[28..30].copy_from_slice(&(st.mode as u16).to_le_bytes());
            put64(&mut b, 32, st.qid.path);
            put64(&mut b, 40, st.size);
            put64(&mut b, 48, st.blocks);
            for (off, sec, nsec) in [
                (64, st.atime_sec, st.atime_nsec),
                (80, st.btime_sec, st.btime_nsec),
                (96, st.ctime_sec, st.ctime_nsec),
                (112, st.mtime_sec, st.mtime_nsec),
            ] {
                put64(&mut b, off, sec);
                put32(&mut b, off + 8, nsec as u32);
            }
            put32(&mut b, 128, (st.rdev >> 8) as u32 & 0xfff);
            put32(&mut b, 132, st.rdev as u32 & 0xff);
        }
    }
    user::copy_in(a[4], &b)?;
    Ok(0)
}
