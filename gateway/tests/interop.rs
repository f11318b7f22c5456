//! Interoperability over TCP with 9P2000.L clients nobody here wrote:
//! the `p9fs` Python client (PyPI) — files, and an HTTP fetch through
//! `/net/tcp` — and diod's `diodls`, `diodcat` and `diodload` (Debian
//! package `diod`).
//!
//! Missing peers are installed once per run (`python3 -m pip install p9fs`,
//! `apt-get install -y diod`). A test whose peer cannot be installed prints
//! a loud `SKIPPED` line (straight to stderr, past the test harness's output
//! capture) and passes.

mod common;

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::net::TcpListener;
    use std::path::{Path, PathBuf};
    use std::process::{Command, Output, Stdio};
    use std::sync::{Arc, OnceLock};
    use std::time::{Duration, Instant};

    use astraea_gateway::{Export, Gateway, serve_stream};

    use crate::common::Tree;

    /// Prints a line the test harness does not capture.
    fn loud(msg: &str) {
        let _ = writeln!(std::io::stderr(), "\n*** {msg} ***\n");
    }

    /// Runs a command with a time limit; `None` if it cannot be started.
    fn run(cmd: &mut Command, limit: Duration) -> Option<Output> {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .ok()?;
        let deadline = Instant::now() + limit;
        loop {
            match child.try_wait() {
                Ok(Some(_)) => return child.wait_with_output().ok(),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                _ => {
                    let _ = child.kill();
                    let out = child.wait_with_output().ok()?;
                    panic!(
                        "{cmd:?} timed out after {limit:?}\nstdout: {}\nstderr: {}",
                        String::from_utf8_lossy(&out.stdout),
                        String::from_utf8_lossy(&out.stderr)
                    );
                }
            }
        }
    }

    fn succeeds(cmd: &mut Command, limit: Duration) -> bool {
        run(cmd, limit).is_some_and(|o| o.status.success())
    }

    /// Makes the `p9fs` Python package importable, installing it once.
    fn ensure_p9fs() -> Result<(), String> {
        static READY: OnceLock<Result<(), String>> = OnceLock::new();
        READY
            .get_or_init(|| {
                let import = || {
                    succeeds(
                        Command::new("python3").args(["-c", "import p9fs"]),
                        Duration::from_secs(60),
                    )
                };
                if import() {
                    return Ok(());
                }
                if !succeeds(
                    Command::new("python3").arg("--version"),
                    Duration::from_secs(30),
                ) {
                    return Err("python3 is not installed".into());
                }
                loud("installing the p9fs Python client (python3 -m pip install p9fs)");
                let installed = run(
                    Command::new("python3").args([
                        "-m",
                        "pip",
                        "install",
                        "--quiet",
                        "--disable-pip-version-check",
                        "p9fs",
                    ]),
                    Duration::from_secs(300),
                );
                if import() {
                    Ok(())
                } else {
                    Err(format!(
                        "pip could not install p9fs: {}",
                        installed
                            .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
                            .unwrap_or_else(|| "pip did not start".into())
                    ))
                }
            })
            .clone()
    }

    /// Where diod's client tools are (Debian ships them in /usr/sbin),
    /// installing the `diod` package once if needed.
    fn ensure_diod() -> Result<PathBuf, String> {
        static READY: OnceLock<Result<PathBuf, String>> = OnceLock::new();
        READY
            .get_or_init(|| {
                let find = || {
                    let path = std::env::var_os("PATH").unwrap_or_default();
                    std::env::split_paths(&path)
                        .chain(
                            ["/usr/sbin", "/sbin", "/usr/local/sbin", "/usr/bin"]
                                .map(PathBuf::from),
                        )
                        .find(|d| d.join("diodls").is_file() && d.join("diodcat").is_file())
                };
                if let Some(dir) = find() {
                    return Ok(dir);
                }
                if !succeeds(
                    Command::new("apt-get").arg("--version"),
                    Duration::from_secs(30),
                ) {
                    return Err("diod is not installed and apt-get is not available".into());
                }
                loud("installing diod's client tools (apt-get install -y diod)");
                let install = || {
                    run(
                        Command::new("apt-get")
                            .args(["install", "-y", "-q", "diod"])
                            .env("DEBIAN_FRONTEND", "noninteractive"),
                        Duration::from_secs(600),
                    )
                };
                let first = install();
                if find().is_none() {
                    // A fresh machine may have no package lists yet.
                    run(
                        Command::new("apt-get").args(["update", "-q"]),
                        Duration::from_secs(600),
                    );
                    install();
                }
                find().ok_or_else(|| {
                    format!(
                        "apt-get could not install diod: {}",
                        first
                            .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
                            .unwrap_or_else(|| "apt-get did not start".into())
                    )
                })
            })
            .clone()
    }

    /// Serves `gw` on a loopback port; returns the port.
    fn serve(gw: Arc<Gateway>) -> u16 {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                let gw = Arc::clone(&gw);
                std::thread::spawn(move || {
                    let _ = serve_stream(&gw, conn);
                });
            }
        });
        port
    }

    const P9FS_SCRIPT: &str = r#"
