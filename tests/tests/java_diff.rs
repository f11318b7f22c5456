//! Java-level differential checks of `java.nio.file` (issue 17):
//! `jvm-port/java/diff/FsDiff.java` runs on the host JVM and in a partition
//! (`astraea run --mem 1G -- <jdk>/bin/java …`), on both JDKs, each in a fresh
//! scratch directory, and the two must print exactly the same lines.
//!
//! FsDiff walks a tree of files, directories and symbolic links (to files,
//! to directories, dangling, loops) with and without `FOLLOW_LINKS`; reads
//! basic and POSIX attributes with and without `NOFOLLOW_LINKS`; makes
//! symbolic and hard links; sets permissions; provokes the exceptions of
//! `createFile`, `delete`, `move` (with and without `REPLACE_EXISTING` and
//! `ATOMIC_MOVE`) and `copy`; takes `FileChannel` locks (overlapping ranges
//! in one JVM); transfers between files; maps files read-only and
//! read-write; watches a directory with a `WatchService`; and counts the
//! regular files under the host's `/usr/share/doc`. It prints exception
//! class names, never messages, and nothing that varies between runs (times,
//! inode numbers, owners, directory sizes).
//!
//! Lines starting with `~` are checks known to differ in a partition (listed
//! in docs/linux.md, "Java-level differences"): they are printed in the
//! test's log when they differ but are not compared.
//!
//! `jvm-port/java/diff/SelectorDiff.java` does the same for
//! `java.nio.channels.Selector` over `Pipe` channels (epoll).
//!
//! Without a JDK, `javac` or `/dev/kvm` a test says so loudly and passes.

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};
    use std::process::Command;
    use std::sync::OnceLock;
    use std::time::{Duration, Instant};

    use astraea_tests::*;

    /// How long one run may take on the host.
    const HOST_TIMEOUT: Duration = Duration::from_secs(120);
    /// How long one partition may run.
    const PARTITION_TIMEOUT: Duration = Duration::from_secs(300);

    fn skip(why: &str) {
        eprintln!("\n*** SKIPPED: {why}; this test did not run. ***\n");
    }

    fn root() -> &'static Path {
        static R: OnceLock<PathBuf> = OnceLock::new();
        R.get_or_init(|| scratch_root("java-diff-tests"))
    }

    /// Compiles `jvm-port/java/diff/{prog}.java` with the JDK's javac into
    /// a directory of its own.
    fn compile(jdk: &str, home: &str, release: &str, prog: &str) -> PathBuf {
        let out = root().join("classes").join(format!("{prog}-{jdk}"));
        let _ = std::fs::remove_dir_all(&out);
        std::fs::create_dir_all(&out).unwrap();
        let src = workspace().join(format!("jvm-port/java/diff/{prog}.java"));
        let o = Command::new(Path::new(home).join("bin/javac"))
            .args(["--release", release, "-Xlint:all", "-Werror", "-d"])
            .arg(&out)
            .arg(&src)
            .output()
            .expect("cannot run javac");
        assert!(
            o.status.success(),
            "javac {} failed:\n{}",
            src.display(),
            String::from_utf8_lossy(&o.stderr)
        );
        out
    }

    /// A fresh working directory; FsDiff's scratch directory is inside it.
    /// The host's and the partition's have names of one length: an absolute
    /// symbolic link's size is its target's length.
    fn workdir(jdk: &str, side: &str) -> PathBuf {
        let d = root().join("runs").join(format!("{jdk}-{side}"));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn java_args(dir: &Path, classes: &Path) -> Vec<String> {
        vec![
            format!("-Djava.io.tmpdir={}", dir.display()),
            "-cp".into(),
            classes.display().to_string(),
            "FsDiff".into(),
            dir.join("scratch").display().to_string(),
        ]
    }

    /// The compared lines (those not starting with `~`) and the others.
    fn split(stdout: &str) -> (Vec<&str>, Vec<&str>) {
        stdout.lines().partition(|l| !l.starts_with('~'))
    }

    fn fsdiff(jdk: &str, home: &str, release: &str) {
        if !Path::new(home).join("bin/javac").is_file() {
            skip(&format!("JDK {jdk} (with javac) is not at {home}"));
            return;
        }
        if !kvm_available() {
            return;
        }
        let classes = compile(jdk, home, release, "FsDiff");
        let java = Path::new(home).join("bin/java");

        let dir = workdir(jdk, "host");
        let t0 = Instant::now();
        let host = run_with_timeout(
            Command::new(&java)
                .args(java_args(&dir, &classes))
                .current_dir(&dir),
            HOST_TIMEOUT,
        );
        let host_time = t0.elapsed();
        assert_eq!(
            host.code, 0,
            "FsDiff on the host (JDK {jdk}) failed:\n{}\n{}",
            host.stdout, host.stderr
        );
        assert!(host.stdout.ends_with("done\n"), "{}", host.stdout);

        let dir = workdir(jdk, "part");
        let t0 = Instant::now();
        let part = run_with_timeout(
            Command::new(astraea())
                .args(["run", "--mem", "1G", "--log", "info", "--"])
                .arg(&java)
                .args(java_args(&dir, &classes))
                .current_dir(&dir),
            PARTITION_TIMEOUT,
        );
        eprintln!(
            "FsDiff on JDK {jdk}: host {host_time:.1?}, partition {:.1?}",
            t0.elapsed()
        );

        let (hc, hk) = split(&host.stdout);
        let (pc, pk) = split(&part.stdout);
        if hk != pk {
            eprintln!(
                "JDK {jdk}: known differences (not compared):\n--- host ---\n{}\n--- partition ---\n{}",
                hk.join("\n"),
                pk.join("\n")
            );
        }
        let lines: Vec<String> = hc
            .iter()
            .zip(pc.iter())
            .filter(|(h, p)| h != p)
            .map(|(h, p)| format!("host:      {h}\npartition: {p}"))
            .collect();
        let err: Vec<&str> = part.stderr.lines().collect();
        let end = err[err.len().saturating_sub(60)..].join("\n");
        assert!(
            hc == pc && part.code == 0,
            "JDK {jdk}: the partition differs from the host (exit {}; {} vs {} lines).\n\
             {}\n--- partition stdout ---\n{}\n--- partition stderr (end) ---\n{end}",
            part.code,
            pc.len(),
            hc.len(),
            lines.join("\n"),
            part.stdout
        );
        assert!(
            !part.stderr.contains("unimplemented system call"),
            "JDK {jdk}: the JVM reached a system call the library OS lacks:\n{end}"
        );
    }

    /// `jvm-port/java/diff/SelectorDiff.java`: a `java.nio.channels.Selector`
    /// over `Pipe` channels (epoll underneath) with timed, untimed and
    /// woken selects prints the same on the host and in a partition.
    fn selector(jdk: &str, home: &str, release: &str) {
        if !Path::new(home).join("bin/javac").is_file() {
            skip(&format!("JDK {jdk} (with javac) is not at {home}"));
            return;
        }
        if !kvm_available() {
            return;
        }
        let classes = compile(jdk, home, release, "SelectorDiff");
        let java = Path::new(home).join("bin/java");
        let args = [
            "-cp".to_string(),
            classes.display().to_string(),
            "SelectorDiff".into(),
        ];
        let host = run_with_timeout(Command::new(&java).args(&args), HOST_TIMEOUT);
        assert_eq!(
            host.code, 0,
            "SelectorDiff on the host (JDK {jdk}) failed:\n{}\n{}",
            host.stdout, host.stderr
        );
        assert!(host.stdout.ends_with("done\n"), "{}", host.stdout);
        let part = run_with_timeout(
            Command::new(astraea())
                .args(["run", "--mem", "1G", "--"])
                .arg(&java)
                .args(&args),
            PARTITION_TIMEOUT,
        );
        assert_eq!(
            (part.code, part.stdout.as_str()),
            (0, host.stdout.as_str()),
            "JDK {jdk}: SelectorDiff in a partition differs from the host; stderr:\n{}",
            part.stderr
        );
        assert!(
            !part.stderr.contains("unimplemented system call"),
            "JDK {jdk}: the JVM reached a system call the library OS lacks:\n{}",
            part.stderr
        );
    }

    #[test]
    fn selector_jdk17() {
        selector("17", "/usr/lib/jvm/java-17-openjdk-amd64", "17");
    }

    #[test]
    fn selector_jdk25() {
        selector("25", "/usr/lib/jvm/temurin-25-jdk-amd64", "21");
    }

    #[test]
    fn fsdiff_jdk17() {
        fsdiff("17", "/usr/lib/jvm/java-17-openjdk-amd64", "17");
    }

    #[test]
    fn fsdiff_jdk25() {
        fsdiff("25", "/usr/lib/jvm/temurin-25-jdk-amd64", "21");
    }
}
