//! Every 9P2000.L message: borrowed decoded forms and their encoders.
//!
//! Decoding never copies: strings are [`Str`] and payloads are `&[u8]`
//! slices of the frame. Encoding writes `size[4] type[1] tag[2] body`
//! into a `Vec<u8>` or a `&mut [u8]`.

use alloc::vec::Vec;
use core::fmt;
use core::iter::FusedIterator;

use crate::Error;
use crate::consts::{HEADER_LEN, MAXWELEM, MsgType, QID_LEN, RREAD_HEADER_LEN, TWRITE_HEADER_LEN};
use crate::wire::{CountSink, Frame, Qid, Reader, Sink, SliceSink, Str};

// ---------------------------------------------------------------------------
// Walk names and qids

#[derive(Clone, Copy)]
enum NamesRepr<'a> {
    /// Validated wire bytes: `count` consecutive `len[2] bytes[len]` strings.
    Wire { count: u8, bytes: &'a [u8] },
    /// Caller-supplied names (at most `MAXWELEM`).
    List(&'a [Str<'a>]),
}

/// The `nwname*(wname[s])` list of a `Twalk`: at most [`MAXWELEM`] names.
///
/// Decoded lists borrow the frame's bytes (already validated, iterated
/// lazily); lists to encode borrow a caller slice via [`WalkNames::new`].
#[derive(Clone, Copy)]
pub struct WalkNames<'a> {
    repr: NamesRepr<'a>,
}

impl<'a> WalkNames<'a> {
    /// No names (a `Twalk` that clones `fid` into `newfid`).
    pub const EMPTY: WalkNames<'static> = WalkNames {
        repr: NamesRepr::List(&[]),
    };

    /// Wraps caller names. Errors with [`Error::TooManyWalkNames`] if there are more than 16.
    pub const fn new(names: &'a [Str<'a>]) -> Result<WalkNames<'a>, Error> {
        if names.len() > MAXWELEM {
            return Err(Error::TooManyWalkNames);
        }
        Ok(WalkNames {
            repr: NamesRepr::List(names),
        })
    }

    /// Number of names (0..=16).
    pub const fn len(&self) -> usize {
        match self.repr {
            NamesRepr::Wire { count, .. } => count as usize,
            NamesRepr::List(names) => names.len(),
        }
    }

    /// `true` if there are no names.
    pub const fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Iterates the names in order.
    pub fn iter(&self) -> WalkNamesIter<'a> {
        match self.repr {
            NamesRepr::Wire { count, bytes } => WalkNamesIter(NamesIter::Wire {
                left: count,
                reader: Reader::new(bytes),
            }),
            NamesRepr::List(names) => WalkNamesIter(NamesIter::List(names.iter())),
        }
    }

    /// The `i`-th name.
    pub fn get(&self, i: usize) -> Option<Str<'a>> {
        self.iter().nth(i)
    }

    /// Copies the names into a fixed array; returns it and the count.
    pub fn to_array(&self) -> ([Str<'a>; MAXWELEM], usize) {
        let mut out = [Str::default(); MAXWELEM];
        let mut n: usize = 0;
        for (slot, name) in out.iter_mut().zip(self.iter()) {
            *slot = name;
            n = n.saturating_add(1);
        }
        (out, n)
    }

    fn decode(r: &mut Reader<'a>) -> Result<WalkNames<'a>, Error> {
        let count = r.u16()?;
        if usize::from(count) > MAXWELEM {
            return Err(Error::TooManyWalkNames);
        }
        let start = r.rest();
        for _ in 0..count {
            r.str()?;
        }
        let used = start.len().saturating_sub(r.rest().len());
        let bytes = start.get(..used).ok_or(Error::Truncated)?;
        let count = u8::try_from(count).map_err(|_| Error::TooManyWalkNames)?;
        Ok(WalkNames {
            repr: NamesRepr::Wire { count, bytes },
        })
    }

    fn encode<S: Sink>(&self, s: &mut S) -> Result<(), Error> {
        let count = u16::try_from(self.len()).map_err(|_| Error::TooManyWalkNames)?;
        if usize::from(count) > MAXWELEM {
            return Err(Error::TooManyWalkNames);
        }
        s.put_u16(count)?;
        for name in self.iter() {
            s.put_str(name)?;
        }
        Ok(())
    }
}

impl Default for WalkNames<'_> {
    fn default() -> Self {
        WalkNames::EMPTY
    }
}

impl PartialEq for WalkNames<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for WalkNames<'_> {}

impl fmt::Debug for WalkNames<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'a> IntoIterator for WalkNames<'a> {
    type Item = Str<'a>;
    type IntoIter = WalkNamesIter<'a>;
    fn into_iter(self) -> WalkNamesIter<'a> {
        self.iter()
    }
}

impl<'a> IntoIterator for &WalkNames<'a> {
    type Item = Str<'a>;
    type IntoIter = WalkNamesIter<'a>;
    fn into_iter(self) -> WalkNamesIter<'a> {
        self.iter()
    }
}

/// Iterator over [`WalkNames`].
#[derive(Debug, Clone)]
pub struct WalkNamesIter<'a>(NamesIter<'a>);

#[derive(Debug, Clone)]
enum NamesIter<'a> {
    Wire { left: u8, reader: Reader<'a> },
    List(core::slice::Iter<'a, Str<'a>>),
}

impl<'a> Iterator for WalkNamesIter<'a> {
    type Item = Str<'a>;

    fn next(&mut self) -> Option<Str<'a>> {
        match &mut self.0 {
            NamesIter::Wire { left, reader } => {
                *left = left.checked_sub(1)?;
                // Validated at decode time; a failure here just ends the iteration.
                match reader.str() {
                    Ok(s) => Some(s),
                    Err(_) => {
                        *left = 0;
                        None
                    }
                }
            }
            NamesIter::List(it) => it.next().copied(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.0 {
            NamesIter::Wire { left, .. } => (0, Some(usize::from(*left))),
            NamesIter::List(it) => it.size_hint(),
        }
    }
}

impl FusedIterator for WalkNamesIter<'_> {}

#[derive(Clone, Copy)]
enum QidsRepr<'a> {
    /// Wire bytes, a multiple of 13 long, at most 16 qids.
    Wire(&'a [u8]),
    List(&'a [Qid]),
}

/// The `nwqid*(wqid[13])` list of an `Rwalk`: at most [`MAXWELEM`] qids.
#[derive(Clone, Copy)]
pub struct WalkQids<'a> {
    repr: QidsRepr<'a>,
}

impl<'a> WalkQids<'a> {
    /// No qids.
    pub const EMPTY: WalkQids<'static> = WalkQids {
        repr: QidsRepr::List(&[]),
    };

