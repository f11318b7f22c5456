//! Astraea's benchmarks: the same work on the host and in a partition, in one
//! run, printed as absolute figures and ratios.
//!
//! ```text
//! astraea-bench [boot [RUNS]] [ctxswitch [ROUNDS]] [ninep [N]] [linux [ROUNDS]]
//!               [jvm [RUNS]] [scimark [SECS]] [threads [SECS]] [net] [search]
//!               [snapshot [RUNS]]
//!               (default: all but `threads`, which takes ≈ 8 minutes;
//!               `THREADS_CASES=ForkJoin,Barrier` runs only those cases)
//! ```
//!
//! It runs the `astraea` binary and kernel images that `./x build` produced
//! (or those named by `ASTRAEA_BIN` and `ASTRAEA_KERNEL_DIR`); `linux` also
//! needs `gcc`, with which it builds `bench/progs/lxbench.c`.

mod cache;
mod javabench;
mod net;
mod search;
mod snapshot;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    let mut ran = false;
    while i < args.len() {
        let n = args.get(i + 1).and_then(|s| s.parse::<u64>().ok());
        match args[i].as_str() {
            "boot" => boot(n.unwrap_or(25) as usize),
            "ctxswitch" => ctxswitch(n.unwrap_or(2000)),
            "ninep" => ninep(n.unwrap_or(3000) as usize),
            "linux" => linux(n.unwrap_or(7) as usize),
            "jvm" => jvm(n.unwrap_or(5) as usize),
            "fig5" => cache::fig5(n.unwrap_or(131_072)),
            "table1" => cache::table1(),
            "warm" => cache::warm(n.unwrap_or(5) as usize),
            "scimark" => javabench::scimark(n.unwrap_or(2)),
            "threads" => javabench::threads(n.unwrap_or(1)),
            "net" => net::net(),
            "search" => search::search(),
            "snapshot" => snapshot::snapshot(n.unwrap_or(7) as usize),
            other => {
                eprintln!(
                    "astraea-bench: unknown benchmark {other:?} (boot, ctxswitch, ninep, linux, jvm, fig5, table1, warm, scimark, threads, net, search, snapshot)"
                );
                std::process::exit(2);
            }
        }
        ran = true;
        i += if n.is_some() { 2 } else { 1 };
    }
    if !ran {
        boot(25);
        ctxswitch(2000);
        ninep(3000);
        linux(7);
        jvm(5);
        javabench::scimark(2);
    }
}

