//! The process's file descriptors. A descriptor refers to an open file
//! description ([`Object`]): the console or a file of the 9P namespace
//! ([`File`]), or one the library OS serves itself (a generated `/proc` file,
//! a device, a pipe end, an eventfd, a timerfd). `dup` shares the description (and its
//! offset and status flags); close-on-exec belongs to the descriptor.

use alloc::string::String;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU32, Ordering};

use crate::errno::Errno;
use crate::p9::Fid;
use crate::sync::IrqLock;
use crate::vfs::dev::Device;
use crate::vfs::epoll::Epoll;
use crate::vfs::pipe::{ReadEnd, WriteEnd};
use crate::vfs::poll_bits::{POLLIN, POLLOUT, POLLRDNORM, POLLWRNORM};
use crate::vfs::route::DevKind;
use crate::vfs::synthetic::Synthetic;

/// `O_NONBLOCK`.
pub const O_NONBLOCK: u32 = 0o4000;
/// `O_APPEND`.
pub const O_APPEND: u32 = 0o2000;
/// The access mode bits of the `O_*` flags.
pub const O_ACCMODE: u32 = 3;
/// `O_CLOEXEC`.
pub const O_CLOEXEC: u32 = 0o2000000;

/// The console or a file of the namespace.
pub enum File {
    /// The user's console: reads come from stdin, writes go to stdout/stderr.
    Console {
        /// 1 (stdout) or 2 (stderr) for writes; 0 reads.
        fd: u8,
    },
    /// An open 9P file or directory.
    P9 {
        /// The open fid.
        fid: Fid,
        /// The file position.
        offset: IrqLock<u64>,
        /// The path it was opened by.
        path: String,
        /// `O_*` status flags (access mode, `O_APPEND`, `O_NONBLOCK`).
        flags: AtomicU32,
        /// The file-cache key (its inode) when reads go through the cache.
        cache: Option<u64>,
        /// Its inode (the 9P qid path): the key of its shared pages
        /// (`mm::shared`).
        ino: u64,
        /// Whether it is a directory (read, mmap and most seeks refuse it).
        dir: bool,
    },
}

impl Drop for File {
    fn drop(&mut self) {
        if let (File::P9 { fid, .. }, Some(c)) = (&*self, crate::p9::mounted()) {
            c.clunk(*fid);
        }
        if let File::P9 {
            path, flags, dir, ..
        } = &*self
        {
            use crate::vfs::inotify::{IN_CLOSE_NOWRITE, IN_CLOSE_WRITE, IN_ISDIR, notify};
            let wrote = flags.load(Ordering::Relaxed) & O_ACCMODE != 0;
            let what = if wrote {
                IN_CLOSE_WRITE
            } else {
                IN_CLOSE_NOWRITE
            };
            notify(path, what | if *dir { IN_ISDIR } else { 0 });
        }
    }
}

/// The calls of a regular file, for an object that is one without being a
/// file of the namespace (a memory-only file): positional reads and writes,
/// a size to change, pages to map. The system calls reach it through
/// [`FileLike::regular`] (and [`Object::regular`]), so another such kind
/// plugs in without a case of its own in each of them.
pub trait RegularLike: Send + Sync {
    /// Its inode (`st_ino`; the key of its pages).
    fn ino(&self) -> u64;
    /// Its size in bytes.
    fn size(&self) -> u64;
    /// The file position of `read`, `write` and `lseek`.
    fn position(&self) -> &IrqLock<u64>;
    /// Up to `max` bytes at `off` (fewer at the end).
    fn read_at(&self, off: u64, max: usize) -> Vec<u8>;
    /// Writes `data` at `off`, growing the file; how much went.
    fn write_at(&self, off: u64, data: &[u8]) -> Result<usize, Errno>;
    /// `ftruncate`.
    fn set_size(&self, size: u64) -> Result<(), Errno>;
    /// `fallocate(mode, off, len)`.
    fn fallocate(&self, mode: u32, off: u64, len: u64) -> Result<(), Errno>;
    /// The file system's `f_type` for `fstatfs`.
    fn statfs_magic(&self) -> u64;
    /// The physical address of page `index`, made if need be: `Err(true)`
    /// past the end (SIGBUS), `Err(false)` when memory ran out.
    fn map_page(&self, index: u64) -> Result<u64, bool>;
    /// Its seals (`F_GET_SEALS`: `F_SEAL_*` bits).
    fn seals(&self) -> u32;
    /// `F_ADD_SEALS`: `EPERM` once sealed against sealing, `EBUSY` for
    /// `F_SEAL_WRITE` while a shared writable mapping exists.
    fn add_seals(&self, seals: u32) -> Result<(), Errno>;
}

