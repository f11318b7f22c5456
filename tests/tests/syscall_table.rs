//! `docs/syscalls.md`, the system-call coverage table, is generated here
//! from the dispatch table (`libos/src/syscall/mod.rs`), each handler's doc
//! comment, the names of every number (`libos/src/syscall/names.rs`), the
//! recorded traces of the Java programs (`jvm-port/syscalls/*.txt`) and the
//! annotations below (what is partial or refused, and why). The test fails
//! when the file is out of date; `ASTRAEA_REGEN=1` rewrites it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::path::{Path, PathBuf};

use astraea_tests::workspace;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Status {
    Implemented,
    Partial,
    Refused,
    Missing,
}

impl Status {
    fn word(self) -> &'static str {
        match self {
            Status::Implemented => "implemented",
            Status::Partial => "partial",
            Status::Refused => "refused",
            Status::Missing => "missing",
        }
    }
}

use Status::*;

/// What is partial, refused or missing, and what the caller sees. Rows of
/// the table without an entry here are implemented.
const NOTES: &[(&str, Status, &str)] = &[
    (
        "clone",
        Partial,
        "threads only (`CLONE_VM`); a new process answers ENOSYS",
    ),
    (
        "clone3",
        Partial,
        "threads only (`CLONE_VM`), as `clone`; `set_tid` is EPERM",
    ),
    (
        "get_mempolicy",
        Refused,
        "ENOSYS, as a kernel without NUMA: libnuma says none, the JVM turns `UseNUMA` off",
    ),
    ("set_mempolicy", Refused, "ENOSYS, as a kernel without NUMA"),
    ("mbind", Refused, "ENOSYS, as a kernel without NUMA"),
    (
        "memfd_create",
        Partial,
        "memory-only files (ZGC's heap) with seals; `MFD_HUGETLB` is EINVAL",
    ),
    (
        "fork",
        Refused,
        "ENOSYS and one line on the console: one process per partition",
    ),
    (
        "vfork",
        Refused,
        "ENOSYS and one line on the console: one process per partition",
    ),
    (
        "execve",
        Refused,
        "ENOSYS and one line on the console: one process per partition",
    ),
    (
        "execveat",
        Refused,
        "ENOSYS and one line on the console: one process per partition",
    ),
    (
        "inotify_init",
        Partial,
        "events of what the program does to files in the partition; a change made on the host \
         is not seen (9P has no notification message)",
    ),
    ("inotify_init1", Partial, "as `inotify_init`"),
    ("inotify_add_watch", Partial, "as `inotify_init`"),
    (
        "rseq",
        Refused,
        "ENOSYS; glibc and HotSpot fall back (`sched_getcpu` uses the vDSO)",
    ),
    (
        "futex",
        Partial,
        "WAIT, WAKE, the BITSET variants, REQUEUE, CMP_REQUEUE, WAKE_OP, LOCK_PI, LOCK_PI2, \
         TRYLOCK_PI, UNLOCK_PI; WAIT_REQUEUE_PI and CMP_REQUEUE_PI answer ENOSYS",
    ),
    (
        "getrusage",
        Partial,
        "process CPU time is the partition's busy time, system time the time in page faults \
         (time in system calls counts as user time); `RUSAGE_THREAD` is the thread's own time, \
         all as user time",
    ),
    (
        "times",
        Partial,
        "CPU time is the partition's busy time (as `getrusage`); no children",
    ),
    (
        "mincore",
        Partial,
        "a page of a file that is not cached (read-write mounts) counts as resident only once \
         this mapping has it",
    ),
    (
        "madvise",
        Partial,
        "`MADV_GUARD_INSTALL`/`REMOVE` (Linux 6.13) answer EINVAL; paging, huge-page, fork and \
         dump advice is accepted without effect (no swap, 4 KiB pages, one process); each area \
         is checked in Linux's order, locked ones included (`tests/progs/mlockdiff.c`)",
    ),
    (
        "fallocate",
        Partial,
        "holes and zeroed ranges are written as zeros (the host file keeps its blocks); \
         `KEEP_SIZE` reserves nothing; `ZERO_RANGE` works whatever the host's file system; \
         `COLLAPSE`/`INSERT`/`UNSHARE_RANGE` and `WRITE_ZEROES` answer EOPNOTSUPP",
    ),
    (
        "sendfile",
        Partial,
        "without an offset, a generated (`/proc`, `/sys`) source file's position is not \
         advanced",
    ),
    (
        "timerfd_create",
        Partial,
        "alarm clocks answer EPERM (no `CAP_WAKE_ALARM`); `TFD_TIMER_CANCEL_ON_SET` never cancels \
         (the clock is never set)",
    ),
    ("timerfd_settime", Partial, "as `timerfd_create`"),
    (
        "statx",
        Partial,
        "`stx_attributes` and `stx_attributes_mask` are zero and `STATX_MNT_ID` is not \
         given; the device numbers are the partition's (as `stat`'s `st_dev`)",
    ),
    (
        "sched_setscheduler",
        Partial,
        "policies and priorities are checked and kept as Linux's (`tests/progs/scheddiff.c`); \
         the partition's scheduler does not act on them",
    ),
    ("sched_setparam", Partial, "as `sched_setscheduler`"),
    ("sched_setattr", Partial, "as `sched_setscheduler`"),
    (
        "setpriority",
        Partial,
        "as `sched_setscheduler`: the nice value is kept, not acted on",
    ),
    (
        "ioprio_set",
        Partial,
        "kept and reported; I/O goes through the gateway unordered",
    ),
    (
        "prctl",
        Partial,
        "`PR_SET/GET_NAME` per thread (not under `/proc/self/task`), `DUMPABLE`, `PDEATHSIG`, \
         `KEEPCAPS`, `TIMERSLACK`, `CHILD_SUBREAPER`, `NO_NEW_PRIVS`, `THP_DISABLE` (with \
         Linux 6.18's flag), `CAPBSET_READ`, `GET_SECCOMP` (`tests/progs/prctldiff.c`); other \
         options answer EINVAL, `PR_SET_SECCOMP` and `PR_SET_VMA` included (as a kernel \
         without `CONFIG_ANON_VMA_NAME`)",
    ),
    (
        "socket",
        Partial,
        "TCP and UDP (`AF_INET`, dual-stack `AF_INET6`) through the gateway's `/net`, `AF_UNIX` \
         streams inside the partition (paths and abstract names; no descriptor passing); raw \
         sockets EPROTONOSUPPORT, Unix datagram and seqpacket sockets to bind (their pairs are \
         there: `socketpair`) and other families \
         EAFNOSUPPORT, and every Internet family EAFNOSUPPORT when the 9P server has no `/net`",
    ),
    (
        "socketpair",
        Partial,
        "`AF_UNIX` only: stream, datagram and seqpacket pairs (no descriptor passing)",
    ),
    (
        "bind",
        Partial,
        "the host socket binds and listens at once (so a port-0 bind knows its port); a later \
         `connect` gives the bound address up. A Unix socket's path is a socket file made through \
         9P, reachable from the partition only",
    ),
    (
        "setsockopt",
        Partial,
        "options are kept per socket with Linux's checks, sizes and defaults and the host's \
         limits (`tests/progs/sockoptdiff.c`); `TCP_NODELAY`, `SO_KEEPALIVE`, `SO_LINGER`, \
         `SO_REUSEADDR`, `SO_REUSEPORT` and `IPV6_V6ONLY` reach the host socket, the others \
         change nothing there",
    ),
    (
        "sendto",
        Partial,
        "a TCP socket ignores the address, as a connected stream does; `MSG_OOB` EOPNOTSUPP",
    ),
    (
        "recvfrom",
        Partial,
        "a TCP socket reports no source address (length 0); `MSG_OOB` EINVAL",
    ),
    (
        "epoll_wait",
        Partial,
        "of several ready registrations, one that fits in a smaller `maxevents` is now and \
         then not the one Linux's ready-list order gives (`tests/progs/epolldiff.c`)",
    ),
    ("epoll_pwait", Partial, "as `epoll_wait`"),
    ("epoll_pwait2", Partial, "as `epoll_wait`"),
];

