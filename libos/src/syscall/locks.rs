//! Record locks (`fcntl`'s `F_SETLK`, `F_SETLKW`, `F_GETLK` and their
//! `F_OFD_*` forms) and `flock(2)`, taken by the gateway on the host's file
//! so that partitions and host processes see each other's.
//!
//! Linux's kinds of owner, kept here: a POSIX lock belongs to the process
//! (the partition), so the program's descriptors of one file never
//! conflict, `F_GETLK` does not report the program's own, and closing any
//! descriptor of the file drops them all; each file the program has locked
//! so gets one fid of its own, opened read-write where it may be, that
//! holds all of them at the gateway (one owner there: the locks merge and
//! split as Linux's). An OFD lock belongs to the open file description:
//! it is taken on the description's own fid, so it conflicts with the
//! program's POSIX locks and other descriptions'. A `flock` lock belongs to
//! the description too but is apart from byte-range locks
//! (`P9_LOCK_FLAGS_FLOCK`: the gateway takes a host `flock`).

use alloc::collections::BTreeMap;

use astraea_9p::consts::{
    P9_LOCK_BLOCKED, P9_LOCK_FLAGS_BLOCK, P9_LOCK_FLAGS_FLOCK, P9_LOCK_SUCCESS, P9_LOCK_TYPE_RDLCK,
    P9_LOCK_TYPE_UNLCK, P9_LOCK_TYPE_WRLCK,
};

use crate::errno::Errno;
use crate::fd::{self, File, O_ACCMODE, Object};
use crate::mm::user;
use crate::p9::{Client, Fid};
use crate::sync::IrqLock;

const F_RDLCK: u16 = 0;
const F_WRLCK: u16 = 1;
const F_UNLCK: u16 = 2;
const O_RDONLY: u32 = 0;
const O_WRONLY: u32 = 1;
const O_RDWR: u32 = 2;
const LOCK_SH: u64 = 1;
const LOCK_EX: u64 = 2;
const LOCK_NB: u64 = 4;
const LOCK_UN: u64 = 8;

/// The fid holding the program's POSIX locks of each file it has locked,
/// by the file's inode (qid path).
static POSIX_OWNERS: IrqLock<BTreeMap<u64, Fid>> = IrqLock::new(BTreeMap::new());

/// A `struct flock` as the 9P lock wants it: (type, start, length), and
/// its `l_pid`.
struct Lock {
    ty: u16,
    start: u64,
    len: u64,
    pid: i32,
}

/// A file of the namespace: its fid, inode, path and status flags.
struct NsFile<'a> {
    fid: Fid,
    ino: u64,
    path: &'a str,
    flags: u32,
}

fn ns_file(o: &Object) -> Option<NsFile<'_>> {
    match o {
        Object::File(f) => match &**f {
            File::P9 {
                fid,
                ino,
                path,
                flags,
                ..
            } => Some(NsFile {
                fid: *fid,
                ino: *ino,
                path,
                flags: flags.load(core::sync::atomic::Ordering::Relaxed),
            }),
            File::Console { .. } => None,
        },
        _ => None,
    }
}

fn client() -> Result<&'static Client, Errno> {
    crate::p9::mounted().ok_or(Errno::EBADF)
}

/// Reads a `struct flock` (type, whence, start, len, pid at 0, 2, 8, 16,
/// 24) and makes its range absolute.
fn read_flock(o: &Object, addr: u64) -> Result<Lock, Errno> {
    let b = &user::read_array::<32>(addr)?;
    let ty = u16::from_le_bytes([b[0], b[1]]);
    let whence = u16::from_le_bytes([b[2], b[3]]);
    let start = i64::from_le_bytes(b[8..16].try_into().map_err(|_| Errno::EFAULT)?);
    let len = i64::from_le_bytes(b[16..24].try_into().map_err(|_| Errno::EFAULT)?);
    let pid = i32::from_le_bytes(b[24..28].try_into().map_err(|_| Errno::EFAULT)?);
    if ty > F_UNLCK {
        return Err(Errno::EINVAL);
    }
    let base = match (whence, o) {
        (0, _) => 0,
        (1, Object::File(f)) => match &**f {
            File::P9 { offset, .. } => *offset.lock() as i64,
            File::Console { .. } => 0,
        },
        (2, _) => match ns_file(o) {
            Some(f) => client()?.getattr(f.fid)?.size as i64,
            None => 0,
        },
        (1, _) => 0,
        _ => return Err(Errno::EINVAL),
    };
    let mut start = base.checked_add(start).ok_or(Errno::EINVAL)?;
    let mut len = len;
    if len < 0 {
        // A negative length covers the bytes before start.
        start = start.checked_add(len).ok_or(Errno::EINVAL)?;
        len = -len;
    }
    if start < 0 {
        return Err(Errno::EINVAL);
    }
    Ok(Lock {
        ty,
        start: start as u64,
        len: len as u64,
        pid,
    })
}

