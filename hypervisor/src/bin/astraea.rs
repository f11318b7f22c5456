//! `astraea`: run a program in its own KVM partition on the Astraea library OS.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use astraea_hypervisor::{
    NinePTarget, PartitionConfig, SyscallEntry, VmmError, jdk, jvm_opts, memory::parse_mem_size,
};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "astraea",
    version,
    about = "Run a program in its own KVM partition on the Astraea library OS",
    long_about = "Astraea boots one KVM partition per program on a Rust library OS. \
The partition's console goes to this process's stdout and stderr, and its exit status \
becomes this process's exit status.\n\n\
Exit status: the guest's own status (0-255); 127 if the program, or a JDK for \
`java`, cannot be found; 125 if the partition could not be started \
(the message says why), or if a JVM's heap (-Xmx, -Xms, -XX:MaxRAM…) plus 128 MiB \
for the rest of the JVM does not fit --mem, or a JVM option needs the host \
(JDWP over dt_socket, JMX remote, ZGC); 134 if the partition's kernel panicked; 139 if the partition \
crashed (triple fault or an unexpected VM exit; a register dump is printed).\n\n\
Signals: SIGTERM, SIGINT (Ctrl-C), SIGHUP and SIGQUIT sent to this process go to \
the partition's program, as if it were the process: a JVM runs its shutdown hooks \
and exits 143 on SIGTERM, prints a thread dump on SIGQUIT. The third SIGTERM, \
SIGINT or SIGHUP stops the partition without waiting for the program."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Boot a partition and run it until it exits.
    Run(Box<RunArgs>),
    /// List the running partitions of this user: ID (the `astraea run`
    /// process ID), name and role (--name, --role: a deployment's member),
    /// uptime, partition
    /// memory (--mem), host memory held (RSS of the VMM process), cache
    /// policy and program.
    Ps,
    /// Act on the file cache of a running partition.
    #[command(subcommand)]
    Cache(CacheCommand),
    /// Write a snapshot of a running partition to FILE, for `astraea run
    /// --from FILE`; the program keeps running. The partition stops for
    /// it at a quiet moment: one whose program waits on a socket or the
    /// terminal at the gateway (a server with connections) is refused.
    ///
    /// Exit status: 0 when FILE holds the snapshot; 1 if the partition
    /// could not take it (the message says why); 3 if no partition has
    /// that ID (the running ones are listed).
    #[command(long_about = None)]
    Snapshot {
        /// The partition's ID, as `astraea ps` lists it (the process ID of
        /// its `astraea run`).
        #[arg(long, value_name = "ID")]
        partition: u32,
        /// Where the snapshot goes (written by the partition's VMM, then
        /// renamed into place).
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
    /// Run a deployment (a search front end and its shards: one partition
    /// per JVM) from a TOML file until SIGINT or SIGTERM, then stop it.
    #[command(long_about = DEPLOY_ABOUT)]
    Deploy(DeployArgs),
}

const DEPLOY_ABOUT: &str = "Run a deployment — one partition per JVM, e.g. a search front end and \
its shards — from a TOML file (docs/deploy.md; bench/search/deploy.toml is one), in the \
foreground until SIGINT (Ctrl-C) or SIGTERM.\n\n\
Members start in the file's order as soon as the members named in their `after` are \
ready (`ready` = http://HOST:PORT/PATH answering 200, tcp:HOST:PORT accepting, or \
log:TEXT in their output). A member that exits is restarted by its policy (`restart` = \
on-failure, always or never; at most 5 times in 120 s). On SIGINT/SIGTERM the members \
are stopped in reverse order with SIGTERM (a JVM's shutdown hooks run), then SIGKILL \
after `stop-timeout`. Each member's output goes to LOG_DIR/NAME.log; LOG_DIR/status \
holds the current table (`astraea ps` lists the partitions by name too). --host runs the \
same commands as host processes, for comparison.\n\n\
Exit status: 0 after a clean stop; 1 if the deployment could not come up (a member \
failed before all were ready; the message names it and its log); 2 for a bad file or \
option.";

#[derive(clap::Args)]
struct DeployArgs {
    /// The deployment file (TOML).
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// Run the members as host processes instead of partitions (the same
    /// commands, `java` from the file's jdk), to compare with.
    #[arg(long)]
    host: bool,
    /// Set ${NAME} in the file (repeatable; over [vars] and the environment).
    #[arg(long = "set", value_name = "NAME=VALUE")]
    sets: Vec<String>,
    /// Log level of each partition (astraea run --log).
    #[arg(long, default_value = "warn", value_name = "LEVEL",
          value_parser = ["error", "warn", "info", "debug", "trace"])]
    log: String,
    /// Only check the file and print what would run.
    #[arg(long)]
    check: bool,
}

