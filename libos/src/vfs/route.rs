//! Which paths the library OS answers itself: `/proc`, `/sys` and a few
//! `/dev` nodes. Everything else belongs to the 9P namespace.
//!
//! The host's own `/proc` and `/sys` (visible when the host's `/` is
//! exported) describe the host, not the partition, so they are never
//! forwarded: what is not generated here does not exist.

use alloc::string::String;
use alloc::vec::Vec;

/// A generated file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcFile {
    /// `/proc/self/maps`.
    Maps,
    /// `/proc/self/stat`.
    SelfStat,
    /// `/proc/self/status`.
    Status,
    /// `/proc/self/comm`.
    Comm,
    /// `/proc/self/limits`.
    Limits,
    /// `/proc/meminfo`.
    Meminfo,
    /// `/proc/cpuinfo`.
    Cpuinfo,
    /// `/proc/stat`.
    Stat,
    /// `/proc/uptime`.
    Uptime,
    /// `/proc/loadavg`.
    Loadavg,
    /// `/sys/devices/system/cpu/{online,possible,present}`.
    CpuList,
    /// `/proc/net/if_inet6` (and `/proc/self/net/if_inet6`): the host's
    /// IPv6 addresses.
    IfInet6,
    /// `/proc/self/cmdline`.
    Cmdline,
    /// `/proc/mounts` (and `/proc/self/mounts`).
    Mounts,
    /// `/proc/self/environ`.
    Environ,
    /// `/proc/self/task/<tid>/stat`: the thread's line.
    TaskStat(u64),
    /// `/proc/self/task/<tid>/status`.
    TaskStatus(u64),
    /// `/proc/self/task/<tid>/comm`: the thread's name.
    TaskComm(u64),
}

impl ProcFile {
    /// The thread a `/proc/self/task/<tid>/…` file describes.
    pub fn thread(self) -> Option<u64> {
        match self {
            ProcFile::TaskStat(t) | ProcFile::TaskStatus(t) | ProcFile::TaskComm(t) => Some(t),
            _ => None,
        }
    }
}

/// A device node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DevKind {
    /// `/dev/null`: reads end at once, writes vanish.
    Null,
    /// `/dev/zero`: reads give zeros.
    Zero,
    /// `/dev/full`: reads give zeros, writes fail with `ENOSPC`.
    Full,
    /// `/dev/random` and `/dev/urandom`: random bytes.
    Random {
        /// The minor number (8 for `random`, 9 for `urandom`).
        minor: u8,
    },
    /// `/dev/astraea-snapshot`: a read snapshots the partition
    /// (`crate::snapshot`) and says `taken` or, in a partition restored
    /// from that snapshot, `restored`.
    Snapshot,
}

impl DevKind {
    /// Its path under `/dev`.
    pub fn path(self) -> &'static str {
        match self {
            DevKind::Null => "/dev/null",
            DevKind::Zero => "/dev/zero",
            DevKind::Full => "/dev/full",
            DevKind::Random { minor: 8 } => "/dev/random",
            DevKind::Random { .. } => "/dev/urandom",
            DevKind::Snapshot => "/dev/astraea-snapshot",
        }
    }

    /// The (major, minor) device number Linux gives the node.
    pub fn rdev(self) -> (u32, u32) {
        match self {
            DevKind::Null => (1, 3),
            DevKind::Zero => (1, 5),
            DevKind::Full => (1, 7),
            DevKind::Random { minor } => (1, u32::from(minor)),
            // A misc device with a number Linux leaves for local use.
            DevKind::Snapshot => (10, 240),
        }
    }
}

/// A generated directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SynDir {
    /// `/proc`.
    Proc,
    /// `/proc/self` (and `/proc/<pid>`).
    ProcSelf,
    /// `/sys/devices/system/cpu`.
    Cpus,
    /// `/sys/devices/system/cpu/cpuN` (empty).
    Cpu,
    /// `/proc/net` (and `/proc/self/net`).
    ProcNet,
    /// `/proc/self/fd`: a link per open descriptor.
    Fds,
    /// `/proc/self/task`: a directory per thread of the program.
    Tasks,
    /// `/proc/self/task/<tid>`.
    Task(u64),
}

impl Route {
    /// The thread a `/proc/self/task/<tid>` path names, which may have
    /// exited (the caller looks).
    pub fn thread(&self) -> Option<u64> {
        match self {
            Route::Dir(SynDir::Task(t)) => Some(*t),
            Route::File(f) => f.thread(),
            _ => None,
        }
    }
}