/// An open file description the library OS serves itself, as a trait:
/// a new kind of file (a socket) implements it instead of adding an arm to
/// every system call's `match` on [`Object`] (after Asterinas'
/// `FileLike`). The defaults are those of a file without the operation.
pub trait FileLike: Send + Sync + 'static {
    /// Reads up to `max` bytes; waits for some unless `nonblock`. An empty
    /// vector is the end of the file.
    fn read(&self, max: usize, nonblock: bool) -> Result<Vec<u8>, Errno> {
        let _ = (max, nonblock);
        Err(Errno::EINVAL)
    }
    /// Writes `data` (the program's memory or a kernel buffer); returns
    /// how much went.
    fn write(&self, data: &[u8], nonblock: bool) -> Result<usize, Errno> {
        let _ = (data, nonblock);
        Err(Errno::EINVAL)
    }
    /// Writes a write's bytes as they are taken (see
    /// [`Gather`](crate::vfs::gather::Gather)): a stream that sizes its
    /// buffers from the whole write (a Unix stream socket). `None` (the
    /// default): the write goes to [`write`](Self::write) in kernel copies.
    fn write_from(
        &self,
        src: &mut crate::vfs::gather::Gather<'_>,
        nonblock: bool,
    ) -> Option<Result<usize, Errno>> {
        let _ = (src, nonblock);
        None
    }
    /// The `poll` events it reports now.
    fn poll(&self) -> u16;
    /// Its wait queues' wake-ups (see [`Object::wakes`]).
    fn wakes(&self) -> [u64; 3];
    /// The events its wake-ups are keyed with (reading, writing): Linux
    /// wakes an eventfd's and a timerfd's waiters with `POLLIN`/`POLLOUT`
    /// alone (see [`Object::wake_keys`]).
    fn wake_keys(&self) -> (u16, u16) {
        (
            crate::vfs::poll_bits::POLLIN,
            crate::vfs::poll_bits::POLLOUT,
        )
    }
    /// Its `O_*` status flags.
    fn flags(&self) -> &AtomicU32;
    /// A request of `ioctl` other than the generic ones; `ENOTTY` if it
    /// has none.
    fn ioctl(&self, request: u64, arg: u64) -> Result<u64, Errno> {
        let _ = (request, arg);
        Err(Errno::ENOTTY)
    }
    /// Its `st_mode` (type and permissions) for `fstat`.
    fn mode(&self) -> u32;
    /// When it becomes ready by itself, without a wake-up (an armed
    /// timerfd): a wait on it ends then.
    fn next_expiry(&self) -> Option<u64> {
        None
    }
    /// Whether it has an inode of its own that `fchmod`/`fchown` may change
    /// (sockets, eventfds); others refuse with `EPERM`.
    fn own_inode(&self) -> bool {
        false
    }
    /// What `/proc/self/fd/N` links to, as Linux names it for an anonymous
    /// file (`anon_inode:[eventfd]`); sockets are `socket:[INODE]`.
    fn proc_link(&self) -> String {
        String::from("anon_inode:[unknown]")
    }
    /// Whether a read takes what it reads before copying it out, so that a
    /// buffer with a hole loses it (`EFAULT`, and it is gone), as Linux's
    /// eventfd counter, timerfd expirations and datagrams are; streams
    /// keep their bytes for the next read (the default).
    fn taken_before_copy(&self) -> bool {
        false
    }
    /// Its regular-file calls, if it is a regular file (see [`RegularLike`]).
    fn regular(&self) -> Option<&dyn RegularLike> {
        None
    }
    /// The concrete type, for the calls only one kind has (`bind` on a socket).
    /// A read that neither waits nor goes to the gateway, for a direct
    /// system call (`syscall::direct`): `None` declines (the call traps and
    /// runs [`read`](Self::read)); `EAGAIN` means nothing is there now.
    fn read_now(&self, max: usize) -> Option<Result<Vec<u8>, Errno>> {
        let _ = max;
        None
    }

    /// A write that neither waits nor goes to the gateway, for a direct
    /// system call: `None` declines, before any effect.
    fn write_now(&self, data: &[u8]) -> Option<Result<usize, Errno>> {
        let _ = data;
        None
    }

    fn as_any(&self) -> &dyn core::any::Any;
}