/// System calls HotSpot and glibc make on the host (strace of both JDKs,
/// every scenario, `/work/shared/reference/jvm-syscalls.md` §3), beyond the
/// partition's recorded traces.
const HOST_TRACED: &[&str] = &[
    "accept",
    "access",
    "arch_prctl",
    "bind",
    "brk",
    "clock_getres",
    "clock_gettime",
    "clock_nanosleep",
    "clone3",
    "close",
    "connect",
    "epoll_create1",
    "epoll_ctl",
    "epoll_wait",
    "eventfd2",
    "execve",
    "exit",
    "exit_group",
    "fchdir",
    "fcntl",
    "flock",
    "fstat",
    "fsync",
    "ftruncate",
    "futex",
    "getcwd",
    "getdents64",
    "geteuid",
    "getpid",
    "getrandom",
    "getrusage",
    "getsockname",
    "getsockopt",
    "gettid",
    "getuid",
    "ioctl",
    "listen",
    "lseek",
    "lstat",
    "madvise",
    "mkdir",
    "mmap",
    "mprotect",
    "msync",
    "munmap",
    "newfstatat",
    "openat",
    "poll",
    "prctl",
    "pread64",
    "prlimit64",
    "read",
    "readlink",
    "rseq",
    "rt_sigaction",
    "rt_sigprocmask",
    "rt_sigreturn",
    "sched_getaffinity",
    "sched_yield",
    "set_robust_list",
    "set_tid_address",
    "setsockopt",
    "shutdown",
    "socket",
    "socketpair",
    "stat",
    "statfs",
    "statx",
    "sysinfo",
    "uname",
    "unlink",
    "write",
];

