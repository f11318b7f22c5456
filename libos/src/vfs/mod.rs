//! The files the library OS serves itself, beside the 9P namespace:
//! generated `/proc` and `/sys` files, `/dev` nodes, pipes and eventfds.
//!
//! [`route`] decides which paths are served here; [`proc`] formats the
//! generated text and [`ring`] holds the pipe and eventfd state machines
//! (pure, tested on the host). The rest touches the scheduler.

pub mod gather;
pub mod proc;
pub mod ring;
pub mod route;

#[cfg(target_os = "none")]
pub mod dev;
#[cfg(target_os = "none")]
pub mod epoll;
#[cfg(target_os = "none")]
pub mod eventfd;
#[cfg(target_os = "none")]
pub mod identity;
#[cfg(target_os = "none")]
pub mod inotify;
#[cfg(target_os = "none")]
pub mod memfd;
#[cfg(target_os = "none")]
pub mod pipe;
#[cfg(target_os = "none")]
pub mod signalfd;
#[cfg(target_os = "none")]
pub mod synthetic;
pub mod timerfd;

/// The process id `getpid` answers (one process per partition: the id of
/// its first thread), which `/proc/self` links to.
#[cfg(target_os = "none")]
pub fn pid() -> u64 {
    crate::process::pid()
}

/// Program threads alive now (`Threads:` in `/proc/self/status`).
#[cfg(target_os = "none")]
pub fn threads() -> u64 {
    crate::process::LIVE_THREADS.load(core::sync::atomic::Ordering::Relaxed) as u64
}

/// The number of CPUs programs are told about (`/proc/cpuinfo`, `/sys`):
/// the scheduler runs on one vCPU today.
pub fn cpus() -> usize {
    1
}

/// `poll(2)` event bits.
pub mod poll_bits {
    /// Data to read.
    pub const POLLIN: u16 = 0x001;
    /// Urgent data.
    pub const POLLPRI: u16 = 0x002;
    /// Room to write.
    pub const POLLOUT: u16 = 0x004;
    /// An error (the read end of a pipe is gone).
    pub const POLLERR: u16 = 0x008;
    /// Hang-up (the write end of a pipe is gone).
    pub const POLLHUP: u16 = 0x010;
    /// Not an open descriptor.
    pub const POLLNVAL: u16 = 0x020;
    /// Same as `POLLIN` for most files.
    pub const POLLRDNORM: u16 = 0x040;
    /// Same as `POLLOUT` for most files.
    pub const POLLWRNORM: u16 = 0x100;
    /// Priority band data to read.
    pub const POLLRDBAND: u16 = 0x080;
    /// Priority band data may be written.
    pub const POLLWRBAND: u16 = 0x200;
    /// The peer closed its side (or reading was shut down).
    pub const POLLRDHUP: u16 = 0x2000;
    /// The keys a socket's wake-ups carry, as Linux's `sock_def_readable`
    /// and `sock_def_write_space` (a registration for `EPOLLRDNORM` alone
    /// is woken by a socket's data, not by an eventfd's).
    pub const SOCKET_WAKE_KEYS: (u16, u16) = (
        POLLIN | POLLPRI | POLLRDNORM | POLLRDBAND,
        POLLOUT | POLLWRNORM | POLLWRBAND,
    );
}

/// The wake-ups of one of an object's wait queues, counted by the key
/// Linux wakes them with: an edge-triggered epoll entry fires again only
/// after a wake-up its events meet (`vfs::epoll`).
#[derive(Default)]
pub struct Wakes {
    /// Wake-ups keyed `EPOLLIN` (data came).
    pub input: core::sync::atomic::AtomicU64,
    /// Wake-ups keyed `EPOLLOUT` (room came).
    pub output: core::sync::atomic::AtomicU64,
    /// Wake-ups without a key (a hang-up: everyone looks again).
    pub all: core::sync::atomic::AtomicU64,
}

impl Wakes {
    /// No wake-ups yet.
    pub const fn new() -> Self {
        use core::sync::atomic::AtomicU64;
        Self {
            input: AtomicU64::new(0),
            output: AtomicU64::new(0),
            all: AtomicU64::new(0),
        }
    }

    /// Counts a wake-up keyed `EPOLLIN`.
    pub fn input(&self) {
        self.input
            .fetch_add(1, core::sync::atomic::Ordering::Relaxed);
    }

    /// Counts a wake-up keyed `EPOLLOUT`.
    pub fn output(&self) {
        self.output
            .fetch_add(1, core::sync::atomic::Ordering::Relaxed);
    }

    /// Counts a wake-up without a key.
    pub fn all(&self) {
        self.all.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
    }

    /// (input, output, all) so far.
    pub fn get(&self) -> [u64; 3] {
        use core::sync::atomic::Ordering::Relaxed;
        [
            self.input.load(Relaxed),
            self.output.load(Relaxed),
            self.all.load(Relaxed),
        ]
    }
}

/// Woken whenever a pipe or eventfd changes state, so that `poll` and
/// `select` over many descriptors can wait in one place.
#[cfg(target_os = "none")]
pub static READINESS: crate::sched::WaitQueue = crate::sched::WaitQueue::new();

/// Tells waiting `poll`/`select` calls that some descriptor's readiness
/// may have changed.
#[cfg(target_os = "none")]
pub fn readiness_changed() {
    READINESS.wake_all();
}
