//! `astraea-gateway`: serve host directories, `/dev/cons`, `/env` and, if
//! asked, `/net/tcp` and `/net/udp` over 9P2000.L on a TCP or unix-domain socket.

use std::net::TcpListener;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use astraea_gateway::{
    AllowAll, AllowList, Export, Gateway, GatewayConfig, NetPolicy, NetRule, VhostUserServer,
    serve_stream,
};
use clap::Parser;

const AFTER_HELP: &str = "\
EXAMPLES:
  astraea-gateway --listen tcp:127.0.0.1:5640
      Export the current directory read-write at / on a loopback port.
  astraea-gateway --listen unix:/tmp/gw.sock --export /srv/data:/data:ro --export $HOME:/home
      Export /srv/data read-only at /data and your home read-write at /home.
  diodls -s 127.0.0.1:5640 -a / /      (list the root with diod's client)
  astraea-gateway --vhost-user /tmp/astraea-9p.sock --export $PWD:/
  astraea run --gateway vhost-user:/tmp/astraea-9p.sock -- ARGS
      Serve a partition's 9P device from this process over vhost-user: the
      guest's requests reach the gateway through shared memory and eventfds,
      without passing through the VMM. One VMM per run, or with
      --keep-listening every partition of a deployment at once.

SECURITY MODEL:
  The gateway runs with your user's rights and never changes them. Every path
  a client names is resolved beneath its export's root with
  openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS): `..`, absolute symlinks and
  symlinks leading out of an export are refused (EXDEV/ENOENT), so nothing
  outside the exported directories can be read or changed. A read-only export
  refuses every change with EROFS. There is no authentication: anyone who can
  connect to the socket gets these rights, so listen on loopback or on a unix
  socket with suitable permissions. With --net, clients also open TCP
  connections and UDP sockets from this host and listen on its ports, as a
  process of yours would (docs/net.md); --net-allow limits where, and the
  gateway checks every connect, listen and datagram against it.
  astraea-gateway --net-allow 127.0.0.1/32:8080 --net-allow 10.0.0.0/8:443
      Serve /net, allowing only localhost port 8080 and port 443 of 10/8.";

/// 9P2000.L file server for Astraea partitions.
#[derive(Debug, Parser)]
#[command(name = "astraea-gateway", version, about, after_help = AFTER_HELP)]
struct Args {
    /// Where to listen: `tcp:HOST:PORT` or `unix:PATH`.
    #[arg(long, value_name = "ADDR", default_value = "tcp:127.0.0.1:5640")]
    listen: String,
    /// Serve a partition's virtio-9p device as a vhost-user back end on this
    /// unix socket (`astraea run --gateway vhost-user:SOCK`) instead of
    /// listening for 9P streams. Serves one VMM and exits 0 when it
    /// disconnects, unless --keep-listening is given.
    #[arg(long, value_name = "SOCK", conflicts_with = "listen")]
    vhost_user: Option<PathBuf>,
    /// With --vhost-user: serve any number of VMMs, at the same time or one
    /// after another (each gets its own 9P session over the same exports),
    /// instead of exiting when the first disconnects.
    #[arg(long, requires = "vhost_user")]
    keep_listening: bool,
    /// With --vhost-user: the mount tag the device announces.
    #[arg(long, value_name = "TAG", requires = "vhost_user",
          default_value = astraea_gateway::VHOST_MOUNT_TAG)]
    tag: String,
    /// Export a host directory: `HOST[:GUEST][:ro]` (GUEST defaults to `/`,
    /// `:ro` makes it read-only). Repeatable. Default: the current directory,
    /// read-write, at `/`.
    #[arg(long, value_name = "HOST[:GUEST][:ro]")]
    export: Vec<String>,
    /// Serve NAME=VALUE as the file /env/NAME. Repeatable.
    #[arg(long, value_name = "NAME=VALUE")]
    env: Vec<String>,
    /// Serve the gateway's whole environment under /env.
    #[arg(long)]
    pass_env: bool,
    /// Do not serve /dev/cons (the gateway's stdin and stdout).
    #[arg(long)]
    no_console: bool,
    /// Serve /net/tcp and /net/udp (Plan 9-style connections, docs/net.md):
    /// clients may connect from this host and listen on its ports.
    #[arg(long)]
    net: bool,
    /// Allow /net only these addresses and ports, for connecting and for
    /// listening: `ADDR/PREFIX[:PORT|:LOW-HIGH]` (e.g. `127.0.0.1/32:8080`,
    /// `0.0.0.0/0:443`). Repeatable; implies --net. Without it --net allows
    /// everything.
    #[arg(long, value_name = "ADDR/PREFIX[:PORTS]")]
    net_allow: Vec<String>,
    /// Largest msize offered to clients, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = astraea_gateway::MAX_MSIZE)]
    max_msize: u32,
    /// Log level: error, warn, info, debug or trace (or a tracing filter).
    #[arg(long, value_name = "LEVEL", default_value = "info")]
    log: String,
}

