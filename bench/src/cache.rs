//! The Libra paper's file I/O experiments, re-run with the library OS's file
//! cache (issue 6; docs/cache.md):
//!
//! - `fig5 [MAX_CALLS]`: Figure 5, read throughput of a 128 MiB file that
//!   sits in the host's page cache, with `FileInputStream.read(byte[])` and
//!   buffers of 64 B to 64 KiB (`bench/java/ReadBench.java`), on the host
//!   JVM and in partitions with `--cache none` and `--cache ro`, one run
//!   each, as MB/s and as speedups over the host. Each size reads the file
//!   from its start to its end or for MAX_CALLS reads (default 131072: the
//!   uncached partition needs ≈ 50–80 µs per read, the whole file in 64 B
//!   reads would take minutes).
//! - `table1`: Table 1, `java -version`, Hello and `javac` compiling
//!   `jvm-port/java/*.java`, each on the host and in partitions with `--cache
//!   none` and `ro`: wall time, read calls (from a separate `--strace` run)
//!   and the KiB the partition fetched (from the `--log info` exit report).
//!
//! JDK 17 (`/usr/lib/jvm/java-17-openjdk-amd64`). The partitions use the
//! default namespace (the host's `/` read-only, hence cached; the working
//! directory read-write, hence not), run from a scratch directory apart from
//! the data, classes and sources, so that these are under the cached `/`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use super::{astraea, root};

const JDK: &str = "/usr/lib/jvm/java-17-openjdk-amd64";
const FILE_MIB: u64 = 128;
const SIZES: [u64; 6] = [64, 256, 1024, 4096, 16384, 65536];