    /// Wraps caller qids. Errors with [`Error::TooManyWalkQids`] if there are more than 16.
    pub const fn new(qids: &'a [Qid]) -> Result<WalkQids<'a>, Error> {
        if qids.len() > MAXWELEM {
            return Err(Error::TooManyWalkQids);
        }
        Ok(WalkQids {
            repr: QidsRepr::List(qids),
        })
    }

    /// Number of qids (0..=16).
    pub const fn len(&self) -> usize {
        match self.repr {
            QidsRepr::Wire(bytes) => bytes.len() / QID_LEN,
            QidsRepr::List(qids) => qids.len(),
        }
    }

    /// `true` if there are no qids.
    pub const fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Iterates the qids in order.
    pub fn iter(&self) -> WalkQidsIter<'a> {
        match self.repr {
            QidsRepr::Wire(bytes) => WalkQidsIter(QidsIter::Wire(bytes.chunks_exact(QID_LEN))),
            QidsRepr::List(qids) => WalkQidsIter(QidsIter::List(qids.iter())),
        }
    }

    /// The `i`-th qid.
    pub fn get(&self, i: usize) -> Option<Qid> {
        self.iter().nth(i)
    }

    /// The last qid (the one `newfid` refers to after a full walk).
    pub fn last(&self) -> Option<Qid> {
        self.iter().last()
    }

    /// Copies the qids into a fixed array; returns it and the count.
    pub fn to_array(&self) -> ([Qid; MAXWELEM], usize) {
        let mut out = [Qid::default(); MAXWELEM];
        let mut n: usize = 0;
        for (slot, qid) in out.iter_mut().zip(self.iter()) {
            *slot = qid;
            n = n.saturating_add(1);
        }
        (out, n)
    }

    fn decode(r: &mut Reader<'a>) -> Result<WalkQids<'a>, Error> {
        let count = usize::from(r.u16()?);
        if count > MAXWELEM {
            return Err(Error::TooManyWalkQids);
        }
        // count <= 16, so this cannot overflow.
        let bytes = r.take(count.saturating_mul(QID_LEN))?;
        Ok(WalkQids {
            repr: QidsRepr::Wire(bytes),
        })
    }

    fn encode<S: Sink>(&self, s: &mut S) -> Result<(), Error> {
        let count = u16::try_from(self.len()).map_err(|_| Error::TooManyWalkQids)?;
        if usize::from(count) > MAXWELEM {
            return Err(Error::TooManyWalkQids);
        }
        s.put_u16(count)?;
        for qid in self.iter() {
            s.put_qid(&qid)?;
        }
        Ok(())
    }
}

impl Default for WalkQids<'_> {
    fn default() -> Self {
        WalkQids::EMPTY
    }
}

impl PartialEq for WalkQids<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for WalkQids<'_> {}

impl fmt::Debug for WalkQids<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'a> IntoIterator for WalkQids<'a> {
    type Item = Qid;
    type IntoIter = WalkQidsIter<'a>;
    fn into_iter(self) -> WalkQidsIter<'a> {
        self.iter()
    }
}

impl<'a> IntoIterator for &WalkQids<'a> {
    type Item = Qid;
    type IntoIter = WalkQidsIter<'a>;
    fn into_iter(self) -> WalkQidsIter<'a> {
        self.iter()
    }
}

/// Iterator over [`WalkQids`].
#[derive(Debug, Clone)]
pub struct WalkQidsIter<'a>(QidsIter<'a>);

#[derive(Debug, Clone)]
enum QidsIter<'a> {
    Wire(core::slice::ChunksExact<'a, u8>),
    List(core::slice::Iter<'a, Qid>),
}

impl Iterator for WalkQidsIter<'_> {
    type Item = Qid;

    fn next(&mut self) -> Option<Qid> {
        match &mut self.0 {
            QidsIter::Wire(chunks) => {
                let chunk = chunks.next()?;
                let bytes: &[u8; QID_LEN] = chunk.try_into().ok()?;
                Some(Qid::from_bytes(bytes))
            }
            QidsIter::List(it) => it.next().copied(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.0 {
            QidsIter::Wire(chunks) => chunks.size_hint(),
            QidsIter::List(it) => it.size_hint(),
        }
    }
}

impl FusedIterator for WalkQidsIter<'_> {}

// ---------------------------------------------------------------------------
// Structured bodies

/// `Rgetattr` body: the attributes of a file (`valid` says which are meaningful).
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Stat {
    /// Bitmask of `P9_GETATTR_*` saying which fields are valid.
    pub valid: u64,
    pub qid: Qid,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub nlink: u64,
    pub rdev: u64,
    pub size: u64,
    pub blksize: u64,
    pub blocks: u64,
    pub atime_sec: u64,
    pub atime_nsec: u64,
    pub mtime_sec: u64,
    pub mtime_nsec: u64,
    pub ctime_sec: u64,
    pub ctime_nsec: u64,
    pub btime_sec: u64,
    pub btime_nsec: u64,
    /// Wire field `gen[8]` (renamed: `gen` is reserved in edition 2024).
    pub generation: u64,
    pub data_version: u64,
}

impl Stat {
    fn decode(r: &mut Reader<'_>) -> Result<Stat, Error> {
        Ok(Stat {
            valid: r.u64()?,
            qid: r.qid()?,
            mode: r.u32()?,
            uid: r.u32()?,
            gid: r.u32()?,
            nlink: r.u64()?,
            rdev: r.u64()?,
            size: r.u64()?,
            blksize: r.u64()?,
            blocks: r.u64()?,
            atime_sec: r.u64()?,
            atime_nsec: r.u64()?,
            mtime_sec: r.u64()?,
            mtime_nsec: r.u64()?,
            ctime_sec: r.u64()?,
            ctime_nsec: r.u64()?,
            btime_sec: r.u64()?,
            btime_nsec: r.u64()?,
            generation: r.u64()?,
            data_version: r.u64()?,
        })
    }

    fn encode<S: Sink>(&self, s: &mut S) -> Result<(), Error> {
        s.put_u64(self.valid)?;
        s.put_qid(&self.qid)?;
        s.put_u32(self.mode)?;
        s.put_u32(self.uid)?;
        s.put_u32(self.gid)?;
        for v in [
            self.nlink,
            self.rdev,
            self.size,
            self.blksize,
            self.blocks,
            self.atime_sec,
            self.atime_nsec,
            self.mtime_sec,
            self.mtime_nsec,
            self.ctime_sec,
            self.ctime_nsec,
            self.btime_sec,
            self.btime_nsec,
            self.generation,
            self.data_version,
        ] {
            s.put_u64(v)?;
        }
        Ok(())
    }
}

/// `Tsetattr` body: which attributes to set (`valid`, `P9_SETATTR_*`) and their values.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct SetAttr {
    /// Bitmask of `P9_SETATTR_*`.
    pub valid: u32,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub size: u64,
    pub atime_sec: u64,
    pub atime_nsec: u64,
    pub mtime_sec: u64,
    pub mtime_nsec: u64,
}

impl SetAttr {
    fn decode(r: &mut Reader<'_>) -> Result<SetAttr, Error> {
        Ok(SetAttr {
            valid: r.u32()?,
            mode: r.u32()?,
            uid: r.u32()?,
            gid: r.u32()?,
            size: r.u64()?,
            atime_sec: r.u64()?,
            atime_nsec: r.u64()?,
            mtime_sec: r.u64()?,
            mtime_nsec: r.u64()?,
        })
    }

    fn encode<S: Sink>(&self, s: &mut S) -> Result<(), Error> {
        s.put_u32(self.valid)?;
        s.put_u32(self.mode)?;
        s.put_u32(self.uid)?;
        s.put_u32(self.gid)?;
        s.put_u64(self.size)?;
        s.put_u64(self.atime_sec)?;
        s.put_u64(self.atime_nsec)?;
        s.put_u64(self.mtime_sec)?;
        s.put_u64(self.mtime_nsec)
    }
}

/// `Rstatfs` body, mirroring `struct statfs`.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct StatFs {
    /// File system type (`f_type`).
    pub ty: u32,
    pub bsize: u32,
    pub blocks: u64,
    pub bfree: u64,
    pub bavail: u64,
    pub files: u64,
    pub ffree: u64,
    pub fsid: u64,
    pub namelen: u32,
}

