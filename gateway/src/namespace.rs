//! The tree a client sees: host directories exported at guest paths, the
//! synthetic directories that hold the mount points, `/dev/cons`, `/env`
//! and `/net` (whose files live in [`crate::net`]).
//!
//! A file inside an export is named by its export and its path relative to
//! the export root (a list of components, never `.` or `..`). Every lookup
//! goes through `openat2` beneath the export root's descriptor, so neither
//! `..` nor a relative or absolute symlink can leave the export.

use std::collections::{BTreeMap, HashMap};
use std::ffi::CString;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use astraea_9p::{P9_GETATTR_BASIC, P9_GETATTR_BTIME, QTDIR, QTFILE, QTSYMLINK, Qid, Stat, StatFs};

use crate::console::lock;
use crate::error::{Errno, GatewayError};
use crate::net::{Net, NetNode};
use crate::sys;
use crate::{Export, GatewayConfig};

/// Qid paths at or above this value name synthetic files.
const SYNTH: u64 = 0xFFFF << 48;
const SYNTH_CONS: u64 = SYNTH | (1 << 40);
const SYNTH_ENV_DIR: u64 = SYNTH | (2 << 40);
const SYNTH_ENV_VAR: u64 = SYNTH | (3 << 40);
/// `V9FS_MAGIC`, reported by `Tstatfs` on synthetic files.
const V9FS_MAGIC: u32 = 0x0102_1997;

/// One exported host directory.
pub(crate) struct ExportRoot {
    pub(crate) host: PathBuf,
    pub(crate) fd: OwnedFd,
    pub(crate) read_only: bool,
    /// The synthetic directory this export is mounted on.
    pub(crate) vdir: usize,
}

/// What a synthetic directory holds besides its (optional) backing export.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Child {
    Dir(usize),
    Cons,
    Env,
    Net,
}

/// A directory of the guest tree that exists as a mount point (or the root).
pub(crate) struct VDir {
    pub(crate) parent: usize,
    pub(crate) children: BTreeMap<Vec<u8>, Child>,
    /// The export mounted here, whose root supplies the other entries.
    pub(crate) backing: Option<usize>,
}

/// What a fid refers to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Node {
    /// A synthetic directory (or an export root, when it has a backing export).
    VDir(usize),
    /// A file beneath an export root; `rel` is never empty.
    Host { export: usize, rel: Vec<Vec<u8>> },
    /// `/dev/cons`.
    Cons,
    /// `/env`.
    EnvDir,
    /// `/env/NAME`.
    EnvVar(usize),
    /// `/net` and below.
    Net(NetNode),
}

pub(crate) struct Namespace {
    pub(crate) exports: Vec<ExportRoot>,
    pub(crate) vdirs: Vec<VDir>,
    pub(crate) env: Vec<(Vec<u8>, Arc<[u8]>)>,
    env_parent: usize,
    /// `/net`, if served.
    pub(crate) net: Option<Net>,
    /// `st_dev` values seen so far, numbered in order, for qid paths.
    devs: Mutex<HashMap<u64, u64>>,
    start: (u64, u64),
    uid: u32,
    gid: u32,
}

/// Checks a name received from a client for a create-like operation:
/// non-empty, no `/`, no NUL, not `.` or `..`.
pub(crate) fn check_name(name: &[u8]) -> Result<CString, Errno> {
    if name.is_empty() || name == b"." || name == b".." || name.contains(&b'/') {
        return Err(Errno(libc::EINVAL));
    }
    CString::new(name).map_err(|_| Errno(libc::EINVAL))
}

/// `a/b/c` for a relative path, `.` for the export root.
pub(crate) fn rel_cstring(rel: &[Vec<u8>]) -> Result<CString, Errno> {
    if rel.is_empty() {
        return Ok(c".".to_owned());
    }
    let mut path = Vec::new();
    for (i, c) in rel.iter().enumerate() {
        if i > 0 {
            path.push(b'/');
        }
        path.extend_from_slice(c);
    }
    CString::new(path).map_err(|_| Errno(libc::EINVAL))
}