import sys, p9fs
port = int(sys.argv[1])
fs = p9fs.P9FileSystem(host="127.0.0.1", port=port, username="astraea", version="9P2000.L")
def out(*a): print(*a, flush=True)
out("ls", sorted(fs.ls("", detail=False)))
out("ls-sub", sorted(fs.ls("sub", detail=False)))
with fs.open("hello.txt", "rb") as f:
    out("read", f.read().decode())
out("env", fs.cat("env/HOME").decode())
data = bytes(i % 251 for i in range(300000))
with fs.open("from-p9fs.bin", "wb") as f:
    f.write(data)
out("size", fs.info("from-p9fs.bin")["size"])
with fs.open("from-p9fs.bin", "rb") as f:
    out("readback-ok", f.read() == data)
fs.mkdir("pdir/inner")
out("isdir", fs.isdir("pdir/inner"))
fs.mv("from-p9fs.bin", "pdir/inner/renamed.bin")
out("after-mv", fs.exists("from-p9fs.bin"), fs.exists("pdir/inner/renamed.bin"))
with fs.open("pdir/inner/victim.txt", "wb") as f:
    f.write(b"to be deleted")
fs.rm("pdir/inner/victim.txt")
out("deleted", not fs.exists("pdir/inner/victim.txt"))
fs.makedirs("pdir/gone", exist_ok=True)
with fs.open("pdir/gone/x", "wb") as f:
    f.write(b"x")
fs.rm("pdir/gone/x")
fs.rmdir("pdir/gone")
out("rmdir", not fs.exists("pdir/gone"))
try:
    with fs.open("ro/new.txt", "wb") as f:
        f.write(b"x")
    out("ro-write", "allowed")
except Exception as e:
    out("ro-write", "refused", e.args[0] if e.args else e)
try:
    fs.cat("esc_abs")
    out("escape", "allowed")
except Exception as e:
    out("escape", "refused", e.args[0] if e.args else e)
out("done")
"#;

    /// A real HTTP server (Python's `http.server`) on a loopback port, and
    /// p9fs fetching a page from it through the gateway's `/net/tcp` the
    /// Plan 9 way: clone, `connect` on its ctl, request and reply on `data`.
    const P9FS_NET_SCRIPT: &str = r#"
import functools, http.server, os, sys, threading
import p9fs

port, docroot = int(sys.argv[1]), sys.argv[2]
class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=docroot))
threading.Thread(target=srv.serve_forever, daemon=True).start()
http_port = srv.server_address[1]

def out(*a):
    print(*a, flush=True)

