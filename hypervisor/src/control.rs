//! The control socket of a running partition: how `astraea ps` lists
//! partitions and `astraea cache dump --partition ID FILE` asks one to dump
//! its file cache while its program runs.
//!
//! Each `astraea run` is a partition whose ID is the VMM's process ID. It
//! listens on the unix socket [`socket_path`]`(ID)`, in a directory only
//! its user can enter (`$XDG_RUNTIME_DIR/astraea/`, else
//! `/tmp/astraea-UID/`), and removes it when the partition ends.
//!
//! The protocol is one request line and one answer line per connection:
//!
//! - `info` → `ok ID UPTIME_SECS MEM_BYTES CACHE NAME ROLE PROGRAM ARGS…`
//!   (NAME and ROLE are `-` for a partition without them)
//! - `dump /ABSOLUTE/FILE` → `ok BYTES` once FILE holds the image, or
//!   `err MESSAGE`.
//! - `snapshot /ABSOLUTE/FILE` → `ok BYTES` once FILE holds a snapshot of
//!   the partition (BYTES of RAM stored), or `err MESSAGE`.
//!
//! A dump request goes to the vCPU thread as a [`DumpJob`] (FILE already
//! open for writing), and the guest is interrupted on
//! [`astraea_abi::cache_dump::VECTOR`] by `KVM_SIGNAL_MSI`; the library OS's
//! cache-ctl thread then streams the image through the `CACHE_DUMP` ports
//! (see `partition.rs`), and the vCPU thread answers through the job.

use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use kvm_ioctls::VmFd;

/// How long a dump may take before the requester is told it failed.
pub const DUMP_TIMEOUT: Duration = Duration::from_secs(300);
/// How long the server waits for a client's request line.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// The directory of the control sockets: `$XDG_RUNTIME_DIR/astraea`, else
/// `/tmp/astraea-UID`.
pub fn socket_dir() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(d) if !d.is_empty() && Path::new(&d).is_absolute() => PathBuf::from(d).join("astraea"),
        _ => {
            // SAFETY: getuid has no preconditions and cannot fail.
            let uid = unsafe { libc::getuid() };
            PathBuf::from(format!("/tmp/astraea-{uid}"))
        }
    }
}

/// The control socket of partition `id`.
pub fn socket_path(id: u32) -> PathBuf {
    socket_dir().join(format!("{id}.sock"))
}