fn qid_type(mode: u32) -> u8 {
    match mode & libc::S_IFMT {
        libc::S_IFDIR => QTDIR,
        libc::S_IFLNK => QTSYMLINK,
        _ => QTFILE,
    }
}

/// Qid type for a `DT_*` directory-entry type.
pub(crate) fn qid_type_of_dt(dt: u8) -> u8 {
    match dt {
        libc::DT_DIR => QTDIR,
        libc::DT_LNK => QTSYMLINK,
        _ => QTFILE,
    }
}

fn split_guest(guest: &str) -> Result<Vec<Vec<u8>>, GatewayError> {
    if !guest.starts_with('/') {
        return Err(GatewayError::BadGuestPath(guest.to_owned()));
    }
    let mut parts = Vec::new();
    for comp in guest.split('/').skip(1) {
        if comp.is_empty() && guest == "/" {
            break;
        }
        if comp.is_empty() || comp == "." || comp == ".." || comp.contains('\0') {
            return Err(GatewayError::BadGuestPath(guest.to_owned()));
        }
        parts.push(comp.as_bytes().to_vec());
    }
    Ok(parts)
}

impl Namespace {
    pub(crate) fn new(cfg: &GatewayConfig) -> Result<Namespace, GatewayError> {
        let mut vdirs = vec![VDir {
            parent: 0,
            children: BTreeMap::new(),
            backing: None,
        }];
        // A read-only export inside a writable export's host directory is
        // writable through the writable one (a symlink made there reaches
        // it): said at start, since the guest can do it.
        for ro in cfg.exports.iter().filter(|e| e.read_only) {
            for rw in cfg.exports.iter().filter(|e| !e.read_only) {
                if ro.host.starts_with(&rw.host) {
                    tracing::warn!(
                        read_only = %ro.host.display(),
                        writable = %rw.host.display(),
                        "a read-only export lies inside a writable one: the partition can change it through the writable export"
                    );
                }
            }
        }
        let mut exports = Vec::new();
        for Export {
            host,
            guest,
            read_only,
        } in &cfg.exports
        {
            let parts = split_guest(guest)?;
            let vdir = make_vdir(&mut vdirs, &parts)?;
            let slot = vdirs
                .get_mut(vdir)
                .ok_or_else(|| GatewayError::BadGuestPath(guest.clone()))?;
            if slot.backing.is_some() {
                return Err(GatewayError::DuplicateExport(guest.clone()));
            }
            slot.backing = Some(exports.len());
            let cpath = CString::new(host.as_os_str().as_bytes()).map_err(|_| {
                GatewayError::ExportOpen {
                    path: host.clone(),
                    source: std::io::Error::from_raw_os_error(libc::EINVAL),
                }
            })?;
            let fd = sys::open_dir_path(&cpath).map_err(|e| GatewayError::ExportOpen {
                path: host.clone(),
                source: std::io::Error::from_raw_os_error(e.0),
            })?;
            tracing::info!(
                host = %host.display(),
                guest = %guest,
                read_only,
                "export"
            );
            exports.push(ExportRoot {
                host: host.clone(),
                fd,
                read_only: *read_only,
                vdir,
            });
        }
        if cfg.console {
            let dev = make_vdir(&mut vdirs, &[b"dev".to_vec()])?;
            if let Some(d) = vdirs.get_mut(dev) {
                if d.children.contains_key(b"cons".as_slice()) {
                    tracing::warn!("an export is mounted at /dev/cons: the console is not served");
                } else {
                    d.children.insert(b"cons".to_vec(), Child::Cons);
                }
            }
        }
        let env_parent = 0;
        if let Some(root) = vdirs.get_mut(env_parent) {
            if root.children.contains_key(b"env".as_slice()) {
                tracing::warn!("an export is mounted at /env: the environment is not served");
            } else {
                root.children.insert(b"env".to_vec(), Child::Env);
            }
        }
        let mut net = None;
        if cfg.net
            && let Some(root) = vdirs.get_mut(0)
        {
            if root.children.contains_key(b"net".as_slice()) {
                tracing::warn!("an export is mounted at /net: the network is not served");
            } else {
                root.children.insert(b"net".to_vec(), Child::Net);
                net = Some(Net::new(Arc::clone(&cfg.net_policy)));
            }
        }
        let mut env: Vec<(Vec<u8>, Arc<[u8]>)> = Vec::new();
        for (k, v) in &cfg.env {
            let name = k.as_bytes();
            if check_name(name).is_err() || env.iter().any(|(n, _)| n == name) {
                tracing::warn!(name = %k, "environment variable not served under /env");
                continue;
            }
            env.push((name.to_vec(), Arc::from(v.as_bytes())));
        }
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let (uid, gid) = sys::ids();
        Ok(Namespace {
            exports,
            vdirs,
            env,
            env_parent,
            net,
            devs: Mutex::new(HashMap::new()),
            start: (now.as_secs(), u64::from(now.subsec_nanos())),
            uid,
            gid,
        })
    }