fs = p9fs.P9FileSystem(host="127.0.0.1", port=port, username="astraea", version="9P2000.L")
out("ls", sorted(os.path.basename(p.rstrip("/")) for p in fs.ls("net/tcp", detail=False)))
clone = fs._open_fid("net/tcp/clone", os.O_RDWR)
n = fs._read(16, 0, clone).decode().strip()
fs._write(f"connect 127.0.0.1!{http_port}".encode(), 0, clone)
remote = fs._open_fid(f"net/tcp/{n}/remote", os.O_RDONLY)
out("remote", fs._read(64, 0, remote).decode().strip() == f"127.0.0.1!{http_port}")
data = fs._open_fid(f"net/tcp/{n}/data", os.O_RDWR)
fs._write(b"GET /page.html HTTP/1.0\r\nHost: localhost\r\n\r\n", 0, data)
reply = fs._read(1 << 20, 0, data)  # reads until the server closes
head, _, body = reply.partition(b"\r\n\r\n")
out("status", head.split(b"\r\n")[0].decode())
out("body", body.decode())
for f in (data, remote, clone):
    fs._release_fid(f)
out("done")
"#;

    #[test]
    fn p9fs_fetches_a_page_through_net() {
        if let Err(why) = ensure_p9fs() {
            loud(&format!("SKIPPED p9fs_fetches_a_page_through_net: {why}"));
            return;
        }
        let t = Tree::new();
        let (gw, _) = t.gateway_with(astraea_gateway::GatewayConfig {
            net: true,
            ..t.config()
        });
        let port = serve(gw);
        let www = t.base().join("www");
        std::fs::create_dir_all(&www).unwrap();
        std::fs::write(www.join("page.html"), "<p>served on the host</p>\n").unwrap();
        let script = t.base().join("p9fs_net.py");
        std::fs::write(&script, P9FS_NET_SCRIPT).unwrap();
        let out = run(
            Command::new("python3")
                .arg(&script)
                .arg(port.to_string())
                .arg(&www),
            Duration::from_secs(120),
        )
        .expect("python3 runs");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "p9fs failed:\n{stdout}\n{stderr}");
        assert_eq!(
            stdout,
            "ls ['clone']\nremote True\nstatus HTTP/1.0 200 OK\nbody <p>served on the host</p>\n\ndone\n",
            "{stderr}"
        );
    }

    /// `astraea-gateway --net-allow`: p9fs may reach the allowed port and is
    /// refused (`EACCES` from the gateway) at another one, though something
    /// listens there too.
    const P9FS_POLICY_SCRIPT: &str = r#"
import os, sys
import p9fs

port = int(sys.argv[1])
fs = p9fs.P9FileSystem(host="127.0.0.1", port=port, username="astraea", version="9P2000.L")

def dial(target):
    clone = fs._open_fid("net/tcp/clone", os.O_RDWR)
    try:
        fs._write(f"connect 127.0.0.1!{target}".encode(), 0, clone)
        return "connected"
    except Exception as e:
        return "refused" if "13" in repr(e) or "ermission" in repr(e) else f"error {e!r}"
    finally:
        fs._release_fid(clone)

