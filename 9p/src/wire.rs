//! Wire primitives: the checked [`Frame`] view, the 7-byte [`Header`],
//! [`Qid`], borrowed strings ([`Str`]), and the internal bounds-checked
//! reader and writers every message is built from.

use alloc::vec::Vec;
use core::fmt;

use crate::Error;
use crate::consts::{HEADER_LEN, QID_LEN};

// ---------------------------------------------------------------------------
// Qid

/// A server's unique identification of a file: `type[1] version[4] path[8]`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Qid {
    /// Qid type bits (`QTDIR`, `QTSYMLINK`, ...).
    pub ty: u8,
    /// Version, usually incremented on every modification.
    pub version: u32,
    /// Unique path (inode number).
    pub path: u64,
}

impl Qid {
    /// Decodes a qid from exactly [`QID_LEN`] bytes.
    pub fn from_bytes(bytes: &[u8; QID_LEN]) -> Qid {
        let [ty, v0, v1, v2, v3, p0, p1, p2, p3, p4, p5, p6, p7] = *bytes;
        Qid {
            ty,
            version: u32::from_le_bytes([v0, v1, v2, v3]),
            path: u64::from_le_bytes([p0, p1, p2, p3, p4, p5, p6, p7]),
        }
    }

    /// Encodes this qid as its [`QID_LEN`] wire bytes.
    pub fn to_bytes(&self) -> [u8; QID_LEN] {
        let [v0, v1, v2, v3] = self.version.to_le_bytes();
        let [p0, p1, p2, p3, p4, p5, p6, p7] = self.path.to_le_bytes();
        [self.ty, v0, v1, v2, v3, p0, p1, p2, p3, p4, p5, p6, p7]
    }
}

// ---------------------------------------------------------------------------
// Str

/// A borrowed 9P string: the bytes of a `len[2] bytes[len]` field.
///
/// 9P says strings are UTF-8, but Linux file names are arbitrary bytes, so
/// the codec never validates them; use [`Str::to_str`] when UTF-8 is needed.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Str<'a>(&'a [u8]);

impl<'a> Str<'a> {
    /// Wraps raw bytes.
    pub const fn new(bytes: &'a [u8]) -> Str<'a> {
        Str(bytes)
    }

    /// Wraps a Rust string (a `const` alternative to `From<&str>`).
    pub const fn from_text(s: &'a str) -> Str<'a> {
        Str(s.as_bytes())
    }

    /// The raw bytes.
    pub const fn as_bytes(&self) -> &'a [u8] {
        self.0
    }

    /// The bytes as UTF-8, if they are valid UTF-8.
    pub fn to_str(&self) -> Result<&'a str, core::str::Utf8Error> {
        core::str::from_utf8(self.0)
    }

    /// Length in bytes.
    pub const fn len(&self) -> usize {
        self.0.len()
    }

    /// `true` if the string is empty.
    pub const fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Encoded length on the wire (`2 + len`).
    pub const fn encoded_len(&self) -> usize {
        2usize.saturating_add(self.0.len())
    }
}

impl<'a> From<&'a str> for Str<'a> {
    fn from(s: &'a str) -> Str<'a> {
        Str(s.as_bytes())
    }
}

impl<'a> From<&'a [u8]> for Str<'a> {
    fn from(s: &'a [u8]) -> Str<'a> {
        Str(s)
    }
}

impl<'a, const N: usize> From<&'a [u8; N]> for Str<'a> {
    fn from(s: &'a [u8; N]) -> Str<'a> {
        Str(s)
    }
}

impl AsRef<[u8]> for Str<'_> {
    fn as_ref(&self) -> &[u8] {
        self.0
    }
}

impl PartialEq<str> for Str<'_> {
    fn eq(&self, other: &str) -> bool {
        self.0 == other.as_bytes()
    }
}

impl PartialEq<&str> for Str<'_> {
    fn eq(&self, other: &&str) -> bool {
        self.0 == other.as_bytes()
    }
}

impl PartialEq<[u8]> for Str<'_> {
    fn eq(&self, other: &[u8]) -> bool {
        self.0 == other
    }
}

impl fmt::Debug for Str<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{}\"", self.0.escape_ascii())
    }
}

