//! `--mount HOST[:GUEST][:ro|:rw][:cache|:nocache]` and the default exports
//! (the host's `/` read-only and the current directory read-write at its
//! own path; for `astraea run` also the host's `/tmp` read-write, with a
//! private `hsperfdata` directory in it): what a partition's files are, for
//! `astraea run` and for the shared gateway of `astraea deploy`.

use std::path::{Path, PathBuf};

use astraea_gateway::Export;

use crate::error::VmmError;

/// Parses one `--mount`: the export and, if the spec chose one, whether its
/// files are cached.
pub fn parse_mount(spec: &str) -> Result<(Export, Option<bool>), VmmError> {
    let bad = |why: &str| {
        VmmError::Boot(format!(
            "--mount {spec:?}: {why}; write HOST[:GUEST][:ro][:nocache], e.g. --mount /srv/data:/data:ro"
        ))
    };
    let mut parts: Vec<&str> = spec.split(':').collect();
    let cache = match parts.last() {
        Some(&"cache") => {
            parts.pop();
            Some(true)
        }
        Some(&"nocache") => {
            parts.pop();
            Some(false)
        }
        _ => None,
    };
    let read_only = match parts.last() {
        Some(&"ro") => {
            parts.pop();
            true
        }
        Some(&"rw") => {
            parts.pop();
            false
        }
        _ => false,
    };
    let (host, guest) = match parts.as_slice() {
        [h] if !h.is_empty() => (*h, None),
        [h, g] if !h.is_empty() && g.starts_with('/') => (*h, Some(*g)),
        [_, _] => return Err(bad("the guest path must be absolute")),
        _ => return Err(bad("too many ':'")),
    };
    if cache == Some(true) && !read_only {
        return Err(bad(
            "a read-write mount cannot be cached (the cache assumes files do not change); add :ro",
        ));
    }
    let host = std::fs::canonicalize(host).map_err(|e| bad(&format!("cannot use {host}: {e}")))?;
    let guest = guest.map_or_else(|| host.to_string_lossy().into_owned(), String::from);
    Ok((
        Export {
            host,
            guest,
            read_only,
        },
        cache,
    ))
}

/// The exports of `mounts`, or without any the defaults: the host's `/`
/// read-only and the current directory read-write at its own path, and with
/// `tmp` the host's `/tmp` read-write too (a host process may write it: the
/// JVM's `java.io.tmpdir`, JFR's repository, native libraries that Netty and
/// JNA unpack live there; see [`PrivatePerfData`] for what must not be
/// shared in it). Each comes with its `:cache`/`:nocache` choice, if made.
pub fn exports(mounts: &[String], tmp: bool) -> Result<Vec<(Export, Option<bool>)>, VmmError> {
    if !mounts.is_empty() {
        return mounts.iter().map(|m| parse_mount(m)).collect();
    }
    let cwd = std::env::current_dir()
        .map_err(|e| VmmError::Boot(format!("cannot read the current directory: {e}")))?;
    let mut out = vec![(
        Export {
            host: PathBuf::from("/"),
            guest: "/".into(),
            read_only: true,
        },
        None,
    )];
    let host_tmp = Path::new("/tmp");
    if tmp && host_tmp.is_dir() && cwd != host_tmp {
        out.push((
            Export {
                host: host_tmp.to_path_buf(),
                guest: "/tmp".into(),
                read_only: false,
            },
            None,
        ));
    }
    if cwd != Path::new("/") {
        out.push((
            Export {
                guest: cwd.to_string_lossy().into_owned(),
                host: cwd,
                read_only: false,
            },
            None,
        ));
    }
    Ok(out)
}

/// The start of a [`PrivatePerfData`] directory's name.
const PERF_PREFIX: &str = "astraea-hsperfdata-";

/// Whether `dir` is a partition's own hsperfdata directory
/// ([`PrivatePerfData`]): made anew for every partition.
pub fn is_private_perf_dir(dir: &Path) -> bool {
    dir.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with(PERF_PREFIX))
}

/// A partition's own `/tmp/hsperfdata_USER`: a fresh host directory
/// exported over that path of the shared `/tmp`, removed when this is
/// dropped (the partition has ended). A starting JVM removes the
/// performance-data files of the pids it cannot see alive (`kill(pid, 0)`
/// fails), and a partition sees no other process: in the host's directory
/// it would remove the files of every other JVM, host JVMs' included.
pub struct PrivatePerfData {
    dir: PathBuf,
    user: String,
}

impl PrivatePerfData {
    /// Makes the directory (mode 0700, as the JVM requires), for the user
    /// this process runs as; `None` if that user has no name.
    pub fn new() -> Result<Option<PrivatePerfData>, VmmError> {
        use std::os::unix::fs::DirBuilderExt;
        let Some(user) = user_name() else {
            return Ok(None);
        };
        let base = std::env::temp_dir();
        remove_stale(&base);
        for n in 0..1000u32 {
            let dir = base.join(format!("{PERF_PREFIX}{}-{n}", std::process::id()));
            match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => return Ok(Some(PrivatePerfData { dir, user })),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(VmmError::Boot(format!(
                        "cannot make the partition's hsperfdata directory under {}: {e}",
                        base.display()
                    )));
                }
            }
        }
        Err(VmmError::Boot(format!(
            "cannot make the partition's hsperfdata directory under {}: every name is taken",
            base.display()
        )))
    }

    /// Its export over `/tmp/hsperfdata_USER`, read-write.
    pub fn export(&self) -> Export {
        Export {
            host: self.dir.clone(),
            guest: format!("/tmp/hsperfdata_{}", self.user),
            read_only: false,
        }
    }
}

impl Drop for PrivatePerfData {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir_all(&self.dir) {
            tracing::warn!("cannot remove {}: {e}", self.dir.display());
        }
    }
}

/// Removes the private hsperfdata directories of `astraea` processes that
/// are gone without removing theirs (killed with SIGKILL).
fn remove_stale(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(PERF_PREFIX)
            .and_then(|r| r.split_once('-'))
            .map(|(pid, _)| pid.to_string())
        else {
            continue;
        };
        if pid.bytes().all(|b| b.is_ascii_digit()) && !Path::new("/proc").join(&pid).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// The name of the user this process runs as, from `/etc/passwd` (what the
/// JVM's `getpwuid` finds in the partition, which reads the same file).
fn user_name() -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    // This process's own /proc directory belongs to its user.
    let uid = std::fs::metadata("/proc/self").ok()?.uid();
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.len() > 2 && f[2].parse() == Ok(uid)).then(|| f[0].to_string())
    })
}