/// An open file description.
#[derive(Clone)]
pub enum Object {
    /// The console or a file of the namespace.
    File(Arc<File>),
    /// A generated file or directory (`/proc`, `/sys`).
    Synthetic(Arc<Synthetic>),
    /// A device node (`/dev/null`, …).
    Device(Arc<Device>),
    /// The read end of a pipe.
    PipeRead(Arc<ReadEnd>),
    /// The write end of a pipe.
    PipeWrite(Arc<WriteEnd>),
    /// An epoll instance.
    Epoll(Arc<Epoll>),
    /// Any other kind, through its [`FileLike`] operations (eventfds,
    /// timerfds, inotify instances, sockets).
    Like(Arc<dyn FileLike>),
}

/// An open file description that an epoll registration refers to without
/// keeping it open (Linux drops the registration when the description's
/// last descriptor goes).
#[derive(Clone)]
pub enum WeakObject {
    /// See [`Object::File`].
    File(Weak<File>),
    /// See [`Object::Synthetic`].
    Synthetic(Weak<Synthetic>),
    /// See [`Object::Device`].
    Device(Weak<Device>),
    /// See [`Object::PipeRead`].
    PipeRead(Weak<ReadEnd>),
    /// See [`Object::PipeWrite`].
    PipeWrite(Weak<WriteEnd>),
    /// See [`Object::Epoll`].
    Epoll(Weak<Epoll>),
    /// See [`Object::Like`].
    Like(Weak<dyn FileLike>),
}

impl WeakObject {
    /// How many strong references keep the description open.
    pub fn strong_count(&self) -> usize {
        match self {
            WeakObject::File(w) => w.strong_count(),
            WeakObject::Synthetic(w) => w.strong_count(),
            WeakObject::Device(w) => w.strong_count(),
            WeakObject::PipeRead(w) => w.strong_count(),
            WeakObject::PipeWrite(w) => w.strong_count(),
            WeakObject::Epoll(w) => w.strong_count(),
            WeakObject::Like(w) => w.strong_count(),
        }
    }

    /// Whether the description is still open.
    pub fn alive(&self) -> bool {
        match self {
            WeakObject::File(w) => w.strong_count() > 0,
            WeakObject::Synthetic(w) => w.strong_count() > 0,
            WeakObject::Device(w) => w.strong_count() > 0,
            WeakObject::PipeRead(w) => w.strong_count() > 0,
            WeakObject::PipeWrite(w) => w.strong_count() > 0,
            WeakObject::Epoll(w) => w.strong_count() > 0,
            WeakObject::Like(w) => w.strong_count() > 0,
        }
    }

