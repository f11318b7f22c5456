//! The Linux x86-64 system-call interface: a declarative table from number
//! to handler, one handler per file, and the one place where an [`Errno`]
//! becomes `-errno`. Every number has a name ([`names`]) for the log of
//! unimplemented calls and `--strace`.

mod accept;
mod access;
mod affinity;
mod arch_prctl;
mod bind;
mod brk;
mod caps;
mod chmod;
mod clock_gettime;
mod clone;
mod connect;
mod copy;
mod cwd;
mod dirs;
mod dup;
mod epoll;
mod exit;
pub(crate) mod fallocate;
mod fsync;
mod futex;
mod futex_pi;
mod getdents64;
mod getpid;
mod getrandom;
mod identity;
mod inotify;
mod ioctl;
mod link;
mod listen;
pub(crate) mod locks;
mod madvise;
mod membarrier;
mod memfd;
mod mincore;
mod mlock;
mod mmap;
mod mremap;
mod names;
mod numa;
mod open;
pub mod patch;
mod pipe;
mod poll;
pub mod prctl;
mod privileged;
pub mod prlimit64;
mod read;
mod readlink;
mod recv;
mod robust;
pub(crate) mod rusage;
mod sched_policy;
mod send;
mod set_tid_address;
mod setid;
mod shutdown;
mod signal;
mod signalfd;
mod sigwait;
mod sleep;
mod socket;
mod sockname;
mod sockopt;
pub(crate) mod stat;
mod statfs;
mod stubs;
mod symlink;
mod sysinfo;
mod timer;
mod timerfd;
mod truncate;
pub mod uname;
mod unsupported;
mod utimensat;
mod wait;
mod write;
mod xattr;

use crate::arch::user::SyscallFrame;
use crate::errno::Errno;

/// A handler gets the six argument registers and returns a value or an errno.
type Handler = fn(&[u64; 6]) -> Result<u64, Errno>;

