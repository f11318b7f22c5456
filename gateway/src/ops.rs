//! The request handlers: one function per 9P2000.L message.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::AsFd;
use std::os::unix::fs::FileExt;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use astraea_9p::consts::*;
use astraea_9p::{
    DirEntry, DirEntryWriter, Flock, Getlock, Qid, RMessage, SetAttr, Str, TMessage, WalkNames,
    WalkQids, encode_rread_header,
};

use crate::console::{Cancel, lock};
use crate::error::Errno;
use crate::namespace::{Child, Namespace, Node, check_name, qid_type_of_dt};
use crate::net::{ConvFile, ConvRef, NetNode, Wait};
use crate::session::{Fid, SessionInner, lerror};
use crate::sys::{self, TimeSpec};

/// The smallest msize a client may negotiate.
pub const MIN_MSIZE: u32 = 512;

/// An opened fid.
pub(crate) enum Opened {
    /// A host file or directory.
    Host {
        file: File,
        dir: bool,
        /// A regular file (its reads and writes never wait for anyone).
        regular: bool,
        writable: bool,
        /// Serialises `lseek` + `getdents64` on directories.
        cursor: Mutex<()>,
    },
    /// A synthetic directory (possibly merged with an export root) or
    /// `/env`: listed from a snapshot taken when a read starts at offset 0.
    Listing(Mutex<Vec<ListEntry>>),
    /// `/dev/cons`.
    Cons,
    /// A file of a `/net/tcp` connection (`clone` and `listen` open as
    /// the new connection's `ctl`).
    Net { conv: ConvRef, file: ConvFile },
    /// An `/env` file, or an extended attribute's value (`Txattrwalk`).
    Bytes(Arc<[u8]>),
    /// An extended attribute being written (`Txattrcreate`): applied to
    /// the fid's file when the fid is clunked.
    XattrWrite {
        name: CString,
        /// `None`: the attribute is removed.
        value: Option<Mutex<Vec<u8>>>,
        flags: i32,
    },
}

/// One entry of a synthetic directory listing.
pub(crate) struct ListEntry {
    qid: Qid,
    ty: u8,
    name: Vec<u8>,
}

type Res = Result<Vec<u8>, Errno>;

/// What handling a request gave: its reply, or a `/net` request that waits
/// without a thread (the session parks it).
pub(crate) enum Handled {
    Frame(Vec<u8>),
    Wait(Wait),
}

/// What opening a `/net` file gives.
enum NetOpen {
    Now(Opened, NetNode),
    /// `listen`: the announced connection, to wait for a call on.
    Listen(ConvRef),
}

/// A request handler's result: a reply, or a wait.
enum Step {
    Done(Vec<u8>),
    Wait(Wait),
}

fn errno(e: i32) -> Errno {
    Errno(e)
}

fn encode(tag: u16, msg: &RMessage<'_>) -> Res {
    let mut out = Vec::new();
    msg.encode(tag, &mut out).map_err(|_| errno(libc::EIO))?;
    Ok(out)
}

fn dt_of_qid(qid: &Qid) -> u8 {
    if qid.ty & QTDIR != 0 {
        DT_DIR
    } else if qid.ty & QTSYMLINK != 0 {
        DT_LNK
    } else {
        DT_REG
    }
}

/// Maps `Tlopen`/`Tlcreate` flags to host `open` flags.
fn open_flags(p9: u32) -> Result<i32, Errno> {
    let mut flags = match p9 & P9_DOTL_ACCMODE {
        P9_DOTL_RDONLY => libc::O_RDONLY,
        P9_DOTL_WRONLY => libc::O_WRONLY,
        P9_DOTL_RDWR => libc::O_RDWR,
        _ => return Err(errno(libc::EINVAL)),
    };
    // P9_DOTL_APPEND is not passed on: every Twrite carries its offset
    // (the client puts appends at the end), and on a host descriptor with
    // O_APPEND Linux's pwrite ignores the offset, so a client that clears
    // O_APPEND later (fcntl F_SETFL) would still append.
    for (bit, flag) in [
        (P9_DOTL_TRUNC, libc::O_TRUNC),
        (P9_DOTL_NONBLOCK, libc::O_NONBLOCK),
        (P9_DOTL_DSYNC, libc::O_DSYNC),
        (P9_DOTL_DIRECTORY, libc::O_DIRECTORY),
        (P9_DOTL_NOFOLLOW, libc::O_NOFOLLOW),
        (P9_DOTL_SYNC, libc::O_SYNC),
        (P9_DOTL_EXCL, libc::O_EXCL),
    ] {
        if p9 & bit != 0 {
            flags |= flag;
        }
    }
    Ok(flags)
}

fn wants_write(p9: u32) -> bool {
    p9 & P9_DOTL_ACCMODE != P9_DOTL_RDONLY || p9 & P9_DOTL_TRUNC != 0
}

fn retry_io<T>(mut f: impl FnMut() -> io::Result<T>) -> Result<T, Errno> {
    loop {
        match f() {
            Ok(v) => return Ok(v),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// One `linux_dirent64` record.
struct RawDirent<'a> {
    ino: u64,
    off: i64,
    ty: u8,
    name: &'a [u8],
}

/// Iterates the records `getdents64` wrote into a buffer (never panics).
struct Dirents<'a> {
    buf: &'a [u8],
}

impl<'a> Iterator for Dirents<'a> {
    type Item = RawDirent<'a>;

    fn next(&mut self) -> Option<RawDirent<'a>> {
        let head = self.buf.get(..19)?;
        let ino = u64::from_ne_bytes(head.get(0..8)?.try_into().ok()?);
        let off = i64::from_ne_bytes(head.get(8..16)?.try_into().ok()?);
        let reclen = usize::from(u16::from_ne_bytes(head.get(16..18)?.try_into().ok()?));
        let ty = *head.get(18)?;
        let rec = self.buf.get(..reclen).filter(|_| reclen >= 19)?;
        let name = rec.get(19..)?;
        let name = name.split(|&b| b == 0).next().unwrap_or_default();
        self.buf = self.buf.get(reclen..).unwrap_or_default();
        Some(RawDirent { ino, off, ty, name })
    }
}

/// Bytes of a parked `/net` write, counted in the session's budget while
/// this lives (dropped with the reply, or with the request if cancelled).
struct ParkedBytes(Arc<std::sync::atomic::AtomicUsize>, usize);

impl ParkedBytes {
    fn take(total: &Arc<std::sync::atomic::AtomicUsize>, n: usize) -> Result<Self, Errno> {
        let before = total.fetch_add(n, Ordering::AcqRel);
        if before + n > crate::session::MAX_PARKED_BYTES {
            total.fetch_sub(n, Ordering::AcqRel);
            tracing::debug!(n, before, "parked /net writes over budget");
            return Err(errno(libc::EAGAIN));
        }
        Ok(Self(Arc::clone(total), n))
    }
}

impl Drop for ParkedBytes {
    fn drop(&mut self) {
        self.0.fetch_sub(self.1, Ordering::AcqRel);
    }
}

impl SessionInner {
    fn ns(&self) -> &Namespace {
        &self.gw.ns
    }

    fn msize_now(&self) -> u32 {
        self.msize.load(Ordering::Acquire)
    }

    /// Largest `Rread`/`Rreaddir` payload for a request of `count` bytes.
    fn payload_limit(&self, count: u32) -> u32 {
        let room = self.msize_now().saturating_sub(RREAD_HEADER_LEN as u32);
        count.min(room)
    }