/// Parses `HOST[:GUEST][:ro|:rw]`.
fn parse_export(spec: &str) -> Result<Export, String> {
    let mut parts: Vec<&str> = spec.split(':').collect();
    let mut read_only = false;
    if let Some(&last) = parts.last()
        && parts.len() > 1
        && (last == "ro" || last == "rw")
    {
        read_only = last == "ro";
        parts.pop();
    }
    let guest = if parts.len() > 1 && parts.last().is_some_and(|g| g.starts_with('/')) {
        parts.pop().unwrap_or("/").to_owned()
    } else {
        "/".to_owned()
    };
    let host = parts.join(":");
    if host.is_empty() {
        return Err(format!("--export {spec:?}: the host directory is empty"));
    }
    Ok(Export {
        host: PathBuf::from(host),
        guest,
        read_only,
    })
}

/// Where the daemon listens.
enum Listen {
    Tcp(String),
    Unix(String),
}

fn parse_listen(spec: &str) -> Result<Listen, String> {
    if let Some(addr) = spec.strip_prefix("tcp:") {
        Ok(Listen::Tcp(addr.to_owned()))
    } else if let Some(path) = spec.strip_prefix("unix:")
        && !path.is_empty()
    {
        Ok(Listen::Unix(path.to_owned()))
    } else {
        Err(format!(
            "--listen {spec:?}: expected tcp:HOST:PORT or unix:PATH"
        ))
    }
}

fn run(args: Args) -> Result<(), String> {
    let listen = match &args.vhost_user {
        Some(_) => None,
        None => Some(parse_listen(&args.listen)?),
    };
    let mut exports = args
        .export
        .iter()
        .map(|s| parse_export(s))
        .collect::<Result<Vec<_>, _>>()?;
    if exports.is_empty() {
        let cwd = std::env::current_dir().map_err(|e| format!("current directory: {e}"))?;
        exports.push(Export {
            host: cwd,
            guest: "/".into(),
            read_only: false,
        });
    }
    let mut env: Vec<(String, String)> = if args.pass_env {
        std::env::vars().collect()
    } else {
        Vec::new()
    };
    for kv in &args.env {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| format!("--env {kv:?}: expected NAME=VALUE"))?;
        env.push((k.to_owned(), v.to_owned()));
    }
    let gw = Gateway::new(GatewayConfig {
        exports,
        max_msize: args.max_msize,
        env,
        console: !args.no_console,
        net: args.net || !args.net_allow.is_empty(),
        net_policy: net_policy(&args.net_allow)?,
        ..GatewayConfig::default()
    })
    .map_err(|e| e.to_string())?;

    let Some(listen) = listen else {
        let sock = args.vhost_user.as_deref().unwrap_or(Path::new(""));
        return serve_vhost_user(&gw, sock, &args.tag, args.keep_listening);
    };
    match listen {
        Listen::Tcp(addr) => {
            let listener =
                TcpListener::bind(&addr).map_err(|e| format!("listen on {addr}: {e}"))?;
            let local = listener.local_addr().map_err(|e| e.to_string())?;
            tracing::info!("listening on tcp:{local}");
            for conn in listener.incoming() {
                match conn {
                    Ok(conn) => {
                        let peer = conn.peer_addr().map(|a| a.to_string()).unwrap_or_default();
                        spawn_session(&gw, conn, peer);
                    }
                    Err(e) => tracing::warn!("accept: {e}"),
                }
            }
        }
        Listen::Unix(path) => {
            // Replace a stale socket left by an earlier run, but nothing else.
            if let Ok(meta) = std::fs::symlink_metadata(&path)
                && meta.file_type().is_socket()
            {
                let _ = std::fs::remove_file(&path);
            }
            let listener =
                UnixListener::bind(&path).map_err(|e| format!("listen on {path}: {e}"))?;
            tracing::info!("listening on unix:{path}");
            for conn in listener.incoming() {
                match conn {
                    Ok(conn) => spawn_session(&gw, conn, path.clone()),
                    Err(e) => tracing::warn!("accept: {e}"),
                }
            }
        }
    }
    Ok(())
}

