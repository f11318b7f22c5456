//! A session's fids, written out with a partition's snapshot and set up
//! again when the partition is restored (`astraea run --from`): the guest
//! keeps using the fid numbers it had, so each fid is re-established by
//! what it names — an export and a path beneath it — and an open file is
//! opened again with the flags it had. A file that is gone or was changed
//! since (another inode, size or modification time) is not silently used:
//! its fid is left out, so the guest's next use of it fails (`EBADF`), and
//! the restore reports it.
//!
//! `/net` connections are kept by what can be made again: a listener
//! listens again (at its address, or where `--publish` puts it), a UDP
//! socket is bound again; a TCP connection's host socket belongs to the
//! partition that made it, so a restored partition finds it hung up (see
//! [`SavedConv`]).

use std::fs::File;
use std::os::fd::{AsFd, AsRawFd};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::console::lock;
use crate::namespace::Node;
use crate::net::{NetNode, SavedConv};
use crate::ops::Opened;
use crate::session::{Fid, Session};
use crate::sys;

/// One fid of a saved session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedFid {
    /// The guest's fid number.
    pub fid: u32,
    /// What it names.
    pub node: SavedNode,
    /// How it was open, if it was.
    pub open: Option<SavedOpen>,
}

/// What a saved fid names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum SavedNode {
    /// A synthetic directory (the gateway is built from the same exports).
    VDir(usize),
    /// A file beneath export `export`.
    Host {
        /// The export's number.
        export: usize,
        /// The path's components beneath the export root.
        rel: Vec<Vec<u8>>,
    },
    /// `/dev/cons`.
    Cons,
    /// `/env`.
    EnvDir,
    /// `/env/NAME`, by name (the restored partition's environment may
    /// list it elsewhere, or not at all).
    EnvVar(Vec<u8>),
    /// A `/net` file or directory, by its path beneath `/net`
    /// (`tcp/3/ctl`).
    Net(String),
}

/// How a saved fid was open.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum SavedOpen {
    /// A host file or directory, and what it was then.
    Host {
        /// Its `fcntl(F_GETFL)` flags.
        flags: i32,
        /// `st_dev`, `st_ino`, `st_size`, `st_mtime` in ns.
        dev: u64,
        /// Inode number.
        ino: u64,
        /// Size in bytes (not compared for directories).
        size: i64,
        /// Modification time in ns (not compared for directories).
        mtime_ns: i64,
        /// A directory.
        dir: bool,
        /// Open for writing.
        writable: bool,
    },
    /// A synthetic directory's listing (read again from offset 0).
    Listing,
    /// `/dev/cons`.
    Cons,
    /// An `/env` file or an extended attribute's value: these bytes.
    Bytes(Vec<u8>),
    /// A file of a `/net` connection (the fid's node says which).
    Net,
}

/// Why a session cannot be saved now.
#[derive(Debug, thiserror::Error)]
pub enum SaveError {
    /// An extended attribute is being written.
    #[error("fid {0} is writing an extended attribute")]
    Xattr(u32),
    /// Requests are in flight.
    #[error("{0} 9P requests are in flight")]
    Busy(usize),
    /// The host file of an open fid cannot be looked at.
    #[error("fid {0}: {1}")]
    Host(u32, std::io::Error),
}

/// A saved session: its msize and fids.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedSession {
    /// The negotiated msize.
    pub msize: u32,
    /// Every fid.
    pub fids: Vec<SavedFid>,
    /// Its `/net` connections.
    #[serde(default)]
    pub convs: Vec<SavedNetConv>,
}

/// One `/net` connection of a saved session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedNetConv {
    /// `tcp` or `udp`.
    pub proto: String,
    /// Its number (the guest's fids name it).
    pub n: usize,
    /// What it was.
    pub conv: SavedConv,
}

/// What a restore could not carry over, fid by fid (each already logged).
#[derive(Debug, Default)]
pub struct RestoreReport {
    /// Fids set up again.
    pub restored: usize,
    /// Fids left out, with why.
    pub dropped: Vec<(u32, String)>,
    /// Connections that could not be made again (a listener whose
    /// address is taken): the partition would not serve what it served,
    /// so it should not run.
    pub failed: Vec<String>,
}

fn mtime_ns(st: &libc::stat) -> i64 {
    st.st_mtime.saturating_mul(1_000_000_000) + st.st_mtime_nsec
}