#[derive(Subcommand)]
enum CacheCommand {
    /// Write the file cache of a running partition to FILE, for
    /// `astraea run --cache-image FILE`; the program keeps running.
    ///
    /// Exit status: 0 when FILE holds the image; 1 if the partition could
    /// not dump (the message says why); 3 if no partition has that ID (the
    /// running ones are listed).
    #[command(long_about = None)]
    Dump {
        /// The partition's ID, as `astraea ps` lists it (the process ID of
        /// its `astraea run`).
        #[arg(long, value_name = "ID")]
        partition: u32,
        /// Where the image goes (created or truncated, by the partition's
        /// VMM).
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
}

#[derive(clap::Args)]
struct RunArgs {
    /// Kernel image to boot (default: $ASTRAEA_KERNEL, else the astraea-kernel
    /// built next to this binary).
    #[arg(long, value_name = "ELF")]
    kernel: Option<PathBuf>,
    /// Partition memory, with an optional K, M, G or T suffix.
    #[arg(long, default_value = "512M", value_name = "SIZE")]
    mem: String,
    /// Number of vCPUs.
    #[arg(long, default_value_t = 1, value_name = "N")]
    cpus: u32,
    /// Log level for the VMM and the partition's kernel: error, warn, info, debug or trace.
    #[arg(long, default_value = "warn", value_name = "LEVEL",
          value_parser = ["error", "warn", "info", "debug", "trace"])]
    log: String,
    /// Export a host directory into the partition: HOST[:GUEST][:ro|:rw]
    /// (repeatable), optionally followed by `:nocache` (a read-only mount
    /// whose files are read from the host every time) or `:cache` (the
    /// default for read-only mounts; read-write ones are never cached).
    /// Without any, the partition sees the host's `/` read-only, and `/tmp`
    /// and the current directory read-write at their own paths.
    #[arg(long = "mount", value_name = "HOST[:GUEST][:ro][:nocache]")]
    mounts: Vec<String>,
    /// Give the partition no files at all (no 9P device).
    #[arg(long, conflicts_with_all = ["mounts", "ninep", "gateway"])]
    no_files: bool,
    /// Serve the partition's files from a 9P2000.L server over TCP instead of
    /// the built-in gateway, e.g. `--9p tcp:127.0.0.1:564` for diod.
    #[arg(long = "9p", value_name = "tcp:HOST:PORT")]
    ninep: Option<String>,
    /// The attach name (`aname`) the partition sends to the 9P server; diod,
    /// for one, wants the exported directory here.
    #[arg(long = "9p-aname", value_name = "PATH", requires = "ninep")]
    ninep_aname: Option<String>,
    /// Serve the partition's files from a separate gateway process over
    /// vhost-user: `--gateway vhost-user:SOCK`, with `astraea-gateway
    /// --vhost-user SOCK --export …` running. The guest's 9P requests then go
    /// to the gateway through shared memory, never through this process.
    #[arg(long, value_name = "vhost-user:SOCK", conflicts_with_all = ["mounts", "ninep"])]
    gateway: Option<String>,
    /// With --gateway: how the file cache treats a path the gateway exports
    /// (repeatable): `GUEST=ro` caches its files (say it only of a read-only
    /// export), `GUEST=none` never does; the longest matching path wins and
    /// paths not named are not cached. The built-in gateway's read-only
    /// mounts are cached without it.
    #[arg(
        long = "cache-path",
        value_name = "GUEST=ro|none",
        requires = "gateway"
    )]
    cache_paths: Vec<String>,
    /// The program's working directory in the partition (default: the
    /// current directory, unless --mount or --9p is given: then `/`).
    #[arg(long, value_name = "DIR")]
    cwd: Option<String>,
    /// A name for the partition (a deployment's member, e.g. shard-0),
    /// shown by `astraea ps`.
    #[arg(long, value_name = "NAME")]
    name: Option<String>,
    /// The partition's role in a deployment (e.g. shard), shown by `astraea
    /// ps`.
    #[arg(long, value_name = "ROLE")]
    role: Option<String>,
    /// Print every system call of the program, with its arguments and
    /// result, to stderr.
    #[arg(long)]
    strace: bool,
    /// Sample where the partition's CPU time goes (every millisecond: the
    /// program's code by mapping, the library OS, idle) and print the
    /// profile to stderr at exit.
    #[arg(long)]
    profile: bool,
    /// The library OS's file cache for read-only mounts (the JDK, the
    /// host's root by default): `ro` (default; a quarter of --mem),
    /// `ro:SIZE` (e.g. ro:256M) or `none`. Read-write mounts are never
    /// cached; a cached file is assumed not to change on the host while the
    /// partition runs.
    #[arg(long, value_name = "none|ro[:SIZE]")]
    cache: Option<String>,
    /// When the program exits, write the file cache's contents (each
    /// file's identity and its cached blocks) to FILE, for --cache-image.
    #[arg(long, value_name = "FILE")]
    cache_dump: Option<PathBuf>,
    /// Start with the file cache loaded from FILE (made by --cache-dump):
    /// files unchanged on the host since the dump start warm; changed ones
    /// are skipped with a warning. The image goes at the top of --mem.
    #[arg(long, value_name = "FILE")]
    cache_image: Option<PathBuf>,
    /// The network the program's sockets reach, through the built-in
    /// gateway's /net: `host` (default: the host's network, as a host
    /// process sees it; a server listening on 8080 in the partition is
    /// localhost:8080 on the host), `none` (every connect, listen and
    /// datagram is refused with EACCES and logged), or `allow=ADDR/PREFIX[:PORTS]`
    /// (repeatable: only there, e.g. allow=127.0.0.1/32:8080,
    /// allow=0.0.0.0/0:1024-65535). The gateway enforces it.
    #[arg(long = "net", value_name = "host|none|allow=RULE")]
    net: Vec<String>,
    /// Publish the partition's TCP port GUEST at host port HOST
    /// (repeatable; HOST 0: any free port, said on stderr once bound): the
    /// program binds and sees GUEST, the host's clients connect to HOST, as
    /// with a container's published port. A clone of a server (`--from` a
    /// snapshot of it, while it still listens) needs one to listen at all.
    #[arg(long, value_name = "GUEST=HOST", value_parser = parse_publish)]
    publish: Vec<(u16, u16)>,
    /// The socket streaming layer: `on` (default) keeps a read posted per
    /// connection so arriving data is in the partition before the program
    /// asks; `off` posts a read only when the program waits for data.
    #[arg(long, value_name = "on|off", default_value = "on",
          value_parser = ["on", "off"])]
    net_stream: String,
    /// How the program's system calls enter the library OS. `direct` (PVM
    /// hosts only): each `syscall` site of the program's libraries is
    /// rewritten on its first trap to jump into the library OS, and calls
    /// that need no wait (identity calls, cached reads, futex wakes) are
    /// served without trapping into the host; elsewhere it falls back to
    /// `trap` with a warning. `trap`: every `syscall` instruction traps into
    /// the host, which re-enters the library OS. `auto` (the default):
    /// `direct` on PVM hosts, `trap` elsewhere. `--log info` shows the
    /// choice; see docs/syscall-entry.md.
    #[arg(long, value_name = "auto|trap|direct", default_value = "auto",
          value_parser = ["auto", "trap", "direct"], env = "ASTRAEA_SYSCALL_ENTRY")]
    syscall_entry: String,
    /// Print the boot phase timings to stderr when the partition exits.
    #[arg(long)]
    timings: bool,
    /// Guest memory the host allocates ahead of the program: a background
    /// thread populates the first SIZE of the partition's RAM while it
    /// boots, so the program's first touches of those pages (and the
    /// gateway's first writes into them) do not each wait for the host to
    /// allocate a page. `auto` (the default): 64M for a JVM, which touches
    /// about that much to start, and none for other programs; `0`: none.
    /// Those pages count in the partition's host memory from the start.
    #[arg(long, value_name = "SIZE|auto", default_value = "auto")]
    prefault: String,
    /// The JDK whose `java` runs: DIR/bin/java, where DIR is the JDK's top
    /// directory (e.g. /usr/lib/jvm/java-17-openjdk-amd64). Without it, a
    /// bare `java` program is looked up in $JAVA_HOME, then on PATH, with
    /// symlinks resolved so the JVM finds its own libraries. With --jdk the
    /// program may be left out (`-- -version`) or be any tool in DIR/bin.
    /// The JDK must be visible in the partition (it is with the default files).
    #[arg(long, value_name = "DIR")]
    jdk: Option<PathBuf>,
    /// Where a snapshot of the whole partition goes when the program asks
    /// for one (by reading `/dev/astraea-snapshot`, which answers `taken`,
    /// and `restored` in a partition started from it). The program goes
    /// on running. See docs/snapshot.md.
    #[arg(long, value_name = "FILE")]
    snapshot: Option<PathBuf>,
    /// Start from a snapshot (made with --snapshot) instead of booting:
    /// the partition is configured as the one it was taken of (its
    /// options, mounts and program; --log, --timings, --strace and
    /// --snapshot are this command's, and --publish if given), its memory
    /// is mapped from FILE copy-on-write, and its program goes on from
    /// where the snapshot was taken. Open files that changed on the host
    /// since are reported and not used. The first restore records the
    /// pages it wrote in FILE.ws (if it can write there); later restores
    /// copy those ahead of the program.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["args", "mounts", "gateway", "ninep", "no_files"])]
    from: Option<PathBuf>,
    /// Start the JVM from a snapshot of one that has already started: the
    /// first run of a `java [options] -cp CLASSPATH MainClass [args]`
    /// command records the classes its JVM loads, the second snapshots its
    /// partition with them loaded, just before MainClass runs (kept under
    /// ~/.cache/astraea/warm, the 8 most recently used), and later runs of
    /// the same command — the same JDK, options, class path, partition
    /// options, directory and environment; any main class and arguments —
    /// start from there. Needs the default files (no --mount) and, the
    /// first time, the JDK's javac.
    #[arg(long, conflicts_with_all = ["from", "snapshot", "mounts", "gateway", "ninep", "no_files"])]
    warm: bool,
    /// The program and its arguments: `java [JVM options] (-cp PATH Main |
    /// -jar app.jar) [args]`, or any Linux x86-64 program. A bare name is
    /// looked up on PATH as a shell does (`java` as --jdk describes).
    #[arg(last = true, value_name = "PROGRAM ARGS")]
    args: Vec<String>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Run(args) => run(*args),
        Command::Ps => ps(),
        Command::Cache(CacheCommand::Dump { partition, file }) => ask_partition(
            partition,
            "dump",
            &file,
            astraea_hypervisor::control::DUMP_TIMEOUT,
            "did not dump its cache",
            |bytes| format!("dumped {} KiB", bytes / 1024),
        ),
        Command::Snapshot { partition, file } => ask_partition(
            partition,
            "snapshot",
            &file,
            astraea_hypervisor::control::SNAPSHOT_TIMEOUT,
            "did not take a snapshot",
            |bytes| format!("snapshot with {} MiB of memory written", bytes >> 20),
        ),
        Command::Deploy(args) => deploy(args),
    }
}