/// Where a path is served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// A file generated here.
    File(ProcFile),
    /// A device node.
    Dev(DevKind),
    /// A directory generated here.
    Dir(SynDir),
    /// `/proc/self/exe`: the program's own file (of the namespace).
    Exe,
    /// `/proc/self/fd/N`: a link to what descriptor N has open (which may
    /// not be open: the caller looks).
    Fd(u32),
    /// Under `/proc` or `/sys`, but not provided: `ENOENT`.
    Missing,
    /// A device the partition does not have (`/dev/tty`): `ENXIO`.
    NoDevice,
    /// The 9P namespace.
    Namespace,
}

/// `DT_DIR` and `DT_REG`, `DT_LNK` for directory listings.
pub const DT_DIR: u8 = 4;
/// A regular file in a listing.
pub const DT_REG: u8 = 8;
/// A symbolic link in a listing.
pub const DT_LNK: u8 = 10;

/// `/proc/thread-self[/…]` as the `/proc/self/task/<tid>[/…]` it links to
/// for thread `tid`; `None` for other paths.
pub fn thread_self(path: &str, tid: u64) -> Option<String> {
    let rest = path.strip_prefix("/proc/thread-self")?;
    (rest.is_empty() || rest.starts_with('/'))
        .then(|| alloc::format!("/proc/self/task/{tid}{rest}"))
}

/// Routes an absolute, normalised path (as `fd::absolute` makes them).
/// `pid` is the process's id (`/proc/<pid>` is `/proc/self`); `cpus` the
/// number of CPUs (for `/sys/devices/system/cpu/cpuN`). `/proc/thread-self`
/// is for the caller to resolve first ([`thread_self`]).
pub fn route(path: &str, pid: u64, cpus: usize) -> Route {
    let mut parts = path.split('/').filter(|c| !c.is_empty());
    match parts.next() {
        Some("proc") => proc_route(parts.collect(), pid),
        Some("sys") => sys_route(parts.collect(), cpus),
        Some("dev") => {
            let rest: Vec<&str> = parts.collect();
            match rest.as_slice() {
                ["null"] => Route::Dev(DevKind::Null),
                ["zero"] => Route::Dev(DevKind::Zero),
                ["full"] => Route::Dev(DevKind::Full),
                ["random"] => Route::Dev(DevKind::Random { minor: 8 }),
                ["urandom"] => Route::Dev(DevKind::Random { minor: 9 }),
                ["astraea-snapshot"] => Route::Dev(DevKind::Snapshot),
                ["tty"] => Route::NoDevice,
                _ => Route::Namespace,
            }
        }
        _ => Route::Namespace,
    }
}

fn is_self(name: &str, pid: u64) -> bool {
    name == "self" || name.parse::<u64>() == Ok(pid)
}

fn proc_route(rest: Vec<&str>, pid: u64) -> Route {
    match rest.as_slice() {
        [] => Route::Dir(SynDir::Proc),
        ["meminfo"] => Route::File(ProcFile::Meminfo),
        ["cpuinfo"] => Route::File(ProcFile::Cpuinfo),
        ["stat"] => Route::File(ProcFile::Stat),
        ["uptime"] => Route::File(ProcFile::Uptime),
        ["loadavg"] => Route::File(ProcFile::Loadavg),
        ["net"] => Route::Dir(SynDir::ProcNet),
        ["net", "if_inet6"] => Route::File(ProcFile::IfInet6),
        ["mounts"] => Route::File(ProcFile::Mounts),
        [me, tail @ ..] if is_self(me, pid) => match tail {
            [] => Route::Dir(SynDir::ProcSelf),
            ["net"] => Route::Dir(SynDir::ProcNet),
            ["net", "if_inet6"] => Route::File(ProcFile::IfInet6),
            ["maps"] => Route::File(ProcFile::Maps),
            ["stat"] => Route::File(ProcFile::SelfStat),
            ["status"] => Route::File(ProcFile::Status),
            ["comm"] => Route::File(ProcFile::Comm),
            ["limits"] => Route::File(ProcFile::Limits),
            ["cmdline"] => Route::File(ProcFile::Cmdline),
            ["mounts"] => Route::File(ProcFile::Mounts),
            ["environ"] => Route::File(ProcFile::Environ),
            ["exe"] => Route::Exe,
            ["fd"] => Route::Dir(SynDir::Fds),
            ["fd", n] => fd_number(n).map_or(Route::Missing, Route::Fd),
            ["task"] => Route::Dir(SynDir::Tasks),
            ["task", t, rest @ ..] => match (fd_number(t), rest) {
                (Some(t), []) => Route::Dir(SynDir::Task(u64::from(t))),
                (Some(t), ["stat"]) => Route::File(ProcFile::TaskStat(u64::from(t))),
                (Some(t), ["status"]) => Route::File(ProcFile::TaskStatus(u64::from(t))),
                (Some(t), ["comm"]) => Route::File(ProcFile::TaskComm(u64::from(t))),
                _ => Route::Missing,
            },
            _ => Route::Missing,
        },
        _ => Route::Missing,
    }
}

