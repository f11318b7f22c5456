//! The Libra paper's Nutch experiment (§5.3, Table 2) on this machine: the
//! search deployment of `bench/search/deploy.toml` (shard servers + front
//! end, Lucene 9.12.3, JDK 17) started with `astraea deploy`, driven by the
//! closed-loop client `SearchBench` with the TREC 2005 Terabyte efficiency
//! queries, as
//!
//! * host JVMs (`astraea deploy --host`),
//! * partitions without file cache or streaming (Libra's "default"),
//! * partitions + file cache,
//! * partitions + file cache + socket streaming,
//!
//! for 1, 2 and 4 shards and both Lucene stores (MMapDirectory, and
//! NIOFSDirectory whose `read` calls resemble Libra's J9). Each row prints
//! queries/s and p50/p99 latency per concurrency level, its ratio to the
//! host, the time from the command to the first answered query, and host
//! memory (proportional set size) per member. Every row's answers must equal
//! the host's (the digest of SearchBench).
//!
//! Environment: `SEARCH_SHARDS` ("1 2 4"), `SEARCH_STORES` ("mmap nio"),
//! `SEARCH_CONCURRENCY` ("1 4"), `SEARCH_LIMIT` (1000 queries),
//! `SEARCH_WARMUP` (2000: two untimed passes over the queries, so that
//! caches and JIT are warm, as in a service that has run for a while),
//! `SEARCH_ROWS` ("host none cache stream").

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{astraea, root};

const JDK: &str = "/usr/lib/jvm/java-17-openjdk-amd64";

fn skip(why: &str) {
    eprintln!("\n*** SKIPPED search: {why} ***\n");
}

fn env_list(name: &str, default: &str) -> Vec<String> {
    std::env::var(name)
        .unwrap_or_else(|_| default.into())
        .split_whitespace()
        .map(String::from)
        .collect()
}

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One row of the table.
struct Row {
    /// Per concurrency level: (qps, p50 ms, p99 ms).
    runs: Vec<(f64, f64, f64)>,
    digest: String,
    ready_ms: f64,
    first_answer_ms: f64,
    pss_mb_per_member: f64,
    errors: u64,
}

fn class_path() -> String {
    let r = root();
    format!(
        "{}:{}/*",
        r.join("target/search/classes").display(),
        r.join("target/javalibs/search").display()
    )
}

/// `SearchIndexer` into target/search/indexN unless it is there.
fn ensure_index(shards: &str) -> Option<PathBuf> {
    let dir = root().join(format!("target/search/index{shards}"));
    if dir
        .join(format!("shard-{}", shards.parse::<u32>().ok()? - 1))
        .is_dir()
    {
        return Some(dir);
    }
    eprintln!("search: indexing the corpus into {shards} shard(s) (once)");
    let st = Command::new(Path::new(JDK).join("bin/java"))
        .args(["-cp", &class_path(), "SearchIndexer", "--corpus"])
        .arg(root().join("target/search/corpus/docs.tsv"))
        .arg("--out")
        .arg(&dir)
        .args(["--shards", shards])
        .stdout(Stdio::null())
        .status()
        .ok()?;
    st.success().then_some(dir)
}

/// `GET path` on 127.0.0.1:port; the status code.
fn http_status(port: u16, path: &str) -> Option<u16> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: x\r\n\r\n").ok()?;
    let mut head = [0u8; 12];
    s.read_exact(&mut head).ok()?;
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest);
    std::str::from_utf8(&head[9..12]).ok()?.parse().ok()
}

/// Proportional set size of `pid` in bytes.
fn pss(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Pss:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// Processes whose command line contains `needle`.
fn pids_with(needle: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if let Ok(c) = std::fs::read(format!("/proc/{pid}/cmdline"))
            && String::from_utf8_lossy(&c)
                .replace('\0', " ")
                .contains(needle)
        {
            out.push(pid);
        }
    }
    out
}

struct Deploy {
    child: Child,
    logs: PathBuf,
}

