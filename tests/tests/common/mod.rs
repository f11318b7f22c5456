//! A 9P server nobody here wrote, exporting a fresh temporary directory on a
//! free TCP port, for the interoperability tests.

// Each test binary that includes this module uses a different part of it.
#![allow(dead_code)]

use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use astraea_tests::*;

/// Which server.
#[derive(Clone, Copy, Debug)]
pub enum Peer {
    /// diod, from Debian (`apt-get install diod`).
    Diod,
    /// rs9p's unpfs, from crates.io (`./x test` builds it into `target/peers`).
    Unpfs,
}

/// A running server and its export.
pub struct PeerExport {
    child: Child,
    /// The exported directory.
    pub dir: PathBuf,
    port: u16,
    peer: Peer,
}

fn binary(peer: Peer) -> Option<PathBuf> {
    let candidates: Vec<PathBuf> = match peer {
        Peer::Diod => vec!["/usr/sbin/diod".into(), "/usr/bin/diod".into()],
        Peer::Unpfs => vec![workspace().join("target/peers/bin/unpfs")],
    };
    candidates.into_iter().find(|p| p.exists())
}

impl PeerExport {
    /// Starts `peer`; `None` (with a loud notice) when it is not installed.
    pub fn start(peer: Peer, name: &str) -> Option<Self> {
        let Some(bin) = binary(peer) else {
            eprintln!(
                "\n*** SKIPPED: the 9P peer {peer:?} is not installed (./x test installs it); this test did not run. ***\n"
            );
            return None;
        };
        let dir = std::env::temp_dir().join(format!("astraea-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        // A port found free may be taken again before the peer binds it
        // (by another test's connection); then the peer exits, and a probe
        // could even reach someone else's listener. So the peer must still
        // be running once its port answers, else it starts again elsewhere.
        let mut attempt = 0;
        let (child, port) = loop {
            attempt += 1;
            let port = {
                let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
                l.local_addr().unwrap().port()
            };
            let mut cmd = Command::new(&bin);
            match peer {
                Peer::Diod => {
                    cmd.args(["-f", "-n", "-S", "-U", "root", "-e"])
                        .arg(&dir)
                        .arg("-l")
                        .arg(format!("127.0.0.1:{port}"));
                }
                Peer::Unpfs => {
                    cmd.arg(format!("tcp!127.0.0.1!{port}")).arg(&dir);
                }
            }
            let mut child = cmd
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("cannot start the 9P peer");
            let t0 = Instant::now();
            let mut exited = false;
            while TcpStream::connect(("127.0.0.1", port)).is_err() {
                if child.try_wait().ok().flatten().is_some() {
                    exited = true;
                    break;
                }
                assert!(
                    t0.elapsed() < Duration::from_secs(10),
                    "{peer:?} did not start listening"
                );
                std::thread::sleep(Duration::from_millis(50));
            }
            std::thread::sleep(Duration::from_millis(100));
            if !exited && child.try_wait().ok().flatten().is_none() {
                break (child, port);
            }
            let _ = child.kill();
            let _ = child.wait();
            assert!(
                attempt < 5,
                "{peer:?} exited at start five times (ports taken?)"
            );
            eprintln!("{peer:?} exited at start (port {port} taken?); starting it again");
        };
        Some(Self {
            child,
            dir,
            port,
            peer,
        })
    }

    /// Boots the test kernel with this export as its 9P namespace.
    pub fn run(&self, scenario: &str) -> Run {
        let k = kernel("astraea-ktest");
        let target = format!("tcp:127.0.0.1:{}", self.port);
        let mut args = vec!["run", "--kernel", k.to_str().unwrap(), "--9p", &target];
        let dir = self.dir.to_str().unwrap().to_string();
        if matches!(self.peer, Peer::Diod) {
            // diod wants the exported directory as the attach name.
            args.extend(["--9p-aname", &dir]);
        }
        args.extend(["--", scenario]);
        astraea_cmd(&args)
    }

    /// A path inside the export.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.join(rel)
    }
}

impl Drop for PeerExport {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Seeds a directory for the test kernel's `9p-files` scenario.
pub fn seed_files(dir: &std::path::Path) {
    std::fs::write(dir.join("hello.txt"), "hello from the host\n").unwrap();
    std::fs::write(dir.join("delete-me.txt"), "x").unwrap();
}

/// Checks what the `9p-files` scenario printed and what the host sees
/// afterwards. `ours`: served by our gateway, which adds `/dev` and `/env`
/// beside the export and implements record locks.
pub fn check_files(r: &Run, dir: &std::path::Path, ours: bool) {
    assert_eq!(r.code, 0, "{r:?}");
    let ls = if ours {
        "ls: delete-me.txt dev env hello.txt"
    } else {
        "ls: delete-me.txt hello.txt"
    };
    assert!(r.stdout.contains(ls), "{r:?}");
    assert!(
        r.stdout
            .contains("hello.txt (20 bytes): hello from the host"),
        "{r:?}"
    );
    assert!(r.stdout.contains("missing file: errno 2"), "{r:?}");
    assert!(r.stdout.contains("9p ok"), "{r:?}");
    if ours {
        assert!(
            r.stdout.contains(
                "locks: taken=true conflict_seen=true second_refused=true free_after_unlock=true"
            ),
            "record locks: {r:?}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(dir.join("sub/moved.txt")).unwrap(),
        "written by the partition\n"
    );
    assert!(!dir.join("new.txt").exists(), "renamed away");
    assert!(!dir.join("delete-me.txt").exists(), "deleted");
    assert!(!dir.join("gone").exists(), "rmdir");
}

/// Seeds the export, runs the `9p-files` scenario against `ex` and checks it.
pub fn files_scenario(ex: &PeerExport) {
    seed_files(&ex.dir);
    let r = ex.run("9p-files");
    check_files(&r, &ex.dir, false);
}
