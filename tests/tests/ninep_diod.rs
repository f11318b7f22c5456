//! A partition's files through its virtio-9p device, forwarded over TCP to
//! diod (Debian's 9P server, which nobody here wrote).

#[cfg(test)]
mod tests {
    use std::net::TcpStream;
    use std::path::Path;
    use std::process::{Child, Command, Stdio};
    use std::time::{Duration, Instant};

    use astraea_tests::*;

    struct Diod(Child);

    impl Drop for Diod {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    fn diod_path() -> Option<&'static str> {
        ["/usr/sbin/diod", "/usr/bin/diod"]
            .into_iter()
            .find(|p| Path::new(p).exists())
    }

    fn start_diod(export: &Path, port: u16) -> Diod {
        let child = Command::new(diod_path().expect("diod"))
            .args(["-f", "-n", "-S", "-U", "root", "-e"])
            .arg(export)
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
        Diod(child)
    }

    #[test]
    fn partition_lists_reads_writes_renames_and_deletes_through_diod() {
        if !kvm_available() {
            return;
        }
        if diod_path().is_none() {
            eprintln!(
                "\n*** SKIPPED: diod is not installed (apt-get install diod); this test did not run. ***\n"
            );
            return;
        }
        let dir = std::env::temp_dir().join(format!("astraea-diod-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("hello.txt"), "hello from the host\n").unwrap();
        std::fs::write(dir.join("delete-me.txt"), "x").unwrap();
        let port = 20000 + (std::process::id() % 20000) as u16;
        let _diod = start_diod(&dir, port);

        let k = kernel("astraea-ktest");
        let target = format!("tcp:127.0.0.1:{port}");
        let r = astraea_cmd(&[
            "run",
            "--kernel",
            k.to_str().unwrap(),
            "--9p",
            &target,
            "--9p-aname",
            dir.to_str().unwrap(),
            "--",
            "9p-files",
        ]);
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
            std::fs::read_to_string(dir.join("sub/moved.txt")).unwrap(),
            "written by the partition\n"
        );
        assert!(!dir.join("new.txt").exists(), "renamed away");
        assert!(!dir.join("delete-me.txt").exists(), "deleted");
        assert!(!dir.join("gone").exists(), "rmdir");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn descriptors_outside_guest_memory_are_refused() {
        if !kvm_available() {
            return;
        }
        if diod_path().is_none() {
            eprintln!(
                "\n*** SKIPPED: diod is not installed (apt-get install diod); this test did not run. ***\n"
            );
            return;
        }
        let dir = std::env::temp_dir().join(format!("astraea-diod-h-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let port = 40000 + (std::process::id() % 20000) as u16;
        let _diod = start_diod(&dir, port);
        let k = kernel("astraea-ktest");
        let target = format!("tcp:127.0.0.1:{port}");
        let r = astraea_cmd(&[
            "run",
            "--kernel",
            k.to_str().unwrap(),
            "--9p",
            &target,
            "--9p-aname",
            dir.to_str().unwrap(),
            "--",
            "9p-hostile",
        ]);
        assert_eq!(r.code, 0, "{r:?}");
        assert_eq!(r.stdout.matches("refused:").count(), 4, "{r:?}");
        assert!(r.stdout.contains("device still serves"), "{r:?}");
        std::fs::remove_dir_all(&dir).unwrap();
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
