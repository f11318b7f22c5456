//! Helpers for the integration tests: find (or build) the `astraea` binary and
//! the kernel images, run partitions, and skip loudly without `/dev/kvm`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// Whether KVM is available. Without it, tests print a loud notice and pass
/// vacuously; that is the only case in which a KVM test may skip.
pub fn kvm_available() -> bool {
    if Path::new("/dev/kvm").exists() {
        return true;
    }
    eprintln!(
        "\n*** SKIPPED: /dev/kvm is absent on this machine, so no partition can boot. \
         This test did not run. ***\n"
    );
    false
}

struct Artifacts {
    astraea: PathBuf,
    kernel_dir: PathBuf,
}

/// Builds what the tests need, once per test binary: `astraea` (release) and
/// the kernel images. Prebuilt copies are used when `ASTRAEA_BIN` and
/// `ASTRAEA_KERNEL_DIR` name them (`./x test` builds them first); otherwise
/// cargo builds them into `target/it`, a target directory of their own, so
/// that this never waits on the lock of the `cargo test` running us.
fn artifacts() -> &'static Artifacts {
    static A: OnceLock<Artifacts> = OnceLock::new();
    A.get_or_init(|| {
        if let (Ok(bin), Ok(kdir)) = (
            std::env::var("ASTRAEA_BIN"),
            std::env::var("ASTRAEA_KERNEL_DIR"),
        ) {
            return Artifacts {
                astraea: bin.into(),
                kernel_dir: kdir.into(),
            };
        }
        let root = workspace();
        let target = root.join("target").join("it");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let run = |args: &[&str]| {
            let st = Command::new(&cargo)
                .args(args)
                .arg("--target-dir")
                .arg(&target)
                .current_dir(&root)
                .env_remove("RUSTFLAGS")
                .env_remove("CARGO_ENCODED_RUSTFLAGS")
                .status()
                .expect("cannot run cargo");
            assert!(st.success(), "cargo {args:?} failed");
        };
        run(&["build", "--release", "-p", "astraea-hypervisor"]);
        run(&[
            "build",
            "--release",
            "--target",
            "x86_64-unknown-none",
            "-p",
            "astraea-jvm-port",
            "-p",
            "astraea-ktest",
        ]);
        Artifacts {
            astraea: target.join("release").join("astraea"),
            kernel_dir: target.join("x86_64-unknown-none").join("release"),
        }
    })
}

/// The `astraea` binary.
pub fn astraea() -> PathBuf {
    artifacts().astraea.clone()
}

/// The `astraea-gateway` binary (release): `$ASTRAEA_GATEWAY_BIN` if set,
/// otherwise built by cargo into `target/it` like [`astraea`] (a cargo
/// invocation that finds it up to date costs well under a second).
pub fn gateway() -> PathBuf {
    static G: OnceLock<PathBuf> = OnceLock::new();
    G.get_or_init(|| {
        if let Ok(bin) = std::env::var("ASTRAEA_GATEWAY_BIN") {
            return bin.into();
        }
        let root = workspace();
        let target = root.join("target").join("it");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let st = Command::new(&cargo)
            .args([
                "build",
                "--release",
                "-p",
                "astraea-gateway",
                "--target-dir",
            ])
            .arg(&target)
            .current_dir(&root)
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .status()
            .expect("cannot run cargo");
        assert!(st.success(), "cargo build -p astraea-gateway failed");
        target.join("release").join("astraea-gateway")
    })
    .clone()
}

/// A kernel image by name (`astraea-kernel`, `astraea-ktest`).
pub fn kernel(name: &str) -> PathBuf {
    artifacts().kernel_dir.join(name)
}

/// The result of one `astraea` run.
#[derive(Debug)]
pub struct Run {
    /// Exit status (signals as 128 + n).
    pub code: i32,
    /// Everything the partition printed on stdout.
    pub stdout: String,
    /// Everything on stderr.
    pub stderr: String,
}

