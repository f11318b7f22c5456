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