/// (number, name, handler), by number.
const TABLE: &[(u64, &str, Handler)] = &[
    (0, "read", read::read),
    (1, "write", write::write),
    (2, "open", open::open),
    (3, "close", open::close),
    (4, "stat", stat::stat),
    (5, "fstat", stat::fstat),
    (6, "lstat", stat::lstat),
    (8, "lseek", read::lseek),
    (9, "mmap", mmap::mmap),
    (10, "mprotect", mmap::mprotect),
    (11, "munmap", mmap::munmap),
    (12, "brk", brk::brk),
    (25, "mremap", mremap::mremap),
    (26, "msync", mmap::msync),
    (27, "mincore", mincore::mincore),
    (28, "madvise", madvise::madvise),
    (149, "mlock", mlock::mlock),
    (150, "munlock", mlock::munlock),
    (151, "mlockall", mlock::mlockall),
    (152, "munlockall", mlock::munlockall),
    (325, "mlock2", mlock::mlock2),
    (13, "rt_sigaction", signal::rt_sigaction),
    (14, "rt_sigprocmask", signal::rt_sigprocmask),
    (15, "rt_sigreturn", signal::rt_sigreturn),
    (36, "getitimer", timer::getitimer),
    (37, "alarm", timer::alarm),
    (38, "setitimer", timer::setitimer),
    (41, "socket", socket::socket),
    (53, "socketpair", socket::socketpair),
    (42, "connect", connect::connect),
    (43, "accept", accept::accept),
    (288, "accept4", accept::accept4),
    (44, "sendto", send::sendto),
    (46, "sendmsg", send::sendmsg),
    (45, "recvfrom", recv::recvfrom),
    (47, "recvmsg", recv::recvmsg),
    (299, "recvmmsg", recv::recvmmsg),
    (307, "sendmmsg", send::sendmmsg),
    (48, "shutdown", shutdown::shutdown),
    (49, "bind", bind::bind),
    (50, "listen", listen::listen),
    (51, "getsockname", sockname::getsockname),
    (52, "getpeername", sockname::getpeername),
    (54, "setsockopt", sockopt::setsockopt),
    (55, "getsockopt", sockopt::getsockopt),
    (56, "clone", clone::clone),
    (137, "statfs", statfs::statfs),
    (138, "fstatfs", statfs::fstatfs),
    (62, "kill", signal::kill),
    (200, "tkill", signal::tkill),
    (222, "timer_create", timer::timer_create),
    (223, "timer_settime", timer::timer_settime),
    (224, "timer_gettime", timer::timer_gettime),
    (225, "timer_getoverrun", timer::timer_getoverrun),
    (226, "timer_delete", timer::timer_delete),
    (234, "tgkill", signal::tgkill),
    (129, "rt_sigqueueinfo", signal::rt_sigqueueinfo),
    (297, "rt_tgsigqueueinfo", signal::rt_tgsigqueueinfo),
    (435, "clone3", clone::clone3),
    (16, "ioctl", ioctl::ioctl),
    (17, "pread64", read::pread64),
    (18, "pwrite64", write::pwrite64),
    (21, "access", access::access),
    (32, "dup", dup::dup),
    (33, "dup2", dup::dup2),
    (20, "writev", write::writev),
    (39, "getpid", getpid::getpid),
    (60, "exit", exit::exit),
    (63, "uname", uname::uname),
    (72, "fcntl", dup::fcntl),
    (79, "getcwd", cwd::getcwd),
    (80, "chdir", cwd::chdir),
    (82, "rename", dirs::rename),
    (83, "mkdir", dirs::mkdir),
    (84, "rmdir", dirs::rmdir),
    (87, "unlink", dirs::unlink),
    (89, "readlink", readlink::readlink),
    (96, "gettimeofday", sysinfo::gettimeofday),
    (99, "sysinfo", sysinfo::sysinfo),
    (131, "sigaltstack", signal::sigaltstack),
    (127, "rt_sigpending", signal::rt_sigpending),
    (34, "pause", sigwait::pause),
    (130, "rt_sigsuspend", sigwait::rt_sigsuspend),
    (128, "rt_sigtimedwait", sigwait::rt_sigtimedwait),
    (158, "arch_prctl", arch_prctl::arch_prctl),
    (186, "gettid", getpid::gettid),
    (202, "futex", futex::futex),
    (203, "sched_setaffinity", affinity::sched_setaffinity),
    (204, "sched_getaffinity", affinity::sched_getaffinity),
    (105, "setuid", setid::setuid),
    (106, "setgid", setid::setgid),
    (113, "setreuid", setid::setreuid),
    (114, "setregid", setid::setregid),
    (116, "setgroups", setid::setgroups),
    (117, "setresuid", setid::setresuid),
    (119, "setresgid", setid::setresgid),
    (122, "setfsuid", setid::setfsuid),
    (123, "setfsgid", setid::setfsgid),
    (135, "personality", setid::personality),
    (153, "vhangup", privileged::not_permitted),
    (155, "pivot_root", privileged::not_permitted),
    (161, "chroot", privileged::chroot),
    (163, "acct", privileged::not_permitted),
    (164, "settimeofday", privileged::settimeofday),
    (165, "mount", privileged::mount),
    (166, "umount2", privileged::umount2),
    (167, "swapon", privileged::not_permitted),
    (168, "swapoff", privileged::not_permitted),
    (169, "reboot", privileged::not_permitted),
    (170, "sethostname", privileged::not_permitted),
    (171, "setdomainname", privileged::not_permitted),
    (227, "clock_settime", privileged::clock_settime),
    (140, "getpriority", sched_policy::getpriority),
    (141, "setpriority", sched_policy::setpriority),
    (142, "sched_setparam", sched_policy::sched_setparam),
    (143, "sched_getparam", sched_policy::sched_getparam),
    (144, "sched_setscheduler", sched_policy::sched_setscheduler),
    (145, "sched_getscheduler", sched_policy::sched_getscheduler),
    (
        146,
        "sched_get_priority_max",
        sched_policy::sched_get_priority_max,
    ),
    (
        147,
        "sched_get_priority_min",
        sched_policy::sched_get_priority_min,
    ),
    (
        148,
        "sched_rr_get_interval",
        sched_policy::sched_rr_get_interval,
    ),
    (251, "ioprio_set", sched_policy::ioprio_set),
    (252, "ioprio_get", sched_policy::ioprio_get),
    (314, "sched_setattr", sched_policy::sched_setattr),
    (315, "sched_getattr", sched_policy::sched_getattr),
    (217, "getdents64", getdents64::getdents64),
    (218, "set_tid_address", set_tid_address::set_tid_address),
    (228, "clock_gettime", clock_gettime::clock_gettime),
    (229, "clock_getres", sysinfo::clock_getres),
    (231, "exit_group", exit::exit_group),
    (257, "openat", open::openat),
    (258, "mkdirat", dirs::mkdirat),
    (262, "newfstatat", stat::newfstatat),
    (263, "unlinkat", dirs::unlinkat),
    (264, "renameat", dirs::renameat),
    (267, "readlinkat", readlink::readlinkat),
    (269, "faccessat", access::faccessat),
    (273, "set_robust_list", robust::set_robust_list),
    (274, "get_robust_list", robust::get_robust_list),
    (292, "dup3", dup::dup3),
    (302, "prlimit64", prlimit64::prlimit64),
    (316, "renameat2", dirs::renameat2),
    (309, "getcpu", sysinfo::getcpu),
    (318, "getrandom", getrandom::getrandom),
    (332, "statx", stat::statx),
    (334, "rseq", stubs::rseq),
    (439, "faccessat2", access::faccessat2),
    (86, "link", link::link),
    (88, "symlink", symlink::symlink),
    (90, "chmod", chmod::chmod),
    (91, "fchmod", chmod::fchmod),
    (132, "utime", utimensat::utime),
    (235, "utimes", utimensat::utimes),
    (265, "linkat", link::linkat),
    (266, "symlinkat", symlink::symlinkat),
    (268, "fchmodat", chmod::fchmodat),
    (280, "utimensat", utimensat::utimensat),
    (452, "fchmodat2", chmod::fchmodat2),
    (92, "chown", chmod::chown),
    (93, "fchown", chmod::fchown),
    (94, "lchown", chmod::lchown),
    (260, "fchownat", chmod::fchownat),
    (253, "inotify_init", inotify::inotify_init),
    (294, "inotify_init1", inotify::inotify_init1),
    (254, "inotify_add_watch", inotify::inotify_add_watch),
    (255, "inotify_rm_watch", inotify::inotify_rm_watch),
    (188, "setxattr", xattr::setxattr),
    (189, "lsetxattr", xattr::lsetxattr),
    (190, "fsetxattr", xattr::fsetxattr),
    (191, "getxattr", xattr::getxattr),
    (192, "lgetxattr", xattr::lgetxattr),
    (193, "fgetxattr", xattr::fgetxattr),
    (194, "listxattr", xattr::listxattr),
    (195, "llistxattr", xattr::llistxattr),
    (196, "flistxattr", xattr::flistxattr),
    (197, "removexattr", xattr::removexattr),
    (198, "lremovexattr", xattr::lremovexattr),
    (199, "fremovexattr", xattr::fremovexattr),
    (7, "poll", poll::poll),
    (213, "epoll_create", epoll::epoll_create),
    (232, "epoll_wait", epoll::epoll_wait),
    (233, "epoll_ctl", epoll::epoll_ctl),
    (281, "epoll_pwait", epoll::epoll_pwait),
    (291, "epoll_create1", epoll::epoll_create1),
    (441, "epoll_pwait2", epoll::epoll_pwait2),
    (19, "readv", read::readv),
    (22, "pipe", pipe::pipe),
    (23, "select", poll::select),
    (24, "sched_yield", sleep::sched_yield),
    (35, "nanosleep", sleep::nanosleep),
    (57, "fork", unsupported::fork),
    (58, "vfork", unsupported::vfork),
    (59, "execve", unsupported::execve),
    (73, "flock", locks::flock),
    (74, "fsync", fsync::fsync),
    (75, "fdatasync", fsync::fdatasync),
    (76, "truncate", truncate::truncate),
    (77, "ftruncate", truncate::ftruncate),
    (81, "fchdir", cwd::fchdir),
    (85, "creat", open::creat),
    (95, "umask", identity::umask),
    (97, "getrlimit", prlimit64::getrlimit),
    (98, "getrusage", rusage::getrusage),
    (100, "times", rusage::times),
    (102, "getuid", identity::getuid),
    (104, "getgid", identity::getgid),
    (107, "geteuid", identity::getuid),
    (108, "getegid", identity::getgid),
    (110, "getppid", identity::getppid),
    (111, "getpgrp", identity::getpgrp),
    (112, "setsid", identity::setsid),
    (115, "getgroups", identity::getgroups),
    (118, "getresuid", identity::getresuid),
    (120, "getresgid", identity::getresgid),
    (121, "getpgid", identity::getpgid),
    (124, "getsid", identity::getpgid),
    (157, "prctl", prctl::prctl),
    (160, "setrlimit", prlimit64::setrlimit),
    (162, "sync", fsync::sync),
    (201, "time", sleep::time),
    (230, "clock_nanosleep", sleep::clock_nanosleep),
    (270, "pselect6", poll::pselect6),
    (271, "ppoll", poll::ppoll),
    (284, "eventfd", pipe::eventfd),
    (290, "eventfd2", pipe::eventfd2),
    (282, "signalfd", signalfd::signalfd),
    (289, "signalfd4", signalfd::signalfd4),
    (319, "memfd_create", memfd::memfd_create),
    (125, "capget", caps::capget),
    (126, "capset", caps::capset),
    (329, "pkey_mprotect", caps::pkey_mprotect),
    (330, "pkey_alloc", caps::pkey_alloc),
    (331, "pkey_free", caps::pkey_free),
    (237, "mbind", numa::mbind),
    (238, "set_mempolicy", numa::set_mempolicy),
    (239, "get_mempolicy", numa::get_mempolicy),
    (293, "pipe2", pipe::pipe2),
    (295, "preadv", read::preadv),
    (296, "pwritev", write::pwritev),
    (327, "preadv2", read::preadv2),
    (328, "pwritev2", write::pwritev2),
    (306, "syncfs", fsync::sync),
    (277, "sync_file_range", fsync::sync_file_range),
    (187, "readahead", fsync::readahead),
    (61, "wait4", wait::wait4),
    (247, "waitid", wait::waitid),
    (322, "execveat", unsupported::execveat),
    (324, "membarrier", membarrier::membarrier),
    (436, "close_range", open::close_range),
    (221, "fadvise64", fsync::fadvise64),
    (40, "sendfile", copy::sendfile),
    (283, "timerfd_create", timerfd::timerfd_create),
    (285, "fallocate", fallocate::fallocate),
    (286, "timerfd_settime", timerfd::timerfd_settime),
    (287, "timerfd_gettime", timerfd::timerfd_gettime),
    (326, "copy_file_range", copy::copy_file_range),
];