impl StatFs {
    fn decode(r: &mut Reader<'_>) -> Result<StatFs, Error> {
        Ok(StatFs {
            ty: r.u32()?,
            bsize: r.u32()?,
            blocks: r.u64()?,
            bfree: r.u64()?,
            bavail: r.u64()?,
            files: r.u64()?,
            ffree: r.u64()?,
            fsid: r.u64()?,
            namelen: r.u32()?,
        })
    }

    fn encode<S: Sink>(&self, s: &mut S) -> Result<(), Error> {
        s.put_u32(self.ty)?;
        s.put_u32(self.bsize)?;
        s.put_u64(self.blocks)?;
        s.put_u64(self.bfree)?;
        s.put_u64(self.bavail)?;
        s.put_u64(self.files)?;
        s.put_u64(self.ffree)?;
        s.put_u64(self.fsid)?;
        s.put_u32(self.namelen)
    }
}

/// `Tlock` body: `type[1] flags[4] start[8] length[8] proc_id[4] client_id[s]`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Flock<'a> {
    /// `P9_LOCK_TYPE_*`.
    pub ty: u8,
    /// `P9_LOCK_FLAGS_*`.
    pub flags: u32,
    /// First byte of the range.
    pub start: u64,
    /// Length of the range; 0 means "to end of file".
    pub length: u64,
    /// Process id of the lock owner.
    pub proc_id: u32,
    /// Client identifier (the Linux client sends its nodename).
    pub client_id: Str<'a>,
}

impl<'a> Flock<'a> {
    fn decode(r: &mut Reader<'a>) -> Result<Flock<'a>, Error> {
        Ok(Flock {
            ty: r.u8()?,
            flags: r.u32()?,
            start: r.u64()?,
            length: r.u64()?,
            proc_id: r.u32()?,
            client_id: r.str()?,
        })
    }

    fn encode<S: Sink>(&self, s: &mut S) -> Result<(), Error> {
        s.put_u8(self.ty)?;
        s.put_u32(self.flags)?;
        s.put_u64(self.start)?;
        s.put_u64(self.length)?;
        s.put_u32(self.proc_id)?;
        s.put_str(self.client_id)
    }
}

/// `Tgetlock`/`Rgetlock` body: `type[1] start[8] length[8] proc_id[4] client_id[s]`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Getlock<'a> {
    /// `P9_LOCK_TYPE_*`.
    pub ty: u8,
    /// First byte of the range.
    pub start: u64,
    /// Length of the range; 0 means "to end of file".
    pub length: u64,
    /// Process id of the (conflicting) lock owner.
    pub proc_id: u32,
    /// Client identifier.
    pub client_id: Str<'a>,
}

