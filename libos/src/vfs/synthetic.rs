//! Generated files and directories: their text is made when they are
//! opened and kept by the open file, so reads at any offset see one
//! consistent snapshot.

use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::AtomicU32;

use super::proc::{self, CpuId, ProcessInfo};
use super::route::{ProcFile, SynDir, dir_entries};
use super::{cpus, pid, threads};
use crate::errno::Errno;
use crate::sync::IrqLock;

/// What a generated file holds.
pub enum Content {
    /// A file's text.
    Text(Vec<u8>),
    /// A directory's entries: (name, `DT_*`).
    Dir(Vec<(String, u8)>),
}

/// An open generated file or directory.
pub struct Synthetic {
    /// The path it was opened by (the base for `*at` calls on directories).
    pub path: String,
    /// Its contents.
    pub content: Content,
    /// The read position (an entry index for directories).
    pub offset: IrqLock<u64>,
    /// `O_*` status flags.
    pub flags: AtomicU32,
}

const S_IFREG: u32 = 0o100000;
const S_IFDIR: u32 = 0o040000;

impl Synthetic {
    /// Opens a generated file.
    pub fn file(path: String, file: ProcFile, flags: u32) -> Self {
        Self {
            path,
            content: Content::Text(generate(file).into_bytes()),
            offset: IrqLock::new(0),
            flags: AtomicU32::new(flags),
        }
    }

    /// Opens a generated directory.
    pub fn dir(path: String, dir: SynDir, flags: u32) -> Self {
        Self {
            path,
            content: Content::Dir(if dir == SynDir::Fds {
                // The listing's own descriptor, about to be the lowest free
                // one, is listed too, as on Linux.
                let mut fds = crate::fd::open_fds();
                let next = (0..).find(|i| !fds.contains(i)).unwrap_or(fds.len());
                fds.push(next);
                fds.sort_unstable();
                super::route::fd_entries(&fds)
            } else if dir == SynDir::Tasks {
                super::route::task_entries(&crate::process::tids())
            } else {
                dir_entries(dir, pid(), cpus())
            }),
            offset: IrqLock::new(0),
            flags: AtomicU32::new(flags),
        }
    }

    /// Copies text at `at` (or the file position, which then moves) into
    /// `out`; returns how many bytes.
    pub fn read(&self, at: Option<u64>, out: &mut [u8]) -> Result<usize, Errno> {
        let Content::Text(text) = &self.content else {
            return Err(Errno::EISDIR);
        };
        let mut pos = self.offset.lock();
        let start = at.unwrap_or(*pos).min(text.len() as u64) as usize;
        let n = out.len().min(text.len() - start);
        out[..n].copy_from_slice(&text[start..start + n]);
        if at.is_none() {
            *pos = (start + n) as u64;
        }
        Ok(n)
    }

    /// The size `lseek(SEEK_END)` sees: Linux's `/proc` files report 0
    /// in `stat`, but their text has a length.
    pub fn len(&self) -> u64 {
        match &self.content {
            Content::Text(t) => t.len() as u64,
            Content::Dir(d) => d.len() as u64,
        }
    }

    /// Whether the file is empty (or the directory has no entries).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Its attributes.
    pub fn stat(&self) -> astraea_9p::Stat {
        match self.content {
            Content::Text(_) => base_stat(S_IFREG | 0o444, 0),
            Content::Dir(_) => base_stat(S_IFDIR | 0o555, 2),
        }
    }
}

/// The attributes of a generated file (0) or directory (2 links).
pub fn base_stat(mode: u32, nlink_extra: u64) -> astraea_9p::Stat {
    let (uid, gid) = super::identity::ids();
    let now = crate::time::realtime_ns();
    let (sec, nsec) = (now / 1_000_000_000, now % 1_000_000_000);
    astraea_9p::Stat {
        valid: crate::p9::GETATTR_BASIC,
        mode,
        uid,
        gid,
        nlink: 1 + nlink_extra,
        blksize: 1024,
        atime_sec: sec,
        atime_nsec: nsec,
        mtime_sec: sec,
        mtime_nsec: nsec,
        ctime_sec: sec,
        ctime_nsec: nsec,
        ..astraea_9p::Stat::default()
    }
}

/// The attributes of a generated path, without opening it.
pub fn stat_file() -> astraea_9p::Stat {
    base_stat(S_IFREG | 0o444, 0)
}

/// The attributes of a generated symbolic link (`/proc/self/exe`).
pub fn stat_link() -> astraea_9p::Stat {
    base_stat(0o120777, 0)
}

/// The attributes of a generated directory.
pub fn stat_dir() -> astraea_9p::Stat {
    base_stat(S_IFDIR | 0o555, 2)
}