    /// The description, if it is still open.
    pub fn upgrade(&self) -> Option<Object> {
        Some(match self {
            WeakObject::File(w) => Object::File(w.upgrade()?),
            WeakObject::Synthetic(w) => Object::Synthetic(w.upgrade()?),
            WeakObject::Device(w) => Object::Device(w.upgrade()?),
            WeakObject::PipeRead(w) => Object::PipeRead(w.upgrade()?),
            WeakObject::PipeWrite(w) => Object::PipeWrite(w.upgrade()?),
            WeakObject::Epoll(w) => Object::Epoll(w.upgrade()?),
            WeakObject::Like(w) => Object::Like(w.upgrade()?),
        })
    }
}

/// Events a readiness-less file reports: always ready both ways.
const ALWAYS: u16 = POLLIN | POLLRDNORM | POLLOUT | POLLWRNORM;

impl Object {
    /// A reference that does not keep the description open.
    pub fn downgrade(&self) -> WeakObject {
        match self {
            Object::File(a) => WeakObject::File(Arc::downgrade(a)),
            Object::Synthetic(a) => WeakObject::Synthetic(Arc::downgrade(a)),
            Object::Device(a) => WeakObject::Device(Arc::downgrade(a)),
            Object::PipeRead(a) => WeakObject::PipeRead(Arc::downgrade(a)),
            Object::PipeWrite(a) => WeakObject::PipeWrite(Arc::downgrade(a)),
            Object::Epoll(a) => WeakObject::Epoll(Arc::downgrade(a)),
            Object::Like(a) => WeakObject::Like(Arc::downgrade(a)),
        }
    }

    /// The description's identity (its address; stable while any
    /// reference, weak ones included, is alive).
    pub fn key(&self) -> usize {
        match self {
            Object::File(a) => Arc::as_ptr(a) as *const u8 as usize,
            Object::Synthetic(a) => Arc::as_ptr(a) as *const u8 as usize,
            Object::Device(a) => Arc::as_ptr(a) as *const u8 as usize,
            Object::PipeRead(a) => Arc::as_ptr(a) as *const u8 as usize,
            Object::PipeWrite(a) => Arc::as_ptr(a) as *const u8 as usize,
            Object::Epoll(a) => Arc::as_ptr(a) as *const u8 as usize,
            Object::Like(a) => Arc::as_ptr(a) as *const u8 as usize,
        }
    }

    /// The `poll` events it reports now. `depth` counts nested epoll
    /// instances (an epoll instance is ready when one of its own
    /// registrations is). A new kind of object reports its state here,
    /// its wake-ups in [`Object::wakes`], and calls
    /// `vfs::readiness_changed` when its state changes.
    pub fn poll(&self, depth: u32) -> u16 {
        match self {
            Object::File(f) => match &**f {
                File::Console { fd: 0 } => POLLIN | POLLRDNORM,
                File::Console { .. } => POLLOUT | POLLWRNORM,
                File::P9 { .. } => ALWAYS,
            },
            Object::Synthetic(_) | Object::Device(_) => ALWAYS,
            Object::PipeRead(p) => p.poll(),
            Object::PipeWrite(p) => p.poll(),
            Object::Epoll(e) => e.poll(depth + 1),
            Object::Like(l) => l.poll(),
        }
    }

    /// Its wait queue's wake-ups so far as (keyed `EPOLLIN`, keyed
    /// `EPOLLOUT`, unkeyed): an edge-triggered registration fires again
    /// after a wake-up its events meet. Files whose readiness never
    /// changes have none.
    pub fn wakes(&self) -> [u64; 3] {
        match self {
            Object::PipeRead(p) => p.wakes(),
            Object::PipeWrite(p) => p.wakes(),
            Object::Epoll(e) => e.wakes(),
            Object::Like(l) => l.wakes(),
            Object::File(_) | Object::Synthetic(_) | Object::Device(_) => [0; 3],
        }
    }

