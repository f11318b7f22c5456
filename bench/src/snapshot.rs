//! `astraea-bench snapshot [RUNS]`: starting JVMs from snapshots (issue 16).
//!
//! - Start-up, launch to exit (median of RUNS, interleaved): a `Hello` that
//!   only prints (`bench/java/plain`) and one that reads a file, on the
//!   host JVM, in a partition that boots, and with `astraea run --warm`
//!   (from the snapshot its second run took, with the working set its
//!   third recorded).
//! - A server's time to first answer: from the command to the first HTTP
//!   answer of `CloneServe` (tests/progs; `com.sun.net.httpserver` on a loopback port
//!   it writes to a file), host JVM vs `--warm` partition.
//! - A cloned server's first answer: `CloneServe` warmed up in a partition,
//!   snapshotted from outside, then restored (`--from`, `--publish`): from
//!   the command to the first answer.
//! - Host memory (proportional set size, `/proc/PID/smaps_rollup`) of 1, 8
//!   and 16 idle JVMs: host JVMs, partitions that boot, and partitions
//!   restored from one snapshot (`--from`), which share its pages.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{astraea, kernel, root, stats};

const JDKS: [(&str, &str); 2] = [
    ("17", "/usr/lib/jvm/java-17-openjdk-amd64"),
    ("25", "/usr/lib/jvm/temurin-25-jdk-amd64"),
];
/// Every partition's memory (the `--warm` key includes it).
const MEM: &str = "1G";