/// The text of a generated file, now.
pub fn generate(file: ProcFile) -> String {
    let up = crate::time::monotonic_ns();
    match file {
        ProcFile::Maps => crate::mm::vma::proc_maps(),
        ProcFile::SelfStat => proc::self_stat(&process_info()),
        ProcFile::Status => proc::status(&process_info()),
        ProcFile::TaskStat(tid) => proc::self_stat(&thread_info(tid)),
        ProcFile::TaskStatus(tid) => proc::status(&thread_info(tid)),
        ProcFile::TaskComm(tid) => {
            let mut n = crate::syscall::prctl::thread_name(tid);
            n.push('\n');
            n
        }
        ProcFile::Limits => proc::limits(crate::syscall::prlimit64::rlimit),
        ProcFile::Comm => {
            let mut n = super::identity::name();
            n.push('\n');
            n
        }
        ProcFile::Meminfo => {
            let m = crate::mm::stats();
            let total = m.total_pages as u64 * 4096;
            let free = m.free_pages as u64 * 4096;
            proc::meminfo(total, free, free)
        }
        ProcFile::Cpuinfo => proc::cpuinfo(&cpuid(), cpus()),
        ProcFile::Stat => proc::stat(
            cpus(),
            up,
            0,
            crate::sched::stats().switches,
            (crate::time::realtime_ns() - up) / 1_000_000_000,
        ),
        ProcFile::Uptime => proc::uptime(up, 0),
        ProcFile::Loadavg => proc::loadavg(threads(), pid()),
        ProcFile::CpuList => proc::cpu_list(cpus()),
        ProcFile::IfInet6 => crate::net::if_inet6(),
        // NUL-separated, as the program's stack holds them; not UTF-8
        // necessarily, but the program's arguments came as strings.
        ProcFile::Cmdline => crate::process::CMDLINE.lock().clone(),
        ProcFile::Mounts => {
            // Read-only is asked of the mount (a change of nothing is EROFS
            // there), so it holds whatever the cache policy.
            let points: Vec<(String, bool)> = crate::cache::mount_points()
                .map(|m| (String::from(m), crate::syscall::path_read_only(m)))
                .collect();
            proc::mounts(&points)
        }
        ProcFile::Environ => crate::process::ENVIRON.lock().clone(),
    }
}

/// What `/proc/self/task/<tid>/stat` and `…/status` report: the process's
/// figures under the thread's id and name.
fn thread_info(tid: u64) -> ProcessInfo {
    let t = crate::process::thread(tid);
    ProcessInfo {
        tid,
        name: crate::syscall::prctl::thread_name(tid),
        state: t.as_ref().map_or('R', |t| state_of(t)),
        utime_ns: t.as_ref().map_or(0, |t| crate::sched::cpu_ns(t)),
        ..process_info()
    }
}

/// A thread's state letter: `R` on the CPU or ready for it, `S` waiting.
fn state_of(t: &crate::sched::Thread) -> char {
    match t.state() {
        crate::sched::State::Blocked => 'S',
        _ => 'R',
    }
}

/// What `/proc/self/stat` and `/proc/self/status` report.
pub fn process_info() -> ProcessInfo {
    let m = crate::mm::stats();
    let used = (m.total_pages - m.free_pages) as u64 * 4096;
    let (_, stack_end) = proc::maps_summary(&crate::mm::vma::proc_maps());
    let (uid, gid) = super::identity::ids();
    let s = crate::sched::stats();
    ProcessInfo {
        pid: pid(),
        tid: pid(),
        ppid: 0,
        name: super::identity::name(),
        uid,
        gid,
        umask: super::identity::umask(),
        threads: threads(),
        // Linux's `total_vm`: what RLIMIT_AS limits.
        vsize: crate::mm::vma::total_size(),
        rss: used,
        locked: crate::mm::vma::locked_bytes(),
        data: crate::mm::vma::data_bytes(),
        // The process's user time (was the time since boot: `top` and
        // profilers read CPU time here).
        utime_ns: crate::syscall::rusage::cpu_ns().0,
        // Any address inside the stack's area lets a reader (HotSpot)
        // find that area in /proc/self/maps.
        start_stack: stack_end.map_or(0, |e| e - 8),
        cpus: cpus(),
        switches: (s.switches - s.preemptions, s.preemptions),
        // The main thread's, as Linux's `/proc/<pid>/stat`.
        state: crate::process::thread(pid()).map_or('R', |t| state_of(&t)),
    }
}

/// The CPU's identification, from CPUID.
pub fn cpuid() -> CpuId {
    use core::arch::x86_64::{__cpuid, __cpuid_count};
    let l0 = __cpuid(0);
    let mut vendor = Vec::with_capacity(12);
    for r in [l0.ebx, l0.edx, l0.ecx] {
        vendor.extend_from_slice(&r.to_le_bytes());
    }
    let l1 = __cpuid(1);
    let l7 = if l0.eax >= 7 {
        let r = __cpuid_count(7, 0);
        (r.ebx, r.ecx, r.edx)
    } else {
        (0, 0, 0)
    };
    let max_ext = __cpuid(0x8000_0000).eax;
    let ext1 = if max_ext >= 0x8000_0001 {
        let r = __cpuid(0x8000_0001);
        (r.ecx, r.edx)
    } else {
        (0, 0)
    };
    let mut brand = Vec::with_capacity(48);
    if max_ext >= 0x8000_0004 {
        for leaf in 0x8000_0002..=0x8000_0004u32 {
            let r = __cpuid(leaf);
            for v in [r.eax, r.ebx, r.ecx, r.edx] {
                brand.extend_from_slice(&v.to_le_bytes());
            }
        }
    }
    let brand: Vec<u8> = brand.into_iter().take_while(|b| *b != 0).collect();
    CpuId {
        max_leaf: l0.eax,
        vendor: String::from_utf8_lossy(&vendor).into_owned(),
        leaf1: (l1.eax, l1.ecx, l1.edx),
        leaf7: l7,
        ext1,
        brand: String::from(String::from_utf8_lossy(&brand).trim()),
        addr_sizes: (max_ext >= 0x8000_0008).then(|| __cpuid(0x8000_0008).eax),
        tsc_khz: crate::time::tsc_khz(),
    }
}