    /// The keys its wake-ups counted in [`Object::wakes`] come with
    /// (input, output), as Linux's: pipes wake with `POLLIN|POLLRDNORM` and
    /// `POLLOUT|POLLWRNORM`, the others with `POLLIN` and `POLLOUT`.
    pub fn wake_keys(&self) -> (u32, u32) {
        match self {
            Object::PipeRead(_) | Object::PipeWrite(_) => (
                u32::from(POLLIN | POLLRDNORM),
                u32::from(POLLOUT | POLLWRNORM),
            ),
            Object::Like(l) => {
                let (r, w) = l.wake_keys();
                (u32::from(r), u32::from(w))
            }
            _ => (u32::from(POLLIN), u32::from(POLLOUT)),
        }
    }

    /// When it becomes ready by itself, without anyone waking the
    /// readiness queue (an armed timerfd): a wait on it ends then.
    pub fn next_expiry(&self) -> Option<u64> {
        match self {
            Object::Epoll(e) => e.next_expiry(),
            Object::Like(l) => l.next_expiry(),
            _ => None,
        }
    }

    /// Whether epoll can watch it (Linux: the file has a `poll`
    /// operation). Regular files and directories cannot (`EPERM`), nor
    /// `/dev/null`, `/dev/zero`, `/dev/full`, `/dev/urandom` or
    /// per-process `/proc` files.
    pub fn epoll_watchable(&self) -> bool {
        match self {
            Object::File(f) => matches!(&**f, File::Console { .. }),
            Object::Device(d) => matches!(d.kind, DevKind::Random { minor: 8 }),
            Object::Synthetic(s) => {
                let p = s.path.as_str();
                let per_process = p.starts_with("/proc/self")
                    || p.starts_with("/proc/thread-self")
                    || p.strip_prefix("/proc/")
                        .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()));
                !matches!(s.content, crate::vfs::synthetic::Content::Dir(_)) && !per_process
            }
            _ => true,
        }
    }

    /// The `O_*` status flags (`F_GETFL`).
    pub fn status_flags(&self) -> u32 {
        match self {
            Object::File(f) => match &**f {
                File::Console { fd: 0 } => 0,
                File::Console { .. } => 1,
                File::P9 { flags, .. } => flags.load(Ordering::Relaxed),
            },
            Object::Synthetic(s) => s.flags.load(Ordering::Relaxed),
            Object::Device(d) => d.flags.load(Ordering::Relaxed),
            Object::PipeRead(p) => p.flags.load(Ordering::Relaxed),
            Object::PipeWrite(p) => p.flags.load(Ordering::Relaxed),
            Object::Epoll(e) => e.flags.load(Ordering::Relaxed),
            Object::Like(l) => l.flags().load(Ordering::Relaxed),
        }
    }

    /// Sets the changeable status flags (`O_APPEND`, `O_NONBLOCK`;
    /// `F_SETFL`); the access mode stays.
    pub fn set_status_flags(&self, new: u32) {
        const CHANGEABLE: u32 = O_APPEND | O_NONBLOCK;
        let cell = match self {
            Object::File(f) => match &**f {
                File::P9 { flags, .. } => flags,
                File::Console { .. } => return,
            },
            Object::Synthetic(s) => &s.flags,
            Object::Device(d) => &d.flags,
            Object::PipeRead(p) => &p.flags,
            Object::PipeWrite(p) => &p.flags,
            Object::Epoll(e) => &e.flags,
            Object::Like(l) => l.flags(),
        };
        let old = cell.load(Ordering::Relaxed);
        cell.store((old & !CHANGEABLE) | (new & CHANGEABLE), Ordering::Relaxed);
    }

    /// Its regular-file calls, if it is a regular file other than one of
    /// the namespace (a memory-only file).
    pub fn regular(&self) -> Option<&dyn RegularLike> {
        match self {
            Object::Like(l) => l.regular(),
            _ => None,
        }
    }

    /// The file of kind `T` behind it, if it is one (a call only one
    /// kind has: `bind` on a socket, `timerfd_settime`).
    pub fn like<T: 'static>(&self) -> Option<&T> {
        match self {
            Object::Like(l) => l.as_any().downcast_ref(),
            _ => None,
        }
    }

    /// The socket behind it, if it is one.
    pub fn socket(&self) -> Option<crate::net::AnySocket<'_>> {
        if let Some(s) = self.like::<crate::net::Socket>() {
            return Some(crate::net::AnySocket::Stream(s));
        }
        if let Some(d) = self.like::<crate::net::Dgram>() {
            return Some(crate::net::AnySocket::Dgram(d));
        }
        if let Some(u) = self.like::<crate::net::UnixMsg>() {
            return Some(crate::net::AnySocket::UnixMsg(u));
        }
        self.like::<crate::net::UnixSocket>()
            .map(crate::net::AnySocket::Unix)
    }

    /// Whether reads and writes fail with `EAGAIN` rather than wait.
    pub fn nonblocking(&self) -> bool {
        self.status_flags() & O_NONBLOCK != 0
    }
}