impl Drop for Deploy {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Deploys, measures, stops one row.
fn row(kind: &str, shards: &str, store: &str, index: &Path, port: u16) -> Result<Row, String> {
    let logs = std::env::temp_dir().join(format!("astraea-bench-search-{kind}-{shards}-{store}"));
    let _ = std::fs::remove_dir_all(&logs);
    let mut c = Command::new(astraea());
    c.arg("deploy")
        .arg(root().join("bench/search/deploy.toml"))
        .args(["--set", &format!("ROOT={}", root().display())])
        .args(["--set", &format!("CP={}", class_path())])
        .args(["--set", &format!("INDEX={}", index.display())])
        .args(["--set", &format!("SHARDS={shards}")])
        .args(["--set", &format!("STORE={store}")])
        .args(["--set", &format!("LOGS={}", logs.display())])
        .args(["--set", &format!("BASE_PORT={}", port + 1)])
        .args(["--set", &format!("PORT={port}")])
        .args(["--set", &format!("JDK={JDK}")]);
    match kind {
        "host" => {
            c.arg("--host");
        }
        "none" => {
            c.args(["--set", "CACHE=none", "--set", "STREAM=off"]);
        }
        "cache" => {
            c.args(["--set", "CACHE=ro", "--set", "STREAM=off"]);
        }
        _ => {
            c.args(["--set", "CACHE=ro", "--set", "STREAM=on"]);
        }
    }
    c.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let t0 = Instant::now();
    let mut child = c
        .spawn()
        .map_err(|e| format!("cannot run astraea deploy: {e}"))?;
    let err = child.stderr.take().expect("piped");
    let d = Deploy { child, logs };
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(err).lines().map_while(Result::ok) {
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    let mut said = String::new();
    let ready_ms = loop {
        match rx.recv_timeout(Duration::from_secs(300)) {
            Ok(l) if l.contains(" ready: ") => break t0.elapsed().as_secs_f64() * 1e3,
            Ok(l) => {
                said += &l;
                said.push('\n');
            }
            Err(_) => return Err(format!("the deployment did not come up:\n{said}")),
        }
    };
    let first_answer_ms = loop {
        if http_status(port, "/search?q=java&k=10") == Some(200) {
            break t0.elapsed().as_secs_f64() * 1e3;
        }
        if t0.elapsed() > Duration::from_secs(60) {
            return Err("the front end never answered a query".into());
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    // Keep the deployment's stderr drained.
    std::thread::spawn(move || while rx.recv().is_ok() {});
    let limit = env_num("SEARCH_LIMIT", 1000).to_string();
    let warmup = env_num("SEARCH_WARMUP", 2000).to_string();
    let queries = root().join("target/search/queries/tb05.txt");
    let mut runs = Vec::new();
    let mut digest = String::new();
    let mut errors = 0;
    for conc in env_list("SEARCH_CONCURRENCY", "1 4") {
        let out = Command::new(Path::new(JDK).join("bin/java"))
            .args(["-cp", &class_path(), "SearchBench", "--url"])
            .arg(format!("http://127.0.0.1:{port}"))
            .arg("--queries")
            .arg(&queries)
            .args([
                "--limit",
                &limit,
                "--warmup",
                &warmup,
                "--concurrency",
                &conc,
            ])
            .output()
            .map_err(|e| format!("SearchBench: {e}"))?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let num = |key: &str| -> f64 {
            text.split_whitespace()
                .skip_while(|w| *w != key)
                .nth(1)
                .and_then(|v| v.parse().ok())
                .unwrap_or(f64::NAN)
        };
        if !out.status.success() {
            return Err(format!(
                "SearchBench failed: {text}{}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        runs.push((num("qps"), num("p50_ms"), num("p99_ms")));
        errors += num("errors") as u64;
        let dg = text
            .split_whitespace()
            .skip_while(|w| *w != "digest")
            .nth(1)
            .unwrap_or("")
            .to_string();
        if !digest.is_empty() && dg != digest {
            digest = "UNSTABLE".into();
        } else if digest.is_empty() {
            digest = dg;
        }
    }
    // Host memory of the members (and the shared gateway), after the load.
    let status = std::fs::read_to_string(d.logs.join("status")).unwrap_or_default();
    let members: Vec<u32> = status
        .lines()
        .skip(1)
        .filter(|l| l.split_whitespace().nth(1) != Some("gateway"))
        .filter_map(|l| l.split_whitespace().nth(2)?.parse().ok())
        .collect();
    let mut total: u64 = members.iter().map(|&p| pss(p)).sum();
    for g in pids_with(&format!("{}/gateway.sock", d.logs.display())) {
        if !members.contains(&g) {
            total += pss(g);
        }
    }
    let pss_mb_per_member = total as f64 / members.len().max(1) as f64 / 1048576.0;
    drop(d);
    Ok(Row {
        runs,
        digest,
        ready_ms,
        first_answer_ms,
        pss_mb_per_member,
        errors,
    })
}

pub fn search() {
    let r = root();
    if !Path::new(JDK).join("bin/java").is_file() {
        return skip(&format!("no JDK at {JDK}"));
    }
    if !r.join("target/search/classes/FrontEnd.class").is_file()
        || !r.join("target/search/corpus/docs.tsv").is_file()
        || !r.join("target/search/queries/tb05.txt").is_file()
    {
        return skip(
            "the search application, corpus or queries are missing: run ./x search-build, ./x search-corpus and ./x search-queries first",
        );
    }
    if !Path::new("/dev/kvm").exists() {
        return skip("/dev/kvm is absent");
    }
    let concs = env_list("SEARCH_CONCURRENCY", "1 4");
    let rows = env_list("SEARCH_ROWS", "host none cache stream");
    println!(
        "\nsearch: Nutch-style distributed search (bench/search/deploy.toml; Lucene 9.12.3, JDK 17; TREC TB05 queries, first {}, {} warm-up, k=10), one JVM per partition, 1 vCPU each, shared gateway",
        env_num("SEARCH_LIMIT", 1000),
        env_num("SEARCH_WARMUP", 2000)
    );
    let mut head = format!("{:<6} {:<5} {:<22}", "shards", "store", "row");
    for c in &concs {
        head += &format!(
            " | c={c:<2} {:>7} {:>7} {:>7} {:>6}",
            "q/s", "p50ms", "p99ms", "×host"
        );
    }
    head += " | ready_ms first_ms | MB/member | answers";
    println!("{head}");
    let mut port = 27100u16;
    for shards in env_list("SEARCH_SHARDS", "1 2 4") {
        let Some(index) = ensure_index(&shards) else {
            println!("{shards:<6} cannot build the index");
            continue;
        };
        for store in env_list("SEARCH_STORES", "mmap nio") {
            let mut host: Option<Row> = None;
            for kind in &rows {
                port += 10;
                let name = match kind.as_str() {
                    "host" => "host JVMs",
                    "none" => "partitions, no cache",
                    "cache" => "+ file cache",
                    _ => "+ cache + streaming",
                };
                eprintln!("search: {shards} shard(s), {store}, {name}");
                let row = match row(kind, &shards, &store, &index, port) {
                    Ok(r) => r,
                    Err(e) => {
                        println!("{shards:<6} {store:<5} {name:<22} FAILED: {e}");
                        continue;
                    }
                };
                let mut line = format!("{shards:<6} {store:<5} {name:<22}");
                for (i, (qps, p50, p99)) in row.runs.iter().enumerate() {
                    let ratio = host
                        .as_ref()
                        .and_then(|h| h.runs.get(i))
                        .map_or(f64::NAN, |h| qps / h.0);
                    line += &format!(" | {:<4} {qps:>7.1} {p50:>7.2} {p99:>7.1} {ratio:>6.2}", "");
                }
                let answers = match &host {
                    _ if row.errors > 0 => format!("{} ERRORS", row.errors),
                    Some(h) if h.digest == row.digest => "= host".to_string(),
                    Some(_) => "DIFFER from host".to_string(),
                    None => format!("digest {}", &row.digest[..row.digest.len().min(12)]),
                };
                line += &format!(
                    " | {:>8.0} {:>8.0} | {:>9.1} | {answers}",
                    row.ready_ms, row.first_answer_ms, row.pss_mb_per_member
                );
                println!("{line}");
                if kind == "host" {
                    host = Some(row);
                }
            }
        }
    }
}