static STRACE: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// Whether the namespace path `path` is on a read-only export
/// (`/proc/mounts`).
pub fn path_read_only(path: &str) -> bool {
    dirs::path_read_only(path)
}

/// Turns `--strace` on: every system call is printed with its result.
pub fn set_strace(on: bool) {
    STRACE.store(on, core::sync::atomic::Ordering::Relaxed);
}

static CALLS: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);
static CALL_NS: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

/// System calls made so far and the nanoseconds spent in their handlers.
pub fn stats() -> (u64, u64) {
    use core::sync::atomic::Ordering::Relaxed;
    (CALLS.load(Relaxed), CALL_NS.load(Relaxed))
}

/// Runs the system call in `frame` and stores its result in `frame.rax`.
pub fn dispatch(frame: &mut SyscallFrame) {
    if DEFERRED_ANY.load(core::sync::atomic::Ordering::Relaxed) {
        DEFERRED_ANY.store(false, core::sync::atomic::Ordering::Relaxed);
        let deferred = core::mem::take(&mut *DEFERRED.lock());
        drop(deferred);
    }
    // A scheduling point: completions of the 9P queue are polled while the
    // CPU is busy (see `sched::PolledDevice`).
    crate::drivers::virtio9p::poll();
    let t0 = crate::time::monotonic_ns();
    let nr = frame.rax;
    dispatch_inner(frame);
    let ns = crate::time::monotonic_ns() - t0;
    CALLS.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
    CALL_NS.fetch_add(ns, core::sync::atomic::Ordering::Relaxed);
    if crate::profile::on() {
        crate::profile::call(nr, ns);
    }
}

