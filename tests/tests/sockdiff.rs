//! Differential test of the TCP socket life cycle: `tests/progs/sockdiff.c`
//! runs the same random sequences of `socket`, `bind` (port 0 and other
//! sockets' ports), `listen`, `connect` (to listeners and to bound ports
//! that refuse; blocking and not), `accept`, `shutdown`, `close`,
//! `getsockname`/`getpeername` and socket options on the host and in a
//! partition (through the gateway), and every line must be the same.
//! Connection data is epolldiff's; here what matters is each call's
//! result and errno in every state, and the resets a listener's end sends
//! to the calls it never accepted.
//!
//! IPv6 sockets take part (dual-stack, IPv4-mapped addresses,
//! `IPV6_V6ONLY`).
//!
//! A failing sequence is reported with its seed and the first line that
//! differs. `ASTRAEA_SOCKDIFF_SEEDS` and `ASTRAEA_SOCKDIFF_CALLS` size the
//! long run (`sockdiff_stress`, ignored by default; `./x stress` runs it);
//! `ASTRAEA_SOCKDIFF_INET4=1` keeps it to IPv4 sockets.

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};
    use std::process::Command;
    use std::time::{Duration, Instant};

    use astraea_tests::*;

    /// Sequences and calls per sequence in the CI run.
    const CI_SEEDS: u32 = 200;
    const CI_CALLS: u32 = 40;
    const TIMEOUT: Duration = Duration::from_secs(600);

    /// Builds sockdiff into a fresh directory; `None`, loudly, without gcc
    /// or `/dev/kvm`.
    fn setup(name: &str) -> Option<PathBuf> {
        if !kvm_available() {
            return None;
        }
        if Command::new("gcc").arg("--version").output().is_err() {
            eprintln!("\n*** SKIPPED: gcc is not installed; sockdiff did not run. ***\n");
            return None;
        }
        let dir = scratch_root("sockdiff").join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let out = Command::new("gcc")
            .args(["-O2", "-Wall", "-static-pie", "-o"])
            .arg(dir.join("sockdiff"))
            .arg(workspace().join("tests/progs/sockdiff.c"))
            .output()
            .unwrap();
        assert!(out.status.success(), "gcc failed for sockdiff: {out:?}");
        Some(dir)
    }

    fn run(dir: &Path, partition: bool, args: &[&str]) -> String {
        let mut c = if partition {
            let mut c = Command::new(astraea());
            c.args(["run", "--", "./sockdiff"]);
            c
        } else {
            Command::new(dir.join("sockdiff"))
        };
        c.args(args).current_dir(dir);
        let r = run_with_timeout(&mut c, TIMEOUT);
        let place = if partition {
            "in a partition"
        } else {
            "on the host"
        };
        assert_eq!(r.code, 0, "sockdiff {args:?} fails {place}: {}", r.stderr);
        r.stdout
    }

    /// Runs `seeds` sequences of `calls` calls from `first` on the host and
    /// in a partition; panics on the first difference with the sequence up
    /// to it.
    fn differential(dir: &Path, first: u64, seeds: u32, calls: u32, inet6: bool) {
        let (a, b, c) = (first.to_string(), seeds.to_string(), calls.to_string());
        let mut args = vec!["run", a.as_str(), b.as_str(), c.as_str()];
        if !inet6 {
            args.push("inet");
        }
        let t0 = Instant::now();
        let host = run(dir, false, &args);
        let t1 = Instant::now();
        let part = run(dir, true, &args);
        eprintln!(
            "sockdiff: {seeds} sequences x {calls} calls: host {:?}, partition {:?}",
            t1 - t0,
            t1.elapsed()
        );
        let family = if inet6 { "" } else { " inet" };
        assert_same_sequences(&host, &part, seeds, |seed| {
            format!("sockdiff run {seed} 1 {calls}{family}")
        });
    }

    #[test]
    fn sockdiff() {
        let Some(dir) = setup("ci") else { return };
        differential(&dir, 1, CI_SEEDS, CI_CALLS, true);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The long run: `ASTRAEA_SOCKDIFF_SEEDS` sequences (default 3000) of
    /// `ASTRAEA_SOCKDIFF_CALLS` calls (default 60), from seed
    /// `ASTRAEA_SOCKDIFF_FIRST` (default 1000000), in batches.
    #[test]
    #[ignore]
    fn sockdiff_stress() {
        let Some(dir) = setup("stress") else { return };
        let seeds = env_u64("ASTRAEA_SOCKDIFF_SEEDS", 3000);
        let inet6 = env_u64("ASTRAEA_SOCKDIFF_INET4", 0) == 0;
        let calls = env_u64("ASTRAEA_SOCKDIFF_CALLS", 60) as u32;
        let first = env_u64("ASTRAEA_SOCKDIFF_FIRST", 1_000_000);
        let mut done = 0;
        while done < seeds {
            let batch = (seeds - done).min(1000);
            differential(&dir, first + done, batch as u32, calls, inet6);
            done += batch;
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