/// One descriptor: its open file description and its own flags.
#[derive(Clone)]
pub struct Slot {
    /// What it refers to.
    pub object: Object,
    /// `FD_CLOEXEC` (kept for `F_GETFD`; there is no exec to act on it).
    pub cloexec: bool,
}

/// The descriptor table (one process).
pub static TABLE: IrqLock<Vec<Option<Slot>>> = IrqLock::new(Vec::new());

/// Most descriptors open at once: Linux's `sysctl_nr_open` default, the
/// highest `RLIMIT_NOFILE` a program may set.
pub const MAX_FDS: usize = 1 << 20;

/// Puts the console on 0, 1 and 2.
pub fn init_stdio() {
    let old = {
        let mut t = TABLE.lock();
        let old = core::mem::take(&mut *t);
        for fd in 0..3u8 {
            t.push(Some(Slot {
                object: Object::File(Arc::new(File::Console { fd })),
                cloexec: false,
            }));
        }
        old
    };
    // Closing 9P files talks to the gateway: not with the table locked.
    drop(old);
}

/// The open file description behind `fd`.
pub fn object(fd: u64) -> Result<Object, Errno> {
    let t = TABLE.lock();
    t.get(fd as usize)
        .and_then(|s| s.as_ref())
        .map(|s| s.object.clone())
        .ok_or(Errno::EBADF)
}

/// The open descriptors, in order (`/proc/self/fd`).
pub fn open_fds() -> Vec<usize> {
    TABLE
        .lock()
        .iter()
        .enumerate()
        .filter(|(_, s)| s.is_some())
        .map(|(i, _)| i)
        .collect()
}

/// What `/proc/self/fd/N` links to: the path of a file, `pipe:[N]`,
/// `socket:[N]` or `anon_inode:[…]` as Linux names them.
pub fn link_target(fd: u64) -> Result<String, Errno> {
    let o = object(fd)?;
    let key = o.key();
    Ok(match &o {
        Object::File(f) => match &**f {
            File::Console { .. } => String::from("/dev/console"),
            File::P9 { path, .. } => path.clone(),
        },
        Object::Synthetic(s) => s.path.clone(),
        Object::Device(d) => String::from(d.kind.path()),
        Object::PipeRead(_) | Object::PipeWrite(_) => alloc::format!("pipe:[{key}]"),
        Object::Epoll(_) => String::from("anon_inode:[eventpoll]"),
        Object::Like(l) if l.mode() & 0o170_000 == 0o140_000 => alloc::format!("socket:[{key}]"),
        Object::Like(l) => l.proc_link(),
    })
}

/// The console or 9P file behind `fd`; `ENODEV` for the library OS's own
/// files (pipes, eventfds, generated files), which have no fid.
pub fn get(fd: u64) -> Result<Arc<File>, Errno> {
    match object(fd)? {
        Object::File(f) => Ok(f),
        _ => Err(Errno::ENODEV),
    }
}