fn sys_route(rest: Vec<&str>, cpus: usize) -> Route {
    match rest.as_slice() {
        ["devices", "system", "cpu"] => Route::Dir(SynDir::Cpus),
        [
            "devices",
            "system",
            "cpu",
            "online" | "possible" | "present",
        ] => Route::File(ProcFile::CpuList),
        ["devices", "system", "cpu", cpu] if cpu_index(cpu).is_some_and(|i| i < cpus) => {
            Route::Dir(SynDir::Cpu)
        }
        _ => Route::Missing,
    }
}

/// A descriptor number as `/proc/self/fd` spells it (one spelling each).
fn fd_number(name: &str) -> Option<u32> {
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if name.len() > 1 && name.starts_with('0') {
        return None;
    }
    name.parse().ok()
}

fn cpu_index(name: &str) -> Option<usize> {
    let n = name.strip_prefix("cpu")?;
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    n.parse().ok()
}

/// The entries of a generated directory: (name, `DT_*`).
pub fn dir_entries(dir: SynDir, pid: u64, cpus: usize) -> Vec<(String, u8)> {
    let named = |names: &[(&str, u8)]| -> Vec<(String, u8)> {
        names.iter().map(|(n, t)| (String::from(*n), *t)).collect()
    };
    let mut out = named(&[(".", DT_DIR), ("..", DT_DIR)]);
    match dir {
        SynDir::Proc => {
            out.push((alloc::format!("{pid}"), DT_DIR));
            out.extend(named(&[
                ("self", DT_LNK),
                ("thread-self", DT_LNK),
                ("cpuinfo", DT_REG),
                ("meminfo", DT_REG),
                ("stat", DT_REG),
                ("uptime", DT_REG),
                ("loadavg", DT_REG),
                ("net", DT_DIR),
                ("mounts", DT_REG),
            ]));
        }
        SynDir::ProcNet => out.extend(named(&[("if_inet6", DT_REG)])),
        // The caller lists the descriptors (`fd_entries`) and the threads
        // (`task_entries`).
        SynDir::Fds | SynDir::Tasks => {}
        SynDir::Task(_) => out.extend(named(&[
            ("stat", DT_REG),
            ("status", DT_REG),
            ("comm", DT_REG),
        ])),
        SynDir::ProcSelf => out.extend(named(&[
            ("net", DT_DIR),
            ("fd", DT_DIR),
            ("task", DT_DIR),
            ("cmdline", DT_REG),
            ("environ", DT_REG),
            ("mounts", DT_REG),
            ("exe", DT_LNK),
            ("maps", DT_REG),
            ("stat", DT_REG),
            ("status", DT_REG),
            ("comm", DT_REG),
            ("limits", DT_REG),
        ])),
        SynDir::Cpus => {
            out.extend((0..cpus).map(|i| (alloc::format!("cpu{i}"), DT_DIR)));
            out.extend(named(&[
                ("online", DT_REG),
                ("possible", DT_REG),
                ("present", DT_REG),
            ]));
        }
        SynDir::Cpu => {}
    }
    out
}

/// `/proc/self/fd`'s entries for the descriptors `fds`.
pub fn fd_entries(fds: &[usize]) -> Vec<(String, u8)> {
    numbered_entries(fds.iter().map(|&fd| fd as u64), DT_LNK)
}

/// `/proc/self/task`'s entries for the threads `tids`.
pub fn task_entries(tids: &[u64]) -> Vec<(String, u8)> {
    numbered_entries(tids.iter().copied(), DT_DIR)
}