pub fn snapshot(runs: usize) {
    let jdks: Vec<(&str, PathBuf)> = JDKS
        .iter()
        .map(|&(n, d)| (n, PathBuf::from(d)))
        .filter(|(_, d)| d.join("bin/javac").exists())
        .collect();
    if jdks.is_empty() {
        eprintln!("\n*** SKIPPED snapshot: no JDK with javac at the known paths ***\n");
        return;
    }
    let dir = std::env::temp_dir().join(format!("astraea-bench-snap-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let ok = Command::new(jdks[0].1.join("bin/javac"))
        .args(["--release", "17", "-d"])
        .arg(&dir)
        .arg(root().join("jvm-port/java/Hello.java"))
        .arg(root().join("bench/java/SnapIdle.java"))
        .arg(root().join("tests/progs/CloneServe.java"))
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("\n*** SKIPPED snapshot: javac failed ***\n");
        return;
    }
    // The plain `java -cp . Hello`: a class path of its own, so its --warm
    // snapshot is its own too.
    let plain = dir.join("plain");
    let ok = Command::new(jdks[0].1.join("bin/javac"))
        .args(["--release", "17", "-d"])
        .arg(&plain)
        .arg(root().join("bench/java/plain/Hello.java"))
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("\n*** SKIPPED snapshot: javac failed ***\n");
        return;
    }
    std::fs::write(dir.join("greeting.txt"), "hello\n").expect("greeting");
    // The --warm snapshots of this run only.
    let cache = dir.join("cache");
    println!("\n== JVM start from snapshots, launch to exit, median of {runs} runs (ms)");
    println!(
        "{:<30} {:>8} {:>10} {:>8} {:>10} {:>8}",
        "case", "host", "boot", "×host", "--warm", "×host"
    );
    for (name, home) in &jdks {
        let java = home.join("bin/java").to_string_lossy().into_owned();
        let cp = dir.to_string_lossy().into_owned();
        let plain_cp = plain.to_string_lossy().into_owned();
        for (label, hello) in [
            (
                "Hello, println only",
                [java.as_str(), "-cp", plain_cp.as_str(), "Hello", ""],
            ),
            (
                "Hello, reads a file",
                [java.as_str(), "-cp", cp.as_str(), "Hello", "greeting.txt"],
            ),
        ] {
            let hello: Vec<&str> = hello.into_iter().filter(|a| !a.is_empty()).collect();
            // The first --warm run records the classes, the second takes
            // the snapshot, the third records the restore's working set.
            for _ in 0..3 {
                let _ = partition(&dir, &cache, &["--warm"], &hello).output();
            }
            let (mut h, mut b, mut w) = (Vec::new(), Vec::new(), Vec::new());
            for _ in 0..runs {
                h.push(time(
                    Command::new(hello[0]).args(&hello[1..]).current_dir(&dir),
                ));
                b.push(time(&mut partition(&dir, &cache, &[], &hello)));
                w.push(time(&mut partition(&dir, &cache, &["--warm"], &hello)));
            }
            let (h, b, w) = (stats(h).0, stats(b).0, stats(w).0);
            println!(
                "{:<30} {:>8.1} {:>10.1} {:>7.2}x {:>10.1} {:>7.2}x",
                format!("{label} ({name})"),
                h,
                b,
                b / h,
                w,
                w / h
            );
        }
        let serve = |i: usize| {
            let port = dir.join(format!("port-{name}-{i}"));
            let _ = std::fs::remove_file(&port);
            (
                port.clone(),
                vec![
                    java.clone(),
                    "-cp".into(),
                    cp.clone(),
                    "CloneServe".into(),
                    port.to_string_lossy().into_owned(),
                ],
            )
        };
        let first_answer = |mut cmd: Command, port: &Path| {
            let t = Instant::now();
            let child = cmd.stdout(Stdio::null()).stderr(Stdio::null()).spawn();
            let Ok(mut child) = child else {
                return f64::NAN;
            };
            let ms = answer(port).map_or(f64::NAN, |()| t.elapsed().as_secs_f64() * 1e3);
            let _ = child.kill();
            let _ = child.wait();
            ms
        };
        for i in 0..2 {
            let (p, a) = serve(1000 + i);
            let args: Vec<&str> = a.iter().map(String::as_str).collect();
            let _ = first_answer(partition(&dir, &cache, &["--warm"], &args), &p);
        }
        let (mut h, mut w) = (Vec::new(), Vec::new());
        for i in 1..=runs {
            let (p, a) = serve(i);
            let mut c = Command::new(&a[0]);
            c.args(&a[1..]).current_dir(&dir);
            h.push(first_answer(c, &p));
            let (p, a) = serve(i + runs);
            let args: Vec<&str> = a.iter().map(String::as_str).collect();
            w.push(first_answer(
                partition(&dir, &cache, &["--warm"], &args),
                &p,
            ));
        }
        let (h, w) = (stats(h).0, stats(w).0);
        println!(
            "{:<30} {:>8.1} {:>10} {:>8} {:>10.1} {:>7.2}x",
            format!("server's first answer ({name})"),
            h,
            "",
            "",
            w,
            w / h
        );
        clones(&dir, &cache, name, serve(9999), h, runs);
    }

    let (name, home) = &jdks[0];
    let java = home.join("bin/java").to_string_lossy().into_owned();
    let cp = dir.to_string_lossy().into_owned();
    let idle = [java.as_str(), "-cp", cp.as_str(), "SnapIdle"];
    let snap = dir.join("idle.snap");
    let snap_s = snap.to_string_lossy().into_owned();
    {
        let args = ["--snapshot", snap_s.as_str()];
        let mut c = partition(&dir, &cache, &args, &[&idle[..], &["snap"]].concat());
        let kids = start_all(&mut [c.stdout(Stdio::piped())], 1);
        stop_all(kids);
    }
    println!(
        "\n== Host memory of idle JVMs (JDK {name}; proportional set size, MB: total and per JVM)"
    );
    println!(
        "{:>4} {:>16} {:>20} {:>24} {:>10}",
        "N", "host JVMs", "partitions (boot)", "restored from 1 snapshot", "restored/host"
    );
    for n in [1usize, 8, 16] {
        let host = measure(n, || {
            let mut c = Command::new(idle[0]);
            c.args(&idle[1..]).current_dir(&dir);
            c
        });
        let boot = measure(n, || partition(&dir, &cache, &[], &idle));
        let restored = measure(n, || partition(&dir, &cache, &["--from", &snap_s], &[]));
        let cell = |mb: f64| format!("{mb:.0} ({:.0})", mb / n as f64);
        println!(
            "{:>4} {:>16} {:>20} {:>24} {:>9.2}x",
            n,
            cell(host),
            cell(boot),
            cell(restored),
            restored / host
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A cloned server's first answer: `CloneServe` booted in a partition and
/// warmed up (300 answers), snapshotted from outside (`astraea snapshot`),
/// then `runs` copies started one after another (`--from`, its port
/// published at a free one): from the command to the first answer, and
/// to the line saying where it listens (the VMM's restore done). `host`:
/// a host JVM's first answer, for the ratio.
fn clones(
    dir: &Path,
    cache: &Path,
    name: &str,
    server: (PathBuf, Vec<String>),
    host: f64,
    runs: usize,
) {
    let (port_file, args) = server;
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let Ok(mut original) = partition(dir, cache, &[], &args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
    else {
        return;
    };
    let ok = answer(&port_file).is_some();
    let port: u16 = std::fs::read_to_string(&port_file)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0);
    for _ in 0..300 {
        if !ok || get(port).is_none() {
            break;
        }
    }
    let snap = dir.join(format!("server-{name}.snap"));
    let taken = ok
        && Command::new(astraea())
            .args(["snapshot", "--partition", &original.id().to_string()])
            .arg(&snap)
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
    let _ = original.kill();
    let _ = original.wait();
    if !taken {
        eprintln!("\n*** the server's snapshot failed: no clone figures ***\n");
        return;
    }
    let publish = format!("{port}=0");
    let (mut first, mut listening) = (Vec::new(), Vec::new());
    for _ in 0..runs.max(5) {
        let t = Instant::now();
        let Ok(mut c) = partition(
            dir,
            cache,
            &["--from", &snap.to_string_lossy(), "--publish", &publish],
            &[],
        )
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn() else {
            continue;
        };
        let mut line = String::new();
        let _ = c
            .stderr
            .take()
            .map(|e| BufReader::new(e).read_line(&mut line));
        listening.push(t.elapsed().as_secs_f64() * 1e3);
        let at = line
            .rsplit_once("127.0.0.1:")
            .and_then(|(_, p)| p.trim().parse().ok());
        if at.and_then(get).is_some() {
            first.push(t.elapsed().as_secs_f64() * 1e3);
        }
        let _ = c.kill();
        let _ = c.wait();
    }
    let (f, l) = (stats(first).0, stats(listening).0);
    println!(
        "{:<30} {:>8.1} {:>10} {:>8} {:>10.1} {:>7.2}x   (restored, listening: {l:.1})",
        format!("cloned server's 1st answer ({name})"),
        host,
        "",
        "",
        f,
        f / host
    );
}

/// GETs `/` at `127.0.0.1:port`; the answer's body.
fn get(port: u16) -> Option<String> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .ok()?;
    let mut r = String::new();
    s.read_to_string(&mut r).ok()?;
    r.rsplit_once("\r\n\r\n").map(|(_, b)| b.to_string())
}

/// `astraea run --mem MEM OPTS -- PROGRAM` from `dir` (with the `--warm`
/// cache in `cache`); with `--from`, no program.
fn partition(dir: &Path, cache: &Path, opts: &[&str], program: &[&str]) -> Command {
    let mut c = Command::new(astraea());
    c.args(["run", "--kernel"]).arg(kernel("astraea-kernel"));
    if !opts.contains(&"--from") {
        c.args(["--mem", MEM]);
    }
    c.args(opts);
    if !program.is_empty() {
        c.arg("--").args(program);
    }
    c.current_dir(dir).env("XDG_CACHE_HOME", cache);
    c
}

/// Milliseconds from spawning `cmd` to its exit, on an idle machine: the
/// previous command's teardown (a partition's helper process goes on
/// after `astraea run` has exited) is given 100 ms to finish first.
fn time(cmd: &mut Command) -> f64 {
    std::thread::sleep(Duration::from_millis(100));
    let t = Instant::now();
    let _ = cmd.stdout(Stdio::null()).stderr(Stdio::null()).status();
    t.elapsed().as_secs_f64() * 1e3
}

/// Waits (up to a minute) for the port in `file`, then GETs `/` there and
/// checks the answer.
fn answer(file: &Path) -> Option<()> {
    let t = Instant::now();
    let port: u16 = loop {
        if let Ok(s) = std::fs::read_to_string(file)
            && let Ok(p) = s.trim().parse()
        {
            break p;
        }
        if t.elapsed() > Duration::from_secs(60) {
            return None;
        }
        std::thread::sleep(Duration::from_micros(200));
    };
    get(port)?.starts_with("served ").then_some(())
}

/// Starts every command (stdout piped) and waits until each has printed a
/// line (`ready`).
fn start_all(cmds: &mut [&mut Command], n: usize) -> Vec<Child> {
    let mut kids = Vec::new();
    let (tx, rx) = std::sync::mpsc::channel();
    for c in cmds.iter_mut() {
        let Ok(mut child) = c.stdin(Stdio::null()).stderr(Stdio::null()).spawn() else {
            continue;
        };
        if let Some(out) = child.stdout.take() {
            let tx = tx.clone();
            std::thread::spawn(move || {
                let mut line = String::new();
                let _ = BufReader::new(out).read_line(&mut line);
                let _ = tx.send(line);
            });
        }
        kids.push(child);
    }
    for _ in 0..n.min(kids.len()) {
        let _ = rx.recv_timeout(Duration::from_secs(300));
    }
    kids
}

fn stop_all(kids: Vec<Child>) {
    for mut k in kids {
        let _ = k.kill();
        let _ = k.wait();
    }
}

/// Total proportional set size (MB) of `n` idle instances of `make()`,
/// measured once all said `ready`, and a second later.
fn measure(n: usize, make: impl Fn() -> Command) -> f64 {
    let mut cmds: Vec<Command> = (0..n).map(|_| make()).collect();
    let mut refs: Vec<&mut Command> = cmds.iter_mut().map(|c| c.stdout(Stdio::piped())).collect();
    let kids = start_all(&mut refs, n);
    std::thread::sleep(Duration::from_secs(1));
    let kib: u64 = kids.iter().map(|k| pss_kib(k.id())).sum();
    stop_all(kids);
    kib as f64 / 1024.0
}

/// `Pss:` of `/proc/PID/smaps_rollup`, in KiB.
fn pss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Pss:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}
