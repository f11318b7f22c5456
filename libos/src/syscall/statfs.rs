//! `statfs(2)`, `fstatfs(2)`: the file system a path lives on. Files come
//! through 9P (`V9FS_MAGIC`), `/proc` and `/sys` from the library OS; the
//! sizes are nominal, since the gateway's host file systems are shared.

use crate::errno::Errno;
use crate::mm::user;

const V9FS_MAGIC: u64 = 0x0102_1997;
const PROC_SUPER_MAGIC: u64 = 0x9fa0;
const SYSFS_MAGIC: u64 = 0x6265_6572;

fn magic_of(path: &str) -> u64 {
    if path == "/proc" || path.starts_with("/proc/") {
        PROC_SUPER_MAGIC
    } else if path == "/sys" || path.starts_with("/sys/") {
        SYSFS_MAGIC
    } else {
        V9FS_MAGIC
    }
}

fn write_statfs(addr: u64, magic: u64) -> Result<u64, Errno> {
    let fields: [u64; 11] = [
        magic,
        4096,    // f_bsize
        1 << 28, // f_blocks
        1 << 27, // f_bfree
        1 << 27, // f_bavail
        1 << 24, // f_files
        1 << 23, // f_ffree
        0,       // f_fsid
        255,     // f_namelen
        4096,    // f_frsize
        0,       // f_flags
    ];
    let mut b = [0u8; 120];
    for (i, v) in fields.into_iter().enumerate() {
        b[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
    }
    user::copy_in(addr, &b)?;
    Ok(0)
}

/// `statfs(path, buf)`.
pub fn statfs(a: &[u64; 6]) -> Result<u64, Errno> {
    let path = super::open::abs(&super::open::user_path(a[0])?)?;
    let magic = magic_of(&path);
    if magic == V9FS_MAGIC {
        let c = crate::p9::mounted().ok_or(Errno::ENOENT)?;
        let fid = c.walk_path(&path)?;
        c.clunk(fid);
    }
    write_statfs(a[1], magic)
}

/// `fstatfs(fd, buf)`.
pub fn fstatfs(a: &[u64; 6]) -> Result<u64, Errno> {
    if let Some(r) = crate::fd::object(a[0])?.regular() {
        return write_statfs(a[1], r.statfs_magic());
    }
    let magic = match &*crate::fd::get(a[0])? {
        crate::fd::File::P9 { path, .. } => magic_of(path),
        crate::fd::File::Console { .. } => V9FS_MAGIC,
    };
    write_statfs(a[1], magic)
}