/// The scratch layout: `DIR/data` (the file), `DIR/classes`, `DIR/src`, and
/// `DIR/run` (the partitions' working directory, read-write).
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let d = std::env::temp_dir().join(format!("astraea-bench-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        for s in ["data", "classes", "src", "run"] {
            std::fs::create_dir_all(d.join(s)).expect("scratch dir");
        }
        Self(d)
    }

    fn sub(&self, s: &str) -> PathBuf {
        self.0.join(s)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn jdk_present() -> bool {
    if Path::new(JDK).join("bin/java").exists() {
        return true;
    }
    eprintln!("\n*** SKIPPED: no JDK 17 at {JDK} ***\n");
    false
}

fn javac(dest: &Path, srcs: &[PathBuf]) -> bool {
    Command::new(Path::new(JDK).join("bin/javac"))
        .args(["--release", "17", "-d"])
        .arg(dest)
        .args(srcs)
        .status()
        .is_ok_and(|s| s.success())
}

/// One run: wall time, exit success, stdout, stderr.
struct Out {
    ms: f64,
    ok: bool,
    stdout: String,
    stderr: String,
}

fn timed(cmd: &mut Command) -> Out {
    let t = Instant::now();
    let o = cmd
        .stdin(Stdio::null())
        .output()
        .expect("cannot run the command (build astraea first)");
    let ms = t.elapsed().as_secs_f64() * 1e3;
    Out {
        ms,
        ok: o.status.success(),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// `astraea run --mem 2G --cache POLICY EXTRA -- ARGS` from `cwd`.
fn partition(cwd: &Path, policy: &str, extra: &[&str], args: &[String]) -> Out {
    timed(
        Command::new(astraea())
            .args(["run", "--mem", "2G", "--cache", policy])
            .args(extra)
            .arg("--")
            .args(args)
            .current_dir(cwd),
    )
}

/// What `--log info` reports at exit.
#[derive(Default, Clone, Copy)]
struct Report {
    fault_kib: u64,
    hits: u64,
    misses: u64,
    fetched_kib: u64,
    evictions: u64,
    resident_kib: u64,
}

fn numbers(line: &str) -> Vec<u64> {
    line.split(|c: char| !c.is_ascii_digit())
        .filter(|w| !w.is_empty())
        .filter_map(|w| w.parse().ok())
        .collect()
}

fn report(stderr: &str) -> Report {
    let mut r = Report::default();
    for line in stderr.lines() {
        if let Some(i) = line.find(" file (") {
            // "... + N file (K KiB read, ...": K is the first number after.
            r.fault_kib = numbers(&line[i..]).first().copied().unwrap_or(0);
        }
        if let Some(i) = line.find("file cache ") {
            let n = numbers(&line[i..]);
            if n.len() >= 6 {
                let k = n.len();
                (r.hits, r.misses, r.fetched_kib, r.evictions, r.resident_kib) =
                    (n[k - 6], n[k - 5], n[k - 4], n[k - 3], n[k - 2]);
            }
        }
    }
    r
}

/// `read` and `pread64` calls in `--strace` output and the bytes they
/// returned.
fn read_calls(stderr: &str) -> (u64, u64) {
    let mut calls = 0;
    let mut bytes = 0;
    for line in stderr.lines() {
        let l = line.trim_start_matches("[strace] ");
        if l.starts_with("read(") || l.starts_with("pread64(") {
            calls += 1;
            if let Some((_, ret)) = l.rsplit_once(" = ")
                && let Ok(n) = ret.trim().parse::<i64>()
            {
                bytes += n.max(0) as u64;
            }
        }
    }
    (calls, bytes)
}

/// `ReadBench`'s lines: size → MB/s.
fn mbps(stdout: &str) -> Vec<(u64, f64)> {
    stdout
        .lines()
        .filter_map(|l| {
            let get = |k: &str| {
                l.split_whitespace()
                    .find_map(|w| w.strip_prefix(k)?.strip_prefix('='))
            };
            Some((get("size")?.parse().ok()?, get("mbps")?.parse().ok()?))
        })
        .collect()
}

/// Figure 5.
pub fn fig5(max_calls: u64) {
    println!(
        "## fig5: FileInputStream.read(byte[]) of a {FILE_MIB} MiB file in the host's page \
         cache, JDK 17, one run each, up to {max_calls} reads per size (MB/s, MB = 10^6 B)"
    );
    if !jdk_present() {
        return;
    }
    let s = Scratch::new("fig5");
    let file = s.sub("data").join("file.bin");
    {
        use std::io::Write;
        let mut f = std::io::BufWriter::new(std::fs::File::create(&file).expect("data file"));
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut chunk = vec![0u8; 1 << 20];
        for _ in 0..FILE_MIB {
            for w in chunk.chunks_exact_mut(8) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                w.copy_from_slice(&x.to_le_bytes());
            }
            f.write_all(&chunk).expect("write data");
        }
        f.flush().expect("write data");
    }
    // Into the host's page cache.
    let _ = std::fs::read(&file);
    if !javac(
        &s.sub("classes"),
        &[root().join("bench/java/ReadBench.java")],
    ) {
        eprintln!("\n*** SKIPPED fig5: javac failed ***\n");
        return;
    }
    let args: Vec<String> = vec![
        format!("{JDK}/bin/java"),
        "-cp".into(),
        s.sub("classes").display().to_string(),
        "ReadBench".into(),
        file.display().to_string(),
        max_calls.to_string(),
    ];
    let host = timed(Command::new(&args[0]).args(&args[1..]));
    let none = partition(&s.sub("run"), "none", &["--log", "info"], &args);
    let ro = partition(&s.sub("run"), "ro", &["--log", "info"], &args);
    for (name, o) in [("host", &host), ("none", &none), ("ro", &ro)] {
        if !o.ok {
            println!("{name}: ReadBench failed:\n{}", o.stderr.trim());
        }
    }
    let (h, n, r) = (mbps(&host.stdout), mbps(&none.stdout), mbps(&ro.stdout));
    let at = |v: &[(u64, f64)], size: u64| {
        v.iter()
            .find(|(s, _)| *s == size)
            .map_or(f64::NAN, |(_, m)| *m)
    };
    println!(
        "{:>8} {:>10} {:>14} {:>14} {:>12} {:>12}",
        "buffer", "host MB/s", "none MB/s", "ro MB/s", "ro / host", "ro / none"
    );
    for size in SIZES {
        let (hv, nv, rv) = (at(&h, size), at(&n, size), at(&r, size));
        let label = if size >= 1024 {
            format!("{} KiB", size / 1024)
        } else {
            format!("{size} B")
        };
        println!(
            "{label:>8} {hv:>10.1} {:>14} {:>14} {:>11.2}x {:>11.1}x",
            format!("{nv:.1} ({:.3}x)", nv / hv),
            format!("{rv:.1} ({:.2}x)", rv / hv),
            rv / hv,
            rv / nv
        );
    }
    let rep = report(&ro.stderr);
    println!(
        "wall: host {:.0} ms, none {:.0} ms, ro {:.0} ms; ro cache: {} hits, {} misses, \
         {} KiB fetched, {} evictions, {} KiB resident",
        host.ms,
        none.ms,
        ro.ms,
        rep.hits,
        rep.misses,
        rep.fetched_kib,
        rep.evictions,
        rep.resident_kib
    );
    println!();
}

/// Table 1.
pub fn table1() {
    println!(
        "## table1: JVM workloads with and without the file cache, JDK 17, one run each \
         (--mem 2G; read calls from a separate --strace run)"
    );
    if !jdk_present() {
        return;
    }
    let s = Scratch::new("table1");
    let hello = root().join("jvm-port/java/Hello.java");
    if !javac(&s.sub("classes"), &[hello]) {
        eprintln!("\n*** SKIPPED table1: javac failed ***\n");
        return;
    }
    let greeting = s.sub("data").join("greeting.txt");
    std::fs::write(&greeting, "hello\n").expect("greeting");
    // The sources javac compiles, under the cached `/` (not in the
    // read-write working directory); the classes go to the working
    // directory.
    let mut srcs: Vec<String> = std::fs::read_dir(root().join("jvm-port/java"))
        .expect("jvm-port/java")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "java"))
        .map(|p| {
            let to = s.sub("src").join(p.file_name().expect("file name"));
            std::fs::copy(&p, &to).expect("copy source");
            to.display().to_string()
        })
        .collect();
    srcs.sort();
    let java = format!("{JDK}/bin/java");
    let mut javac_args = vec![format!("{JDK}/bin/javac"), "-d".into(), "out".into()];
    javac_args.extend(srcs.iter().cloned());
    let cases: Vec<(String, Vec<String>)> = vec![
        (
            "java -version".into(),
            vec![java.clone(), "-version".into()],
        ),
        (
            "Hello".into(),
            vec![
                java,
                "-cp".into(),
                s.sub("classes").display().to_string(),
                "Hello".into(),
                greeting.display().to_string(),
            ],
        ),
        (format!("javac ({} files)", srcs.len()), javac_args),
    ];
    println!(
        "{:<22} {:<6} {:>9} {:>9} {:>7} {:>10} {:>12} {:>13} {:>15}",
        "workload",
        "cache",
        "wall ms",
        "host ms",
        "/host",
        "read calls",
        "KiB by read",
        "KiB from 9P",
        "hits/misses"
    );
    let run = s.sub("run");
    for (name, args) in &cases {
        let clean = || {
            let _ = std::fs::remove_dir_all(run.join("out"));
        };
        clean();
        let host = timed(Command::new(&args[0]).args(&args[1..]).current_dir(&run));
        if !host.ok {
            println!("{name}: fails on the host: {}", host.stderr.trim());
        }
        for policy in ["none", "ro"] {
            clean();
            let o = partition(&run, policy, &["--log", "info"], args);
            clean();
            let t = partition(&run, policy, &["--strace"], args);
            clean();
            if !o.ok || !t.ok {
                println!(
                    "{name} --cache {policy}: failed:\n{}",
                    o.stderr
                        .lines()
                        .rev()
                        .take(5)
                        .collect::<Vec<_>>()
                        .join("\n")
                );
            }
            let rep = report(&o.stderr);
            let (calls, bytes) = read_calls(&t.stderr);
            // From the host: pages of mapped files read on faults, plus
            // with the cache its block fetches (reads and mappings of
            // cached files), without it every read's bytes.
            let from_host = rep.fault_kib
                + if policy == "ro" {
                    rep.fetched_kib
                } else {
                    bytes / 1024
                };
            println!(
                "{:<22} {:<6} {:>9.0} {:>9.0} {:>6.2}x {:>10} {:>12} {:>13} {:>15}",
                name,
                policy,
                o.ms,
                host.ms,
                o.ms / host.ms,
                calls,
                bytes / 1024,
                from_host,
                if policy == "ro" {
                    format!("{}/{}", rep.hits, rep.misses)
                } else {
                    "-".into()
                }
            );
        }
    }
    println!(
        "(KiB from 9P: without the cache, file-fault reads plus the bytes of every read call; \
         with it, file-fault reads plus the cache's block fetches, which also serve mappings)"
    );
    println!();
}

