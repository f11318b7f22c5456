//! Direct system-call entry (`astraea run --syscall-entry direct`, issue
//! 14): programs whose system-call sites are rewritten to jump into the
//! library OS must behave exactly as on the host — registers, flags, the
//! red zone, identity calls, cached reads and their errors, signals — and
//! the direct path's rare cases (a library-OS page the host will not map
//! for user mode, interrupts held while the library OS keeps them off) must
//! work. The Linux and JVM suites also run whole with direct entry on
//! (`./x test`, `ASTRAEA_SYSCALL_ENTRY=direct`).

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};
    use std::process::Command;

    use astraea_tests::*;

    /// Direct entry exists only on PVM hosts; elsewhere it falls back.
    fn pvm_host() -> bool {
        Path::new("/sys/module/kvm_pvm").exists()
    }

    fn compile(name: &str, flags: &[&str]) -> Option<PathBuf> {
        if Command::new("gcc").arg("--version").output().is_err() {
            eprintln!("\n*** SKIPPED: gcc is not installed; this test did not run. ***\n");
            return None;
        }
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("progs/{name}.c"));
        let dir =
            std::env::temp_dir().join(format!("astraea-direct-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let st = Command::new("gcc")
            .args(flags)
            .arg("-o")
            .arg(dir.join(name))
            .arg(&src)
            .status()
            .unwrap();
        assert!(st.success(), "gcc failed for {name}");
        Some(dir)
    }

    /// The numbers of the partition's direct-call summary line (served,
    /// sites rewritten), if it printed one.
    fn summary(stderr: &str) -> Option<(u64, u64)> {
        let line = stderr
            .lines()
            .find(|l| l.contains("direct system calls:"))?;
        let num = |after: &str| -> Option<u64> {
            let rest = &line[line.find(after)? + after.len()..];
            rest.split_whitespace().next()?.parse().ok()
        };
        Some((num("direct system calls: ")?, num("sites: ")?))
    }

    fn in_partition(dir: &Path, prog: &str, args: &[&str], env: &[(&str, &str)]) -> Run {
        let exe = dir.join(prog);
        let mut a = vec!["run", "--syscall-entry", "direct", "--log", "info", "--"];
        a.push(exe.to_str().unwrap());
        a.extend_from_slice(args);
        astraea_cmd_env(&a, env)
    }

    #[test]
    fn rewritten_sites_keep_registers_red_zone_reads_and_signals_as_on_the_host() {
        if !kvm_available() {
            return;
        }
        let Some(dir) = compile("direct", &["-O2", "-pthread"]) else {
            return;
        };
        // A file both see, cached in the partition (the host's / is
        // exported read-only and cached by default).
        let file = "/usr/lib/x86_64-linux-gnu/libc.so.6";
        let host = Command::new(dir.join("direct")).arg(file).output().unwrap();
        let host = String::from_utf8_lossy(&host.stdout).into_owned();
        assert!(
            host.contains("signals: sent 2000, delivered 2000"),
            "host run: {host}"
        );
        let r = in_partition(&dir, "direct", &[file], &[]);
        assert_eq!(r.code, 0, "{r:?}");
        assert_eq!(
            r.stdout, host,
            "partition differs from the host:\n{}",
            r.stderr
        );
        if pvm_host() {
            let (served, rewritten) = summary(&r.stderr).expect("no direct-call summary");
            assert!(
                served > 100_000,
                "few direct calls ({served}): {}",
                r.stderr
            );
            assert!(
                rewritten >= 5,
                "few sites rewritten ({rewritten}): {}",
                r.stderr
            );
        } else {
            assert!(
                r.stderr.contains("direct entry needs a PVM host"),
                "{}",
                r.stderr
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn upgraded_calls_and_held_interrupts() {
        if !kvm_available() {
            return;
        }
        if !pvm_host() {
            eprintln!("\n*** SKIPPED: not a PVM host; direct entry is off here. ***\n");
            return;
        }
        let Some(dir) = compile("direct_selftest", &["-O2", "-pthread"]) else {
            return;
        };
        let r = in_partition(
            &dir,
            "direct_selftest",
            &[],
            &[("ASTRAEA_DIRECT_SELFTEST", "1")],
        );
        assert_eq!(r.code, 0, "{r:?}");
        assert_eq!(
            r.stdout,
            "write to a fresh library-OS page: upgraded 1, again 1\n\
             interrupts off: were on 1, taken meanwhile 0\n\
             interrupts on: taken meanwhile 1\n\
             getpid after: 1\n",
            "{}",
            r.stderr
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