/// Creates [`socket_dir`] (mode 0700) and checks that it is this user's
/// and closed to others (it may sit in a shared `/tmp`).
fn prepare_dir() -> std::io::Result<PathBuf> {
    let dir = socket_dir();
    match std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
    {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let md = std::fs::symlink_metadata(&dir)?;
    // SAFETY: getuid has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
    if !md.is_dir() || md.uid() != uid {
        return Err(std::io::Error::other(format!(
            "{} is not a directory of this user",
            dir.display()
        )));
    }
    if md.permissions().mode() & 0o077 != 0 {
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(dir)
}

/// A dump the vCPU thread is to serve: the open FILE and where to answer.
pub struct DumpJob {
    /// The requested file, for messages.
    pub path: PathBuf,
    /// FILE, open for writing and empty.
    pub file: std::io::BufWriter<std::fs::File>,
    /// Bytes written so far.
    pub bytes: u64,
    /// The first write error, if any.
    pub error: Option<std::io::Error>,
    reply: mpsc::Sender<Result<u64, String>>,
}

impl DumpJob {
    /// Appends image bytes from the guest.
    pub fn write(&mut self, b: &[u8]) {
        if self.error.is_none() {
            match self.file.write_all(b) {
                Ok(()) => self.bytes += b.len() as u64,
                Err(e) => self.error = Some(e),
            }
        }
    }

    /// Answers the requester with an error; FILE stays as far as written.
    pub fn fail(self, why: String) {
        let _ = self.reply.send(Err(why));
    }

    /// The guest finished the dump with `status` (0 or a Linux errno):
    /// closes FILE and answers the requester.
    pub fn finish(mut self, status: u32) {
        let r = if status != 0 {
            Err(format!(
                "the partition has no file cache to dump (status {status}); it was started with --cache none or without the built-in gateway"
            ))
        } else if let Some(e) = self.error.take() {
            Err(format!("writing {}: {e}", self.path.display()))
        } else if let Err(e) = self.file.flush() {
            Err(format!("writing {}: {e}", self.path.display()))
        } else {
            Ok(self.bytes)
        };
        let _ = self.reply.send(r);
    }
}

/// A snapshot the vCPU thread is to write when the guest, interrupted on
/// [`astraea_abi::snapshot::VECTOR`], hands it its record.
pub struct SnapshotJob {
    /// Where it goes (absolute).
    pub path: PathBuf,
    reply: mpsc::Sender<Result<u64, String>>,
}

impl SnapshotJob {
    /// Answers the requester.
    pub fn answer(self, r: Result<u64, String>) {
        let _ = self.reply.send(r);
    }
}

/// How long a snapshot may take before the requester is told it failed
/// (the guest waits up to 2 s for its 9P requests to drain, then memory is
/// written).
pub const SNAPSHOT_TIMEOUT: Duration = Duration::from_secs(120);

/// The work the control socket hands the vCPU thread.
pub struct Jobs {
    /// Cache dumps.
    pub dumps: mpsc::Receiver<DumpJob>,
    /// Snapshots.
    pub snapshots: mpsc::Receiver<SnapshotJob>,
}

/// What `info` reports and whether dumps can be served.
#[derive(Debug, Clone)]
pub struct Info {
    /// Partition memory in bytes.
    pub mem: u64,
    /// The file-cache policy (`ro:BYTES`, `none`).
    pub cache: String,
    /// The program and its arguments.
    pub args: Vec<String>,
    /// The partition's name, if it was given one.
    pub name: Option<String>,
    /// Its role in a deployment, if it was given one.
    pub role: Option<String>,
    /// Why this partition cannot dump its cache, if it cannot.
    pub no_dump: Option<String>,
}

/// A partition's control socket, served by a thread until dropped.
pub struct Server {
    path: PathBuf,
    stop: Arc<AtomicBool>,
    listener: UnixListener,
    /// Disconnected when the thread has ended (its sender dropped).
    ended: mpsc::Receiver<()>,
}

impl Server {
    /// Listens on [`socket_path`] of this process; returns the server and
    /// the receivers of the jobs the vCPU thread is to serve.
    pub fn start(info: Info, vm: Arc<VmFd>) -> std::io::Result<(Self, Jobs)> {
        let dir = prepare_dir()?;
        let id = std::process::id();
        let path = dir.join(format!("{id}.sock"));
        // A socket left by a process that had this ID before.
        let _ = std::fs::remove_file(&path);
        let listener = UnixListener::bind(&path)?;
        let keep = listener.try_clone()?;
        let (tx, rx) = mpsc::channel();
        let (snap_tx, snap_rx) = mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let t0 = Instant::now();
        let (ending, ended) = mpsc::channel::<()>();
        std::thread::Builder::new()
            .name("astraea-control".into())
            .spawn(move || {
                let _ending = ending;
                for conn in listener.incoming() {
                    if s.load(Ordering::SeqCst) {
                        break;
                    }
                    match conn {
                        Ok(c) => serve(c, &info, &vm, (&tx, &snap_tx), t0),
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(_) => std::thread::sleep(Duration::from_millis(10)),
                    }
                }
            })?;
        tracing::info!("partition {id}: control socket {}", path.display());
        Ok((
            Self {
                path,
                stop,
                listener: keep,
                ended,
            },
            Jobs {
                dumps: rx,
                snapshots: snap_rx,
            },
        ))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        self.stop.store(true, Ordering::SeqCst);
        // Ends the thread's `accept` (it returns EINVAL on a listener shut
        // down). A requester whose dump the exit cut short gets its answer
        // first: the vCPU side dropped the job, so that answer is ready.
        // SAFETY: shutdown on a socket this server owns.
        unsafe { libc::shutdown(self.listener.as_raw_fd(), libc::SHUT_RDWR) };
        // Waits for the thread to end (at most 1 s: it may be answering a
        // slow client) without polling, which cost every run 2 ms.
        let _ = self.ended.recv_timeout(Duration::from_secs(1));
    }
}

/// Where the control thread sends jobs.
type Senders<'a> = (&'a mpsc::Sender<DumpJob>, &'a mpsc::Sender<SnapshotJob>);

fn serve(conn: UnixStream, info: &Info, vm: &VmFd, jobs: Senders<'_>, t0: Instant) {
    let _ = conn.set_read_timeout(Some(REQUEST_TIMEOUT));
    let mut line = String::new();
    let answer = match BufReader::new(&conn).read_line(&mut line) {
        Ok(_) => request(line.trim_end_matches(['\r', '\n']), info, vm, jobs, t0),
        Err(e) => format!("err cannot read the request: {e}"),
    };
    let _ = (&conn).write_all(format!("{answer}\n").as_bytes());
}

fn request(line: &str, info: &Info, vm: &VmFd, jobs: Senders<'_>, t0: Instant) -> String {
    let (cmd, arg) = line.split_once(' ').unwrap_or((line, ""));
    match cmd {
        "info" => format!(
            "ok {} {} {} {} {} {} {}",
            std::process::id(),
            t0.elapsed().as_secs(),
            info.mem,
            info.cache,
            info.name.as_deref().unwrap_or("-"),
            info.role.as_deref().unwrap_or("-"),
            info.args.join(" ")
        ),
        "dump" => match dump(Path::new(arg), info, vm, jobs.0) {
            Ok(bytes) => format!("ok {bytes}"),
            Err(e) => format!("err {}", e.replace('\n', " ")),
        },
        "snapshot" => match snapshot(Path::new(arg), vm, jobs.1) {
            Ok(bytes) => format!("ok {bytes}"),
            Err(e) => format!("err {}", e.replace('\n', " ")),
        },
        _ => format!(
            "err unknown request {cmd:?}: this VMM understands info, dump FILE and snapshot FILE"
        ),
    }
}

fn dump(path: &Path, info: &Info, vm: &VmFd, jobs: &mpsc::Sender<DumpJob>) -> Result<u64, String> {
    if let Some(why) = &info.no_dump {
        return Err(why.clone());
    }
    if !path.is_absolute() {
        return Err(format!("{} is not an absolute path", path.display()));
    }
    let file = std::fs::File::create(path)
        .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    let (reply, answer) = mpsc::channel();
    let job = DumpJob {
        path: path.to_path_buf(),
        file: std::io::BufWriter::with_capacity(1 << 20, file),
        bytes: 0,
        error: None,
        reply,
    };
    jobs.send(job)
        .map_err(|_| "the partition is exiting".to_string())?;
    interrupt(vm, astraea_abi::cache_dump::VECTOR)?;
    match answer.recv_timeout(DUMP_TIMEOUT) {
        Ok(r) => r,
        Err(mpsc::RecvTimeoutError::Timeout) => Err(format!(
            "the partition did not finish the dump within {} s",
            DUMP_TIMEOUT.as_secs()
        )),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            Err("the partition exited before it finished the dump".into())
        }
    }
}

fn snapshot(path: &Path, vm: &VmFd, jobs: &mpsc::Sender<SnapshotJob>) -> Result<u64, String> {
    if !path.is_absolute() {
        return Err(format!("{} is not an absolute path", path.display()));
    }
    let (reply, answer) = mpsc::channel();
    jobs.send(SnapshotJob {
        path: path.to_path_buf(),
        reply,
    })
    .map_err(|_| "the partition is exiting".to_string())?;
    interrupt(vm, astraea_abi::snapshot::VECTOR)?;
    match answer.recv_timeout(SNAPSHOT_TIMEOUT) {
        Ok(r) => r,
        Err(mpsc::RecvTimeoutError::Timeout) => Err(format!(
            "the partition did not take the snapshot within {} s",
            SNAPSHOT_TIMEOUT.as_secs()
        )),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            Err("the partition exited before it took the snapshot".into())
        }
    }
}

