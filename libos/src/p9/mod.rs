//! The 9P2000.L client: the library OS's way to the gateway's files.
//!
//! Requests go through the virtio-9p driver, many at a time (each caller
//! waits for its own reply). Fids are allocated here; the root of the
//! namespace is attached at mount.

use alloc::collections::VecDeque;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU16, AtomicU32, Ordering};

use astraea_9p::{
    DirEntryIter, Frame, Qid, RMessage, Stat, Str, TMessage, VERSION_9P2000L, WalkNames,
};

use crate::drivers::virtio9p::Virtio9p;
use crate::errno::Errno;
use crate::sync::IrqLock;

/// A directory entry from [`Client::readdir_at`].
pub struct DirEnt {
    pub name: String,
    /// `DT_*`.
    pub ty: u8,
    /// The qid's path (what `stat` gives as the inode number).
    pub ino: u64,
    /// The server's position after this entry.
    pub next: u64,
}

/// The msize we ask for: 256 KiB of payload plus headers (a cache read-ahead
/// of four blocks, or a large read, in one message).
pub const MSIZE: u32 = 256 * 1024 + 24;
/// `P9_GETATTR_BASIC`: everything `stat` needs.
pub const GETATTR_BASIC: u64 = 0x7ff;
/// Names per `Twalk`.
const MAXWELEM: usize = 16;

/// A file identifier on the connection.
pub type Fid = u32;

/// Smallest write whose payload goes in a descriptor of its own (below
/// it, copying it behind the header costs less than a second descriptor).
const GATHER_MIN: usize = 4096;

static MOUNTED: spin::Once<Client> = spin::Once::new();

/// The namespace the partition mounted at boot, if it has a 9P device.
pub fn mounted() -> Option<&'static Client> {
    MOUNTED.get()
}

/// Probes the virtio-9p device at `base` and mounts its namespace.
pub fn mount_device(base: u64, aname: &str) -> Result<&'static Client, Errno> {
    let dev = crate::drivers::virtio9p::probe(base).map_err(|e| {
        log::error!("virtio-9p device at {base:#x} unusable: {e:?}");
        Errno::ENODEV
    })?;
    let client = Client::mount(dev, aname)?;
    Ok(MOUNTED.call_once(|| client))
}

/// Why a walk failed, and how far it got.
struct WalkFailed {
    errno: Errno,
    matched: usize,
    last_ty: Option<u8>,
    /// The first of the walked names that is a symbolic link.
    first_link: Option<usize>,
}

/// A walk that reached its last name.
struct Walked {
    fid: Fid,
    last_ty: u8,
    /// The first of the names that is a symbolic link (the gateway walks
    /// through a relative link inside its export as the host resolves it).
    first_link: Option<usize>,
}

/// Linux's `MAXSYMLINKS`: links followed in one path lookup, nested ones
/// included.
const MAX_LINKS: u32 = 40;

/// A mounted 9P connection.
pub struct Client {
    dev: &'static Virtio9p,
    msize: u32,
    root: Fid,
    next_fid: AtomicU32,
    free_fids: IrqLock<Vec<Fid>>,
    next_tag: AtomicU16,
    /// Tags in flight, one bit each: a request waiting long (a socket's
    /// posted read) keeps its tag while the counter laps, and no other
    /// request may take it.
    tags: IrqLock<[u64; 1024]>,
    /// Reply buffers (msize bytes each) kept for reuse: allocating and
    /// zeroing one per request cost more than the rest of the client's work.
    buffers: IrqLock<Vec<Vec<u8>>>,
}

/// A tag in flight; it is free again when dropped (after the reply).
struct Tag<'a> {
    client: &'a Client,
    tag: u16,
}

impl Drop for Tag<'_> {
    fn drop(&mut self) {
        let (word, bit) = (usize::from(self.tag / 64), 1u64 << (self.tag % 64));
        self.client.tags.lock()[word] &= !bit;
    }
}

/// The Tread of `count` bytes at `offset` of `fid`.
fn read_request(tag: u16, fid: Fid, offset: u64, count: u32) -> Result<Vec<u8>, Errno> {
    let mut req = Vec::new();
    TMessage::Read { fid, offset, count }
        .encode(tag, &mut req)
        .map_err(|_| Errno::EINVAL)?;
    Ok(req)
}

/// The result of a Tread of `count` bytes with `tag` whose reply of `n`
/// bytes began with `hdr` (its data went elsewhere): the bytes read.
fn read_reply(hdr: &[u8], n: usize, tag: u16, count: u32) -> Result<usize, Errno> {
    use astraea_9p::consts::{MsgType, RREAD_HEADER_LEN};
    let Some(hdr) = hdr.get(..RREAD_HEADER_LEN) else {
        return Err(Errno::EPROTO);
    };
    let size = u32::from_le_bytes([hdr[0], hdr[1], hdr[2], hdr[3]]) as usize;
    let word = u32::from_le_bytes([hdr[7], hdr[8], hdr[9], hdr[10]]);
    if n < RREAD_HEADER_LEN || size != n || u16::from_le_bytes([hdr[5], hdr[6]]) != tag {
        return Err(Errno::EPROTO);
    }
    match hdr[4] {
        t if t == MsgType::Rread as u8 => {
            let got = word as usize;
            if got > count as usize || RREAD_HEADER_LEN + got != size {
                return Err(Errno::EPROTO);
            }
            Ok(got)
        }
        t if t == MsgType::Rlerror as u8 => Err(Errno(word)),
        _ => Err(Errno::EPROTO),
    }
}

/// A request in flight: its tag and its descriptor chain, until the
/// reply has come (dropped before, it waits for the reply: the device may
/// still use the request's buffers, which its owner drops after it).
struct InFlight<'a> {
    client: &'a Client,
    tag: Option<Tag<'a>>,
    head: Option<u16>,
    /// Bytes the reply may take.
    room: usize,
}

impl InFlight<'_> {
    /// Waits for the reply (once): its length, and the request's tag.
    fn complete(&mut self) -> (Result<usize, Errno>, u16) {
        let Some(head) = self.head.take() else {
            return (Err(Errno::EIO), 0);
        };
        let n = self
            .client
            .dev
            .complete(head, self.room)
            .map_err(|_| Errno::EIO);
        (n, self.tag.take().map_or(0, |t| t.tag))
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if self.head.is_some() {
            let _ = self.complete();
        }
    }
}