    /// The `iounit` of `Rlopen`/`Rlcreate`: `msize - IOHDRSZ`, which is what
    /// Linux uses for 0 anyway, and which keeps clients that read "0" as
    /// "msize" (py9p/p9fs) from sending `Twrite`s larger than msize.
    fn iounit(&self) -> u32 {
        self.msize_now().saturating_sub(IOHDRSZ)
    }

    fn fid(&self, fid: u32) -> Result<Arc<Fid>, Errno> {
        lock(&self.fids)
            .get(&fid)
            .cloned()
            .ok_or(errno(libc::EBADF))
    }

    fn add_fid(&self, fid: u32, node: Node) -> Result<(), Errno> {
        let mut fids = lock(&self.fids);
        if fid == NOFID {
            return Err(errno(libc::EBADF));
        }
        if fids.contains_key(&fid) {
            return Err(errno(libc::EEXIST));
        }
        if fids.len() >= self.gw.max_fids {
            tracing::debug!(fid, "fid limit reached");
            return Err(errno(libc::EMFILE));
        }
        fids.insert(fid, Arc::new(Fid::new(node)));
        Ok(())
    }

    /// [`writable_dir`](Self::writable_dir) for a request that makes `name`
    /// in it: as Linux's `filename_create`, an existing name is `EEXIST`
    /// before a read-only export is `EROFS`.
    fn creatable_dir(&self, node: &Node, name: &CString) -> Result<(usize, Vec<Vec<u8>>), Errno> {
        let r = self.writable_dir(node);
        if r == Err(errno(libc::EROFS))
            && let Some((e, rel)) = self.dir_host(node)
            && let Ok(dir) = self.ns().dir_fd(e, &rel)
            && sys::fstatat_nofollow(dir.as_fd(), name).is_ok()
        {
            return Err(errno(libc::EEXIST));
        }
        r
    }

    /// The host directory whose entries a directory node shows: an
    /// export's, or for a synthetic directory that only holds a deeper
    /// mount point, the same directory of the enclosing export if it has
    /// one (the current directory mounted at `/tmp/a/work` leaves `/tmp/a`
    /// the host's, as a bind mount on Linux does: files are made there as
    /// in any other).
    fn dir_host(&self, node: &Node) -> Option<(usize, Vec<Vec<u8>>)> {
        match node {
            Node::VDir(i) if self.ns().host(node).is_none() => self
                .ns()
                .between_mounts(node)
                .and_then(|_| self.ns().underlying(*i)),
            _ => self.ns().host(node).map(|(e, rel)| (e, rel.to_vec())),
        }
    }

    /// The export and path of a directory whose contents a request changes.
    fn writable_dir(&self, node: &Node) -> Result<(usize, Vec<Vec<u8>>), Errno> {
        match self.dir_host(node) {
            Some((e, rel)) => {
                if self.ns().read_only(e) {
                    Err(errno(libc::EROFS))
                } else {
                    Ok((e, rel))
                }
            }
            None => Err(errno(match node {
                Node::VDir(_) | Node::EnvDir => libc::EROFS,
                Node::Net(n) if n.is_dir() => libc::EROFS,
                _ => libc::ENOTDIR,
            })),
        }
    }

    /// Handles one request frame: one reply frame, or a [`Wait`] whose
    /// [`Finish`](crate::net::Finish) gives it later (see [`answer`](Self::answer)).
    pub(crate) fn handle(&self, frame: &[u8], tag: u16, cancel: &Cancel) -> Handled {
        let msg = match TMessage::from_bytes(frame) {
            Ok((_, msg)) => msg,
            Err(e) => {
                tracing::debug!(tag, "undecodable request: {e}");
                cancel.release_order();
                return Handled::Frame(lerror(tag, errno(libc::EINVAL)));
            }
        };
        if cancel.is_cancelled() {
            cancel.release_order();
            return Handled::Frame(lerror(tag, errno(libc::EINTR)));
        }
        tracing::trace!(tag, ?msg, "request");
        let out = match self.dispatch(tag, msg, cancel) {
            Ok(Step::Done(out)) => Handled::Frame(self.answer(tag, Ok(out))),
            Ok(Step::Wait(w)) => Handled::Wait(w),
            Err(e) => Handled::Frame(self.answer(tag, Err(e))),
        };
        // A socket read that failed before reaching its socket gives up its
        // place in the connection's order (one that did took it).
        cancel.release_order();
        out
    }

    /// The reply frame for a handler's result (now, or after a wait).
    pub(crate) fn answer(&self, tag: u16, res: Res) -> Vec<u8> {
        match res {
            Ok(out) if out.len() <= self.msize_now() as usize => out,
            Ok(_) => lerror(tag, errno(libc::EMSGSIZE)),
            Err(e) => {
                tracing::debug!(tag, "error: {e}");
                lerror(tag, e)
            }
        }
    }

    fn dispatch(&self, tag: u16, msg: TMessage<'_>, cancel: &Cancel) -> Result<Step, Errno> {
        use TMessage as T;
        // The only requests that may wait for the network.
        match msg {
            T::Lopen { fid, flags } => self.lopen(tag, fid, flags),
            T::Read { fid, offset, count } => self.read(tag, fid, offset, count, cancel),
            T::Write { fid, offset, data } => self.write(tag, fid, offset, data, cancel),
            msg => self.dispatch_now(tag, msg).map(Step::Done),
        }
    }

    fn dispatch_now(&self, tag: u16, msg: TMessage<'_>) -> Res {
        use TMessage as T;
        match msg {
            // Handled by `dispatch`.
            T::Lopen { .. } | T::Read { .. } | T::Write { .. } => Err(errno(libc::EIO)),
            T::Version { msize, version } => self.version(tag, msize, version),
            T::Auth { .. } => Err(errno(libc::ENOENT)),
            T::Attach { fid, aname, .. } => self.attach(tag, fid, aname),
            T::Flush { .. } => encode(tag, &RMessage::Flush),
            T::Walk { fid, newfid, names } => self.walk(tag, fid, newfid, names),
            T::Lcreate {
                fid,
                name,
                flags,
                mode,
                ..
            } => self.lcreate(tag, fid, name, flags, mode),
            T::Clunk { fid } => {
                let f = lock(&self.fids).remove(&fid).ok_or(errno(libc::EBADF))?;
                self.apply_xattr(&f)?;
                encode(tag, &RMessage::Clunk)
            }
            T::Remove { fid } => self.remove(tag, fid),
            T::Getattr { fid, .. } => self.getattr(tag, fid),
            T::Setattr { fid, attr } => self.setattr(tag, fid, &attr),
            T::Statfs { fid } => {
                let node = self.fid(fid)?.node();
                let statfs = self.ns().statfs(&node)?;
                encode(tag, &RMessage::Statfs { statfs })
            }
            T::Readdir { fid, offset, count } => self.readdir(tag, fid, offset, count),
            T::Readlink { fid } => self.readlink(tag, fid),
            T::Symlink {
                fid, name, target, ..
            } => self.symlink(tag, fid, name, target),
            T::Mknod {
                dfid, name, mode, ..
            } => self.mknod(tag, dfid, name, mode),
            T::Mkdir {
                dfid, name, mode, ..
            } => self.mkdir(tag, dfid, name, mode),
            T::Link { dfid, fid, name } => self.link(tag, dfid, fid, name),
            T::Rename { fid, dfid, name } => self.rename(tag, fid, dfid, name),
            T::Renameat {
                olddirfid,
                oldname,
                newdirfid,
                newname,
            } => self.renameat(tag, olddirfid, oldname, newdirfid, newname),
            T::Unlinkat {
                dirfid,
                name,
                flags,
            } => self.unlinkat(tag, dirfid, name, flags),
            T::Fsync { fid, datasync } => {
                let f = self.fid(fid)?;
                if let Ok(opened) = f.opened()
                    && let Opened::Host { file, .. } = &*opened
                {
                    if datasync != 0 {
                        retry_io(|| file.sync_data())?;
                    } else {
                        retry_io(|| file.sync_all())?;
                    }
                }
                encode(tag, &RMessage::Fsync)
            }
            T::Lock { fid, lock } => self.lock(tag, fid, &lock),
            T::Getlock { fid, lock } => self.getlock(tag, fid, &lock),
            T::Xattrwalk { fid, newfid, name } => self.xattrwalk(tag, fid, newfid, name),
            T::Xattrcreate {
                fid,
                name,
                attr_size,
                flags,
            } => self.xattrcreate(tag, fid, name, attr_size, flags),
        }
    }

