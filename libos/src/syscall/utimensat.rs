//! `utimensat(2)` (and `futimens`, its `path == NULL` form), `utimes(2)`,
//! `utime(2)`: access and modification times through `Tsetattr`.

use astraea_9p::SetAttr;
use astraea_9p::consts::{
    P9_SETATTR_ATIME, P9_SETATTR_ATIME_SET, P9_SETATTR_MTIME, P9_SETATTR_MTIME_SET,
};

use crate::errno::Errno;
use crate::mm::user;

const AT_SYMLINK_NOFOLLOW: u64 = 0x100;
const AT_EMPTY_PATH: u64 = 0x1000;
const UTIME_NOW: u64 = (1 << 30) - 1;
const UTIME_OMIT: u64 = (1 << 30) - 2;

fn word(b: &[u8], i: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[i * 8..i * 8 + 8]);
    u64::from_le_bytes(w)
}

/// The attribute change for two `timespec`s (`None`: both now).
fn times_attr(times: Option<[(u64, u64); 2]>) -> Result<SetAttr, Errno> {
    let mut attr = SetAttr::default();
    let Some(times) = times else {
        attr.valid = P9_SETATTR_ATIME | P9_SETATTR_MTIME;
        return Ok(attr);
    };
    for (i, (sec, nsec)) in times.into_iter().enumerate() {
        let (bit, set) = if i == 0 {
            (P9_SETATTR_ATIME, P9_SETATTR_ATIME_SET)
        } else {
            (P9_SETATTR_MTIME, P9_SETATTR_MTIME_SET)
        };
        match nsec {
            UTIME_OMIT => continue,
            UTIME_NOW => attr.valid |= bit,
            n if n < 1_000_000_000 => {
                attr.valid |= bit | set;
                if i == 0 {
                    (attr.atime_sec, attr.atime_nsec) = (sec, n);
                } else {
                    (attr.mtime_sec, attr.mtime_nsec) = (sec, n);
                }
            }
            _ => return Err(Errno::EINVAL),
        }
    }
    Ok(attr)
}

fn apply(dirfd: u64, path_addr: u64, attr: SetAttr, flags: u64) -> Result<u64, Errno> {
    if path_addr == 0 {
        return super::chmod::setattr_fd(dirfd, attr);
    }
    let p = super::open::user_path(path_addr)?;
    if p.is_empty() {
        if flags & AT_EMPTY_PATH != 0 {
            return super::chmod::setattr_fd(dirfd, attr);
        }
        return Err(Errno::ENOENT);
    }
    let path = super::open::resolve(dirfd, &p)?;
    if attr.valid == 0 {
        // Both omitted: nothing changes, but the file must exist.
        return super::stat::path_stat_at(&path, flags & AT_SYMLINK_NOFOLLOW == 0).map(|_| 0);
    }
    super::chmod::setattr_path(&path, flags & AT_SYMLINK_NOFOLLOW == 0, attr)
}

/// `utimensat(dirfd, path, times, flags)`.
pub fn utimensat(a: &[u64; 6]) -> Result<u64, Errno> {
    if a[3] & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    let times = if a[2] == 0 {
        None
    } else {
        let b = &user::read_array::<32>(a[2])?;
        Some([(word(b, 0), word(b, 1)), (word(b, 2), word(b, 3))])
    };
    // Linux finds the file before it looks at the times.
    let attr = times_attr(times);
    if attr.is_err() && a[1] != 0 {
        let p = super::open::user_path(a[1])?;
        if !p.is_empty() {
            let path = super::open::resolve(a[0], &p)?;
            super::stat::path_stat_at(&path, a[3] & AT_SYMLINK_NOFOLLOW == 0)?;
        }
    }
    apply(a[0], a[1], attr?, a[3])
}

/// `utimes(path, times)`: microseconds.
pub fn utimes(a: &[u64; 6]) -> Result<u64, Errno> {
    let times = if a[1] == 0 {
        None
    } else {
        let b = &user::read_array::<32>(a[1])?;
        let (au, mu) = (word(b, 1), word(b, 3));
        if au >= 1_000_000 || mu >= 1_000_000 {
            return Err(Errno::EINVAL);
        }
        Some([(word(b, 0), au * 1000), (word(b, 2), mu * 1000)])
    };
    apply((-100i64) as u64, a[0], times_attr(times)?, 0)
}

/// `utime(path, times)`: whole seconds.
pub fn utime(a: &[u64; 6]) -> Result<u64, Errno> {
    let times = if a[1] == 0 {
        None
    } else {
        let b = &user::read_array::<16>(a[1])?;
        Some([(word(b, 0), 0), (word(b, 1), 0)])
    };
    apply((-100i64) as u64, a[0], times_attr(times)?, 0)
}
