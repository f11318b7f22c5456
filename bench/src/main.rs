//! Astraea's benchmarks: the same work on the host and in a partition, in one
//! run, printed as absolute figures and ratios.
//!
//! ```text
//! astraea-bench [boot [RUNS]] [ctxswitch [ROUNDS]] [ninep [N]]   (default: all)
//! ```
//!
//! It runs the `astraea` binary and kernel images that `./x build` produced
//! (or those named by `ASTRAEA_BIN` and `ASTRAEA_KERNEL_DIR`).

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
            other => {
                eprintln!("astraea-bench: unknown benchmark {other:?} (boot, ctxswitch, ninep)");
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
    }
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