/// Linux's `check_fmode_for_setlk`: a read lock needs a descriptor open for
/// reading, a write lock one open for writing.
fn check_mode(o: &Object, ty: u16) -> Result<(), Errno> {
    let mode = o.status_flags() & O_ACCMODE;
    match ty {
        F_RDLCK if mode == O_WRONLY => Err(Errno::EBADF),
        F_WRLCK if mode == O_RDONLY => Err(Errno::EBADF),
        _ => Ok(()),
    }
}

fn p9_type(ty: u16) -> u8 {
    match ty {
        F_RDLCK => P9_LOCK_TYPE_RDLCK,
        F_WRLCK => P9_LOCK_TYPE_WRLCK,
        _ => P9_LOCK_TYPE_UNLCK,
    }
}

/// The fid holding the program's POSIX locks of `f` (made on first use:
/// a new fid of the same file, opened read-write where it may be, else as
/// the descriptor is).
fn posix_owner(c: &Client, f: &NsFile<'_>) -> Result<Fid, Errno> {
    if let Some(fid) = POSIX_OWNERS.lock().get(&f.ino) {
        return Ok(*fid);
    }
    let new = c.walk(f.fid, &[]).or_else(|_| c.walk_path(f.path))?;
    if c.open(new, O_RDWR).is_err()
        && let Err(e) = c.open(new, f.flags & O_ACCMODE)
    {
        c.clunk(new);
        return Err(e);
    }
    let mut owners = POSIX_OWNERS.lock();
    if let Some(fid) = owners.get(&f.ino) {
        // Another thread made one meanwhile.
        let fid = *fid;
        drop(owners);
        c.clunk(new);
        return Ok(fid);
    }
    owners.insert(f.ino, new);
    Ok(new)
}

/// A descriptor is being closed: if it is a file the program holds POSIX
/// locks of, they all go (Linux drops a process's locks of a file at the
/// close of any of its descriptors of it).
pub fn closing(o: &Object) {
    let Some(f) = ns_file(o) else {
        return;
    };
    let owner = {
        let mut owners = POSIX_OWNERS.lock();
        if owners.is_empty() {
            return;
        }
        owners.remove(&f.ino)
    };
    if let (Some(fid), Some(c)) = (owner, crate::p9::mounted()) {
        c.clunk(fid);
    }
}

/// Asks the gateway for a lock on `fid` until it is given (`wait`), or
/// once.
fn take(c: &Client, fid: Fid, ty: u8, start: u64, len: u64, flags: u32) -> Result<u64, Errno> {
    let wait = flags & P9_LOCK_FLAGS_BLOCK != 0;
    loop {
        match c.lock(fid, ty, start, len, flags)? {
            P9_LOCK_SUCCESS => return Ok(0),
            // The server does not wait itself: ask again a little later,
            // as Linux's 9P client does. A signal ends the wait (`EINTR`,
            // or a restart under SA_RESTART), as Linux's.
            P9_LOCK_BLOCKED if wait => {
                let until = crate::time::monotonic_ns().saturating_add(10_000_000);
                if !crate::sched::sleep_until_interruptible(until) {
                    return Err(Errno::ERESTARTSYS);
                }
            }
            P9_LOCK_BLOCKED => return Err(Errno::EAGAIN),
            _ => return Err(Errno::ENOLCK),
        }
    }
}