impl fmt::Display for Str<'_> {
    /// Lossy: invalid UTF-8 sequences are shown as U+FFFD.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for chunk in self.0.utf8_chunks() {
            f.write_str(chunk.valid())?;
            if !chunk.invalid().is_empty() {
                f.write_str("\u{FFFD}")?;
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// Header and Frame

/// The common 7-byte header `size[4] type[1] tag[2]` of every message.
///
/// Useful on byte streams (read 7 bytes, then `size - 7` more) and for
/// zero-copy transports that receive the header and the payload of an
/// `Rread` into separate buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Header {
    /// Total message length including the size field itself.
    pub size: u32,
    /// Message type byte (not validated here).
    pub msg_type: u8,
    /// Request tag.
    pub tag: u16,
}

impl Header {
    /// Parses the header at the start of `buf` (which may be longer).
    ///
    /// Errors: [`Error::Truncated`] if `buf` holds fewer than 7 bytes,
    /// [`Error::SizeMismatch`] if `size` is smaller than 7.
    pub fn parse(buf: &[u8]) -> Result<Header, Error> {
        let mut r = Reader::new(buf);
        let size = r.u32()?;
        let msg_type = r.u8()?;
        let tag = r.u16()?;
        if usize::try_from(size).is_ok_and(|size| size < HEADER_LEN) {
            return Err(Error::SizeMismatch);
        }
        Ok(Header {
            size,
            msg_type,
            tag,
        })
    }

    /// Encodes the header.
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let [s0, s1, s2, s3] = self.size.to_le_bytes();
        let [t0, t1] = self.tag.to_le_bytes();
        [s0, s1, s2, s3, self.msg_type, t0, t1]
    }
}

/// A checked, zero-copy view of one complete message: `size[4] type[1] tag[2] body`.
///
/// Construction guarantees that the buffer is at least 7 bytes long and that
/// `size` equals the buffer length exactly. The type byte is not validated
/// until the body is decoded (see [`Message::decode`](crate::Message::decode)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Frame<'a> {
    header: Header,
    buf: &'a [u8],
    body: &'a [u8],
}

impl<'a> Frame<'a> {
    /// Checks `buf` and wraps it.
    ///
    /// Errors: [`Error::Truncated`] if `buf` is shorter than the 7-byte header,
    /// [`Error::SizeMismatch`] if `size[4]` is not exactly `buf.len()`.
    pub fn new_checked(buf: &'a [u8]) -> Result<Frame<'a>, Error> {
        let header = Header::parse(buf)?;
        if usize::try_from(header.size).ok() != Some(buf.len()) {
            return Err(Error::SizeMismatch);
        }
        let body = buf.get(HEADER_LEN..).ok_or(Error::Truncated)?;
        Ok(Frame { header, buf, body })
    }

    /// Splits the first complete message off a byte stream.
    ///
    /// Returns the frame and the bytes after it. Errors: [`Error::Truncated`]
    /// if `buf` does not yet hold the whole message (read more and retry),
    /// [`Error::SizeMismatch`] if `size[4]` is smaller than 7.
    pub fn parse_prefix(buf: &'a [u8]) -> Result<(Frame<'a>, &'a [u8]), Error> {
        let header = Header::parse(buf)?;
        let len = usize::try_from(header.size).map_err(|_| Error::Truncated)?;
        let (frame, rest) = buf.split_at_checked(len).ok_or(Error::Truncated)?;
        Ok((Frame::new_checked(frame)?, rest))
    }

    /// The parsed header.
    pub const fn header(&self) -> Header {
        self.header
    }

    /// `size[4]`: the total length, equal to `as_bytes().len()`.
    pub const fn size(&self) -> u32 {
        self.header.size
    }

    /// `type[1]`.
    pub const fn msg_type(&self) -> u8 {
        self.header.msg_type
    }

    /// `tag[2]`.
    pub const fn tag(&self) -> u16 {
        self.header.tag
    }

    /// Everything after the header.
    pub const fn body(&self) -> &'a [u8] {
        self.body
    }

    /// The whole message, header included.
    pub const fn as_bytes(&self) -> &'a [u8] {
        self.buf
    }
}

// ---------------------------------------------------------------------------
// Reader