fn numbered_entries(ids: impl Iterator<Item = u64>, ty: u8) -> Vec<(String, u8)> {
    let mut out: Vec<(String, u8)> = [(".", DT_DIR), ("..", DT_DIR)]
        .iter()
        .map(|(n, t)| (String::from(*n), *t))
        .collect();
    out.extend(ids.map(|id| (alloc::format!("{id}"), ty)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_paths_route_to_generated_files() {
        assert_eq!(route("/proc/self/maps", 1, 1), Route::File(ProcFile::Maps));
        assert_eq!(route("/proc/1/status", 1, 1), Route::File(ProcFile::Status));
        assert_eq!(route("/proc/meminfo", 1, 1), Route::File(ProcFile::Meminfo));
        assert_eq!(route("/proc/self/exe", 1, 1), Route::Exe);
        assert_eq!(route("/proc/self", 1, 1), Route::Dir(SynDir::ProcSelf));
        assert_eq!(route("/proc", 1, 1), Route::Dir(SynDir::Proc));
        assert_eq!(
            route("/proc/net/if_inet6", 1, 1),
            Route::File(ProcFile::IfInet6)
        );
        assert_eq!(
            route("/proc/self/net/if_inet6", 1, 1),
            Route::File(ProcFile::IfInet6)
        );
        assert_eq!(route("/proc/net/tcp", 1, 1), Route::Missing);
        assert_eq!(route("/proc/self/fd", 1, 1), Route::Dir(SynDir::Fds));
        assert_eq!(route("/proc/self/fd/17", 1, 1), Route::Fd(17));
        assert_eq!(route("/proc/self/fd/017", 1, 1), Route::Missing);
        assert_eq!(route("/proc/self/fd/x", 1, 1), Route::Missing);
        assert_eq!(route("/proc/7/task", 7, 1), Route::Dir(SynDir::Tasks));
        assert_eq!(
            route("/proc/self/task/9", 7, 1),
            Route::Dir(SynDir::Task(9))
        );
        assert_eq!(
            route("/proc/self/task/9/comm", 7, 1),
            Route::File(ProcFile::TaskComm(9))
        );
        assert_eq!(route("/proc/self/task/9/comm", 7, 1).thread(), Some(9));
        assert_eq!(route("/proc/self/task/09", 7, 1), Route::Missing);
        assert_eq!(route("/proc/self/task/9/maps", 7, 1), Route::Missing);
        assert_eq!(
            thread_self("/proc/thread-self/comm", 9).as_deref(),
            Some("/proc/self/task/9/comm")
        );
        assert_eq!(
            thread_self("/proc/thread-self", 9).as_deref(),
            Some("/proc/self/task/9")
        );
        assert_eq!(thread_self("/proc/thread-selfish", 9), None);
        assert_eq!(
            route("/proc/self/cmdline", 1, 1),
            Route::File(ProcFile::Cmdline)
        );
    }

    #[test]
    fn other_proc_and_sys_paths_do_not_exist() {
        assert_eq!(route("/proc/2/maps", 1, 1), Route::Missing);
        assert_eq!(route("/proc/self/cgroup", 1, 1), Route::Missing);
        assert_eq!(route("/proc/sys/kernel/osrelease", 1, 1), Route::Missing);
        assert_eq!(route("/sys/fs/cgroup", 1, 1), Route::Missing);
        assert_eq!(route("/sys/devices/system/cpu/cpu1", 1, 1), Route::Missing);
        assert_eq!(route("/sys/devices/system/cpu/cpux", 1, 1), Route::Missing);
    }

    #[test]
    fn sys_cpu_files_and_devices() {
        assert_eq!(
            route("/sys/devices/system/cpu/online", 1, 1),
            Route::File(ProcFile::CpuList)
        );
        assert_eq!(
            route("/sys/devices/system/cpu/cpu0", 1, 1),
            Route::Dir(SynDir::Cpu)
        );
        assert_eq!(route("/dev/null", 1, 1), Route::Dev(DevKind::Null));
        assert_eq!(
            route("/dev/urandom", 1, 1),
            Route::Dev(DevKind::Random { minor: 9 })
        );
        assert_eq!(route("/dev/tty", 1, 1), Route::NoDevice);
        assert_eq!(route("/dev/cons", 1, 1), Route::Namespace);
        assert_eq!(route("/home/x/proc/self", 1, 1), Route::Namespace);
        assert_eq!(route("/", 1, 1), Route::Namespace);
        assert_eq!(route("/process", 1, 1), Route::Namespace);
    }

    #[test]
    fn listings_name_every_cpu() {
        let e = dir_entries(SynDir::Cpus, 1, 2);
        let names: Vec<&str> = e.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [".", "..", "cpu0", "cpu1", "online", "possible", "present"]
        );
    }
}
