//! Differential test of UDP sockets: `tests/progs/udpdiff.c` runs the same
//! random sequences of `socket`, `bind` (port 0 and other sockets' ports),
//! `connect` (to another socket, to a port nothing listens on, `AF_UNSPEC`
//! to disconnect), `send`/`sendto` (zero-length too), `recvmsg` with short
//! buffers, `MSG_PEEK` and `MSG_TRUNC`, `shutdown`, names, `FIONREAD`,
//! `SO_ERROR` and `poll` on the host and in a partition (through the
//! gateway's `/net/udp`), and every line must be the same: what arrives,
//! what is dropped, the port unreachable errors a connected socket gets.
//!
//! A failing sequence is reported with its seed and the first line that
//! differs. `ASTRAEA_UDPDIFF_SEEDS` and `ASTRAEA_UDPDIFF_CALLS` size the long
//! run (`udpdiff_stress`, ignored by default; `./x stress` runs it).

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};
    use std::process::Command;
    use std::time::{Duration, Instant};

    use astraea_tests::*;

    /// Sequences and calls per sequence in the CI run.
    const CI_SEEDS: u32 = 300;
    const CI_CALLS: u32 = 50;
    const TIMEOUT: Duration = Duration::from_secs(600);

    /// Builds udpdiff into a fresh directory; `None`, loudly, without gcc
    /// or `/dev/kvm`.
    fn setup(name: &str) -> Option<PathBuf> {
        if !kvm_available() {
            return None;
        }
        if Command::new("gcc").arg("--version").output().is_err() {
            eprintln!("\n*** SKIPPED: gcc is not installed; udpdiff did not run. ***\n");
            return None;
        }
        let dir = scratch_root("udpdiff").join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let out = Command::new("gcc")
            .args(["-O2", "-Wall", "-static-pie", "-o"])
            .arg(dir.join("udpdiff"))
            .arg(workspace().join("tests/progs/udpdiff.c"))
            .output()
            .unwrap();
        assert!(out.status.success(), "gcc failed for udpdiff: {out:?}");
        Some(dir)
    }

    fn run(dir: &Path, partition: bool, args: &[&str]) -> String {
        let mut c = if partition {
            let mut c = Command::new(astraea());
            c.args(["run", "--", "./udpdiff"]);
            c
        } else {
            Command::new(dir.join("udpdiff"))
        };
        c.args(args).current_dir(dir);
        let r = run_with_timeout(&mut c, TIMEOUT);
        let place = if partition {
            "in a partition"
        } else {
            "on the host"
        };
        assert_eq!(r.code, 0, "udpdiff {args:?} fails {place}: {}", r.stderr);
        r.stdout
    }

    /// Runs `seeds` sequences of `calls` calls from `first` on the host and
    /// in a partition; panics on the first difference with the sequence up
    /// to it.
    fn differential(dir: &Path, first: u64, seeds: u32, calls: u32) {
        let (a, b, c) = (first.to_string(), seeds.to_string(), calls.to_string());
        let args = ["run", a.as_str(), b.as_str(), c.as_str()];
        let t0 = Instant::now();
        let host = run(dir, false, &args);
        let t1 = Instant::now();
        let part = run(dir, true, &args);
        eprintln!(
            "udpdiff: {seeds} sequences x {calls} calls: host {:?}, partition {:?}",
            t1 - t0,
            t1.elapsed()
        );
        assert_same_sequences(&host, &part, seeds, |seed| {
            format!("udpdiff run {seed} 1 {calls}")
        });
    }

    #[test]
    fn udpdiff() {
        let Some(dir) = setup("ci") else { return };
        differential(&dir, 1, CI_SEEDS, CI_CALLS);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The long run: `ASTRAEA_UDPDIFF_SEEDS` sequences (default 3000) of
    /// `ASTRAEA_UDPDIFF_CALLS` calls (default 80), from seed
    /// `ASTRAEA_UDPDIFF_FIRST` (default 1000000), in batches.
    #[test]
    #[ignore]
    fn udpdiff_stress() {
        let Some(dir) = setup("stress") else { return };
        let seeds = env_u64("ASTRAEA_UDPDIFF_SEEDS", 3000);
        let calls = env_u64("ASTRAEA_UDPDIFF_CALLS", 80) as u32;
        let first = env_u64("ASTRAEA_UDPDIFF_FIRST", 1_000_000);
        let mut done = 0;
        while done < seeds {
            let batch = (seeds - done).min(1000);
            differential(&dir, first + done, batch as u32, calls);
            done += batch;
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