impl<'a> Getlock<'a> {
    fn decode(r: &mut Reader<'a>) -> Result<Getlock<'a>, Error> {
        Ok(Getlock {
            ty: r.u8()?,
            start: r.u64()?,
            length: r.u64()?,
            proc_id: r.u32()?,
            client_id: r.str()?,
        })
    }

    fn encode<S: Sink>(&self, s: &mut S) -> Result<(), Error> {
        s.put_u8(self.ty)?;
        s.put_u64(self.start)?;
        s.put_u64(self.length)?;
        s.put_u32(self.proc_id)?;
        s.put_str(self.client_id)
    }
}

// ---------------------------------------------------------------------------
// T-messages

/// A request (T-message), borrowing strings and payloads from its frame.
///
/// Field names follow diod's `protocol.md`.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TMessage<'a> {
    /// `Tversion msize[4] version[s]` (tag must be `NOTAG`).
    Version { msize: u32, version: Str<'a> },
    /// `Tauth afid[4] uname[s] aname[s] n_uname[4]`.
    Auth {
        afid: u32,
        uname: Str<'a>,
        aname: Str<'a>,
        n_uname: u32,
    },
    /// `Tattach fid[4] afid[4] uname[s] aname[s] n_uname[4]`.
    Attach {
        fid: u32,
        afid: u32,
        uname: Str<'a>,
        aname: Str<'a>,
        n_uname: u32,
    },
    /// `Tflush oldtag[2]`.
    Flush { oldtag: u16 },
    /// `Twalk fid[4] newfid[4] nwname[2] nwname*(wname[s])`.
    Walk {
        fid: u32,
        newfid: u32,
        names: WalkNames<'a>,
    },
    /// `Tlopen fid[4] flags[4]`.
    Lopen { fid: u32, flags: u32 },
    /// `Tlcreate fid[4] name[s] flags[4] mode[4] gid[4]`.
    Lcreate {
        fid: u32,
        name: Str<'a>,
        flags: u32,
        mode: u32,
        gid: u32,
    },
    /// `Tread fid[4] offset[8] count[4]`.
    Read { fid: u32, offset: u64, count: u32 },
    /// `Twrite fid[4] offset[8] count[4] data[count]`.
    Write {
        fid: u32,
        offset: u64,
        data: &'a [u8],
    },
    /// `Tclunk fid[4]`.
    Clunk { fid: u32 },
    /// `Tremove fid[4]`.
    Remove { fid: u32 },
    /// `Tgetattr fid[4] request_mask[8]`.
    Getattr { fid: u32, request_mask: u64 },
    /// `Tsetattr fid[4] valid[4] mode[4] uid[4] gid[4] size[8] atime_sec[8]
    /// atime_nsec[8] mtime_sec[8] mtime_nsec[8]`.
    Setattr { fid: u32, attr: SetAttr },
    /// `Tstatfs fid[4]`.
    Statfs { fid: u32 },
    /// `Treaddir fid[4] offset[8] count[4]`.
    Readdir { fid: u32, offset: u64, count: u32 },
    /// `Treadlink fid[4]`.
    Readlink { fid: u32 },
    /// `Tsymlink fid[4] name[s] symtgt[s] gid[4]`.
    Symlink {
        fid: u32,
        name: Str<'a>,
        target: Str<'a>,
        gid: u32,
    },
    /// `Tmknod dfid[4] name[s] mode[4] major[4] minor[4] gid[4]`.
    Mknod {
        dfid: u32,
        name: Str<'a>,
        mode: u32,
        major: u32,
        minor: u32,
        gid: u32,
    },
    /// `Tmkdir dfid[4] name[s] mode[4] gid[4]`.
    Mkdir {
        dfid: u32,
        name: Str<'a>,
        mode: u32,
        gid: u32,
    },
    /// `Tlink dfid[4] fid[4] name[s]`.
    Link { dfid: u32, fid: u32, name: Str<'a> },
    /// `Trename fid[4] dfid[4] name[s]`.
    Rename { fid: u32, dfid: u32, name: Str<'a> },
    /// `Trenameat olddirfid[4] oldname[s] newdirfid[4] newname[s]`.
    Renameat {
        olddirfid: u32,
        oldname: Str<'a>,
        newdirfid: u32,
        newname: Str<'a>,
    },
    /// `Tunlinkat dirfid[4] name[s] flags[4]`.
    Unlinkat {
        dirfid: u32,
        name: Str<'a>,
        flags: u32,
    },
    /// `Tfsync fid[4] datasync[4]`.
    Fsync { fid: u32, datasync: u32 },
    /// `Tlock fid[4] type[1] flags[4] start[8] length[8] proc_id[4] client_id[s]`.
    Lock { fid: u32, lock: Flock<'a> },
    /// `Tgetlock fid[4] type[1] start[8] length[8] proc_id[4] client_id[s]`.
    Getlock { fid: u32, lock: Getlock<'a> },
    /// `Txattrwalk fid[4] newfid[4] name[s]` (empty name: list attributes).
    Xattrwalk {
        fid: u32,
        newfid: u32,
        name: Str<'a>,
    },
    /// `Txattrcreate fid[4] name[s] attr_size[8] flags[4]`.
    Xattrcreate {
        fid: u32,
        name: Str<'a>,
        attr_size: u64,
        flags: u32,
    },
}

impl Body for TMessage<'_> {
    fn ty(&self) -> MsgType {
        self.msg_type()
    }

    fn body<S: Sink>(&self, s: &mut S) -> Result<(), Error> {
        self.encode_body(s)
    }
}

impl<'a> TMessage<'a> {
    /// Decodes the body of a checked frame as a request.
    ///
    /// Errors: [`Error::UnknownType`], [`Error::UnexpectedType`] for an
    /// R-message, [`Error::Truncated`], [`Error::TooManyWalkNames`],
    /// [`Error::TrailingBytes`].
    pub fn decode(frame: &Frame<'a>) -> Result<TMessage<'a>, Error> {
        let ty = MsgType::try_from(frame.msg_type())?;
        let mut r = Reader::new(frame.body());
        let msg = Self::decode_body(ty, &mut r)?;
        r.finish()?;
        Ok(msg)
    }

    /// Checks and decodes one complete message; returns its tag and body.
    pub fn from_bytes(buf: &'a [u8]) -> Result<(u16, TMessage<'a>), Error> {
        let frame = Frame::new_checked(buf)?;
        Ok((frame.tag(), Self::decode(&frame)?))
    }

    fn decode_body(ty: MsgType, r: &mut Reader<'a>) -> Result<TMessage<'a>, Error> {
        use TMessage as T;
        Ok(match ty {
            MsgType::Tversion => T::Version {
                msize: r.u32()?,
                version: r.str()?,
            },
            MsgType::Tauth => T::Auth {
                afid: r.u32()?,
                uname: r.str()?,
                aname: r.str()?,
                n_uname: r.u32()?,
            },
            MsgType::Tattach => T::Attach {
                fid: r.u32()?,
                afid: r.u32()?,
                uname: r.str()?,
                aname: r.str()?,
                n_uname: r.u32()?,
            },
            MsgType::Tflush => T::Flush { oldtag: r.u16()? },
            MsgType::Twalk => T::Walk {
                fid: r.u32()?,
                newfid: r.u32()?,
                names: WalkNames::decode(r)?,
            },
            MsgType::Tlopen => T::Lopen {
                fid: r.u32()?,
                flags: r.u32()?,
            },
            MsgType::Tlcreate => T::Lcreate {
                fid: r.u32()?,
                name: r.str()?,
                flags: r.u32()?,
                mode: r.u32()?,
                gid: r.u32()?,
            },
            MsgType::Tread => T::Read {
                fid: r.u32()?,
                offset: r.u64()?,
                count: r.u32()?,
            },
            MsgType::Twrite => T::Write {
                fid: r.u32()?,
                offset: r.u64()?,
                data: r.data()?,
            },
            MsgType::Tclunk => T::Clunk { fid: r.u32()? },
            MsgType::Tremove => T::Remove { fid: r.u32()? },
            MsgType::Tgetattr => T::Getattr {
                fid: r.u32()?,
                request_mask: r.u64()?,
            },
            MsgType::Tsetattr => T::Setattr {
                fid: r.u32()?,
                attr: SetAttr::decode(r)?,
            },
            MsgType::Tstatfs => T::Statfs { fid: r.u32()? },
            MsgType::Treaddir => T::Readdir {
                fid: r.u32()?,
                offset: r.u64()?,
                count: r.u32()?,
            },
            MsgType::Treadlink => T::Readlink { fid: r.u32()? },
            MsgType::Tsymlink => T::Symlink {
                fid: r.u32()?,
                name: r.str()?,
                target: r.str()?,
                gid: r.u32()?,
            },
            MsgType::Tmknod => T::Mknod {
                dfid: r.u32()?,
                name: r.str()?,
                mode: r.u32()?,
                major: r.u32()?,
                minor: r.u32()?,
                gid: r.u32()?,
            },
            MsgType::Tmkdir => T::Mkdir {
                dfid: r.u32()?,
                name: r.str()?,
                mode: r.u32()?,
                gid: r.u32()?,
            },
            MsgType::Tlink => T::Link {
                dfid: r.u32()?,
                fid: r.u32()?,
                name: r.str()?,
            },
            MsgType::Trename => T::Rename {
                fid: r.u32()?,
                dfid: r.u32()?,
                name: r.str()?,
            },
            MsgType::Trenameat => T::Renameat {
                olddirfid: r.u32()?,
                oldname: r.str()?,
                newdirfid: r.u32()?,
                newname: r.str()?,
            },
            MsgType::Tunlinkat => T::Unlinkat {
                dirfid: r.u32()?,
                name: r.str()?,
                flags: r.u32()?,
            },
            MsgType::Tfsync => T::Fsync {
                fid: r.u32()?,
                datasync: r.u32()?,
            },
            MsgType::Tlock => T::Lock {
                fid: r.u32()?,
                lock: Flock::decode(r)?,
            },
            MsgType::Tgetlock => T::Getlock {
                fid: r.u32()?,
                lock: Getlock::decode(r)?,
            },
            MsgType::Txattrwalk => T::Xattrwalk {
                fid: r.u32()?,
                newfid: r.u32()?,
                name: r.str()?,
            },
            MsgType::Txattrcreate => T::Xattrcreate {
                fid: r.u32()?,
                name: r.str()?,
                attr_size: r.u64()?,
                flags: r.u32()?,
            },
            other => return Err(Error::UnexpectedType(other.as_u8())),
        })
    }

    /// The message type.
    pub const fn msg_type(&self) -> MsgType {
        use TMessage as T;
        match self {
            T::Version { .. } => MsgType::Tversion,
            T::Auth { .. } => MsgType::Tauth,
            T::Attach { .. } => MsgType::Tattach,
            T::Flush { .. } => MsgType::Tflush,
            T::Walk { .. } => MsgType::Twalk,
            T::Lopen { .. } => MsgType::Tlopen,
            T::Lcreate { .. } => MsgType::Tlcreate,
            T::Read { .. } => MsgType::Tread,
            T::Write { .. } => MsgType::Twrite,
            T::Clunk { .. } => MsgType::Tclunk,
            T::Remove { .. } => MsgType::Tremove,
            T::Getattr { .. } => MsgType::Tgetattr,
            T::Setattr { .. } => MsgType::Tsetattr,
            T::Statfs { .. } => MsgType::Tstatfs,
            T::Readdir { .. } => MsgType::Treaddir,
            T::Readlink { .. } => MsgType::Treadlink,
            T::Symlink { .. } => MsgType::Tsymlink,
            T::Mknod { .. } => MsgType::Tmknod,
            T::Mkdir { .. } => MsgType::Tmkdir,
            T::Link { .. } => MsgType::Tlink,
            T::Rename { .. } => MsgType::Trename,
            T::Renameat { .. } => MsgType::Trenameat,
            T::Unlinkat { .. } => MsgType::Tunlinkat,
            T::Fsync { .. } => MsgType::Tfsync,
            T::Lock { .. } => MsgType::Tlock,
            T::Getlock { .. } => MsgType::Tgetlock,
            T::Xattrwalk { .. } => MsgType::Txattrwalk,
            T::Xattrcreate { .. } => MsgType::Txattrcreate,
        }
    }

    fn encode_body<S: Sink>(&self, s: &mut S) -> Result<(), Error> {
        use TMessage as T;
        match *self {
            T::Version { msize, version } => {
                s.put_u32(msize)?;
                s.put_str(version)
            }
            T::Auth {
                afid,
                uname,
                aname,
                n_uname,
            } => {
                s.put_u32(afid)?;
                s.put_str(uname)?;
                s.put_str(aname)?;
                s.put_u32(n_uname)
            }
            T::Attach {
                fid,
                afid,
                uname,
                aname,
                n_uname,
            } => {
                s.put_u32(fid)?;
                s.put_u32(afid)?;
                s.put_str(uname)?;
                s.put_str(aname)?;
                s.put_u32(n_uname)
            }
            T::Flush { oldtag } => s.put_u16(oldtag),
            T::Walk { fid, newfid, names } => {
                s.put_u32(fid)?;
                s.put_u32(newfid)?;
                names.encode(s)
            }
            T::Lopen { fid, flags } => {
                s.put_u32(fid)?;
                s.put_u32(flags)
            }
            T::Lcreate {
                fid,
                name,
                flags,
                mode,
                gid,
            } => {
                s.put_u32(fid)?;
                s.put_str(name)?;
                s.put_u32(flags)?;
                s.put_u32(mode)?;
                s.put_u32(gid)
            }
            T::Read { fid, offset, count } | T::Readdir { fid, offset, count } => {
                s.put_u32(fid)?;
                s.put_u64(offset)?;
                s.put_u32(count)
            }
            T::Write { fid, offset, data } => {
                s.put_u32(fid)?;
                s.put_u64(offset)?;
                s.put_data(data)
            }
            T::Clunk { fid } | T::Remove { fid } | T::Statfs { fid } | T::Readlink { fid } => {
                s.put_u32(fid)
            }
            T::Getattr { fid, request_mask } => {
                s.put_u32(fid)?;
                s.put_u64(request_mask)
            }
            T::Setattr { fid, ref attr } => {
                s.put_u32(fid)?;
                attr.encode(s)
            }
            T::Symlink {
                fid,
                name,
                target,
                gid,
            } => {
                s.put_u32(fid)?;
                s.put_str(name)?;
                s.put_str(target)?;
                s.put_u32(gid)
            }
            T::Mknod {
                dfid,
                name,
                mode,
                major,
                minor,
                gid,
            } => {
                s.put_u32(dfid)?;
                s.put_str(name)?;
                s.put_u32(mode)?;
                s.put_u32(major)?;
                s.put_u32(minor)?;
                s.put_u32(gid)
            }
            T::Mkdir {
                dfid,
                name,
                mode,
                gid,
            } => {
                s.put_u32(dfid)?;
                s.put_str(name)?;
                s.put_u32(mode)?;
                s.put_u32(gid)
            }
            T::Link { dfid, fid, name } => {
                s.put_u32(dfid)?;
                s.put_u32(fid)?;
                s.put_str(name)
            }
            T::Rename { fid, dfid, name } => {
                s.put_u32(fid)?;
                s.put_u32(dfid)?;
                s.put_str(name)
            }
            T::Renameat {
                olddirfid,
                oldname,
                newdirfid,
                newname,
            } => {
                s.put_u32(olddirfid)?;
                s.put_str(oldname)?;
                s.put_u32(newdirfid)?;
                s.put_str(newname)
            }
            T::Unlinkat {
                dirfid,
                name,
                flags,
            } => {
                s.put_u32(dirfid)?;
                s.put_str(name)?;
                s.put_u32(flags)
            }
            T::Fsync { fid, datasync } => {
                s.put_u32(fid)?;
                s.put_u32(datasync)
            }
            T::Lock { fid, ref lock } => {
                s.put_u32(fid)?;
                lock.encode(s)
            }
            T::Getlock { fid, ref lock } => {
                s.put_u32(fid)?;
                lock.encode(s)
            }
            T::Xattrwalk { fid, newfid, name } => {
                s.put_u32(fid)?;
                s.put_u32(newfid)?;
                s.put_str(name)
            }
            T::Xattrcreate {
                fid,
                name,
                attr_size,
                flags,
            } => {
                s.put_u32(fid)?;
                s.put_str(name)?;
                s.put_u64(attr_size)?;
                s.put_u32(flags)
            }
        }
    }

    /// Total encoded length, header included. Fails like [`TMessage::encode`] would.
    pub fn encoded_len(&self) -> Result<usize, Error> {
        encoded_len(self)
    }

    /// Appends `size[4] type[1] tag[2] body` to `out`. On error `out` is left unchanged.
    ///
    /// Errors: [`Error::StringTooLong`], [`Error::MessageTooLarge`].
    pub fn encode(&self, tag: u16, out: &mut Vec<u8>) -> Result<(), Error> {
        encode_vec(self, tag, out)
    }

    /// Writes the message at the start of `buf`; returns its length.
    ///
    /// Errors: as [`TMessage::encode`], plus [`Error::BufferTooSmall`].
    pub fn encode_to_slice(&self, tag: u16, buf: &mut [u8]) -> Result<usize, Error> {
        encode_slice(self, tag, buf)
    }
}

// ---------------------------------------------------------------------------
// R-messages

/// A reply (R-message), borrowing strings and payloads from its frame.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RMessage<'a> {
    /// `Rlerror ecode[4]`: a Linux errno, replacing any other reply.
    Lerror { ecode: u32 },
    /// `Rversion msize[4] version[s]`.
    Version { msize: u32, version: Str<'a> },
    /// `Rauth aqid[13]`.
    Auth { aqid: Qid },
    /// `Rattach qid[13]`.
    Attach { qid: Qid },
    /// `Rflush`.
    Flush,
    /// `Rwalk nwqid[2] nwqid*(wqid[13])`.
    Walk { qids: WalkQids<'a> },
    /// `Rlopen qid[13] iounit[4]`.
    Lopen { qid: Qid, iounit: u32 },
    /// `Rlcreate qid[13] iounit[4]`.
    Lcreate { qid: Qid, iounit: u32 },
    /// `Rread count[4] data[count]`.
    Read { data: &'a [u8] },
    /// `Rwrite count[4]`.
    Write { count: u32 },
    /// `Rclunk`.
    Clunk,
    /// `Rremove`.
    Remove,
    /// `Rgetattr valid[8] qid[13] mode[4] ... data_version[8]`.
    Getattr { stat: Stat },
    /// `Rsetattr`.
    Setattr,
    /// `Rstatfs type[4] bsize[4] blocks[8] ... namelen[4]`.
    Statfs { statfs: StatFs },
    /// `Rreaddir count[4] data[count]`; iterate entries with
    /// [`DirEntryIter::new`](crate::DirEntryIter::new).
    Readdir { data: &'a [u8] },
    /// `Rreadlink target[s]`.
    Readlink { target: Str<'a> },
    /// `Rsymlink qid[13]`.
    Symlink { qid: Qid },
    /// `Rmknod qid[13]`.
    Mknod { qid: Qid },
    /// `Rmkdir qid[13]`.
    Mkdir { qid: Qid },
    /// `Rlink`.
    Link,
    /// `Rrename`.
    Rename,
    /// `Rrenameat`.
    Renameat,
    /// `Runlinkat`.
    Unlinkat,
    /// `Rfsync`.
    Fsync,
    /// `Rlock status[1]` (`P9_LOCK_SUCCESS`, ...).
    Lock { status: u8 },
    /// `Rgetlock type[1] start[8] length[8] proc_id[4] client_id[s]`.
    Getlock { lock: Getlock<'a> },
    /// `Rxattrwalk size[8]`.
    Xattrwalk { size: u64 },
    /// `Rxattrcreate`.
    Xattrcreate,
}

impl Body for RMessage<'_> {
    fn ty(&self) -> MsgType {
        self.msg_type()
    }

    fn body<S: Sink>(&self, s: &mut S) -> Result<(), Error> {
        self.encode_body(s)
    }
}

impl<'a> RMessage<'a> {
    /// Decodes the body of a checked frame as a reply.
    ///
    /// Errors: [`Error::UnknownType`], [`Error::UnexpectedType`] for a
    /// T-message, [`Error::Truncated`], [`Error::TooManyWalkQids`],
    /// [`Error::TrailingBytes`].
    pub fn decode(frame: &Frame<'a>) -> Result<RMessage<'a>, Error> {
        let ty = MsgType::try_from(frame.msg_type())?;
        let mut r = Reader::new(frame.body());
        let msg = Self::decode_body(ty, &mut r)?;
        r.finish()?;
        Ok(msg)
    }

    /// Checks and decodes one complete message; returns its tag and body.
    pub fn from_bytes(buf: &'a [u8]) -> Result<(u16, RMessage<'a>), Error> {
        let frame = Frame::new_checked(buf)?;
        Ok((frame.tag(), Self::decode(&frame)?))
    }

    fn decode_body(ty: MsgType, r: &mut Reader<'a>) -> Result<RMessage<'a>, Error> {
        use RMessage as R;
        Ok(match ty {
            MsgType::Rlerror => R::Lerror { ecode: r.u32()? },
            MsgType::Rversion => R::Version {
                msize: r.u32()?,
                version: r.str()?,
            },
            MsgType::Rauth => R::Auth { aqid: r.qid()? },
            MsgType::Rattach => R::Attach { qid: r.qid()? },
            MsgType::Rflush => R::Flush,
            MsgType::Rwalk => R::Walk {
                qids: WalkQids::decode(r)?,
            },
            MsgType::Rlopen => R::Lopen {
                qid: r.qid()?,
                iounit: r.u32()?,
            },
            MsgType::Rlcreate => R::Lcreate {
                qid: r.qid()?,
                iounit: r.u32()?,
            },
            MsgType::Rread => R::Read { data: r.data()? },
            MsgType::Rwrite => R::Write { count: r.u32()? },
            MsgType::Rclunk => R::Clunk,
            MsgType::Rremove => R::Remove,
            MsgType::Rgetattr => R::Getattr {
                stat: Stat::decode(r)?,
            },
            MsgType::Rsetattr => R::Setattr,
            MsgType::Rstatfs => R::Statfs {
                statfs: StatFs::decode(r)?,
            },
            MsgType::Rreaddir => R::Readdir { data: r.data()? },
            MsgType::Rreadlink => R::Readlink { target: r.str()? },
            MsgType::Rsymlink => R::Symlink { qid: r.qid()? },
            MsgType::Rmknod => R::Mknod { qid: r.qid()? },
            MsgType::Rmkdir => R::Mkdir { qid: r.qid()? },
            MsgType::Rlink => R::Link,
            MsgType::Rrename => R::Rename,
            MsgType::Rrenameat => R::Renameat,
            MsgType::Runlinkat => R::Unlinkat,
            MsgType::Rfsync => R::Fsync,
            MsgType::Rlock => R::Lock { status: r.u8()? },
            MsgType::Rgetlock => R::Getlock {
                lock: Getlock::decode(r)?,
            },
            MsgType::Rxattrwalk => R::Xattrwalk { size: r.u64()? },
            MsgType::Rxattrcreate => R::Xattrcreate,
            other => return Err(Error::UnexpectedType(other.as_u8())),
        })
    }

    /// The message type.
    pub const fn msg_type(&self) -> MsgType {
        use RMessage as R;
        match self {
            R::Lerror { .. } => MsgType::Rlerror,
            R::Version { .. } => MsgType::Rversion,
            R::Auth { .. } => MsgType::Rauth,
            R::Attach { .. } => MsgType::Rattach,
            R::Flush => MsgType::Rflush,
            R::Walk { .. } => MsgType::Rwalk,
            R::Lopen { .. } => MsgType::Rlopen,
            R::Lcreate { .. } => MsgType::Rlcreate,
            R::Read { .. } => MsgType::Rread,
            R::Write { .. } => MsgType::Rwrite,
            R::Clunk => MsgType::Rclunk,
            R::Remove => MsgType::Rremove,
            R::Getattr { .. } => MsgType::Rgetattr,
            R::Setattr => MsgType::Rsetattr,
            R::Statfs { .. } => MsgType::Rstatfs,
            R::Readdir { .. } => MsgType::Rreaddir,
            R::Readlink { .. } => MsgType::Rreadlink,
            R::Symlink { .. } => MsgType::Rsymlink,
            R::Mknod { .. } => MsgType::Rmknod,
            R::Mkdir { .. } => MsgType::Rmkdir,
            R::Link => MsgType::Rlink,
            R::Rename => MsgType::Rrename,
            R::Renameat => MsgType::Rrenameat,
            R::Unlinkat => MsgType::Runlinkat,
            R::Fsync => MsgType::Rfsync,
            R::Lock { .. } => MsgType::Rlock,
            R::Getlock { .. } => MsgType::Rgetlock,
            R::Xattrwalk { .. } => MsgType::Rxattrwalk,
            R::Xattrcreate => MsgType::Rxattrcreate,
        }
    }

    fn encode_body<S: Sink>(&self, s: &mut S) -> Result<(), Error> {
        use RMessage as R;
        match *self {
            R::Lerror { ecode } => s.put_u32(ecode),
            R::Version { msize, version } => {
                s.put_u32(msize)?;
                s.put_str(version)
            }
            R::Auth { aqid: qid }
            | R::Attach { qid }
            | R::Symlink { qid }
            | R::Mknod { qid }
            | R::Mkdir { qid } => s.put_qid(&qid),
            R::Walk { qids } => qids.encode(s),
            R::Lopen { qid, iounit } | R::Lcreate { qid, iounit } => {
                s.put_qid(&qid)?;
                s.put_u32(iounit)
            }
            R::Read { data } | R::Readdir { data } => s.put_data(data),
            R::Write { count } => s.put_u32(count),
            R::Getattr { ref stat } => stat.encode(s),
            R::Statfs { ref statfs } => statfs.encode(s),
            R::Readlink { target } => s.put_str(target),
            R::Lock { status } => s.put_u8(status),
            R::Getlock { ref lock } => lock.encode(s),
            R::Xattrwalk { size } => s.put_u64(size),
            R::Flush
            | R::Clunk
            | R::Remove
            | R::Setattr
            | R::Link
            | R::Rename
            | R::Renameat
            | R::Unlinkat
            | R::Fsync
            | R::Xattrcreate => Ok(()),
        }
    }

    /// Total encoded length, header included. Fails like [`RMessage::encode`] would.
    pub fn encoded_len(&self) -> Result<usize, Error> {
        encoded_len(self)
    }

    /// Appends `size[4] type[1] tag[2] body` to `out`. On error `out` is left unchanged.
    ///
    /// Errors: [`Error::StringTooLong`], [`Error::MessageTooLarge`].
    pub fn encode(&self, tag: u16, out: &mut Vec<u8>) -> Result<(), Error> {
        encode_vec(self, tag, out)
    }

    /// Writes the message at the start of `buf`; returns its length.
    ///
    /// Errors: as [`RMessage::encode`], plus [`Error::BufferTooSmall`].
    pub fn encode_to_slice(&self, tag: u16, buf: &mut [u8]) -> Result<usize, Error> {
        encode_slice(self, tag, buf)
    }
}

// ---------------------------------------------------------------------------
// Either direction

/// Any message: a request or a reply. Useful for tools and fuzzing that do
/// not know the direction in advance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Message<'a> {
    /// A request.
    T(TMessage<'a>),
    /// A reply.
    R(RMessage<'a>),
}

impl<'a> Message<'a> {
    /// Decodes a checked frame in whichever direction its type byte says.
    pub fn decode(frame: &Frame<'a>) -> Result<Message<'a>, Error> {
        let ty = MsgType::try_from(frame.msg_type())?;
        if ty.is_request() {
            TMessage::decode(frame).map(Message::T)
        } else {
            RMessage::decode(frame).map(Message::R)
        }
    }

    /// Checks and decodes one complete message; returns its tag and body.
    pub fn from_bytes(buf: &'a [u8]) -> Result<(u16, Message<'a>), Error> {
        let frame = Frame::new_checked(buf)?;
        Ok((frame.tag(), Self::decode(&frame)?))
    }

    /// The message type.
    pub const fn msg_type(&self) -> MsgType {
        match self {
            Message::T(t) => t.msg_type(),
            Message::R(r) => r.msg_type(),
        }
    }

    /// Total encoded length, header included.
    pub fn encoded_len(&self) -> Result<usize, Error> {
        match self {
            Message::T(t) => t.encoded_len(),
            Message::R(r) => r.encoded_len(),
        }
    }

    /// Appends the encoded message to `out`. On error `out` is left unchanged.
    pub fn encode(&self, tag: u16, out: &mut Vec<u8>) -> Result<(), Error> {
        match self {
            Message::T(t) => t.encode(tag, out),
            Message::R(r) => r.encode(tag, out),
        }
    }

    /// Writes the message at the start of `buf`; returns its length.
    pub fn encode_to_slice(&self, tag: u16, buf: &mut [u8]) -> Result<usize, Error> {
        match self {
            Message::T(t) => t.encode_to_slice(tag, buf),
            Message::R(r) => r.encode_to_slice(tag, buf),
        }
    }
}

impl<'a> From<TMessage<'a>> for Message<'a> {
    fn from(t: TMessage<'a>) -> Message<'a> {
        Message::T(t)
    }
}

impl<'a> From<RMessage<'a>> for Message<'a> {
    fn from(r: RMessage<'a>) -> Message<'a> {
        Message::R(r)
    }
}

// ---------------------------------------------------------------------------
// Shared encoding plumbing

/// What the shared encoders need from a message.
trait Body {
    fn ty(&self) -> MsgType;
    fn body<S: Sink>(&self, s: &mut S) -> Result<(), Error>;
}

fn put_header<S: Sink>(s: &mut S, size: u32, ty: MsgType, tag: u16) -> Result<(), Error> {
    s.put_u32(size)?;
    s.put_u8(ty.as_u8())?;
    s.put_u16(tag)
}

/// Runs the encoder against a byte counter, so length and bytes always agree.
fn encoded_len<B: Body>(msg: &B) -> Result<usize, Error> {
    let mut counter = CountSink(HEADER_LEN);
    msg.body(&mut counter)?;
    // The size field must be representable.
    u32::try_from(counter.0).map_err(|_| Error::MessageTooLarge)?;
    Ok(counter.0)
}

fn encode_vec<B: Body>(msg: &B, tag: u16, out: &mut Vec<u8>) -> Result<(), Error> {
    let len = encoded_len(msg)?;
    let size = u32::try_from(len).map_err(|_| Error::MessageTooLarge)?;
    let start = out.len();
    out.reserve(len);
    let res = put_header(out, size, msg.ty(), tag).and_then(|()| msg.body(out));
    if res.is_err() {
        out.truncate(start);
    }
    res
}

fn encode_slice<B: Body>(msg: &B, tag: u16, buf: &mut [u8]) -> Result<usize, Error> {
    let len = encoded_len(msg)?;
    let size = u32::try_from(len).map_err(|_| Error::MessageTooLarge)?;
    if len > buf.len() {
        return Err(Error::BufferTooSmall);
    }
    let mut sink = SliceSink::new(buf);
    put_header(&mut sink, size, msg.ty(), tag)?;
    msg.body(&mut sink)?;
    Ok(sink.written())
}

// ---------------------------------------------------------------------------
// Zero-copy headers

fn payload_header<const N: usize>(
    ty: MsgType,
    tag: u16,
    fixed: impl FnOnce(&mut SliceSink<'_>) -> Result<(), Error>,
    count: u32,
) -> Result<[u8; N], Error> {
    let size = u32::try_from(N)
        .ok()
        .and_then(|n| n.checked_add(count))
        .ok_or(Error::MessageTooLarge)?;
    let mut out = [0u8; N];
    let mut sink = SliceSink::new(&mut out);
    put_header(&mut sink, size, ty, tag)?;
    fixed(&mut sink)?;
    sink.put_u32(count)?;
    Ok(out)
}

/// The 11-byte header `size[4] Rread tag[2] count[4]` of an `Rread` whose
/// `count` payload bytes are sent separately (scatter/gather, zero-copy).
pub fn encode_rread_header(tag: u16, count: u32) -> Result<[u8; RREAD_HEADER_LEN], Error> {
    payload_header(MsgType::Rread, tag, |_| Ok(()), count)
}

/// The 11-byte header of an `Rreaddir` whose `count` data bytes are sent separately.
pub fn encode_rreaddir_header(tag: u16, count: u32) -> Result<[u8; RREAD_HEADER_LEN], Error> {
    payload_header(MsgType::Rreaddir, tag, |_| Ok(()), count)
}

/// The 23-byte header `size[4] Twrite tag[2] fid[4] offset[8] count[4]` of
/// a `Twrite` whose `count` payload bytes are sent separately.
pub fn encode_twrite_header(
    tag: u16,
    fid: u32,
    offset: u64,
    count: u32,
) -> Result<[u8; TWRITE_HEADER_LEN], Error> {
    payload_header(
        MsgType::Twrite,
        tag,
        |s| {
            s.put_u32(fid)?;
            s.put_u64(offset)
        },
        count,
    )
}
