//! `astraea deploy FILE`: one partition per JVM of a deployment (a search
//! front end and its shards), started in order with readiness checks,
//! restarted when they die, stopped cleanly — or the same JVMs on the host
//! (`--host`) for comparison.
//!
//! Each member is an `astraea run --name NAME …` child process (its own VMM,
//! listed by `astraea ps`) in its own process group, its stdout and stderr
//! appended to `LOG_DIR/NAME.log`. With `gateway = "shared"` one
//! `astraea-gateway --vhost-user --keep-listening` process serves every
//! partition's files and sockets. Members start as soon as the members they
//! come `after` are ready; the deployment is ready when all are. A member
//! that exits is started again by its restart policy (at most
//! [`MAX_RESTARTS`] times in [`RESTART_WINDOW`], waiting a little longer each
//! time). SIGINT or SIGTERM stops the members in the reverse of the file's
//! order with SIGTERM (a partition passes it to its JVM, whose shutdown hooks
//! run), then SIGKILL after the stop timeout. `LOG_DIR/status` always holds
//! the current table (what `astraea ps` shows for partitions, for host JVMs
//! too).

pub mod spec;

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime};

pub use spec::{GatewayMode, Member, Ready, Restart, Spec, SpecError};

/// Restarts allowed in [`RESTART_WINDOW`] before a member is given up.
pub const MAX_RESTARTS: usize = 5;
/// See [`MAX_RESTARTS`].
pub const RESTART_WINDOW: Duration = Duration::from_secs(120);
/// How often members are checked.
const TICK: Duration = Duration::from_millis(100);

/// Where the members run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// One partition each (`astraea run`).
    Partitions,
    /// Host processes, for comparison.
    Host,
}

/// How to run a deployment.
#[derive(Debug, Clone)]
pub struct Options {
    /// Partitions or host processes.
    pub place: Place,
    /// The `astraea` binary that runs each partition.
    pub astraea: PathBuf,
    /// The `astraea-gateway` binary (for `gateway = "shared"`).
    pub gateway: PathBuf,
    /// `--log` of each partition.
    pub log: String,
}

/// Why a deployment stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum DeployError {
    /// The log directory cannot be used.
    #[error("cannot use the log directory {path}: {source}")]
    LogDir {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A member could not be started at all.
    #[error("cannot start {name} ({program}): {source}")]
    Spawn {
        /// The member.
        name: String,
        /// What was run.
        program: String,
        /// Why.
        source: std::io::Error,
    },
    /// A member never became ready while the deployment was coming up.
    #[error("{0}")]
    NotReady(String),
    /// Another `astraea deploy` runs with the same log directory.
    #[error(
        "another astraea deploy is running with the log directory {0} (stop it, or give this one another log-dir)"
    )]
    Busy(PathBuf),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Not started (or waiting to be started again at the instant).
    Waiting(Option<Instant>),
    Starting,
    Ready,
    /// Given up on.
    Failed,
    Stopped,
}

struct Running {
    member: Member,
    state: State,
    child: Option<Child>,
    started: Instant,
    /// The log's length when it was started (a `log:` check reads after it).
    log_from: u64,
    restarts: Vec<Instant>,
    /// It has been ready once (later starts do not hold its dependents).
    was_ready: bool,
}