/// Serves the vhost-user socket: one VMM, or with `keep_listening` any
/// number of them at once (a deployment's partitions), each on its own thread
/// with its own 9P session over the one set of exports.
fn serve_vhost_user(
    gw: &Arc<Gateway>,
    sock: &Path,
    tag: &str,
    keep_listening: bool,
) -> Result<(), String> {
    let mut server = VhostUserServer::bind(gw, sock).map_err(|e| e.to_string())?;
    server.set_tag(tag).map_err(|e| e.to_string())?;
    tracing::info!("vhost-user 9P device on {}", sock.display());
    if !keep_listening {
        return server.serve_one().map_err(|e| e.to_string());
    }
    loop {
        match server.accept() {
            Ok(conn) => {
                let spawned = std::thread::Builder::new()
                    .name("vhost-user-vmm".into())
                    .spawn(move || {
                        // A VMM that misbehaves loses its connection, not the others'.
                        if let Err(e) = conn.serve() {
                            tracing::warn!("{e}");
                        }
                    });
                if let Err(e) = spawned {
                    tracing::warn!("cannot serve a VMM: {e}");
                }
            }
            Err(e) => {
                tracing::warn!("{e}");
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
        }
    }
}

fn spawn_session<S: astraea_gateway::Stream>(gw: &Arc<Gateway>, conn: S, peer: String) {
    let gw = Arc::clone(gw);
    let spawned = std::thread::Builder::new()
        .name("gateway-conn".into())
        .spawn(move || {
            tracing::info!(%peer, "connection opened");
            match serve_stream(&gw, conn) {
                Ok(()) => tracing::info!(%peer, "connection closed"),
                Err(e) => tracing::warn!(%peer, "connection closed: {e}"),
            }
        });
    if let Err(e) = spawned {
        tracing::warn!("cannot start a connection thread: {e}");
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    let filter = tracing_subscriber::EnvFilter::try_new(&args.log)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    if let Some((from, to)) = astraea_gateway::raise_descriptor_limit() {
        tracing::info!(
            from,
            to,
            "raised the descriptor limit to the hard one (a host descriptor per client file and socket)"
        );
    }
    // Each partition's library OS enforces its program's file size limit;
    // a write past this process's must fail, not end it (SIGXFSZ).
    if let Some(from) = astraea_gateway::tolerate_file_size_limit() {
        tracing::info!(from, "raised the file size limit to the hard one");
    }
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("astraea-gateway: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The `/net` policy of `--net-allow` rules (none: allow everything).
fn net_policy(rules: &[String]) -> Result<Arc<dyn NetPolicy>, String> {
    if rules.is_empty() {
        return Ok(Arc::new(AllowAll));
    }
    let rules = rules
        .iter()
        .map(|r| r.parse::<NetRule>().map_err(|e| format!("--net-allow {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Arc::new(AllowList::new(rules)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn net_allow_rules() {
        let p = net_policy(&["127.0.0.1/32:8080".into()]).unwrap();
        assert!(p.allow_connect("127.0.0.1:8080".parse().unwrap()));
        assert!(!p.allow_connect("127.0.0.1:8081".parse().unwrap()));
        let e = net_policy(&["127.0.0.1:8080".into()]).unwrap_err();
        assert!(
            e.starts_with("--net-allow \"127.0.0.1:8080\": no /PREFIX"),
            "{e}"
        );
        let all = net_policy(&[]).unwrap();
        assert!(all.allow_announce("0.0.0.0:0".parse().unwrap()));
    }

    #[test]
    fn export_specs() {
        let e = parse_export("/srv").unwrap();
        assert_eq!(
            (e.host, e.guest, e.read_only),
            ("/srv".into(), "/".into(), false)
        );
        let e = parse_export("/srv:/data:ro").unwrap();
        assert_eq!(
            (e.host, e.guest, e.read_only),
            ("/srv".into(), "/data".into(), true)
        );
        let e = parse_export("/srv:ro").unwrap();
        assert_eq!(
            (e.host, e.guest, e.read_only),
            ("/srv".into(), "/".into(), true)
        );
        let e = parse_export("relative/dir:/x").unwrap();
        assert_eq!((e.host, e.guest), ("relative/dir".into(), "/x".into()));
        assert!(parse_export(":/x").is_err());
        assert!(
            matches!(parse_listen("tcp:127.0.0.1:1"), Ok(Listen::Tcp(a)) if a == "127.0.0.1:1")
        );
        assert!(matches!(parse_listen("unix:/tmp/s"), Ok(Listen::Unix(p)) if p == "/tmp/s"));
        assert!(parse_listen("udp:1").is_err());
        assert!(parse_listen("unix:").is_err());
    }
}