    fn version(&self, tag: u16, msize: u32, version: Str<'_>) -> Res {
        self.reset();
        if msize < MIN_MSIZE {
            return Err(errno(libc::EINVAL));
        }
        let msize = msize.min(self.gw.max_msize);
        self.msize.store(msize, Ordering::Release);
        let version = if version.as_bytes().starts_with(VERSION_9P2000L.as_bytes()) {
            VERSION_9P2000L
        } else {
            VERSION_UNKNOWN
        };
        tracing::debug!(msize, version, "Tversion");
        encode(
            tag,
            &RMessage::Version {
                msize,
                version: Str::from(version),
            },
        )
    }

    fn attach(&self, tag: u16, fid: u32, aname: Str<'_>) -> Res {
        let mut node = Node::VDir(0);
        for comp in aname.as_bytes().split(|&b| b == b'/') {
            if !comp.is_empty() {
                node = self.ns().lookup(&node, comp)?.0;
            }
        }
        let qid = self.ns().qid(&node)?;
        self.add_fid(fid, node)?;
        encode(tag, &RMessage::Attach { qid })
    }

    fn walk(&self, tag: u16, fid: u32, newfid: u32, names: WalkNames<'_>) -> Res {
        let src = self.fid(fid)?;
        let mut node = src.node();
        let mut qids = Vec::with_capacity(names.len());
        for (i, name) in names.iter().enumerate() {
            match self.ns().lookup(&node, name.as_bytes()) {
                Ok((next, qid)) => {
                    node = next;
                    qids.push(qid);
                }
                Err(e) if i == 0 => return Err(e),
                Err(_) => {
                    let qids = WalkQids::new(&qids).map_err(|_| errno(libc::EIO))?;
                    return encode(tag, &RMessage::Walk { qids });
                }
            }
        }
        if newfid == fid {
            // Under the `open` lock: an open racing this sees either the
            // old node or the new one, never opens one and keeps the other
            // (see `set_open_at`).
            let open = lock(&src.open);
            if open.is_some() {
                return Err(errno(libc::EBUSY));
            }
            *lock(&src.node) = node;
            drop(open);
        } else {
            self.add_fid(newfid, node)?;
        }
        let qids = WalkQids::new(&qids).map_err(|_| errno(libc::EIO))?;
        encode(tag, &RMessage::Walk { qids })
    }

    fn set_open(fid: &Fid, opened: Opened) -> Result<(), Errno> {
        let mut slot = lock(&fid.open);
        if slot.is_some() {
            return Err(errno(libc::EBUSY));
        }
        *slot = Some(Arc::new(opened));
        Ok(())
    }

    /// [`set_open`](Self::set_open), if the fid still names `node`, the
    /// node the caller checked and opened: a `Twalk` of the same fid that
    /// ran meanwhile (it changes the node under the `open` lock) must not
    /// leave it naming one file, in a writable export, while it has another
    /// open, from a read-only one (`Tsetattr` checks the node, then changes
    /// the open file).
    fn set_open_at(fid: &Fid, opened: Opened, node: &Node) -> Result<(), Errno> {
        let mut slot = lock(&fid.open);
        if slot.is_some() || *lock(&fid.node) != *node {
            return Err(errno(libc::EBUSY));
        }
        *slot = Some(Arc::new(opened));
        Ok(())
    }