/// (number, name, module, handler) of each row of the dispatch table.
fn table(root: &Path) -> Vec<(u64, String, String, String)> {
    let src = std::fs::read_to_string(root.join("libos/src/syscall/mod.rs")).unwrap();
    let start = src.find("const TABLE").expect("no TABLE in syscall/mod.rs");
    let end = start + src[start..].find("];").unwrap();
    src[start..end]
        .lines()
        .filter_map(|l| {
            let l = l.trim().strip_prefix('(')?.strip_suffix("),")?;
            let mut parts = l.split(", ");
            let nr = parts.next()?.parse().ok()?;
            let name = parts.next()?.trim_matches('"').to_string();
            let (module, handler) = parts.next()?.split_once("::")?;
            Some((nr, name, module.to_string(), handler.to_string()))
        })
        .collect()
}

/// Every name by number, from names.rs.
fn names(root: &Path) -> BTreeMap<String, u64> {
    let src = std::fs::read_to_string(root.join("libos/src/syscall/names.rs")).unwrap();
    src.lines()
        .filter_map(|l| {
            let (name, nr) = l.trim().split_once("// ")?;
            let name = name.trim().strip_suffix(',')?.trim_matches('"');
            let nr = nr.trim().parse().ok()?;
            (!name.is_empty()).then(|| (name.to_string(), nr))
        })
        .collect()
}

/// The doc comment of `pub fn handler` in `libos/src/syscall/{module}.rs`.
fn doc_of(root: &Path, module: &str, handler: &str) -> String {
    let path = root.join(format!("libos/src/syscall/{module}.rs"));
    let src = std::fs::read_to_string(&path).unwrap_or_default();
    let lines: Vec<&str> = src.lines().collect();
    let Some(at) = lines
        .iter()
        .position(|l| l.starts_with(&format!("pub fn {handler}(")))
    else {
        return String::new();
    };
    let mut doc: Vec<&str> = lines[..at]
        .iter()
        .rev()
        .take_while(|l| l.starts_with("///"))
        .map(|l| l.trim_start_matches("///").trim())
        .collect();
    doc.reverse();
    doc.join(" ").replace('|', "\\|")
}

/// Which traces (`17`, `25`) each name appears in.
fn traced(root: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let dir = root.join("jvm-port/syscalls");
    for e in std::fs::read_dir(&dir).unwrap() {
        let path: PathBuf = e.unwrap().path();
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        let jdk = stem.rsplit('-').next().unwrap().to_string();
        for l in std::fs::read_to_string(&path).unwrap().lines() {
            if let Some(name) = l.split_whitespace().next().filter(|n| !n.starts_with('#')) {
                out.entry(name.to_string()).or_default().insert(jdk.clone());
            }
        }
    }
    out
}

