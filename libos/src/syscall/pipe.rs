//! `pipe(2)`, `pipe2(2)`, `eventfd(2)`, `eventfd2(2)`.

use alloc::sync::Arc;

use crate::errno::Errno;
use crate::fd::{self, O_CLOEXEC, O_NONBLOCK, Object};
use crate::mm::user;
use crate::vfs::eventfd::EventFd;

const O_DIRECT: u32 = 0o40000;
const EFD_SEMAPHORE: u32 = 1;

fn make_pipe(addr: u64, flags: u32) -> Result<u64, Errno> {
    if flags & !(O_CLOEXEC | O_NONBLOCK | O_DIRECT) != 0 {
        return Err(Errno::EINVAL);
    }
    user::check_range(addr, 8)?;
    let (r, w) = crate::vfs::pipe::new(flags & O_NONBLOCK);
    fd::install_pair(
        Object::PipeRead(Arc::new(r)),
        Object::PipeWrite(Arc::new(w)),
        flags & O_CLOEXEC != 0,
        addr,
    )
}

/// `pipe(fds)`.
pub fn pipe(a: &[u64; 6]) -> Result<u64, Errno> {
    make_pipe(a[0], 0)
}

/// `pipe2(fds, flags)`: `O_CLOEXEC`, `O_NONBLOCK` (`O_DIRECT` packet mode
/// is accepted and behaves as a byte stream).
pub fn pipe2(a: &[u64; 6]) -> Result<u64, Errno> {
    make_pipe(a[0], a[1] as u32)
}

fn make_eventfd(initval: u64, flags: u32) -> Result<u64, Errno> {
    if flags & !(O_CLOEXEC | O_NONBLOCK | EFD_SEMAPHORE) != 0 {
        return Err(Errno::EINVAL);
    }
    let e = EventFd::new(
        u64::from(initval as u32),
        flags & EFD_SEMAPHORE != 0,
        flags & O_NONBLOCK,
    );
    fd::install_object(Object::Like(Arc::new(e)), flags & O_CLOEXEC != 0)
}

/// `eventfd(initval)`.
pub fn eventfd(a: &[u64; 6]) -> Result<u64, Errno> {
    make_eventfd(a[0], 0)
}

/// `eventfd2(initval, flags)`: `EFD_SEMAPHORE`, `EFD_NONBLOCK`, `EFD_CLOEXEC`.
pub fn eventfd2(a: &[u64; 6]) -> Result<u64, Errno> {
    make_eventfd(a[0], a[1] as u32)
}