/// Interrupts the boot CPU on `vector` (`KVM_SIGNAL_MSI`).
fn interrupt(vm: &VmFd, vector: u8) -> Result<(), String> {
    let msi = kvm_bindings::kvm_msi {
        address_lo: 0xfee0_0000, // boot CPU, physical destination
        data: u32::from(vector),
        ..Default::default()
    };
    vm.signal_msi(msi)
        .map(|_| ())
        .map_err(|e| format!("cannot interrupt the partition: {e}"))
}

/// Sends `line` to partition `id` and returns its answer line.
pub fn ask(id: u32, line: &str, timeout: Duration) -> std::io::Result<String> {
    ask_at(&socket_path(id), line, timeout)
}

fn ask_at(path: &Path, line: &str, timeout: Duration) -> std::io::Result<String> {
    let mut s = UnixStream::connect(path)?;
    s.set_read_timeout(Some(timeout))?;
    s.write_all(format!("{line}\n").as_bytes())?;
    let mut answer = String::new();
    BufReader::new(&s).read_line(&mut answer)?;
    if answer.is_empty() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "the partition exited before it answered",
        ));
    }
    Ok(answer.trim_end().to_string())
}

/// A running partition as `info` describes it.
#[derive(Debug, Clone)]
pub struct Listed {
    /// Its ID (the VMM's process ID).
    pub id: u32,
    /// Seconds since it started.
    pub uptime_secs: u64,
    /// Its memory in bytes.
    pub mem: u64,
    /// Its file-cache policy.
    pub cache: String,
    /// Its name (`-` without one).
    pub name: String,
    /// Its role (`-` without one).
    pub role: String,
    /// Host memory it holds: the resident set of its VMM process, bytes
    /// (guest pages touched, the gateway, the VMM).
    pub rss: u64,
    /// Its program and arguments.
    pub command: String,
}

