//! Compute and thread benchmarks of the JVM (issue 5), each on the host JVM
//! and in a partition, for OpenJDK 17 and Temurin 25:
//!
//! - `scimark [SECS]`: SciMark 2.0 from Maven Central
//!   (`es.urjc.etsii.grafo:scimark:2.2`, `jnt.scimark2.CommandLine`, each
//!   kernel run for at least SECS seconds, default 2): the composite and the
//!   five kernels' Mflops. The host JVM is pinned to one CPU with `taskset -c
//!   0`, so that both sides have one CPU for the program and the JIT's
//!   threads.
//! - `threads [SECS]`: the Java Grande Forum section 1 thread benchmarks
//!   (`bench/java/jgf/`: barrier simple and tournament, fork-join,
//!   synchronized method and block) written with JMH, run in-process (`-f
//!   0`, 2 warmup and 3 measurement iterations of SECS seconds, default 1)
//!   with 2 and 4 threads, on the host with both CPUs, on the host pinned
//!   to one, and in a partition (one vCPU); ops/s from JMH's JSON output.
//!
//! The jars come from Maven Central (with `curl`, checked against their
//! `.sha1`) into `target/bench-cache/maven/`; without the network, a JDK or
//! `curl`, the benchmark is skipped with a message, not failed.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{astraea, kernel, root};

const CENTRAL: &str = "https://repo1.maven.org/maven2";

/// (group, artifact, version) of the jars.
const SCIMARK: (&str, &str, &str) = ("es.urjc.etsii.grafo", "scimark", "2.2");
const JMH: [(&str, &str, &str); 4] = [
    ("org.openjdk.jmh", "jmh-core", "1.37"),
    ("org.openjdk.jmh", "jmh-generator-annprocess", "1.37"),
    ("net.sf.jopt-simple", "jopt-simple", "5.0.4"),
    ("org.apache.commons", "commons-math3", "3.6.1"),
];

fn skip(what: &str, why: &str) {
    eprintln!("\n*** SKIPPED {what}: {why} ***\n");
    println!("## {what}: SKIPPED ({why})\n");
}

/// The installed JDKs among the two the project supports: (name, home).
fn jdks() -> Vec<(&'static str, PathBuf)> {
    [
        ("17", "/usr/lib/jvm/java-17-openjdk-amd64"),
        ("25", "/usr/lib/jvm/temurin-25-jdk-amd64"),
    ]
    .into_iter()
    .map(|(n, d)| (n, PathBuf::from(d)))
    .filter(|(_, d)| d.join("bin/java").exists())
    .collect()
}

/// The jar of `(group, artifact, version)`, from the cache under `target/`
/// or else downloaded from Maven Central and checked against its `.sha1`.
fn maven_jar((group, artifact, version): (&str, &str, &str)) -> Result<PathBuf, String> {
    let rel = format!(
        "{}/{artifact}/{version}/{artifact}-{version}.jar",
        group.replace('.', "/")
    );
    let dest = root().join("target/bench-cache/maven").join(&rel);
    if dest.exists() {
        return Ok(dest);
    }
    std::fs::create_dir_all(dest.parent().expect("parent")).map_err(|e| e.to_string())?;
    let part = dest.with_extension("jar.part");
    let url = format!("{CENTRAL}/{rel}");
    let got = Command::new("curl")
        .args([
            "-sSfL",
            "--connect-timeout",
            "10",
            "--max-time",
            "120",
            "-o",
        ])
        .arg(&part)
        .arg(&url)
        .output()
        .map_err(|e| format!("cannot run curl ({e})"))?;
    if !got.status.success() {
        let _ = std::fs::remove_file(&part);
        return Err(format!(
            "cannot download {url}: {}",
            String::from_utf8_lossy(&got.stderr).trim()
        ));
    }
    let want = Command::new("curl")
        .args(["-sSfL", "--connect-timeout", "10", "--max-time", "30"])
        .arg(format!("{url}.sha1"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let have = Command::new("sha1sum")
        .arg(&part)
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).to_string());
    if let (Some(want), Some(have)) = (want, have) {
        let want = want.split_whitespace().next().unwrap_or("");
        if have.split_whitespace().next() != Some(want) {
            let _ = std::fs::remove_file(&part);
            return Err(format!("{url}: SHA-1 does not match the .sha1"));
        }
    }
    std::fs::rename(&part, &dest).map_err(|e| e.to_string())?;
    Ok(dest)
}