/// The name of system call `nr` (`"?"` if unknown).
pub fn name(nr: u64) -> &'static str {
    names::name(nr)
}

fn dispatch_inner(frame: &mut SyscallFrame) {
    let nr = frame.rax;
    let args = [
        frame.rdi, frame.rsi, frame.rdx, frame.r10, frame.r8, frame.r9,
    ];
    let result = match TABLE.iter().find(|(n, _, _)| *n == nr) {
        Some((_, name, handler)) => {
            let r = handler(&args);
            if r == Err(Errno::ENOSYS) {
                log::debug!("{name} answered ENOSYS");
            }
            log::trace!(
                "{name}({:#x}, {:#x}, {:#x}) = {r:?}",
                args[0],
                args[1],
                args[2]
            );
            r
        }
        None => {
            log::warn!(
                "unimplemented system call {nr} ({}) answered ENOSYS",
                names::name(nr)
            );
            Err(Errno::ENOSYS)
        }
    };
    // The one place an errno becomes a return value. A wait cut short by
    // a signal whose handler has SA_RESTART runs again once the handler
    // returns: back to the `syscall` instruction with the number in rax.
    frame.rax = match result {
        Ok(v) => v,
        Err(Errno::ERESTARTSYS) if crate::signal::restart_allowed() => {
            frame.rcx -= 2;
            nr
        }
        Err(Errno::ERESTARTNOINTR) => {
            frame.rcx -= 2;
            nr
        }
        Err(e) => errno_value(e),
    };
    if STRACE.load(core::sync::atomic::Ordering::Relaxed) {
        let name = TABLE
            .iter()
            .find(|(n, _, _)| *n == nr)
            .map_or_else(|| names::name(nr), |t| t.1);
        crate::eprintln!(
            "[strace] {name}({:#x}, {:#x}, {:#x}, {:#x}, {:#x}, {:#x}) = {}",
            args[0],
            args[1],
            args[2],
            args[3],
            args[4],
            args[5],
            frame.rax as i64
        );
    }
}

