//! The file cache's image: what `astraea run --cache-dump FILE` writes and
//! `--cache-image FILE` loads, so that a new partition starts warm.
//!
//! Little-endian records after a 16-byte magic:
//! - file (1): `u16 path_len, path, u64 size, u64 mtime_sec, u32
//!   mtime_nsec, u64 inode` — the identity a load checks against the host;
//! - block (2): `u64 inode, u64 index, u32 len, u64 data_offset` — the
//!   file's bytes at `index * 64 KiB` are at `data_offset` in the image;
//! - end (3);
//!
//! then, from the next 64 KiB boundary, the blocks' data, each in a whole
//! 64 KiB slot, so that an image placed 64 KiB-aligned in guest memory
//! hands its blocks to the cache without a copy.
//!
//! The reader is a checked view over untrusted bytes (the image is a host
//! file anyone may have edited): it never panics and stops at the first
//! malformed record.

use alloc::vec::Vec;

/// The image's first 16 bytes.
pub const MAGIC: &[u8; 16] = b"ASTRAEA-CACHE-02";
const FILE: u8 = 1;
const BLOCK: u8 = 2;
const END: u8 = 3;
/// Largest block a record may carry.
pub const MAX_BLOCK: usize = 64 * 1024;

/// A file's identity: a block is loaded only if its file still has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileId<'a> {
    /// Path in the partition's namespace.
    pub path: &'a str,
    /// Size in bytes.
    pub size: u64,
    /// Modification time.
    pub mtime: (u64, u32),
    /// Inode (the 9P qid path).
    pub inode: u64,
}

/// One record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record<'a> {
    /// A file and its identity.
    File(FileId<'a>),
    /// A block of a file.
    Block {
        /// The file's inode.
        inode: u64,
        /// Block number (offset / 64 KiB).
        index: u64,
        /// The bytes.
        data: &'a [u8],
        /// Where they are in the image (a multiple of 64 KiB).
        offset: u64,
    },
}

/// Why an image cannot be read (further).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageError {
    /// Not an Astraea cache image (or another version).
    BadMagic,
    /// A record is cut short or malformed at this offset.
    Malformed(usize),
}

/// Reads the records of an image.
pub struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    done: bool,
}

impl<'a> Reader<'a> {
    /// Checks the magic.
    pub fn new(bytes: &'a [u8]) -> Result<Self, ImageError> {
        if bytes.get(..16) != Some(&MAGIC[..]) {
            return Err(ImageError::BadMagic);
        }
        Ok(Self {
            bytes,
            at: 16,
            done: false,
        })
    }

    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let s = self.bytes.get(self.at..end)?;
        self.at = end;
        Some(s)
    }

    fn u64(&mut self) -> Option<u64> {
        self.take(8)
            .and_then(|b| b.try_into().ok())
            .map(u64::from_le_bytes)
    }

    fn u32(&mut self) -> Option<u32> {
        self.take(4)
            .and_then(|b| b.try_into().ok())
            .map(u32::from_le_bytes)
    }

    fn u16(&mut self) -> Option<u16> {
        self.take(2)
            .and_then(|b| b.try_into().ok())
            .map(u16::from_le_bytes)
    }

    fn record(&mut self) -> Option<Option<Record<'a>>> {
        match *self.take(1)?.first()? {
            FILE => {
                let n = usize::from(self.u16()?);
                let path = core::str::from_utf8(self.take(n)?).ok()?;
                let size = self.u64()?;
                let sec = self.u64()?;
                let nsec = self.u32()?;
                let inode = self.u64()?;
                Some(Some(Record::File(FileId {
                    path,
                    size,
                    mtime: (sec, nsec),
                    inode,
                })))
            }
            BLOCK => {
                let inode = self.u64()?;
                let index = self.u64()?;
                let len = self.u32()? as usize;
                let off = self.u64()?;
                if len > MAX_BLOCK || off % MAX_BLOCK as u64 != 0 {
                    return None;
                }
                let start = usize::try_from(off).ok()?;
                let data = self.bytes.get(start..start.checked_add(len)?)?;
                Some(Some(Record::Block {
                    inode,
                    index,
                    data,
                    offset: off,
                }))
            }
            END => Some(None),
            _ => None,
        }
    }
}