    fn lopen(&self, tag: u16, fid: u32, flags: u32) -> Result<Step, Errno> {
        let f = self.fid(fid)?;
        if lock(&f.open).is_some() {
            return Err(errno(libc::EBUSY));
        }
        let node = f.node();
        let write = wants_write(flags);
        let (opened, qid) = match &node {
            Node::Host { export, rel } => {
                if write && self.ns().read_only(*export) {
                    // Linux's order: a directory opened for writing is
                    // EISDIR, a non-directory with O_DIRECTORY ENOTDIR,
                    // and only then is the mount read-only.
                    let st = self
                        .ns()
                        .open(*export, rel, libc::O_PATH, 0)
                        .and_then(|fd| sys::fstat(fd.as_fd()));
                    let dir = st.is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFDIR);
                    if dir {
                        return Err(errno(libc::EISDIR));
                    }
                    if st.is_ok() && flags & P9_DOTL_DIRECTORY != 0 {
                        return Err(errno(libc::ENOTDIR));
                    }
                    return Err(errno(libc::EROFS));
                }
                let oflags = open_flags(flags)? & !libc::O_EXCL;
                // Never a blocking open: a FIFO without a writer (or reader)
                // would hold this worker for ever, and a guest opening many
                // would stop the gateway for every partition. The flag goes
                // again unless the client asked for it (a FIFO opened for
                // writing with no reader then fails with ENXIO rather than
                // waiting).
                let fd = self.ns().open(*export, rel, oflags | libc::O_NONBLOCK, 0)?;
                if oflags & libc::O_NONBLOCK == 0 {
                    sys::clear_nonblock(fd.as_fd())?;
                }
                let st = sys::fstat(fd.as_fd())?;
                let opened = Opened::Host {
                    file: File::from(fd),
                    dir: st.st_mode & libc::S_IFMT == libc::S_IFDIR,
                    regular: st.st_mode & libc::S_IFMT == libc::S_IFREG,
                    writable: flags & P9_DOTL_ACCMODE != P9_DOTL_RDONLY,
                    cursor: Mutex::new(()),
                };
                (opened, self.ns().qid_of_stat(&st))
            }
            Node::VDir(_) | Node::EnvDir => {
                if write {
                    return Err(errno(libc::EISDIR));
                }
                (
                    Opened::Listing(Mutex::new(Vec::new())),
                    self.ns().qid(&node)?,
                )
            }
            Node::Cons => (Opened::Cons, self.ns().qid(&node)?),
            Node::Net(n) if n.is_dir() => {
                if write {
                    return Err(errno(libc::EISDIR));
                }
                (Opened::Listing(Mutex::new(Vec::new())), n.qid())
            }
            Node::Net(n) => {
                let (opened, now) = match self.net_open(*n, write)? {
                    NetOpen::Now(opened, now) => (opened, now),
                    NetOpen::Listen(announced) => {
                        let wait = self.ns().net()?.listen(announced, move |s, call| {
                            let conv = s.ns().net()?.answer(call, s.id)?;
                            // The fid is now the call's ctl.
                            let now = NetNode::File(
                                conv.conv().proto(),
                                conv.conv().number(),
                                ConvFile::Ctl,
                            );
                            *lock(&f.node) = Node::Net(now);
                            let opened = Opened::Net {
                                conv,
                                file: ConvFile::Ctl,
                            };
                            Self::set_open(&f, opened)?;
                            encode(
                                tag,
                                &RMessage::Lopen {
                                    qid: now.qid(),
                                    iounit: s.iounit(),
                                },
                            )
                        });
                        return Ok(Step::Wait(wait));
                    }
                };
                if now != *n {
                    // clone and listen: the fid is now the new connection's ctl.
                    *lock(&f.node) = Node::Net(now);
                }
                (opened, now.qid())
            }
            Node::EnvVar(i) => {
                if write {
                    return Err(errno(libc::EROFS));
                }
                let value = self
                    .ns()
                    .env
                    .get(*i)
                    .map(|(_, v)| Arc::clone(v))
                    .ok_or(errno(libc::ENOENT))?;
                (Opened::Bytes(value), self.ns().qid(&node)?)
            }
        };
        if matches!(node, Node::Host { .. }) {
            Self::set_open_at(&f, opened, &node)?;
        } else {
            Self::set_open(&f, opened)?;
        }
        encode(
            tag,
            &RMessage::Lopen {
                qid,
                iounit: self.iounit(),
            },
        )
        .map(Step::Done)
    }

    /// Opens a `/net` file: its open file and what the fid now names, or
    /// for `listen` the announced connection to wait on.
    fn net_open(&self, node: NetNode, write: bool) -> Result<NetOpen, Errno> {
        let net = self.ns().net()?;
        let (conv, file) = match node {
            NetNode::Clone(proto) => (net.clone_conv(proto, self.id)?, ConvFile::Ctl),
            NetNode::File(proto, n, ConvFile::Listen) => {
                return Ok(NetOpen::Listen(net.open(proto, n, self.id)?));
            }
            NetNode::File(proto, n, file) => {
                if write && !file.writable() {
                    return Err(errno(libc::EACCES));
                }
                (net.open(proto, n, self.id)?, file)
            }
            NetNode::Root | NetNode::Dir(_) | NetNode::Conv(..) => {
                return Err(errno(libc::EISDIR));
            }
            NetNode::Ifaces if write => return Err(errno(libc::EACCES)),
            NetNode::Ifaces => {
                let text = crate::net::ifaces_text();
                return Ok(NetOpen::Now(Opened::Bytes(text.into()), node));
            }
        };
        let now = NetNode::File(conv.conv().proto(), conv.conv().number(), file);
        Ok(NetOpen::Now(Opened::Net { conv, file }, now))
    }

    fn lcreate(&self, tag: u16, fid: u32, name: Str<'_>, flags: u32, mode: u32) -> Res {
        let f = self.fid(fid)?;
        if lock(&f.open).is_some() {
            return Err(errno(libc::EBUSY));
        }
        let node = f.node();
        let cname = check_name(name.as_bytes())?;
        let (e, rel) = self.creatable_dir(&node, &cname)?;
        if self.ns().is_mount_child(&node, name.as_bytes()) {
            return Err(errno(libc::EEXIST));
        }
        let dir = self.ns().dir_fd(e, &rel)?;
        let oflags = open_flags(flags)? | libc::O_CREAT;
        let fd = sys::openat2(dir.as_fd(), &cname, oflags, mode)?;
        let st = sys::fstat(fd.as_fd())?;
        let qid = self.ns().qid_of_stat(&st);
        let mut rel = rel;
        rel.push(name.as_bytes().to_vec());
        *lock(&f.node) = Node::Host { export: e, rel };
        Self::set_open(
            &f,
            Opened::Host {
                file: File::from(fd),
                dir: false,
                regular: st.st_mode & libc::S_IFMT == libc::S_IFREG,
                writable: flags & P9_DOTL_ACCMODE != P9_DOTL_RDONLY,
                cursor: Mutex::new(()),
            },
        )?;
        encode(
            tag,
            &RMessage::Lcreate {
                qid,
                iounit: self.iounit(),
            },
        )
    }

    fn read(
        &self,
        tag: u16,
        fid: u32,
        offset: u64,
        count: u32,
        cancel: &Cancel,
    ) -> Result<Step, Errno> {
        let opened = self.fid(fid)?.opened()?;
        let max = self.payload_limit(count) as usize;
        if let Opened::Net {
            conv,
            file: ConvFile::Data,
        } = &*opened
        {
            // A stream: the offset means nothing, but for the watch after
            // the end of file. The open file is held while the read waits,
            // as a blocked worker held it.
            let hold = Arc::clone(&opened);
            if offset == astraea_9p::consts::NET_WATCH_OFFSET {
                return Ok(Step::Wait(conv.conv().watch(move |_, ()| {
                    drop(hold);
                    encode(tag, &RMessage::Read { data: &[] })
                })));
            }
            let ticket = cancel.take_order();
            let read = conv
                .conv()
                .read(max, RREAD_HEADER_LEN, ticket, move |_, mut frame| {
                    drop(hold);
                    // The bytes follow the header's room: the frame is made in place.
                    let n = frame.len().saturating_sub(RREAD_HEADER_LEN);
                    let count = u32::try_from(n).map_err(|_| errno(libc::EIO))?;
                    let header = encode_rread_header(tag, count).map_err(|_| errno(libc::EIO))?;
                    frame
                        .get_mut(..RREAD_HEADER_LEN)
                        .ok_or(errno(libc::EIO))?
                        .copy_from_slice(&header);
                    Ok(frame)
                });
            return Ok(Step::Wait(read));
        }
        let out = match &*opened {
            Opened::Host { dir: true, .. } | Opened::Listing(_) => Err(errno(libc::EISDIR)),
            Opened::XattrWrite { .. } => Err(errno(libc::EBADF)),
            Opened::Host { file, .. } => {
                let mut buf = vec![0u8; RREAD_HEADER_LEN + max];
                let (head, body) = buf.split_at_mut(RREAD_HEADER_LEN);
                let n = retry_io(|| file.read_at(body, offset))?;
                let count = u32::try_from(n).map_err(|_| errno(libc::EIO))?;
                head.copy_from_slice(
                    &encode_rread_header(tag, count).map_err(|_| errno(libc::EIO))?,
                );
                buf.truncate(RREAD_HEADER_LEN + n);
                Ok(buf)
            }
            Opened::Cons => {
                let console = self.gw.console.as_ref().ok_or(errno(libc::ENODEV))?;
                match console.read(max, cancel)? {
                    Some(data) => {
                        let data = data.get(..max.min(data.len())).unwrap_or_default();
                        encode(tag, &RMessage::Read { data })
                    }
                    None => Err(errno(libc::EINTR)),
                }
            }
            Opened::Bytes(value) => {
                let start = usize::try_from(offset).unwrap_or(usize::MAX);
                let data = value.get(start..).unwrap_or_default();
                let data = data.get(..max.min(data.len())).unwrap_or_default();
                encode(tag, &RMessage::Read { data })
            }
            Opened::Net { conv, file } => {
                let text = conv.conv().text(*file);
                let start = usize::try_from(offset).unwrap_or(usize::MAX);
                let data = text.get(start..).unwrap_or_default();
                let data = data.get(..max.min(data.len())).unwrap_or_default();
                encode(tag, &RMessage::Read { data })
            }
        };
        out.map(Step::Done)
    }

    fn write(
        &self,
        tag: u16,
        fid: u32,
        offset: u64,
        data: &[u8],
        cancel: &Cancel,
    ) -> Result<Step, Errno> {
        let opened = self.fid(fid)?.opened()?;
        let len = data.len();
        // Both answer the write in full, or with what the socket took.
        let reply = move |count: usize| {
            let count = u32::try_from(count).map_err(|_| errno(libc::EIO))?;
            encode(tag, &RMessage::Write { count })
        };
        let count = match &*opened {
            Opened::Host { dir: true, .. } | Opened::Listing(_) => {
                return Err(errno(libc::EISDIR));
            }
            Opened::Host { file, .. } => retry_io(|| file.write_at(data, offset))?,
            Opened::Cons => {
                let console = self.gw.console.as_ref().ok_or(errno(libc::ENODEV))?;
                console.write(data)?;
                data.len()
            }
            Opened::Bytes(_) => return Err(errno(libc::EBADF)),
            Opened::Net {
                conv,
                file: ConvFile::Data,
            } => {
                // The open file is held while the write waits, and its
                // bytes count against the session's parked budget until it
                // is answered or cancelled.
                let hold = Arc::clone(&opened);
                let budget = ParkedBytes::take(&self.parked, data.len())?;
                let ticket = cancel.take_order();
                let wait = conv.conv().write(data.to_vec(), ticket, move |_, n| {
                    drop(hold);
                    drop(budget);
                    reply(n)
                });
                return Ok(Step::Wait(wait));
            }
            Opened::Net {
                conv,
                file: ConvFile::Ctl,
            } => {
                let hold = Arc::clone(&opened);
                let then = move |_: &SessionInner, ()| {
                    drop(hold);
                    reply(len)
                };
                if let Some(wait) = self.ns().net()?.ctl(conv.conv(), data, then)? {
                    return Ok(Step::Wait(wait));
                }
                len
            }
            Opened::Net { .. } => return Err(errno(libc::EBADF)),
            Opened::XattrWrite { value, .. } => {
                let value = value.as_ref().ok_or(errno(libc::EINVAL))?;
                let mut v = lock(value);
                let start = usize::try_from(offset).map_err(|_| errno(libc::EINVAL))?;
                let end = start.checked_add(data.len()).ok_or(errno(libc::EINVAL))?;
                // Exactly the size announced by Txattrcreate.
                if end > v.len() {
                    return Err(errno(libc::EINVAL));
                }
                v[start..end].copy_from_slice(data);
                data.len()
            }
        };
        reply(count).map(Step::Done)
    }

    /// An `O_PATH` descriptor of a host node (a symbolic link itself), for
    /// the extended attribute calls.
    fn xattr_fd(&self, node: &Node) -> Result<Option<std::os::fd::OwnedFd>, Errno> {
        match self.ns().host(node) {
            Some((e, rel)) => Ok(Some(self.ns().open(
                e,
                rel,
                libc::O_PATH | libc::O_NOFOLLOW,
                0,
            )?)),
            None => Ok(None),
        }
    }

    /// `Txattrwalk`: `newfid` reads the value of attribute `name` of
    /// `fid`'s file (the NUL-separated list of names for an empty `name`).
    fn xattrwalk(&self, tag: u16, fid: u32, newfid: u32, name: Str<'_>) -> Res {
        let node = self.fid(fid)?.node();
        let value = match self.xattr_fd(&node)? {
            Some(fd) if name.as_bytes().is_empty() => sys::get_xattr(fd.as_fd(), None)?,
            Some(fd) => {
                let n = CString::new(name.as_bytes()).map_err(|_| errno(libc::EINVAL))?;
                sys::get_xattr(fd.as_fd(), Some(&n))?
            }
            // Synthetic files have no attributes.
            None if name.as_bytes().is_empty() => Vec::new(),
            None => return Err(errno(libc::ENODATA)),
        };
        let size = value.len() as u64;
        let f = Fid::new(node);
        *lock(&f.open) = Some(Arc::new(Opened::Bytes(value.into())));
        // The same rules as any new fid: not NOFID, not in use, and within
        // the session's limit (a guest looping Txattrwalk must not grow the
        // table without bound).
        let mut fids = lock(&self.fids);
        if newfid == NOFID {
            return Err(errno(libc::EBADF));
        }
        if fids.contains_key(&newfid) {
            return Err(errno(libc::EEXIST));
        }
        if fids.len() >= self.gw.max_fids {
            tracing::debug!(fid = newfid, "fid limit reached");
            return Err(errno(libc::EMFILE));
        }
        fids.insert(newfid, Arc::new(f));
        drop(fids);
        encode(tag, &RMessage::Xattrwalk { size })
    }

    /// `Txattrcreate`: `fid` becomes the attribute `name` being written,
    /// `size` bytes, set (or, for size 0, removed) when it is clunked.
    fn xattrcreate(&self, tag: u16, fid: u32, name: Str<'_>, size: u64, flags: u32) -> Res {
        let f = self.fid(fid)?;
        if lock(&f.open).is_some() {
            return Err(errno(libc::EBUSY));
        }
        if flags & !(P9_XATTR_EMPTY | libc::XATTR_CREATE as u32 | libc::XATTR_REPLACE as u32) != 0 {
            return Err(errno(libc::EINVAL));
        }
        if size > 65536 {
            return Err(errno(libc::E2BIG));
        }
        let node = f.node();
        match self.ns().host(&node) {
            Some((e, _)) if self.ns().read_only(e) => return Err(errno(libc::EROFS)),
            Some(_) => {}
            None => return Err(errno(libc::EOPNOTSUPP)),
        }
        let name = CString::new(name.as_bytes()).map_err(|_| errno(libc::EINVAL))?;
        let value =
            (size > 0 || flags & P9_XATTR_EMPTY != 0).then(|| Mutex::new(vec![0u8; size as usize]));
        Self::set_open_at(
            &f,
            Opened::XattrWrite {
                name,
                value,
                flags: (flags & !P9_XATTR_EMPTY) as i32,
            },
            &node,
        )?;
        encode(tag, &RMessage::Xattrcreate)
    }

    /// At the clunk of a fid made by `Txattrcreate`: sets or removes the
    /// attribute, answering its error.
    fn apply_xattr(&self, f: &Fid) -> Result<(), Errno> {
        let Some(opened) = lock(&f.open).clone() else {
            return Ok(());
        };
        let Opened::XattrWrite { name, value, flags } = &*opened else {
            return Ok(());
        };
        let Some(fd) = self.xattr_fd(&f.node())? else {
            return Err(errno(libc::EOPNOTSUPP));
        };
        let bytes = value.as_ref().map(|v| lock(v).clone());
        sys::set_xattr(fd.as_fd(), name, bytes.as_deref(), *flags)
    }

    fn remove(&self, tag: u16, fid: u32) -> Res {
        // Tremove clunks the fid whether or not the removal succeeds.
        let f = lock(&self.fids).remove(&fid).ok_or(errno(libc::EBADF))?;
        let node = f.node();
        drop(f);
        match (&node, self.ns().host(&node)) {
            (Node::Host { export, rel }, _) => {
                if self.ns().read_only(*export) {
                    return Err(errno(libc::EROFS));
                }
                let (dir, name) = self.ns().parent_and_name(*export, rel)?;
                let st = sys::fstatat_nofollow(dir.as_fd(), &name)?;
                let flags = if st.st_mode & libc::S_IFMT == libc::S_IFDIR {
                    libc::AT_REMOVEDIR
                } else {
                    0
                };
                sys::unlinkat(dir.as_fd(), &name, flags)?;
                encode(tag, &RMessage::Remove)
            }
            (Node::VDir(_), _) => Err(errno(libc::EBUSY)),
            _ => Err(errno(libc::EROFS)),
        }
    }

    fn getattr(&self, tag: u16, fid: u32) -> Res {
        let f = self.fid(fid)?;
        if let Ok(opened) = f.opened()
            && let Opened::Host { file, .. } = &*opened
        {
            let st = sys::fstat(file.as_fd())?;
            let stat = self.ns().stat_with_btime(&st, file.as_fd());
            return encode(tag, &RMessage::Getattr { stat });
        }
        let stat = self.ns().getattr(&f.node())?;
        encode(tag, &RMessage::Getattr { stat })
    }

    fn setattr(&self, tag: u16, fid: u32, attr: &SetAttr) -> Res {
        let f = self.fid(fid)?;
        let node = f.node();
        // A directory between mounts is the host's, its attributes too.
        let Some((e, rel_path)) = self.dir_host(&node) else {
            // Truncating or touching the console is harmless (shells open it
            // with O_TRUNC); everything else synthetic is read-only.
            let benign = P9_SETATTR_SIZE
                | P9_SETATTR_ATIME
                | P9_SETATTR_MTIME
                | P9_SETATTR_CTIME
                | P9_SETATTR_ATIME_SET
                | P9_SETATTR_MTIME_SET;
            // The same holds for /net files (`echo connect ... > ctl`).
            let benign_node = node == Node::Cons || matches!(node, Node::Net(n) if !n.is_dir());
            return if benign_node && attr.valid & !benign == 0 {
                encode(tag, &RMessage::Setattr)
            } else {
                Err(errno(libc::EROFS))
            };
        };
        let rel = rel_path.as_slice();
        if self.ns().read_only(e) {
            // truncate(2) of a directory is EISDIR before the mount is
            // read-only (Linux's do_sys_truncate).
            if attr.valid & P9_SETATTR_SIZE != 0
                && self
                    .ns()
                    .open(e, rel, libc::O_PATH, 0)
                    .and_then(|fd| sys::fstat(fd.as_fd()))
                    .is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFDIR)
            {
                return Err(errno(libc::EISDIR));
            }
            return Err(errno(libc::EROFS));
        }
        let v = attr.valid;
        // An open fid changes the file it has open, which its path may no
        // longer name (unlinked or replaced since): fchmod and futimens.
        let opened = f.opened().ok();
        let open_file = match opened.as_deref() {
            Some(Opened::Host { file, .. }) => Some(file),
            _ => None,
        };
        if v & P9_SETATTR_MODE != 0
            && let Some(file) = open_file
        {
            sys::chmod_fd(file.as_fd(), attr.mode)?;
        } else if v & P9_SETATTR_MODE != 0 {
            let fd = self.ns().open(e, rel, libc::O_PATH | libc::O_NOFOLLOW, 0)?;
            let st = sys::fstat(fd.as_fd())?;
            if st.st_mode & libc::S_IFMT == libc::S_IFLNK {
                return Err(errno(libc::EOPNOTSUPP));
            }
            sys::chmod_fd(fd.as_fd(), attr.mode)?;
        }
        if v & (P9_SETATTR_UID | P9_SETATTR_GID) != 0 {
            let (dir, name) = self.ns().parent_and_name(e, rel)?;
            let uid = (v & P9_SETATTR_UID != 0).then_some(attr.uid);
            let gid = (v & P9_SETATTR_GID != 0).then_some(attr.gid);
            sys::fchownat_nofollow(dir.as_fd(), &name, uid, gid)?;
        }
        if v & P9_SETATTR_SIZE != 0 {
            let opened = f.opened().ok();
            match opened.as_deref() {
                Some(Opened::Host {
                    file,
                    writable: true,
                    dir: false,
                    ..
                }) => retry_io(|| file.set_len(attr.size))?,
                _ => {
                    let fd = self
                        .ns()
                        // Non-blocking: a FIFO here must not hold the worker
                        // (truncating one fails, as it does on Linux).
                        .open(
                            e,
                            rel,
                            libc::O_WRONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK,
                            0,
                        )?;
                    let file = File::from(fd);
                    retry_io(|| file.set_len(attr.size))?;
                }
            }
        }
        if v & (P9_SETATTR_ATIME | P9_SETATTR_MTIME) != 0 {
            let time = |bit: u32, set: u32, sec: u64, nsec: u64| {
                if v & bit == 0 {
                    TimeSpec::Omit
                } else if v & set != 0 {
                    TimeSpec::At {
                        sec: sec.cast_signed(),
                        nsec: nsec.cast_signed(),
                    }
                } else {
                    TimeSpec::Now
                }
            };
            let atime = time(
                P9_SETATTR_ATIME,
                P9_SETATTR_ATIME_SET,
                attr.atime_sec,
                attr.atime_nsec,
            );
            let mtime = time(
                P9_SETATTR_MTIME,
                P9_SETATTR_MTIME_SET,
                attr.mtime_sec,
                attr.mtime_nsec,
            );
            if let Some(file) = open_file {
                sys::futimens(file.as_fd(), atime, mtime)?;
            } else {
                let (dir, name) = self.ns().parent_and_name(e, rel)?;
                sys::utimensat_nofollow(dir.as_fd(), &name, atime, mtime)?;
            }
        }
        encode(tag, &RMessage::Setattr)
    }

    fn readdir(&self, tag: u16, fid: u32, offset: u64, count: u32) -> Res {
        let f = self.fid(fid)?;
        let opened = f.opened()?;
        let mut w = DirEntryWriter::new(self.payload_limit(count));
        let mut full = false;
        match &*opened {
            Opened::Host {
                file,
                dir: true,
                cursor,
                ..
            } => {
                let _cursor = lock(cursor);
                let dev = sys::fstat(file.as_fd())?.st_dev;
                let mut cookie = i64::try_from(offset).map_err(|_| errno(libc::EINVAL))?;
                let mut buf = vec![0u8; (w.remaining() + 512).min(64 * 1024)];
                'outer: loop {
                    let n = sys::getdents_at(file.as_fd(), cookie, &mut buf)?;
                    if n == 0 {
                        break;
                    }
                    for d in (Dirents {
                        buf: buf.get(..n).unwrap_or_default(),
                    }) {
                        let entry = DirEntry {
                            qid: Qid {
                                ty: qid_type_of_dt(d.ty),
                                version: 0,
                                path: self.ns().qid_path(dev, d.ino),
                            },
                            offset: d.off.cast_unsigned(),
                            ty: d.ty,
                            name: Str::new(d.name),
                        };
                        if w.push(&entry).is_err() {
                            full = true;
                            break 'outer;
                        }
                        cookie = d.off;
                    }
                }
            }
            Opened::Listing(entries) => {
                let mut entries = lock(entries);
                if offset == 0 || entries.is_empty() {
                    *entries = self.listing(&f.node())?;
                }
                let start = usize::try_from(offset).unwrap_or(usize::MAX);
                for (i, ent) in entries.iter().enumerate().skip(start) {
                    let entry = DirEntry {
                        qid: ent.qid,
                        offset: i as u64 + 1,
                        ty: ent.ty,
                        name: Str::new(&ent.name),
                    };
                    if w.push(&entry).is_err() {
                        full = true;
                        break;
                    }
                }
            }
            _ => return Err(errno(libc::ENOTDIR)),
        }
        if full && w.is_empty() {
            // Not even one entry fits in the client's count.
            return Err(errno(libc::EINVAL));
        }
        encode(tag, &w.to_message())
    }

    /// A snapshot listing of a synthetic directory (merged with its export
    /// root's entries, which its own children hide).
    fn listing(&self, node: &Node) -> Result<Vec<ListEntry>, Errno> {
        let ns = self.ns();
        let mut out = Vec::new();
        let me = ns.qid(node)?;
        let parent = ns.qid(&ns.parent(node)?)?;
        out.push(ListEntry {
            qid: me,
            ty: DT_DIR,
            name: b".".to_vec(),
        });
        out.push(ListEntry {
            qid: parent,
            ty: DT_DIR,
            name: b"..".to_vec(),
        });
        match node {
            Node::VDir(i) => {
                let vdir = ns.vdirs.get(*i).ok_or(errno(libc::EIO))?;
                for (name, child) in &vdir.children {
                    let child_node = match child {
                        Child::Dir(j) => Node::VDir(*j),
                        Child::Cons => Node::Cons,
                        Child::Env => Node::EnvDir,
                        Child::Net => Node::Net(NetNode::Root),
                    };
                    match ns.qid(&child_node) {
                        Ok(qid) => out.push(ListEntry {
                            qid,
                            ty: dt_of_qid(&qid),
                            name: name.clone(),
                        }),
                        Err(e) => tracing::warn!(
                            "cannot stat mount point {}: {e}",
                            String::from_utf8_lossy(name)
                        ),
                    }
                }
                // A directory that only holds a deeper mount point shows
                // the enclosing export's directory too, if there is one.
                let host_dir = match ns.underlying(*i) {
                    Some((e, rel)) if vdir.backing.is_none() => ns
                        .open(e, &rel, libc::O_RDONLY | libc::O_DIRECTORY, 0)
                        .ok()
                        .map(|fd| (e, fd)),
                    Some((e, rel)) => {
                        Some((e, ns.open(e, &rel, libc::O_RDONLY | libc::O_DIRECTORY, 0)?))
                    }
                    None => None,
                };
                if let Some((_, fd)) = host_dir {
                    let dev = sys::fstat(fd.as_fd())?.st_dev;
                    let mut buf = vec![0u8; 64 * 1024];
                    let mut cookie = 0;
                    loop {
                        let n = sys::getdents_at(fd.as_fd(), cookie, &mut buf)?;
                        if n == 0 {
                            break;
                        }
                        for d in (Dirents {
                            buf: buf.get(..n).unwrap_or_default(),
                        }) {
                            cookie = d.off;
                            if d.name == b"."
                                || d.name == b".."
                                || vdir.children.contains_key(d.name)
                            {
                                continue;
                            }
                            out.push(ListEntry {
                                qid: Qid {
                                    ty: qid_type_of_dt(d.ty),
                                    version: 0,
                                    path: ns.qid_path(dev, d.ino),
                                },
                                ty: d.ty,
                                name: d.name.to_vec(),
                            });
                        }
                    }
                }
            }
            Node::Net(dir) => {
                for (name, child) in ns.net()?.list(*dir)? {
                    let qid = child.qid();
                    out.push(ListEntry {
                        qid,
                        ty: dt_of_qid(&qid),
                        name,
                    });
                }
            }
            Node::EnvDir => {
                for (i, (name, _)) in ns.env.iter().enumerate() {
                    let qid = ns.qid(&Node::EnvVar(i))?;
                    out.push(ListEntry {
                        qid,
                        ty: DT_REG,
                        name: name.clone(),
                    });
                }
            }
            _ => return Err(errno(libc::ENOTDIR)),
        }
        Ok(out)
    }

    fn readlink(&self, tag: u16, fid: u32) -> Res {
        let node = self.fid(fid)?.node();
        let Node::Host { export, rel } = &node else {
            return Err(errno(libc::EINVAL));
        };
        let fd = self
            .ns()
            .open(*export, rel, libc::O_PATH | libc::O_NOFOLLOW, 0)?;
        let st = sys::fstat(fd.as_fd())?;
        if st.st_mode & libc::S_IFMT != libc::S_IFLNK {
            return Err(errno(libc::EINVAL));
        }
        let target = sys::readlink_fd(fd.as_fd())?;
        encode(
            tag,
            &RMessage::Readlink {
                target: Str::new(&target),
            },
        )
    }

    /// Common part of the requests that create `name` in directory `dfid`:
    /// checks, then runs `create(dirfd, name)` and returns the new file's qid.
    fn create_in(
        &self,
        dfid: u32,
        name: Str<'_>,
        create: impl FnOnce(std::os::fd::BorrowedFd<'_>, &CString) -> Result<(), Errno>,
    ) -> Result<Qid, Errno> {
        let node = self.fid(dfid)?.node();
        let cname = check_name(name.as_bytes())?;
        let (e, rel) = self.creatable_dir(&node, &cname)?;
        if self.ns().is_mount_child(&node, name.as_bytes()) {
            return Err(errno(libc::EEXIST));
        }
        let dir = self.ns().dir_fd(e, &rel)?;
        create(dir.as_fd(), &cname)?;
        let st = sys::fstatat_nofollow(dir.as_fd(), &cname)?;
        Ok(self.ns().qid_of_stat(&st))
    }

    fn symlink(&self, tag: u16, dfid: u32, name: Str<'_>, target: Str<'_>) -> Res {
        let target = CString::new(target.as_bytes()).map_err(|_| errno(libc::EINVAL))?;
        if target.is_empty() {
            return Err(errno(libc::ENOENT));
        }
        let qid = self.create_in(dfid, name, |dir, name| sys::symlinkat(&target, dir, name))?;
        encode(tag, &RMessage::Symlink { qid })
    }

    fn mknod(&self, tag: u16, dfid: u32, name: Str<'_>, mode: u32) -> Res {
        let kind = match mode & libc::S_IFMT {
            0 | libc::S_IFREG => libc::S_IFREG,
            libc::S_IFIFO => libc::S_IFIFO,
            // A partition's `bind` of a Unix socket to a path leaves a
            // socket file, as Linux's does (the socket itself lives in the
            // partition; host processes connecting get ECONNREFUSED).
            libc::S_IFSOCK => libc::S_IFSOCK,
            _ => return Err(errno(libc::EPERM)),
        };
        let qid = self.create_in(dfid, name, |dir, name| {
            sys::mknodat(dir, name, kind | (mode & 0o7777))
        })?;
        encode(tag, &RMessage::Mknod { qid })
    }

    fn mkdir(&self, tag: u16, dfid: u32, name: Str<'_>, mode: u32) -> Res {
        let qid = self.create_in(dfid, name, |dir, name| sys::mkdirat(dir, name, mode))?;
        encode(tag, &RMessage::Mkdir { qid })
    }

    /// The export and path of a file that a request renames or links.
    fn movable(&self, node: &Node) -> Result<(usize, Vec<Vec<u8>>), Errno> {
        match node {
            Node::Host { export, rel } => {
                if self.ns().read_only(*export) {
                    Err(errno(libc::EROFS))
                } else {
                    Ok((*export, rel.clone()))
                }
            }
            Node::VDir(_) => Err(errno(libc::EBUSY)),
            _ => Err(errno(libc::EROFS)),
        }
    }

    fn link(&self, tag: u16, dfid: u32, fid: u32, name: Str<'_>) -> Res {
        let src = self.fid(fid)?.node();
        let dnode = self.fid(dfid)?.node();
        let cname = check_name(name.as_bytes())?;
        let (se, srel) = match self.movable(&src) {
            Err(e) if e == errno(libc::EROFS) => {
                self.creatable_dir(&dnode, &cname)?;
                return Err(e);
            }
            r => r?,
        };
        let (de, drel) = self.creatable_dir(&dnode, &cname)?;
        if se != de {
            return Err(errno(libc::EXDEV));
        }
        if self.ns().is_mount_child(&dnode, name.as_bytes()) {
            return Err(errno(libc::EEXIST));
        }
        let (sdir, sname) = self.ns().parent_and_name(se, &srel)?;
        let ddir = self.ns().dir_fd(de, &drel)?;
        sys::linkat(sdir.as_fd(), &sname, ddir.as_fd(), &cname)?;
        encode(tag, &RMessage::Link)
    }

    /// Renames `old` (a path in export `e`) to `new`, then points every fid
    /// of this session at or below `old` to the new path.
    fn rename_paths(&self, e: usize, old: &[Vec<u8>], new: &[Vec<u8>]) -> Result<(), Errno> {
        let (odir, oname) = self.ns().parent_and_name(e, old)?;
        let (ndir, nname) = self.ns().parent_and_name(e, new)?;
        sys::renameat(odir.as_fd(), &oname, ndir.as_fd(), &nname)?;
        for fid in lock(&self.fids).values() {
            let mut node = lock(&fid.node);
            if let Node::Host { export, rel } = &mut *node
                && *export == e
                && rel.starts_with(old)
            {
                let mut moved = new.to_vec();
                moved.extend_from_slice(rel.get(old.len()..).unwrap_or_default());
                *rel = moved;
            }
        }
        Ok(())
    }

    fn rename(&self, tag: u16, fid: u32, dfid: u32, name: Str<'_>) -> Res {
        let src = self.fid(fid)?.node();
        let dnode = self.fid(dfid)?.node();
        let (se, srel) = self.movable(&src)?;
        check_name(name.as_bytes())?;
        let (de, mut drel) = self.writable_dir(&dnode)?;
        if se != de {
            return Err(errno(libc::EXDEV));
        }
        if self.ns().is_mount_child(&dnode, name.as_bytes()) {
            return Err(errno(libc::EBUSY));
        }
        drel.push(name.as_bytes().to_vec());
        self.rename_paths(se, &srel, &drel)?;
        encode(tag, &RMessage::Rename)
    }

    fn renameat(
        &self,
        tag: u16,
        olddirfid: u32,
        oldname: Str<'_>,
        newdirfid: u32,
        newname: Str<'_>,
    ) -> Res {
        let onode = self.fid(olddirfid)?.node();
        let nnode = self.fid(newdirfid)?.node();
        check_name(oldname.as_bytes())?;
        check_name(newname.as_bytes())?;
        let (oe, mut orel) = self.writable_dir(&onode)?;
        let (ne, mut nrel) = self.writable_dir(&nnode)?;
        if self.ns().is_mount_child(&onode, oldname.as_bytes())
            || self.ns().is_mount_child(&nnode, newname.as_bytes())
        {
            return Err(errno(libc::EBUSY));
        }
        if oe != ne {
            return Err(errno(libc::EXDEV));
        }
        orel.push(oldname.as_bytes().to_vec());
        nrel.push(newname.as_bytes().to_vec());
        self.rename_paths(oe, &orel, &nrel)?;
        encode(tag, &RMessage::Renameat)
    }

    fn unlinkat(&self, tag: u16, dirfid: u32, name: Str<'_>, flags: u32) -> Res {
        let node = self.fid(dirfid)?.node();
        let cname = check_name(name.as_bytes())?;
        let (e, rel) = self.writable_dir(&node)?;
        if self.ns().is_mount_child(&node, name.as_bytes()) {
            return Err(errno(libc::EBUSY));
        }
        let dir = self.ns().dir_fd(e, &rel)?;
        let flags = if flags & P9_DOTL_AT_REMOVEDIR != 0 {
            libc::AT_REMOVEDIR
        } else {
            0
        };
        match sys::unlinkat(dir.as_fd(), &cname, flags) {
            // py9p/p9fs remove directories without AT_REMOVEDIR (rs9p's unpfs
            // accepts that too). Linux never sends it: its VFS refuses
            // unlink(2) of a directory before asking the server.
            Err(Errno(libc::EISDIR)) if flags == 0 => {
                sys::unlinkat(dir.as_fd(), &cname, libc::AT_REMOVEDIR)?;
            }
            res => res?,
        }
        encode(tag, &RMessage::Unlinkat)
    }

    fn lock_range(start: u64, length: u64) -> Result<(i64, i64), Errno> {
        let start = i64::try_from(start).map_err(|_| errno(libc::EINVAL))?;
        let len = i64::try_from(length).map_err(|_| errno(libc::EINVAL))?;
        Ok((start, len))
    }

    fn lock(&self, tag: u16, fid: u32, fl: &Flock<'_>) -> Res {
        let opened = self.fid(fid)?.opened()?;
        let Opened::Host { file, .. } = &*opened else {
            return encode(
                tag,
                &RMessage::Lock {
                    status: P9_LOCK_SUCCESS,
                },
            );
        };
        let ty = match fl.ty {
            P9_LOCK_TYPE_RDLCK => libc::F_RDLCK,
            P9_LOCK_TYPE_WRLCK => libc::F_WRLCK,
            P9_LOCK_TYPE_UNLCK => libc::F_UNLCK,
            _ => return Err(errno(libc::EINVAL)),
        };
        let (start, len) = Self::lock_range(fl.start, fl.length)?;
        // Never block a worker: a blocking request that conflicts is
        // answered BLOCKED, and the client retries (as Linux does).
        let taken = if fl.flags & P9_LOCK_FLAGS_FLOCK != 0 {
            sys::flock_nb(file.as_fd(), ty)
        } else {
            sys::ofd_setlk(file.as_fd(), ty as i16, start, len)
        };
        let status = match taken {
            Ok(()) => P9_LOCK_SUCCESS,
            Err(Errno(libc::EAGAIN | libc::EACCES)) => P9_LOCK_BLOCKED,
            Err(e) => return Err(e),
        };
        encode(tag, &RMessage::Lock { status })
    }

    fn getlock(&self, tag: u16, fid: u32, gl: &Getlock<'_>) -> Res {
        let opened = self.fid(fid)?.opened()?;
        let Opened::Host { file, .. } = &*opened else {
            let lock = Getlock {
                ty: P9_LOCK_TYPE_UNLCK,
                ..*gl
            };
            return encode(tag, &RMessage::Getlock { lock });
        };
        let ty = match gl.ty {
            P9_LOCK_TYPE_RDLCK => libc::F_RDLCK,
            P9_LOCK_TYPE_WRLCK => libc::F_WRLCK,
            _ => return Err(errno(libc::EINVAL)),
        };
        let (start, len) = Self::lock_range(gl.start, gl.length)?;
        let info = sys::ofd_getlk(file.as_fd(), ty as i16, start, len)?;
        let lock = if i32::from(info.ty) == libc::F_UNLCK {
            Getlock {
                ty: P9_LOCK_TYPE_UNLCK,
                ..*gl
            }
        } else {
            Getlock {
                ty: if i32::from(info.ty) == libc::F_RDLCK {
                    P9_LOCK_TYPE_RDLCK
                } else {
                    P9_LOCK_TYPE_WRLCK
                },
                start: info.start.cast_unsigned(),
                length: info.len.cast_unsigned(),
                proc_id: info.pid.cast_unsigned(),
                client_id: gl.client_id,
            }
        };
        encode(tag, &RMessage::Getlock { lock })
    }
}