/// Runs `spec` until `stop` is non-zero (a stop was asked for), then stops
/// it, killing without waiting once `stop` reaches 2; `Ok` after a clean
/// stop. Progress and status lines go to stderr.
pub fn run(spec: &Spec, opts: &Options, stop: &AtomicUsize) -> Result<(), DeployError> {
    std::fs::create_dir_all(&spec.log_dir).map_err(|source| DeployError::LogDir {
        path: spec.log_dir.clone(),
        source,
    })?;
    // One supervisor per log directory: a second would replace the first's
    // gateway socket and interleave its logs and status.
    let _lock = lock_log_dir(&spec.log_dir)?;
    let t0 = Instant::now();
    let place = match opts.place {
        Place::Partitions => "partitions",
        Place::Host => "host processes",
    };
    eprintln!(
        "astraea deploy: {} ({} members as {place}); logs in {}",
        spec.name,
        spec.members.len(),
        spec.log_dir.display()
    );
    let mut gateway = match (opts.place, spec.gateway) {
        (Place::Partitions, GatewayMode::Shared) => Some(SharedGateway::start(spec, opts)?),
        _ => None,
    };
    let mut all: Vec<Running> = spec
        .members
        .iter()
        .map(|m| Running {
            member: m.clone(),
            state: State::Waiting(None),
            child: None,
            started: t0,
            log_from: 0,
            restarts: Vec::new(),
            was_ready: false,
        })
        .collect();
    let mut up = false;
    let mut last_status_write = Instant::now() - Duration::from_secs(10);
    let result = loop {
        if stop.load(Ordering::SeqCst) > 0 {
            break Ok(());
        }
        if let Some(g) = gateway.as_mut()
            && let Err(e) = g.keep_alive(opts)
        {
            break Err(e);
        }
        let mut failure = None;
        for i in 0..all.len() {
            if let Err(e) = step(&mut all, i, spec, opts, gateway.as_ref(), up) {
                failure = Some(e);
                break;
            }
        }
        if let Some(e) = failure {
            break Err(e);
        }
        if !up && all.iter().all(|r| r.state == State::Ready) {
            up = true;
            eprintln!(
                "astraea deploy: {} ready: {} members in {:.1} s",
                spec.name,
                all.len(),
                t0.elapsed().as_secs_f64()
            );
            eprint!("{}", table(&all, gateway.as_ref()));
        }
        if last_status_write.elapsed() >= Duration::from_secs(1) {
            last_status_write = Instant::now();
            write_status(spec, &all, gateway.as_ref());
        }
        std::thread::sleep(TICK);
    };
    eprintln!("astraea deploy: stopping {}", spec.name);
    shut_down(&mut all, spec.stop_timeout, stop);
    if let Some(g) = gateway.take() {
        g.stop();
    }
    write_status(spec, &all, None);
    result
}

/// Advances member `i` by one tick.
fn step(
    all: &mut [Running],
    i: usize,
    spec: &Spec,
    opts: &Options,
    gw: Option<&SharedGateway>,
    up: bool,
) -> Result<(), DeployError> {
    match all[i].state {
        State::Waiting(at) => {
            let deps_ready = all[i].member.after.iter().all(|a| {
                all.iter()
                    .any(|r| &r.member.name == a && (r.was_ready || r.state == State::Ready))
            });
            if deps_ready && at.is_none_or(|t| Instant::now() >= t) {
                start(&mut all[i], spec, opts, gw)?;
            }
        }
        State::Starting | State::Ready => {
            let r = &mut all[i];
            let exited = match r.child.as_mut().map(Child::try_wait) {
                Some(Ok(Some(st))) => Some(st),
                _ => None,
            };
            if let Some(st) = exited {
                r.child = None;
                return exited_member(r, st, up, &log_path(spec, &r.member));
            }
            if r.state == State::Starting {
                if is_ready(r, spec) {
                    r.state = State::Ready;
                    r.was_ready = true;
                    eprintln!(
                        "astraea deploy: {} ready in {:.1} s",
                        r.member.name,
                        r.started.elapsed().as_secs_f64()
                    );
                } else if r.started.elapsed() > spec.ready_timeout {
                    eprintln!(
                        "astraea deploy: {} not ready after {} s; killing it (see {})",
                        r.member.name,
                        spec.ready_timeout.as_secs(),
                        log_path(spec, &r.member).display()
                    );
                    if let Some(mut c) = r.child.take() {
                        kill_group(&c, libc::SIGKILL);
                        let _ = c.wait();
                    }
                    let st = ExitStatus::from_raw(libc::SIGKILL);
                    return exited_member(r, st, up, &log_path(spec, &r.member));
                }
            }
        }
        State::Failed | State::Stopped => {}
    }
    Ok(())
}