/// `astraea deploy FILE`.
fn deploy(args: DeployArgs) -> ExitCode {
    use astraea_hypervisor::deploy;
    use std::sync::atomic::{AtomicUsize, Ordering};
    static STOP: AtomicUsize = AtomicUsize::new(0);
    let mut sets = Vec::new();
    for s in &args.sets {
        match s.split_once('=') {
            Some((k, v)) if !k.is_empty() => sets.push((k.to_string(), v.to_string())),
            _ => {
                eprintln!("astraea deploy: --set {s:?}: write NAME=VALUE");
                return ExitCode::from(2);
            }
        }
    }
    let spec = match deploy::Spec::load(&args.file, &sets) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("astraea deploy: {e}");
            return ExitCode::from(2);
        }
    };
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("astraea"));
    let opts = deploy::Options {
        place: if args.host {
            deploy::Place::Host
        } else {
            deploy::Place::Partitions
        },
        gateway: exe.with_file_name("astraea-gateway"),
        astraea: exe,
        log: args.log.clone(),
    };
    if args.check {
        for m in &spec.members {
            println!("{}\t{}\t{}", m.name, m.role, m.command.join(" "));
        }
        return ExitCode::SUCCESS;
    }
    if let Err(e) = astraea_hypervisor::host_signals::install_with(|sig| {
        if STOP.fetch_add(1, Ordering::SeqCst) == 1 {
            eprintln!("astraea deploy: signal {sig} again: killing the members without waiting");
        }
    }) {
        eprintln!(
            "astraea deploy: cannot take SIGINT/SIGTERM ({e}); they will not stop the members"
        );
    }
    match deploy::run(&spec, &opts, &STOP) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("astraea deploy: {e}");
            ExitCode::from(1)
        }
    }
}