impl<'a> Iterator for Reader<'a> {
    type Item = Result<Record<'a>, ImageError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let at = self.at;
        match self.record() {
            Some(Some(r)) => Some(Ok(r)),
            Some(None) => {
                self.done = true;
                None
            }
            None => {
                self.done = true;
                Some(Err(ImageError::Malformed(at)))
            }
        }
    }
}

/// The encoded file record.
pub fn file_record(id: &FileId<'_>) -> Vec<u8> {
    let path = id.path.as_bytes();
    let n = path.len().min(usize::from(u16::MAX));
    let mut out = Vec::with_capacity(31 + n);
    out.push(FILE);
    out.extend_from_slice(&(n as u16).to_le_bytes());
    out.extend_from_slice(&path[..n]);
    out.extend_from_slice(&id.size.to_le_bytes());
    out.extend_from_slice(&id.mtime.0.to_le_bytes());
    out.extend_from_slice(&id.mtime.1.to_le_bytes());
    out.extend_from_slice(&id.inode.to_le_bytes());
    out
}

/// A block record: its `len` bytes are at `offset` (64 KiB-aligned).
pub fn block_record(inode: u64, index: u64, len: u32, offset: u64) -> [u8; 29] {
    let mut out = [0u8; 29];
    out[0] = BLOCK;
    out[1..9].copy_from_slice(&inode.to_le_bytes());
    out[9..17].copy_from_slice(&index.to_le_bytes());
    out[17..21].copy_from_slice(&len.to_le_bytes());
    out[21..29].copy_from_slice(&offset.to_le_bytes());
    out
}

/// Size of a block record.
pub const BLOCK_RECORD: usize = 29;

/// The end record.
pub const END_RECORD: [u8; 1] = [END];

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        let mut img = MAGIC.to_vec();
        img.extend(file_record(&FileId {
            path: "/usr/lib/jvm/x/lib/modules",
            size: 70_000,
            mtime: (1_700_000_000, 5),
            inode: 42,
        }));
        img.extend(block_record(42, 1, 3, 65536));
        img.extend(END_RECORD);
        img.resize(65536, 0);
        img.extend([7, 8, 9]);
        img
    }

    #[test]
    fn round_trip() {
        let img = sample();
        let recs: Vec<_> = Reader::new(&img).unwrap().collect();
        assert_eq!(recs.len(), 2);
        assert_eq!(
            recs[0],
            Ok(Record::File(FileId {
                path: "/usr/lib/jvm/x/lib/modules",
                size: 70_000,
                mtime: (1_700_000_000, 5),
                inode: 42
            }))
        );
        assert_eq!(
            recs[1],
            Ok(Record::Block {
                inode: 42,
                index: 1,
                data: &[7, 8, 9],
                offset: 65536
            })
        );
    }

    #[test]
    fn bad_magic_and_truncation_are_errors_not_panics() {
        assert!(matches!(Reader::new(b"nope"), Err(ImageError::BadMagic)));
        let img = sample();
        for cut in 16..img.len() - 1 {
            if cut > 200 && cut < 65536 {
                continue;
            }
            let recs: Vec<_> = Reader::new(&img[..cut]).unwrap().collect();
            assert!(recs.iter().all(|r| r.is_ok()) || recs.last().unwrap().is_err());
        }
        let mut big = MAGIC.to_vec();
        big.extend(block_record(1, 0, u32::MAX, 0));
        let recs: Vec<_> = Reader::new(&big).unwrap().collect();
        assert_eq!(recs, vec![Err(ImageError::Malformed(16))]);
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        let mut x = 0x1234_5678_u64;
        for _ in 0..2000 {
            let mut img = MAGIC.to_vec();
            for _ in 0..(x % 200) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                img.push((x & 0xff) as u8 % 5);
            }
            let _ = Reader::new(&img).map(|r| r.count());
        }
    }
}
