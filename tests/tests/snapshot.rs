//! Whole-partition snapshots (issue 16): `astraea run --snapshot FILE`
//! writes one when the program reads `/dev/astraea-snapshot`, and
//! `astraea run --from FILE` starts partitions that go on from there.
//!
//! * `tests/progs/snapshot.c` holds state of every kind across the
//!   snapshot (open files, a thread asleep on a futex, bytes in a pipe,
//!   sparse memory, the SSE rounding mode, clocks) and checks each piece in
//!   the partition it ran in and in three partitions restored at once from
//!   its snapshot; a file it changed after the snapshot is reported, not
//!   used.
//! * `tests/progs/Snapshot.java`: a JVM (OpenJDK 17, Temurin 25) goes on
//!   after a restore, loading classes, starting threads, reading a file.
//! * `astraea run --warm`: the first run of a `java -cp CP Main` command
//!   records the classes it loads, the second snapshots it before `Main`
//!   loads, with those classes loaded; later runs start from there with
//!   their own main class and arguments (`WarmGreet`, `WarmOther`), exit
//!   statuses and exceptions pass through, other JVM options start over,
//!   and commands it cannot take are refused clearly.
//! * Sockets: a listener and a connection across the snapshot (`snapshot.c
//!   net`): the connection goes on in the partition snapshotted and has
//!   ended in a restored one; the listener listens again, at its port or
//!   (`--publish`) elsewhere while its port is taken; a cloned JVM server
//!   (`CloneServe`) answers with the state it had.
//! * Refusals the program sees (no `--snapshot`, a socket write waiting at
//!   the gateway, files from a gateway process) and bad snapshot files
//!   (clear errors, exit status 125).
//!
//! Without `/dev/kvm`, gcc or a JDK a test says so loudly and passes.

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};
    use std::process::Command;
    use std::time::Duration;

    use astraea_tests::*;

    const TIMEOUT: Duration = Duration::from_secs(300);

    /// A fresh directory under `/tmp` (which partitions see read-write).
    fn tmp_dir(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("astraea-snapshot-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// `tests/progs/snapshot.c` built (dynamically linked: its libraries'
    /// files are open across the snapshot too) into `dir`.
    fn build_c(dir: &Path) -> Option<PathBuf> {
        if Command::new("gcc").arg("--version").output().is_err() {
            eprintln!("\n*** SKIPPED: gcc is not installed; this test did not run. ***\n");
            return None;
        }
        let out = dir.join("snapshot");
        let st = Command::new("gcc")
            .args(["-O2", "-Wall", "-pthread", "-o"])
            .arg(&out)
            .arg(workspace().join("tests/progs/snapshot.c"))
            .status()
            .unwrap();
        assert!(st.success(), "gcc failed for snapshot.c");
        Some(out)
    }

    /// A `--warm` run: (JVM options, main class and arguments, status,
    /// stdout, a line of stderr).
    type WarmCase<'a> = (&'a [&'a str], &'a [&'a str], i32, &'a str, &'a str);

    /// Compiles `tests/progs/` sources into `dir` with JDK 17's javac;
    /// false (loudly) without one.
    fn javac(dir: &Path, sources: &[&str]) -> bool {
        let javac = Path::new("/usr/lib/jvm/java-17-openjdk-amd64/bin/javac");
        if !javac.exists() {
            eprintln!("\n*** SKIPPED: no JDK 17 javac; this test did not run. ***\n");
            return false;
        }
        let st = Command::new(javac)
            .args(["--release", "17", "-d"])
            .arg(dir)
            .args(
                sources
                    .iter()
                    .map(|s| workspace().join("tests/progs").join(s)),
            )
            .status()
            .unwrap();
        assert!(st.success(), "javac failed for {sources:?}");
        true
    }

    /// `/dev/kvm`, a fresh directory `name` and `snapshot.c` built in it;
    /// `None` (said loudly) without KVM or gcc.
    fn c_setup(name: &str) -> Option<(PathBuf, PathBuf)> {
        if !kvm_available() {
            return None;
        }
        let dir = tmp_dir(name);
        let prog = build_c(&dir)?;
        Some((dir, prog))
    }

    fn astraea(args: &[&str]) -> Run {
        let mut c = Command::new(astraea_tests::astraea());
        c.args(args);
        run_with_timeout(&mut c, TIMEOUT)
    }

    /// What `snapshot.c DIR` prints: `tests/progs/snapshot-{taken,restored}.stdout`.
    fn expected(outcome: &str) -> String {
        std::fs::read_to_string(workspace().join(format!("tests/progs/snapshot-{outcome}.stdout")))
            .unwrap()
    }

    #[test]
    fn a_program_goes_on_in_every_partition_restored_from_its_snapshot() {
        let Some((dir, prog)) = c_setup("c") else {
            return;
        };
        std::fs::write(dir.join("ro"), "0123456789abcdef").unwrap();
        let snap = dir.join("c.snap");
        let r = astraea(&[
            "run",
            "--snapshot",
            snap.to_str().unwrap(),
            "--",
            prog.to_str().unwrap(),
            dir.to_str().unwrap(),
        ]);
        assert_eq!(r.code, 0, "{r:?}");
        assert_eq!(r.stdout, expected("taken"), "{r:?}");
        // Zero pages are holes: the file holds far less than the 512 MiB
        // partition.
        use std::os::unix::fs::MetadataExt;
        let md = std::fs::metadata(&snap).unwrap();
        assert!(md.len() > 512 << 20, "{}", md.len());
        assert!(
            md.blocks() * 512 < 64 << 20,
            "{} bytes stored",
            md.blocks() * 512
        );

        // Three at once, from the one file.
        let runs: Vec<_> = (0..3)
            .map(|_| {
                let snap = snap.clone();
                std::thread::spawn(move || astraea(&["run", "--from", snap.to_str().unwrap()]))
            })
            .collect();
        for h in runs {
            let r = h.join().unwrap();
            assert_eq!(r.code, 42, "{r:?}");
            assert_eq!(r.stdout, expected("restored"), "{r:?}");
            assert!(
                r.stderr.contains("changed since the snapshot"),
                "the changed file is not reported: {r:?}"
            );
        }
        // The restored partitions wrote nothing; the files are the original's.
        assert_eq!(
            std::fs::read_to_string(dir.join("written")).unwrap(),
            "before\n"
        );
        assert_eq!(
            std::fs::read_to_string(dir.join("changed")).unwrap(),
            "changed\n"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_running_partition_is_snapshotted_from_outside() {
        let Some((dir, prog)) = c_setup("outside") else {
            return;
        };
        let mut child = spawn_piped(Command::new(astraea_tests::astraea()).args([
            "run",
            "--",
            prog.to_str().unwrap(),
            "wait",
            dir.to_str().unwrap(),
        ]));
        let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        std::io::BufRead::read_line(&mut out, &mut line).unwrap();
        assert_eq!(line, "ready\n");
        let snap = dir.join("outside.snap");
        let id = child.id().to_string();
        let r = astraea(&["snapshot", "--partition", &id, snap.to_str().unwrap()]);
        assert_eq!(r.code, 0, "{r:?}");
        assert!(r.stdout.starts_with("snapshot with "), "{r:?}");
        // A file the VMM cannot create: the requester is told.
        let r = astraea(&["snapshot", "--partition", &id, "/nonexistent-dir/x.snap"]);
        assert_eq!(r.code, 1, "{r:?}");
        assert!(r.stderr.contains("did not take a snapshot"), "{r:?}");
        // A copy restored from it waits too; it is snapshotted in turn (only
        // what it touched and its file's data are read: its VMM does not
        // fault in all of its RAM).
        let copy = spawn_piped(Command::new(astraea_tests::astraea()).args([
            "run",
            "--from",
            snap.to_str().unwrap(),
        ]));
        let snap2 = dir.join("again.snap");
        let copy_id = copy.id().to_string();
        let r = loop {
            let r = astraea(&["snapshot", "--partition", &copy_id, snap2.to_str().unwrap()]);
            // Its control socket appears once it is set up.
            if r.code != 3 {
                break r;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        assert_eq!(r.code, 0, "{r:?}");
        let rss_kib: u64 = std::fs::read_to_string(format!("/proc/{copy_id}/status"))
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap();
        assert!(rss_kib < 256 << 10, "the copy's VMM holds {rss_kib} KiB");
        std::fs::write(dir.join("go"), "").unwrap();
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
        let status = child.wait().unwrap();
        assert_eq!(
            (status.code(), rest.as_str()),
            (Some(0), "go: polled a while\n")
        );
        let copy_out = copy.wait_with_output().unwrap();
        assert_eq!(
            (
                copy_out.status.code(),
                String::from_utf8_lossy(&copy_out.stdout).as_ref()
            ),
            (Some(0), "go: polled a while\n")
        );
        // Restored from either, the program finds the file, and ends.
        for s in [&snap, &snap2] {
            let r = astraea(&["run", "--from", s.to_str().unwrap()]);
            assert_eq!(
                (r.code, r.stdout.as_str()),
                (0, "go: polled a while\n"),
                "{r:?}"
            );
        }
        let r = astraea(&["snapshot", "--partition", &id, snap.to_str().unwrap()]);
        assert_eq!(r.code, 3, "a partition that has ended: {r:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn refused_snapshots_are_errors_the_program_sees() {
        let Some((dir, prog)) = c_setup("refused") else {
            return;
        };
        let prog = prog.to_str().unwrap();
        // Nowhere to write one.
        let r = astraea(&["run", "--", prog, "plain"]);
        assert_eq!(
            (r.code, r.stdout.as_str()),
            (0, "snapshot: EOPNOTSUPP\n"),
            "{r:?}"
        );
        assert!(r.stderr.contains("no --snapshot FILE"), "{r:?}");
        // A connection's write waits at the gateway: no quiet moment.
        let snap = dir.join("busy.snap");
        let r = astraea(&[
            "run",
            "--snapshot",
            snap.to_str().unwrap(),
            "--",
            prog,
            "busy",
        ]);
        assert_eq!(
            (r.code, r.stdout.as_str()),
            (0, "snapshot: EBUSY\n"),
            "{r:?}"
        );
        assert!(!snap.exists(), "a refused snapshot left a file");
        // Files from a gateway process: its state is not ours to save.
        let sock = dir.join("gw.sock");
        let mut gw = spawn_piped(Command::new(gateway()).args([
            "--vhost-user",
            sock.to_str().unwrap(),
            "--export",
            "/:/:ro",
        ]));
        let t = std::time::Instant::now();
        while !sock.exists() && t.elapsed() < TIMEOUT {
            std::thread::sleep(Duration::from_millis(20));
        }
        let via = format!("vhost-user:{}", sock.display());
        let r = astraea(&[
            "run",
            "--gateway",
            &via,
            "--snapshot",
            snap.to_str().unwrap(),
            "--",
            prog,
            "plain",
        ]);
        let _ = gw.kill();
        let _ = gw.wait();
        assert_eq!(
            (r.code, r.stdout.as_str()),
            (0, "snapshot: EOPNOTSUPP\n"),
            "{r:?}"
        );
        assert!(r.stderr.contains("another 9P server"), "{r:?}");
        assert!(!snap.exists(), "a refused snapshot left a file");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A free TCP port of the loopback (free when this returns).
    fn free_port() -> u16 {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    }

    #[test]
    fn a_listener_goes_on_in_restored_partitions_and_connections_end() {
        let Some((dir, prog)) = c_setup("net") else {
            return;
        };
        let prog = prog.to_str().unwrap();
        let port = free_port().to_string();
        let snap = dir.join("net.snap");
        let snap_s = snap.to_str().unwrap();
        // The reads and the listen waiting at the gateway are interrupted
        // for the snapshot and posted again: the connection goes on.
        let r = astraea(&["run", "--snapshot", snap_s, "--", prog, "net", &port]);
        assert_eq!(
            (r.code, r.stdout.as_str()),
            (
                0,
                "net: taken\nnet: old connection carries bytes both ways\nnet: new connection works\n"
            ),
            "{r:?}"
        );
        let restored = "net: restored\nnet: old connection ended\nnet: new connection works\n";
        // The port is free again: the restored listener takes it.
        let r = astraea(&["run", "--from", snap_s]);
        assert_eq!((r.code, r.stdout.as_str()), (0, restored), "{r:?}");
        // Taken (as by the server snapshotted, still running): the restore
        // says how to give the copy a port of its own, and does not run it.
        let taken = std::net::TcpListener::bind(format!("127.0.0.1:{port}")).unwrap();
        let r = astraea(&["run", "--from", snap_s]);
        assert_eq!(r.code, 125, "{r:?}");
        assert!(
            r.stderr.contains(&format!("--publish {port}=PORT")) && r.stdout.is_empty(),
            "{r:?}"
        );
        // Two copies at once, each published at a port of its own; each
        // reaches its own listener through the loopback port it knows.
        let publish = format!("{port}=0");
        let copies: Vec<_> = (0..2)
            .map(|_| {
                spawn_piped(Command::new(astraea_tests::astraea()).args([
                    "run",
                    "--from",
                    snap_s,
                    "--publish",
                    &publish,
                ]))
            })
            .collect();
        for c in copies {
            let out = c.wait_with_output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(
                (
                    out.status.code(),
                    String::from_utf8_lossy(&out.stdout).as_ref()
                ),
                (Some(0), restored),
                "{stderr}"
            );
            assert!(
                stderr.contains(&format!("TCP port {port} is published at 127.0.0.1:")),
                "{stderr}"
            );
        }
        // A partition that boots publishes the same way (no snapshot here:
        // the program's read fails, the sockets work as before).
        let r = astraea(&["run", "--publish", &publish, "--", prog, "net", &port]);
        assert_eq!(
            (r.code, r.stdout.as_str()),
            (
                0,
                "net: EOPNOTSUPP\nnet: old connection carries bytes both ways\nnet: new connection works\n"
            ),
            "{r:?}"
        );
        assert!(
            r.stderr
                .contains(&format!("TCP port {port} is published at 127.0.0.1:")),
            "{r:?}"
        );
        drop(taken);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The host port a restored copy's published port went to, from its
    /// stderr line (`astraea: the partition's TCP port P is published at
    /// ADDR`).
    fn published_port(child: &mut std::process::Child, port: u16) -> u16 {
        use std::io::BufRead;
        let err = std::io::BufReader::new(child.stderr.take().unwrap());
        let want = format!("TCP port {port} is published at 127.0.0.1:");
        let mut seen = Vec::new();
        for line in err.lines() {
            let line = line.unwrap();
            if let Some(p) = line
                .split_once(&want)
                .and_then(|(_, p)| p.trim().parse().ok())
            {
                return p;
            }
            seen.push(line);
        }
        panic!("no published port; stderr: {seen:#?}");
    }

    /// The body of the answer to a GET of `/` at `port`.
    fn served(port: u16) -> String {
        let r = http_get(port, "/").unwrap_or_else(|e| format!("({e})"));
        r.rsplit_once("\r\n\r\n")
            .map_or(r.clone(), |(_, b)| b.to_string())
    }

    #[test]
    fn a_warmed_up_jvm_server_is_cloned() {
        if !kvm_available() {
            return;
        }
        let dir = tmp_dir("clone");
        if !javac(&dir, &["CloneServe.java"]) {
            return;
        }
        let jdks = [
            ("17", "/usr/lib/jvm/java-17-openjdk-amd64"),
            ("25", "/usr/lib/jvm/temurin-25-jdk-amd64"),
        ];
        for (name, home) in jdks {
            let java = Path::new(home).join("bin/java");
            if !java.exists() {
                eprintln!("\n*** SKIPPED: no JDK {name} at {home}; its case did not run. ***\n");
                continue;
            }
            let port_file = dir.join(format!("port-{name}"));
            let server = spawn_piped(
                Command::new(astraea_tests::astraea())
                    .args(["run", "--mem", "1G", "--"])
                    .arg(&java)
                    .arg("-cp")
                    .arg(&dir)
                    .arg("CloneServe")
                    .arg(&port_file),
            );
            let port = wait_for_port(&port_file, TIMEOUT, "CloneServe");
            // Warmed up: its handler has run (and been compiled) a while.
            for i in 1..=300 {
                assert_eq!(served(port), format!("served {i}\n"), "JDK {name}");
            }
            let snap = dir.join(format!("server-{name}.snap"));
            let r = astraea(&[
                "snapshot",
                "--partition",
                &server.id().to_string(),
                snap.to_str().unwrap(),
            ]);
            assert_eq!(r.code, 0, "JDK {name}: {r:?}");
            // The server goes on; each clone goes on from the snapshot, at
            // a port of its own.
            assert_eq!(served(port), "served 301\n", "JDK {name}");
            let publish = format!("{port}=0");
            let mut clones: Vec<_> = (0..2)
                .map(|_| {
                    spawn_piped(Command::new(astraea_tests::astraea()).args([
                        "run",
                        "--from",
                        snap.to_str().unwrap(),
                        "--publish",
                        &publish,
                    ]))
                })
                .collect();
            for c in &mut clones {
                let at = published_port(c, port);
                assert_ne!(at, port);
                assert_eq!(served(at), "served 301\n", "JDK {name}");
                assert_eq!(served(at), "served 302\n", "JDK {name}");
                eprintln!("JDK {name}: a clone of the server on port {port} answered on port {at}");
            }
            assert_eq!(served(port), "served 302\n", "JDK {name}");
            for mut c in clones.into_iter().chain([server]) {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bad_snapshot_files_are_refused_with_what_is_wrong() {
        if !kvm_available() {
            return;
        }
        let dir = tmp_dir("bad");
        let check = |file: &Path, says: &str| {
            let r = astraea(&["run", "--from", file.to_str().unwrap()]);
            assert_eq!(r.code, 125, "{r:?}");
            assert!(
                r.stderr.contains("cannot restore from the snapshot") && r.stderr.contains(says),
                "{says:?} not said: {r:?}"
            );
        };
        check(&dir.join("missing"), "No such file");
        std::fs::write(dir.join("garbage"), vec![7u8; 10_000]).unwrap();
        check(&dir.join("garbage"), "not an Astraea snapshot");
        // A real snapshot, cut short.
        let Some(prog) = build_c(&dir) else {
            return;
        };
        let snap = dir.join("real.snap");
        let r = astraea(&[
            "run",
            "--snapshot",
            snap.to_str().unwrap(),
            "--",
            prog.to_str().unwrap(),
            "plain",
        ]);
        assert_eq!(r.stdout, "snapshot: taken\n", "{r:?}");
        let f = std::fs::OpenOptions::new().write(true).open(&snap).unwrap();
        f.set_len(1 << 20).unwrap();
        check(&snap, "fewer than");
        // The program and its options come from the snapshot.
        let r = astraea(&["run", "--from", snap.to_str().unwrap(), "--", "/bin/true"]);
        assert_eq!(r.code, 2, "{r:?}");
        assert!(r.stderr.contains("cannot be used with"), "{r:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_jvm_goes_on_after_a_restore() {
        if !kvm_available() {
            return;
        }
        let dir = tmp_dir("java");
        if !javac(&dir, &["Snapshot.java"]) {
            return;
        }
        std::fs::write(dir.join("note.txt"), "a note\n").unwrap();
        for (name, home) in [
            ("17", "/usr/lib/jvm/java-17-openjdk-amd64"),
            ("25", "/usr/lib/jvm/temurin-25-jdk-amd64"),
        ] {
            let java = format!("{home}/bin/java");
            if !Path::new(&java).exists() {
                eprintln!("\n*** SKIPPED: no JDK {name} at {home}. ***\n");
                continue;
            }
            let snap = dir.join(format!("jdk{name}.snap"));
            let note = dir.join("note.txt");
            let r = astraea(&[
                "run",
                "--mem",
                "1G",
                "--snapshot",
                snap.to_str().unwrap(),
                "--",
                &java,
                "-cp",
                dir.to_str().unwrap(),
                "Snapshot",
                note.to_str().unwrap(),
            ]);
            let tail =
                "classes: 100 k0 k99\nthreads: 4999950000\nfile: a note\nclocks: true true\n";
            assert_eq!(r.code, 0, "JDK {name}: {r:?}");
            assert_eq!(
                r.stdout,
                format!("before: 499500\nsnapshot: taken\n{tail}"),
                "JDK {name}: {r:?}"
            );
            for _ in 0..2 {
                let r = astraea(&["run", "--from", snap.to_str().unwrap()]);
                assert_eq!(r.code, 42, "JDK {name}: {r:?}");
                assert_eq!(
                    r.stdout,
                    format!("snapshot: restored\n{tail}"),
                    "JDK {name}: {r:?}"
                );
                assert!(!r.stderr.contains("not restored"), "JDK {name}: {r:?}");
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn warm_runs_start_from_the_first_runs_snapshot() {
        if !kvm_available() {
            return;
        }
        let dir = tmp_dir("warm");
        if !javac(&dir, &["WarmGreet.java", "WarmOther.java"]) {
            return;
        }
        // A cache of the test's own (also part of every key: the environment).
        let cache = dir.join("cache");
        let cp = dir.to_str().unwrap();
        let warm = |java: &str, extra: &[&str], main: &[&str]| {
            let mut c = Command::new(astraea_tests::astraea());
            c.args(["run", "--log", "info", "--warm", "--", java])
                .args(extra)
                .args(["-cp", cp])
                .args(main)
                .env("XDG_CACHE_HOME", &cache)
                .current_dir(&dir);
            run_with_timeout(&mut c, TIMEOUT)
        };
        let snaps = || {
            std::fs::read_dir(cache.join("astraea/warm"))
                .map(|d| {
                    d.flatten()
                        .filter(|e| e.path().extension().is_some_and(|x| x == "snap"))
                        .count()
                })
                .unwrap_or(0)
        };
        let records = || -> Vec<std::path::PathBuf> {
            std::fs::read_dir(cache.join("astraea/warm"))
                .map(|d| {
                    d.flatten()
                        .map(|e| e.path())
                        .filter(|p| p.to_string_lossy().ends_with(".snap.ws"))
                        .collect()
                })
                .unwrap_or_default()
        };
        for (name, home) in [
            ("17", "/usr/lib/jvm/java-17-openjdk-amd64"),
            ("25", "/usr/lib/jvm/temurin-25-jdk-amd64"),
        ] {
            let java = format!("{home}/bin/java");
            if !Path::new(&java).exists() {
                eprintln!("\n*** SKIPPED: no JDK {name} at {home}. ***\n");
                continue;
            }
            let before = snaps();
            let ws_before = records();
            const FIRST: &str = "first run of this command";
            const SECOND: &str = "taking its snapshot";
            const FROM: &str = "starting from the snapshot";
            // (JVM options, main class and arguments, status, stdout, a
            // line of stderr): the first run records the classes its JVM
            // loads, the second snapshots a JVM that has loaded them, the
            // later ones start from that snapshot; other JVM options start
            // over.
            let cases: [WarmCase; 7] = [
                (
                    &[],
                    &["WarmGreet", "first", "run"],
                    0,
                    "greet: first run\n",
                    FIRST,
                ),
                (
                    &[],
                    &["WarmOther", "second"],
                    0,
                    "other: 1 arguments\n",
                    SECOND,
                ),
                (
                    &[],
                    &["WarmGreet", "third", "run", "ü"],
                    0,
                    "greet: third run ü\n",
                    FROM,
                ),
                (&[], &["WarmGreet", "exit", "7"], 7, "greet: exit 7\n", FROM),
                (
                    &[],
                    &["WarmOther", "a", "b", "c"],
                    0,
                    "other: 3 arguments\n",
                    FROM,
                ),
                (
                    &[],
                    &["WarmOther", "throw"],
                    1,
                    "",
                    "java.lang.IllegalStateException: asked to throw",
                ),
                (
                    &["-Xmx96m"],
                    &["WarmGreet", "small"],
                    0,
                    "greet: small\n",
                    FIRST,
                ),
            ];
            for (opts, main, code, out, err) in cases {
                let r = warm(&java, opts, main);
                assert_eq!(
                    (r.code, r.stdout.as_str()),
                    (code, out),
                    "JDK {name}: {r:?}"
                );
                assert!(
                    r.stderr.contains(err),
                    "JDK {name}: {err:?} not said: {r:?}"
                );
                // The first run does not ask for a snapshot (it used to,
                // and said it could not have one).
                assert!(
                    !r.stderr.contains("no warm snapshot") && !r.stderr.contains("ERROR"),
                    "JDK {name}: {r:?}"
                );
            }
            assert_eq!(snaps(), before + 1, "JDK {name}");
            // The first restore recorded the pages it touched beside the
            // snapshot; later ones populate them ahead. A record that is
            // not one is ignored and taken again; the shell's `_` and the
            // sampler's switch do not make another snapshot.
            let ws: Vec<_> = records()
                .into_iter()
                .filter(|w| !ws_before.contains(w))
                .collect();
            assert_eq!(ws.len(), 1, "JDK {name}: {ws:?}");
            for w in &ws {
                assert!(std::fs::read(w).unwrap().starts_with(b"ASTRAEA-WS-v1\n"));
                std::fs::write(w, b"ASTRAEA-WS-v1\nnot a record").unwrap();
            }
            let r = {
                let mut c = Command::new(astraea_tests::astraea());
                c.args(["run", "--log", "info", "--warm", "--", &java, "-cp", cp])
                    .args(["WarmGreet", "again"])
                    .env("XDG_CACHE_HOME", &cache)
                    .env("_", "/usr/bin/env")
                    .env("ASTRAEA_SAMPLE", "/dev/null")
                    .current_dir(&dir);
                run_with_timeout(&mut c, TIMEOUT)
            };
            assert_eq!(
                (r.code, r.stdout.as_str()),
                (0, "greet: again\n"),
                "JDK {name}: {r:?}"
            );
            assert!(r.stderr.contains(FROM), "JDK {name}: {r:?}");
            for w in &ws {
                assert!(
                    std::fs::read(w).unwrap().len() > 40,
                    "JDK {name}: {} not taken again",
                    w.display()
                );
            }
            // A JVM started under other resource limits is another JVM:
            // it does not start from a snapshot taken under these (it
            // would see their descriptor limit).
            let nofile = |limit: Option<u32>| {
                let mut c = Command::new("/bin/sh");
                let ulimit = limit
                    .map(|n| format!("ulimit -n {n} && "))
                    .unwrap_or_default();
                c.args([
                    "-c",
                    &format!("{ulimit}exec \"$0\" run --log info --warm -- \"$1\" -cp \"$2\" WarmGreet nofile"),
                    astraea_tests::astraea().to_str().unwrap(),
                    &java,
                    cp,
                ])
                .env("XDG_CACHE_HOME", &cache)
                .current_dir(&dir);
                run_with_timeout(&mut c, TIMEOUT)
            };
            // Through the shell (its environment is another key): record,
            // snapshot, then a restore, under the test's limits and then
            // under 512 descriptors, which starts over.
            for limit in [None, Some(512)] {
                for phase in [FIRST, SECOND, FROM] {
                    let r = nofile(limit);
                    assert_eq!(r.code, 0, "JDK {name}: {r:?}");
                    assert!(
                        r.stderr.contains(phase),
                        "JDK {name}, {limit:?}: {phase:?} not said: {r:?}"
                    );
                    if let Some(n) = limit {
                        assert_eq!(
                            r.stdout,
                            format!("greet: nofile\nnofile {n}\n"),
                            "JDK {name}: {r:?}"
                        );
                    }
                }
            }
        }
        // What --warm cannot start.
        let r = astraea(&["run", "--warm", "--", "/bin/true"]);
        assert_eq!(r.code, 125, "{r:?}");
        assert!(r.stderr.contains("--warm runs `java"), "{r:?}");
        let r = astraea(&["run", "--warm", "--", "java", "-jar", "app.jar"]);
        assert_eq!(r.code, 125, "{r:?}");
        assert!(r.stderr.contains("-jar is not supported"), "{r:?}");
        // A --warm snapshot is not for --from.
        if let Some(snap) = std::fs::read_dir(cache.join("astraea/warm"))
            .ok()
            .and_then(|d| {
                d.flatten()
                    .map(|e| e.path())
                    .find(|p| p.extension().is_some_and(|x| x == "snap"))
            })
        {
            let r = astraea(&["run", "--from", snap.to_str().unwrap()]);
            assert_eq!(r.code, 125, "{r:?}");
            assert!(r.stderr.contains("made by `astraea run --warm`"), "{r:?}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
