//! Faults injected, nothing lost (issue 10): real programs in real
//! partitions while something underneath them fails.
//!
//! - The gateway process is killed (SIGKILL) while a program reads and
//!   writes files through it: the program sees EIO, and the partition ends
//!   within seconds with a message and exit status 125, never hangs.
//! - A file shrinks under its mapping (the program truncates it through a
//!   second path, or the host does): a page touched past the new end gets
//!   SIGBUS (BUS_ADRERR), exactly as on the host.
//! - The file system fills up (a 1 MiB tmpfs mounted read-write): C sees
//!   ENOSPC after the same number of bytes as on the host, Java gets
//!   IOException "No space left on device", and every byte written and
//!   synced before is on the host's disk afterwards.
//! - The host cannot give the partition what it needs (memory, /dev/kvm):
//!   one line saying what to do, exit status 125.

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    use astraea_tests::*;

    const TIMEOUT: Duration = Duration::from_secs(60);
    /// How soon after the gateway dies the partition must have ended.
    const GATEWAY_LOSS_LIMIT: Duration = Duration::from_secs(5);

    fn progs() -> PathBuf {
        workspace().join("tests").join("progs")
    }

    fn temp_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("astraea-faults-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn skip(why: &str) {
        eprintln!("\n*** SKIPPED: {why}; this test did not run. ***\n");
    }

    fn is_root() -> bool {
        Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| o.stdout.trim_ascii() == b"0")
    }

    /// Builds `tests/progs/{prog}.c` as a static program (musl-gcc, or
    /// gcc -static without it) into `dir`: it runs with nothing else from
    /// the host, so a partition whose namespace is only a test directory can
    /// run it. `None`, loudly, without a compiler.
    fn build_static(prog: &str, dir: &Path) -> Option<PathBuf> {
        let compiler = ["musl-gcc", "gcc"]
            .into_iter()
            .find(|c| Command::new(c).arg("--version").output().is_ok());
        let Some(compiler) = compiler else {
            skip("neither musl-gcc nor gcc is installed");
            return None;
        };
        let out = dir.join(prog);
        let o = Command::new(compiler)
            .args(["-static", "-O2", "-Wall", "-o"])
            .arg(&out)
            .arg(progs().join(format!("{prog}.c")))
            .output()
            .expect("cannot run the compiler");
        assert!(
            o.status.success(),
            "{compiler} failed for {prog}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        Some(out)
    }

    fn wait_for(path: &Path, limit: Duration) -> bool {
        let t0 = Instant::now();
        while !path.exists() {
            if t0.elapsed() > limit {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        true
    }

    // ---- 1. The gateway dies mid-run ----

    /// Runs `/ioloop /data MODE…` in a partition whose files come from a
    /// separate `astraea-gateway --vhost-user` process, SIGKILLs the gateway
    /// once the program is under way, and returns the run, how long the
    /// partition lived on after the kill, and the socket's path. `None`
    /// when the test cannot run here.
    fn kill_the_gateway_under_ioloop(
        name: &str,
        mode: &[&str],
    ) -> Option<(Run, Duration, PathBuf)> {
        if !kvm_available() {
            return None;
        }
        let dir = temp_dir(name);
        let export = dir.join("export");
        std::fs::create_dir_all(export.join("data")).unwrap();
        build_static("ioloop", &export)?;
        let sock = dir.join("gw.sock");
        let mut gw = Command::new(gateway())
            .arg("--vhost-user")
            .arg(&sock)
            .arg("--export")
            .arg(format!("{}:/", export.display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("cannot start astraea-gateway");
        assert!(
            wait_for(&sock, TIMEOUT),
            "astraea-gateway did not start listening"
        );
        let part = Command::new(astraea())
            .args(["run", "--gateway"])
            .arg(format!("vhost-user:{}", sock.display()))
            .args(["--", "/ioloop", "/data"])
            .args(mode)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("cannot run astraea");
        // Kill the gateway once the program has done a round of I/O and is
        // in the middle of the next ones.
        let up = wait_for(&export.join("data/started"), TIMEOUT);
        std::thread::sleep(Duration::from_millis(300));
        gw.kill().unwrap();
        let killed = Instant::now();
        gw.wait().unwrap();
        let r = wait_with_timeout(part, TIMEOUT);
        let took = killed.elapsed();
        assert!(up, "the program never started its loop: {r:?}");
        std::fs::remove_dir_all(&dir).unwrap();
        Some((r, took, sock))
    }

    /// The program's last line says an operation failed with EIO, and
    /// `astraea` exited 125 saying what happened and then `after`.
    fn assert_eio_and_message(r: &Run, sock: &Path, after: &str) {
        assert_eq!(r.code, 125, "{r:?}");
        assert!(
            r.stdout
                .lines()
                .any(|l| l.starts_with("round ") && l.ends_with("failed: EIO")),
            "the program did not see EIO: {r:?}"
        );
        let msg = format!(
            "astraea: the gateway at {} closed the connection while the partition was \
             running, so the partition lost its files (its file operations failed with EIO, \
             and the program {after}); see the gateway's log",
            sock.display()
        );
        assert!(r.stderr.contains(&msg), "expected {msg:?}: {r:?}");
    }

    /// A program loops over file writes and reads through a separate
    /// gateway process, which is SIGKILLed: the request in flight and every
    /// later one fail with EIO (the program prints which and exits 3), and
    /// `astraea` ends with status 125 and says what happened, at once.
    #[test]
    fn gateway_killed_mid_run_fails_io_with_eio_and_ends_the_partition() {
        let Some((r, took, sock)) = kill_the_gateway_under_ioloop("gw-kill", &[]) else {
            return;
        };
        assert!(
            took < GATEWAY_LOSS_LIMIT,
            "the partition took {took:?} to end after its gateway died: {r:?}"
        );
        assert_eq!(r.stdout.lines().count(), 1, "{r:?}");
        assert_eio_and_message(&r, &sock, "exited with status 3");
    }

    /// A program that ignores the EIO errors and keeps trying is stopped
    /// two seconds after its gateway died.
    #[test]
    fn program_that_ignores_a_dead_gateway_is_stopped() {
        let Some((r, took, sock)) = kill_the_gateway_under_ioloop("gw-kill-keep", &["keep-going"])
        else {
            return;
        };
        assert!(
            took < GATEWAY_LOSS_LIMIT,
            "the partition took {took:?} to end after its gateway died: {r:?}"
        );
        assert!(
            took >= Duration::from_secs(2),
            "stopped after {took:?}: {r:?}"
        );
        assert_eio_and_message(&r, &sock, "was stopped 2 s later");
    }

    // ---- 2. A file shrinks under its mapping ----

    /// What `truncmap` prints, on the host and in a partition alike.
    fn truncmap_expected(kind: &str, by: &str) -> String {
        format!(
            "{kind} mapping of 40 pages, size changed by {by}\n\
             before: page 0               offset      0: 'a'\n\
             shrunk: page 17              offset  69639: 'r'\n\
             shrunk: last page, in file   offset  81970: 'u'\n\
             shrunk: last page, past end  offset  82120: 0\n\
             shrunk: page 21              offset  86016: SIGBUS code=BUS_ADRERR addr=exact\n\
             shrunk: page 39              offset 163839: SIGBUS code=BUS_ADRERR addr=exact\n\
             grown: page 25               offset 102401: 0\n\
             grown: page 30               offset 122880: SIGBUS code=BUS_ADRERR addr=exact\n"
        )
    }

    /// The host's side of `truncmap DIR … host`: shrinks and grows the file
    /// when the program asks.
    fn resize_from_host(dir: PathBuf) -> std::thread::JoinHandle<()> {
        std::thread::spawn(move || {
            for (n, size) in [(1, 20 * 4096 + 100), (2, 30 * 4096)] {
                if !wait_for(&dir.join(format!("ready.{n}")), TIMEOUT) {
                    return;
                }
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(dir.join("t.bin"))
                    .unwrap()
                    .set_len(size)
                    .unwrap();
                std::fs::write(dir.join(format!("go.{n}")), b"").unwrap();
            }
        })
    }

    fn truncated_under_mapping(kind: &str, by: &str) {
        if !kvm_available() {
            return;
        }
        let dir = temp_dir(&format!("truncmap-{kind}-{by}"));
        let Some(_) = build_static("truncmap", &dir) else {
            return;
        };
        let env = [("LC_ALL", "C")];
        let mut runs = Vec::new();
        for which in ["host", "partition"] {
            let data = dir.join(format!("data-{which}"));
            std::fs::create_dir_all(&data).unwrap();
            let helper = (by == "host").then(|| resize_from_host(data.clone()));
            let args = ["./truncmap", data.to_str().unwrap(), kind, by];
            let r = if which == "host" {
                host_in(&dir, &args, &env, TIMEOUT)
            } else {
                astraea_in(&dir, &args, &env, TIMEOUT)
            };
            if let Some(h) = helper {
                h.join().unwrap();
            }
            runs.push(r);
        }
        let by_whom = if by == "self" {
            "the program"
        } else {
            "the host"
        };
        let want = truncmap_expected(kind, by_whom);
        let (host, part) = (&runs[0], &runs[1]);
        assert_eq!(
            (host.code, host.stdout.as_str()),
            (0, want.as_str()),
            "on the host: {host:?}"
        );
        assert_eq!(
            (part.code, part.stdout.as_str()),
            (0, want.as_str()),
            "in a partition (stderr: {})",
            part.stderr
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn shared_mapping_of_a_file_the_program_truncates() {
        truncated_under_mapping("shared", "self");
    }

    #[test]
    fn private_mapping_of_a_file_the_program_truncates() {
        truncated_under_mapping("private", "self");
    }

    #[test]
    fn shared_mapping_of_a_file_the_host_truncates() {
        truncated_under_mapping("shared", "host");
    }

    #[test]
    fn private_mapping_of_a_file_the_host_truncates() {
        truncated_under_mapping("private", "host");
    }

    // ---- 3. A full file system ----

    /// A 1 MiB tmpfs, unmounted (and its directory removed) when dropped.
    struct SmallFs {
        dir: PathBuf,
    }

    impl SmallFs {
        fn mount(name: &str) -> Option<Self> {
            if !is_root() {
                skip("mounting a small tmpfs needs root");
                return None;
            }
            let dir = temp_dir(name);
            let st = Command::new("mount")
                .args(["-t", "tmpfs", "-o", "size=1m", "astraea-faults"])
                .arg(&dir)
                .status()
                .expect("cannot run mount");
            if !st.success() {
                skip("mount -t tmpfs failed");
                let _ = std::fs::remove_dir(&dir);
                return None;
            }
            Some(Self { dir })
        }

        fn clear(&self) {
            for e in std::fs::read_dir(&self.dir).unwrap() {
                std::fs::remove_file(e.unwrap().path()).unwrap();
            }
        }
    }

    impl Drop for SmallFs {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.dir).status();
            let _ = std::fs::remove_dir(&self.dir);
        }
    }

    /// Checks that the first `n` bytes of `file` are the programs' pattern.
    fn check_pattern(file: &Path, n: usize) {
        let bytes = std::fs::read(file).unwrap();
        assert!(bytes.len() >= n, "{file:?} has {} < {n} bytes", bytes.len());
        for (i, &b) in bytes[..n].iter().enumerate() {
            let want = ((i / 4096 * 7 + i) % 251) as u8;
            assert_eq!(b, want, "{file:?}: byte {i} is {b}, not {want}");
        }
    }

    /// `enospc` writes and fsyncs until the 1 MiB tmpfs is full: the same
    /// output (bytes written, the short write, ENOSPC, fsync and close
    /// still succeeding) on the host and in a partition that has the tmpfs
    /// mounted read-write at /data; the host then finds every synced byte.
    #[test]
    fn c_program_fills_the_file_system_and_sees_enospc() {
        if !kvm_available() {
            return;
        }
        let bin = temp_dir("enospc-bin");
        let Some(_) = build_static("enospc", &bin) else {
            return;
        };
        let Some(fs) = SmallFs::mount("enospc-fs") else {
            return;
        };
        let want = "wrote and synced 1048576 bytes (with a short write)\n\
                    then write failed: ENOSPC\n\
                    fsync: ok\n\
                    close: ok\n";
        let host = host_in(&bin, &["./enospc", fs.dir.to_str().unwrap()], &[], TIMEOUT);
        assert_eq!(
            (host.code, host.stdout.as_str()),
            (0, want),
            "on the host: {host:?}"
        );
        check_pattern(&fs.dir.join("fill.bin"), 1 << 20);
        fs.clear();

        let r = astraea_cmd_timeout(
            &[
                "run",
                "--mount",
                &format!("{}:/prog:ro", bin.display()),
                "--mount",
                &format!("{}:/data", fs.dir.display()),
                "--",
                "/prog/enospc",
                "/data",
            ],
            TIMEOUT,
        );
        assert_eq!(
            (r.code, r.stdout.as_str()),
            (0, want),
            "in a partition: {r:?}"
        );
        check_pattern(&fs.dir.join("fill.bin"), 1 << 20);
        drop(fs);
        std::fs::remove_dir_all(&bin).unwrap();
    }

    fn astraea_cmd_timeout(args: &[&str], timeout: Duration) -> Run {
        let mut c = Command::new(astraea());
        c.args(args);
        run_with_timeout(&mut c, timeout)
    }

    /// Java writes with FileOutputStream and getFD().sync() until the
    /// tmpfs is full: an IOException "No space left on device" after the
    /// same number of synced bytes as on the host, for each JDK, and the
    /// host finds those bytes.
    #[test]
    fn java_fills_the_file_system_and_gets_an_ioexception() {
        if !kvm_available() {
            return;
        }
        let jdks: Vec<PathBuf> = [
            "/usr/lib/jvm/java-17-openjdk-amd64",
            "/usr/lib/jvm/temurin-25-jdk-amd64",
        ]
        .into_iter()
        .map(PathBuf::from)
        .filter(|j| j.join("bin/java").exists())
        .collect();
        let Some(javac) = jdks
            .iter()
            .map(|j| j.join("bin/javac"))
            .find(|j| j.exists())
        else {
            skip("no JDK with javac in /usr/lib/jvm");
            return;
        };
        let classes = temp_dir("filldisk-classes");
        let st = Command::new(&javac)
            .args(["--release", "17", "-d"])
            .arg(&classes)
            .arg(progs().join("FillDisk.java"))
            .status()
            .unwrap();
        assert!(st.success(), "javac failed");
        let Some(fs) = SmallFs::mount("filldisk-fs") else {
            return;
        };
        for jdk in &jdks {
            let java = jdk.join("bin/java");
            let mut c = Command::new(&java);
            c.arg("-cp").arg(&classes).arg("FillDisk").arg(&fs.dir);
            let host = run_with_timeout(&mut c, TIMEOUT);
            assert_eq!(host.code, 0, "on the host: {host:?}");
            let synced = synced_bytes(&host.stdout);
            assert!(
                host.stdout
                    .ends_with(" bytes, then IOException: No space left on device\nclosed\n"),
                "on the host: {host:?}"
            );
            check_pattern(&fs.dir.join("fill-java.bin"), synced);
            fs.clear();

            let r = astraea_cmd_timeout(
                &[
                    "run",
                    "--mem",
                    "1G",
                    "--mount",
                    "/:/:ro",
                    "--mount",
                    &format!("{}:/data", fs.dir.display()),
                    "--",
                    java.to_str().unwrap(),
                    "-cp",
                    classes.to_str().unwrap(),
                    "FillDisk",
                    "/data",
                ],
                TIMEOUT,
            );
            assert_eq!(
                (r.code, r.stdout.as_str()),
                (0, host.stdout.as_str()),
                "{java:?} in a partition: {r:?}"
            );
            eprintln!("{java:?}: {}", r.stdout.trim_end().replace('\n', " / "));
            check_pattern(&fs.dir.join("fill-java.bin"), synced);
            fs.clear();
        }
        drop(fs);
        std::fs::remove_dir_all(&classes).unwrap();
    }

    fn synced_bytes(stdout: &str) -> usize {
        stdout
            .strip_prefix("synced ")
            .and_then(|s| s.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no byte count in {stdout:?}"))
    }

    // ---- 4. The host cannot give what the partition needs ----

    fn assert_setup_error(r: &Run, needles: &[&str]) {
        assert_eq!(r.code, 125, "{r:?}");
        assert!(r.stderr.starts_with("astraea: "), "{r:?}");
        assert_eq!(r.stderr.trim_end().lines().count(), 1, "one line: {r:?}");
        for n in needles {
            assert!(r.stderr.contains(n), "expected {n:?}: {r:?}");
        }
    }

    /// RAM plus swap of this machine, from /proc/meminfo.
    fn host_memory() -> u64 {
        let info = std::fs::read_to_string("/proc/meminfo").unwrap();
        ["MemTotal:", "SwapTotal:"]
            .iter()
            .map(|k| {
                info.lines()
                    .find_map(|l| l.strip_prefix(k))
                    .and_then(|v| v.split_whitespace().next())
                    .and_then(|v| v.parse::<u64>().ok())
                    .unwrap_or(0)
                    * 1024
            })
            .sum()
    }

    #[test]
    fn a_terabyte_of_memory_is_refused() {
        let r = astraea_cmd(&["run", "--mem", "1T"]);
        assert_setup_error(&r, &["--mem 1048576 MiB is too large"]);
    }

    /// More memory than the machine has (but within what the VMM supports)
    /// is refused before the partition boots, not found out when the
    /// program touches it and the host kills the VMM.
    #[test]
    fn more_memory_than_the_machine_has_is_refused() {
        let have = host_memory();
        let ask = (have >> 30) + 2;
        if ask > 64 {
            skip("this machine has more memory than the largest partition");
            return;
        }
        let r = astraea_cmd(&["run", "--mem", &format!("{ask}G")]);
        assert_setup_error(&r, &["more than this machine has", "smaller --mem"]);
    }

    /// Guest memory that cannot be mapped (an address-space limit here)
    /// is a clear error too.
    #[test]
    fn memory_that_cannot_be_mapped_is_a_clear_error() {
        let r = run_with_timeout(
            Command::new("sh")
                .args(["-c", "ulimit -v 1048576 && exec \"$0\" run --mem 2G"])
                .arg(astraea()),
            TIMEOUT,
        );
        assert_setup_error(&r, &["cannot map 2048 MiB of guest memory", "--mem"]);
    }

    /// A machine whose /dev has no kvm node (a mount namespace with an
    /// empty /dev): exit 125 and what to do.
    #[test]
    fn hidden_dev_kvm_says_what_to_do() {
        if !is_root() || Command::new("unshare").arg("--version").output().is_err() {
            skip("hiding /dev/kvm needs root and unshare");
            return;
        }
        let r = run_with_timeout(
            Command::new("unshare")
                .args([
                    "-m",
                    "sh",
                    "-c",
                    "mount -t tmpfs none /dev && exec \"$0\" run",
                ])
                .arg(astraea()),
            TIMEOUT,
        );
        assert_setup_error(&r, &["/dev/kvm does not exist", "modprobe"]);
    }

    /// A device node that is not KVM (a busy or wrong device): the VMM
    /// says so instead of failing an ioctl.
    #[test]
    fn a_device_that_is_not_kvm_is_named() {
        let r = astraea_cmd_env(&["run"], &[("ASTRAEA_KVM_DEVICE", "/dev/null")]);
        assert_setup_error(&r, &["/dev/null is not a KVM device"]);
    }
}