/// Median of `v` (sorted in place).
fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Warm start (issue 6): `java -cp DIR Hello FILE` with a cold cache
/// (`--cache ro`) against a warm one (`--cache-image` of a `--cache-dump`
/// of the same command), `runs` runs each after one unmeasured run of
/// each, medians, and the same command on the host.
pub fn warm(runs: usize) {
    let runs = runs.max(1);
    println!(
        "## warm: JVM start-up (java -cp DIR Hello FILE), JDK 17, --mem 2G, cold (--cache ro) \
         vs warm (--cache-image from a --cache-dump of the same command), {runs} runs each, medians"
    );
    if !jdk_present() {
        return;
    }
    let s = Scratch::new("warm");
    let hello = root().join("jvm-port/java/Hello.java");
    if !javac(&s.sub("classes"), &[hello]) {
        eprintln!("\n*** SKIPPED warm: javac failed ***\n");
        return;
    }
    let greeting = s.sub("data").join("greeting.txt");
    std::fs::write(&greeting, "hello\n").expect("greeting");
    let args: Vec<String> = vec![
        format!("{JDK}/bin/java"),
        "-cp".into(),
        s.sub("classes").display().to_string(),
        "Hello".into(),
        greeting.display().to_string(),
    ];
    let run = s.sub("run");
    // The image lies outside the working directory (and the cached `/`
    // would not cache it anyway: the VMM reads it on the host).
    let image = s.sub("data").join("hello.img");
    let image_s = image.display().to_string();
    let dump = partition(&run, "ro", &["--cache-dump", &image_s], &args);
    if !dump.ok {
        eprintln!(
            "astraea-bench: the --cache-dump run failed:\n{}",
            dump.stderr
        );
        return;
    }
    let kib = std::fs::metadata(&image).map_or(0, |m| m.len() / 1024);
    let host = || {
        timed(
            Command::new(&args[0])
                .args(&args[1..])
                .current_dir(&run)
                .stdout(Stdio::null()),
        )
    };
    let cold = || partition(&run, "ro", &["--log", "info"], &args);
    let warm = || {
        partition(
            &run,
            "ro",
            &["--log", "info", "--cache-image", &image_s],
            &args,
        )
    };
    // One unmeasured run of each: the host's page cache holds the JDK and
    // the image for all of them.
    let _ = (host(), cold(), warm());
    let (mut h, mut c, mut w) = (Vec::new(), Vec::new(), Vec::new());
    let (mut crep, mut wrep) = (Report::default(), Report::default());
    for _ in 0..runs {
        h.push(host().ms);
        let o = cold();
        assert!(o.ok, "cold run failed:\n{}", o.stderr);
        crep = report(&o.stderr);
        c.push(o.ms);
        let o = warm();
        assert!(o.ok, "warm run failed:\n{}", o.stderr);
        wrep = report(&o.stderr);
        w.push(o.ms);
    }
    let (h, c, w) = (median(&mut h), median(&mut c), median(&mut w));
    println!("image: {kib} KiB");
    println!(
        "{:<8} {:>9} {:>7} {:>8} {:>8} {:>12}",
        "", "wall ms", "/host", "hits", "misses", "fetched KiB"
    );
    println!(
        "{:<8} {:>9.1} {:>7} {:>8} {:>8} {:>12}",
        "host", h, "1.00", "-", "-", "-"
    );
    for (name, ms, r) in [("cold", c, crep), ("warm", w, wrep)] {
        println!(
            "{:<8} {:>9.1} {:>7.2} {:>8} {:>8} {:>12}",
            name,
            ms,
            ms / h,
            r.hits,
            r.misses,
            r.fetched_kib
        );
    }
    println!("warm/cold: {:.2}", w / c);
}