impl Run {
    fn from(o: Output) -> Self {
        use std::os::unix::process::ExitStatusExt;
        let code = o
            .status
            .code()
            .unwrap_or_else(|| 128 + o.status.signal().unwrap_or(0));
        Self {
            code,
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

/// Runs `astraea` with `args` and collects its output.
pub fn astraea_cmd(args: &[&str]) -> Run {
    astraea_cmd_env(args, &[])
}

/// Runs `astraea` with `args` and extra environment variables.
pub fn astraea_cmd_env(args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut c = Command::new(astraea());
    c.args(args).stdin(Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    Run::from(c.output().expect("cannot run astraea"))
}

/// Boots the test kernel with a scenario (`exit 3`, `threads 100 1000`, …).
pub fn ktest(scenario: &[&str]) -> Run {
    let k = kernel("astraea-ktest");
    let mut args = vec!["run", "--kernel", k.to_str().expect("utf-8 path"), "--"];
    args.extend_from_slice(scenario);
    astraea_cmd(&args)
}

/// Extracts `key=value` from output.
pub fn field(text: &str, key: &str) -> Option<u64> {
    text.split_whitespace()
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
        .and_then(|v| v.parse().ok())
}

/// Runs `cmd` (stdin from /dev/null) and collects its output, killing it
/// after `timeout`: a hung program then fails its test instead of hanging the
/// suite. A run that timed out has code 128 + 9 and says so on stderr.
pub fn run_with_timeout(cmd: &mut Command, timeout: std::time::Duration) -> Run {
    wait_with_timeout(spawn_piped(cmd), timeout)
}

/// Starts `cmd` with no stdin and its stdout and stderr piped, for
/// [`wait_with_timeout`] (several at once: over-committed runs).
pub fn spawn_piped(cmd: &mut Command) -> std::process::Child {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"))
}

/// The port a server wrote to `file` (written whole, then renamed), waiting
/// up to `timeout` for it to appear; panics, saying `what`, if it does not.
pub fn wait_for_port(file: &std::path::Path, timeout: std::time::Duration, what: &str) -> u16 {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        if let Ok(p) = std::fs::read_to_string(file) {
            return p.trim().parse::<u16>().expect("a port");
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: the server never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Collects the output of a running `child` (stdout and stderr piped),
/// killing it after `timeout`, as [`run_with_timeout`] does.
pub fn wait_with_timeout(mut child: std::process::Child, timeout: std::time::Duration) -> Run {
    use std::io::Read;
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            v
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("piped stdout")));
    let err = drain(Box::new(child.stderr.take().expect("piped stderr")));
    let deadline = std::time::Instant::now() + timeout;
    let mut timed_out = false;
    let status = loop {
        if let Some(st) = child.try_wait().expect("cannot wait") {
            break st;
        }
        if std::time::Instant::now() >= deadline {
            timed_out = true;
            let _ = child.kill();
            break child.wait().expect("cannot wait");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut run = Run::from(Output {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    });
    if timed_out {
        run.stderr
            .push_str(&format!("\n*** TIMED OUT after {timeout:?}; killed ***\n"));
    }
    run
}

/// Runs `astraea run -- ARGS` from the directory `cwd` in the default
/// namespace (the host's `/` read-only, `cwd` read-write at its own path),
/// with extra environment variables, killed after `timeout`.
pub fn astraea_in(
    cwd: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    timeout: std::time::Duration,
) -> Run {
    let mut c = Command::new(astraea());
    c.arg("run").arg("--").args(args).current_dir(cwd);
    for (k, v) in env {
        c.env(k, v);
    }
    run_with_timeout(&mut c, timeout)
}

/// Runs `args` directly on the host from `cwd`, with extra environment
/// variables, killed after `timeout`: the reference a partition's run of the
/// same program is compared with.
pub fn host_in(
    cwd: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    timeout: std::time::Duration,
) -> Run {
    let (prog, rest) = args.split_first().expect("a program to run");
    // A relative path with a slash is taken relative to `cwd`, as the
    // partition takes it.
    let prog = if prog.contains('/') {
        cwd.join(prog)
    } else {
        PathBuf::from(prog)
    };
    let mut c = Command::new(prog);
    c.args(rest).current_dir(cwd);
    for (k, v) in env {
        c.env(k, v);
    }
    run_with_timeout(&mut c, timeout)
}

/// A fresh directory `target/NAME/pid-PID` for this test process, under
/// `target/` so that `cargo clean` removes it, one per process so that
/// concurrent runs of a suite do not delete each other's files; the
/// directories of processes that have ended are removed.
pub fn scratch_root(name: &str) -> PathBuf {
    let top = workspace().join("target").join(name);
    if let Ok(entries) = std::fs::read_dir(&top) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(pid) = name.strip_prefix("pid-")
                && !Path::new("/proc").join(pid).exists()
            {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
    let root = top.join(format!("pid-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).expect("cannot create a scratch directory under target/");
    root
}

/// A fresh directory `astraea-{prog}-{name}-{pid}` on a memory file system
/// when there is one (the differs `fsync` often; on a disk that alone
/// takes seconds), else in the temporary directory. What runs of
/// processes that have ended left there is removed first: a failed run
/// keeps its files, in memory when this is /dev/shm.
pub fn memory_scratch(prog: &str, name: &str) -> PathBuf {
    let base = if Path::new("/dev/shm").is_dir() {
        PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    let prefix = format!("astraea-{prog}-");
    for e in std::fs::read_dir(&base).into_iter().flatten().flatten() {
        let entry = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = entry.strip_prefix(&prefix) else {
            continue;
        };
        let pid = rest
            .trim_end_matches(".sock")
            .rsplit('-')
            .next()
            .unwrap_or("");
        if pid.parse::<u32>().is_ok() && !Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir_all(e.path());
            let _ = std::fs::remove_file(e.path());
        }
    }
    let dir = base.join(format!("{prefix}{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A differential program's output split by sequence: the lines after each
/// `# seed N` line (words may follow N), by N (the random-sequence differs
/// print one such line before each sequence).
pub fn by_seed(out: &str) -> std::collections::BTreeMap<u64, Vec<&str>> {
    let mut m: std::collections::BTreeMap<u64, Vec<&str>> = std::collections::BTreeMap::new();
    let mut cur = None;
    for l in out.lines() {
        if let Some(s) = l.strip_prefix("# seed ") {
            let seed = s
                .split_whitespace()
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("a bad sequence line: {l:?}"));
            m.insert(seed, Vec::new());
            cur = Some(seed);
        } else if let Some(seed) = cur {
            m.entry(seed).or_default().push(l);
        }
    }
    m
}

/// `n` consecutive free TCP ports of the loopback below the ephemeral range
/// (32768 and up), so that neither another test's port-0 bind nor a
/// connect's automatic source port can take them before the program that
/// was given them binds them.
pub fn free_ports(n: u16) -> u16 {
    use std::sync::atomic::{AtomicU16, Ordering};
    static NEXT: AtomicU16 = AtomicU16::new(0);
    let seed = 20_000 + (std::process::id() % 400) as u16 * 20;
    loop {
        let base = seed + NEXT.fetch_add(n + 1, Ordering::SeqCst) % 4000;
        if (0..n).all(|i| std::net::TcpListener::bind(("127.0.0.1", base + i)).is_ok()) {
            return base;
        }
    }
}

/// One HTTP GET of `path` from `127.0.0.1:port` over a fresh connection;
/// the whole response.
pub fn http_get(port: u16, path: &str) -> std::io::Result<String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(std::time::Duration::from_secs(30)))?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )?;
    let mut out = String::new();
    s.read_to_string(&mut out)?;
    Ok(out)
}

/// A number from the environment variable `name`, or `default`.
pub fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Compares two runs of a random-sequence differ sequence by sequence
/// (see [`by_seed`]); panics at the first line that differs, with the
/// sequence up to it and how to replay it (`replay` gets the seed).
pub fn assert_same_sequences(host: &str, part: &str, seeds: u32, replay: impl Fn(u64) -> String) {
    let (h, p) = (by_seed(host), by_seed(part));
    assert_eq!(h.len(), seeds as usize, "host output is missing sequences");
    for (seed, hl) in &h {
        let pl = p.get(seed).map(Vec::as_slice).unwrap_or(&[]);
        if let Some(k) = (0..hl.len().max(pl.len())).find(|&k| hl.get(k) != pl.get(k)) {
            panic!(
                "a partition differs from Linux: seed {seed}, line {k} (replay: {})\n--- host \
                 ---\n{}\n--- partition ---\n{}",
                replay(*seed),
                hl[..hl.len().min(k + 1)].join("\n"),
                pl[..pl.len().min(k + 1)].join("\n"),
            );
        }
    }
}

/// A random-sequence differ program (`tests/progs/NAME.c`, built static
/// with gcc into a scratch directory) run as `NAME run SEED NSEEDS COUNT
/// [EXTRA]` on the host and in a partition (`astraea run` in the same
/// directory), whose outputs must agree sequence by sequence.
pub struct Differ {
    pub name: &'static str,
    pub dir: PathBuf,
}

impl Differ {
    /// Builds `name` into `scratch_root(name)/sub`; `None`, loudly, without
    /// `/dev/kvm` or gcc.
    pub fn build(name: &'static str, sub: &str) -> Option<Differ> {
        if !kvm_available() {
            return None;
        }
        if Command::new("gcc").arg("--version").output().is_err() {
            eprintln!("\n*** SKIPPED: gcc is not installed; {name} did not run. ***\n");
            return None;
        }
        let dir = scratch_root(name).join(sub);
        std::fs::create_dir_all(&dir).unwrap();
        let out = Command::new("gcc")
            .args(["-O2", "-Wall", "-static-pie", "-o"])
            .arg(dir.join(name))
            .arg(workspace().join(format!("tests/progs/{name}.c")))
            .output()
            .unwrap();
        assert!(out.status.success(), "gcc failed for {name}: {out:?}");
        Some(Differ { name, dir })
    }

    fn run(&self, partition: bool, args: &[&str]) -> String {
        let prog = format!("./{}", self.name);
        let mut c = if partition {
            let mut c = Command::new(astraea());
            c.args(["run", "--", &prog]);
            c
        } else {
            Command::new(self.dir.join(self.name))
        };
        c.args(args).current_dir(&self.dir);
        let r = run_with_timeout(&mut c, std::time::Duration::from_secs(600));
        let place = if partition {
            "in a partition"
        } else {
            "on the host"
        };
        assert_eq!(
            r.code, 0,
            "{} {args:?} fails {place}: {}",
            self.name, r.stderr
        );
        r.stdout
    }

    /// Runs `seeds` sequences of `calls` calls from `first` (`extra`
    /// appended to the arguments) on the host and in a partition; panics
    /// on the first difference with the sequence up to it.
    pub fn differential(&self, first: u64, seeds: u32, calls: u32, extra: Option<&str>) {
        let (a, b, c) = (first.to_string(), seeds.to_string(), calls.to_string());
        let mut args = vec!["run", a.as_str(), b.as_str(), c.as_str()];
        args.extend(extra);
        let t0 = std::time::Instant::now();
        let host = self.run(false, &args);
        let t1 = std::time::Instant::now();
        let part = self.run(true, &args);
        eprintln!(
            "{}: {seeds} sequences x {calls} calls: host {:?}, partition {:?}",
            self.name,
            t1 - t0,
            t1.elapsed()
        );
        let tail = extra.map(|e| format!(" {e}")).unwrap_or_default();
        assert_same_sequences(&host, &part, seeds, |seed| {
            format!("{} run {seed} 1 {calls}{tail}", self.name)
        });
    }

    /// [`differential`](Self::differential) over `seeds` sequences from
    /// `first`, in batches of a thousand.
    pub fn long_run(&self, first: u64, seeds: u64, calls: u32, extra: Option<&str>) {
        let mut done = 0;
        while done < seeds {
            let batch = (seeds - done).min(1000);
            self.differential(first + done, batch as u32, calls, extra);
            done += batch;
        }
    }

    /// Removes the scratch directory.
    pub fn remove(self) {
        std::fs::remove_dir_all(&self.dir).unwrap();
    }
}