/// A scratch directory, removed when dropped; the partitions run in it
/// (read-write in the default namespace).
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let d = std::env::temp_dir().join(format!("astraea-bench-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("scratch dir");
        Self(d)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// How a run ended: its stdout and stderr, and `Err` with the reason if it
/// failed or was killed after the timeout.
struct Out {
    result: Result<(), String>,
    stdout: String,
    stderr: String,
}

/// Runs `cmd` in `cwd`, killed after `limit`.
fn run(cmd: &mut Command, cwd: &Path, limit: Duration) -> Out {
    let mut child = match cmd
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            return Out {
                result: Err(format!("cannot start: {e}")),
                stdout: String::new(),
                stderr: String::new(),
            };
        }
    };
    let reader = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    };
    let out = reader(Box::new(child.stdout.take().expect("stdout")));
    let err = reader(Box::new(child.stderr.take().expect("stderr")));
    let t0 = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait") {
            break Some(st);
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let result = match status {
        Some(st) if st.success() => Ok(()),
        Some(st) => Err(format!("failed ({st})")),
        None => Err(format!("hung: killed after {} s", limit.as_secs())),
    };
    Out {
        result,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    }
}

/// `astraea run --mem 2G -- JAVA ARGS`.
fn in_partition(java: &Path, args: &[String]) -> Command {
    let mut c = Command::new(astraea());
    c.args(["run", "--mem", "2G", "--kernel"])
        .arg(kernel("astraea-kernel"))
        .arg("--")
        .arg(java)
        .args(args);
    c
}

/// The host JVM on one CPU: `taskset -c 0 JAVA ARGS` (or, without
/// `taskset`, `-XX:ActiveProcessorCount=1`).
fn on_one_cpu(java: &Path, args: &[String]) -> Command {
    if Command::new("taskset")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        let mut c = Command::new("taskset");
        c.args(["-c", "0"]).arg(java).args(args);
        c
    } else {
        let mut c = Command::new(java);
        c.arg("-XX:ActiveProcessorCount=1").args(args);
        c
    }
}

fn on_host(java: &Path, args: &[String]) -> Command {
    let mut c = Command::new(java);
    c.args(args);
    c
}

/// SciMark's lines, in the order it prints them: its label and ours.
const SCIMARK_ROWS: [(&str, &str); 6] = [
    ("Composite Score", "Composite"),
    ("FFT", "FFT (1024)"),
    ("SOR", "SOR (100x100)"),
    ("Monte Carlo", "Monte Carlo"),
    ("Sparse matmult", "Sparse matmult (N=1000)"),
    ("LU", "LU (100x100)"),
];

/// The Mflops SciMark printed for the line starting with `label`.
fn scimark_score(out: &str, label: &str) -> f64 {
    out.lines()
        .find(|l| l.starts_with(label))
        .and_then(|l| l.rsplit(':').next()?.trim().parse().ok())
        .unwrap_or(f64::NAN)
}

/// SciMark 2.0, one run per JDK on the host (one CPU) and in a partition.
pub fn scimark(secs: u64) {
    let what = "scimark";
    let jdks = jdks();
    if jdks.is_empty() {
        return skip(what, "no JDK 17 or 25 at the known paths");
    }
    let jar = match maven_jar(SCIMARK) {
        Ok(j) => j,
        Err(e) => return skip(what, &e),
    };
    let dir = Scratch::new("scimark");
    let args: Vec<String> = [
        "-cp".into(),
        jar.to_string_lossy().into_owned(),
        "jnt.scimark2.CommandLine".into(),
        secs.to_string(),
    ]
    .into();
    // Five kernels of at least `secs` each, plus calibration: ≈ 15 × secs.
    let limit = Duration::from_secs(60 + 30 * secs);
    println!(
        "## scimark: SciMark 2.2 (jnt.scimark2.CommandLine {secs}), Mflops, one run each; \
         host: taskset -c 0 java, partition: astraea run --mem 2G -- java (1 vCPU)"
    );
    println!(
        "{:<28} {:>10} {:>10} {:>10}",
        "kernel", "host", "partition", "part/host"
    );
    let mut odd = Vec::new();
    for (name, home) in &jdks {
        let java = home.join("bin/java");
        let host = run(&mut on_one_cpu(&java, &args), &dir.0, limit);
        let part = run(&mut in_partition(&java, &args), &dir.0, limit);
        for (side, o) in [("host", &host), ("partition", &part)] {
            if let Err(e) = &o.result {
                odd.push(format!(
                    "JDK {name} {side}: {e}; last stderr: {}",
                    last_lines(&o.stderr, 5)
                ));
            }
        }
        for (label, row) in SCIMARK_ROWS {
            let (h, p) = (
                scimark_score(&host.stdout, label),
                scimark_score(&part.stdout, label),
            );
            println!(
                "{:<28} {h:>10.1} {p:>10.1} {:>10}",
                format!("{row} ({name})"),
                ratio(p / h)
            );
        }
    }
    for o in odd {
        println!("!! {o}");
    }
    println!();
}

