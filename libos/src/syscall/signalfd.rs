//! `signalfd(2)`, `signalfd4(2)`.

use alloc::sync::Arc;

use crate::errno::Errno;
use crate::fd::{self, O_CLOEXEC, O_NONBLOCK, Object};
use crate::mm::user;
use crate::vfs::signalfd::SignalFd;

/// `SIGKILL` and `SIGSTOP`, which no signalfd takes.
const UNTAKEN: u64 = (1 << 8) | (1 << 18);

fn make(ufd: u64, mask_addr: u64, sizemask: u64, flags: u64) -> Result<u64, Errno> {
    if sizemask != 8 {
        return Err(Errno::EINVAL);
    }
    let mask = u64::from_le_bytes(user::read_array::<8>(mask_addr)?) & !UNTAKEN;
    let flags = flags as u32;
    if flags & !(O_CLOEXEC | O_NONBLOCK) != 0 {
        return Err(Errno::EINVAL);
    }
    if ufd as i32 == -1 {
        let s = SignalFd::new(mask, flags & O_NONBLOCK);
        return fd::install_object(Object::Like(Arc::new(s)), flags & O_CLOEXEC != 0);
    }
    let o = fd::object(ufd)?;
    let r = match o.like::<SignalFd>() {
        Some(s) => {
            s.set_mask(mask);
            Ok(ufd)
        }
        None => Err(Errno::EINVAL),
    };
    super::release(o);
    r
}

/// `signalfd(fd, mask, sizemask)`: a signalfd taking the signals of
/// `mask` (`fd` -1), or a new mask for the signalfd `fd`.
pub fn signalfd(a: &[u64; 6]) -> Result<u64, Errno> {
    make(a[0], a[1], a[2], 0)
}

/// `signalfd4(fd, mask, sizemask, flags)`: the same with `SFD_NONBLOCK`,
/// `SFD_CLOEXEC`.
pub fn signalfd4(a: &[u64; 6]) -> Result<u64, Errno> {
    make(a[0], a[1], a[2], a[3])
}