/// Installs `object` at the lowest free descriptor at or above `min`.
pub fn install_from(object: Object, cloexec: bool, min: usize) -> Result<u64, Errno> {
    // Below `RLIMIT_NOFILE`'s soft limit, as Linux's `alloc_fd`.
    let limit = crate::process::fd_limit();
    if min >= limit {
        return Err(Errno::EMFILE);
    }
    let mut t = TABLE.lock();
    let slot = Some(Slot { object, cloexec });
    if let Some(i) = (min..t.len().min(limit)).find(|&i| t[i].is_none()) {
        t[i] = slot;
        return Ok(i as u64);
    }
    let at = t.len().max(min);
    if at >= limit {
        return Err(Errno::EMFILE);
    }
    t.resize(at + 1, None);
    t[at] = slot;
    Ok(at as u64)
}

/// Installs `object` at the lowest free descriptor.
pub fn install_object(object: Object, cloexec: bool) -> Result<u64, Errno> {
    install_from(object, cloexec, 0)
}

/// Installs the two ends of a pipe or socket pair at the lowest free
/// descriptors and writes their numbers to the program's `int[2]` at
/// `out`; on any failure neither stays open.
pub fn install_pair(a: Object, b: Object, cloexec: bool, out: u64) -> Result<u64, Errno> {
    crate::mm::user::check_range(out, 8)?;
    let first = install_object(a, cloexec)?;
    let second = match install_object(b, cloexec) {
        Ok(n) => n,
        Err(e) => {
            let _ = close(first);
            return Err(e);
        }
    };
    let mut fds = [0u8; 8];
    fds[..4].copy_from_slice(&(first as u32).to_le_bytes());
    fds[4..].copy_from_slice(&(second as u32).to_le_bytes());
    if let Err(e) = crate::mm::user::copy_in(out, &fds) {
        let _ = close(first);
        let _ = close(second);
        return Err(e);
    }
    Ok(0)
}

/// Installs a console or 9P file at the lowest free descriptor.
pub fn install(f: File) -> Result<u64, Errno> {
    install_object(Object::File(Arc::new(f)), false)
}

/// Sets or clears `FD_CLOEXEC` on `fd`.
pub fn set_cloexec(fd: u64, on: bool) -> Result<(), Errno> {
    let mut t = TABLE.lock();
    let s = t
        .get_mut(fd as usize)
        .and_then(Option::as_mut)
        .ok_or(Errno::EBADF)?;
    s.cloexec = on;
    Ok(())
}

/// Whether `fd` has `FD_CLOEXEC`.
pub fn cloexec(fd: u64) -> Result<bool, Errno> {
    let t = TABLE.lock();
    t.get(fd as usize)
        .and_then(|s| s.as_ref())
        .map(|s| s.cloexec)
        .ok_or(Errno::EBADF)
}

/// Closes `fd` (the fid is clunked when the last reference goes).
pub fn close(fd: u64) -> Result<(), Errno> {
    let old = {
        let mut t = TABLE.lock();
        t.get_mut(fd as usize)
            .and_then(Option::take)
            .ok_or(Errno::EBADF)?
    };
    crate::syscall::locks::closing(&old.object);
    drop(old);
    Ok(())
}

/// The current directory, as an absolute path in the namespace.
pub static CWD: IrqLock<String> = IrqLock::new(String::new());

/// Resolves `path` against the current directory (`.` and `..` folded).
pub fn absolute(path: &str) -> String {
    let mut parts: Vec<String> = Vec::new();
    let base = if path.starts_with('/') {
        String::new()
    } else {
        CWD.lock().clone()
    };
    for c in base.split('/').chain(path.split('/')) {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(String::from(c)),
        }
    }
    let mut out = String::from("/");
    out.push_str(&parts.join("/"));
    out
}
