//! Many partitions at once on a small machine: the register torture program
//! (`tests/progs/torture.c`), the socket program (`tests/progs/sockets.c`,
//! every partition's sockets through its own gateway to the one host
//! network), Unix sockets, memory-only files and signal waits, and a
//! JIT-heavy Java program, each run in
//! several partitions side by side, every output compared exactly with the
//! host's. CI runs a bounded round; `./x stress` runs many
//! (`ASTRAEA_STRESS_ROUNDS`, `ASTRAEA_STRESS_PARALLEL`).

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};
    use std::process::Command;
    use std::time::{Duration, Instant};

    use astraea_tests::*;

    const JDKS: [(&str, &str); 2] = [
        ("17", "/usr/lib/jvm/java-17-openjdk-amd64"),
        ("25", "/usr/lib/jvm/temurin-25-jdk-amd64"),
    ];
    /// One partition run may take this long even when 16 share two cores.
    const TIMEOUT: Duration = Duration::from_secs(600);

    fn knob(name: &str, default: usize) -> usize {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    }

    fn scratch(what: &str) -> PathBuf {
        let d = workspace()
            .join("target")
            .join(format!("stress-{what}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// Runs `argv` in `parallel` partitions at once, `rounds` times, and
    /// checks each run's stdout and status against `want`; returns the
    /// number of runs. Every failure is reported with its stderr.
    fn many(
        dir: &Path,
        extra: &[&str],
        argv: &[&str],
        want: &str,
        parallel: usize,
        rounds: usize,
    ) -> usize {
        many_in(dir, false, extra, argv, want, parallel, rounds)
    }

    /// [`many`], each partition in a working directory of its own under
    /// `dir` when `own` (programs that make files, e.g. a Unix socket's).
    fn many_in(
        dir: &Path,
        own: bool,
        extra: &[&str],
        argv: &[&str],
        want: &str,
        parallel: usize,
        rounds: usize,
    ) -> usize {
        let mut failures = Vec::new();
        let mut runs = 0;
        for round in 0..rounds {
            let started = Instant::now();
            let children: Vec<_> = (0..parallel)
                .map(|i| {
                    let cwd = if own {
                        let d = dir.join(format!("run-{i}"));
                        let _ = std::fs::remove_dir_all(&d);
                        std::fs::create_dir_all(&d).unwrap();
                        d
                    } else {
                        dir.to_path_buf()
                    };
                    let mut c = Command::new(astraea());
                    c.arg("run")
                        .args(extra)
                        .arg("--")
                        .args(argv)
                        .current_dir(cwd);
                    spawn_piped(&mut c)
                })
                .collect();
            for child in children {
                let r = wait_with_timeout(child, TIMEOUT);
                runs += 1;
                if r.code != 0 || r.stdout != want {
                    failures.push(format!(
                        "round {round}: exit {}, stdout {:?}, stderr:\n{}",
                        r.code,
                        r.stdout,
                        r.stderr
                            .lines()
                            .rev()
                            .take(40)
                            .collect::<Vec<_>>()
                            .join("\n")
                    ));
                }
            }
            eprintln!(
                "stress: {argv:?}: round {}/{rounds}, {parallel} partitions in {:.1} s, {} failures so far",
                round + 1,
                started.elapsed().as_secs_f64(),
                failures.len()
            );
        }
        assert!(
            failures.is_empty(),
            "{} of {runs} runs of {argv:?} failed:\n{}",
            failures.len(),
            failures.join("\n---\n")
        );
        runs
    }

    #[test]
    fn torture_in_many_partitions() {
        if !kvm_available() {
            return;
        }
        let dir = scratch("torture");
        let src = workspace().join("tests/progs/torture.c");
        let o = Command::new("gcc")
            .args(["-O2", "-pthread", "-o"])
            .arg(dir.join("torture"))
            .arg(&src)
            .output();
        match o {
            Ok(o) if o.status.success() => {}
            _ => {
                eprintln!(
                    "\n*** SKIPPED: gcc cannot build tests/progs/torture.c; this test did not run. ***\n"
                );
                return;
            }
        }
        // A twentieth of the default work per round, as linux.rs: on PVM
        // hosts whose exits cost 50-80 µs one default run took minutes.
        let argv = ["./torture", "4", "30", "200000"];
        let host = host_in(&dir, &argv, &[], TIMEOUT);
        assert_eq!(host.code, 0, "torture fails on the host: {host:?}");
        let runs = many(
            &dir,
            &["--mem", "256M"],
            &argv,
            &host.stdout,
            knob("ASTRAEA_STRESS_PARALLEL", 8),
            knob("ASTRAEA_STRESS_ROUNDS", 1),
        );
        eprintln!("stress: torture: {runs} partition runs, all registers intact");
        let _ = std::fs::remove_dir_all(dir);
    }

    /// `tests/progs/sockets.c` in 8 partitions at once: TCP and UDP on the
    /// host's loopback from all of them, every result the host's.
    #[test]
    fn sockets_in_many_partitions() {
        if !kvm_available() {
            return;
        }
        let dir = scratch("sockets");
        let o = Command::new("gcc")
            .args(["-O2", "-pthread", "-o"])
            .arg(dir.join("sockets"))
            .arg(workspace().join("tests/progs/sockets.c"))
            .output();
        if !o.is_ok_and(|o| o.status.success()) {
            eprintln!(
                "\n*** SKIPPED: gcc cannot build tests/progs/sockets.c; this test did not run. ***\n"
            );
            return;
        }
        let want = std::fs::read_to_string(workspace().join("tests/progs/sockets.stdout")).unwrap();
        let runs = many(
            &dir,
            &["--mem", "256M"],
            &["./sockets"],
            &want,
            knob("ASTRAEA_STRESS_PARALLEL", 8),
            knob("ASTRAEA_STRESS_ROUNDS", 1),
        );
        eprintln!("stress: sockets: {runs} partition runs, every result the host's");
        let _ = std::fs::remove_dir_all(dir);
    }

    /// Unix sockets (`unixsock.c`), memory-only files (`memfd.c`) and
    /// signal waits with HotSpot's suspend/resume (`sigwait.c`) in 8
    /// partitions at once each, every result the host's.
    #[test]
    fn unix_memfd_sigwait_in_many_partitions() {
        if !kvm_available() {
            return;
        }
        let dir = scratch("extras");
        for prog in ["unixsock", "memfd", "sigwait"] {
            let o = Command::new("gcc")
                .args(["-O2", "-pthread", "-o"])
                .arg(dir.join(prog))
                .arg(workspace().join(format!("tests/progs/{prog}.c")))
                .output();
            if !o.is_ok_and(|o| o.status.success()) {
                eprintln!(
                    "\n*** SKIPPED: gcc cannot build tests/progs/{prog}.c; this test did not run. ***\n"
                );
                return;
            }
            let want =
                std::fs::read_to_string(workspace().join(format!("tests/progs/{prog}.stdout")))
                    .unwrap();
            let exe = dir.join(prog).display().to_string();
            let runs = many_in(
                &dir,
                true,
                &["--mem", "256M"],
                &[exe.as_str()],
                &want,
                knob("ASTRAEA_STRESS_PARALLEL", 8),
                knob("ASTRAEA_STRESS_ROUNDS", 1),
            );
            eprintln!("stress: {prog}: {runs} partition runs, every result the host's");
        }
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn jvm_in_many_partitions() {
        if !kvm_available() {
            return;
        }
        let dir = scratch("jvm");
        let src = workspace().join("tests/java/JitChurn.java");
        let installed: Vec<_> = JDKS
            .iter()
            .filter(|(_, home)| Path::new(home).join("bin/java").is_file())
            .collect();
        let Some((_, first)) = installed.first() else {
            eprintln!("\n*** SKIPPED: no JDK at {JDKS:?}; this test did not run. ***\n");
            return;
        };
        let o = Command::new(Path::new(first).join("bin/javac"))
            .args(["--release", "17", "-d"])
            .arg(&dir)
            .arg(&src)
            .output()
            .expect("javac");
        assert!(o.status.success(), "javac: {o:?}");
        let rounds = knob("ASTRAEA_STRESS_ROUNDS", 1);
        let parallel = knob("ASTRAEA_STRESS_PARALLEL", 8) * 2;
        for (name, home) in installed {
            let java = format!("{home}/bin/java");
            let argv = [java.as_str(), "-cp", ".", "JitChurn", "3"];
            let host = host_in(&dir, &argv, &[], TIMEOUT);
            assert_eq!(host.code, 0, "JitChurn fails on the host: {host:?}");
            let runs = many(
                &dir,
                &["--mem", "512M"],
                &argv,
                &host.stdout,
                parallel,
                rounds,
            );
            eprintln!("stress: JDK {name}: {runs} JVM partition runs, every output the host's");
        }
        let _ = std::fs::remove_dir_all(dir);
    }
}