fn last_lines(s: &str, n: usize) -> String {
    let v: Vec<&str> = s.lines().collect();
    v[v.len().saturating_sub(n)..].join(" | ")
}

/// The JGF cases: (name, JMH benchmark, JMH threads: 0 = the thread
/// count, else this; extra JMH parameters).
const JGF_CASES: [(&str, &str, usize, &str); 5] = [
    (
        "Barrier:Simple",
        "jgf.BarrierBench.barrier",
        1,
        "kind=simple",
    ),
    (
        "Barrier:Tournament",
        "jgf.BarrierBench.barrier",
        1,
        "kind=tournament",
    ),
    ("ForkJoin:Simple", "jgf.ForkJoinBench.forkJoin", 1, ""),
    ("Sync:Method", "jgf.SyncBench.method", 0, ""),
    ("Sync:Object", "jgf.SyncBench.object", 0, ""),
];

const THREAD_COUNTS: [usize; 2] = [2, 4];

/// Whether a JGF case runs: all of them, or those whose name contains one
/// of the comma-separated words of `$THREADS_CASES` (e.g. `ForkJoin`).
fn case_selected(case: &str) -> bool {
    std::env::var("THREADS_CASES").map_or(true, |v| {
        v.split(',')
            .any(|w| !w.trim().is_empty() && case.contains(w.trim()))
    })
}

/// The `"score"` and `"scoreError"` of the `"primaryMetric"` in JMH's JSON
/// result (one benchmark).
fn jmh_score(json: &str) -> Option<(f64, f64)> {
    let pm = &json[json.find("\"primaryMetric\"")?..];
    let num = |key: &str| -> Option<f64> {
        let at = pm.find(key)? + key.len();
        let v = pm[at..].trim_start().strip_prefix(':')?.trim_start();
        let end = v.find([',', '\n', '}']).unwrap_or(v.len());
        let v = v[..end].trim().trim_matches('"');
        Some(v.parse().unwrap_or(f64::NAN))
    };
    Some((num("\"score\"")?, num("\"scoreError\"").unwrap_or(f64::NAN)))
}