    fn export(&self, e: usize) -> Result<&ExportRoot, Errno> {
        self.exports.get(e).ok_or(Errno(libc::EIO))
    }

    pub(crate) fn net(&self) -> Result<&Net, Errno> {
        self.net.as_ref().ok_or(Errno(libc::ENOENT))
    }

    fn vdir(&self, i: usize) -> Result<&VDir, Errno> {
        self.vdirs.get(i).ok_or(Errno(libc::EIO))
    }

    /// Whether the export `e` is read-only.
    pub(crate) fn read_only(&self, e: usize) -> bool {
        self.exports.get(e).is_none_or(|x| x.read_only)
    }

    /// The export and relative path of a node backed by a host directory or
    /// file (an export root has an empty path).
    pub(crate) fn host<'n>(&self, node: &'n Node) -> Option<(usize, &'n [Vec<u8>])> {
        match node {
            Node::Host { export, rel } => Some((*export, rel.as_slice())),
            Node::VDir(i) => self.vdirs.get(*i)?.backing.map(|e| (e, &[][..])),
            _ => None,
        }
    }

    /// Whether `name` in directory `node` is a mount point or synthetic file
    /// (which hides any host file of that name and may not be changed).
    pub(crate) fn is_mount_child(&self, node: &Node, name: &[u8]) -> bool {
        match node {
            Node::VDir(i) => self
                .vdirs
                .get(*i)
                .is_some_and(|d| d.children.contains_key(name)),
            _ => false,
        }
    }

    /// `openat2` beneath export `e`.
    pub(crate) fn open(
        &self,
        e: usize,
        rel: &[Vec<u8>],
        flags: i32,
        mode: u32,
    ) -> Result<OwnedFd, Errno> {
        let root = self.export(e)?;
        sys::openat2(root.fd.as_fd(), &rel_cstring(rel)?, flags, mode)
    }

    /// An `O_PATH` descriptor of the directory `rel` of export `e`.
    pub(crate) fn dir_fd(&self, e: usize, rel: &[Vec<u8>]) -> Result<OwnedFd, Errno> {
        self.open(e, rel, libc::O_PATH | libc::O_DIRECTORY, 0)
    }

    /// The parent directory (as an `O_PATH` descriptor) and last component of
    /// `rel`; the export root itself is `(root, ".")`.
    pub(crate) fn parent_and_name(
        &self,
        e: usize,
        rel: &[Vec<u8>],
    ) -> Result<(OwnedFd, CString), Errno> {
        match rel.split_last() {
            None => Ok((self.dir_fd(e, &[])?, c".".to_owned())),
            Some((last, parent)) => Ok((
                self.dir_fd(e, parent)?,
                CString::new(last.as_slice()).map_err(|_| Errno(libc::EINVAL))?,
            )),
        }
    }

    /// `lstat` of a host file, confined to its export.
    pub(crate) fn lstat(&self, e: usize, rel: &[Vec<u8>]) -> Result<libc::stat, Errno> {
        if rel.is_empty() {
            return sys::fstat(self.export(e)?.fd.as_fd());
        }
        let fd = self.open(e, rel, libc::O_PATH | libc::O_NOFOLLOW, 0)?;
        sys::fstat(fd.as_fd())
    }

    /// The qid path of `(dev, ino)`: the inode number, with the device's
    /// ordinal folded into the top 16 bits so two file systems never clash.
    pub(crate) fn qid_path(&self, dev: u64, ino: u64) -> u64 {
        let mut devs = lock(&self.devs);
        let next = devs.len() as u64;
        let ordinal = *devs.entry(dev).or_insert(next);
        ino ^ ((ordinal & 0x7FFF) << 48)
    }

    pub(crate) fn qid_of_stat(&self, st: &libc::stat) -> Qid {
        Qid {
            ty: qid_type(st.st_mode),
            version: 0,
            path: self.qid_path(st.st_dev, st.st_ino),
        }
    }

    /// The qid of any node.
    pub(crate) fn qid(&self, node: &Node) -> Result<Qid, Errno> {
        if let Some((e, rel)) = self.host(node) {
            return Ok(self.qid_of_stat(&self.lstat(e, rel)?));
        }
        if let Some(st) = self.between_mounts(node) {
            return Ok(self.qid_of_stat(&st));
        }
        Ok(match node {
            Node::VDir(i) => Qid {
                ty: QTDIR,
                version: 0,
                path: SYNTH | *i as u64,
            },
            Node::Cons => Qid {
                ty: QTFILE,
                version: 0,
                path: SYNTH_CONS,
            },
            Node::EnvDir => Qid {
                ty: QTDIR,
                version: 0,
                path: SYNTH_ENV_DIR,
            },
            Node::EnvVar(i) => Qid {
                ty: QTFILE,
                version: 0,
                path: SYNTH_ENV_VAR | *i as u64,
            },
            Node::Net(n) => n.qid(),
            Node::Host { .. } => return Err(Errno(libc::EIO)),
        })
    }

    /// The parent directory of a directory node (the root is its own parent).
    pub(crate) fn parent(&self, node: &Node) -> Result<Node, Errno> {
        match node {
            Node::VDir(i) => Ok(Node::VDir(self.vdir(*i)?.parent)),
            Node::Host { export, rel } => match rel.split_last() {
                Some((_, parent)) if !parent.is_empty() => Ok(Node::Host {
                    export: *export,
                    rel: parent.to_vec(),
                }),
                _ => Ok(Node::VDir(self.export(*export)?.vdir)),
            },
            Node::EnvDir => Ok(Node::VDir(self.env_parent)),
            // /net is always at the root.
            Node::Net(n) => Ok(n.parent()?.map_or(Node::VDir(0), Node::Net)),
            Node::Cons | Node::EnvVar(_) => Err(Errno(libc::ENOTDIR)),
        }
    }

    /// For a synthetic directory that only holds a deeper mount point (no
    /// export of its own) and is a directory of the enclosing export, that
    /// directory's attributes: it is the host's, as the directory under a
    /// bind mount's mount point is on Linux (its inode, owner, mode, times).
    pub(crate) fn between_mounts(&self, node: &Node) -> Option<libc::stat> {
        let Node::VDir(i) = node else { return None };
        if self.vdirs.get(*i)?.backing.is_some() {
            return None;
        }
        let (e, rel) = self.underlying(*i)?;
        let st = self.lstat(e, &rel).ok()?;
        (st.st_mode & libc::S_IFMT == libc::S_IFDIR).then_some(st)
    }

    /// The host directory behind synthetic directory `i`: its own export, or
    /// for a directory that exists only to hold a deeper mount point, the
    /// same path in the nearest enclosing export (so mounting the current
    /// directory at `/tmp/work` does not hide the rest of the host's `/tmp`).
    pub(crate) fn underlying(&self, i: usize) -> Option<(usize, Vec<Vec<u8>>)> {
        let mut rel = Vec::new();
        let mut cur = i;
        loop {
            let d = self.vdirs.get(cur)?;
            if let Some(e) = d.backing {
                rel.reverse();
                return Some((e, rel));
            }
            if cur == 0 {
                return None;
            }
            let parent = d.parent;
            let name = self
                .vdirs
                .get(parent)?
                .children
                .iter()
                .find(|(_, c)| **c == Child::Dir(cur))?
                .0
                .clone();
            rel.push(name);
            cur = parent;
        }
    }

    /// One step of a walk: the node called `name` in directory `dir`, and its qid.
    pub(crate) fn lookup(&self, dir: &Node, name: &[u8]) -> Result<(Node, Qid), Errno> {
        if name.is_empty() || name.contains(&b'/') || name.contains(&0) {
            return Err(Errno(libc::EINVAL));
        }
        let node = match name {
            b"." => dir.clone(),
            b".." => self.parent(dir)?,
            _ => match dir {
                Node::VDir(i) => {
                    let d = self.vdir(*i)?;
                    match d.children.get(name) {
                        Some(Child::Dir(j)) => Node::VDir(*j),
                        Some(Child::Cons) => Node::Cons,
                        Some(Child::Env) => Node::EnvDir,
                        Some(Child::Net) => Node::Net(NetNode::Root),
                        None => match self.underlying(*i) {
                            Some((export, mut rel)) => {
                                rel.push(name.to_vec());
                                Node::Host { export, rel }
                            }
                            None => return Err(Errno(libc::ENOENT)),
                        },
                    }
                }
                Node::Host { export, rel } => {
                    let mut rel = rel.clone();
                    rel.push(name.to_vec());
                    Node::Host {
                        export: *export,
                        rel,
                    }
                }
                Node::EnvDir => Node::EnvVar(
                    self.env
                        .iter()
                        .position(|(n, _)| n == name)
                        .ok_or(Errno(libc::ENOENT))?,
                ),
                Node::Net(n) => Node::Net(self.net()?.lookup(*n, name)?),
                Node::Cons | Node::EnvVar(_) => return Err(Errno(libc::ENOTDIR)),
            },
        };
        let qid = self.qid(&node)?;
        Ok((node, qid))
    }

    /// The attributes of a node for `Rgetattr`.
    pub(crate) fn getattr(&self, node: &Node) -> Result<Stat, Errno> {
        if let Some((e, rel)) = self.host(node) {
            let path_fd;
            let fd = if rel.is_empty() {
                self.export(e)?.fd.as_fd()
            } else {
                path_fd = self.open(e, rel, libc::O_PATH | libc::O_NOFOLLOW, 0)?;
                path_fd.as_fd()
            };
            return Ok(self.stat_with_btime(&sys::fstat(fd)?, fd));
        }
        if let Node::VDir(i) = node
            && self.between_mounts(node).is_some()
            && let Some((e, rel)) = self.underlying(*i)
        {
            let fd = self.open(e, &rel, libc::O_PATH | libc::O_NOFOLLOW, 0)?;
            return Ok(self.stat_with_btime(&sys::fstat(fd.as_fd())?, fd.as_fd()));
        }
        let (mode, size, nlink) = match node {
            Node::VDir(i) => (
                libc::S_IFDIR | 0o555,
                0,
                2 + self
                    .vdir(*i)?
                    .children
                    .values()
                    .filter(|c| !matches!(c, Child::Cons))
                    .count() as u64,
            ),
            Node::Net(n) => {
                let (mode, nlink) = n.mode();
                (mode, 0, nlink)
            }
            Node::EnvDir => (libc::S_IFDIR | 0o555, 0, 2),
            Node::Cons => (libc::S_IFREG | 0o666, 0, 1),
            Node::EnvVar(i) => (
                libc::S_IFREG | 0o444,
                self.env.get(*i).map_or(0, |(_, v)| v.len() as u64),
                1,
            ),
            Node::Host { .. } => return Err(Errno(libc::EIO)),
        };
        let (sec, nsec) = self.start;
        Ok(Stat {
            valid: P9_GETATTR_BASIC,
            qid: self.qid(node)?,
            mode,
            uid: self.uid,
            gid: self.gid,
            nlink,
            rdev: 0,
            size,
            blksize: 4096,
            blocks: size.div_ceil(512),
            atime_sec: sec,
            atime_nsec: nsec,
            mtime_sec: sec,
            mtime_nsec: nsec,
            ctime_sec: sec,
            ctime_nsec: nsec,
            ..Stat::default()
        })
    }

    /// `stat_of`, with the birth time of `fd`'s file when its file system
    /// keeps one (`Rgetattr`'s `btime`, which `statx` and Java's
    /// `creationTime()` give programs).
    pub(crate) fn stat_with_btime(&self, st: &libc::stat, fd: BorrowedFd<'_>) -> Stat {
        let mut stat = self.stat_of(st);
        if let Some((sec, nsec)) = sys::btime(fd) {
            stat.valid |= P9_GETATTR_BTIME;
            stat.btime_sec = sec;
            stat.btime_nsec = nsec;
        }
        stat
    }

    pub(crate) fn stat_of(&self, st: &libc::stat) -> Stat {
        Stat {
            valid: P9_GETATTR_BASIC,
            qid: self.qid_of_stat(st),
            mode: st.st_mode,
            uid: st.st_uid,
            gid: st.st_gid,
            nlink: st.st_nlink,
            rdev: st.st_rdev,
            size: st.st_size.cast_unsigned(),
            blksize: st.st_blksize.cast_unsigned(),
            blocks: st.st_blocks.cast_unsigned(),
            atime_sec: st.st_atime.cast_unsigned(),
            atime_nsec: st.st_atime_nsec.cast_unsigned(),
            mtime_sec: st.st_mtime.cast_unsigned(),
            mtime_nsec: st.st_mtime_nsec.cast_unsigned(),
            ctime_sec: st.st_ctime.cast_unsigned(),
            ctime_nsec: st.st_ctime_nsec.cast_unsigned(),
            ..Stat::default()
        }
    }

    /// File-system statistics for `Rstatfs`.
    pub(crate) fn statfs(&self, node: &Node) -> Result<StatFs, Errno> {
        let Some((e, rel)) = self.host(node) else {
            return Ok(StatFs {
                ty: V9FS_MAGIC,
                bsize: 4096,
                namelen: 255,
                ..StatFs::default()
            });
        };
        let st = if rel.is_empty() {
            sys::fstatfs(self.export(e)?.fd.as_fd())?
        } else {
            let fd = self.open(e, rel, libc::O_PATH | libc::O_NOFOLLOW, 0)?;
            sys::fstatfs(fd.as_fd())?
        };
        Ok(StatFs {
            ty: st.f_type as u32,
            bsize: st.f_bsize as u32,
            blocks: st.f_blocks,
            bfree: st.f_bfree,
            bavail: st.f_bavail,
            files: st.f_files,
            ffree: st.f_ffree,
            fsid: e as u64,
            namelen: st.f_namelen as u32,
        })
    }
}

/// Finds or creates the chain of synthetic directories for `parts`.
fn make_vdir(vdirs: &mut Vec<VDir>, parts: &[Vec<u8>]) -> Result<usize, GatewayError> {
    let mut cur = 0;
    for part in parts {
        let next = vdirs.len();
        let dir = vdirs
            .get_mut(cur)
            .ok_or_else(|| GatewayError::InvalidConfig("namespace".into()))?;
        cur = match dir.children.get(part) {
            Some(Child::Dir(j)) => *j,
            Some(_) => {
                return Err(GatewayError::InvalidConfig(format!(
                    "guest path component {:?} clashes with a synthetic file",
                    String::from_utf8_lossy(part)
                )));
            }
            None => {
                dir.children.insert(part.clone(), Child::Dir(next));
                vdirs.push(VDir {
                    parent: cur,
                    children: BTreeMap::new(),
                    backing: None,
                });
                next
            }
        };
    }
    Ok(cur)
}
