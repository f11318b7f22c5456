//! A partition's files through its virtio-9p device, forwarded over TCP to
//! diod (Debian's 9P server, which nobody here wrote).

#[cfg(test)]
mod tests {
    use std::net::TcpStream;
    use std::path::{Path, PathBuf};
    use std::process::{Child, Command, Stdio};
    use std::time::{Duration, Instant};

    use astraea_tests::*;

    /// A temporary directory exported by a diod process on a free port.
    struct DiodExport {
        diod: Child,
        dir: PathBuf,
        port: u16,
    }

    impl DiodExport {
        /// `None` (with a loud notice) when diod is not installed.
        fn start(name: &str) -> Option<Self> {
            let Some(bin) = ["/usr/sbin/diod", "/usr/bin/diod"]
                .into_iter()
                .find(|p| Path::new(p).exists())
            else {
                eprintln!(
                    "\n*** SKIPPED: diod is not installed (apt-get install diod); this test did not run. ***\n"
                );
                return None;
            };
            let dir = std::env::temp_dir().join(format!("astraea-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            let port = {
                let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
                l.local_addr().unwrap().port()
            };
            let diod = Command::new(bin)
                .args(["-f", "-n", "-S", "-U", "root", "-e"])
                .arg(&dir)
                .arg("-l")
                .arg(format!("127.0.0.1:{port}"))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("cannot start diod");
            let t0 = Instant::now();
            while TcpStream::connect(("127.0.0.1", port)).is_err() {
                assert!(
                    t0.elapsed() < Duration::from_secs(10),
                    "diod did not start listening"
                );
                std::thread::sleep(Duration::from_millis(50));
            }
            Some(Self { diod, dir, port })
        }

        /// Boots the test kernel with this export as its 9P namespace.
        fn run(&self, scenario: &str) -> Run {
            let k = kernel("astraea-ktest");
            let target = format!("tcp:127.0.0.1:{}", self.port);
            astraea_cmd(&[
                "run",
                "--kernel",
                k.to_str().unwrap(),
                "--9p",
                &target,
                "--9p-aname",
                self.dir.to_str().unwrap(),
                "--",
                scenario,
            ])
        }
    }

    impl Drop for DiodExport {
        fn drop(&mut self) {
            let _ = self.diod.kill();
            let _ = self.diod.wait();
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    #[test]
    fn partition_lists_reads_writes_renames_and_deletes_through_diod() {
        if !kvm_available() {
            return;
        }
        let Some(ex) = DiodExport::start("diod") else {
            return;
        };
        std::fs::write(ex.dir.join("hello.txt"), "hello from the host\n").unwrap();
        std::fs::write(ex.dir.join("delete-me.txt"), "x").unwrap();
        let r = ex.run("9p-files");
        assert_eq!(r.code, 0, "{r:?}");
        assert!(r.stdout.contains("ls: delete-me.txt hello.txt"), "{r:?}");
        assert!(
            r.stdout
                .contains("hello.txt (20 bytes): hello from the host"),
            "{r:?}"
        );
        assert!(r.stdout.contains("missing file: errno 2"), "{r:?}");
        assert!(r.stdout.contains("9p ok"), "{r:?}");
        // The host sees every change.
        assert_eq!(
            std::fs::read_to_string(ex.dir.join("sub/moved.txt")).unwrap(),
            "written by the partition\n"
        );
        assert!(!ex.dir.join("new.txt").exists(), "renamed away");
        assert!(!ex.dir.join("delete-me.txt").exists(), "deleted");
        assert!(!ex.dir.join("gone").exists(), "rmdir");
    }

    #[test]
    fn descriptors_outside_guest_memory_are_refused() {
        if !kvm_available() {
            return;
        }
        let Some(ex) = DiodExport::start("diod-hostile") else {
            return;
        };
        let r = ex.run("9p-hostile");
        assert_eq!(r.code, 0, "{r:?}");
        assert_eq!(r.stdout.matches("refused:").count(), 4, "{r:?}");
        assert!(r.stdout.contains("device still serves"), "{r:?}");
    }

    #[test]
    fn unreachable_9p_server_is_a_clear_error() {
        if !kvm_available() {
            return;
        }
        let r = astraea_cmd(&["run", "--9p", "tcp:127.0.0.1:1"]);
        assert_eq!(r.code, 125, "{r:?}");
        assert!(
            r.stderr
                .contains("cannot connect to the 9P server at 127.0.0.1:1"),
            "{r:?}"
        );
    }
}
