//! `Rreaddir` data: directory entries `qid[13] offset[8] type[1] name[s]`.
//!
//! [`DirEntryIter`] walks received data without ever panicking on garbage;
//! [`DirEntryWriter`] packs entries into a byte budget (the `count` of a
//! `Treaddir`) on the server side.

use alloc::vec::Vec;
use core::iter::FusedIterator;

use crate::Error;
use crate::message::RMessage;
use crate::wire::{CountSink, Qid, Reader, Sink, Str};

/// One directory entry of an `Rreaddir`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct DirEntry<'a> {
    /// The entry's qid.
    pub qid: Qid,
    /// Opaque offset to pass in the next `Treaddir` to continue after this entry.
    pub offset: u64,
    /// Linux `DT_*` type (`DT_DIR`, `DT_REG`, ...).
    pub ty: u8,
    /// Entry name.
    pub name: Str<'a>,
}

impl<'a> DirEntry<'a> {
    /// Fixed part of an entry: `qid[13] offset[8] type[1] len[2]`.
    pub const FIXED_LEN: usize = 13 + 8 + 1 + 2;

    /// Encoded length (`24 + name.len()`).
    pub const fn encoded_len(&self) -> usize {
        Self::FIXED_LEN.saturating_add(self.name.len())
    }

    fn decode(r: &mut Reader<'a>) -> Result<DirEntry<'a>, Error> {
        Ok(DirEntry {
            qid: r.qid()?,
            offset: r.u64()?,
            ty: r.u8()?,
            name: r.str()?,
        })
    }

    fn encode<S: Sink>(&self, s: &mut S) -> Result<(), Error> {
        s.put_qid(&self.qid)?;
        s.put_u64(self.offset)?;
        s.put_u8(self.ty)?;
        s.put_str(self.name)
    }

    /// Appends this entry's wire bytes to `out` (no budget check).
    pub fn encode_into(&self, out: &mut Vec<u8>) -> Result<(), Error> {
        // Validate first so `out` is untouched on error.
        self.encode(&mut CountSink(0))?;
        self.encode(out)
    }
}

/// Iterator over the entries in `Rreaddir` data.
///
/// Yields `Ok(entry)` for each complete entry. If the data ends in the
/// middle of an entry it yields one `Err(Error::Truncated)` and then stops;
/// it never reads outside the data and never panics.
#[derive(Debug, Clone)]
pub struct DirEntryIter<'a> {
    reader: Reader<'a>,
    failed: bool,
}

impl<'a> DirEntryIter<'a> {
    /// Iterates `data` (the payload of `RMessage::Readdir`).
    pub const fn new(data: &'a [u8]) -> DirEntryIter<'a> {
        DirEntryIter {
            reader: Reader::new(data),
            failed: false,
        }
    }

    /// Iterates the entries of an `RMessage::Readdir`; `None` for any other message.
    pub fn from_message(msg: &RMessage<'a>) -> Option<DirEntryIter<'a>> {
        match *msg {
            RMessage::Readdir { data } => Some(DirEntryIter::new(data)),
            _ => None,
        }
    }

    /// The bytes not yet consumed.
    pub const fn remaining(&self) -> &'a [u8] {
        self.reader.rest()
    }
}

impl<'a> Iterator for DirEntryIter<'a> {
    type Item = Result<DirEntry<'a>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.reader.is_empty() {
            return None;
        }
        match DirEntry::decode(&mut self.reader) {
            Ok(entry) => Some(Ok(entry)),
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

impl FusedIterator for DirEntryIter<'_> {}

/// Builds `Rreaddir` data from entries within a byte budget.
///
/// The budget is the `count` of the `Treaddir`; a server must also keep the
/// whole reply within msize, i.e. use `min(count, msize - 11)`. Memory grows
/// only with the entries actually pushed, never with the (untrusted) budget.
///
/// ```
/// use astraea_9p::{DirEntry, DirEntryWriter, Qid, Str, DT_REG};
/// let mut w = DirEntryWriter::new(64);
/// let e = DirEntry { qid: Qid::default(), offset: 1, ty: DT_REG, name: Str::from("a") };
/// w.push(&e).unwrap();
/// assert_eq!(w.len(), 25);
/// let reply = w.to_message(); // RMessage::Readdir { data }
/// # let _ = reply;
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DirEntryWriter {
    buf: Vec<u8>,
    limit: usize,
}

impl DirEntryWriter {
    /// An empty writer with a budget of `limit` bytes.
    pub fn new(limit: u32) -> DirEntryWriter {
        DirEntryWriter::with_buffer(Vec::new(), limit)
    }

    /// Reuses `buf`'s allocation (its contents are cleared).
    pub fn with_buffer(mut buf: Vec<u8>, limit: u32) -> DirEntryWriter {
        buf.clear();
        DirEntryWriter {
            buf,
            limit: usize::try_from(limit).unwrap_or(usize::MAX),
        }
    }

    /// `true` if `entry` would fit in the remaining budget.
    pub fn fits(&self, entry: &DirEntry<'_>) -> bool {
        entry.encoded_len() <= self.remaining()
    }

    /// Appends `entry`.
    ///
    /// Errors: [`Error::BufferTooSmall`] if it does not fit (nothing is
    /// written; the caller should stop and send what it has),
    /// [`Error::StringTooLong`] if the name exceeds 65535 bytes.
    pub fn push(&mut self, entry: &DirEntry<'_>) -> Result<(), Error> {
        if entry.name.len() > usize::from(u16::MAX) {
            return Err(Error::StringTooLong);
        }
        if !self.fits(entry) {
            return Err(Error::BufferTooSmall);
        }
        entry.encode_into(&mut self.buf)
    }

    /// Bytes left in the budget.
    pub fn remaining(&self) -> usize {
        self.limit.saturating_sub(self.buf.len())
    }

    /// Bytes written so far.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// `true` if no entry has been pushed.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The packed entries.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }

    /// An `Rreaddir` reply carrying the packed entries.
    pub fn to_message(&self) -> RMessage<'_> {
        RMessage::Readdir { data: &self.buf }
    }

    /// Removes all entries, keeping the allocation and the budget.
    pub fn clear(&mut self) {
        self.buf.clear();
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> Vec<u8> {
        self.buf
    }
}
