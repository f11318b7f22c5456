//! The library OS's file cache (`astraea run --cache none|ro[:SIZE]`), seen
//! by C programs in real partitions: cached reads return the bytes uncached
//! reads and the host return, the budget holds, file mappings of cached
//! pages copy on write, cached mounts stay read-only, and a host-side change
//! is seen exactly as docs/cache.md says.
//!
//! The programs are `tests/progs/randread.c`, `tests/progs/cachecheck.c`
//! and `tests/progs/cachewait.c`,
//! built with gcc as static PIEs; each test exports a temporary directory
//! holding them read-only at `/bin`, its data read-only at `/data` (a cached
//! mount) and, where needed, a read-write directory at `/rw`.

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::path::{Path, PathBuf};
    use std::process::Command;
    use std::time::{Duration, Instant};

    use astraea_tests::*;

    const TIMEOUT: Duration = Duration::from_secs(180);
    const MIB: u64 = 1 << 20;

    /// A test's directories: `bin` (the programs), `data` (exported
    /// read-only at `/data`), `rw` (exported read-write at `/rw`).
    struct Fixture {
        root: PathBuf,
    }

    impl Fixture {
        /// A fresh fixture with both programs built; `None` (loudly) when
        /// there is no KVM or no gcc.
        fn new(name: &str) -> Option<Self> {
            if !kvm_available() {
                return None;
            }
            if Command::new("gcc").arg("--version").output().is_err() {
                eprintln!("\n*** SKIPPED: gcc is not installed; this test did not run. ***\n");
                return None;
            }
            let root =
                std::env::temp_dir().join(format!("astraea-cache-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&root);
            for d in ["bin", "data", "rw"] {
                std::fs::create_dir_all(root.join(d)).unwrap();
            }
            let f = Self { root };
            for prog in ["randread", "cachecheck", "cachewait"] {
                let src = workspace().join(format!("tests/progs/{prog}.c"));
                let out = Command::new("gcc")
                    .args(["-O2", "-static-pie", "-Wall", "-o"])
                    .arg(f.bin().join(prog))
                    .arg(&src)
                    .output()
                    .unwrap();
                assert!(out.status.success(), "gcc failed for {prog}: {out:?}");
            }
            Some(f)
        }

        fn bin(&self) -> PathBuf {
            self.root.join("bin")
        }

        fn data(&self) -> PathBuf {
            self.root.join("data")
        }

        fn rw(&self) -> PathBuf {
            self.root.join("rw")
        }

        /// `$XDG_RUNTIME_DIR` of the test's partitions and `astraea`
        /// commands: their control sockets are the test's own.
        fn runtime_dir(&self) -> PathBuf {
            let d = self.root.join("run");
            std::fs::create_dir_all(&d).unwrap();
            d
        }

        /// `astraea ARGS` (not a partition) with the test's runtime dir.
        fn astraea(&self, args: &[&str]) -> Run {
            let mut c = Command::new(astraea());
            c.env("XDG_RUNTIME_DIR", self.runtime_dir())
                .args(args)
                .current_dir(&self.root);
            run_with_timeout(&mut c, TIMEOUT)
        }

        /// Starts `/bin/cachewait ARGS` with `extra` options before `--`,
        /// and waits until it has created `/rw/ready`.
        fn start_waiting(&self, cache: &str, extra: &[&str], args: &[&str]) -> std::process::Child {
            let _ = std::fs::remove_file(self.rw().join("ready"));
            let _ = std::fs::remove_file(self.rw().join("go"));
            let c = self.partition_cmd(cache, "cachewait", args);
            // `partition_cmd` ends with `-- PROGRAM ARGS`; options go first.
            let all: Vec<std::ffi::OsString> = c.get_args().map(|a| a.to_owned()).collect();
            let dash = all.iter().position(|a| a == "--").unwrap();
            let mut c2 = Command::new(c.get_program());
            for (k, v) in c.get_envs() {
                if let Some(v) = v {
                    c2.env(k, v);
                }
            }
            c2.args(&all[..dash])
                .args(extra)
                .args(&all[dash..])
                .current_dir(&self.root)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped());
            let mut child = c2.spawn().unwrap();
            let t0 = Instant::now();
            while !self.rw().join("ready").exists() {
                if t0.elapsed() > Duration::from_secs(60) || child.try_wait().unwrap().is_some() {
                    let _ = child.kill();
                    let out = child.wait_with_output().unwrap();
                    panic!(
                        "the program did not get ready: {}\n{}",
                        String::from_utf8_lossy(&out.stdout),
                        String::from_utf8_lossy(&out.stderr)
                    );
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            child
        }

        /// Creates `/rw/go` and collects the waiting program's run.
        fn finish(&self, child: std::process::Child) -> Run {
            std::fs::write(self.rw().join("go"), b"").unwrap();
            wait_with_timeout(child, Duration::from_secs(60))
        }

        /// Runs `/bin/PROG ARGS` in a partition with `--cache cache`.
        fn partition(&self, cache: &str, prog: &str, args: &[&str]) -> Run {
            let mut c = self.partition_cmd(cache, prog, args);
            run_with_timeout(&mut c, TIMEOUT)
        }

        fn partition_cmd(&self, cache: &str, prog: &str, args: &[&str]) -> Command {
            let mut c = Command::new(astraea());
            c.env("XDG_RUNTIME_DIR", self.runtime_dir());
            c.args(["run", "--log", "info", "--cache", cache])
                .arg("--mount")
                .arg(format!("{}:/bin:ro", self.bin().display()))
                .arg("--mount")
                .arg(format!("{}:/data:ro", self.data().display()))
                .arg("--mount")
                .arg(format!("{}:/rw:rw", self.rw().display()))
                .arg("--")
                .arg(format!("/bin/{prog}"))
                .args(args)
                .current_dir(&self.root);
            c
        }

        /// Runs the same program on the host, `/data` and `/rw` in its
        /// arguments replaced by the host's directories.
        fn host(&self, prog: &str, args: &[&str]) -> Run {
            let data = self.data().display().to_string();
            let rw = self.rw().display().to_string();
            let args: Vec<String> = args
                .iter()
                .map(|a| a.replace("/data", &data).replace("/rw", &rw))
                .collect();
            let mut c = Command::new(self.bin().join(prog));
            c.args(&args).current_dir(&self.root);
            let r = run_with_timeout(&mut c, TIMEOUT);
            assert_eq!(r.code, 0, "{prog} fails on the host: {r:?}");
            r
        }
    }

    impl Drop for Fixture {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.root);
        }
    }

    /// Writes `size` pseudo-random bytes (xorshift from `seed`) to `path`.
    fn random_file(path: &Path, size: u64, seed: u64) {
        let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
        let mut s = seed | 1;
        let mut left = size;
        let mut chunk = vec![0u8; MIB as usize];
        while left > 0 {
            for w in chunk.chunks_exact_mut(8) {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                w.copy_from_slice(&s.to_le_bytes());
            }
            let n = left.min(chunk.len() as u64) as usize;
            f.write_all(&chunk[..n]).unwrap();
            left -= n as u64;
        }
        f.flush().unwrap();
    }

    /// The exit report's file-cache line at `--log info`.
    #[derive(Debug, Clone, Copy)]
    struct Report {
        hits: u64,
        misses: u64,
        fetched_kib: u64,
        evictions: u64,
        resident_kib: u64,
        budget_kib: u64,
    }

    /// Parses "file cache ro: N hits, M misses (K KiB fetched), E
    /// evictions, R KiB resident of B KiB".
    fn report(r: &Run) -> Report {
        let line = r
            .stderr
            .lines()
            .find(|l| l.contains("file cache "))
            .unwrap_or_else(|| panic!("no file-cache report in the output: {r:?}"));
        let nums: Vec<u64> = line
            .split(|c: char| !c.is_ascii_digit())
            .filter(|w| !w.is_empty())
            .map(|w| w.parse().unwrap())
            .collect();
        // The line starts with the log's timestamp ("[  0.051673 ...").
        let n = nums.len();
        assert!(n >= 6, "unexpected report line {line:?}");
        Report {
            hits: nums[n - 6],
            misses: nums[n - 5],
            fetched_kib: nums[n - 4],
            evictions: nums[n - 3],
            resident_kib: nums[n - 2],
            budget_kib: nums[n - 1],
        }
    }

    fn ok(r: &Run, what: &str) {
        assert_eq!(r.code, 0, "{what} failed in a partition: {r:?}");
    }

    /// (a) Random preads of files of 1 MiB, 64 MiB and 256 MiB (plus one of
    /// an odd size, whose last block is partial): the same bytes with the
    /// cache, without it and on the host.
    #[test]
    fn cached_reads_equal_uncached_reads_and_the_host() {
        let Some(f) = Fixture::new("equal") else {
            return;
        };
        let files = [
            ("odd.bin", MIB + 1000, 400, 100_000),
            ("1m.bin", MIB, 400, 200_000),
            ("64m.bin", 64 * MIB, 400, MIB),
            ("256m.bin", 256 * MIB, 400, MIB),
        ];
        for (i, (name, size, count, maxlen)) in files.into_iter().enumerate() {
            random_file(&f.data().join(name), size, 0x9E37_79B9 + i as u64);
            let path = format!("/data/{name}");
            let (count, maxlen) = (count.to_string(), maxlen.to_string());
            let args = ["rand", path.as_str(), "12345", &count, &maxlen];
            let host = f.host("randread", &args);
            assert_eq!(host.stdout.lines().count(), 400, "{host:?}");
            let none = f.partition("none", "randread", &args);
            ok(&none, name);
            let ro = f.partition("ro", "randread", &args);
            ok(&ro, name);
            assert!(
                none.stdout == host.stdout,
                "{name}: uncached reads differ from the host's:\n{}",
                first_difference(&host.stdout, &none.stdout)
            );
            assert!(
                ro.stdout == host.stdout,
                "{name}: cached reads differ from the host's:\n{}",
                first_difference(&host.stdout, &ro.stdout)
            );
            let rep = report(&ro);
            eprintln!("{name}: {rep:?}");
            assert!(rep.misses > 0 && rep.hits > 0, "{name}: {rep:?}");
            // The default budget is a quarter of the partition's 512 MiB.
            assert_eq!(rep.budget_kib, 128 * 1024, "{name}: {rep:?}");
            assert!(rep.resident_kib <= rep.budget_kib, "{name}: {rep:?}");
            let none_rep = report(&none);
            assert_eq!(none_rep.hits, 0, "{name}: --cache none hits: {none_rep:?}");
            std::fs::remove_file(f.data().join(name)).unwrap();
        }
    }

    /// The first line where `a` and `b` differ, for failure messages.
    fn first_difference(a: &str, b: &str) -> String {
        let (al, bl): (Vec<_>, Vec<_>) = (a.lines().collect(), b.lines().collect());
        for i in 0..al.len().max(bl.len()) {
            if al.get(i) != bl.get(i) {
                return format!("line {i}: expected {:?}, got {:?}", al.get(i), bl.get(i));
            }
        }
        String::from("(no difference)")
    }

    /// (b) An 8 MiB budget and a 64 MiB file read twice front to back:
    /// blocks are evicted, what stays resident never exceeds the budget,
    /// the second pass fetches everything again (least recently used first)
    /// and the data are right; random reads under the same pressure too.
    #[test]
    fn the_budget_holds_under_pressure() {
        let Some(f) = Fixture::new("budget") else {
            return;
        };
        random_file(&f.data().join("64m.bin"), 64 * MIB, 77);
        let seq = ["seq", "/data/64m.bin", "16384", "2"];
        let host = f.host("randread", &seq);
        let ro = f.partition("ro:8M", "randread", &seq);
        ok(&ro, "seq");
        assert_eq!(ro.stdout, host.stdout, "{ro:?}");
        let rep = report(&ro);
        eprintln!("seq: {rep:?}");
        assert_eq!(rep.budget_kib, 8 * 1024, "{rep:?}");
        assert!(rep.resident_kib <= rep.budget_kib, "{rep:?}");
        assert!(rep.evictions > 0, "{rep:?}");
        // Both passes fetch the whole file: a scan larger than the budget
        // finds nothing of its first pass left when it comes round again.
        assert!(rep.fetched_kib >= 2 * 64 * 1024, "{rep:?}");
        // 16 KiB reads of 64 KiB blocks: three of every four hit.
        assert!(rep.hits >= 3 * 2 * 1024, "{rep:?}");

        let rand = ["rand", "/data/64m.bin", "99", "1500", "300000"];
        let host = f.host("randread", &rand);
        let ro = f.partition("ro:8M", "randread", &rand);
        ok(&ro, "rand");
        assert!(
            ro.stdout == host.stdout,
            "random reads under pressure differ from the host's:\n{}",
            first_difference(&host.stdout, &ro.stdout)
        );
        let rep = report(&ro);
        eprintln!("rand: {rep:?}");
        assert!(rep.resident_kib <= rep.budget_kib, "{rep:?}");
        assert!(rep.evictions > 0, "{rep:?}");
    }

    /// (c) Mappings of a cached file: a private mapping reads the file and
    /// a write to it stays private (pread and a second mapping still see
    /// the file), a shared read-only mapping reads the file, the tail of
    /// the last page is zero, and mappings at offsets inside a block work.
    #[test]
    fn mappings_of_cached_files_copy_on_write() {
        let Some(f) = Fixture::new("mmap") else {
            return;
        };
        // 1 MiB and 1000 bytes: the last page is partly past the end.
        random_file(&f.data().join("m.bin"), MIB + 1000, 5);
        let before = std::fs::read(f.data().join("m.bin")).unwrap();
        let args = ["mmap", "/data/m.bin"];
        let host = f.host("cachecheck", &args);
        for cache in ["none", "ro"] {
            let r = f.partition(cache, "cachecheck", &args);
            ok(&r, cache);
            // Including a shared writable mapping of a read-only
            // descriptor: refused with EACCES, as on Linux.
            assert_eq!(r.stdout, host.stdout, "--cache {cache}: {r:?}");
            assert!(
                !r.stdout.contains("shared_writable_write_reaches_file=1"),
                "--cache {cache}: a write through a shared mapping of a read-only file \
                 changed what pread reads: {r:?}"
            );
            if cache == "ro" {
                let rep = report(&r);
                eprintln!("mmap: {rep:?}");
                assert!(rep.hits > 0 && rep.misses > 0, "{rep:?}");
            }
        }
        assert!(
            std::fs::read(f.data().join("m.bin")).unwrap() == before,
            "the host file changed"
        );
    }

    /// (d) A cached read-only mount refuses every write (EROFS; EBADF for a
    /// descriptor opened for reading, as on Linux), and the host file is
    /// unchanged.
    #[test]
    fn writes_to_a_cached_read_only_mount_are_refused() {
        let Some(f) = Fixture::new("erofs") else {
            return;
        };
        let path = f.data().join("e.bin");
        random_file(&path, 200_000, 11);
        let before = std::fs::read(&path).unwrap();
        let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
        for cache in ["ro", "none"] {
            let r = f.partition(cache, "cachecheck", &["erofs", "/data/e.bin", "/data"]);
            ok(&r, cache);
            assert_eq!(
                r.stdout,
                "open_wronly=EROFS\nopen_rdwr=EROFS\nopen_trunc=EROFS\n\
                 write_rdonly_fd=EBADF\npwrite_rdonly_fd=EBADF\ntruncate=EROFS\n\
                 create=EROFS\nunlink=EROFS\nunchanged=1\n",
                "--cache {cache}: {r:?}"
            );
            assert_eq!(std::fs::read(&path).unwrap(), before, "--cache {cache}");
            assert_eq!(
                std::fs::metadata(&path).unwrap().modified().unwrap(),
                modified
            );
            assert!(!f.data().join("new-file").exists());
        }
    }

    /// (e) Read-only semantics (docs/cache.md): a file on a cached mount is
    /// assumed not to change on the host. If it changes in place anyway, a
    /// partition that already holds a block keeps reading the old bytes of
    /// that whole 64 KiB block (even pages of it it never read, and through
    /// a fresh open: the cache is keyed by inode), while blocks it never
    /// fetched read the new file. A file replaced by a new one (rename, a
    /// new inode) reads new through a fresh open and old through a
    /// descriptor opened before, as on Linux. Without the cache every read
    /// sees the host's current bytes.
    #[test]
    fn a_host_side_change_is_seen_as_documented() {
        let Some(f) = Fixture::new("stale") else {
            return;
        };
        for cache in ["ro", "none"] {
            let data = f.data().join("s.bin");
            let rep = f.data().join("replaced.bin");
            std::fs::write(&data, vec![b'A'; MIB as usize]).unwrap();
            std::fs::write(&rep, vec![b'R'; 8192]).unwrap();
            let _ = std::fs::remove_file(f.rw().join("ready"));
            let _ = std::fs::remove_file(f.rw().join("go"));
            let mut child = f
                .partition_cmd(
                    cache,
                    "cachecheck",
                    &["stale", "/data/s.bin", "/data/replaced.bin", "/rw"],
                )
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            let t0 = Instant::now();
            while !f.rw().join("ready").exists() {
                if t0.elapsed() > Duration::from_secs(60) || child.try_wait().unwrap().is_some() {
                    let _ = child.kill();
                    let out = child.wait_with_output().unwrap();
                    panic!(
                        "--cache {cache}: the program did not get ready: {}\n{}",
                        String::from_utf8_lossy(&out.stdout),
                        String::from_utf8_lossy(&out.stderr)
                    );
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            // In place: same inode, same size, every byte now 'B'.
            {
                use std::os::unix::fs::FileExt;
                let h = std::fs::OpenOptions::new().write(true).open(&data).unwrap();
                h.write_all_at(&vec![b'B'; MIB as usize], 0).unwrap();
            }
            // Replaced: a new file renamed over the old one.
            let tmp = f.data().join("replaced.new");
            std::fs::write(&tmp, vec![b'N'; 8192]).unwrap();
            std::fs::rename(&tmp, &rep).unwrap();
            std::fs::write(f.rw().join("go"), b"").unwrap();
            let deadline = Instant::now() + Duration::from_secs(60);
            while child.try_wait().unwrap().is_none() {
                if Instant::now() > deadline {
                    let _ = child.kill();
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let out = child.wait_with_output().unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success(),
                "--cache {cache}: {stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let want = if cache == "ro" {
                "before page0=A replaced=R\n\
                 after page0=A page8=A block10=B reopened=A replaced_old_fd=R replaced_reopened=N\n"
            } else {
                "before page0=A replaced=R\n\
                 after page0=B page8=B block10=B reopened=B replaced_old_fd=R replaced_reopened=N\n"
            };
            assert_eq!(stdout, want, "--cache {cache}");
        }
    }

    /// (f) A running partition dumps its cache on request (`astraea cache
    /// dump --partition ID FILE`, twice, while the program waits), `astraea
    /// ps` lists it, a wrong ID is refused with the running ones listed;
    /// a new partition started with `--cache-image` then does the same
    /// reads with hits only; a file changed on the host after the dump is
    /// skipped with a warning and fetched again.
    #[test]
    fn a_running_partition_dumps_and_a_new_one_loads_warm() {
        let Some(f) = Fixture::new("dump") else {
            return;
        };
        random_file(&f.data().join("a.bin"), 3 * MIB + 12345, 21);
        random_file(&f.data().join("b.bin"), 500_000, 22);
        let args = ["read", "/rw", "/data/a.bin", "/data/b.bin"];
        let child = f.start_waiting("ro", &[], &args);
        let id = child.id().to_string();

        let ps = f.astraea(&["ps"]);
        assert_eq!(ps.code, 0, "{ps:?}");
        assert!(
            ps.stdout
                .lines()
                .any(|l| l.trim_start().starts_with(&id) && l.contains("cachewait")),
            "astraea ps does not list partition {id}: {ps:?}"
        );
        let img = f.root.join("warm.img");
        let img2 = f.root.join("again.img");
        let d1 = f.astraea(&["cache", "dump", "--partition", &id, img.to_str().unwrap()]);
        assert_eq!(d1.code, 0, "{d1:?}");
        assert!(
            d1.stdout.starts_with("dumped ") && d1.stdout.contains("KiB to"),
            "{d1:?}"
        );
        // Relative FILE: the VMM writes it where the requester meant.
        let d2 = f.astraea(&["cache", "dump", "--partition", &id, "again.img"]);
        assert_eq!(d2.code, 0, "{d2:?}");
        let bad = f.astraea(&["cache", "dump", "--partition", "1", "x.img"]);
        assert_eq!(bad.code, 3, "{bad:?}");
        assert!(
            bad.stderr.contains("no running partition has ID 1") && bad.stderr.contains(&id),
            "{bad:?}"
        );
        let first = f.finish(child);
        ok(&first, "the dumped run");
        // The program ran on undisturbed, and exited normally.
        assert_eq!(first.stdout.lines().count(), 2, "{first:?}");
        assert_eq!(
            std::fs::read(&img).unwrap(),
            std::fs::read(&img2).unwrap(),
            "two dumps of an unchanged cache differ"
        );
        let size = std::fs::metadata(&img).unwrap().len();
        assert!(size > 3 * MIB + 500_000, "the image is too small: {size}");
        assert!(
            !f.runtime_dir()
                .join("astraea")
                .join(format!("{id}.sock"))
                .exists(),
            "the control socket outlived its partition"
        );

        // Warm: the same reads, all hits.
        let img_s = img.to_str().unwrap();
        let warm = f.finish(f.start_waiting("ro", &["--cache-image", img_s], &args));
        ok(&warm, "the warm run");
        assert_eq!(warm.stdout, first.stdout, "{warm:?}");
        assert!(
            warm.stderr
                .contains("cache image: 2 files (0 changed, skipped)"),
            "{warm:?}"
        );
        let rep = report(&warm);
        eprintln!("warm: {rep:?}");
        assert_eq!(rep.misses, 0, "a warm run fetched blocks: {warm:?}");
        assert!(rep.hits > 1000, "{rep:?}");

        // b.bin changes on the host after the dump: skipped, read fresh.
        random_file(&f.data().join("b.bin"), 500_000, 40);
        let changed = f.finish(f.start_waiting("ro", &["--cache-image", img_s], &args));
        ok(&changed, "the run after a change");
        assert!(
            changed.stderr.contains(
                "warning: /data/b.bin changed on the host since the cache image was made"
            ),
            "{changed:?}"
        );
        assert!(
            changed
                .stdout
                .starts_with(first.stdout.lines().next().unwrap())
        );
        assert_ne!(changed.stdout, first.stdout, "b.bin read its old bytes");
        let rep = report(&changed);
        eprintln!("changed: {rep:?}");
        // b.bin's 8 blocks, and only those, come from the server.
        assert_eq!(rep.misses, 8, "{rep:?}");
    }

    /// (g) A dump at exit (`--cache-dump`) still works with the control
    /// socket, and a partition with `--cache none` refuses a dump on
    /// request with a message that says why.
    #[test]
    fn dump_at_exit_and_a_refused_dump_on_request() {
        let Some(f) = Fixture::new("dumpexit") else {
            return;
        };
        random_file(&f.data().join("a.bin"), MIB, 31);
        let args = ["read", "/rw", "/data/a.bin"];
        let img = f.root.join("exit.img");
        let img_s = img.to_str().unwrap();
        let r = f.finish(f.start_waiting("ro", &["--cache-dump", img_s], &args));
        ok(&r, "--cache-dump");
        assert!(std::fs::metadata(&img).unwrap().len() > MIB, "{r:?}");
        let warm = f.finish(f.start_waiting("ro", &["--cache-image", img_s], &args));
        ok(&warm, "--cache-image");
        assert_eq!(report(&warm).misses, 0, "{warm:?}");

        let child = f.start_waiting("none", &[], &args);
        let id = child.id().to_string();
        let d = f.astraea(&["cache", "dump", "--partition", &id, "none.img"]);
        assert_eq!(d.code, 1, "{d:?}");
        assert!(d.stderr.contains("--cache none"), "{d:?}");
        ok(&f.finish(child), "--cache none");
    }

    /// (h) The attribute cache's read-only semantics (docs/cache.md): on a
    /// cached mount a path that did not exist stays ENOENT for `stat` and
    /// `open` after the host creates it during the run; without the cache
    /// it appears.
    #[test]
    fn a_failed_lookup_is_remembered_on_a_cached_mount_only() {
        let Some(f) = Fixture::new("negative") else {
            return;
        };
        for (cache, after) in [("ro", "ENOENT"), ("none", "ok")] {
            let new = f.data().join("new.txt");
            let _ = std::fs::remove_file(&new);
            let child = f.start_waiting(cache, &[], &["stat", "/data/new.txt", "/rw"]);
            std::fs::write(&new, b"created by the host\n").unwrap();
            let r = f.finish(child);
            ok(&r, cache);
            assert_eq!(
                r.stdout,
                format!("before stat=ENOENT open=ENOENT\nafter stat={after} open={after}\n"),
                "--cache {cache}: {r:?}"
            );
        }
    }

    /// A read-only mount marked `:nocache` is read from the host every
    /// time, and a read-write mount cannot be marked `:cache`.
    #[test]
    fn mounts_choose_their_cache_policy() {
        let Some(f) = Fixture::new("policy") else {
            return;
        };
        random_file(&f.data().join("p.bin"), MIB, 9);
        let args = ["rand", "/data/p.bin", "7", "50", "4096"];
        let host = f.host("randread", &args);
        let mut c = f.partition_cmd("ro", "randread", &args);
        // The same command with the data mount marked :nocache.
        let cmd: Vec<String> = c
            .get_args()
            .map(|a| {
                let a = a.to_string_lossy().into_owned();
                if a.ends_with(":/data:ro") {
                    format!("{a}:nocache")
                } else {
                    a
                }
            })
            .collect();
        c = Command::new(astraea());
        c.env("XDG_RUNTIME_DIR", f.runtime_dir())
            .args(&cmd)
            .current_dir(&f.root);
        let r = run_with_timeout(&mut c, TIMEOUT);
        ok(&r, "randread on a :nocache mount");
        assert_eq!(r.stdout, host.stdout, "{r:?}");
        let rep = report(&r);
        assert_eq!((rep.hits, rep.misses), (0, 0), "{r:?}");

        let mut bad = Command::new(astraea());
        bad.args(["run", "--mount"])
            .arg(format!("{}:/rw:cache", f.rw().display()))
            .args(["--", "/rw/x"]);
        let r = run_with_timeout(&mut bad, TIMEOUT);
        assert_eq!(r.code, 125, "{r:?}");
        assert!(
            r.stderr.contains("a read-write mount cannot be cached"),
            "{r:?}"
        );
    }
}