print("allowed", dial(int(sys.argv[2])), flush=True)
print("other", dial(int(sys.argv[3])), flush=True)
"#;

    #[test]
    fn gateway_binary_enforces_net_allow() {
        if let Err(why) = ensure_p9fs() {
            loud(&format!("SKIPPED gateway_binary_enforces_net_allow: {why}"));
            return;
        }
        let t = Tree::new();
        // Both targets listen (and stay open): the refused dial must fail
        // by policy, not because nothing listens there.
        let allowed = TcpListener::bind("127.0.0.1:0").unwrap();
        let http_port = allowed.local_addr().unwrap().port();
        let other = TcpListener::bind("127.0.0.1:0").unwrap();
        let other_port = other.local_addr().unwrap().port();
        // Port 0: the gateway picks one and logs it; no port is given up
        // and taken again.
        let mut child = Command::new(env!("CARGO_BIN_EXE_astraea-gateway"))
            .args(["--listen", "tcp:127.0.0.1:0", "--export"])
            .arg(t.root())
            .arg("--no-console")
            .arg("--net-allow")
            .arg(format!("127.0.0.1/32:{http_port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("astraea-gateway starts");
        let gw_log = Arc::new(std::sync::Mutex::new(String::new()));
        let (port_tx, port_rx) = std::sync::mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        let log = Arc::clone(&gw_log);
        let reader = std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Some(rest) = line.split("listening on tcp:").nth(1) {
                    let addr: String = rest
                        .chars()
                        .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == ':')
                        .collect();
                    if let Ok(a) = addr.parse::<std::net::SocketAddr>() {
                        let _ = port_tx.send(a.port());
                    }
                }
                let mut l = log.lock().unwrap();
                l.push_str(&line);
                l.push('\n');
            }
        });
        let gw_port = port_rx
            .recv_timeout(Duration::from_secs(30))
            .expect("astraea-gateway says where it listens");
        let script = t.base().join("p9fs_policy.py");
        std::fs::write(&script, P9FS_POLICY_SCRIPT).unwrap();
        let out = run(
            Command::new("python3")
                .arg(&script)
                .arg(gw_port.to_string())
                .arg(http_port.to_string())
                .arg(other_port.to_string()),
            Duration::from_secs(120),
        )
        .expect("python3 runs");
        let _ = child.kill();
        let _ = child.wait();
        let _ = reader.join();
        let gw_err = gw_log.lock().unwrap().clone();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(
            stdout, "allowed connected\nother refused\n",
            "{stderr}\ngateway:\n{gw_err}"
        );
        assert!(gw_err.contains("refused by the network policy"), "{gw_err}");
        drop((allowed, other));
    }

    #[test]
    fn p9fs_python_client() {
        if let Err(why) = ensure_p9fs() {
            loud(&format!("SKIPPED p9fs_python_client: {why}"));
            return;
        }
        let t = Tree::new();
        let (gw, _) = t.gateway();
        let port = serve(gw);
        let script = t.base().join("p9fs_test.py");
        std::fs::write(&script, P9FS_SCRIPT).unwrap();
        let out = run(
            Command::new("python3").arg(&script).arg(port.to_string()),
            Duration::from_secs(120),
        )
        .expect("python3 runs");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "p9fs failed:\n{stdout}\n{stderr}");
        let expect = [
            "ls ['dev/', 'env/', 'esc_abs', 'esc_rel', 'hello.txt', 'inside', 'ro/', 'sub/']",
            "ls-sub ['sub/a.txt', 'sub/esc_dir']",
            "read hello world",
            "env /home/astraea",
            "size 300000",
            "readback-ok True",
            "isdir True",
            "after-mv False True",
            "deleted True",
            "rmdir True",
            "ro-write refused 30",
            "escape refused 18",
            "done",
        ];
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(lines, expect, "stderr: {stderr}");
        // The host agrees.
        let moved = std::fs::read(t.root().join("pdir/inner/renamed.bin")).unwrap();
        assert_eq!(moved.len(), 300_000);
        assert!(moved.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8));
        assert!(!t.root().join("from-p9fs.bin").exists());
        assert!(!t.root().join("pdir/inner/victim.txt").exists());
        assert!(!t.root().join("pdir/gone").exists());
        assert!(!t.base().join("ro/new.txt").exists());
        assert_eq!(t.outside(), vec!["secret.txt"]);
    }

    fn diod_tool(dir: &Path, tool: &str, port: u16, args: &[&str]) -> (bool, String, String) {
        let out = run(
            Command::new(dir.join(tool))
                .arg("-s")
                .arg(format!("127.0.0.1:{port}"))
                .args(args),
            Duration::from_secs(60),
        )
        .unwrap_or_else(|| panic!("{tool} starts"));
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    #[test]
    fn diod_client_tools() {
        let dir = match ensure_diod() {
            Ok(dir) => dir,
            Err(why) => {
                loud(&format!("SKIPPED diod_client_tools: {why}"));
                return;
            }
        };
        let t = Tree::new();
        // diodload attaches aname "ctl" and uses its files "null" and "zero".
        let ctl = t.base().join("ctl");
        std::fs::create_dir(&ctl).unwrap();
        std::fs::write(ctl.join("null"), b"").unwrap();
        std::fs::write(ctl.join("zero"), vec![0u8; 1 << 20]).unwrap();
        let mut cfg = t.config();
        cfg.exports.push(Export {
            host: ctl.clone(),
            guest: "/ctl".into(),
            read_only: false,
        });
        let (gw, _) = t.gateway_with(cfg);
        let port = serve(gw);

        // diodls: the root, with the synthetic entries merged in.
        let (ok, out, err) = diod_tool(&dir, "diodls", port, &["-a", "/", "/"]);
        assert!(ok, "diodls failed: {err}");
        let mut names: Vec<&str> = out.lines().collect();
        names.sort();
        assert_eq!(
            names,
            [
                "ctl",
                "dev",
                "env",
                "esc_abs",
                "esc_rel",
                "hello.txt",
                "inside",
                "ro",
                "sub"
            ]
        );
        let (ok, out, err) = diod_tool(&dir, "diodls", port, &["-a", "/", "-l", "/sub"]);
        assert!(ok, "diodls -l failed: {err}");
        assert!(out.contains("a.txt") && out.contains("esc_dir"), "{out}");
        let (ok, out, _) = diod_tool(&dir, "diodls", port, &["-a", "/ro", "/"]);
        assert!(ok);
        assert_eq!(out.trim(), "file.txt");

        // diodcat: files from both exports and the synthetic /env.
        let (ok, out, err) = diod_tool(&dir, "diodcat", port, &["-a", "/", "hello.txt"]);
        assert!(ok, "diodcat failed: {err}");
        assert_eq!(out, "hello world");
        let (ok, out, _) = diod_tool(&dir, "diodcat", port, &["-a", "/", "sub/a.txt"]);
        assert!(ok);
        assert_eq!(out, "aaa");
        let (ok, out, _) = diod_tool(&dir, "diodcat", port, &["-a", "/ro", "file.txt"]);
        assert!(ok);
        assert_eq!(out, "read only");
        let (ok, out, _) = diod_tool(&dir, "diodcat", port, &["-a", "/", "env/LANG"]);
        assert!(ok);
        assert_eq!(out, "C.UTF-8");
        // Escapes through symlinks fail, and print nothing of the secret.
        for link in ["esc_abs", "esc_rel", "sub/esc_dir/secret.txt"] {
            let (ok, out, _) = diod_tool(&dir, "diodcat", port, &["-a", "/", link]);
            assert!(!ok && !out.contains("secret"), "{link}: {out}");
        }
        let (ok, _, _) = diod_tool(&dir, "diodcat", port, &["-a", "/nonexistent", "x"]);
        assert!(!ok);

        // diodload: concurrent getattrs, then concurrent reads and writes.
        if dir.join("diodload").is_file() {
            let (ok, out, err) = diod_tool(&dir, "diodload", port, &["-g", "-r", "1", "-n", "4"]);
            assert!(ok, "diodload -g failed: {out} {err}");
            let (ok, out, err) = diod_tool(&dir, "diodload", port, &["-r", "1", "-n", "4"]);
            assert!(ok, "diodload failed: {out} {err}");
            let _ = writeln!(std::io::stderr(), "diodload: {}", err.trim());
        } else {
            loud("SKIPPED diodload: not shipped with this diod package");
        }
        assert_eq!(t.outside(), vec!["secret.txt"]);
    }
}