/// The resident set of process `pid` in bytes (0 if it cannot be read).
pub fn rss_of(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// The partitions that answer on their control sockets, by ID; sockets of
/// partitions that are gone are removed.
pub fn list() -> Vec<Listed> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(socket_dir()) else {
        return out;
    };
    for e in rd.flatten() {
        let p = e.path();
        let Some(id) = p
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".sock"))
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        match ask_at(&p, "info", Duration::from_secs(2)) {
            Ok(a) => {
                let mut w = a.splitn(8, ' ');
                if w.next() != Some("ok") {
                    continue;
                }
                let _ = w.next();
                let num = |s: Option<&str>| s.and_then(|s| s.parse().ok()).unwrap_or(0);
                out.push(Listed {
                    id,
                    uptime_secs: num(w.next()),
                    mem: num(w.next()),
                    cache: w.next().unwrap_or("").to_string(),
                    name: w.next().unwrap_or("-").to_string(),
                    role: w.next().unwrap_or("-").to_string(),
                    rss: rss_of(id),
                    command: w.next().unwrap_or("").to_string(),
                });
            }
            Err(e)
                if e.kind() == std::io::ErrorKind::ConnectionRefused
                    && !Path::new(&format!("/proc/{id}")).exists() =>
            {
                // Nobody listens and its process is gone: its partition
                // ended without cleaning up. (A live one may be between
                // binding its socket and listening on it.)
                let _ = std::fs::remove_file(&p);
            }
            Err(_) => {}
        }
    }
    out.sort_by_key(|l| l.id);
    out
}