/// JVM start-up: `java -version` and a Hello that reads a file, launch to
/// exit, on the host and in a partition, for each installed JDK; the
/// partition's time is split into boot (VMM start to kernel ready) and the
/// JVM's part (kernel ready to exit) from `--timings`.
fn jvm(runs: usize) {
    let jdks: Vec<(&str, PathBuf)> = [
        ("17", "/usr/lib/jvm/java-17-openjdk-amd64"),
        ("25", "/usr/lib/jvm/temurin-25-jdk-amd64"),
    ]
    .into_iter()
    .map(|(n, d)| (n, PathBuf::from(d)))
    .filter(|(_, d)| d.join("bin/java").exists())
    .collect();
    if jdks.is_empty() {
        eprintln!("\n*** SKIPPED jvm: no JDK at the known paths ***\n");
        return;
    }
    let dir = std::env::temp_dir().join(format!("astraea-bench-jvm-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let javac = jdks[0].1.join("bin/javac");
    let ok = Command::new(&javac)
        .args(["--release", "17", "-d"])
        .arg(&dir)
        .arg(root().join("jvm-port/java/Hello.java"))
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("\n*** SKIPPED jvm: javac failed ***\n");
        return;
    }
    let greeting = dir.join("greeting.txt");
    std::fs::write(&greeting, "hello\n").expect("greeting");
    println!("\n== JVM start-up, launch to exit, median of {runs} runs (ms)");
    println!(
        "{:<28} {:>9} {:>11} {:>7} {:>10} {:>9}",
        "case", "host", "partition", "ratio", "boot", "jvm part"
    );
    for (name, home) in &jdks {
        let java = home.join("bin/java");
        let cp = dir.to_string_lossy().into_owned();
        let g = greeting.to_string_lossy().into_owned();
        let cases: [(&str, Vec<String>); 2] = [
            ("java -version", vec!["-version".into()]),
            (
                "Hello (reads a file)",
                vec!["-cp".into(), cp, "Hello".into(), g],
            ),
        ];
        for (case, args) in cases {
            let mut host = Vec::new();
            let mut part = Vec::new();
            let mut boot_ms = Vec::new();
            let mut jvm_ms = Vec::new();
            for _ in 0..runs {
                let t = Instant::now();
                let _ = Command::new(&java).args(&args).output();
                host.push(t.elapsed().as_secs_f64() * 1e3);
                let t = Instant::now();
                let out = Command::new(astraea())
                    .args(["run", "--timings", "--mem", "2G", "--kernel"])
                    .arg(kernel("astraea-kernel"))
                    .arg("--")
                    .arg(&java)
                    .args(&args)
                    .output();
                part.push(t.elapsed().as_secs_f64() * 1e3);
                if let Ok(o) = out {
                    let err = String::from_utf8_lossy(&o.stderr);
                    if let (Some(ready), Some(exit)) =
                        (field(&err, "kernel_ready_us"), field(&err, "exit_us"))
                    {
                        boot_ms.push(ready as f64 / 1e3);
                        jvm_ms.push((exit - ready) as f64 / 1e3);
                    }
                }
            }
            let med = |v: Vec<f64>| if v.is_empty() { f64::NAN } else { stats(v).0 };
            let (h, p) = (med(host), med(part));
            println!(
                "{:<28} {:>9.1} {:>11.1} {:>6.2}x {:>10.1} {:>9.1}",
                format!("{case} ({name})"),
                h,
                p,
                p / h,
                med(boot_ms),
                med(jvm_ms)
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn astraea() -> PathBuf {
    std::env::var_os("ASTRAEA_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/release/astraea"))
}

fn gateway() -> PathBuf {
    std::env::var_os("ASTRAEA_GATEWAY_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/release/astraea-gateway"))
}

fn kernel(name: &str) -> PathBuf {
    std::env::var_os("ASTRAEA_KERNEL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/x86_64-unknown-none/release"))
        .join(name)
}

fn field(text: &str, key: &str) -> Option<i64> {
    text.split_whitespace()
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
        .and_then(|v| v.parse().ok())
}

/// Median, minimum and maximum of a sample.
fn stats(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(|a, b| a.total_cmp(b));
    let med = if v.is_empty() {
        f64::NAN
    } else {
        v[v.len() / 2]
    };
    (
        med,
        *v.first().unwrap_or(&f64::NAN),
        *v.last().unwrap_or(&f64::NAN),
    )
}

/// Partition boot: `astraea run` of the minimal image, start to exit, with
/// the phases the VMM measures.
fn boot(runs: usize) {
    println!("## boot: {runs} runs of `astraea run --timings` (minimal partition, 512 MiB)");
    let k = kernel("astraea-kernel");
    let mut phases: Vec<(&str, Vec<f64>)> = [
        "vm_create_us",
        "load_us",
        "kernel_entry_us",
        "kernel_ready_us",
        "exit_us",
        "total_us",
    ]
    .into_iter()
    .map(|p| (p, Vec::new()))
    .collect();
    let mut wall = Vec::new();
    for _ in 0..runs {
        let t0 = Instant::now();
        let out = Command::new(astraea())
            .args(["run", "--timings", "--kernel"])
            .arg(&k)
            .stdout(Stdio::null())
            .output()
            .expect("cannot run astraea (build it with ./x build)");
        wall.push(t0.elapsed().as_secs_f64() * 1e6);
        assert!(
            out.status.success(),
            "partition failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let err = String::from_utf8_lossy(&out.stderr);
        for (name, v) in &mut phases {
            if let Some(x) = field(&err, name) {
                v.push(x as f64);
            }
        }
    }
    println!(
        "{:<30} {:>12} {:>12} {:>12}",
        "phase (from astraea start)", "median µs", "min µs", "max µs"
    );
    for (name, v) in phases {
        let (m, lo, hi) = stats(v);
        println!("{name:<30} {m:>12.0} {lo:>12.0} {hi:>12.0}");
    }
    let (m, lo, hi) = stats(wall);
    println!(
        "{:<30} {m:>12.0} {lo:>12.0} {hi:>12.0}",
        "process wall time"
    );
    println!();
}

/// Context switch: two kernel threads ping-ponging through wait queues in a
/// partition against two host threads ping-ponging through futexes.
fn ctxswitch(rounds: u64) {
    println!("## ctxswitch: {rounds} round trips (2 switches each)");
    let host = host_pingpong(rounds);
    let host_ns = host.as_nanos() as f64 / rounds as f64;
    let out = Command::new(astraea())
        .args(["run", "--kernel"])
        .arg(kernel("astraea-ktest"))
        .args(["--", "pingpong", &rounds.to_string()])
        .output()
        .expect("cannot run astraea (build it with ./x build)");
    let text = String::from_utf8_lossy(&out.stdout);
    let part_ns = field(&text, "ns_per_round").unwrap_or(-1) as f64;
    println!("{:<34} {:>14}", "where", "ns per round");
    println!("{:<34} {:>14.0}", "host: 2 threads, futex", host_ns);
    println!("{:<34} {:>14.0}", "partition: 2 kernel threads", part_ns);
    println!(
        "partition / host = {:.4}x (lower is better); the partition is {:.1}x faster",
        part_ns / host_ns,
        host_ns / part_ns
    );
    println!();
}

fn futex(word: &AtomicU32, op: i32, val: u32) {
    // SAFETY: FUTEX_WAIT/WAKE on a live, aligned u32 with no timeout; the
    // kernel only reads the word and queues or wakes waiters.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            op | libc::FUTEX_PRIVATE_FLAG,
            val,
            std::ptr::null::<libc::timespec>(),
            0,
            0,
        );
    }
}

fn host_pingpong(rounds: u64) -> Duration {
    let turn = Arc::new(AtomicU32::new(0));
    let player = |me: u32| {
        let t = turn.clone();
        move || {
            for _ in 0..rounds {
                loop {
                    let v = t.load(Ordering::Acquire);
                    if v == me {
                        break;
                    }
                    futex(&t, libc::FUTEX_WAIT, v);
                }
                t.store(1 - me, Ordering::Release);
                futex(&t, libc::FUTEX_WAKE, 1);
            }
        }
    };
    let t0 = Instant::now();
    let a = std::thread::spawn(player(0));
    let b = std::thread::spawn(player(1));
    a.join().expect("ping");
    b.join().expect("pong");
    t0.elapsed()
}

/// A server process killed when dropped.
struct Server(std::process::Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("no free port")
}

fn wait_for(ready: impl Fn() -> bool) {
    let t0 = Instant::now();
    while !ready() {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "server did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn spawn(cmd: &mut Command) -> Server {
    Server(
        cmd.stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("cannot start the server (build it with ./x build)"),
    )
}

/// 9P round trips from inside a partition over each transport, against a
/// host `pread` of 1 KiB in the same run.
fn ninep(n: usize) {
    println!("## ninep: {n} Tgetattr and {n} 1 KiB Tread round trips, then 16 MiB in 64 KiB reads");
    let dir = std::env::temp_dir().join(format!("astraea-bench-9p-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let data = dir.join("data.bin");
    let bytes: Vec<u8> = (0..16u32 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    std::fs::write(&data, &bytes).expect("write data");
    let host_ns = host_pread(&data, n);
    let k = kernel("astraea-ktest");
    let run = |extra: &[&str]| -> String {
        let out = Command::new(astraea())
            .args(["run", "--kernel"])
            .arg(&k)
            .args(extra)
            .args(["--", "9p-bench", "/data.bin", &n.to_string()])
            .output()
            .expect("cannot run astraea");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let mount = format!("{}:/", dir.display());
    let mut rows: Vec<(String, String)> = Vec::new();
    rows.push((
        "in-process virtio (default)".into(),
        run(&["--mount", &mount]),
    ));
    {
        let sock = dir.join("gw.sock");
        let _gw = spawn(
            Command::new(gateway())
                .arg("--vhost-user")
                .arg(&sock)
                .args(["--export", &mount]),
        );
        wait_for(|| sock.exists());
        let target = format!("vhost-user:{}", sock.display());
        rows.push((
            "vhost-user (astraea-gateway)".into(),
            run(&["--gateway", &target]),
        ));
    }
    {
        let port = free_port();
        let _gw = spawn(
            Command::new(gateway())
                .arg("--listen")
                .arg(format!("tcp:127.0.0.1:{port}"))
                .args(["--export", &mount]),
        );
        wait_for(|| std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
        let target = format!("tcp:127.0.0.1:{port}");
        rows.push((
            "TCP loopback (astraea-gateway)".into(),
            run(&["--9p", &target]),
        ));
    }
    if std::path::Path::new("/usr/sbin/diod").exists() {
        let port = free_port();
        let _d = spawn(
            Command::new("/usr/sbin/diod")
                .args(["-f", "-n", "-S", "-U", "root", "-e"])
                .arg(&dir)
                .arg("-l")
                .arg(format!("127.0.0.1:{port}")),
        );
        wait_for(|| std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
        let target = format!("tcp:127.0.0.1:{port}");
        let aname = dir.display().to_string();
        rows.push((
            "TCP loopback (diod)".into(),
            run(&["--9p", &target, "--9p-aname", &aname]),
        ));
    }
    println!(
        "{:<32} {:>12} {:>12} {:>12} {:>12} {:>10}",
        "transport", "getattr p50", "getattr p90", "read1k p50", "read1k p90", "64K MiB/s"
    );
    for (name, out) in &rows {
        let us = |k: &str| {
            field(out, k).map_or("-".to_string(), |v| format!("{:.1} us", v as f64 / 1000.0))
        };
        println!(
            "{name:<32} {:>12} {:>12} {:>12} {:>12} {:>10}",
            us("getattr_ns_p50"),
            us("getattr_ns_p90"),
            us("read1k_ns_p50"),
            us("read1k_ns_p90"),
            field(out, "read64k_mib_per_s").map_or("-".into(), |v| v.to_string())
        );
    }
    println!(
        "{:<32} {:>12} {:>12} {:>12.1} us",
        "host pread(1 KiB), reference",
        "",
        "",
        host_ns / 1000.0
    );
    if let Some(p) = rows.first().and_then(|(_, o)| field(o, "read1k_ns_p50")) {
        println!(
            "in-process 1 KiB read / host pread = {:.1}x",
            p as f64 / host_ns
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    println!();
}

/// Median time of a 1 KiB `pread` of a file in the page cache.
fn host_pread(path: &std::path::Path, n: usize) -> f64 {
    use std::os::unix::fs::FileExt;
    let f = std::fs::File::open(path).expect("open");
    let mut buf = [0u8; 1024];
    let mut v = Vec::with_capacity(n);
    for i in 0..n {
        let t = Instant::now();
        f.read_at(&mut buf, (i as u64 % 64) * 1024).expect("pread");
        v.push(t.elapsed().as_nanos() as f64);
    }
    stats(v).0
}

/// What `lxbench` measures, in the order it prints them: its key and a name
/// for people.
const LX_ROWS: &[(&str, &str)] = &[
    ("getpid_ns", "getpid, syscall(SYS_getpid)"),
    ("fault_page_ns", "first touch, per 4 KiB page"),
    ("fault_16th_ns", "first touch, every 16th page"),
    ("futex_rt_ns", "futex ping-pong round trip"),
    ("thread_ns", "pthread_create + join"),
    ("pread1k_ns", "pread 1 KiB of a host file"),
    ("wake_hog_ns", "wake-up behind a spinning thread"),
    ("getpid_wrapper_ns", "getpid, glibc getpid()"),
    ("pipe_rt_ns", "pipe round trip (two threads)"),
    ("pread1k_cached_ns", "pread 1 KiB, cached file"),
    ("read1k_cached_ns", "read 1 KiB, cached file"),
    ("read64_cached_ns", "read 64 B, cached file"),
    ("read256_cached_ns", "read 256 B, cached file"),
    ("read1k_cached_ns2", "read 1 KiB, cached file (again)"),
    ("read4k_cached_ns", "read 4 KiB, cached file"),
    ("read16k_cached_ns", "read 16 KiB, cached file"),
    ("read64k_cached_ns", "read 64 KiB, cached file"),
];

/// How long one run of `lxbench` may take before it counts as hung.
const LX_TIMEOUT: Duration = Duration::from_secs(300);

/// The Linux personality: `bench/progs/lxbench.c`, built with glibc, run on
/// the host and then unmodified in a partition, each measurement the median
/// of `rounds` rounds.
fn linux(rounds: usize) {
    println!(
        "## linux: lxbench (gcc -O2 -pthread, glibc) on the host and in a partition \
         (system calls trapping, and entering directly), median of {rounds} rounds, ns per operation"
    );
    let dir = std::env::temp_dir().join(format!("astraea-bench-linux-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let src = root().join("bench/progs/lxbench.c");
    let built = Command::new("gcc")
        .args(["-O2", "-pthread", "-Wall", "-o"])
        .arg(dir.join("lxbench"))
        .arg(&src)
        .output();
    match built {
        Ok(o) if o.status.success() => {}
        Ok(o) => panic!("gcc failed: {}", String::from_utf8_lossy(&o.stderr)),
        Err(e) => {
            println!("SKIPPED: cannot run gcc ({e}); install it to run this benchmark\n");
            let _ = std::fs::remove_dir_all(&dir);
            return;
        }
    }
    let data: Vec<u8> = (0..1u32 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    std::fs::write(dir.join("data.bin"), &data).expect("write data");
    // The current directory is exported read-write (never cached); a file
    // outside it and outside /tmp (read-write too, by default) is reached
    // through the host's read-only, cached `/`.
    let run_dir = dir.join("run");
    std::fs::create_dir_all(&run_dir).expect("run dir");
    std::fs::write(run_dir.join("data.bin"), &data).expect("write data");
    let cached_dir = root().join("target/bench-cache/linux");
    std::fs::create_dir_all(&cached_dir).expect("target/bench-cache/linux");
    let cached = cached_dir.join("data.bin");
    std::fs::write(&cached, &data).expect("write data");
    let cached = cached.to_str().expect("utf-8 path");
    let rounds_s = rounds.to_string();
    let tests = "getpid,futex,thread,fault,pread,wake,getpidw,pipe,cached,sizes";
    let args = ["./lxbench", "data.bin", &rounds_s, tests, cached];
    let exe = dir.join("lxbench");
    let host = run_timeout(Command::new(&exe).args(&args[1..]), &run_dir);
    let partition = |entry: &str| {
        run_timeout(
            Command::new(astraea())
                .args(["run", "--syscall-entry", entry, "--kernel"])
                .arg(kernel("astraea-kernel"))
                .arg("--")
                .arg(&exe)
                .args(&args[1..]),
            &run_dir,
        )
    };
    let trap = partition("trap");
    let direct = partition("direct");
    for (which, (ok, _, err)) in [("host", &host), ("trap", &trap), ("direct", &direct)] {
        if !ok {
            println!("{which}: lxbench failed: {}", err.trim());
        }
    }
    let (h, t, d) = (lx_parse(&host.1), lx_parse(&trap.1), lx_parse(&direct.1));
    println!(
        "{:<32} {:>11} {:>11} {:>9} {:>11} {:>9}   {:>23}",
        "operation", "host", "trap", "trap/host", "direct", "dir/host", "direct min..max"
    );
    for (key, name) in LX_ROWS {
        let get = |m: &[(String, [f64; 3])]| {
            m.iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| *v)
                .unwrap_or([f64::NAN; 3])
        };
        let (hv, tv, dv) = (get(&h), get(&t), get(&d));
        println!(
            "{name:<32} {:>11} {:>11} {:>8.1}x {:>11} {:>8.2}x   {:>23}",
            ns(hv[0]),
            ns(tv[0]),
            tv[0] / hv[0],
            ns(dv[0]),
            dv[0] / hv[0],
            format!("{}..{}", ns(dv[1]), ns(dv[2]))
        );
    }
    println!(
        "(trap: --syscall-entry trap, every system call traps into the PVM host; direct: \
         --syscall-entry direct, rewritten sites jump into the library OS)"
    );
    println!(
        "(first touch: the partition maps up to 16 pages per fault; every 16th page = one fault)"
    );
    let _ = std::fs::remove_dir_all(&dir);
    println!();
}

/// `lxbench`'s lines `NAME MEDIAN # min MIN max MAX ...` as (NAME, [MEDIAN,
/// MIN, MAX]).
fn lx_parse(out: &str) -> Vec<(String, [f64; 3])> {
    out.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let name = w.next()?.to_string();
            let med = w.next()?.parse().ok()?;
            let rest: Vec<&str> = w.collect();
            let after = |k: &str| {
                rest.iter()
                    .position(|w| *w == k)
                    .and_then(|i| rest.get(i + 1)?.parse().ok())
                    .unwrap_or(f64::NAN)
            };
            Some((name, [med, after("min"), after("max")]))
        })
        .collect()
}

/// Nanoseconds for people: ns below 10 µs, µs above.
fn ns(v: f64) -> String {
    if v.is_nan() {
        "-".into()
    } else if v < 10_000.0 {
        format!("{v:.0} ns")
    } else {
        format!("{:.1} us", v / 1000.0)
    }
}

/// Runs `cmd` in `cwd`, killed after [`LX_TIMEOUT`]: (success, stdout,
/// stderr).
fn run_timeout(cmd: &mut Command, cwd: &std::path::Path) -> (bool, String, String) {
    use std::io::Read;
    let mut child = cmd
        .current_dir(cwd)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cannot run lxbench or astraea (build astraea with ./x build)");
    let pipe_reader = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    };
    let out = pipe_reader(Box::new(child.stdout.take().expect("stdout")));
    let err = pipe_reader(Box::new(child.stderr.take().expect("stderr")));
    let t0 = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait") {
            break Some(st);
        }
        if t0.elapsed() > LX_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = out.join().unwrap_or_default();
    let mut err = err.join().unwrap_or_default();
    let ok = match status {
        Some(st) => {
            if !st.success() {
                err.push_str(&format!(" ({st})"));
            }
            st.success()
        }
        None => {
            err.push_str(&format!(" (killed: no exit after {LX_TIMEOUT:?})"));
            false
        }
    };
    (ok, out, err)
}