/// `F_SETLK`/`F_SETLKW` (`ofd`: their `F_OFD_*` forms).
pub fn setlk(o: &Object, addr: u64, wait: bool, ofd: bool) -> Result<u64, Errno> {
    let l = read_flock(o, addr)?;
    check_mode(o, l.ty)?;
    if ofd && l.pid != 0 {
        return Err(Errno::EINVAL);
    }
    // Pipes, sockets and the console: a lock no one else can see.
    let Some(f) = ns_file(o) else {
        return Ok(0);
    };
    let c = client()?;
    let flags = if wait { P9_LOCK_FLAGS_BLOCK } else { 0 };
    let fid = if ofd {
        f.fid
    } else if l.ty == F_UNLCK {
        // Nothing of the program's to release without an owner.
        match POSIX_OWNERS.lock().get(&f.ino) {
            Some(fid) => *fid,
            None => return Ok(0),
        }
    } else {
        posix_owner(c, &f)?
    };
    take(c, fid, p9_type(l.ty), l.start, l.len, flags)
}

/// `F_GETLK` (`ofd`: `F_OFD_GETLK`): the first lock that would conflict,
/// as its owner sees it: a POSIX lock of the program's reports the
/// program's pid, others `-1` (the owner is on the host or in another
/// partition).
pub fn getlk(o: &Object, addr: u64, ofd: bool) -> Result<u64, Errno> {
    let l = read_flock(o, addr)?;
    if l.ty == F_UNLCK {
        return Err(Errno::EINVAL);
    }
    if ofd && l.pid != 0 {
        return Err(Errno::EINVAL);
    }
    let mut out = user::read_array::<32>(addr)?;
    let Some(f) = ns_file(o) else {
        // Linux changes only l_type when nothing conflicts.
        out[0..2].copy_from_slice(&F_UNLCK.to_le_bytes());
        user::copy_in(addr, &out)?;
        return Ok(0);
    };
    let c = client()?;
    let fid = if ofd { f.fid } else { posix_owner(c, &f)? };
    let ty = p9_type(l.ty);
    let (got, start, len) = c.getlock(fid, ty, l.start, l.len)?;
    let got = u16::from(got);
    out[0..2].copy_from_slice(&got.to_le_bytes());
    if got != F_UNLCK {
        // The conflict is the program's own POSIX lock when its owner
        // fid, which does not see its own, finds none there.
        let owner = POSIX_OWNERS.lock().get(&f.ino).copied();
        let mine = match owner {
            Some(p) if ofd => c
                .getlock(p, ty, start, len)
                .is_ok_and(|(t, _, _)| u16::from(t) == F_UNLCK),
            _ => false,
        };
        let pid = if mine { crate::vfs::pid() as i32 } else { -1 };
        out[2..4].copy_from_slice(&0u16.to_le_bytes());
        out[8..16].copy_from_slice(&start.to_le_bytes());
        out[16..24].copy_from_slice(&len.to_le_bytes());
        out[24..28].copy_from_slice(&pid.to_le_bytes());
    }
    user::copy_in(addr, &out)?;
    Ok(0)
}

/// `flock(fd, operation)`: a whole-file lock of the open file description,
/// taken at the gateway (a host `flock` of the description's file there):
/// it conflicts with other descriptions', in this partition or not, and
/// goes with the description. Objects outside the namespace (pipes,
/// sockets) take it at once.
pub fn flock(a: &[u64; 6]) -> Result<u64, Errno> {
    let o = fd::object(a[0])?;
    let ty = match a[1] & !LOCK_NB {
        LOCK_SH => F_RDLCK,
        LOCK_EX => F_WRLCK,
        LOCK_UN => F_UNLCK,
        _ => return Err(Errno::EINVAL),
    };
    let Some(f) = ns_file(&o) else {
        return Ok(0);
    };
    let mut flags = P9_LOCK_FLAGS_FLOCK;
    if a[1] & LOCK_NB == 0 {
        flags |= P9_LOCK_FLAGS_BLOCK;
    }
    take(client()?, f.fid, p9_type(ty), 0, 0, flags)
}