/// `astraea ps`.
fn ps() -> ExitCode {
    let all = astraea_hypervisor::control::list();
    println!(
        "{:>8}  {:<12}  {:<10}  {:>8}  {:>7}  {:>7}  {:<14}  COMMAND",
        "ID", "NAME", "ROLE", "UPTIME", "MEM", "RSS", "CACHE"
    );
    for p in all {
        println!(
            "{:>8}  {:<12}  {:<10}  {:>7}s  {:>6}M  {:>6}M  {:<14}  {}",
            p.id,
            p.name,
            p.role,
            p.uptime_secs,
            p.mem >> 20,
            p.rss >> 20,
            p.cache,
            p.command
        );
    }
    ExitCode::SUCCESS
}

/// `astraea cache dump --partition ID FILE` (`verb` = `dump`) and
/// `astraea snapshot --partition ID FILE` (`snapshot`): asks partition
/// `id` to write FILE and says how that went.
fn ask_partition(
    id: u32,
    verb: &str,
    file: &std::path::Path,
    timeout: std::time::Duration,
    failed: &str,
    done: impl Fn(u64) -> String,
) -> ExitCode {
    use astraea_hypervisor::control;
    let file = match std::path::absolute(file) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("astraea: cannot use {}: {e}", file.display());
            return ExitCode::from(1);
        }
    };
    let socket = control::socket_path(id);
    let line = format!("{verb} {}", file.display());
    match control::ask(id, &line, timeout + std::time::Duration::from_secs(10)) {
        Ok(a) => match a.split_once(' ') {
            Some(("ok", bytes)) => {
                println!(
                    "{} to {}",
                    done(bytes.parse::<u64>().unwrap_or(0)),
                    file.display()
                );
                ExitCode::SUCCESS
            }
            Some(("err", why)) => {
                eprintln!("astraea: partition {id} {failed}: {why}");
                ExitCode::from(1)
            }
            _ => {
                eprintln!(
                    "astraea: partition {id} answered {a:?}, which this astraea does not understand (is it another version?)"
                );
                ExitCode::from(1)
            }
        },
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused
            ) =>
        {
            let running = control::list();
            let list = if running.is_empty() {
                "no partition of this user is running".to_string()
            } else {
                format!(
                    "running partitions: {}",
                    running
                        .iter()
                        .map(|p| format!("{} ({})", p.id, p.command))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            eprintln!(
                "astraea: no running partition has ID {id} (no control socket {}); {list}; `astraea ps` lists them",
                socket.display()
            );
            ExitCode::from(3)
        }
        Err(e) => {
            eprintln!(
                "astraea: cannot reach partition {id} at {}: {e}",
                socket.display()
            );
            ExitCode::from(1)
        }
    }
}

