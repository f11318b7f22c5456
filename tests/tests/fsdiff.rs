//! Differential file-system tests: `tests/progs/fsdiff.c` runs the same
//! random sequences of file system calls on the host (scratch directory A)
//! and in a partition (scratch directory B, the same initial tree), through
//! the built-in gateway and through a separate gateway over vhost-user, and
//! every line (call, arguments, result or errno, normalized outputs) must
//! be the same. A failing sequence is shrunk (shortest failing prefix, then
//! calls dropped one at a time while it still fails) and reported with its
//! seed and the calls that remain.
//!
//! The lines also make `docs/conformance.md`, one row per system call and
//! flag group: `ASTRAEA_WRITE_CONFORMANCE=1` rewrites it; otherwise the
//! test checks that each row's verdict is still the one written there.
//!
//! `ASTRAEA_FSDIFF_SEEDS` and `ASTRAEA_FSDIFF_CALLS` size the long run
//! (`fsdiff_stress`, ignored by default; `./x stress` runs it).

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::fmt::Write as _;
    use std::path::{Path, PathBuf};
    use std::process::{Child, Command, Stdio};
    use std::time::{Duration, Instant};

    use astraea_tests::*;

    /// Sequences and calls per sequence in the CI run (built-in gateway).
    const CI_SEEDS: u32 = 2000;
    const CI_CALLS: u32 = 20;
    /// The same through vhost-user (the transport, not the semantics, is
    /// what differs, so fewer).
    const VHOST_SEEDS: u32 = 400;
    /// Sequences through the cache on a read-only copy.
    const RO_SEEDS: u32 = 600;
    const TIMEOUT: Duration = Duration::from_secs(300);

    /// A fresh scratch directory ([`memory_scratch`]).
    fn scratch_root(name: &str) -> PathBuf {
        memory_scratch("fsdiff", name)
    }

    /// Builds fsdiff into `dir` (a static PIE, so the partition needs no
    /// shared libraries); false, loudly, without gcc.
    fn build(dir: &Path) -> bool {
        if Command::new("gcc").arg("--version").output().is_err() {
            eprintln!("\n*** SKIPPED: gcc is not installed; fsdiff did not run. ***\n");
            return false;
        }
        let src = workspace().join("tests/progs/fsdiff.c");
        let out = Command::new("gcc")
            .args(["-O2", "-Wall", "-static-pie", "-o"])
            .arg(dir.join("fsdiff"))
            .arg(&src)
            .output()
            .unwrap();
        assert!(out.status.success(), "gcc failed for fsdiff: {out:?}");
        true
    }

    /// Where the partition's files come from.
    #[derive(Clone, Copy, Debug, PartialEq)]
    enum Gateway {
        /// The VMM's own gateway (`--mount DIR:/`).
        BuiltIn,
        /// `astraea-gateway --vhost-user SOCK` in its own process.
        VhostUser,
        /// The built-in gateway exporting a read-only copy of a fixed tree
        /// through the file cache (`--cache ro`); the host runs against a
        /// read-only bind mount of the same tree.
        CachedReadOnly,
    }

    /// One environment the program runs in, with `dir` (holding `fsdiff`)
    /// as what it sees of the files.
    struct Env {
        dir: PathBuf,
        /// The read-only mode (`rorun`, `roreplay`) against `dir/Aro`.
        ro: Option<RoMount>,
    }

    /// `dir/A` (the tree `fsdiff mktree` built) bind-mounted read-only at
    /// `dir/Aro`, unmounted on drop. Needs root (CI runs as root).
    struct RoMount(PathBuf);

    impl RoMount {
        fn new(dir: &Path) -> Option<Self> {
            let (src, dst) = (dir.join("A"), dir.join("Aro"));
            std::fs::create_dir_all(&dst).unwrap();
            let ok = |args: &[&std::ffi::OsStr]| {
                Command::new("mount")
                    .args(args)
                    .output()
                    .is_ok_and(|o| o.status.success())
            };
            if !ok(&["--bind".as_ref(), src.as_os_str(), dst.as_os_str()]) {
                eprintln!(
                    "\n*** SKIPPED: cannot bind-mount a read-only copy (needs root and mount(8)); \
                     the cached read-only fsdiff did not run. ***\n"
                );
                return None;
            }
            let m = RoMount(dst.clone());
            assert!(
                ok(&["-o".as_ref(), "remount,bind,ro".as_ref(), dst.as_os_str()]),
                "cannot make the bind mount {} read-only",
                dst.display()
            );
            Some(m)
        }
    }

    impl Drop for RoMount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }

    impl Env {
        /// fsdiff's output on the host, scratch directory `dir/A`.
        fn host(&self, args: &[&str]) -> String {
            let scratch = self.dir.join(if self.ro.is_some() { "Aro" } else { "A" });
            let args = self.mode(args);
            let mut c = Command::new(self.dir.join("fsdiff"));
            c.arg(&scratch).args(&args).current_dir(&self.dir);
            let r = run_with_timeout(&mut c, TIMEOUT);
            assert_eq!(r.code, 0, "fsdiff {args:?} fails on the host: {}", r.stderr);
            r.stdout
        }

        /// fsdiff's output in a partition, scratch directory `/B`.
        /// `args` with the command in read-only mode if this is a
        /// read-only environment.
        fn mode(&self, args: &[&str]) -> Vec<String> {
            let mut v: Vec<String> = args.iter().map(|a| a.to_string()).collect();
            if self.ro.is_some()
                && let Some(cmd) = v.first_mut()
            {
                *cmd = format!("ro{cmd}");
            }
            v
        }

        fn partition(&self, gw: Gateway, args: &[&str]) -> String {
            let mode = self.mode(args);
            let mut all = vec!["/fsdiff", "/B"];
            all.extend(mode.iter().map(String::as_str));
            let r = match gw {
                Gateway::BuiltIn => {
                    let mount = format!("{}:/", self.dir.display());
                    let mut c = Command::new(astraea());
                    c.args(["run", "--mount", &mount, "--"]).args(&all);
                    run_with_timeout(&mut c, TIMEOUT)
                }
                Gateway::CachedReadOnly => {
                    let root = format!("{}:/", self.dir.display());
                    let tree = format!("{}:/B:ro", self.dir.join("A").display());
                    let mut c = Command::new(astraea());
                    c.args([
                        "run", "--cache", "ro", "--mount", &root, "--mount", &tree, "--",
                    ])
                    .args(&all);
                    run_with_timeout(&mut c, TIMEOUT)
                }
                Gateway::VhostUser => {
                    let sock = self.dir.with_extension("sock");
                    let _ = std::fs::remove_file(&sock);
                    let _gw = VhostGateway::start(&sock, &self.dir);
                    let spec = format!("vhost-user:{}", sock.display());
                    let mut c = Command::new(astraea());
                    c.args(["run", "--gateway", &spec, "--"]).args(&all);
                    run_with_timeout(&mut c, TIMEOUT)
                }
            };
            assert_eq!(
                r.code, 0,
                "fsdiff {args:?} fails in a partition ({gw:?}): {}",
                r.stderr
            );
            r.stdout
        }
    }

    /// An `astraea-gateway --vhost-user` process for one partition.
    struct VhostGateway(Child);

    impl VhostGateway {
        fn start(sock: &Path, export: &Path) -> Self {
            let child = Command::new(gateway())
                .arg("--vhost-user")
                .arg(sock)
                .arg("--export")
                .arg(format!("{}:/", export.display()))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("cannot start astraea-gateway");
            let mut g = VhostGateway(child);
            let t0 = Instant::now();
            while !sock.exists() {
                assert!(
                    g.0.try_wait().unwrap().is_none(),
                    "astraea-gateway exited early"
                );
                assert!(t0.elapsed() < Duration::from_secs(20), "no gateway socket");
                std::thread::sleep(Duration::from_millis(10));
            }
            g
        }
    }

    impl Drop for VhostGateway {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    /// One output line: the call's index and group, what must match, and
    /// what is compared for the table only.
    struct Line<'a> {
        group: &'a str,
        hard: &'a str,
        soft: &'a str,
    }

    fn parse(line: &str) -> Line<'_> {
        let (hard, soft) = line.split_once(" ~ ").unwrap_or((line, ""));
        let group = hard.split(' ').nth(1).unwrap_or("");
        Line { group, hard, soft }
    }

    /// The index of the first call whose line differs (hard part), if any.
    fn first_mismatch(host: &[&str], part: &[&str]) -> Option<usize> {
        for k in 0..host.len().max(part.len()) {
            let (h, p) = (host.get(k), part.get(k));
            if h.map(|l| parse(l).hard) != p.map(|l| parse(l).hard) {
                let l = h.or(p).unwrap();
                return Some(l.split(' ').next().unwrap().parse().unwrap_or(k));
            }
        }
        None
    }

    /// Per group: calls, calls whose hard part differed, whose soft part
    /// differed, and an example of each kind of difference.
    #[derive(Default)]
    struct Row {
        calls: u64,
        hard: u64,
        soft: u64,
        refused: BTreeMap<String, u64>,
        example: Option<(String, String)>,
    }

    fn tally(table: &mut BTreeMap<String, Row>, host: &str, part: &str) {
        let (h, p) = (by_seed(host), by_seed(part));
        for (seed, hl) in &h {
            let Some(pl) = p.get(seed) else { continue };
            for (a, b) in hl.iter().zip(pl) {
                let (a, b) = (parse(a), parse(b));
                let row = table.entry(a.group.to_string()).or_default();
                row.calls += 1;
                if a.hard != b.hard {
                    row.hard += 1;
                } else if a.soft != b.soft {
                    row.soft += 1;
                    // A probe whose soft part is an errno where the host
                    // succeeded is a refusal.
                    if a.soft.trim() == "ok" && b.soft.trim().starts_with('E') {
                        *row.refused.entry(b.soft.trim().to_string()).or_default() += 1;
                    }
                } else {
                    continue;
                }
                if row.example.is_none() {
                    row.example = Some((
                        a.hard.to_string() + " ~" + a.soft,
                        b.hard.to_string() + " ~" + b.soft,
                    ));
                }
            }
        }
    }

    fn verdict(row: &Row) -> String {
        if row.hard == 0 && row.soft == 0 {
            "matches Linux".into()
        } else if !row.refused.is_empty()
            && row.hard == 0
            && row.refused.values().sum::<u64>() == row.soft
        {
            let errs: Vec<&str> = row.refused.keys().map(String::as_str).collect();
            format!("refused ({})", errs.join(", "))
        } else {
            "differs".into()
        }
    }

    /// Why a group differs, for the rows that do (what fsdiff cannot say).
    fn why(group: &str) -> &'static str {
        match group {
            "lseek(SEEK_DATA/SEEK_HOLE)" => {
                "9P cannot ask where holes are: the whole file is data (Linux's generic \
                 answer); the host's file system reports its holes"
            }
            "lseek(directory)" => {
                "a directory's position is its file system's cookie (here the entry \
                 index); only a rewind to 0 is compared"
            }
            "renameat2(RENAME_EXCHANGE)" | "renameat2(RENAME_WHITEOUT)" => {
                "no 9P message exchanges or whites out names; EINVAL is what Linux answers \
                 on a file system without them"
            }
            "open(O_TMPFILE)" => {
                "no 9P message makes an unnamed file; EOPNOTSUPP is what Linux answers on a \
                 file system without them"
            }
            _ => "",
        }
    }

    fn render(table: &BTreeMap<String, Row>, seeds: u32, calls: u32) -> String {
        let mut s = String::new();
        writeln!(s, "# Conformance: file system calls against Linux\n").unwrap();
        writeln!(
            s,
            "Generated by `tests/tests/fsdiff.rs` (`ASTRAEA_WRITE_CONFORMANCE=1 cargo test -p \
             astraea-tests --test fsdiff`); do not edit. Each row is a system call and flag \
             group of `tests/progs/fsdiff.c`: {seeds} random sequences of {calls} calls, run \
             on the host and in a partition (built-in gateway) from the same initial tree, \
             plus fixed probes. *matches Linux*: every result, errno and normalized output \
             (type, mode, size, link count, content hash) was the host's; *differs*: the \
             partition gave something else in the counted calls; *refused*: the partition \
             answers the errno shown where the host succeeds. Results Linux lets vary by file \
             system (where holes are) are compared only here, never fail the test. \
             Memory, signals, futexes, clocks and `/proc` are in \
             [conformance-memory.md](conformance-memory.md).\n"
        )
        .unwrap();
        writeln!(s, "| call (flags) | verdict | calls | differing | note |").unwrap();
        writeln!(s, "|---|---|---:|---:|---|").unwrap();
        for (group, row) in table {
            writeln!(
                s,
                "| `{group}` | {} | {} | {} | {} |",
                verdict(row),
                row.calls,
                row.hard + row.soft,
                why(group)
            )
            .unwrap();
        }
        s
    }

    /// (group, verdict) pairs of a rendered table, without the rows of
    /// known differences whose count depends on the host's file system
    /// (how many holes it reports): those are what they are.
    fn verdicts(doc: &str) -> Vec<(String, String)> {
        doc.lines()
            .filter(|l| l.starts_with("| `"))
            .map(|l| {
                let cols: Vec<&str> = l.split(" | ").collect();
                (cols[0].to_string(), cols.get(1).unwrap_or(&"").to_string())
            })
            .filter(|(group, _)| {
                why(group.trim_start_matches("| `").trim_end_matches('`')).is_empty()
            })
            .collect()
    }

    /// Shrinks a failing sequence: from the shortest failing prefix, drops
    /// calls one at a time while the outputs still differ. Returns the calls
    /// left and both outputs of their replay.
    fn shrink(env: &Env, gw: Gateway, seed: u64, first: usize) -> (Vec<usize>, String, String) {
        let seed_s = seed.to_string();
        let replay = |calls: &[usize]| {
            let list: Vec<String> = calls.iter().map(usize::to_string).collect();
            let list = list.join(",");
            let args = ["replay", seed_s.as_str(), "0", list.as_str()];
            (env.host(&args), env.partition(gw, &args))
        };
        let fails = |h: &str, p: &str| {
            let (h, p) = (by_seed(h), by_seed(p));
            first_mismatch(&h[&seed], &p[&seed]).is_some()
        };
        let mut calls: Vec<usize> = (0..=first).collect();
        let (mut h, mut p) = replay(&calls);
        if !fails(&h, &p) {
            // Not reproducible alone (should not happen: calls depend only
            // on the seed and the earlier calls).
            return (calls, h, p);
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
        (calls, h, p)
    }

    /// Runs `seeds` sequences of `calls` calls from `first` on the host and
    /// in a partition; panics with a shrunk sequence on any difference.
    /// Returns both outputs.
    fn differential(
        env: &Env,
        gw: Gateway,
        first: u64,
        seeds: u32,
        calls: u32,
    ) -> (String, String) {
        let (a, b, c) = (first.to_string(), seeds.to_string(), calls.to_string());
        let args = ["run", a.as_str(), b.as_str(), c.as_str()];
        let t0 = Instant::now();
        let host = env.host(&args);
        let t1 = Instant::now();
        let part = env.partition(gw, &args);
        eprintln!(
            "fsdiff ({gw:?}): {seeds} sequences x {calls} calls: host {:?}, partition {:?}",
            t1 - t0,
            t1.elapsed()
        );
        let (h, p) = (by_seed(&host), by_seed(&part));
        assert_eq!(h.len(), seeds as usize, "host output is missing sequences");
        for (seed, hl) in &h {
            let pl = p.get(seed).map(Vec::as_slice).unwrap_or(&[]);
            if let Some(k) = first_mismatch(hl, pl) {
                let (min, mh, mp) = shrink(env, gw, *seed, k);
                let list: Vec<String> = min.iter().map(usize::to_string).collect();
                panic!(
                    "a partition ({gw:?}) differs from Linux: seed {seed}, first at call {k}; \
                     shrunk to calls {} (replay: fsdiff DIR replay {seed} 0 {})\n\
                     --- host ---\n{mh}--- partition ---\n{mp}",
                    list.join(","),
                    list.join(","),
                );
            }
        }
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
        Some(Env { dir, ro: None })
    }

    /// An environment for the read-only runs: the fixed tree built on the
    /// host, then mounted read-only.
    fn setup_read_only(name: &str) -> Option<Env> {
        let mut env = setup(name)?;
        let out = Command::new(env.dir.join("fsdiff"))
            .arg(env.dir.join("A"))
            .arg("mktree")
            .output()
            .unwrap();
        assert!(out.status.success(), "fsdiff mktree: {out:?}");
        env.ro = Some(RoMount::new(&env.dir)?);
        Some(env)
    }

    /// The CI run through the built-in gateway, which also makes (or
    /// checks) the conformance table.
    #[test]
    fn fsdiff_builtin_gateway() {
        let Some(env) = setup("builtin") else { return };
        let (host, part) = differential(&env, Gateway::BuiltIn, 1, CI_SEEDS, CI_CALLS);
        let mut table = BTreeMap::new();
        tally(&mut table, &host, &part);
        let (hp, pp) = (
            env.host(&["probe"]),
            env.partition(Gateway::BuiltIn, &["probe"]),
        );
        tally(
            &mut table,
            &format!("# seed 0\n{hp}"),
            &format!("# seed 0\n{pp}"),
        );
        let doc = render(&table, CI_SEEDS, CI_CALLS);
        let path = workspace().join("docs/conformance.md");
        if std::env::var_os("ASTRAEA_WRITE_CONFORMANCE").is_some() {
            std::fs::write(&path, &doc).unwrap();
        } else {
            let old = std::fs::read_to_string(&path).unwrap_or_default();
            assert_eq!(
                verdicts(&old),
                verdicts(&doc),
                "docs/conformance.md is out of date; rerun with ASTRAEA_WRITE_CONFORMANCE=1.\n{doc}"
            );
        }
        std::fs::remove_dir_all(&env.dir).unwrap();
    }

    /// The same semantics through a separate gateway over vhost-user.
    #[test]
    fn fsdiff_vhost_user_gateway() {
        let Some(env) = setup("vhost") else { return };
        differential(&env, Gateway::VhostUser, 100_000, VHOST_SEEDS, CI_CALLS);
        std::fs::remove_dir_all(&env.dir).unwrap();
    }

    /// Through the file cache on a read-only copy: every call that would
    /// change the tree fails on both sides, in Linux's order of errors, and
    /// reads, stats, listings and mappings come from the cache.
    #[test]
    fn fsdiff_cached_read_only() {
        let Some(env) = setup_read_only("ro") else {
            return;
        };
        differential(&env, Gateway::CachedReadOnly, 200_000, RO_SEEDS, CI_CALLS);
        let dir = env.dir.clone();
        drop(env);
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// The long run: `ASTRAEA_FSDIFF_SEEDS` sequences (default 100000) of
    /// `ASTRAEA_FSDIFF_CALLS` calls (default 40), from seed
    /// `ASTRAEA_FSDIFF_FIRST` (default 1000000), in batches, each batch on
    /// every gateway of `ASTRAEA_FSDIFF_GATEWAYS` (default `builtin,vhost,ro`).
    #[test]
    #[ignore]
    fn fsdiff_stress() {
        let Some(env) = setup("stress") else { return };
        let seeds = env_u64("ASTRAEA_FSDIFF_SEEDS", 100_000);
        let calls = env_u64("ASTRAEA_FSDIFF_CALLS", 40) as u32;
        let first = env_u64("ASTRAEA_FSDIFF_FIRST", 1_000_000);
        let gateways: Vec<Gateway> = std::env::var("ASTRAEA_FSDIFF_GATEWAYS")
            .unwrap_or_else(|_| "builtin,vhost,ro".into())
            .split(',')
            .map(|g| match g.trim() {
                "builtin" => Gateway::BuiltIn,
                "vhost" => Gateway::VhostUser,
                "ro" => Gateway::CachedReadOnly,
                other => {
                    panic!("ASTRAEA_FSDIFF_GATEWAYS: unknown gateway {other:?} (builtin, vhost)")
                }
            })
            .collect();
        let ro_env = if gateways.contains(&Gateway::CachedReadOnly) {
            setup_read_only("stress-ro")
        } else {
            None
        };
        let started = std::time::Instant::now();
        let mut done = 0;
        while done < seeds {
            let batch = (seeds - done).min(1000);
            for &gw in &gateways {
                let e = match gw {
                    Gateway::CachedReadOnly => match &ro_env {
                        Some(e) => e,
                        None => continue,
                    },
                    _ => &env,
                };
                differential(e, gw, first + done, batch as u32, calls);
            }
            done += batch;
            eprintln!(
                "fsdiff stress: {done}/{seeds} sequences x {calls} calls, no difference, on {gateways:?} ({:.0?})",
                started.elapsed()
            );
        }
        std::fs::remove_dir_all(&env.dir).unwrap();
        if let Some(e) = ro_env {
            let dir = e.dir.clone();
            drop(e);
            std::fs::remove_dir_all(dir).unwrap();
        }
    }
}