/// The program left the CPU in a state the kernel cannot return to.
pub fn fatal_user_state(what: &str, value: u64) -> ! {
    panic!("the program's state cannot be restored: {what} ({value:#x})");
}

/// A system call made by a direct call (see `arch::x86_64::direct`): served
/// here when it needs neither a privileged instruction nor a wait, `None`
/// to have the stub's own `syscall` trap as the site did.
pub fn direct(nr: u64, args: [u64; 6]) -> Option<u64> {
    if STRACE.load(core::sync::atomic::Ordering::Relaxed) {
        return None;
    }
    let handler: Handler = match nr {
        39 => getpid::getpid,
        186 => getpid::gettid,
        102 | 107 => identity::getuid,
        104 | 108 => identity::getgid,
        110 => identity::getppid,
        SELFTEST_NR if crate::arch::direct::selftest() => return Some(direct_selftest(&args)),
        // Waking never waits; a waker that must program the timer goes on
        // in supervisor mode for that `wrmsr` (see `arch::direct`).
        202 if futex::is_wake(args[1]) => futex::futex,
        202 => return futex::wait_direct(&args).inspect(|_| count_call()),
        // A yield is a scheduling point: completions of the 9P queue are
        // collected (as on every trapped call); with nothing else to run
        // then, it returns at once, otherwise the thread goes to the back
        // of the run queue from here (`sched::leave_direct`).
        24 => {
            crate::drivers::virtio9p::poll();
            if !crate::sched::run_queue_empty() {
                if !crate::sched::can_leave_direct() {
                    return None;
                }
                let irq = crate::arch::cpu::irq_save();
                if !crate::sched::run_queue_empty() {
                    crate::sched::leave_direct(true);
                }
                crate::arch::cpu::irq_restore(irq);
            }
            count_call();
            return Some(0);
        }
        8 => {
            return read::lseek_direct(&args).map(|r| {
                count_call();
                r.unwrap_or_else(errno_value)
            });
        }
        0 => return read::read_direct(&args, false).inspect(|_| count_call()),
        1 => return write::write_direct(&args).inspect(|_| count_call()),
        72 => return dup::fcntl_direct(&args).inspect(|_| count_call()),
        232 => return epoll::wait_direct(&args, false).inspect(|_| count_call()),
        281 => return epoll::wait_direct(&args, true).inspect(|_| count_call()),
        233 => return epoll::ctl_direct(&args).inspect(|_| count_call()),
        17 => return read::read_direct(&args, true).inspect(|_| count_call()),
        // What a new thread calls (glibc's `pthread_create`, HotSpot's
        // thread start): nothing but the thread's own state and small
        // copies from and to the program's memory.
        273 => robust::set_robust_list,
        // A thread's stack and its guard page (glibc's `allocate_stack`,
        // HotSpot's stack guards): new anonymous areas and protection
        // changes never wait. Page-table changes that need a privileged
        // instruction (a flush) upgrade the call on their own.
        9 => {
            let r = mmap::anonymous_direct(&args)?;
            count_call();
            return Some(r.unwrap_or_else(errno_value));
        }
        10 => mmap::mprotect,
        14 => return signal::rt_sigprocmask_direct(&args).inspect(|_| count_call()),
        204 => return with_present(&[], &[(args[2], 8)], || affinity::sched_getaffinity(&args)),
        157 if args[0] == prctl::PR_SET_NAME => {
            return with_present(&[(args[1], 16)], &[], || prctl::prctl(&args));
        }
        _ => return None,
    };
    let r = handler(&args);
    count_call();
    Some(match r {
        Ok(v) => v,
        Err(e) => errno_value(e),
    })
}