/// A member's process ended with `st`: restart it or give it up.
fn exited_member(r: &mut Running, st: ExitStatus, up: bool, log: &Path) -> Result<(), DeployError> {
    let failed = !st.success();
    eprintln!(
        "astraea deploy: {} exited ({})",
        r.member.name,
        describe(st)
    );
    let again = match r.member.restart {
        Restart::Always => true,
        Restart::OnFailure => failed,
        Restart::Never => false,
    };
    let now = Instant::now();
    r.restarts
        .retain(|t| now.duration_since(*t) < RESTART_WINDOW);
    if again && r.restarts.len() < MAX_RESTARTS {
        r.restarts.push(now);
        let delay = Duration::from_millis(500 * r.restarts.len() as u64);
        eprintln!(
            "astraea deploy: restarting {} in {:.1} s ({} of {MAX_RESTARTS} in {} s)",
            r.member.name,
            delay.as_secs_f64(),
            r.restarts.len(),
            RESTART_WINDOW.as_secs()
        );
        r.state = State::Waiting(Some(now + delay));
        return Ok(());
    }
    r.state = if again || failed {
        State::Failed
    } else {
        State::Stopped
    };
    if r.state == State::Failed {
        let why = if again {
            format!(
                "{} failed {} times in {} s; given up",
                r.member.name,
                MAX_RESTARTS + 1,
                RESTART_WINDOW.as_secs()
            )
        } else {
            format!("{} failed; its restart policy is never", r.member.name)
        };
        eprintln!("astraea deploy: {why}");
        if !up {
            return Err(DeployError::NotReady(format!(
                "the deployment cannot come up: {why} (its output: {})",
                log.display()
            )));
        }
    }
    Ok(())
}

fn describe(st: ExitStatus) -> String {
    match (st.code(), st.signal()) {
        (Some(c), _) => format!("status {c}"),
        (None, Some(s)) => format!("killed by signal {s}"),
        _ => "unknown status".into(),
    }
}

fn log_path(spec: &Spec, m: &Member) -> PathBuf {
    spec.log_dir.join(format!("{}.log", m.name))
}

/// The command line that runs member `m`.
fn command(m: &Member, spec: &Spec, opts: &Options, gw: Option<&SharedGateway>) -> Command {
    let mut c;
    match opts.place {
        Place::Host => {
            let program = match (&spec.jdk, m.command[0].as_str()) {
                (Some(jdk), "java") => jdk.join("bin/java"),
                _ => PathBuf::from(&m.command[0]),
            };
            c = Command::new(program);
            c.args(&m.command[1..]);
        }
        Place::Partitions => {
            c = Command::new(&opts.astraea);
            c.args([
                "run", "--name", &m.name, "--role", &m.role, "--mem", &m.mem, "--log", &opts.log,
            ]);
            c.args(["--net-stream", &m.net_stream]);
            if let Some(cache) = &m.cache {
                c.args(["--cache", cache]);
            }
            if let Some(jdk) = &spec.jdk {
                c.arg("--jdk").arg(jdk);
            }
            match gw {
                Some(g) => {
                    c.arg("--gateway")
                        .arg(format!("vhost-user:{}", g.socket.display()));
                    if let Ok(cwd) = std::env::current_dir() {
                        c.arg("--cwd").arg(cwd);
                    }
                    for p in &g.cache_paths {
                        c.args(["--cache-path", p]);
                    }
                }
                None => {
                    for n in &m.net {
                        c.args(["--net", n]);
                    }
                    for mnt in &m.mounts {
                        c.args(["--mount", mnt]);
                    }
                }
            }
            c.args(&m.astraea_args);
            c.arg("--").args(&m.command);
        }
    }
    c.envs(&m.env);
    c
}

