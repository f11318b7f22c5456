//! Differential tests beyond files: `tests/progs/memdiff.c` runs the same
//! random sequences of memory (`mmap`, `mprotect`, `munmap`, `madvise`,
//! `mremap`, `mincore`, loads and stores probed under a `SIGSEGV` handler),
//! signal (masks, pending sets, handler order, `SA_NODEFER`,
//! `SA_RESETHAND`, `SA_RESTART`, `sigaltstack`), futex, clock and
//! `/proc`-structure calls on the host and in one partition, and every line
//! must be the same, except the groups in [`KNOWN`] (known differences,
//! each named there and in `docs/linux.md`) and what the program puts after
//! `~` (values Linux itself lets vary: which pages `mincore` finds
//! resident, a coarse clock's resolution, how `/proc/self/maps` merges).
//! Nothing printed is an address or a value that legitimately differs
//! between two Linux runs; `/proc` files are compared by structure only
//! (fields present, field counts, line shapes).
//!
//! A failing sequence is shrunk as `fsdiff.rs` does (shortest failing
//! prefix, then calls dropped one at a time while it still fails) and
//! reported with its seed and the calls that remain; fixed differences are
//! kept as fixed sequences in [`REGRESSIONS`].
//!
//! `ASTRAEA_MEMDIFF_SEEDS` and `ASTRAEA_MEMDIFF_CALLS` size the long run
//! (`memdiff_stress`, ignored by default; `./x stress` runs it).

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::{Path, PathBuf};
    use std::process::Command;
    use std::time::{Duration, Instant};

    use astraea_tests::*;

    /// Sequences and calls per sequence in the CI run.
    const CI_SEEDS: u32 = 150;
    const CI_CALLS: u32 = 30;
    const TIMEOUT: Duration = Duration::from_secs(300);

    /// Groups (the second word of a line) whose results are known to differ
    /// from Linux, with why; their lines are not compared. Each op of these
    /// groups leaves no state behind in `memdiff.c`, so excluding the line
    /// excludes the difference.
    const KNOWN: &[(&str, &str)] = &[
        (
            "proc /proc/self/cgroup",
            "not generated (ENOENT): no cgroups in a partition (the JDK then skips container \
             detection)",
        ),
        (
            "proc /proc/self/mountinfo",
            "not generated (ENOENT): the JDK reads it only for cgroup detection",
        ),
        (
            "proc /sys/fs/cgroup",
            "no cgroup file system in a partition (ENOENT)",
        ),
    ];

    /// Sequences that once differed, replayed every run (all in one
    /// partition): (seed, calls), with what the partition did.
    const REGRESSIONS: &[(u64, &str)] = &[
        // Call 3: rt_sigpending answered ENOSYS; two signals unblocked at
        // once ran one at a time, the second nested in the first handler's
        // next system call (Linux builds both frames: the higher runs
        // first). Call 15: a real-time signal sent twice while blocked was
        // delivered once (real-time signals queue). Call 21: clock_getres
        // accepted any clock id (Linux: EINVAL).
        (1, "3,15,21"),
        (12, "23"),
        // A signal raised in its own handler (no SA_NODEFER) waited past
        // rt_sigreturn for the next system call.
        (5, "19"),
        // Call 11: sigaltstack did not report SS_ONSTACK on the alternate
        // stack nor refuse to change it there (EPERM). Calls 15,19,24:
        // mprotect over a range with a hole changed nothing (Linux changes
        // the areas before the hole, then answers ENOMEM).
        (4, "11,15,19,24"),
        // clock_nanosleep on MONOTONIC_RAW / THREAD_CPUTIME answered EINVAL
        // (Linux: EOPNOTSUPP).
        (15, "5"),
        (19, "15"),
        // /proc/self/limits did not exist.
        (6, "23"),
        // FUTEX_WAKE of 0 woke nobody (Linux wakes one).
        (24, "25"),
        // MADV_DONTNEED on shared anonymous memory zeroed it (Linux keeps a
        // shmem object's pages; only MADV_REMOVE punches them out).
        (3_000_300, "1,11,17,18"),
    ];

    /// A fresh scratch directory ([`memory_scratch`]).
    fn scratch_root(name: &str) -> PathBuf {
        memory_scratch("memdiff", name)
    }

    /// Builds memdiff into `dir` (a static PIE); false, loudly, without gcc.
    fn build(dir: &Path) -> bool {
        if Command::new("gcc").arg("--version").output().is_err() {
            eprintln!("\n*** SKIPPED: gcc is not installed; memdiff did not run. ***\n");
            return false;
        }
        let src = workspace().join("tests/progs/memdiff.c");
        let out = Command::new("gcc")
            .args(["-O2", "-Wall", "-static-pie", "-pthread", "-o"])
            .arg(dir.join("memdiff"))
            .arg(&src)
            .output()
            .unwrap();
        assert!(out.status.success(), "gcc failed for memdiff: {out:?}");
        true
    }

    struct Env {
        dir: PathBuf,
    }

    impl Env {
        /// memdiff's output on the host (scratch files in `dir`).
        fn host(&self, args: &[&str]) -> String {
            let mut c = Command::new(self.dir.join("memdiff"));
            c.arg(&self.dir).args(args).current_dir(&self.dir);
            let r = run_with_timeout(&mut c, TIMEOUT);
            assert_eq!(
                r.code, 0,
                "memdiff {args:?} fails on the host: {}",
                r.stderr
            );
            r.stdout
        }

        /// memdiff's output in a partition (`dir` mounted as `/`).
        fn partition(&self, args: &[&str]) -> String {
            let mut all = vec!["/memdiff", "/"];
            all.extend_from_slice(args);
            let mount = format!("{}:/", self.dir.display());
            let mut c = Command::new(astraea());
            c.args(["run", "--mount", &mount, "--"]).args(&all);
            let r = run_with_timeout(&mut c, TIMEOUT);
            assert_eq!(
                r.code, 0,
                "memdiff {args:?} fails in a partition: {}",
                r.stderr
            );
            r.stdout
        }
    }

    /// What of a line is compared: the part before `~`, or nothing for a
    /// known difference.
    fn hard(line: &str) -> &str {
        let h = line.split_once(" ~ ").map_or(line, |(h, _)| h);
        let rest = h.split_once(' ').map_or("", |(_, r)| r);
        if KNOWN.iter().any(|(g, _)| rest.starts_with(g)) {
            ""
        } else {
            h
        }
    }

    /// The index of the first call whose line differs, if any.
    fn first_mismatch(host: &[&str], part: &[&str]) -> Option<usize> {
        for k in 0..host.len().max(part.len()) {
            let (h, p) = (host.get(k), part.get(k));
            if h.map(|l| hard(l)) != p.map(|l| hard(l)) {
                let l = h.or(p).unwrap();
                return Some(l.split(' ').next().unwrap().parse().unwrap_or(k));
            }
        }
        None
    }

    /// Groups whose result depends on timing: threads are started and then
    /// given 20 ms to fall asleep in the futex before the call (or 50 ms to
    /// reach a read); on a loaded machine one may not have. A difference there fails the test only if
    /// a replay of the sequence shows it again.
    const TIMING: &[&str] = &[
        // The signal is sent 50 ms after the thread starts, meant to find
        // the read waiting; on a loaded machine it may come before.
        "SA_RESTART",
        "futex(WAKE) waiters",
        "futex(REQUEUE)",
        "futex(CMP_REQUEUE)",
        "futex(WAKE_BITSET)",
    ];

    /// Shrinks a failing sequence (as fsdiff.rs): from the shortest failing
    /// prefix, drops calls one at a time while the outputs still differ.
    /// `None` if the prefix replayed alone does not differ.
    fn shrink(env: &Env, seed: u64, first: usize) -> Option<(Vec<usize>, String, String)> {
        let seed_s = seed.to_string();
        let replay = |calls: &[usize]| {
            let list: Vec<String> = calls.iter().map(usize::to_string).collect();
            let list = list.join(",");
            let args = ["replay", seed_s.as_str(), "0", list.as_str()];
            (env.host(&args), env.partition(&args))
        };
        let fails = |h: &str, p: &str| {
            let (h, p) = (by_seed(h), by_seed(p));
            first_mismatch(&h[&seed], &p[&seed]).is_some()
        };
        let mut calls: Vec<usize> = (0..=first).collect();
        let (mut h, mut p) = replay(&calls);
        if !fails(&h, &p) {
            return None;
        }
        let mut k = 0;
        while k < calls.len() && calls.len() > 1 {
            let mut fewer = calls.clone();
            fewer.remove(k);
            let (h2, p2) = replay(&fewer);
            if fails(&h2, &p2) {
                (calls, h, p) = (fewer, h2, p2);
            } else {
                k += 1;
            }
        }
        Some((calls, h, p))
    }

    /// Compares two outputs; panics with a shrunk sequence on a difference.
    fn compare(env: &Env, host: &str, part: &str, shrink_it: bool) {
        let (h, p) = (by_seed(host), by_seed(part));
        for (seed, hl) in &h {
            let pl = p.get(seed).map(Vec::as_slice).unwrap_or(&[]);
            if let Some(k) = first_mismatch(hl, pl) {
                let line = hl
                    .iter()
                    .find(|l| l.split(' ').next() == Some(&k.to_string()));
                let timing = line.is_some_and(|l| {
                    let rest = l.split_once(' ').map_or("", |(_, r)| r);
                    TIMING.iter().any(|t| rest.starts_with(t))
                });
                let shrunk = if shrink_it {
                    shrink(env, *seed, k)
                } else {
                    None
                };
                if shrink_it && shrunk.is_none() && timing {
                    eprintln!(
                        "memdiff: seed {seed} call {k} differed once but not on replay                          (a timing-dependent futex call): not counted"
                    );
                    continue;
                }
                let (min, mh, mp) =
                    shrunk.unwrap_or(((0..=k).collect(), host.to_string(), part.to_string()));
                let list: Vec<String> = min.iter().map(usize::to_string).collect();
                panic!(
                    "a partition differs from Linux: seed {seed}, first at call {k}; shrunk to \
                     calls {} (replay: memdiff DIR replay {seed} 0 {})\n\
                     --- host ---\n{mh}--- partition ---\n{mp}",
                    list.join(","),
                    list.join(","),
                );
            }
        }
    }

    /// Runs `seeds` sequences of `calls` calls from `first` on the host and
    /// in a partition; panics with a shrunk sequence on any difference.
    /// Returns both outputs.
    fn differential(env: &Env, first: u64, seeds: u32, calls: u32) -> (String, String) {
        let (a, b, c) = (first.to_string(), seeds.to_string(), calls.to_string());
        let args = ["run", a.as_str(), b.as_str(), c.as_str()];
        let t0 = Instant::now();
        let host = env.host(&args);
        let t1 = Instant::now();
        let part = env.partition(&args);
        eprintln!(
            "memdiff: {seeds} sequences x {calls} calls: host {:?}, partition {:?}",
            t1 - t0,
            t1.elapsed()
        );
        assert_eq!(
            by_seed(&host).len(),
            seeds as usize,
            "host output is missing sequences"
        );
        compare(env, &host, &part, true);
        (host, part)
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

    /// A line's group for the conformance table: the call (second word),
    /// with the file for the `/proc` and `/sys` reads.
    fn group(line: &str) -> String {
        let mut w = line.split(' ').skip(1);
        match (w.next(), w.next()) {
            (Some("proc"), Some(f)) => format!("proc {f}"),
            (Some(g), _) => g.to_string(),
            _ => String::new(),
        }
    }

    /// Per group: calls, and those whose result differed (known
    /// differences included), with the errnos the partition answered where
    /// the host succeeded.
    #[derive(Default)]
    struct Row {
        calls: u64,
        differing: u64,
        refused: BTreeMap<String, u64>,
    }

    fn tally(table: &mut BTreeMap<String, Row>, host: &str, part: &str) {
        let (h, p) = (by_seed(host), by_seed(part));
        for (seed, hl) in &h {
            let pl = p.get(seed).map(Vec::as_slice).unwrap_or(&[]);
            for (k, hline) in hl.iter().enumerate() {
                let g = group(hline);
                if g.is_empty() {
                    continue;
                }
                let row = table.entry(g).or_default();
                row.calls += 1;
                let whole = |l: &str| l.split_once(" ~ ").map_or(l, |(a, _)| a).to_string();
                let pline = pl.get(k).copied().unwrap_or("");
                if whole(hline) != whole(pline) {
                    row.differing += 1;
                    let result = |l: &str| l.rsplit_once(" = ").map(|(_, r)| r.to_string());
                    if let (Some(hr), Some(pr)) = (result(hline), result(pline))
                        && !hr.starts_with('E')
                        && pr.starts_with('E')
                    {
                        let e = pr.split(' ').next().unwrap_or("").to_string();
                        *row.refused.entry(e).or_default() += 1;
                    }
                }
            }
        }
    }

    /// Why a group differs: its [`KNOWN`] reason.
    fn why(g: &str) -> &'static str {
        KNOWN
            .iter()
            .find(|(k, _)| g.starts_with(k.trim_end_matches('(')) || k.starts_with(g))
            .map_or("", |(_, w)| w)
    }

    fn render(table: &BTreeMap<String, Row>, seeds: u32, calls: u32) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        writeln!(
            s,
            "# Conformance: memory, signals, futexes, clocks and /proc against Linux\n\n\
             Generated by `tests/tests/memdiff.rs` (`ASTRAEA_WRITE_CONFORMANCE=1 cargo test -p \
             astraea-tests --test memdiff`); do not edit. Each row is a call (or generated \
             file) of `tests/progs/memdiff.c`: {seeds} random sequences of {calls} calls, run \
             on the host and in a partition. *matches Linux*: every result, errno and content \
             check was the host's; *refused*: the partition answers the errno shown where \
             the host succeeds; *differs*: something else (a known difference, left out of \
             the test's comparison, with why). The file-system calls are in \
             [conformance.md](conformance.md).\n"
        )
        .unwrap();
        writeln!(s, "| call | verdict | calls | differing | note |").unwrap();
        writeln!(s, "|---|---|---:|---:|---|").unwrap();
        for (g, row) in table {
            let verdict = if row.differing == 0 {
                "matches Linux".to_string()
            } else if row.refused.values().sum::<u64>() == row.differing {
                let errs: Vec<&str> = row.refused.keys().map(String::as_str).collect();
                format!("refused ({})", errs.join(", "))
            } else {
                "differs".to_string()
            };
            let note = if row.differing == 0 { "" } else { why(g) };
            writeln!(
                s,
                "| `{g}` | {verdict} | {} | {} | {note} |",
                row.calls, row.differing
            )
            .unwrap();
        }
        s
    }

    /// (group, verdict) of a rendered table.
    fn verdicts(doc: &str) -> Vec<(String, String)> {
        doc.lines()
            .filter(|l| l.starts_with("| `"))
            .map(|l| {
                let cols: Vec<&str> = l.split(" | ").collect();
                (cols[0].to_string(), cols.get(1).unwrap_or(&"").to_string())
            })
            .collect()
    }

    #[test]
    fn memdiff() {
        let Some(env) = setup("ci") else { return };
        let mut args = vec!["replay".to_string()];
        for (seed, calls) in REGRESSIONS {
            args.extend([seed.to_string(), "0".to_string(), calls.to_string()]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        compare(&env, &env.host(&args), &env.partition(&args), false);
        let (host, part) = differential(&env, 1, CI_SEEDS, CI_CALLS);
        // The conformance table: written with ASTRAEA_WRITE_CONFORMANCE,
        // else its verdicts must be those committed.
        let mut table = BTreeMap::new();
        tally(&mut table, &host, &part);
        let doc = render(&table, CI_SEEDS, CI_CALLS);
        let path = workspace().join("docs/conformance-memory.md");
        if std::env::var_os("ASTRAEA_WRITE_CONFORMANCE").is_some() {
            std::fs::write(&path, &doc).unwrap();
        } else {
            let old = std::fs::read_to_string(&path).unwrap_or_default();
            assert_eq!(
                verdicts(&old),
                verdicts(&doc),
                "docs/conformance-memory.md is out of date; rerun with \
                 ASTRAEA_WRITE_CONFORMANCE=1.\n{doc}"
            );
        }
        std::fs::remove_dir_all(&env.dir).unwrap();
    }

    /// The long run: `ASTRAEA_MEMDIFF_SEEDS` sequences (default 5000) of
    /// `ASTRAEA_MEMDIFF_CALLS` calls (default 40), from seed
    /// `ASTRAEA_MEMDIFF_FIRST` (default 1000000), in batches.
    #[test]
    #[ignore]
    fn memdiff_stress() {
        let Some(env) = setup("stress") else { return };
        let seeds = env_u64("ASTRAEA_MEMDIFF_SEEDS", 5000);
        let calls = env_u64("ASTRAEA_MEMDIFF_CALLS", 40) as u32;
        let first = env_u64("ASTRAEA_MEMDIFF_FIRST", 1_000_000);
        let mut done = 0;
        while done < seeds {
            let batch = (seeds - done).min(500);
            differential(&env, first + done, batch as u32, calls);
            done += batch;
        }
        std::fs::remove_dir_all(&env.dir).unwrap();
    }
}