/// JGF-style thread benchmarks with JMH, in-process, on the host (2 CPUs,
/// then 1) and in a partition.
pub fn threads(secs: u64) {
    let what = "threads";
    let jdks = jdks();
    if jdks.is_empty() {
        return skip(what, "no JDK 17 or 25 at the known paths");
    }
    let mut jars = Vec::new();
    for a in JMH {
        match maven_jar(a) {
            Ok(j) => jars.push(j),
            Err(e) => return skip(what, &e),
        }
    }
    let dir = Scratch::new("threads");
    let classes = dir.0.join("classes");
    let cp_jars = std::env::join_paths(&jars)
        .expect("classpath")
        .to_string_lossy()
        .into_owned();
    let srcs: Vec<PathBuf> = std::fs::read_dir(root().join("bench/java/jgf"))
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "java"))
                .collect()
        })
        .unwrap_or_default();
    let built = Command::new(jdks[0].1.join("bin/javac"))
        .args([
            "--release",
            "17",
            "-cp",
            &cp_jars,
            "-processorpath",
            &cp_jars,
        ])
        .arg("-d")
        .arg(&classes)
        .arg("-s")
        .arg(dir.0.join("generated"))
        .args(&srcs)
        .output();
    match built {
        Ok(o) if o.status.success() => {}
        Ok(o) => {
            return skip(
                what,
                &format!(
                    "javac of bench/java/jgf failed: {}",
                    String::from_utf8_lossy(&o.stderr).trim()
                ),
            );
        }
        Err(e) => return skip(what, &format!("cannot run javac ({e})")),
    }
    std::fs::create_dir_all(dir.0.join("tmp")).expect("tmp dir");
    let cp = format!("{}:{cp_jars}", classes.display());
    // Warmup and measurement: 5 iterations of `secs`, plus JVM start-up.
    let limit = Duration::from_secs(20 + 10 * secs);
    println!(
        "## threads: JGF section 1 thread benchmarks with JMH 1.37 (-f 0 -wi 2 -i 3 -w {secs}s -r {secs}s), \
         ops/s, one run each; host: java (2 CPUs) and taskset -c 0 java (1 CPU); \
         partition: astraea run --mem 2G -- java (1 vCPU)"
    );
    println!(
        "{:<30} {:>13} {:>13} {:>13} {:>9} {:>9}",
        "case (threads, JDK)", "host 2 CPUs", "host 1 CPU", "partition", "p/host2", "p/host1"
    );
    let mut odd = Vec::new();
    for (name, home) in &jdks {
        let java = home.join("bin/java");
        for n in THREAD_COUNTS {
            for (case, bench, t, param) in JGF_CASES {
                if !case_selected(case) {
                    continue;
                }
                let t = if t == 0 { n } else { t };
                let json = format!("result-{name}-{n}-{}.json", case.replace(':', "-"));
                let mut args: Vec<String> = vec![
                    "-Djava.io.tmpdir=tmp".into(),
                    "-cp".into(),
                    cp.clone(),
                    "org.openjdk.jmh.Main".into(),
                    "-f".into(),
                    "0".into(),
                    "-wi".into(),
                    "2".into(),
                    "-i".into(),
                    "3".into(),
                    "-w".into(),
                    format!("{secs}s"),
                    "-r".into(),
                    format!("{secs}s"),
                    "-t".into(),
                    t.to_string(),
                ];
                if t != n {
                    // The benchmark starts its own threads.
                    args.extend(["-p".into(), format!("threads={n}")]);
                }
                if !param.is_empty() {
                    args.extend(["-p".into(), param.into()]);
                }
                args.extend(["-rf".into(), "json".into(), "-rff".into(), json.clone()]);
                args.push(format!("^{}$", bench.replace('.', "\\.")));
                let mut score = |side: &str, cmd: &mut Command| -> f64 {
                    let _ = std::fs::remove_file(dir.0.join(&json));
                    let o = run(cmd, &dir.0, limit);
                    let got = std::fs::read_to_string(dir.0.join(&json))
                        .ok()
                        .and_then(|j| jmh_score(&j));
                    match (&o.result, got) {
                        (Ok(()), Some((s, _))) => s,
                        (r, _) => {
                            let why = r.clone().err().unwrap_or("no JMH result".into());
                            odd.push(format!(
                                "{case} {n} threads, JDK {name}, {side}: {why}; last output: {}",
                                last_lines(&format!("{}{}", o.stdout, o.stderr), 3)
                            ));
                            f64::NAN
                        }
                    }
                };
                let h2 = score("host", &mut on_host(&java, &args));
                let h1 = score("host 1 CPU", &mut on_one_cpu(&java, &args));
                let p = score("partition", &mut in_partition(&java, &args));
                println!(
                    "{:<30} {} {} {} {:>9} {:>9}",
                    format!("{case} ({n}, {name})"),
                    ops(h2),
                    ops(h1),
                    ops(p),
                    ratio(p / h2),
                    ratio(p / h1)
                );
            }
        }
    }
    for o in odd {
        println!("!! {o}");
    }
    println!();
}

/// A ratio as `0.98x`, `-` when either side is missing.
fn ratio(r: f64) -> String {
    if r.is_nan() {
        "-".into()
    } else {
        format!("{r:.2}x")
    }
}

/// ops/s, right-aligned in 13 columns, `-` when missing.
fn ops(v: f64) -> String {
    if v.is_nan() {
        format!("{:>13}", "-")
    } else {
        format!("{v:>13.0}")
    }
}