fn start(
    r: &mut Running,
    spec: &Spec,
    opts: &Options,
    gw: Option<&SharedGateway>,
) -> Result<(), DeployError> {
    let path = log_path(spec, &r.member);
    let open = || {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
    };
    let mut log = open().map_err(|source| DeployError::LogDir {
        path: path.clone(),
        source,
    })?;
    let mut c = command(&r.member, spec, opts, gw);
    let shown = format!("{c:?}");
    let _ = writeln!(
        log,
        "=== astraea deploy: start {} at {:?}: {shown}",
        r.restarts.len() + 1,
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default()
    );
    r.log_from = log.metadata().map(|m| m.len()).unwrap_or(0);
    let err = log.try_clone().map_err(|source| DeployError::LogDir {
        path: path.clone(),
        source,
    })?;
    c.stdin(Stdio::null())
        .stdout(Stdio::from(log))
        .stderr(Stdio::from(err))
        // Its own process group: a terminal's Ctrl-C reaches only this
        // supervisor, which stops the members in order.
        .process_group(0);
    stop_with_supervisor(&mut c);
    let child = c.spawn().map_err(|source| DeployError::Spawn {
        name: r.member.name.clone(),
        program: shown,
        source,
    })?;
    eprintln!(
        "astraea deploy: started {} ({}, pid {})",
        r.member.name,
        r.member.role,
        child.id()
    );
    r.child = Some(child);
    r.started = Instant::now();
    r.state = if r.member.ready == Ready::Started {
        State::Ready
    } else {
        State::Starting
    };
    if r.state == State::Ready {
        r.was_ready = true;
    }
    Ok(())
}

fn is_ready(r: &Running, spec: &Spec) -> bool {
    const PROBE: Duration = Duration::from_millis(500);
    let connect = |addr: &str| -> Option<TcpStream> {
        let a = addr.to_socket_addrs().ok()?.next()?;
        let s = TcpStream::connect_timeout(&a, PROBE).ok()?;
        s.set_read_timeout(Some(PROBE)).ok()?;
        s.set_write_timeout(Some(PROBE)).ok()?;
        Some(s)
    };
    match &r.member.ready {
        Ready::Started => true,
        Ready::Tcp(addr) => connect(addr).is_some(),
        Ready::Http { addr, path } => {
            let Some(mut s) = connect(addr) else {
                return false;
            };
            let req = format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
            if s.write_all(req.as_bytes()).is_err() {
                return false;
            }
            let mut head = [0u8; 12];
            s.read_exact(&mut head).is_ok()
                && (head.starts_with(b"HTTP/1.1 200") || head.starts_with(b"HTTP/1.0 200"))
        }
        Ready::Log(text) => {
            let Ok(mut f) = File::open(log_path(spec, &r.member)) else {
                return false;
            };
            let mut tail = String::new();
            f.seek(SeekFrom::Start(r.log_from)).is_ok()
                && f.read_to_string(&mut tail).is_ok()
                && tail.lines().any(|l| l.contains(text.as_str()))
        }
    }
}

/// Takes `LOG_DIR/.lock` (an exclusive `flock`, released when the file is
/// closed, also when this process dies).
fn lock_log_dir(dir: &Path) -> Result<File, DeployError> {
    use std::os::fd::AsRawFd;
    let path = dir.join(".lock");
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|source| DeployError::LogDir { path, source })?;
    // SAFETY: flock on a descriptor this function owns; no memory involved.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        return Err(DeployError::Busy(dir.to_path_buf()));
    }
    Ok(f)
}

/// The child gets SIGTERM if this supervisor dies (even by SIGKILL), so a
/// deployment never outlives it; a partition passes the SIGTERM to its JVM.
/// It starts with no signal blocked: the supervisor blocks the ones it
/// forwards (`host_signals`), and a child inherits the mask through exec —
/// a host JVM or the shared gateway then never took SIGTERM, so a stop
/// waited for SIGKILL and a killed supervisor left its gateway behind.
fn stop_with_supervisor(c: &mut Command) {
    // SAFETY: the closure runs in the child between fork and exec and calls
    // only sigemptyset, sigprocmask, prctl and getppid, which are
    // async-signal-safe; it touches no memory of the parent (the set is
    // its own stack's).
    unsafe {
        c.pre_exec(|| {
            let mut none = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
            libc::sigemptyset(none.as_mut_ptr());
            if libc::sigprocmask(libc::SIG_SETMASK, none.as_ptr(), std::ptr::null_mut()) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The supervisor died before the prctl: stop at once.
            if libc::getppid() == 1 {
                return Err(std::io::Error::other("the supervisor is gone"));
            }
            Ok(())
        })
    };
}