impl Session {
    /// The session's state, for a snapshot; the session must be idle (no
    /// request in flight), as a snapshotting partition leaves it.
    pub fn save(&self) -> Result<SavedSession, SaveError> {
        let busy = self.outstanding();
        if busy > 0 {
            return Err(SaveError::Busy(busy));
        }
        let inner = &self.inner;
        let fids = lock(&inner.fids);
        let mut out = Vec::with_capacity(fids.len());
        for (&n, f) in fids.iter() {
            let node = match f.node() {
                Node::VDir(i) => SavedNode::VDir(i),
                Node::Host { export, rel } => SavedNode::Host { export, rel },
                Node::Cons => SavedNode::Cons,
                Node::EnvDir => SavedNode::EnvDir,
                Node::EnvVar(i) => SavedNode::EnvVar(
                    inner
                        .gw
                        .ns
                        .env
                        .get(i)
                        .map(|(k, _)| k.clone())
                        .unwrap_or_default(),
                ),
                Node::Net(node) => SavedNode::Net(node.path()),
            };
            let open = match lock(&f.open).as_deref() {
                None => None,
                Some(Opened::Host {
                    file,
                    dir,
                    writable,
                    ..
                }) => {
                    let st = sys::fstat(file.as_fd())
                        .map_err(|e| SaveError::Host(n, std::io::Error::from_raw_os_error(e.0)))?;
                    // SAFETY: F_GETFL on a descriptor the fid owns reads
                    // its status flags and changes nothing.
                    let flags = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETFL) };
                    if flags < 0 {
                        return Err(SaveError::Host(n, std::io::Error::last_os_error()));
                    }
                    Some(SavedOpen::Host {
                        flags,
                        dev: st.st_dev,
                        ino: st.st_ino,
                        size: st.st_size,
                        mtime_ns: mtime_ns(&st),
                        dir: *dir,
                        writable: *writable,
                    })
                }
                Some(Opened::Listing(_)) => Some(SavedOpen::Listing),
                Some(Opened::Cons) => Some(SavedOpen::Cons),
                Some(Opened::Bytes(b)) => Some(SavedOpen::Bytes(b.to_vec())),
                Some(Opened::Net { .. }) => Some(SavedOpen::Net),
                Some(Opened::XattrWrite { .. }) => return Err(SaveError::Xattr(n)),
            };
            out.push(SavedFid { fid: n, node, open });
        }
        drop(fids);
        out.sort_by_key(|f| f.fid);
        let convs = match inner.gw.ns.net() {
            Ok(net) => net
                .save(inner.id)
                .into_iter()
                .map(|(proto, n, conv)| SavedNetConv { proto, n, conv })
                .collect(),
            Err(_) => Vec::new(),
        };
        Ok(SavedSession {
            msize: inner.msize.load(Ordering::Acquire),
            fids: out,
            convs,
        })
    }

    /// Sets a fresh session up as `saved` was: its msize and every fid
    /// whose file is still what it was. The rest are reported (and logged).
    /// `scratch` lists exports (by number) that are the partition's own
    /// scratch directories, made anew for each partition (its JVM's
    /// hsperfdata): a file open there that is missing is created again,
    /// empty (the guest holds what it wrote).
    pub fn restore(&self, saved: &SavedSession, scratch: &[usize]) -> RestoreReport {
        let inner = &self.inner;
        inner.msize.store(saved.msize, Ordering::Release);
        let mut report = RestoreReport::default();
        // The connections first (the fids name them), each held until its
        // fids hold it.
        let mut held = Vec::new();
        for c in &saved.convs {
            let made = inner
                .gw
                .ns
                .net()
                .map_err(|_| "this gateway serves no /net".to_string())
                .and_then(|net| net.restore(&c.proto, c.n, inner.id, &c.conv));
            match made {
                Ok(r) => held.push(r),
                Err(why) => {
                    tracing::debug!("/net/{}/{}: {why}", c.proto, c.n);
                    report.failed.push(why);
                }
            }
        }
        if !report.failed.is_empty() {
            // The partition is not to run: its fids do not matter.
            return report;
        }
        let mut fids = lock(&inner.fids);
        for s in &saved.fids {
            match self.restore_one(s, scratch) {
                Ok(f) => {
                    fids.insert(s.fid, Arc::new(f));
                    report.restored += 1;
                }
                Err(why) => {
                    tracing::warn!(
                        fid = s.fid,
                        "not restored: {why}; the program's next use of it fails (EBADF)"
                    );
                    report.dropped.push((s.fid, why));
                }
            }
        }
        drop(fids);
        drop(held);
        report
    }

    fn restore_one(&self, s: &SavedFid, scratch: &[usize]) -> Result<Fid, String> {
        let ns = &self.inner.gw.ns;
        let node = match &s.node {
            SavedNode::VDir(i) if *i < ns.vdirs.len() => Node::VDir(*i),
            SavedNode::VDir(i) => return Err(format!("no synthetic directory {i}")),
            SavedNode::Host { export, rel } if *export < ns.exports.len() => Node::Host {
                export: *export,
                rel: rel.clone(),
            },
            SavedNode::Host { export, .. } => return Err(format!("no export {export}")),
            SavedNode::Cons => Node::Cons,
            SavedNode::EnvDir => Node::EnvDir,
            SavedNode::Net(path) => Node::Net(
                ns.net()
                    .and_then(|net| net.resolve(path))
                    .map_err(|e| format!("/net/{path}: {e}"))?,
            ),
            SavedNode::EnvVar(name) => match ns.env.iter().position(|(k, _)| k == name) {
                Some(i) => Node::EnvVar(i),
                None => {
                    return Err(format!(
                        "/env/{} is not in this environment",
                        String::from_utf8_lossy(name)
                    ));
                }
            },
        };
        let opened = match (&s.open, &node) {
            (None, _) => None,
            (
                Some(SavedOpen::Host {
                    flags,
                    dev,
                    ino,
                    size,
                    mtime_ns: mtime,
                    dir,
                    writable,
                }),
                Node::Host { export, rel },
            ) => {
                let path = || {
                    format!(
                        "{}/{}",
                        ns.exports[*export].host.display(),
                        rel.iter()
                            .map(|c| String::from_utf8_lossy(c).into_owned())
                            .collect::<Vec<_>>()
                            .join("/")
                    )
                };
                let oflags =
                    (flags & !(libc::O_CREAT | libc::O_EXCL | libc::O_TRUNC)) | libc::O_NONBLOCK;
                let fresh = scratch.contains(export);
                let (fd, made) = match ns.open(*export, rel, oflags, 0) {
                    Err(e) if e.0 == libc::ENOENT && fresh && !*dir => {
                        (ns.open(*export, rel, oflags | libc::O_CREAT, 0o600), true)
                    }
                    r => (r, false),
                };
                let fd = fd.map_err(|e| {
                    format!("{}: {}", path(), std::io::Error::from_raw_os_error(e.0))
                })?;
                if flags & libc::O_NONBLOCK == 0 {
                    sys::clear_nonblock(fd.as_fd()).map_err(|e| {
                        format!("{}: {}", path(), std::io::Error::from_raw_os_error(e.0))
                    })?;
                }
                let st = sys::fstat(fd.as_fd()).map_err(|e| {
                    format!("{}: {}", path(), std::io::Error::from_raw_os_error(e.0))
                })?;
                let same = made
                    || st.st_dev == *dev
                        && st.st_ino == *ino
                        && (*dir || (st.st_size == *size && mtime_ns(&st) == *mtime));
                if !same {
                    return Err(format!(
                        "{} changed since the snapshot (another file, or written to)",
                        path()
                    ));
                }
                Some(Opened::Host {
                    file: File::from(fd),
                    dir: *dir,
                    regular: st.st_mode & libc::S_IFMT == libc::S_IFREG,
                    writable: *writable,
                    cursor: Mutex::new(()),
                })
            }
            (Some(SavedOpen::Host { .. }), _) => {
                return Err("an open host file that names no host file".into());
            }
            (Some(SavedOpen::Listing), _) => Some(Opened::Listing(Mutex::new(Vec::new()))),
            (Some(SavedOpen::Cons), _) => Some(Opened::Cons),
            (Some(SavedOpen::Bytes(b)), _) => Some(Opened::Bytes(Arc::from(b.as_slice()))),
            (Some(SavedOpen::Net), Node::Net(NetNode::File(proto, n, file))) => {
                let conv = ns
                    .net()
                    .and_then(|net| net.open(*proto, *n, self.inner.id))
                    .map_err(|e| format!("/net connection {n}: {e}"))?;
                Some(Opened::Net { conv, file: *file })
            }
            (Some(SavedOpen::Net), _) => {
                return Err("an open /net file that names no connection's file".into());
            }
        };
        let f = Fid::new(node);
        *lock(&f.open) = opened.map(Arc::new);
        Ok(f)
    }
}
