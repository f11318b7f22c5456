//! `--mount HOST[:GUEST][:ro|:rw][:cache|:nocache]` and the default exports
//! (the host's `/` read-only, `/tmp` and the current directory read-write
//! at their own paths): what a partition's files are, for `astraea run` and
//! for the shared gateway of `astraea deploy`.

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
/// read-only, and `/tmp` and the current directory read-write at their own
/// paths (a host process may write both: the JVM's `java.io.tmpdir`, JFR's
/// repository, native libraries that Netty and JNA unpack live in `/tmp`).
/// Each comes with its `:cache`/`:nocache` choice, if made.
pub fn exports(mounts: &[String]) -> Result<Vec<(Export, Option<bool>)>, VmmError> {
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
    let tmp = Path::new("/tmp");
    if tmp.is_dir() && cwd != tmp {
        out.push((
            Export {
                host: tmp.to_path_buf(),
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