/// Sends `sig` to the process group of `c` (the member and anything it
/// started).
fn kill_group(c: &Child, sig: libc::c_int) {
    // SAFETY: kill has no memory effects; the group is the child's own
    // (process_group(0)), so nothing else is signalled.
    unsafe { libc::kill(-(c.id() as libc::pid_t), sig) };
}

/// Stops every member in the reverse of the file's order: SIGTERM, then
/// SIGKILL after `timeout`.
fn shut_down(all: &mut [Running], timeout: Duration, hurry: &AtomicUsize) {
    for r in all.iter_mut().rev() {
        let Some(mut c) = r.child.take() else {
            if !matches!(r.state, State::Failed) {
                r.state = State::Stopped;
            }
            continue;
        };
        kill_group(&c, libc::SIGTERM);
        let deadline = Instant::now() + timeout;
        let st = loop {
            match c.try_wait() {
                Ok(Some(st)) => break Some(st),
                Ok(None) if Instant::now() < deadline && hurry.load(Ordering::SeqCst) < 2 => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                Ok(None) => {
                    if hurry.load(Ordering::SeqCst) < 2 {
                        eprintln!(
                            "astraea deploy: {} did not stop within {} s; killing it",
                            r.member.name,
                            timeout.as_secs()
                        );
                    }
                    kill_group(&c, libc::SIGKILL);
                    break c.wait().ok();
                }
                Err(_) => break None,
            }
        };
        if let Some(st) = st {
            eprintln!(
                "astraea deploy: {} stopped ({})",
                r.member.name,
                describe(st)
            );
        }
        r.state = State::Stopped;
    }
}

/// The status table: one line per member, and the shared gateway's.
fn table(all: &[Running], gw: Option<&SharedGateway>) -> String {
    let mut out = format!(
        "{:<14} {:<10} {:>8} {:<9} {:>8} {:>7} {:>8}\n",
        "NAME", "ROLE", "PID", "STATE", "UPTIME", "RSS", "RESTARTS"
    );
    for r in all {
        let (pid, up, rss) = match &r.child {
            Some(c) => (
                c.id().to_string(),
                format!("{}s", r.started.elapsed().as_secs()),
                format!("{}M", crate::control::rss_of(c.id()) >> 20),
            ),
            None => ("-".into(), "-".into(), "-".into()),
        };
        let state = match r.state {
            State::Waiting(_) => "waiting",
            State::Starting => "starting",
            State::Ready => "ready",
            State::Failed => "failed",
            State::Stopped => "stopped",
        };
        out += &format!(
            "{:<14} {:<10} {:>8} {:<9} {:>8} {:>7} {:>8}\n",
            r.member.name,
            r.member.role,
            pid,
            state,
            up,
            rss,
            r.restarts.len()
        );
    }
    if let Some(g) = gw {
        let pid = g.child.id();
        out += &format!(
            "{:<14} {:<10} {:>8} {:<9} {:>8} {:>7} {:>8}\n",
            "gateway",
            "gateway",
            pid,
            "ready",
            format!("{}s", g.started.elapsed().as_secs()),
            format!("{}M", crate::control::rss_of(pid) >> 20),
            g.restarts
        );
    }
    out
}

fn write_status(spec: &Spec, all: &[Running], gw: Option<&SharedGateway>) {
    let path = spec.log_dir.join("status");
    let tmp = spec.log_dir.join(".status.tmp");
    if std::fs::write(&tmp, table(all, gw)).is_ok() {
        let _ = std::fs::rename(tmp, path);
    }
}

/// The one gateway process of a `gateway = "shared"` deployment.
struct SharedGateway {
    child: Child,
    started: Instant,
    restarts: usize,
    socket: PathBuf,
    /// `--cache-path` for every partition.
    cache_paths: Vec<String>,
    args: Vec<String>,
    log: PathBuf,
}

