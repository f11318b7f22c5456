//! The Linux personality against a corpus of real programs: the C programs in
//! `tests/progs/` (threads, signals from faults, every mmap rule, files and
//! directories, ENOSYS), each built with glibc (dynamic) and with musl
//! (static, both a non-PIE `ET_EXEC` at 0x400000 and a static PIE), and
//! Debian's static busybox. Every program runs on the host first, where its
//! output must be the expected one, and then in a partition, where its
//! stdout and exit status must be the host's.

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};
    use std::process::Command;
    use std::time::Duration;

    use astraea_tests::*;

    /// How long one run of one program may take before it counts as hung.
    const TIMEOUT: Duration = Duration::from_secs(180);

    /// The same environment on the host and in the partition.
    const ENV: &[(&str, &str)] = &[("TZ", "UTC"), ("LC_ALL", "C")];

    #[derive(Clone, Copy, Debug)]
    enum Build {
        /// `gcc -O2 -pthread`: a PIE run by the host's ld.so with its libc.
        GlibcDynamic,
        /// `musl-gcc -static -O2`: a non-PIE `ET_EXEC` linked at 0x400000.
        MuslStatic,
        /// musl as a static PIE (`rcrt1.o`; musl-gcc's specs do not know
        /// `-static-pie`, so the link line is spelled out).
        MuslStaticPie,
    }

    impl Build {
        fn tag(self) -> &'static str {
            match self {
                Build::GlibcDynamic => "glibc-dynamic",
                Build::MuslStatic => "musl-static",
                Build::MuslStaticPie => "musl-static-pie",
            }
        }
    }

    fn progs() -> PathBuf {
        workspace().join("tests").join("progs")
    }

    fn have(tool: &str) -> bool {
        Command::new(tool).arg("--version").output().is_ok()
    }

    /// The directory holding musl's crt files and libc: where musl-gcc's
    /// wrapper script finds its specs file.
    fn musl_lib_dir() -> PathBuf {
        let wrapper = Command::new("sh")
            .args(["-c", "command -v musl-gcc"])
            .output()
            .expect("sh");
        let path = String::from_utf8_lossy(&wrapper.stdout).trim().to_string();
        let script = std::fs::read_to_string(&path).unwrap_or_default();
        script
            .split('"')
            .find(|s| s.ends_with("musl-gcc.specs"))
            .and_then(|s| Path::new(s).parent().map(Path::to_path_buf))
            .unwrap_or_else(|| PathBuf::from("/usr/lib/x86_64-linux-musl"))
    }

    fn gcc_file(name: &str) -> String {
        let o = Command::new("gcc")
            .arg(format!("-print-file-name={name}"))
            .output()
            .expect("gcc");
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    }

    /// Builds `tests/progs/{prog}.c` as `build` into a fresh directory and
    /// returns it (the binary is `{dir}/{prog}`); `None`, loudly, when the
    /// compiler is not installed.
    fn build(prog: &str, build: Build) -> Option<PathBuf> {
        let compiler = match build {
            Build::GlibcDynamic => "gcc",
            Build::MuslStatic | Build::MuslStaticPie => "musl-gcc",
        };
        if !have(compiler) {
            eprintln!(
                "\n*** SKIPPED: {compiler} is not installed (./x test installs it); \
                 {prog} ({}) did not run. ***\n",
                build.tag()
            );
            return None;
        }
        // One directory per build: tests of one program run concurrently.
        static BUILDS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "astraea-linux-{prog}-{}-{}-{}",
            build.tag(),
            std::process::id(),
            BUILDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let src = progs().join(format!("{prog}.c"));
        let out = dir.join(prog);
        let mut c = Command::new(compiler);
        c.args(["-O2", "-Wall", "-o"]).arg(&out);
        match build {
            Build::GlibcDynamic => {
                c.arg("-pthread").arg(&src);
            }
            Build::MuslStatic => {
                c.arg("-static").arg(&src);
            }
            Build::MuslStaticPie => {
                let m = musl_lib_dir();
                c.args([
                    "-fPIE",
                    "-nostartfiles",
                    "-Wl,-static",
                    "-Wl,-pie",
                    "-Wl,--no-dynamic-linker",
                    "-Wl,-z,text",
                ])
                .arg(m.join("rcrt1.o"))
                .arg(m.join("crti.o"))
                .arg(gcc_file("crtbeginS.o"))
                .arg(&src)
                .arg(gcc_file("crtendS.o"))
                .arg(m.join("crtn.o"));
            }
        }
        let o = c.output().expect("cannot run the compiler");
        assert!(
            o.status.success(),
            "{compiler} failed for {prog} ({}): {}",
            build.tag(),
            String::from_utf8_lossy(&o.stderr)
        );
        // The ELF type is the point of the musl variants: check it.
        let bin = std::fs::read(&out).unwrap();
        let e_type = u16::from_le_bytes([bin[16], bin[17]]);
        let want = match build {
            Build::MuslStatic => 2, // ET_EXEC
            Build::GlibcDynamic | Build::MuslStaticPie => 3,
        };
        assert_eq!(
            e_type,
            want,
            "{prog} ({}) has ELF type {e_type}",
            build.tag()
        );
        Some(dir)
    }

    fn expected(prog: &str) -> String {
        std::fs::read_to_string(progs().join(format!("{prog}.stdout"))).unwrap()
    }

    /// Runs `./{prog} ARGS` on the host and in a partition from `dir`;
    /// `args` may name `{data}`, a fresh writable directory for each run.
    fn host_and_partition(dir: &Path, prog: &str, args: &[&str]) -> (Run, Run) {
        let run = |which: &str, f: &dyn Fn(&Path, &[&str]) -> Run| {
            let data = dir.join(format!("data-{which}"));
            std::fs::create_dir_all(&data).unwrap();
            let data = data.to_str().unwrap().to_string();
            let exe = format!("./{prog}");
            let mut a = vec![exe.as_str()];
            a.extend(
                args.iter()
                    .map(|s| if *s == "{data}" { data.as_str() } else { *s }),
            );
            f(dir, &a)
        };
        let host = run("host", &|d, a| host_in(d, a, ENV, TIMEOUT));
        assert_eq!(host.code, 0, "{prog} fails on the host: {host:?}");
        let part = run("partition", &|d, a| astraea_in(d, a, ENV, TIMEOUT));
        (host, part)
    }

    /// The whole check for one program whose output is the same on the
    /// host and in a partition.
    fn same_as_host(prog: &str, b: Build, args: &[&str]) -> Option<(PathBuf, Run)> {
        if !kvm_available() {
            return None;
        }
        let dir = build(prog, b)?;
        let (host, part) = host_and_partition(&dir, prog, args);
        assert_eq!(host.stdout, expected(prog), "{prog} on the host: {host:?}");
        assert_eq!(
            (part.code, part.stdout.as_str()),
            (host.code, host.stdout.as_str()),
            "{prog} ({}) in a partition differs from the host; stderr:\n{}",
            b.tag(),
            part.stderr
        );
        Some((dir, part))
    }

    /// TCP sockets through the gateway's /net: every result and errno
    /// the host's (tests/progs/sockets.c).
    fn sockets(b: Build) {
        if let Some((dir, _)) = same_as_host("sockets", b, &[]) {
            std::fs::remove_dir_all(dir).unwrap();
        }
    }

    /// UDP multicast: membership, interface, TTL and loopback options,
    /// a datagram to a group reaching a member through the host's
    /// loopback: every result and errno the host's (tests/progs/mcast.c).
    fn mcast(b: Build) {
        if let Some((dir, _)) = same_as_host("mcast", b, &[]) {
            std::fs::remove_dir_all(dir).unwrap();
        }
    }

    /// Unix stream sockets bound to paths and abstract names, and
    /// sendmmsg/recvmmsg: every result and errno the host's
    /// (tests/progs/unixsock.c).
    fn unixsock(b: Build) {
        if let Some((dir, _)) = same_as_host("unixsock", b, &[]) {
            std::fs::remove_dir_all(dir).unwrap();
        }
    }

    /// Unix datagram and seqpacket socket pairs: message boundaries,
    /// truncation, the send buffer's charge, shutdown and the peer's close,
    /// every result and errno the host's (tests/progs/unixmsg.c).
    fn unixmsg(b: Build) {
        if let Some((dir, _)) = same_as_host("unixmsg", b, &[]) {
            std::fs::remove_dir_all(dir).unwrap();
        }
    }

    /// File locks: POSIX record locks are the process's (closing any
    /// descriptor drops them), OFD and `flock` locks the description's,
    /// every result the host's (tests/progs/locks.c).
    fn locks(b: Build) {
        if let Some((dir, _)) = same_as_host("locks", b, &["{data}"]) {
            std::fs::remove_dir_all(dir).unwrap();
        }
    }

    /// sigsuspend, pause, sigtimedwait and HotSpot's suspend/resume
    /// handshake: every result the host's (tests/progs/sigwait.c).
    fn sigwait(b: Build) {
        if let Some((dir, _)) = same_as_host("sigwait", b, &[]) {
            std::fs::remove_dir_all(dir).unwrap();
        }
    }

    /// signalfd: reads of pending signals (the thread's own first, then
    /// the process's), poll, epoll, a new mask, a blocking read ended from
    /// another thread and by a timer, reads into holes: every result the
    /// host's (tests/progs/signalfd.c).
    fn signalfd(b: Build) {
        if let Some((dir, _)) = same_as_host("signalfd", b, &[]) {
            std::fs::remove_dir_all(dir).unwrap();
        }
    }

    /// memfd_create: shared and private mappings of a memory-only file at
    /// several addresses, its descriptor calls, growth, holes, shrinking:
    /// every result the host's (tests/progs/memfd.c).
    fn memfd(b: Build) {
        if let Some((dir, _)) = same_as_host("memfd", b, &[]) {
            std::fs::remove_dir_all(dir).unwrap();
        }
    }

    /// Process and thread ids relate as on Linux, and each partition's pid is
    /// its `astraea` process's host pid: three partitions at once create
    /// files named after their pids in one directory without colliding (all
    /// had pid 4 before), and each file names the host pid (tests/progs/ids.c).
    fn ids(b: Build) {
        if !kvm_available() {
            return;
        }
        let Some(dir) = build("ids", b) else {
            return;
        };
        let (host, _) = host_and_partition(&dir, "ids", &["{data}"]);
        assert_eq!(host.stdout, expected("ids"), "ids on the host: {host:?}");
        let shared = dir.join("shared");
        std::fs::create_dir_all(&shared).unwrap();
        let children: Vec<_> = (0..3)
            .map(|_| {
                spawn_piped(
                    Command::new(astraea())
                        .args(["run", "--", "./ids"])
                        .arg(&shared)
                        .current_dir(&dir),
                )
            })
            .collect();
        for child in children {
            let pid = child.id();
            let r = wait_with_timeout(child, TIMEOUT);
            assert_eq!(
                (r.code, r.stdout.as_str()),
                (0, host.stdout.as_str()),
                "ids ({}) in partition {pid} differs from the host: {r:?}",
                b.tag()
            );
            let seen = std::fs::read_to_string(shared.join(format!("pid-of-ids.{pid}")))
                .unwrap_or_else(|e| panic!("partition {pid} wrote no pid file ({e}): {r:?}"));
            assert_eq!(seen.trim(), pid.to_string(), "{r:?}");
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// `sockets policy PORT` in a partition with `astraea run` options
    /// `net`: what its connect to 127.0.0.1:PORT and its bind answered.
    fn policy_run(net: &[&str], port: u16) -> Option<String> {
        if !kvm_available() {
            return None;
        }
        let dir = build("sockets", Build::GlibcDynamic)?;
        let port = port.to_string();
        let mut args: Vec<&str> = vec!["run"];
        args.extend_from_slice(net);
        args.extend_from_slice(&["--", "./sockets", "policy", &port]);
        let r = run_with_timeout(
            Command::new(astraea()).args(&args).current_dir(&dir),
            TIMEOUT,
        );
        std::fs::remove_dir_all(dir).unwrap();
        assert_eq!(r.code, 0, "{r:?}");
        Some(r.stdout)
    }

    /// `--net none`: every connect and listen is refused (EACCES).
    #[test]
    fn net_none_refuses_sockets() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        if let Some(out) = policy_run(&["--net", "none"], port) {
            assert_eq!(out, "connect: EACCES\nbind: EACCES\n");
        }
    }

    /// `--net allow=RULE`: connects where a rule allows, nothing else.
    #[test]
    fn net_allow_limits_sockets() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let rule = format!("allow=127.0.0.1/32:{port}");
        if let Some(out) = policy_run(&["--net", &rule], port) {
            assert_eq!(out, "connect: 0\nbind: EACCES\n");
        }
        // The default is the host's network.
        if let Some(out) = policy_run(&[], port) {
            assert_eq!(out, "connect: 0\nbind: 0\n");
        }
    }

    /// `./sockets ARGS` in a partition (glibc build), with `astraea run`
    /// options `opts`.
    fn sockets_run(opts: &[&str], args: &[&str]) -> Option<Run> {
        if !kvm_available() {
            return None;
        }
        let dir = build("sockets", Build::GlibcDynamic)?;
        let r = run_with_timeout(
            Command::new(astraea())
                .arg("run")
                .args(opts)
                .arg("--")
                .arg("./sockets")
                .args(args)
                .current_dir(&dir),
            TIMEOUT,
        );
        std::fs::remove_dir_all(dir).unwrap();
        Some(r)
    }

    /// 600 connections at once (1,200 sockets, each with a read posted at
    /// the gateway): every one still carries its bytes, and files work.
    #[test]
    fn sockets_many_connections() {
        if let Some(r) = sockets_run(&["--mem", "1G"], &["many", "600"]) {
            assert_eq!(
                (r.code, r.stdout.as_str()),
                (0, "many: 600 connections, 0 bad exchanges, file read ok\n"),
                "{r:?}"
            );
        }
    }

    /// 256 MiB through one connection, sent in uneven pieces with pauses
    /// and read in odd sizes: every word arrives, in order, with streaming
    /// (several reads in flight per connection once it is in bulk) and
    /// without.
    #[test]
    fn sockets_bulk_in_order() {
        for stream in ["on", "off"] {
            let Some(r) = sockets_run(&["--mem", "1G", "--net-stream", stream], &["bulk", "256"])
            else {
                return;
            };
            assert_eq!(
                (r.code, r.stdout.as_str()),
                (0, "bulk: 256 MiB read, 0 words out of place\n"),
                "streaming {stream}: {r:?}"
            );
        }
    }

    /// Sockets until the descriptors run out: EMFILE, and after closing
    /// them everything works again. The program's limit is the soft one
    /// `astraea` starts with (2,048 here); `astraea` itself raises its own
    /// to the hard one, for the gateway's host sockets.
    #[test]
    fn sockets_until_emfile() {
        // Half the hard limit at most: the gateway's host sockets need
        // the rest.
        let Some(r) = sockets_limited(
            "h=$(ulimit -Hn); s=2048; \
             if [ \"$h\" != unlimited ] && [ \"$h\" -lt 4096 ]; then s=$((h / 2)); fi; \
             ulimit -Sn \"$s\"",
        ) else {
            return;
        };
        assert_eq!(
            (r.code, r.stdout.as_str()),
            (
                0,
                "emfile: stopped by EMFILE\nemfile: after closing them, an exchange works\n"
            ),
            "{r:?}"
        );
    }

    /// `./sockets emfile` in a partition started by `sh -c "LIMITS &&
    /// exec astraea run …"`.
    fn sockets_limited(limits: &str) -> Option<Run> {
        if !kvm_available() {
            return None;
        }
        let dir = build("sockets", Build::GlibcDynamic)?;
        let script = format!("{limits} && exec \"$0\" run --mem 1G -- ./sockets emfile");
        let r = run_with_timeout(
            Command::new("sh")
                .args(["-c", &script])
                .arg(astraea())
                .current_dir(&dir),
            TIMEOUT,
        );
        std::fs::remove_dir_all(dir).unwrap();
        Some(r)
    }

    /// Soft and hard limits equal: the gateway's host descriptors may run
    /// out before the program's. Its calls then fail (`EMFILE` from
    /// `connect`, `ENFILE` from an `accept` the gateway could not take)
    /// instead of waiting forever, and everything works again once the
    /// program closes them.
    #[test]
    fn sockets_when_the_gateway_runs_out() {
        let Some(r) = sockets_limited("ulimit -n 256") else {
            return;
        };
        assert_eq!(r.code, 0, "{r:?}");
        let lines: Vec<&str> = r.stdout.lines().collect();
        assert!(
            lines.len() == 2
                && (lines[0] == "emfile: stopped by EMFILE"
                    || lines[0] == "emfile: stopped by ENFILE")
                && lines[1] == "emfile: after closing them, an exchange works",
            "{r:?}"
        );
    }

    /// With the streaming layer off every result is the same.
    #[test]
    fn sockets_without_streaming() {
        if !kvm_available() {
            return;
        }
        let Some(dir) = build("sockets", Build::GlibcDynamic) else {
            return;
        };
        let r = run_with_timeout(
            Command::new(astraea())
                .args(["run", "--net-stream", "off", "--", "./sockets"])
                .current_dir(&dir),
            TIMEOUT,
        );
        assert_eq!(
            (r.code, r.stdout.as_str()),
            (0, expected("sockets").as_str()),
            "{r:?}"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    fn threads(b: Build) {
        if let Some((dir, _)) = same_as_host("threads", b, &[]) {
            std::fs::remove_dir_all(dir).unwrap();
        }
    }

    /// Shared writable file mappings reach the file: on msync, on munmap,
    /// and at exit; the file never grows past its size.
    /// Every register (general, vector, mask, MXCSR) survives preemption,
    /// system calls, page faults, signals and thread creation.
    ///
    /// A twentieth of the program's default work per round (`spin`): on
    /// PVM hosts whose exits cost 50-80 µs the default had not ended after
    /// 3.5 minutes in a partition (`3 12` took 128 s), every signal and system call an exit or more (tens of
    /// thousands of signals still arrive); `./x stress` runs the default.
    fn torture(b: Build) {
        if let Some((dir, _)) = same_as_host("torture", b, &["4", "30", "200000"]) {
            std::fs::remove_dir_all(dir).unwrap();
        }
    }

    fn shmap(b: Build) {
        if let Some((dir, _)) = same_as_host("shmap", b, &["{data}"]) {
            for which in ["host", "partition"] {
                let file = dir.join(format!("data-{which}/shared.bin"));
                let bytes = std::fs::read(&file).unwrap();
                assert_eq!(bytes.len(), 3 * 4096 + 100, "{which}");
                assert_eq!(&bytes[2 * 4096 + 5..2 * 4096 + 12], b"at exit", "{which}");
            }
            std::fs::remove_dir_all(dir).unwrap();
        }
    }

    /// A thread that never makes a system call is preempted (the timer
    /// reaches the program on a PVM host too).
    fn preempt(b: Build) {
        if let Some((dir, _)) = same_as_host("preempt", b, &[]) {
            std::fs::remove_dir_all(dir).unwrap();
        }
    }

    fn sigsegv(b: Build) {
        if let Some((dir, _)) = same_as_host("sigsegv", b, &[]) {
            std::fs::remove_dir_all(dir).unwrap();
        }
    }

    fn sigfpe(b: Build) {
        if let Some((dir, _)) = same_as_host("sigfpe", b, &[]) {
            std::fs::remove_dir_all(dir).unwrap();
        }
    }

    fn mmap(b: Build) {
        if let Some((dir, _)) = same_as_host("mmap", b, &["{data}"]) {
            // The program removes its data file again.
            for which in ["host", "partition"] {
                let data = dir.join(format!("data-{which}"));
                assert!(
                    std::fs::read_dir(&data).unwrap().next().is_none(),
                    "{which}: {data:?} is not empty"
                );
            }
            std::fs::remove_dir_all(dir).unwrap();
        }
    }

    fn files(b: Build) {
        if let Some((dir, _)) = same_as_host("files", b, &["{data}"]) {
            // What the program left behind, seen from the host, is the same
            // after either run.
            for which in ["host", "partition"] {
                let data = dir.join(format!("data-{which}"));
                let summary = std::fs::read_to_string(data.join("result/summary.txt"))
                    .unwrap_or_else(|e| panic!("{which}: result/summary.txt: {e}"));
                assert_eq!(
                    summary,
                    "summary: files ok\nlisting: ../ ./ Mid alpha b.txt \
                     long-name-of-a-file.txt num10 num2\n",
                    "{which}"
                );
                let mut names: Vec<String> = std::fs::read_dir(data.join("work"))
                    .unwrap()
                    .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .collect();
                names.sort();
                assert_eq!(
                    names,
                    [
                        "Mid",
                        "alpha",
                        "b.txt",
                        "long-name-of-a-file.txt",
                        "num10",
                        "num2"
                    ],
                    "{which}"
                );
                let b_txt = std::fs::read_to_string(data.join("work/b.txt")).unwrap();
                assert_eq!(b_txt, "hello+one+two\n", "{which}");
                let num2 = std::fs::read_to_string(data.join("work/num2")).unwrap();
                assert_eq!(num2, "num2".repeat(5), "{which}");
            }
            std::fs::remove_dir_all(dir).unwrap();
        }
    }

    /// mincore, membarrier, affinity, madvise, fallocate, copy_file_range,
    /// sendfile, getrusage, times, timerfd and prctl answer as the host's;
    /// a call Linux never implemented is ENOSYS and logged by name.
    fn syscalls(b: Build) {
        if let Some((dir, part)) = same_as_host("syscalls", b, &["{data}"]) {
            assert!(
                part.stderr.contains("183 (afs_syscall)"),
                "an unimplemented call is logged without its name: {}",
                part.stderr
            );
            std::fs::remove_dir_all(dir).unwrap();
        }
    }

    /// File-system edge cases a partition once got wrong (no-follow stats,
    /// O_CREAT | O_EXCL, symlink/link/chmod, ENOTDIR, ELOOP, renameat2
    /// flags, utimensat, SEEK_DATA/SEEK_HOLE, access).
    fn fsedges(b: Build) {
        if let Some((dir, _)) = same_as_host("fsedges", b, &["{data}"]) {
            std::fs::remove_dir_all(dir).unwrap();
        }
    }

    /// inotify: the events of the program's own file operations (names,
    /// order, cookies, self events, one-shot, mask add, poll) and the
    /// errors of its calls, as the host's kernel reports them.
    fn inotify(b: Build) {
        if let Some((dir, _)) = same_as_host("inotify", b, &["{data}"]) {
            std::fs::remove_dir_all(dir).unwrap();
        }
    }

    /// epoll: edge vs level triggering, one-shot, hang-ups, nesting and
    /// its limits, descriptor lifetime, EINTR and `epoll_pwait` masks, and
    /// every error, as the host's kernel reports them (the hand-written
    /// cases of `epolldiff.c`; its random sequences run in `epolldiff.rs`).
    fn epolldiff(b: Build) {
        if let Some((dir, _)) = same_as_host("epolldiff", b, &["{data}", "cases"]) {
            std::fs::remove_dir_all(dir).unwrap();
        }
    }

    /// Extended attributes through 9P: values, lists, flags, links and
    /// the errors of every form, as the host's kernel answers them.
    fn xattr(b: Build) {
        if let Some((dir, _)) = same_as_host("xattr", b, &["{data}"]) {
            std::fs::remove_dir_all(dir).unwrap();
        }
    }

    /// Interval timers that signal: setitimer, alarm, POSIX timers.
    fn timers(b: Build) {
        if let Some((dir, _)) = same_as_host("timers", b, &[]) {
            std::fs::remove_dir_all(dir).unwrap();
        }
    }

    /// What handlers learn from siginfo for each way of sending (kill,
    /// tgkill, sigqueue, rt_tgsigqueueinfo, timers, SIGPIPE), real-time
    /// queueing with values, the sigqueue calls' errors, and which thread
    /// takes a process-directed signal (tests/progs/siginfo.c).
    fn siginfo(b: Build) {
        if let Some((dir, _)) = same_as_host("siginfo", b, &[]) {
            std::fs::remove_dir_all(dir).unwrap();
        }
    }

    /// Threads leaving the CPU inside futex waits (timed, interrupted by
    /// signals) and `sched_yield`, which direct entry serves by switching
    /// threads inside direct calls: each thread's pointer and vector
    /// registers survive (tests/progs/switches.c).
    fn switches(b: Build) {
        if let Some((dir, _)) = same_as_host("switches", b, &[]) {
            std::fs::remove_dir_all(dir).unwrap();
        }
    }

    /// Threads made ready while another computes run at once: a child
    /// that exits before `clone` returns to its creator is still joined,
    /// sleeps and pipe round trips beside a spinning thread all complete.
    fn wakeups(b: Build) {
        if let Some((dir, _)) = same_as_host("wakeups", b, &[]) {
            std::fs::remove_dir_all(dir).unwrap();
        }
    }

    /// Wakers, signals and waiters racing (tests/progs/races.c): a thread
    /// signalled as soon as it is created, timed semaphore waits against
    /// posts, futex waits after an interrupted read, `shutdown(SHUT_RD)`
    /// waking a reader, blocking calls interrupted by signals.
    fn races(b: Build) {
        if let Some((dir, _)) = same_as_host("races", b, &[]) {
            std::fs::remove_dir_all(dir).unwrap();
        }
    }

    /// Robust futexes (tests/progs/robust.c): a thread that dies holding
    /// a robust mutex leaves it `EOWNERDEAD` (a waiter already blocked
    /// wakes with it), a hand-made robust list is walked at the thread's
    /// exit as Linux walks it, and `get_robust_list` answers as Linux's.
    fn robust(b: Build) {
        if let Some((dir, _)) = same_as_host("robust", b, &[]) {
            std::fs::remove_dir_all(dir).unwrap();
        }
    }

    /// Priority-inheritance futexes (tests/progs/pimutex.c): glibc's and
    /// musl's `PTHREAD_PRIO_INHERIT` mutexes under contention, trylock,
    /// error-checking and robust ones, the hand-over from an unlocking
    /// owner to a blocked waiter, and Linux's errors for raw
    /// `FUTEX_LOCK_PI`/`TRYLOCK_PI`/`UNLOCK_PI` calls.
    fn pimutex(b: Build) {
        if let Some((dir, _)) = same_as_host("pimutex", b, &[]) {
            std::fs::remove_dir_all(dir).unwrap();
        }
    }

    /// Resource limits (tests/progs/rlimits.c): the program starts with
    /// the limits the host's would (those of the `astraea` that started
    /// it), sets them as Linux lets it, and `RLIMIT_NOFILE` bounds its
    /// descriptors (`EMFILE`, `EBADF`, `EINVAL` where Linux gives them).
    fn rlimits(b: Build) {
        if let Some((dir, _)) = same_as_host("rlimits", b, &[]) {
            let (host, part) = host_and_partition(&dir, "rlimits", &["values"]);
            assert_eq!(host.code, 0, "{host:?}");
            assert_eq!(
                part.stdout, host.stdout,
                "the partition's starting limits differ from the host's; stderr:\n{}",
                part.stderr
            );
            std::fs::remove_dir_all(dir).unwrap();
        }
    }

    /// `RLIMIT_FSIZE` (tests/progs/fsize.c): writes cut short at the
    /// limit, `EFBIG` and `SIGXFSZ` at or past it, truncate and fallocate
    /// refused past it, memory-only files too, pipes not; then, with the
    /// signal's default action, the process ends by it (exit 153, as a
    /// shell reports it) in a partition as on the host.
    fn fsize(b: Build) {
        if let Some((dir, _)) = same_as_host("fsize", b, &["{data}"]) {
            let data = dir.join("data-kill");
            std::fs::create_dir_all(&data).unwrap();
            let args = ["./fsize", data.to_str().unwrap(), "kill"];
            let host = host_in(&dir, &args, ENV, TIMEOUT);
            let part = astraea_in(&dir, &args, ENV, TIMEOUT);
            assert_eq!(host.code, 128 + 25, "{host:?}");
            assert_eq!(
                (part.code, part.stdout.as_str()),
                (host.code, host.stdout.as_str()),
                "{part:?}"
            );
            // Started under `ulimit -Sf`: the program keeps the limit, and
            // `astraea` (whose guest RAM is a memory file far larger)
            // neither fails nor ends by SIGXFSZ (it did, at start).
            let limited = dir.join("data-limited");
            std::fs::create_dir_all(&limited).unwrap();
            let mut c = Command::new("sh");
            c.args(["-c", "ulimit -Sf 20 && exec \"$0\" run -- ./fsize \"$1\""])
                .arg(astraea())
                .arg(&limited)
                .current_dir(&dir);
            let r = run_with_timeout(&mut c, TIMEOUT);
            assert_eq!(
                (r.code, r.stdout.as_str()),
                (0, expected("fsize").as_str()),
                "under ulimit -Sf 20: {r:?}"
            );
            std::fs::remove_dir_all(dir).unwrap();
        }
    }

    /// `RLIMIT_CPU` (tests/progs/cpulimit.c): `SIGXCPU` at the soft limit
    /// and each CPU second after (the soft limit moving on), `SIGKILL` at
    /// the hard one, and `SIGXCPU`'s default action ending the process
    /// (exit 152 and 137, as a shell reports them), as on the host. One
    /// build only: each run spins 1–2.5 s of CPU time.
    #[test]
    fn cpulimit() {
        let Some((dir, _)) = same_as_host("cpulimit", Build::GlibcDynamic, &[]) else {
            return;
        };
        for (mode, code) in [("default", 128 + 24), ("hard", 128 + 9)] {
            let args = ["./cpulimit", mode];
            let host = host_in(&dir, &args, ENV, TIMEOUT);
            let part = astraea_in(&dir, &args, ENV, TIMEOUT);
            assert_eq!(host.code, code, "{mode} on the host: {host:?}");
            assert_eq!(
                (part.code, part.stdout.as_str()),
                (host.code, host.stdout.as_str()),
                "{mode}: {part:?}"
            );
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// Buffers with holes (tests/progs/holes.c): writes, sends and reads
    /// whose buffer ends in an unmapped or PROT_NONE page return what Linux
    /// returns (the count before the hole, or EFAULT), and a write whose
    /// buffer another thread unmaps meanwhile ends early instead of
    /// faulting in the kernel.
    fn holes(b: Build) {
        if let Some((dir, _)) = same_as_host("holes", b, &[]) {
            std::fs::remove_dir_all(dir).unwrap();
        }
    }

    /// syscall(999) and fork() fail with ENOSYS in a partition (on the host
    /// fork works), and the partition names the unknown call on stderr.
    fn enosys(b: Build) {
        if !kvm_available() {
            return;
        }
        let Some(dir) = build("enosys", b) else {
            return;
        };
        let (host, part) = host_and_partition(&dir, "enosys", &[]);
        assert_eq!(
            host.stdout,
            "syscall(999) = -1 errno=ENOSYS\n\
             fork() = child, exit status 7\n\
             still running after fork\n",
            "on the host: {host:?}"
        );
        assert_eq!(part.code, 0, "{part:?}");
        assert_eq!(
            part.stdout,
            "syscall(999) = -1 errno=ENOSYS\n\
             fork() = -1 errno=ENOSYS\n\
             still running after fork\n",
            "{part:?}"
        );
        assert!(
            part.stderr.contains("ENOSYS")
                && (part.stderr.contains("999") || part.stderr.contains("0x3e7")),
            "the unknown system call is not logged on stderr: {part:?}"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    macro_rules! corpus {
        ($($prog:ident: $glibc:ident, $musl:ident, $musl_pie:ident;)*) => {$(
            #[test]
            fn $glibc() {
                $prog(Build::GlibcDynamic);
            }
            #[test]
            fn $musl() {
                $prog(Build::MuslStatic);
            }
            #[test]
            fn $musl_pie() {
                $prog(Build::MuslStaticPie);
            }
        )*};
    }

    corpus! {
        threads: threads_glibc_dynamic, threads_musl_static, threads_musl_static_pie;
        sigsegv: sigsegv_glibc_dynamic, sigsegv_musl_static, sigsegv_musl_static_pie;
        sigfpe: sigfpe_glibc_dynamic, sigfpe_musl_static, sigfpe_musl_static_pie;
        mmap: mmap_glibc_dynamic, mmap_musl_static, mmap_musl_static_pie;
        files: files_glibc_dynamic, files_musl_static, files_musl_static_pie;
        enosys: enosys_glibc_dynamic, enosys_musl_static, enosys_musl_static_pie;
        preempt: preempt_glibc_dynamic, preempt_musl_static, preempt_musl_static_pie;
        shmap: shmap_glibc_dynamic, shmap_musl_static, shmap_musl_static_pie;
        syscalls: syscalls_glibc_dynamic, syscalls_musl_static, syscalls_musl_static_pie;
        torture: torture_glibc_dynamic, torture_musl_static, torture_musl_static_pie;
        fsedges: fsedges_glibc_dynamic, fsedges_musl_static, fsedges_musl_static_pie;
        inotify: inotify_glibc_dynamic, inotify_musl_static, inotify_musl_static_pie;
        epolldiff: epolldiff_glibc_dynamic, epolldiff_musl_static, epolldiff_musl_static_pie;
        xattr: xattr_glibc_dynamic, xattr_musl_static, xattr_musl_static_pie;
        timers: timers_glibc_dynamic, timers_musl_static, timers_musl_static_pie;
        sockets: sockets_glibc_dynamic, sockets_musl_static, sockets_musl_static_pie;
        siginfo: siginfo_glibc_dynamic, siginfo_musl_static, siginfo_musl_static_pie;
        switches: switches_glibc_dynamic, switches_musl_static, switches_musl_static_pie;
        wakeups: wakeups_glibc_dynamic, wakeups_musl_static, wakeups_musl_static_pie;
        races: races_glibc_dynamic, races_musl_static, races_musl_static_pie;
        robust: robust_glibc_dynamic, robust_musl_static, robust_musl_static_pie;
        pimutex: pimutex_glibc_dynamic, pimutex_musl_static, pimutex_musl_static_pie;
        rlimits: rlimits_glibc_dynamic, rlimits_musl_static, rlimits_musl_static_pie;
        fsize: fsize_glibc_dynamic, fsize_musl_static, fsize_musl_static_pie;
        holes: holes_glibc_dynamic, holes_musl_static, holes_musl_static_pie;
        unixsock: unixsock_glibc_dynamic, unixsock_musl_static, unixsock_musl_static_pie;
        mcast: mcast_glibc_dynamic, mcast_musl_static, mcast_musl_static_pie;
        unixmsg: unixmsg_glibc_dynamic, unixmsg_musl_static, unixmsg_musl_static_pie;
        locks: locks_glibc_dynamic, locks_musl_static, locks_musl_static_pie;
        sigwait: sigwait_glibc_dynamic, sigwait_musl_static, sigwait_musl_static_pie;
        signalfd: signalfd_glibc_dynamic, signalfd_musl_static, signalfd_musl_static_pie;
        memfd: memfd_glibc_dynamic, memfd_musl_static, memfd_musl_static_pie;
        ids: ids_glibc_dynamic, ids_musl_static, ids_musl_static_pie;
    }

    // --- Debian's busybox-static: a non-PIE ET_EXEC at 0x400000 ---

    const BUSYBOX: &str = "/bin/busybox";

    /// A directory of files with fixed contents and fixed times, for the
    /// busybox applets to look at.
    fn fixture(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("astraea-busybox-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("sub/deep")).unwrap();
        std::fs::create_dir_all(dir.join("empty-dir")).unwrap();
        std::fs::write(dir.join("a.txt"), "alpha\nbeta\ngamma\ndelta\n").unwrap();
        std::fs::write(
            dir.join("words.txt"),
            "pear\napple\nfig\nbanana\ncherry\napple\nkiwi\ndate\nbeta\n",
        )
        .unwrap();
        std::fs::write(dir.join("numbers.txt"), "10\n9\n100\n-3\n42\n7\n0\n").unwrap();
        std::fs::write(dir.join("empty"), "").unwrap();
        std::fs::write(
            dir.join("sub/c.txt"),
            "the quick brown fox\njumps over the lazy dog\nbeta again\n",
        )
        .unwrap();
        let bin: Vec<u8> = (0..10_000u32).map(|i| (i * 31 % 256) as u8).collect();
        std::fs::write(dir.join("sub/deep/d.bin"), bin).unwrap();
        // A megabyte of pseudo-random bytes: reads of many 9P messages.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let big: Vec<u8> = (0..1 << 20)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        std::fs::write(dir.join("big.bin"), big).unwrap();
        // Fixed times, directories last (creating entries touched them).
        let all = [
            "a.txt",
            "words.txt",
            "numbers.txt",
            "empty",
            "big.bin",
            "sub/c.txt",
            "sub/deep/d.bin",
            "sub/deep",
            "sub",
            "empty-dir",
            ".",
        ];
        let st = Command::new("touch")
            .args(["-d", "2024-01-02 03:04:05 UTC"])
            .args(all)
            .current_dir(&dir)
            .status()
            .expect("touch");
        assert!(st.success());
        dir
    }

    fn sorted_lines(s: &str) -> Vec<&str> {
        let mut v: Vec<&str> = s.lines().collect();
        v.sort_unstable();
        v
    }

    /// Runs each busybox command line on the host and in a partition from
    /// a fresh fixture directory and compares stdout and exit status.
    /// `normalize` turns stdout into what is compared (e.g. sorts lines
    /// whose order follows the directory's, which Linux does not fix).
    fn busybox(name: &str, cmds: &[&[&str]], normalize: fn(&str) -> Vec<&str>) {
        if !kvm_available() {
            return;
        }
        if !Path::new(BUSYBOX).exists() {
            eprintln!(
                "\n*** SKIPPED: {BUSYBOX} is missing (Debian: busybox-static; ./x test \
                 installs it); this test did not run. ***\n"
            );
            return;
        }
        let dir = fixture(name);
        for cmd in cmds {
            let mut args = vec![BUSYBOX];
            args.extend_from_slice(cmd);
            let host = host_in(&dir, &args, ENV, TIMEOUT);
            assert_eq!(host.code, 0, "busybox {cmd:?} fails on the host: {host:?}");
            assert!(!host.stdout.is_empty(), "{cmd:?}: {host:?}");
            let part = astraea_in(&dir, &args, ENV, TIMEOUT);
            assert_eq!(
                (part.code, normalize(&part.stdout)),
                (host.code, normalize(&host.stdout)),
                "busybox {cmd:?} in a partition differs from the host; \
                 host stdout:\n{}\npartition stdout:\n{}\npartition stderr:\n{}",
                host.stdout,
                part.stdout,
                part.stderr
            );
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    fn exact(s: &str) -> Vec<&str> {
        s.lines().collect()
    }

    #[test]
    fn busybox_ls() {
        // The "total" lines count st_blocks, which a file server may round
        // differently (as in programs.rs); every entry line must match.
        fn entries(s: &str) -> Vec<&str> {
            s.lines().filter(|l| !l.starts_with("total")).collect()
        }
        busybox(
            "ls",
            &[
                &["ls"],
                &["ls", "-l"],
                &["ls", "-lR"],
                &["ls", "-ln", "--full-time", "sub", "sub/deep"],
                &["ls", "-ld", "empty-dir", "big.bin", "empty"],
            ],
            entries,
        );
    }

    #[test]
    fn busybox_cat() {
        busybox(
            "cat",
            &[&["cat", "a.txt", "sub/c.txt", "empty", "words.txt"]],
            exact,
        );
    }

    #[test]
    fn busybox_wc() {
        busybox(
            "wc",
            &[
                &["wc", "a.txt", "words.txt", "sub/c.txt", "sub/deep/d.bin"],
                &["wc", "-c", "big.bin"],
            ],
            exact,
        );
    }

    #[test]
    fn busybox_sha256sum() {
        busybox(
            "sha256sum",
            &[&["sha256sum", "a.txt", "empty", "sub/deep/d.bin", "big.bin"]],
            exact,
        );
    }

    #[test]
    fn busybox_md5sum() {
        busybox(
            "md5sum",
            &[&["md5sum", "a.txt", "empty", "sub/deep/d.bin", "big.bin"]],
            exact,
        );
    }

    #[test]
    fn busybox_find() {
        // find lists entries in directory order: compared sorted.
        busybox(
            "find",
            &[
                &["find", "."],
                &["find", ".", "-type", "f", "-name", "*.txt"],
                &["find", "sub", "-type", "d"],
                &["find", ".", "-size", "+100k"],
            ],
            sorted_lines,
        );
    }

    #[test]
    fn busybox_grep() {
        busybox(
            "grep",
            &[
                &["grep", "-n", "a", "a.txt", "words.txt"],
                &["grep", "-c", "-v", "e", "words.txt"],
                &["grep", "-i", "THE", "sub/c.txt"],
            ],
            exact,
        );
        // -r walks directories in their order: compared sorted.
        busybox("grep-r", &[&["grep", "-rn", "beta", "."]], sorted_lines);
    }

    #[test]
    fn busybox_sort() {
        busybox(
            "sort",
            &[
                &["sort", "words.txt"],
                &["sort", "-u", "words.txt", "a.txt"],
                &["sort", "-n", "-r", "numbers.txt"],
            ],
            exact,
        );
    }

    #[test]
    fn busybox_du() {
        // du prints entries in directory order: compared sorted.
        busybox(
            "du",
            &[&["du", "-k", "."], &["du", "-a", "-k", "sub"]],
            sorted_lines,
        );
    }

    /// `--profile` prints where the partition's time went, on stderr only:
    /// the program's output is unchanged.
    #[test]
    fn profile_goes_to_stderr() {
        if !kvm_available() || !Path::new(BUSYBOX).exists() {
            eprintln!("\n*** SKIPPED: needs /dev/kvm and {BUSYBOX} ***\n");
            return;
        }
        let plain = astraea_cmd(&["run", "--", BUSYBOX, "sha256sum", BUSYBOX]);
        let profiled = astraea_cmd(&["run", "--profile", "--", BUSYBOX, "sha256sum", BUSYBOX]);
        assert_eq!(plain.code, 0, "{plain:?}");
        assert_eq!(profiled.code, 0, "{profiled:?}");
        assert_eq!(profiled.stdout, plain.stdout);
        assert!(
            profiled.stderr.contains("profile: ") && profiled.stderr.contains("samples"),
            "{profiled:?}"
        );
        // The trapped calls by time: opening the file always traps.
        let calls = profiled
            .stderr
            .split("trapped system calls by time")
            .nth(1)
            .unwrap_or_else(|| panic!("no table of trapped calls: {profiled:?}"));
        assert!(
            calls
                .lines()
                .any(|l| l.contains(" calls ") && l.ends_with(" openat")),
            "{profiled:?}"
        );
        assert!(!plain.stderr.contains("profile: "), "{plain:?}");
    }
}