/// Bounds-checked little-endian cursor. Every read either returns a value
/// fully inside the buffer or `Error::Truncated`; nothing here can panic.
#[derive(Debug, Clone)]
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(crate) const fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf }
    }

    pub(crate) const fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The unread bytes.
    pub(crate) const fn rest(&self) -> &'a [u8] {
        self.buf
    }

    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], Error> {
        let (head, tail) = self.buf.split_at_checked(n).ok_or(Error::Truncated)?;
        self.buf = tail;
        Ok(head)
    }

    pub(crate) fn array<const N: usize>(&mut self) -> Result<[u8; N], Error> {
        let (head, tail) = self.buf.split_first_chunk::<N>().ok_or(Error::Truncated)?;
        self.buf = tail;
        Ok(*head)
    }

    pub(crate) fn u8(&mut self) -> Result<u8, Error> {
        let [b] = self.array::<1>()?;
        Ok(b)
    }

    pub(crate) fn u16(&mut self) -> Result<u16, Error> {
        self.array().map(u16::from_le_bytes)
    }

    pub(crate) fn u32(&mut self) -> Result<u32, Error> {
        self.array().map(u32::from_le_bytes)
    }

    pub(crate) fn u64(&mut self) -> Result<u64, Error> {
        self.array().map(u64::from_le_bytes)
    }

    pub(crate) fn qid(&mut self) -> Result<Qid, Error> {
        self.array().map(|b| Qid::from_bytes(&b))
    }

    /// `len[2] bytes[len]`.
    pub(crate) fn str(&mut self) -> Result<Str<'a>, Error> {
        let len = self.u16()?;
        self.take(usize::from(len)).map(Str)
    }

    /// `count[4] data[count]`.
    pub(crate) fn data(&mut self) -> Result<&'a [u8], Error> {
        let count = self.u32()?;
        let count = usize::try_from(count).map_err(|_| Error::Truncated)?;
        self.take(count)
    }

    /// Succeeds only if every byte was consumed.
    pub(crate) fn finish(&self) -> Result<(), Error> {
        if self.buf.is_empty() {
            Ok(())
        } else {
            Err(Error::TrailingBytes)
        }
    }
}

// ---------------------------------------------------------------------------
// Writers

/// An output for encoders: a growable `Vec` or a fixed slice.
pub(crate) trait Sink {
    fn put(&mut self, bytes: &[u8]) -> Result<(), Error>;

    fn put_u8(&mut self, v: u8) -> Result<(), Error> {
        self.put(&[v])
    }

    fn put_u16(&mut self, v: u16) -> Result<(), Error> {
        self.put(&v.to_le_bytes())
    }

    fn put_u32(&mut self, v: u32) -> Result<(), Error> {
        self.put(&v.to_le_bytes())
    }

    fn put_u64(&mut self, v: u64) -> Result<(), Error> {
        self.put(&v.to_le_bytes())
    }

    fn put_qid(&mut self, q: &Qid) -> Result<(), Error> {
        self.put(&q.to_bytes())
    }

    fn put_str(&mut self, s: Str<'_>) -> Result<(), Error> {
        let len = u16::try_from(s.len()).map_err(|_| Error::StringTooLong)?;
        self.put_u16(len)?;
        self.put(s.as_bytes())
    }

    fn put_data(&mut self, data: &[u8]) -> Result<(), Error> {
        let count = u32::try_from(data.len()).map_err(|_| Error::MessageTooLarge)?;
        self.put_u32(count)?;
        self.put(data)
    }
}

/// Counts bytes instead of writing them: gives `encoded_len` from the same
/// code path that encodes, so the two can never disagree.
pub(crate) struct CountSink(pub(crate) usize);

impl Sink for CountSink {
    fn put(&mut self, bytes: &[u8]) -> Result<(), Error> {
        self.0 = self
            .0
            .checked_add(bytes.len())
            .ok_or(Error::MessageTooLarge)?;
        Ok(())
    }
}

impl Sink for Vec<u8> {
    fn put(&mut self, bytes: &[u8]) -> Result<(), Error> {
        self.extend_from_slice(bytes);
        Ok(())
    }
}

/// Writes into a fixed slice, failing with `BufferTooSmall` instead of overflowing.
pub(crate) struct SliceSink<'b> {
    buf: &'b mut [u8],
    pos: usize,
}

impl<'b> SliceSink<'b> {
    pub(crate) fn new(buf: &'b mut [u8]) -> SliceSink<'b> {
        SliceSink { buf, pos: 0 }
    }

    pub(crate) const fn written(&self) -> usize {
        self.pos
    }
}

impl Sink for SliceSink<'_> {
    fn put(&mut self, bytes: &[u8]) -> Result<(), Error> {
        let end = self
            .pos
            .checked_add(bytes.len())
            .ok_or(Error::BufferTooSmall)?;
        let dst = self
            .buf
            .get_mut(self.pos..end)
            .ok_or(Error::BufferTooSmall)?;
        dst.copy_from_slice(bytes);
        self.pos = end;
        Ok(())
    }
}