fn run(args: RunArgs) -> ExitCode {
    let t0 = Instant::now();
    // Before any thread starts: SIGTERM, SIGINT, SIGHUP and SIGQUIT are the
    // program's (host_signals.rs).
    if let Err(e) = astraea_hypervisor::host_signals::install() {
        eprintln!("astraea: cannot forward signals to the partition ({e}); they stop it at once");
    }
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        // hermit-entry warns about every non-Hermit kernel; that is expected here.
        .with_env_filter(tracing_subscriber::EnvFilter::new(format!(
            "{},hermit_entry=error",
            args.log
        )))
        .with_target(false)
        .init();
    astraea_hypervisor::partition::raise_descriptor_limit();
    let (args, restore) = match restoring(args) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("astraea: {e}");
            return ExitCode::from(e.exit_code());
        }
    };
    let args = match resolve_program(args) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("astraea: {e}");
            return ExitCode::from(e.exit_code());
        }
    };
    if let Err(e) = check_java(&args) {
        eprintln!("astraea: {e}");
        return ExitCode::from(e.exit_code());
    }
    let (args, restore) = if args.warm {
        match warming(args) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("astraea: {e}");
                return ExitCode::from(125);
            }
        }
    } else {
        (args, restore)
    };
    match run_partition(&args, restore) {
        Ok(outcome) => {
            if args.timings {
                let t = outcome.timings;
                let us = |d: std::time::Duration| d.as_micros();
                let opt = |d: Option<std::time::Duration>| d.map_or(-1, |d| d.as_micros() as i64);
                eprintln!(
                    "astraea: timings vm_create_us={} load_us={} kernel_entry_us={} kernel_ready_us={} exit_us={} total_us={} exits={}",
                    us(t.vm_created),
                    us(t.loaded),
                    opt(t.kernel_entry),
                    opt(t.kernel_ready),
                    us(t.exited),
                    us(t0.elapsed()),
                    outcome.exits
                );
            }
            ExitCode::from((outcome.exit_code & 0xff) as u8)
        }
        Err(e) => {
            eprintln!("astraea: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

/// The snapshot a partition starts from, if it does not boot.
type Restore = Option<Arc<astraea_hypervisor::snapshot::Image>>;

/// With `--from FILE`: the snapshot, and the options it was taken with
/// (the relative paths among them resolve where they were given). Without:
/// `args` as they are.
fn restoring(args: RunArgs) -> Result<(RunArgs, Restore), VmmError> {
    let Some(from) = &args.from else {
        return Ok((args, None));
    };
    let img = astraea_hypervisor::snapshot::Image::open(from)?;
    let bad = |reason: String| VmmError::Snapshot {
        path: from.clone(),
        reason,
    };
    let argv = ["astraea", "run"]
        .into_iter()
        .map(String::from)
        .chain(img.meta.recipe.iter().cloned());
    let mut old = match Cli::try_parse_from(argv) {
        Ok(Cli {
            command: Command::Run(a),
        }) => *a,
        Ok(_) => return Err(bad("its recipe is not an `astraea run`".into())),
        Err(e) => return Err(bad(format!("its recipe is not understood: {e}"))),
    };
    if old.warm {
        return Err(bad(
            "it was made by `astraea run --warm`: run that command again, with --warm".into(),
        ));
    }
    // Paths given now are from here; the recipe's from where it was given.
    let snapshot = args
        .snapshot
        .as_ref()
        .map(std::path::absolute)
        .transpose()
        .map_err(|e| bad(e.to_string()))?;
    std::env::set_current_dir(&img.meta.cwd).map_err(|e| {
        bad(format!(
            "it was taken in {}, which cannot be entered now: {e}",
            img.meta.cwd.display()
        ))
    })?;
    old.log = args.log;
    old.timings = args.timings;
    old.strace = args.strace;
    old.snapshot = snapshot;
    if !args.publish.is_empty() {
        old.publish = args.publish;
    }
    old.from = None;
    Ok((old, Some(Arc::new(img))))
}

/// `--warm`: the launcher put in front of the main class, and the snapshot
/// of this command to start from, or (the first time) to take.
fn warming(mut args: RunArgs) -> Result<(RunArgs, Restore), Box<dyn std::error::Error>> {
    use astraea_hypervisor::warm;
    let cmd = warm::JavaCommand::parse(&args.args)?;
    let kernel = match &args.kernel {
        Some(k) => k.clone(),
        None => find_kernel()?,
    };
    // The partition's options that shape it, and the command without its
    // main class and arguments (the log level, --strace and --timings do
    // not count: a restored partition takes this command's).
    let mut words = Vec::new();
    let mut it = words_before_dashes(recipe().0).into_iter();
    while let Some(w) = it.next() {
        match w.as_str() {
            "--log" => {
                it.next();
            }
            "--timings" | "--warm" | "--strace" => {}
            _ if w.starts_with("--log=") => {}
            _ => words.push(w),
        }
    }
    words.extend(cmd.key_words());
    // A JVM takes in its resource limits at start (HotSpot sizes its
    // descriptor use by RLIMIT_NOFILE): one snapshotted under other limits
    // would keep them.
    words.push(format!(
        "rlimits={}",
        astraea_hypervisor::partition::host_rlimits()
    ));
    let path = warm::snapshot_path(&words, &kernel);
    let launcher = warm::launcher(std::path::Path::new(&cmd.head[0]))?;
    let mut phase = warm::phase(&path);
    if let warm::Phase::Restore(snap) = &phase {
        match astraea_hypervisor::snapshot::Image::open(snap) {
            Ok(img) => {
                tracing::info!(snapshot = %snap.display(), "--warm: starting from the snapshot");
                warm::touch(snap);
                args.args = cmd.with_launcher(&launcher, &[]);
                return Ok((args, Some(Arc::new(img))));
            }
            Err(e) => {
                tracing::warn!("--warm: {e}; running as a first run again");
                let _ = std::fs::remove_file(snap);
                let _ = std::fs::remove_file(astraea_hypervisor::working_set::path(snap));
                phase = warm::Phase::Record(warm::classes_path(&path));
            }
        }
    }
    match phase {
        // Restore went above.
        warm::Phase::Restore(_) => {}
        warm::Phase::Record(classes) => {
            let dir = classes.parent().unwrap_or(std::path::Path::new("/tmp"));
            std::fs::create_dir_all(dir).map_err(|e| warm::WarmError::Cache(dir.into(), e))?;
            tracing::info!(classes = %classes.display(), "--warm: first run of this command; recording the classes it loads");
            args.args = cmd.with_launcher(
                &launcher,
                &[
                    format!("-XX:DumpLoadedClassList={}", classes.display()),
                    // The launcher does not ask for a snapshot this time.
                    "-Dastraea.warm.record=true".to_string(),
                ],
            );
        }
        warm::Phase::Snapshot { classes, snapshot } => {
            let dir = warm::cache_dir();
            std::fs::create_dir_all(&dir).map_err(|e| warm::WarmError::Cache(dir.clone(), e))?;
            warm::prune(1);
            tracing::info!(snapshot = %snapshot.display(), "--warm: second run of this command; taking its snapshot with the classes the first loaded");
            args.args = cmd.with_launcher(
                &launcher,
                &[format!("-Dastraea.warm.preload={}", classes.display())],
            );
            args.snapshot = Some(snapshot);
        }
    }
    Ok((args, None))
}

/// The words before `--` (the options, not the program).
fn words_before_dashes(words: Vec<String>) -> Vec<String> {
    words.into_iter().take_while(|w| w != "--").collect()
}

/// The `astraea run` arguments of this process (what a snapshot keeps), and
/// its directory.
fn recipe() -> (Vec<String>, PathBuf) {
    let mut argv = std::env::args().skip(1);
    let words = match argv.next().as_deref() {
        Some("run") => argv.collect(),
        _ => Vec::new(),
    };
    (
        words,
        std::env::current_dir().unwrap_or_else(|_| "/".into()),
    )
}

fn run_partition(
    args: &RunArgs,
    restore: Restore,
) -> Result<astraea_hypervisor::Outcome, VmmError> {
    let mem = parse_mem_size(&args.mem)?;
    // The default namespace's /tmp is the host's; its hsperfdata directory
    // is the partition's own, kept until the partition ends.
    let perf = if args.mounts.is_empty()
        && args.gateway.is_none()
        && args.ninep.is_none()
        && !args.no_files
    {
        astraea_hypervisor::mounts::PrivatePerfData::new()?
    } else {
        None
    };
    let kernel = match &args.kernel {
        Some(k) => k.clone(),
        None => find_kernel()?,
    };
    let ninep = match args.ninep.as_deref() {
        None if args.gateway.is_some() => {
            let spec = args.gateway.as_deref().unwrap_or_default();
            match astraea_hypervisor::devices::vhost_user::parse_gateway(spec) {
                Some(socket) => NinePTarget::VhostUser(socket),
                None => {
                    return Err(VmmError::Boot(format!(
                        "--gateway {spec:?} is not understood: write vhost-user:SOCK"
                    )));
                }
            }
        }
        None if args.no_files => NinePTarget::None,
        None => NinePTarget::Gateway(gateway_config(
            &args.mounts,
            &args.net,
            &args.publish,
            perf.as_ref(),
        )?),
        Some(t) => match t.strip_prefix("tcp:") {
            Some(addr) if !addr.is_empty() => NinePTarget::Tcp(addr.to_string()),
            _ => {
                return Err(VmmError::Boot(format!(
                    "--9p {t:?} is not understood: write tcp:HOST:PORT"
                )));
            }
        },
    };
    astraea_hypervisor::run(&PartitionConfig {
        kernel,
        mem,
        cpus: args.cpus,
        log: args.log.clone(),
        args: args.args.clone(),
        ninep,
        ninep_aname: args.ninep_aname.clone().unwrap_or_default(),
        // With the default exports the current directory is at its own path.
        cwd: args.cwd.clone().or_else(|| {
            (args.mounts.is_empty() && args.ninep.is_none())
                .then(|| std::env::current_dir().ok())
                .flatten()
                .map(|d| d.to_string_lossy().into_owned())
        }),
        strace: args.strace,
        profile: args.profile,
        cache: args.cache.clone(),
        cache_mounts: {
            let mut m = mount_cache_choices(&args.mounts)?;
            for spec in &args.cache_paths {
                match spec.rsplit_once('=') {
                    Some((g, p @ ("ro" | "none"))) if g.starts_with('/') => {
                        m.push((g.to_string(), p == "ro"));
                    }
                    _ => {
                        return Err(VmmError::Boot(format!(
                            "--cache-path {spec:?} is not understood: write GUEST=ro or GUEST=none (GUEST absolute)"
                        )));
                    }
                }
            }
            m
        },
        name: args.name.clone(),
        role: args.role.clone(),
        cache_dump: args.cache_dump.clone(),
        cache_image: args.cache_image.clone(),
        net_stream: args.net_stream == "on",
        syscall_entry: match args.syscall_entry.as_str() {
            "trap" => SyscallEntry::Trap,
            "direct" => SyscallEntry::Direct,
            _ => SyscallEntry::Auto,
        },
        control: true,
        // `astraea run` exits when the partition has.
        exit_after: true,
        prefault: prefault_bytes(args)?,
        snapshot: args
            .snapshot
            .as_ref()
            .map(std::path::absolute)
            .transpose()
            .map_err(|e| VmmError::Boot(format!("--snapshot: {e}")))?,
        recipe: match &restore {
            Some(img) => (img.meta.recipe.clone(), img.meta.cwd.clone()),
            None => recipe(),
        },
        restore,
    })
}

/// What a JVM touches to start (`java -version` in a partition: ≈ 60 MB);
/// allocating more ahead of it did not start it sooner.
const JVM_PREFAULT: u64 = 64 << 20;

/// `--prefault`: `auto` is [`JVM_PREFAULT`] for a JVM, else none.
fn prefault_bytes(args: &RunArgs) -> Result<u64, VmmError> {
    match args.prefault.as_str() {
        "auto" => Ok(args
            .args
            .first()
            .filter(|p| jvm_opts::is_java(p))
            .map_or(0, |_| JVM_PREFAULT)),
        "0" => Ok(0),
        size => parse_mem_size(size).map_err(|_| VmmError::InvalidPrefault {
            value: size.to_string(),
        }),
    }
}

/// Replaces a bare program name (`java`, `ls`) with the path the partition
/// runs, as a shell would find it (see `astraea_hypervisor::jdk`). This
/// applies to the program kernel (the default one, or any image named
/// `astraea-kernel`) reading the host's files through the built-in gateway;
/// other kernels take arguments that are not programs, and another 9P server
/// has another namespace. `--jdk` applies whenever it is given.
fn resolve_program(mut args: RunArgs) -> Result<RunArgs, jdk::JdkError> {
    let program_kernel = args
        .kernel
        .as_ref()
        .is_none_or(|k| k.file_name().is_some_and(|n| n == "astraea-kernel"));
    let host_files = args.ninep.is_none() && args.gateway.is_none() && !args.no_files;
    if args.jdk.is_none() && !(program_kernel && host_files) {
        return Ok(args);
    }
    let env = jdk::Environment::from_process(args.jdk.clone());
    let resolved = jdk::resolve_program(&args.args, &env)?;
    for w in &resolved.warnings {
        eprintln!("astraea: warning: {w}");
    }
    if let Some(found) = &resolved.jdk {
        tracing::info!(
            "JDK {} (from {:?}): {}",
            found.home.display(),
            found.source,
            found.java.display()
        );
    }
    args.args = resolved.args;
    Ok(args)
}

/// When the program is a JVM (`…/java`), checks its options before any
/// partition is made (see `astraea_hypervisor::jvm_opts`): a heap that does
/// not fit `--mem` and options that need the host are refused, others that
/// cannot do their job in a partition are warned about. The environment's
/// `JAVA_TOOL_OPTIONS` and `JDK_JAVA_OPTIONS` count when the partition gets
/// this process's environment (the built-in gateway's default).
fn check_java(args: &RunArgs) -> Result<(), jvm_opts::JvmOptionError> {
    let Some((program, java_args)) = args.args.split_first() else {
        return Ok(());
    };
    if !jvm_opts::is_java(program) {
        return Ok(());
    }
    // A bad --mem is reported when the partition is made.
    let Ok(mem) = parse_mem_size(&args.mem) else {
        return Ok(());
    };
    let env_reaches_partition = args.ninep.is_none() && args.gateway.is_none() && !args.no_files;
    let env = |var: &str| {
        env_reaches_partition
            .then(|| std::env::var(var).ok())
            .flatten()
    };
    for w in jvm_opts::check(java_args, mem, env)? {
        eprintln!("astraea: warning: {w}");
    }
    Ok(())
}

/// The built-in gateway's exports from `--mount` options (or the defaults),
/// and this process's environment as the partition's `/env`.
fn gateway_config(
    mounts: &[String],
    net: &[String],
    publish: &[(u16, u16)],
    perf: Option<&astraea_hypervisor::mounts::PrivatePerfData>,
) -> Result<astraea_gateway::GatewayConfig, VmmError> {
    let mut policy = net_policy(net)?;
    if !publish.is_empty() {
        policy = Arc::new(astraea_gateway::Published::new(policy, publish.to_vec()));
    }
    let mut exports: Vec<astraea_gateway::Export> =
        astraea_hypervisor::mounts::exports(mounts, true)?
            .into_iter()
            .map(|(e, _)| e)
            .collect();
    exports.extend(perf.map(|p| p.export()));
    Ok(astraea_gateway::GatewayConfig {
        exports,
        env: std::env::vars().collect(),
        net: true,
        net_policy: policy,
        ..Default::default()
    })
}

/// `--publish GUEST=HOST`.
fn parse_publish(s: &str) -> Result<(u16, u16), String> {
    let bad = || {
        format!("{s:?}: expected GUEST=HOST, two TCP ports (HOST 0: any free port), e.g. 8080=9080")
    };
    let (g, h) = s.split_once('=').ok_or_else(bad)?;
    let g: u16 = g.trim().parse().map_err(|_| bad())?;
    let h: u16 = h.trim().parse().map_err(|_| bad())?;
    if g == 0 {
        return Err(format!("{s:?}: the partition's port must not be 0"));
    }
    Ok((g, h))
}

/// The gateway's `/net` policy from `--net` options: `host` (or nothing)
/// allows everything, `none` nothing, `allow=RULE`s only where they say.
fn net_policy(net: &[String]) -> Result<Arc<dyn astraea_gateway::NetPolicy>, VmmError> {
    let bad = |what: &str| {
        VmmError::Boot(format!(
            "--net {what}: expected host, none or allow=ADDR/PREFIX[:PORTS] (e.g. allow=127.0.0.1/32:8080)"
        ))
    };
    let mut rules = Vec::new();
    let mut mode = None;
    for n in net {
        match n.as_str() {
            "host" | "none" => {
                if mode.is_some_and(|m| m != n.as_str()) || !rules.is_empty() {
                    return Err(bad(&format!("{n:?} conflicts with another --net")));
                }
                mode = Some(if n == "host" { "host" } else { "none" });
            }
            other => {
                let rule = other
                    .strip_prefix("allow=")
                    .ok_or_else(|| bad(&format!("{other:?}")))?;
                if mode.is_some() {
                    return Err(bad(&format!(
                        "{other:?} conflicts with --net {}",
                        mode.unwrap_or("")
                    )));
                }
                rules.push(
                    rule.parse::<astraea_gateway::NetRule>()
                        .map_err(|e| bad(&format!("allow={e}")))?,
                );
            }
        }
    }
    Ok(match mode {
        Some("none") => Arc::new(astraea_gateway::AllowList::new(Vec::new())),
        _ if !rules.is_empty() => Arc::new(astraea_gateway::AllowList::new(rules)),
        _ => Arc::new(astraea_gateway::AllowAll),
    })
}

/// Which `--mount`s choose their file-cache policy: (guest path, cached).
fn mount_cache_choices(mounts: &[String]) -> Result<Vec<(String, bool)>, VmmError> {
    let mut out = Vec::new();
    for m in mounts {
        let (e, cache) = astraea_hypervisor::mounts::parse_mount(m)?;
        if let Some(c) = cache {
            out.push((e.guest, c));
        }
    }
    Ok(out)
}

/// The default kernel: `$ASTRAEA_KERNEL`, else `astraea-kernel` beside this
/// binary, else the one cargo builds for the kernel target in the same tree.
fn find_kernel() -> Result<PathBuf, VmmError> {
    let mut candidates = Vec::new();
    if let Some(k) = std::env::var_os("ASTRAEA_KERNEL") {
        candidates.push(PathBuf::from(k));
    }
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(PathBuf::from))
    {
        candidates.push(dir.join("astraea-kernel"));
        // target/<profile>/astraea → target/x86_64-unknown-none/<profile>/astraea-kernel
        if let (Some(profile), Some(target)) = (dir.file_name(), dir.parent()) {
            candidates.push(
                target
                    .join("x86_64-unknown-none")
                    .join(profile)
                    .join("astraea-kernel"),
            );
            candidates.push(
                target
                    .join("x86_64-unknown-none")
                    .join("release")
                    .join("astraea-kernel"),
            );
        }
    }
    candidates.push(PathBuf::from("/usr/local/lib/astraea/astraea-kernel"));
    if let Some(found) = candidates.iter().find(|p| p.is_file()) {
        return Ok(found.clone());
    }
    Err(VmmError::KernelNotFound {
        looked: candidates
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
    })
}