impl SharedGateway {
    fn start(spec: &Spec, opts: &Options) -> Result<Self, DeployError> {
        let socket = spec.log_dir.join("gateway.sock");
        let m = &spec.members[0];
        let mut args: Vec<String> = vec![
            "--vhost-user".into(),
            socket.to_string_lossy().into_owned(),
            "--keep-listening".into(),
            "--no-console".into(),
            "--pass-env".into(),
            "--log".into(),
            "warn".into(),
        ];
        // The same exports `astraea run --mount` (or its defaults) would give.
        let exports = crate::mounts::exports(&m.mounts, false)
            .map_err(|e| DeployError::NotReady(format!("the shared gateway's mounts: {e}")))?;
        let cache_on = m.cache.as_deref() != Some("none");
        let mut cache_paths = Vec::new();
        for (e, cached) in exports {
            let ro = if e.read_only { ":ro" } else { "" };
            args.extend([
                "--export".into(),
                format!("{}:{}{ro}", e.host.display(), e.guest),
            ]);
            let c = e.read_only && cache_on && cached != Some(false);
            cache_paths.push(format!("{}={}", e.guest, if c { "ro" } else { "none" }));
        }
        let mut net_on = true;
        for n in &m.net {
            if n == "none" {
                net_on = false;
            } else if let Some(rule) = n.strip_prefix("allow=") {
                args.extend(["--net-allow".into(), rule.into()]);
            }
        }
        if net_on {
            args.push("--net".into());
        }
        let log = spec.log_dir.join("gateway.log");
        let child = Self::spawn(opts, &args, &log, &socket)?;
        Ok(Self {
            child,
            started: Instant::now(),
            restarts: 0,
            socket,
            cache_paths,
            args,
            log,
        })
    }

    fn spawn(
        opts: &Options,
        args: &[String],
        log: &Path,
        socket: &Path,
    ) -> Result<Child, DeployError> {
        let f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .map_err(|source| DeployError::LogDir {
                path: log.to_path_buf(),
                source,
            })?;
        let e = f.try_clone().map_err(|source| DeployError::LogDir {
            path: log.to_path_buf(),
            source,
        })?;
        let _ = std::fs::remove_file(socket);
        let spawn_err = |source| DeployError::Spawn {
            name: "gateway".into(),
            program: opts.gateway.display().to_string(),
            source,
        };
        let mut cmd = Command::new(&opts.gateway);
        cmd.args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::from(f))
            .stderr(Stdio::from(e))
            .process_group(0);
        stop_with_supervisor(&mut cmd);
        let mut child = cmd.spawn().map_err(spawn_err)?;
        // Partitions may connect once the socket exists.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !socket.exists() {
            if let Ok(Some(st)) = child.try_wait() {
                return Err(DeployError::NotReady(format!(
                    "the shared gateway exited at start ({}); see {}",
                    describe(st),
                    log.display()
                )));
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                return Err(DeployError::NotReady(format!(
                    "the shared gateway did not listen within 10 s; see {}",
                    log.display()
                )));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        eprintln!(
            "astraea deploy: shared gateway on {} (pid {})",
            socket.display(),
            child.id()
        );
        Ok(child)
    }

    /// Starts the gateway again if it died (its partitions' 9P failed:
    /// their restart policies bring them back).
    fn keep_alive(&mut self, opts: &Options) -> Result<(), DeployError> {
        if let Ok(Some(st)) = self.child.try_wait() {
            eprintln!(
                "astraea deploy: the shared gateway exited ({}); starting it again",
                describe(st)
            );
            self.child = Self::spawn(opts, &self.args, &self.log, &self.socket)?;
            self.started = Instant::now();
            self.restarts += 1;
        }
        Ok(())
    }

    fn stop(mut self) {
        kill_group(&self.child, libc::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                let _ = std::fs::remove_file(&self.socket);
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.socket);
    }
}
