//! Differential test of epoll: `tests/progs/epolldiff.c` runs the same
//! random sequences of pipe, Unix socket pair, loopback TCP connection
//! (through the gateway in a partition; the program waits after each call
//! until what is under way has arrived), eventfd, timerfd, `dup`, `close`,
//! `read`, `write`, `send`, `recv`, `shutdown`, `FIONREAD`, `SO_ERROR`,
//! `epoll_create1`, `epoll_ctl`, `epoll_wait` (timeout 0) and `poll` calls
//! on the host and in one partition, and every line must be
//! the same (as `memdiff.rs` does for memory and signals). Its hand-written
//! cases (edge vs level triggering, `EPOLLONESHOT`, hang-ups, nesting and
//! its limits, descriptor lifetime, `EINTR`, `epoll_pwait` masks) are in
//! the program corpus (`linux.rs`, `epolldiff.stdout`) and are compared
//! here too.
//!
//! A failing sequence is reported with its seed and the shortest prefix
//! that still differs. `ASTRAEA_EPOLLDIFF_SEEDS` and
//! `ASTRAEA_EPOLLDIFF_CALLS` size the long run (`epolldiff_stress`,
//! ignored by default; `./x stress` runs it).

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};
    use std::process::Command;
    use std::time::{Duration, Instant};

    use astraea_tests::*;

    /// Sequences and calls per sequence in the CI run.
    const CI_SEEDS: u32 = 300;
    const CI_CALLS: u32 = 40;
    const TIMEOUT: Duration = Duration::from_secs(300);

    /// A fresh scratch directory ([`memory_scratch`]).
    fn scratch_root(name: &str) -> PathBuf {
        memory_scratch("epolldiff", name)
    }

    /// Builds epolldiff into `dir` (a static PIE); false, loudly, without gcc.
    fn build(dir: &Path) -> bool {
        if Command::new("gcc").arg("--version").output().is_err() {
            eprintln!("\n*** SKIPPED: gcc is not installed; epolldiff did not run. ***\n");
            return false;
        }
        let src = workspace().join("tests/progs/epolldiff.c");
        let out = Command::new("gcc")
            .args(["-O2", "-Wall", "-static-pie", "-pthread", "-o"])
            .arg(dir.join("epolldiff"))
            .arg(&src)
            .output()
            .unwrap();
        assert!(out.status.success(), "gcc failed for epolldiff: {out:?}");
        true
    }

    struct Env {
        dir: PathBuf,
    }

    impl Env {
        /// epolldiff's output on the host (its scratch file in `dir`).
        fn host(&self, args: &[&str]) -> String {
            let mut c = Command::new(self.dir.join("epolldiff"));
            c.arg(&self.dir).args(args).current_dir(&self.dir);
            let r = run_with_timeout(&mut c, TIMEOUT);
            assert_eq!(
                r.code, 0,
                "epolldiff {args:?} fails on the host: {}",
                r.stderr
            );
            r.stdout
        }

        /// epolldiff's output in a partition (`dir` mounted as `/`).
        fn partition(&self, args: &[&str]) -> String {
            let mut all = vec!["/epolldiff", "/"];
            all.extend_from_slice(args);
            let mount = format!("{}:/", self.dir.display());
            let mut c = Command::new(astraea());
            c.args(["run", "--mount", &mount, "--"]).args(&all);
            let r = run_with_timeout(&mut c, TIMEOUT);
            assert_eq!(
                r.code, 0,
                "epolldiff {args:?} fails in a partition: {}",
                r.stderr
            );
            r.stdout
        }
    }

    /// Runs `seeds` sequences of `calls` calls from `first` on the host and
    /// in a partition; panics on the first difference with the sequence
    /// up to it.
    fn differential(env: &Env, first: u64, seeds: u32, calls: u32) {
        let (a, b, c) = (first.to_string(), seeds.to_string(), calls.to_string());
        let args = ["run", a.as_str(), b.as_str(), c.as_str()];
        let t0 = Instant::now();
        let host = env.host(&args);
        let t1 = Instant::now();
        let part = env.partition(&args);
        eprintln!(
            "epolldiff: {seeds} sequences x {calls} calls: host {:?}, partition {:?}",
            t1 - t0,
            t1.elapsed()
        );
        assert_same_sequences(&host, &part, seeds, |seed| {
            format!("epolldiff DIR run {seed} 1 {calls}")
        });
    }

    fn setup(name: &str) -> Option<Env> {
        if !kvm_available() {
            return None;
        }
        let dir = scratch_root(name);
        if !build(&dir) {
            return None;
        }
        Some(Env { dir })
    }

    #[test]
    fn epolldiff() {
        let Some(env) = setup("ci") else { return };
        let host = env.host(&["cases"]);
        assert_eq!(
            host,
            std::fs::read_to_string(workspace().join("tests/progs/epolldiff.stdout")).unwrap(),
            "the hand-written cases on the host"
        );
        assert_eq!(
            env.partition(&["cases"]),
            host,
            "the hand-written cases differ"
        );
        differential(&env, 1, CI_SEEDS, CI_CALLS);
        std::fs::remove_dir_all(&env.dir).unwrap();
    }

    /// The long run: `ASTRAEA_EPOLLDIFF_SEEDS` sequences (default 5000) of
    /// `ASTRAEA_EPOLLDIFF_CALLS` calls (default 60), from seed
    /// `ASTRAEA_EPOLLDIFF_FIRST` (default 1000000), in batches.
    #[test]
    #[ignore]
    fn epolldiff_stress() {
        let Some(env) = setup("stress") else { return };
        let seeds = env_u64("ASTRAEA_EPOLLDIFF_SEEDS", 5000);
        let calls = env_u64("ASTRAEA_EPOLLDIFF_CALLS", 60) as u32;
        let first = env_u64("ASTRAEA_EPOLLDIFF_FIRST", 1_000_000);
        let mut done = 0;
        while done < seeds {
            let batch = (seeds - done).min(1000);
            differential(&env, first + done, batch as u32, calls);
            done += batch;
        }
        std::fs::remove_dir_all(&env.dir).unwrap();
    }
}