/// A read in flight ([`Client::read_post`]).
pub struct PostedRead<'a> {
    /// First field: dropped (waiting for the reply) before the buffers.
    flight: InFlight<'a>,
    /// Where the device reads the request and writes the reply's header:
    /// heap memory that stays in place while the read is in flight.
    _req: Vec<u8>,
    hdr: Vec<u8>,
    buf: Vec<u8>,
    count: u32,
}

impl PostedRead<'_> {
    /// Waits for the reply: the buffer back, with the bytes read into it.
    pub fn wait(mut self) -> (Vec<u8>, Result<usize, Errno>) {
        let (n, tag) = self.flight.complete();
        let r = n.and_then(|n| read_reply(&self.hdr, n, tag, self.count));
        (core::mem::take(&mut self.buf), r)
    }
}

/// A write in flight ([`Client::write_post`]).
pub struct PostedWrite<'a> {
    /// First field: dropped (waiting for the reply) before the buffers.
    flight: InFlight<'a>,
    /// Heap memory the device reads and writes while the write is in flight.
    _hdr: Vec<u8>,
    reply: Vec<u8>,
    _data: &'a [u8],
}

impl PostedWrite<'_> {
    /// Waits for the reply: the bytes written.
    pub fn wait(mut self) -> Result<usize, Errno> {
        let (n, tag) = self.flight.complete();
        match Client::decode(&self.reply[..n?.min(self.reply.len())], tag)? {
            RMessage::Write { count } => Ok(count as usize),
            _ => Err(Errno::EPROTO),
        }
    }
}

/// A reply buffer on loan from the client's pool; it goes back when dropped.
struct PooledBuf<'a> {
    pool: &'a IrqLock<Vec<Vec<u8>>>,
    buf: Vec<u8>,
}

impl core::ops::Deref for PooledBuf<'_> {
    type Target = Vec<u8>;
    fn deref(&self) -> &Vec<u8> {
        &self.buf
    }
}

impl core::ops::DerefMut for PooledBuf<'_> {
    fn deref_mut(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }
}

impl Drop for PooledBuf<'_> {
    fn drop(&mut self) {
        let mut pool = self.pool.lock();
        if pool.len() < 16 {
            pool.push(core::mem::take(&mut self.buf));
        }
    }
}

impl Client {
    /// Negotiates the version and attaches the root of the namespace.
    pub fn mount(dev: &'static Virtio9p, aname: &str) -> Result<Client, Errno> {
        let mut c = Client {
            dev,
            msize: MSIZE,
            root: 0,
            next_fid: AtomicU32::new(1),
            free_fids: IrqLock::new(Vec::new()),
            next_tag: AtomicU16::new(1),
            tags: IrqLock::new([0; 1024]),
            buffers: IrqLock::new(Vec::new()),
        };
        let mut buf = Vec::new();
        let v = TMessage::Version {
            msize: MSIZE,
            version: Str::from(VERSION_9P2000L),
        };
        match c.rpc_tag(astraea_9p::NOTAG, &v, &mut buf)? {
            RMessage::Version { msize, version } if version == VERSION_9P2000L => {
                c.msize = msize.min(MSIZE);
            }
            _ => return Err(Errno::EPROTO),
        }
        let root = c.alloc_fid();
        let a = TMessage::Attach {
            fid: root,
            afid: astraea_9p::NOFID,
            uname: Str::from(""),
            aname: Str::from(aname),
            n_uname: 0,
        };
        match c.rpc(&a, &mut buf)? {
            RMessage::Attach { .. } => c.root = root,
            _ => return Err(Errno::EPROTO),
        }
        Ok(c)
    }

    /// The negotiated message size.
    pub fn msize(&self) -> u32 {
        self.msize
    }

    /// The largest read or write payload per request.
    pub fn iounit(&self) -> u32 {
        self.msize - 24
    }

    /// The fid of the namespace root.
    pub fn root(&self) -> Fid {
        self.root
    }