/// Serves a direct call by its usual handler when the program memory it
/// reads (`reads`) and writes (`writes`), as (address, length), lies in
/// pages that are present (and writable) now: interrupts stay off from the
/// check through the call, so no other thread unmaps them and the handler
/// cannot fault. `None` otherwise (the call traps).
fn with_present(
    reads: &[(u64, u64)],
    writes: &[(u64, u64)],
    call: impl FnOnce() -> Result<u64, Errno>,
) -> Option<u64> {
    use crate::mm::user;
    let irq = crate::arch::cpu::irq_save();
    let present = reads.iter().all(|&(a, n)| user::present_readable(a, n))
        && writes.iter().all(|&(a, n)| user::present_writable(a, n));
    let r = present.then(call);
    crate::arch::cpu::irq_restore(irq);
    r.map(|r| {
        count_call();
        r.unwrap_or_else(errno_value)
    })
}

/// A direct-only call for tests of the direct path's rare cases
/// (`--syscall-entry direct` with the kernel argument `direct.selftest=1`);
/// otherwise an unknown number like any other.
const SELFTEST_NR: u64 = 0x7a5a;

fn direct_selftest(a: &[u64; 6]) -> u64 {
    use crate::arch::{cpu, direct};
    match a[0] {
        // Write and read back a word of a page the library OS never touched:
        // the host will not map it for user mode, so the call is upgraded.
        1 => {
            let Some(pa) = crate::mm::alloc_frames(1, 1) else {
                return u64::MAX;
            };
            let p = crate::mm::phys_to_virt(pa) as *mut u64;
            // SAFETY: a frame just allocated for this call, in the direct map.
            let v = unsafe {
                core::ptr::write_volatile(p, a[1]);
                core::ptr::read_volatile(p)
            };
            crate::mm::free_frames(pa, 1);
            if v == a[1] {
                direct::upgrades()
            } else {
                u64::MAX
            }
        }
        // Interrupts off for `a[1]` TSC ticks: timer interrupts taken meanwhile
        // (must be none), in the low half; bit 32: they were on before.
        2 => {
            let was = cpu::irq_save();
            let before = crate::sched::timer_irqs();
            let t0 = cpu::rdtsc();
            while cpu::rdtsc() - t0 < a[1] {}
            let during = crate::sched::timer_irqs() - before;
            cpu::irq_restore(was);
            (u64::from(was) << 32) | during
        }
        // Spin with interrupts on: timer interrupts taken meanwhile.
        3 => {
            let before = crate::sched::timer_irqs();
            let t0 = cpu::rdtsc();
            while cpu::rdtsc() - t0 < a[1] {}
            crate::sched::timer_irqs() - before
        }
        _ => u64::MAX,
    }
}

fn count_call() {
    CALLS.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
}

/// Descriptors a direct call held last (a concurrent `close`): closing is
/// 9P I/O, which a direct call may not wait for, so the next trapped call
/// drops them.
static DEFERRED: crate::sync::IrqLock<alloc::vec::Vec<crate::fd::Object>> =
    crate::sync::IrqLock::new(alloc::vec::Vec::new());
/// Whether [`DEFERRED`] may hold any (so that trapped calls need not lock it).
static DEFERRED_ANY: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// Lets go of `o` in a direct call: now, unless it is the last reference.
fn release(o: crate::fd::Object) {
    let irq = crate::arch::cpu::irq_save();
    // Interrupts off: no other thread runs, so the count cannot drop.
    let last = o.downgrade().strong_count() == 1;
    if last {
        DEFERRED.lock().push(o);
        DEFERRED_ANY.store(true, core::sync::atomic::Ordering::Relaxed);
    } else {
        drop(o);
    }
    crate::arch::cpu::irq_restore(irq);
}

/// `-errno` as a return value (a wait cut short without restart is EINTR).
fn errno_value(e: Errno) -> u64 {
    let e = if e == Errno::ERESTARTSYS {
        Errno::EINTR
    } else {
        e
    };
    (-i64::from(e.0)) as u64
}
