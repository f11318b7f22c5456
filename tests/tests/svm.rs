//! The same partition on standard KVM: `tests/svm/run.sh` boots an emulated
//! AMD machine with SVM (QEMU/TCG, Debian's Linux and `kvm_amd`), and
//! `tests/svm/suite.sh` runs there — on that ordinary, hardware-style KVM —
//! the test kernel's scenarios, the register torture (static and dynamic),
//! the file, memory and socket programs, five random-sequence differs
//! (compared with this machine's Linux) and eleven more programs of fixed
//! output, a snapshot taken and restored
//! there (its TSC carried over; one with sockets, restored with
//! `--publish`), a SIGTERM passed to the program, a
//! check that the program cannot touch the
//! library OS's memory, and `java -version` plus a JIT-heavy program on
//! both JDKs; then the same kernel image under QEMU (KVM, `microvm`) through
//! its PVH entry, reading a file through QEMU's own 9P server
//! (`tests/svm/qemu-pvh.sh`). Every output is compared with what the host
//! (or the expected file) gives. About 20x slower than native: about a
//! minute.

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};
    use std::process::Command;
    use std::time::Duration;

    use astraea_tests::*;

    const JDKS: [&str; 2] = [
        "/usr/lib/jvm/java-17-openjdk-amd64",
        "/usr/lib/jvm/temurin-25-jdk-amd64",
    ];

    fn skip(why: &str) {
        eprintln!("\n*** SKIPPED: {why}; the standard-KVM (SVM) test did not run. ***\n");
    }

    fn compile(dir: &Path, out: &str, src: &str, cc: &str, flags: &[&str]) -> bool {
        let o = Command::new(cc)
            .args(flags)
            .args(["-O2", "-o"])
            .arg(dir.join(out))
            .arg(workspace().join("tests/progs").join(src))
            .output();
        matches!(o, Ok(o) if o.status.success())
    }

    fn read(dir: &Path, name: &str) -> (i32, String, String) {
        let f = |ext: &str| {
            std::fs::read_to_string(dir.join(format!("{name}.{ext}"))).unwrap_or_default()
        };
        let rc = f("rc").trim().parse().unwrap_or(-1);
        (rc, f("out"), f("err"))
    }

    /// Random-sequence differs (`tests/progs/NAME.c`, see `Differ`) run on
    /// standard KVM too, fewer sequences than on PVM (emulation is about
    /// 20x slower): signal frames return by `iretq` there, interrupts and
    /// the TLB are the hardware's, so the paths differ from PVM's. The
    /// oracle is this machine's Linux (the emulated machine's is another
    /// version). Not timediff: which clocks exist follows the machine (the
    /// emulated one has an RTC, so alarm clocks, which this one lacks); not
    /// streamdiff: its socket buffer sizes are capped by the machine's
    /// `net.core.wmem_max`, which the emulated kernel does not show (the
    /// partition there takes Linux's default).
    const DIFFERS: [(&str, u32, u32); 5] = [
        ("sigdiff", 40, 60),
        ("futexdiff", 150, 60),
        ("mlockdiff", 60, 60),
        ("fddiff", 80, 60),
        ("pipediff", 40, 60),
    ];

    /// Programs whose output is fixed (`tests/progs/NAME.stdout`, the
    /// host's, checked by `linux.rs`): signals, threads and their wake-ups,
    /// preemption, robust and PI futexes, memfds, Unix socket pairs. Not
    /// unixsock: its socket files are made in the scratch directory, which
    /// is QEMU's 9P there (`ENXIO`), not the host's disk.
    const PROGRAMS: [&str; 11] = [
        "sigwait", "signalfd", "siginfo", "memfd", "switches", "wakeups", "races", "robust",
        "pimutex", "preempt", "unixmsg",
    ];

    fn expected(prog: &str) -> String {
        std::fs::read_to_string(
            workspace()
                .join("tests/progs")
                .join(format!("{prog}.stdout")),
        )
        .unwrap()
    }

    #[test]
    fn standard_kvm_runs_what_pvm_runs() {
        if std::env::var_os("ASTRAEA_SKIP_SVM").is_some() {
            skip("ASTRAEA_SKIP_SVM is set");
            return;
        }
        if Command::new("musl-gcc").arg("--version").output().is_err() {
            skip("musl-gcc is not installed (./x test installs it)");
            return;
        }
        let dir: PathBuf = workspace()
            .join("target")
            .join(format!("svm-scratch-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("files-data")).unwrap();
        std::fs::create_dir_all(dir.join("mmap-data")).unwrap();
        for (out, src, cc, flags) in [
            ("torture-static", "torture.c", "musl-gcc", &["-static"][..]),
            ("torture-dynamic", "torture.c", "gcc", &["-pthread"][..]),
            ("files-static", "files.c", "musl-gcc", &["-static"][..]),
            ("mmap-static", "mmap.c", "musl-gcc", &["-static"][..]),
            ("kread-static", "kread.c", "musl-gcc", &["-static"][..]),
            // Signal delivery and sigreturn: full register restores, which
            // return by `iretq` natively.
            ("sigsegv-static", "sigsegv.c", "musl-gcc", &["-static"][..]),
            ("sigfpe-static", "sigfpe.c", "musl-gcc", &["-static"][..]),
            ("threads-static", "threads.c", "musl-gcc", &["-static"][..]),
            ("timers-static", "timers.c", "musl-gcc", &["-static"][..]),
            ("sockets-static", "sockets.c", "musl-gcc", &["-static"][..]),
            ("snapshot-dynamic", "snapshot.c", "gcc", &["-pthread"][..]),
        ] {
            assert!(
                compile(&dir, out, src, cc, flags),
                "cannot build {src} with {cc}"
            );
        }
        // The differs' host outputs, and the list suite.sh runs in the
        // emulated machine ("CASE ARGS..." after `astraea run --`).
        let mut differ_host = Vec::new();
        let mut list = String::new();
        for (name, seeds, calls) in DIFFERS {
            assert!(
                compile(
                    &dir,
                    name,
                    &format!("{name}.c"),
                    "gcc",
                    &["-Wall", "-static-pie"]
                ),
                "cannot build {name}.c with gcc"
            );
            let args = [
                "run".to_string(),
                "1".into(),
                seeds.to_string(),
                calls.to_string(),
            ];
            let mut c = Command::new(dir.join(name));
            c.args(&args).current_dir(&dir);
            let r = run_with_timeout(&mut c, Duration::from_secs(300));
            assert_eq!(r.code, 0, "{name} on the host: {}", r.stderr);
            differ_host.push(r.stdout);
            list.push_str(&format!("diff-{name} ./{name} {}\n", args.join(" ")));
        }
        for name in PROGRAMS {
            let out = format!("{name}-prog");
            assert!(
                compile(
                    &dir,
                    &out,
                    &format!("{name}.c"),
                    "gcc",
                    &["-Wall", "-static-pie", "-pthread"]
                ),
                "cannot build {name}.c with gcc"
            );
            list.push_str(&format!("prog-{name} ./{out}\n"));
        }
        std::fs::write(dir.join("differs.list"), list).unwrap();
        // The descriptor limits the host's runs had (a partition takes
        // astraea's; the emulated machine's shell starts with 1024).
        let nofile = host_in(
            &dir,
            &["sh", "-c", "echo $(ulimit -Sn) $(ulimit -Hn)"],
            &[],
            Duration::from_secs(30),
        );
        std::fs::write(dir.join("differs.nofile"), nofile.stdout).unwrap();
        let jdks: Vec<&str> = JDKS
            .iter()
            .copied()
            .filter(|h| Path::new(h).join("bin/java").is_file())
            .collect();
        if jdks.len() < JDKS.len() {
            eprintln!("\n*** NOTE: only these JDKs are installed: {jdks:?} ***\n");
        }
        let mut host_jit = Vec::new();
        for home in &jdks {
            let o = Command::new(Path::new(home).join("bin/javac"))
                .args(["--release", "17", "-d"])
                .arg(&dir)
                .arg(workspace().join("tests/java/JitChurn.java"))
                .output()
                .expect("javac");
            assert!(o.status.success(), "javac: {o:?}");
            let host = host_in(
                &dir,
                &[&format!("{home}/bin/java"), "-cp", ".", "JitChurn", "3"],
                &[],
                Duration::from_secs(300),
            );
            assert_eq!(host.code, 0, "{host:?}");
            host_jit.push(host.stdout);
        }
        let mut cmd = Command::new(workspace().join("tests/svm/run.sh"));
        cmd.arg(&dir)
            .arg("sh")
            .arg(workspace().join("tests/svm/suite.sh"))
            .arg(workspace())
            .args(&jdks);
        let r = run_with_timeout(&mut cmd, Duration::from_secs(1800));
        if r.code == 77 {
            skip(&format!(
                "QEMU or Debian's kernel could not be installed: {}",
                r.stderr
            ));
            return;
        }
        let console = std::fs::read_to_string(dir.join("svm-console.log")).unwrap_or_default();
        // QEMU's TCG losing an interrupt (tests/svm/watchdog.py): kicked,
        // and said, so that how often it happens stays visible.
        let kicks = console.matches("QEMU lost an interrupt").count();
        if kicks > 0 {
            eprintln!(
                "svm: QEMU lost an interrupt {kicks} time(s); the watchdog kicked it (see tests/svm/watchdog.py)"
            );
        }
        assert_eq!(
            r.code, 0,
            "the emulated SVM machine failed: {r:?}\nconsole:\n{console}"
        );

        let (rc, out, err) = read(&dir, "hostkind");
        assert_eq!((rc, out.as_str()), (0, "hello-from-svm\n"), "{err}");
        assert!(
            err.contains("AMD SVM") && !err.contains("PVM"),
            "host kind: {err}"
        );
        let (rc, out, err) = read(&dir, "ktest");
        assert_eq!(rc, 0, "test kernel on SVM:\n{out}\n{err}");
        for t in ["torture-static", "torture-dynamic"] {
            let (rc, out, err) = read(&dir, t);
            assert_eq!(
                (rc, out.as_str()),
                (0, "torture: 3 threads, 12 rounds: every register intact\n"),
                "{t} on SVM: {err}"
            );
        }
        let (rc, out, err) = read(&dir, "files");
        assert_eq!(
            (rc, out.as_str()),
            (0, expected("files").as_str()),
            "files on SVM: {err}"
        );
        let (rc, out, err) = read(&dir, "mmap");
        assert_eq!(
            (rc, out.as_str()),
            (0, expected("mmap").as_str()),
            "mmap on SVM: {err}"
        );
        for prog in ["sigsegv", "sigfpe", "threads", "timers", "sockets"] {
            let (rc, out, err) = read(&dir, prog);
            assert_eq!(
                (rc, out.as_str()),
                (0, expected(prog).as_str()),
                "{prog} on SVM: {err}"
            );
        }
        let (rc, out, err) = read(&dir, "snapshot-taken");
        assert_eq!(
            (rc, out.as_str()),
            (0, expected("snapshot-taken").as_str()),
            "snapshot on SVM: {err}"
        );
        let (rc, out, err) = read(&dir, "snapshot-restored");
        assert_eq!(
            (rc, out.as_str()),
            (42, expected("snapshot-restored").as_str()),
            "restore on SVM: {err}"
        );
        let (rc, out, err) = read(&dir, "snapshot-restored-again");
        assert_eq!(
            (rc, out.as_str()),
            (42, expected("snapshot-restored").as_str()),
            "a second restore on SVM, with the first's working set: {err}"
        );
        // Recorded, or the emulated machine cannot say which pages (its
        // chroot's /proc has no pagemap) and the restores went on without.
        let first_err =
            std::fs::read_to_string(dir.join("snapshot-restored.err")).unwrap_or_default();
        assert!(
            dir.join("snapshot-ws.recorded").exists()
                || first_err.contains("cannot read /proc/self/pagemap"),
            "the first restore on SVM recorded no working set: {first_err}"
        );
        let (rc, out, err) = read(&dir, "snapshot-net-taken");
        assert_eq!(
            (rc, out.as_str()),
            (
                0,
                "net: taken\nnet: old connection carries bytes both ways\nnet: new connection works\n"
            ),
            "a snapshot with sockets on SVM: {err}"
        );
        let (rc, out, err) = read(&dir, "snapshot-net-restored");
        assert_eq!(
            (rc, out.as_str()),
            (
                0,
                "net: restored\nnet: old connection ended\nnet: new connection works\n"
            ),
            "a restore with sockets on SVM: {err}"
        );
        assert!(
            err.contains("TCP port 47321 is published at 127.0.0.1:"),
            "{err}"
        );
        let (rc, _, err) = read(&dir, "hostsig");
        assert!(
            rc == 143 && err.contains("killed by signal 15 (SIGTERM)"),
            "SIGTERM to astraea run on SVM: status {rc}, {err}"
        );
        let (rc, out, err) = read(&dir, "kread");
        assert_eq!(
            (rc, out.as_str()),
            (
                0,
                "read of library-OS memory: SIGSEGV\nwrite to library-OS memory: SIGSEGV\n"
            ),
            "the program reached library-OS memory on SVM: {err}"
        );
        let (rc, out, err) = read(&dir, "kread-direct");
        assert_eq!(
            (rc, out.as_str()),
            (
                0,
                "read of library-OS memory: SIGSEGV\nwrite to library-OS memory: SIGSEGV\n"
            ),
            "--syscall-entry direct on SVM: {err}"
        );
        assert!(
            err.contains("direct entry needs a PVM host"),
            "--syscall-entry direct on SVM did not say it fell back: {err}"
        );
        for (home, want) in jdks.iter().zip(&host_jit) {
            let v = Path::new(home)
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let (rc, _, err) = read(&dir, &format!("java-version-{v}"));
            assert!(
                rc == 0 && err.contains("64-Bit Server VM"),
                "java -version ({v}) on SVM: {rc} {err}"
            );
            let (rc, out, err) = read(&dir, &format!("jitchurn-{v}"));
            assert_eq!((rc, &out), (0, want), "JitChurn ({v}) on SVM: {err}");
        }
        for name in PROGRAMS {
            let (rc, out, err) = read(&dir, &format!("prog-{name}"));
            assert_eq!(
                (rc, out.as_str()),
                (0, expected(name).as_str()),
                "{name} on SVM: {err}"
            );
        }
        for ((name, seeds, calls), host) in DIFFERS.iter().zip(&differ_host) {
            let (rc, out, err) = read(&dir, &format!("diff-{name}"));
            assert_eq!(rc, 0, "{name} on SVM: {err}");
            assert_same_sequences(host, &out, *seeds, |seed| {
                format!("{name} run {seed} 1 {calls}, on standard KVM")
            });
        }
        // QEMU booted the image through its PVH entry; the program read its
        // file through QEMU's 9P server and the exit status came back
        // through isa-debug-exit (QEMU exits with 2 * status + 1).
        let serial = std::fs::read_to_string(dir.join("qemu-pvh.out")).unwrap_or_default();
        let qemu_err = std::fs::read_to_string(dir.join("qemu-pvh.err")).unwrap_or_default();
        let qemu_rc = std::fs::read_to_string(dir.join("qemu-pvh.rc")).unwrap_or_default();
        assert!(
            serial.contains("read through QEMU's 9P server\n")
                && serial.contains("astraea: exit status 0\n")
                && qemu_rc.trim() == "1",
            "the kernel under QEMU (PVH): exit {qemu_rc}\nserial:\n{serial}\nqemu:\n{qemu_err}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