    fn buffer(&self) -> PooledBuf<'_> {
        let buf = self.buffers.lock().pop().unwrap_or_default();
        PooledBuf {
            pool: &self.buffers,
            buf,
        }
    }

    fn alloc_fid(&self) -> Fid {
        self.free_fids
            .lock()
            .pop()
            .unwrap_or_else(|| self.next_fid.fetch_add(1, Ordering::Relaxed))
    }

    /// A tag no request in flight has (never `NOTAG`).
    fn alloc_tag(&self) -> Tag<'_> {
        loop {
            let tag = self.next_tag.fetch_add(1, Ordering::Relaxed);
            if tag == astraea_9p::NOTAG {
                continue;
            }
            let (word, bit) = (usize::from(tag / 64), 1u64 << (tag % 64));
            let mut tags = self.tags.lock();
            if tags[word] & bit == 0 {
                tags[word] |= bit;
                return Tag { client: self, tag };
            }
        }
    }

    fn rpc<'b>(&self, t: &TMessage<'_>, buf: &'b mut Vec<u8>) -> Result<RMessage<'b>, Errno> {
        let tag = self.alloc_tag();
        self.rpc_tag(tag.tag, t, buf)
    }

    fn rpc_tag<'b>(
        &self,
        tag: u16,
        t: &TMessage<'_>,
        buf: &'b mut Vec<u8>,
    ) -> Result<RMessage<'b>, Errno> {
        let mut req = Vec::new();
        t.encode(tag, &mut req).map_err(|_| Errno::EINVAL)?;
        if buf.len() < self.msize as usize {
            buf.resize(self.msize as usize, 0);
        }
        let n = loop {
            let n = self.dev.request(&req, buf).map_err(|_| Errno::EIO)?;
            if !Self::again(&buf[..n]) {
                break n;
            }
        };
        Self::decode(&buf[..n], tag)
    }

    /// Whether `reply` is an `EINTR` that the calling thread should send
    /// its request again for: a thread whose requests wait for the network
    /// (`sched::Thread::posts`) gets one only when a snapshot interrupted
    /// its waiting read or open (`snapshot::take`), which did nothing and
    /// may simply be asked again (held until the snapshot is done).
    fn again(reply: &[u8]) -> bool {
        crate::sched::current().posts()
            && matches!(
                Self::decode(reply, Frame::new_checked(reply).map_or(0, |f| f.tag())),
                Err(Errno::EINTR)
            )
    }

    /// Sends `msgs` together (one notification, one wait for the slowest)
    /// and decodes each reply with `each`; for small replies (`reply_len`
    /// bytes at most each).
    fn rpc_batch<R>(
        &self,
        msgs: &[TMessage<'_>],
        reply_len: usize,
        mut each: impl FnMut(usize, Result<RMessage<'_>, Errno>) -> R,
    ) -> Vec<R> {
        let tags: Vec<Tag<'_>> = msgs.iter().map(|_| self.alloc_tag()).collect();
        let mut reqs = Vec::with_capacity(msgs.len());
        for (m, t) in msgs.iter().zip(&tags) {
            let mut r = Vec::new();
            if m.encode(t.tag, &mut r).is_err() {
                // Only a message too large for 9P fails: none is sent.
                return (0..msgs.len())
                    .map(|i| each(i, Err(Errno::EINVAL)))
                    .collect();
            }
            reqs.push(r);
        }
        let bytes: Vec<&[u8]> = reqs.iter().map(Vec::as_slice).collect();
        let mut bufs = vec![vec![0u8; reply_len]; msgs.len()];
        let lens = {
            let mut views: Vec<&mut [u8]> = bufs.iter_mut().map(Vec::as_mut_slice).collect();
            self.dev.request_many(&bytes, &mut views)
        };
        lens.iter()
            .zip(bufs.iter_mut())
            .zip(&tags)
            .enumerate()
            .map(|(i, ((len, buf), t))| match len {
                // Interrupted by a snapshot: again, alone (see `again`).
                Ok(n) if Self::again(&buf[..*n]) => each(i, self.rpc_tag(t.tag, &msgs[i], buf)),
                Ok(n) => each(i, Self::decode(&buf[..*n], t.tag)),
                Err(_) => each(i, Err(Errno::EIO)),
            })
            .collect()
    }

    /// Checks a reply's frame and tag and decodes it (`Rlerror` as its errno).
    fn decode(reply: &[u8], tag: u16) -> Result<RMessage<'_>, Errno> {
        let frame = Frame::new_checked(reply).map_err(|_| Errno::EPROTO)?;
        if frame.tag() != tag {
            return Err(Errno::EPROTO);
        }
        match RMessage::decode(&frame).map_err(|_| Errno::EPROTO)? {
            RMessage::Lerror { ecode } => Err(Errno(ecode)),
            r => Ok(r),
        }
    }

    /// Walks from the root to each of `paths` and opens it with its flags,
    /// all together: a round of walks, a round of opens (and one of clunks
    /// for the opens that failed) whatever their number. Each result is the
    /// open fid.
    pub fn open_many(&self, paths: &[(&[&str], u32)]) -> Vec<Result<Fid, Errno>> {
        let names: Vec<Vec<Str<'_>>> = paths
            .iter()
            .map(|(p, _)| p.iter().map(|n| Str::from(*n)).collect())
            .collect();
        let Ok(walk_names) = names
            .iter()
            .map(|n| WalkNames::new(n))
            .collect::<Result<Vec<_>, _>>()
        else {
            return paths.iter().map(|_| Err(Errno::ENAMETOOLONG)).collect();
        };
        let fids: Vec<Fid> = paths.iter().map(|_| self.alloc_fid()).collect();
        let walks: Vec<TMessage<'_>> = walk_names
            .into_iter()
            .zip(&fids)
            .map(|(names, &newfid)| TMessage::Walk {
                fid: self.root,
                newfid,
                names,
            })
            .collect();
        let walked = self.rpc_batch(&walks, 256, |i, r| match r {
            Ok(RMessage::Walk { qids }) if qids.len() == paths[i].0.len() => Ok(()),
            // A partial walk makes no fid.
            Ok(RMessage::Walk { .. }) => Err(Errno::ENOENT),
            Ok(_) => Err(Errno::EPROTO),
            Err(e) => Err(e),
        });
        let opens: Vec<TMessage<'_>> = walked
            .iter()
            .zip(&fids)
            .zip(paths)
            .filter(|((w, _), _)| w.is_ok())
            .map(|((_, &fid), &(_, flags))| TMessage::Lopen { fid, flags })
            .collect();
        let mut opened = self
            .rpc_batch(&opens, 256, |_, r| match r {
                Ok(RMessage::Lopen { .. }) => Ok(()),
                Ok(_) => Err(Errno::EPROTO),
                Err(e) => Err(e),
            })
            .into_iter();
        let mut out = Vec::with_capacity(paths.len());
        let mut unopened = Vec::new();
        for (w, &fid) in walked.into_iter().zip(&fids) {
            let r = match w {
                Ok(()) => opened.next().unwrap_or(Err(Errno::EIO)).map(|()| fid),
                Err(e) => {
                    // Never made at the server: free for reuse at once.
                    self.free_fids.lock().push(fid);
                    Err(e)
                }
            };
            if w.is_ok() && r.is_err() {
                unopened.push(fid);
            }
            out.push(r);
        }
        self.clunk_many(&unopened);
        out
    }

    /// Reads up to `max` bytes at offset 0 of each of `fids`, all together.
    pub fn read_many(&self, fids: &[Fid], max: u32) -> Vec<Result<Vec<u8>, Errno>> {
        let count = max.min(self.iounit());
        let reads: Vec<TMessage<'_>> = fids
            .iter()
            .map(|&fid| TMessage::Read {
                fid,
                offset: 0,
                count,
            })
            .collect();
        self.rpc_batch(&reads, count as usize + 64, |_, r| match r {
            Ok(RMessage::Read { data }) => Ok(data.to_vec()),
            Ok(_) => Err(Errno::EPROTO),
            Err(e) => Err(e),
        })
    }

    /// Releases each of `fids`, all together (errors are ignored).
    pub fn clunk_many(&self, fids: &[Fid]) {
        if fids.is_empty() {
            return;
        }
        let clunks: Vec<TMessage<'_>> = fids.iter().map(|&fid| TMessage::Clunk { fid }).collect();
        self.rpc_batch(&clunks, 64, |_, _| ());
        self.free_fids.lock().extend_from_slice(fids);
    }

    /// Walks from `from` along `names` to a new fid.
    pub fn walk(&self, from: Fid, names: &[&str]) -> Result<Fid, Errno> {
        self.walk_detail(from, names)
            .map(|w| w.fid)
            .map_err(|w| w.errno)
    }

    /// Walks from `from` along `names`; on success also gives the type of
    /// the last element's qid, on failure how many names were walked and
    /// the type of the last one that was; both say where the first link is.
    fn walk_detail(&self, from: Fid, names: &[&str]) -> Result<Walked, WalkFailed> {
        let mut first_link = None;
        let fail = |errno, matched, last_ty, first_link| WalkFailed {
            errno,
            matched,
            last_ty,
            first_link,
        };
        let newfid = self.alloc_fid();
        let mut buf = self.buffer();
        let mut cur = from;
        let mut done = 0usize;
        let mut last_ty = 0u8;
        let chunks: Vec<&[&str]> = if names.is_empty() {
            vec![&[][..]]
        } else {
            names.chunks(MAXWELEM).collect()
        };
        for chunk in chunks {
            let strs: Vec<Str<'_>> = chunk.iter().map(|n| Str::from(*n)).collect();
            let w = TMessage::Walk {
                fid: cur,
                newfid,
                names: WalkNames::new(&strs)
                    .map_err(|_| fail(Errno::ENAMETOOLONG, done, None, first_link))?,
            };
            let result = match self.rpc(&w, &mut buf) {
                Ok(RMessage::Walk { qids }) => {
                    if let Some(q) = qids.last() {
                        last_ty = q.ty;
                    }
                    if first_link.is_none() {
                        first_link = qids
                            .iter()
                            .position(|q| q.ty & astraea_9p::QTSYMLINK != 0)
                            .map(|i| done + i);
                    }
                    if qids.len() == chunk.len() {
                        Ok(())
                    } else {
                        let ty = (!qids.is_empty()).then_some(last_ty);
                        Err(fail(Errno::ENOENT, done + qids.len(), ty, first_link))
                    }
                }
                Ok(_) => Err(fail(Errno::EPROTO, done, None, first_link)),
                Err(e) => Err(fail(e, done, None, first_link)),
            };
            if let Err(e) = result {
                if cur == newfid {
                    self.clunk(newfid);
                } else {
                    self.free_fids.lock().push(newfid);
                }
                return Err(e);
            }
            cur = newfid;
            done += chunk.len();
        }
        Ok(Walked {
            fid: newfid,
            last_ty,
            first_link,
        })
    }

    /// Walks an absolute path, following symbolic links the way Linux's
    /// path lookup does: an absolute link restarts at the partition's root,
    /// a relative one at the link's directory. The gateway itself never
    /// follows a link out of an export, so links are resolved here.
    pub fn walk_path(&self, path: &str) -> Result<Fid, Errno> {
        self.walk_path_ty(path, true).map(|(fid, _)| fid)
    }

    /// [`walk_path`](Self::walk_path) to a directory: `ENOTDIR` if the
    /// path names anything else (the parent of a name to create or remove).
    pub fn walk_path_dir(&self, path: &str) -> Result<Fid, Errno> {
        let (fid, ty) = self.walk_path_ty(path, true)?;
        if ty & astraea_9p::QTDIR == 0 && path.split('/').any(|c| !c.is_empty()) {
            self.clunk(fid);
            return Err(Errno::ENOTDIR);
        }
        Ok(fid)
    }

    /// [`walk_path`](Self::walk_path), but a symbolic link in the last
    /// position is the result itself (`lstat`, `O_NOFOLLOW`, `unlink`).
    pub fn walk_path_nofollow(&self, path: &str) -> Result<Fid, Errno> {
        self.walk_path_ty(path, false).map(|(fid, _)| fid)
    }

    /// [`walk_path`](Self::walk_path) that also gives the path with every
    /// link resolved and no `.` or `..` (Linux's `d_path` of the result:
    /// what `getcwd` says after a `chdir` through a link).
    pub fn walk_path_real(&self, path: &str) -> Result<(Fid, String), Errno> {
        let (fid, _, names) = self.namei(path, true)?;
        Ok((fid, alloc::format!("/{}", names.join("/"))))
    }

    /// The walk itself: the fid and the type of the file it reached.
    fn walk_path_ty(&self, path: &str, follow_last: bool) -> Result<(Fid, u8), Errno> {
        // Most paths take one walk: no `..`, and no link to follow but those
        // the gateway walked through inside its export, as the host
        // resolves them. The rest go the long way, a name at a time.
        if !path.split('/').any(|c| c == "..") {
            let names: Vec<&str> = path
                .split('/')
                .filter(|c| !c.is_empty() && *c != ".")
                .collect();
            match self.walk_detail(self.root, &names) {
                Ok(w) if names.is_empty() => return Ok((w.fid, astraea_9p::QTDIR)),
                Ok(w) if w.last_ty & astraea_9p::QTSYMLINK == 0 || !follow_last => {
                    return Ok((w.fid, w.last_ty));
                }
                Ok(w) => self.clunk(w.fid),
                Err(w) if w.first_link.is_some() => {}
                Err(w) => return Err(Self::walk_errno(&w)),
            }
        }
        self.namei(path, follow_last).map(|(fid, ty, _)| (fid, ty))
    }

    /// The errno of a walk that stopped short with no link before where it
    /// stopped. One that stopped after a file that is neither a directory
    /// nor a link stopped because it cannot be walked through: Linux says
    /// ENOTDIR for `file/x`, not ENOENT.
    fn walk_errno(w: &WalkFailed) -> Errno {
        let plain = |t: u8| t & (astraea_9p::QTDIR | astraea_9p::QTSYMLINK) == 0;
        if w.errno == Errno::ENOENT && w.matched > 0 && w.last_ty.is_some_and(plain) {
            Errno::ENOTDIR
        } else {
            w.errno
        }
    }

    /// Linux's path walk, a run of names at a time: `done` holds the
    /// names walked so far with every link in them resolved, so a `..`
    /// takes the last of them off (`link/..` is the parent of where the
    /// link leads, not the link's own directory), and each link met is
    /// replaced by its target (at most [`MAX_LINKS`] in all). Gives the
    /// fid, its type and the resolved names.
    fn namei(&self, path: &str, follow_last: bool) -> Result<(Fid, u8, Vec<String>), Errno> {
        let mut done: Vec<String> = Vec::new();
        let mut todo: VecDeque<String> = path
            .split('/')
            .filter(|c| !c.is_empty() && *c != ".")
            .map(String::from)
            .collect();
        let mut links = 0u32;
        loop {
            // What `done` holds are directories (walked through, or checked
            // before a `..`), so `..` is theirs to take off.
            while todo.front().is_some_and(|c| c == "..") {
                todo.pop_front();
                done.pop();
            }
            let run = todo.iter().position(|c| c == "..").unwrap_or(todo.len());
            let ends = run == todo.len();
            let names: Vec<&str> = done
                .iter()
                .chain(todo.iter().take(run))
                .map(String::as_str)
                .collect();
            let walked = self.walk_detail(self.root, &names);
            let first_link = match &walked {
                Ok(w) => w.first_link,
                Err(w) => w.first_link,
            };
            // A link is followed unless it is the path's last name and the
            // caller wants the link itself.
            let last = names.len().wrapping_sub(1);
            if let Some(at) = first_link.filter(|&at| !(ends && at == last && !follow_last)) {
                if let Ok(w) = &walked {
                    self.clunk(w.fid);
                }
                links += 1;
                if links > MAX_LINKS {
                    return Err(Errno::ELOOP);
                }
                let link = self.walk(self.root, &names[..=at])?;
                let target = self.readlink(link);
                self.clunk(link);
                let target = target?;
                // `done` holds no link; one there now means the tree
                // changed under the walk.
                let Some(in_todo) = at.checked_sub(done.len()) else {
                    return Err(Errno::ENOENT);
                };
                let before: Vec<String> = todo.drain(..=in_todo).take(in_todo).collect();
                if target.starts_with('/') {
                    done.clear();
                } else {
                    done.extend(before);
                }
                for c in target.rsplit('/').filter(|c| !c.is_empty() && *c != ".") {
                    todo.push_front(String::from(c));
                }
                continue;
            }
            let w = walked.map_err(|w| Self::walk_errno(&w))?;
            let ty = if names.is_empty() {
                astraea_9p::QTDIR
            } else {
                w.last_ty
            };
            done.extend(todo.drain(..run));
            if ends {
                return Ok((w.fid, ty, done));
            }
            self.clunk(w.fid);
            // `file/..`: what precedes a `..` must be a directory.
            if ty & astraea_9p::QTDIR == 0 {
                return Err(Errno::ENOTDIR);
            }
        }
    }

    /// Folds the `..` of the absolute path `raw` as Linux walks them: what
    /// precedes each must exist and be a directory (`missing/..` is
    /// ENOENT, `file/..` ENOTDIR, a looping link ELOOP), and a link before
    /// one is resolved first. Gives the path without `.` and `..` (names
    /// after the last `..` stay as they are, links included).
    pub fn fold_dotdot(&self, raw: &str) -> Result<String, Errno> {
        let comps: Vec<&str> = raw
            .split('/')
            .filter(|c| !c.is_empty() && *c != ".")
            .collect();
        let Some(last) = comps.iter().rposition(|c| *c == "..") else {
            return Ok(alloc::format!("/{}", comps.join("/")));
        };
        let (fid, _, mut names) = self.namei(&comps[..=last].join("/"), true)?;
        self.clunk(fid);
        names.extend(comps[last + 1..].iter().map(|c| String::from(*c)));
        Ok(alloc::format!("/{}", names.join("/")))
    }

    /// Opens a walked fid with Linux `O_*` flags.
    pub fn open(&self, fid: Fid, flags: u32) -> Result<Qid, Errno> {
        let mut buf = self.buffer();
        match self.rpc(&TMessage::Lopen { fid, flags }, &mut buf)? {
            RMessage::Lopen { qid, .. } => Ok(qid),
            _ => Err(Errno::EPROTO),
        }
    }

    /// Creates `name` in the directory `dirfid`, which then refers to the new
    /// open file.
    pub fn create(&self, dirfid: Fid, name: &str, flags: u32, mode: u32) -> Result<Qid, Errno> {
        let mut buf = self.buffer();
        let t = TMessage::Lcreate {
            fid: dirfid,
            name: Str::from(name),
            flags,
            mode,
            gid: 0,
        };
        match self.rpc(&t, &mut buf)? {
            RMessage::Lcreate { qid, .. } => Ok(qid),
            _ => Err(Errno::EPROTO),
        }
    }

    /// Reads up to `out.len()` bytes at `offset`.
    pub fn read(&self, fid: Fid, offset: u64, out: &mut [u8]) -> Result<usize, Errno> {
        if out.len() >= 4096 {
            return self.read_direct(fid, offset, out);
        }
        let mut buf = self.buffer();
        let count = (out.len() as u32).min(self.iounit());
        match self.rpc(&TMessage::Read { fid, offset, count }, &mut buf)? {
            RMessage::Read { data } => {
                let n = data.len().min(out.len());
                out[..n].copy_from_slice(&data[..n]);
                Ok(n)
            }
            _ => Err(Errno::EPROTO),
        }
    }

    /// [`read`](Self::read) with the data written by the device straight
    /// into `out` (kernel memory is one contiguous guest-physical range):
    /// no copy, and no touch of a fresh page through a second mapping.
    fn read_direct(&self, fid: Fid, offset: u64, out: &mut [u8]) -> Result<usize, Errno> {
        use astraea_9p::consts::RREAD_HEADER_LEN;
        let count = (out.len() as u32).min(self.iounit());
        let guard = self.alloc_tag();
        let tag = guard.tag;
        let req = read_request(tag, fid, offset, count)?;
        let mut hdr = [0u8; RREAD_HEADER_LEN];
        let data = (crate::mm::virt_to_phys(out.as_mut_ptr() as u64), count);
        loop {
            let n = self
                .dev
                .request_split(&req, &mut hdr, data)
                .map_err(|_| Errno::EIO)?;
            let r = read_reply(&hdr, n, tag, count);
            // Interrupted by a snapshot: again (see `again`).
            if r != Err(Errno::EINTR) || !crate::sched::current().posts() {
                return r;
            }
        }
    }

    /// Starts a read of up to `want` bytes (at most `buf`'s length) at
    /// `offset` into `buf`, written by the device straight into it, and
    /// returns at once: several may be in flight, and the gateway serves
    /// the reads of a socket in the order they were started. `Err` gives
    /// `buf` back when the ring has no room now or the request cannot be
    /// made.
    pub fn read_post(
        &self,
        fid: Fid,
        offset: u64,
        mut buf: Vec<u8>,
        want: usize,
    ) -> Result<PostedRead<'_>, Vec<u8>> {
        use astraea_9p::consts::RREAD_HEADER_LEN;
        let count = (want.min(buf.len()) as u32).min(self.iounit());
        let tag = self.alloc_tag();
        let Ok(req) = read_request(tag.tag, fid, offset, count) else {
            return Err(buf);
        };
        let mut hdr = alloc::vec![0u8; RREAD_HEADER_LEN];
        let data = (crate::mm::virt_to_phys(buf.as_mut_ptr() as u64), count);
        match self.dev.submit_split(&req, &mut hdr, data) {
            Ok(Some(head)) => Ok(PostedRead {
                flight: InFlight {
                    client: self,
                    tag: Some(tag),
                    head: Some(head),
                    room: RREAD_HEADER_LEN + count as usize,
                },
                _req: req,
                hdr,
                buf,
                count,
            }),
            Ok(None) | Err(_) => Err(buf),
        }
    }

    /// Reads a whole file from an open fid.
    pub fn read_all(&self, fid: Fid) -> Result<Vec<u8>, Errno> {
        let mut out = Vec::new();
        let mut chunk = vec![0u8; self.iounit() as usize];
        loop {
            let n = self.read(fid, out.len() as u64, &mut chunk)?;
            if n == 0 {
                return Ok(out);
            }
            out.extend_from_slice(&chunk[..n]);
        }
    }

    /// Writes `data` at `offset`; returns how much was written.
    pub fn write(&self, fid: Fid, offset: u64, data: &[u8]) -> Result<usize, Errno> {
        let n = data.len().min(self.iounit() as usize);
        if n >= GATHER_MIN && data.as_ptr() as u64 >= crate::mm::DIRECT_MAP {
            return self.write_gather(fid, offset, &data[..n]);
        }
        let mut buf = self.buffer();
        let t = TMessage::Write {
            fid,
            offset,
            data: &data[..n],
        };
        match self.rpc(&t, &mut buf)? {
            RMessage::Write { count } => Ok(count as usize),
            _ => Err(Errno::EPROTO),
        }
    }

    /// [`write`](Self::write) of kernel bytes sent from where they are: the
    /// header in a descriptor of its own, the payload in the next, instead
    /// of copied into one message (a socket's bulk writes are each an
    /// iounit of bytes).
    fn write_gather(&self, fid: Fid, offset: u64, data: &[u8]) -> Result<usize, Errno> {
        let guard = self.alloc_tag();
        let tag = guard.tag;
        let hdr = astraea_9p::encode_twrite_header(tag, fid, offset, data.len() as u32)
            .map_err(|_| Errno::EINVAL)?;
        // An Rwrite or an Rlerror: a few bytes.
        let mut reply = [0u8; 64];
        let n = self
            .dev
            .request_gather(&hdr, data, &mut reply)
            .map_err(|_| Errno::EIO)?;
        match Self::decode(&reply[..n.min(reply.len())], tag)? {
            RMessage::Write { count } => Ok(count as usize),
            _ => Err(Errno::EPROTO),
        }
    }

    /// Starts a write of `data` (kernel memory, at most an iounit) at
    /// `offset`, sent from where it is, and returns at once: several may
    /// be in flight, and the gateway sends the writes of a socket in the
    /// order they were started, each whole before the next. `None` when
    /// the ring has no room now or `data` cannot go this way (then write
    /// it with [`write`](Self::write)).
    pub fn write_post<'a>(
        &'a self,
        fid: Fid,
        offset: u64,
        data: &'a [u8],
    ) -> Option<PostedWrite<'a>> {
        if data.len() > self.iounit() as usize
            || data.is_empty()
            || (data.as_ptr() as u64) < crate::mm::DIRECT_MAP
        {
            return None;
        }
        let tag = self.alloc_tag();
        let hdr = astraea_9p::encode_twrite_header(tag.tag, fid, offset, data.len() as u32).ok()?;
        let hdr = hdr.to_vec();
        // An Rwrite or an Rlerror: a few bytes.
        let mut reply = alloc::vec![0u8; 64];
        let head = self.dev.submit_gather(&hdr, data, &mut reply).ok()??;
        Some(PostedWrite {
            flight: InFlight {
                client: self,
                tag: Some(tag),
                head: Some(head),
                room: reply.len(),
            },
            _hdr: hdr,
            reply,
            _data: data,
        })
    }

    /// Releases a fid, reporting the server's answer (an extended attribute
    /// being set is applied at its clunk); the fid is gone either way.
    pub fn clunk_checked(&self, fid: Fid) -> Result<(), Errno> {
        let mut buf = self.buffer();
        let r = self.rpc(&TMessage::Clunk { fid }, &mut buf).map(|_| ());
        self.free_fids.lock().push(fid);
        r
    }

    /// The value of extended attribute `name` of `fid` (the list of names,
    /// NUL-terminated, for an empty `name`), at most `max` bytes: `ERANGE`
    /// if it is longer.
    pub fn xattr_get(&self, fid: Fid, name: &str, max: usize) -> Result<Vec<u8>, Errno> {
        let newfid = self.alloc_fid();
        let mut buf = self.buffer();
        let t = TMessage::Xattrwalk {
            fid,
            newfid,
            name: Str::from(name),
        };
        let size = match self.rpc(&t, &mut buf) {
            Ok(RMessage::Xattrwalk { size }) => size,
            Ok(_) => {
                self.clunk(newfid);
                return Err(Errno::EPROTO);
            }
            Err(e) => {
                self.free_fids.lock().push(newfid);
                return Err(e);
            }
        };
        let r = (|| {
            let size = usize::try_from(size).map_err(|_| Errno::E2BIG)?;
            if size > max {
                return Err(Errno::ERANGE);
            }
            let mut out = alloc::vec![0u8; size];
            let mut got = 0;
            while got < size {
                let n = self.read(newfid, got as u64, &mut out[got..])?;
                if n == 0 {
                    break;
                }
                got += n;
            }
            out.truncate(got);
            Ok(out)
        })();
        self.clunk(newfid);
        r
    }

    /// Sets extended attribute `name` of the (unopened) `fid` to `value`
    /// with `XATTR_*` `flags`, or removes it (`value` `None`); the fid is
    /// used up.
    pub fn xattr_set(
        &self,
        fid: Fid,
        name: &str,
        value: Option<&[u8]>,
        flags: u32,
    ) -> Result<(), Errno> {
        let mut buf = self.buffer();
        let size = value.map_or(0, <[u8]>::len);
        // An empty value is told apart from a removal (both size 0).
        let flags = if value == Some(&[]) {
            flags | astraea_9p::consts::P9_XATTR_EMPTY
        } else {
            flags
        };
        let t = TMessage::Xattrcreate {
            fid,
            name: Str::from(name),
            attr_size: size as u64,
            flags,
        };
        if let Err(e) = self.rpc(&t, &mut buf) {
            self.clunk(fid);
            return Err(e);
        }
        let mut done = 0;
        let data = value.unwrap_or_default();
        while done < data.len() {
            match self.write(fid, done as u64, &data[done..]) {
                Ok(0) => {
                    self.clunk(fid);
                    return Err(Errno::EIO);
                }
                Ok(n) => done += n,
                Err(e) => {
                    self.clunk(fid);
                    return Err(e);
                }
            }
        }
        self.clunk_checked(fid)
    }

    /// Releases a fid (errors are ignored: the fid is gone either way).
    pub fn clunk(&self, fid: Fid) {
        let mut buf = self.buffer();
        let _ = self.rpc(&TMessage::Clunk { fid }, &mut buf);
        self.free_fids.lock().push(fid);
    }

    /// The attributes of a fid.
    pub fn getattr(&self, fid: Fid) -> Result<Stat, Errno> {
        let mut buf = self.buffer();
        let t = TMessage::Getattr {
            fid,
            request_mask: GETATTR_BASIC | astraea_9p::P9_GETATTR_BTIME,
        };
        match self.rpc(&t, &mut buf)? {
            RMessage::Getattr { stat } => Ok(stat),
            _ => Err(Errno::EPROTO),
        }
    }

    /// Every entry of an open directory: (name, `DT_*` type).
    /// One `Treaddir` of at most `count` bytes from the server's position
    /// `offset` (0, or an entry's offset from an earlier answer): the
    /// entries, none at the end.
    pub fn readdir_at(&self, fid: Fid, offset: u64, count: u32) -> Result<Vec<DirEnt>, Errno> {
        let t = TMessage::Readdir {
            fid,
            offset,
            count: count.min(self.iounit()),
        };
        let mut buf = self.buffer();
        let r = self.rpc(&t, &mut buf)?;
        let Some(entries) = DirEntryIter::from_message(&r) else {
            return Err(Errno::EPROTO);
        };
        entries
            .map(|e| {
                let e = e.map_err(|_| Errno::EPROTO)?;
                Ok(DirEnt {
                    name: String::from_utf8_lossy(e.name.as_ref()).into_owned(),
                    ty: e.ty,
                    ino: e.qid.path,
                    next: e.offset,
                })
            })
            .collect()
    }

    pub fn readdir(&self, fid: Fid) -> Result<Vec<(String, u8)>, Errno> {
        let mut out = Vec::new();
        let mut offset = 0;
        let mut buf = self.buffer();
        loop {
            let t = TMessage::Readdir {
                fid,
                offset,
                count: self.iounit(),
            };
            let r = self.rpc(&t, &mut buf)?;
            let Some(entries) = DirEntryIter::from_message(&r) else {
                return Err(Errno::EPROTO);
            };
            let before = out.len();
            for e in entries {
                let e = e.map_err(|_| Errno::EPROTO)?;
                offset = e.offset;
                out.push((String::from_utf8_lossy(e.name.as_ref()).into_owned(), e.ty));
            }
            if out.len() == before {
                return Ok(out);
            }
        }
    }

    /// Creates a directory.
    pub fn mkdir(&self, dirfid: Fid, name: &str, mode: u32) -> Result<Qid, Errno> {
        let mut buf = self.buffer();
        let t = TMessage::Mkdir {
            dfid: dirfid,
            name: Str::from(name),
            mode,
            gid: 0,
        };
        match self.rpc(&t, &mut buf)? {
            RMessage::Mkdir { qid } => Ok(qid),
            _ => Err(Errno::EPROTO),
        }
    }

    /// Creates a node that is not a directory (`mode` holds its type: a
    /// socket file for a Unix socket's `bind`).
    pub fn mknod(&self, dirfid: Fid, name: &str, mode: u32) -> Result<Qid, Errno> {
        let mut buf = self.buffer();
        let t = TMessage::Mknod {
            dfid: dirfid,
            name: Str::from(name),
            mode,
            major: 0,
            minor: 0,
            gid: 0,
        };
        match self.rpc(&t, &mut buf)? {
            RMessage::Mknod { qid } => Ok(qid),
            _ => Err(Errno::EPROTO),
        }
    }

    /// Removes `name` from a directory (`flags`: `AT_REMOVEDIR` for directories).
    pub fn unlinkat(&self, dirfid: Fid, name: &str, flags: u32) -> Result<(), Errno> {
        let mut buf = self.buffer();
        let t = TMessage::Unlinkat {
            dirfid,
            name: Str::from(name),
            flags,
        };
        match self.rpc(&t, &mut buf) {
            Ok(RMessage::Unlinkat) => Ok(()),
            Ok(_) => Err(Errno::EPROTO),
            // Servers without Tunlinkat (diod) still have Tremove, which
            // also releases the fid.
            Err(Errno::EOPNOTSUPP) => {
                let fid = self.walk(dirfid, &[name])?;
                let r = match self.rpc(&TMessage::Remove { fid }, &mut buf) {
                    Ok(RMessage::Remove) => Ok(()),
                    Ok(_) => Err(Errno::EPROTO),
                    Err(e) => Err(e),
                };
                self.free_fids.lock().push(fid);
                r
            }
            Err(e) => Err(e),
        }
    }

    /// Renames `olddir/oldname` to `newdir/newname`.
    pub fn renameat(
        &self,
        olddir: Fid,
        oldname: &str,
        newdir: Fid,
        newname: &str,
    ) -> Result<(), Errno> {
        let mut buf = self.buffer();
        let t = TMessage::Renameat {
            olddirfid: olddir,
            oldname: Str::from(oldname),
            newdirfid: newdir,
            newname: Str::from(newname),
        };
        match self.rpc(&t, &mut buf) {
            Ok(RMessage::Renameat) => Ok(()),
            Ok(_) => Err(Errno::EPROTO),
            // Servers without Trenameat (diod) still have Trename.
            Err(Errno::EOPNOTSUPP) => {
                let fid = self.walk(olddir, &[oldname])?;
                let t = TMessage::Rename {
                    fid,
                    dfid: newdir,
                    name: Str::from(newname),
                };
                let r = match self.rpc(&t, &mut buf) {
                    Ok(RMessage::Rename) => Ok(()),
                    Ok(_) => Err(Errno::EPROTO),
                    Err(e) => Err(e),
                };
                self.clunk(fid);
                r
            }
            Err(e) => Err(e),
        }
    }

    /// Sets attributes of a fid (`attr.valid` says which, `P9_SETATTR_*`).
    pub fn setattr(&self, fid: Fid, attr: astraea_9p::SetAttr) -> Result<(), Errno> {
        let mut buf = self.buffer();
        match self.rpc(&TMessage::Setattr { fid, attr }, &mut buf)? {
            RMessage::Setattr => Ok(()),
            _ => Err(Errno::EPROTO),
        }
    }

    /// Sets a file's size (`truncate`).
    pub fn truncate(&self, fid: Fid, size: u64) -> Result<(), Errno> {
        self.setattr(
            fid,
            astraea_9p::SetAttr {
                valid: astraea_9p::consts::P9_SETATTR_SIZE,
                size,
                ..astraea_9p::SetAttr::default()
            },
        )
    }

    /// Flushes a file to stable storage.
    pub fn fsync(&self, fid: Fid) -> Result<(), Errno> {
        let mut buf = self.buffer();
        match self.rpc(&TMessage::Fsync { fid, datasync: 0 }, &mut buf)? {
            RMessage::Fsync => Ok(()),
            _ => Err(Errno::EPROTO),
        }
    }

    /// Takes or releases a POSIX record lock (`ty`: `P9_LOCK_TYPE_*`) on an
    /// open fid; returns the server's status (`P9_LOCK_SUCCESS`,
    /// `P9_LOCK_BLOCKED`, …). `flags`: `P9_LOCK_FLAGS_BLOCK` (wait for a
    /// conflicting lock to go), `P9_LOCK_FLAGS_FLOCK` (a `flock` lock).
    pub fn lock(&self, fid: Fid, ty: u8, start: u64, length: u64, flags: u32) -> Result<u8, Errno> {
        let mut buf = self.buffer();
        let t = TMessage::Lock {
            fid,
            lock: astraea_9p::Flock {
                ty,
                flags,
                start,
                length,
                proc_id: 1,
                client_id: Str::from("astraea"),
            },
        };
        match self.rpc(&t, &mut buf)? {
            RMessage::Lock { status } => Ok(status),
            _ => Err(Errno::EPROTO),
        }
    }

    /// Tests for a lock that would conflict with `ty` on the range; returns
    /// the conflicting lock's type (`P9_LOCK_TYPE_UNLCK` if none) and range.
    pub fn getlock(
        &self,
        fid: Fid,
        ty: u8,
        start: u64,
        length: u64,
    ) -> Result<(u8, u64, u64), Errno> {
        let mut buf = self.buffer();
        let t = TMessage::Getlock {
            fid,
            lock: astraea_9p::Getlock {
                ty,
                start,
                length,
                proc_id: 1,
                client_id: Str::from("astraea"),
            },
        };
        match self.rpc(&t, &mut buf)? {
            RMessage::Getlock { lock } => Ok((lock.ty, lock.start, lock.length)),
            _ => Err(Errno::EPROTO),
        }
    }

    /// Makes a symbolic link `name` to `target` in the directory `dirfid`.
    pub fn symlink(&self, dirfid: Fid, name: &str, target: &str) -> Result<Qid, Errno> {
        let mut buf = self.buffer();
        let t = TMessage::Symlink {
            fid: dirfid,
            name: Str::from(name),
            target: Str::from(target),
            gid: 0,
        };
        match self.rpc(&t, &mut buf)? {
            RMessage::Symlink { qid } => Ok(qid),
            _ => Err(Errno::EPROTO),
        }
    }

    /// Makes `name` in the directory `dirfid` a hard link to `fid`.
    pub fn link(&self, dirfid: Fid, fid: Fid, name: &str) -> Result<(), Errno> {
        let mut buf = self.buffer();
        let t = TMessage::Link {
            dfid: dirfid,
            fid,
            name: Str::from(name),
        };
        match self.rpc(&t, &mut buf)? {
            RMessage::Link => Ok(()),
            _ => Err(Errno::EPROTO),
        }
    }

    /// The target of a symbolic link.
    pub fn readlink(&self, fid: Fid) -> Result<String, Errno> {
        let mut buf = self.buffer();
        match self.rpc(&TMessage::Readlink { fid }, &mut buf)? {
            RMessage::Readlink { target } => {
                Ok(String::from_utf8_lossy(target.as_ref()).into_owned())
            }
            _ => Err(Errno::EPROTO),
        }
    }
}