fn generate(root: &Path) -> String {
    let table = table(root);
    let names = names(root);
    let traced = traced(root);
    let notes: BTreeMap<&str, (Status, &str)> =
        NOTES.iter().map(|&(n, s, t)| (n, (s, t))).collect();
    // Every row: by number.
    let mut rows: BTreeMap<u64, String> = BTreeMap::new();
    for (nr, name, _, _) in &table {
        rows.insert(*nr, name.clone());
    }
    let extra = traced
        .keys()
        .map(String::as_str)
        .chain(HOST_TRACED.iter().copied())
        .chain(notes.keys().copied());
    for name in extra {
        let nr = *names
            .get(name)
            .unwrap_or_else(|| panic!("{name} is not a Linux x86-64 system call (names.rs)"));
        rows.entry(nr).or_insert_with(|| name.to_string());
    }
    let by_nr: BTreeMap<u64, &(u64, String, String, String)> =
        table.iter().map(|r| (r.0, r)).collect();

    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    let mut body = String::new();
    for (nr, name) in &rows {
        let row = by_nr.get(nr);
        let (status, note) = match (notes.get(name.as_str()), row) {
            (Some(&(s, t)), _) => (s, t),
            (None, Some(_)) => (Implemented, ""),
            (None, None) => (Missing, "ENOSYS"),
        };
        assert!(
            row.is_some() || status == Missing,
            "{name} is annotated {} but has no handler",
            status.word()
        );
        assert!(
            row.is_none() || status != Missing,
            "{name} has a handler but is annotated missing"
        );
        *counts.entry(status.word()).or_default() += 1;
        let mut seen: Vec<String> = traced
            .get(name)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default();
        if HOST_TRACED.contains(&name.as_str()) {
            seen.push("host".into());
        }
        let (handler, doc) = match row {
            Some((_, _, m, h)) => (format!("`{m}::{h}`"), doc_of(root, m, h)),
            None => (String::new(), String::new()),
        };
        let what = match (doc.is_empty(), note.is_empty()) {
            (true, true) => String::new(),
            (false, true) => doc,
            (true, false) => note.to_string(),
            (false, false) => format!("{doc} **{}:** {note}", status.word()),
        };
        let _ = writeln!(
            body,
            "| {nr} | `{name}` | {} | {} | {handler} | {what} |",
            status.word(),
            seen.join(", ")
        );
    }
    let mut out = String::new();
    out.push_str(
        "# System-call coverage\n\n\
         <!-- Generated by tests/tests/syscall_table.rs; do not edit by hand. Regenerate with\n     \
         ASTRAEA_REGEN=1 cargo test --locked -p astraea-tests --test syscall_table -->\n\n\
         Every system call the JDKs and glibc make (the partition's traces of the Java test\n\
         programs in `jvm-port/syscalls/`, and the host's strace of HotSpot 17 and 25), and\n\
         every one the library OS answers, by number. The rows come from the dispatch table in\n\
         `libos/src/syscall/mod.rs`, the text from each handler's doc comment and, for what is\n\
         not complete, the annotations in `tests/tests/syscall_table.rs`.\n\n\
         * **implemented**: as Linux for one process with one vCPU;\n\
         * **partial**: implemented, with what is missing said;\n\
         * **refused**: answered on purpose with an error the caller handles (said);\n\
         * **missing**: no handler: ENOSYS, and the log names the call\n  \
         (`unimplemented system call N (name) answered ENOSYS`).\n\n\
         Every other Linux x86-64 number is missing too, and is logged by its name\n\
         (`libos/src/syscall/names.rs` names all of them); `astraea run --strace` prints every\n\
         call with its result.\n\n\
         \"seen\": in the partition's traces on JDK 17 or 25, or on the host.\n\n",
    );
    let _ = writeln!(
        out,
        "{} rows: {}.\n",
        rows.len(),
        counts
            .iter()
            .map(|(k, v)| format!("{v} {k}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    out.push_str("| nr | name | status | seen | handler | what the caller gets |\n");
    out.push_str("|---|---|---|---|---|---|\n");
    out.push_str(&body);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docs_syscalls_md_is_up_to_date() {
        let root = workspace();
        let want = generate(&root);
        let path = root.join("docs/syscalls.md");
        if std::env::var_os("ASTRAEA_REGEN").is_some() {
            std::fs::write(&path, &want).unwrap();
            return;
        }
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            have == want,
            "docs/syscalls.md is out of date; regenerate it with \
             ASTRAEA_REGEN=1 cargo test --locked -p astraea-tests --test syscall_table"
        );
    }

    #[test]
    fn every_number_has_a_name_and_every_row_a_handler() {
        let root = workspace();
        let names = names(&root);
        let by_nr: BTreeMap<u64, &String> = names.iter().map(|(n, nr)| (*nr, n)).collect();
        for (nr, name, module, handler) in table(&root) {
            assert_eq!(
                by_nr.get(&nr).map(|s| s.as_str()),
                Some(name.as_str()),
                "TABLE row {nr}"
            );
            assert!(
                !doc_of(&root, &module, &handler).is_empty(),
                "{module}::{handler} ({name}) has no doc comment"
            );
        }
        // The numbers the brief and the JDKs care about.
        for (nr, name) in [
            (27, "mincore"),
            (324, "membarrier"),
            (435, "clone3"),
            (462, "mseal"),
        ] {
            assert_eq!(by_nr.get(&nr).map(|s| s.as_str()), Some(name));
        }
    }
}
