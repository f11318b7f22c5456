//! Protocol constants: message type numbers, special tags and fids, qid types,
//! `getattr`/`setattr` masks, lock types and status, open flags, and a few errnos.
//!
//! Numbering follows Linux `include/net/9p/9p.h` (`enum p9_msg_t`) and the
//! masks follow diod's `protocol.md`.

/// Protocol version string for 9P2000.L, sent in `Tversion`/`Rversion`.
pub const VERSION_9P2000L: &str = "9P2000.L";
/// Version string a server answers in `Rversion` when it declines the client's version.
pub const VERSION_UNKNOWN: &str = "unknown";

/// The tag used by `Tversion` (and only by `Tversion`).
pub const NOTAG: u16 = 0xFFFF;
/// "No fid": used as `afid` in `Tattach` when no authentication is done.
pub const NOFID: u32 = 0xFFFF_FFFF;
/// "No numeric user name": `n_uname` value meaning "use `uname` instead".
pub const NONUNAME: u32 = 0xFFFF_FFFF;
/// Maximum number of names in a `Twalk` (and qids in an `Rwalk`).
pub const MAXWELEM: usize = 16;

/// Size of the common header `size[4] type[1] tag[2]`.
pub const HEADER_LEN: usize = 7;
/// Linux `P9_IOHDRSZ`: the slack Linux subtracts from msize for read/write headers.
pub const IOHDRSZ: u32 = 24;
/// Linux `P9_READDIRHDRSZ`: the slack Linux subtracts from msize for readdir headers.
pub const READDIRHDRSZ: u32 = 24;
/// Exact length of an `Rread`/`Rreaddir` header: `size[4] type[1] tag[2] count[4]`.
pub const RREAD_HEADER_LEN: usize = 11;
/// Exact length of a `Twrite` header: `size[4] type[1] tag[2] fid[4] offset[8] count[4]`.
pub const TWRITE_HEADER_LEN: usize = 23;
/// Length of a qid on the wire: `type[1] version[4] path[8]`.
pub const QID_LEN: usize = 13;
/// The offset of a read of a `/net` connection's `data` file that waits,
/// after the end of file, for the connection to fail (a reset its peer's
/// close or a later send drew): it answers the error, or end of file when
/// the connection is closed without one. Reads at any other offset are
/// the stream's bytes (Plan 9's `/net` ignores the offset).
pub const NET_WATCH_OFFSET: u64 = u64::MAX;

/// The top 32 bits of the qid paths of the Astraea gateway's `/net`
/// connection files. Below them: the protocol in bit 31, the connection's
/// number in bits 8–30, the file in bits 0–7. A client may take the
/// number of the connection whose `ctl` an `open` made (of `clone`, of
/// `listen`) from the qid it returned ([`net_conv_number`]) instead of
/// reading `ctl`.
pub const NET_CONV_QID: u64 = 0xFFFF_0401 << 32;

/// The connection number a `/net` connection file's qid path names, if it
/// is one ([`NET_CONV_QID`]).
pub fn net_conv_number(path: u64) -> Option<u32> {
    (path >> 32 == NET_CONV_QID >> 32).then_some(((path >> 8) & 0x7F_FFFF) as u32)
}

/// Type number 6, reserved by Linux for a "Tlerror" that does not exist on the
/// wire: 9P2000.L defines no such request. Decoding type 6 yields
/// [`Error::UnknownType`](crate::Error::UnknownType).
pub const TLERROR: u8 = 6;

/// 9P2000.L message type numbers (T-type even, R-type = T-type + 1).
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum MsgType {
    Rlerror = 7,
    Tstatfs = 8,
    Rstatfs = 9,
    Tlopen = 12,
    Rlopen = 13,
    Tlcreate = 14,
    Rlcreate = 15,
    Tsymlink = 16,
    Rsymlink = 17,
    Tmknod = 18,
    Rmknod = 19,
    Trename = 20,
    Rrename = 21,
    Treadlink = 22,
    Rreadlink = 23,
    Tgetattr = 24,
    Rgetattr = 25,
    Tsetattr = 26,
    Rsetattr = 27,
    Txattrwalk = 30,
    Rxattrwalk = 31,
    Txattrcreate = 32,
    Rxattrcreate = 33,
    Treaddir = 40,
    Rreaddir = 41,
    Tfsync = 50,
    Rfsync = 51,
    Tlock = 52,
    Rlock = 53,
    Tgetlock = 54,
    Rgetlock = 55,
    Tlink = 70,
    Rlink = 71,
    Tmkdir = 72,
    Rmkdir = 73,
    Trenameat = 74,
    Rrenameat = 75,
    Tunlinkat = 76,
    Runlinkat = 77,
    Tversion = 100,
    Rversion = 101,
    Tauth = 102,
    Rauth = 103,
    Tattach = 104,
    Rattach = 105,
    Tflush = 108,
    Rflush = 109,
    Twalk = 110,
    Rwalk = 111,
    Tread = 116,
    Rread = 117,
    Twrite = 118,
    Rwrite = 119,
    Tclunk = 120,
    Rclunk = 121,
    Tremove = 122,
    Rremove = 123,
}

impl MsgType {
    /// Every message type, in numeric order.
    pub const ALL: [MsgType; 57] = [
        MsgType::Rlerror,
        MsgType::Tstatfs,
        MsgType::Rstatfs,
        MsgType::Tlopen,
        MsgType::Rlopen,
        MsgType::Tlcreate,
        MsgType::Rlcreate,
        MsgType::Tsymlink,
        MsgType::Rsymlink,
        MsgType::Tmknod,
        MsgType::Rmknod,
        MsgType::Trename,
        MsgType::Rrename,
        MsgType::Treadlink,
        MsgType::Rreadlink,
        MsgType::Tgetattr,
        MsgType::Rgetattr,
        MsgType::Tsetattr,
        MsgType::Rsetattr,
        MsgType::Txattrwalk,
        MsgType::Rxattrwalk,
        MsgType::Txattrcreate,
        MsgType::Rxattrcreate,
        MsgType::Treaddir,
        MsgType::Rreaddir,
        MsgType::Tfsync,
        MsgType::Rfsync,
        MsgType::Tlock,
        MsgType::Rlock,
        MsgType::Tgetlock,
        MsgType::Rgetlock,
        MsgType::Tlink,
        MsgType::Rlink,
        MsgType::Tmkdir,
        MsgType::Rmkdir,
        MsgType::Trenameat,
        MsgType::Rrenameat,
        MsgType::Tunlinkat,
        MsgType::Runlinkat,
        MsgType::Tversion,
        MsgType::Rversion,
        MsgType::Tauth,
        MsgType::Rauth,
        MsgType::Tattach,
        MsgType::Rattach,
        MsgType::Tflush,
        MsgType::Rflush,
        MsgType::Twalk,
        MsgType::Rwalk,
        MsgType::Tread,
        MsgType::Rread,
        MsgType::Twrite,
        MsgType::Rwrite,
        MsgType::Tclunk,
        MsgType::Rclunk,
        MsgType::Tremove,
        MsgType::Rremove,
    ];

    /// Maps a wire type byte to a 9P2000.L message type, or `None` if the byte
    /// is not one (including 9P2000-only types such as `Rerror` = 107 and the
    /// reserved [`TLERROR`] = 6).
    pub const fn from_u8(ty: u8) -> Option<MsgType> {
        use MsgType::*;
        Some(match ty {
            7 => Rlerror,
            8 => Tstatfs,
            9 => Rstatfs,
            12 => Tlopen,
            13 => Rlopen,
            14 => Tlcreate,
            15 => Rlcreate,
            16 => Tsymlink,
            17 => Rsymlink,
            18 => Tmknod,
            19 => Rmknod,
            20 => Trename,
            21 => Rrename,
            22 => Treadlink,
            23 => Rreadlink,
            24 => Tgetattr,
            25 => Rgetattr,
            26 => Tsetattr,
            27 => Rsetattr,
            30 => Txattrwalk,
            31 => Rxattrwalk,
            32 => Txattrcreate,
            33 => Rxattrcreate,
            40 => Treaddir,
            41 => Rreaddir,
            50 => Tfsync,
            51 => Rfsync,
            52 => Tlock,
            53 => Rlock,
            54 => Tgetlock,
            55 => Rgetlock,
            70 => Tlink,
            71 => Rlink,
            72 => Tmkdir,
            73 => Rmkdir,
            74 => Trenameat,
            75 => Rrenameat,
            76 => Tunlinkat,
            77 => Runlinkat,
            100 => Tversion,
            101 => Rversion,
            102 => Tauth,
            103 => Rauth,
            104 => Tattach,
            105 => Rattach,
            108 => Tflush,
            109 => Rflush,
            110 => Twalk,
            111 => Rwalk,
            116 => Tread,
            117 => Rread,
            118 => Twrite,
            119 => Rwrite,
            120 => Tclunk,
            121 => Rclunk,
            122 => Tremove,
            123 => Rremove,
            _ => return None,
        })
    }

    /// The wire byte of this type.
    pub const fn as_u8(self) -> u8 {
        self as u8
    }

    /// `true` for requests (T-messages), `false` for replies (R-messages).
    pub const fn is_request(self) -> bool {
        (self as u8).is_multiple_of(2)
    }
}

impl TryFrom<u8> for MsgType {
    type Error = crate::Error;

    fn try_from(ty: u8) -> Result<Self, Self::Error> {
        MsgType::from_u8(ty).ok_or(crate::Error::UnknownType(ty))
    }
}

impl From<MsgType> for u8 {
    fn from(ty: MsgType) -> u8 {
        ty as u8
    }
}

// ---------------------------------------------------------------------------
// Qid types (`Qid::ty` bits).

/// Qid type: directory.
pub const QTDIR: u8 = 0x80;
/// Qid type: append-only file.
pub const QTAPPEND: u8 = 0x40;
/// Qid type: exclusive-use file.
pub const QTEXCL: u8 = 0x20;
/// Qid type: mounted channel.
pub const QTMOUNT: u8 = 0x10;
/// Qid type: authentication file.
pub const QTAUTH: u8 = 0x08;
/// Qid type: non-backed-up (temporary) file.
pub const QTTMP: u8 = 0x04;
/// Qid type: symbolic link.
pub const QTSYMLINK: u8 = 0x02;
/// Qid type: hard link (9P2000.u).
pub const QTLINK: u8 = 0x01;
/// Qid type: plain file (no bits set).
pub const QTFILE: u8 = 0x00;

// ---------------------------------------------------------------------------
// Tgetattr request_mask / Rgetattr valid bits.

/// Getattr: `mode`.
pub const P9_GETATTR_MODE: u64 = 0x0000_0001;
/// Getattr: `nlink`.
pub const P9_GETATTR_NLINK: u64 = 0x0000_0002;
/// Getattr: `uid`.
pub const P9_GETATTR_UID: u64 = 0x0000_0004;
/// Getattr: `gid`.
pub const P9_GETATTR_GID: u64 = 0x0000_0008;
/// Getattr: `rdev`.
pub const P9_GETATTR_RDEV: u64 = 0x0000_0010;
/// Getattr: `atime_sec`/`atime_nsec`.
pub const P9_GETATTR_ATIME: u64 = 0x0000_0020;
/// Getattr: `mtime_sec`/`mtime_nsec`.
pub const P9_GETATTR_MTIME: u64 = 0x0000_0040;
/// Getattr: `ctime_sec`/`ctime_nsec`.
pub const P9_GETATTR_CTIME: u64 = 0x0000_0080;
/// Getattr: inode number (`qid.path`).
pub const P9_GETATTR_INO: u64 = 0x0000_0100;
/// Getattr: `size`.
pub const P9_GETATTR_SIZE: u64 = 0x0000_0200;
/// Getattr: `blocks`.
pub const P9_GETATTR_BLOCKS: u64 = 0x0000_0400;
/// Getattr: `btime_sec`/`btime_nsec` (reserved).
pub const P9_GETATTR_BTIME: u64 = 0x0000_0800;
/// Getattr: `gen` (reserved).
pub const P9_GETATTR_GEN: u64 = 0x0000_1000;
/// Getattr: `data_version` (reserved).
pub const P9_GETATTR_DATA_VERSION: u64 = 0x0000_2000;
/// Getattr: every field up to and including `blocks`.
pub const P9_GETATTR_BASIC: u64 = 0x0000_07ff;
/// Getattr: every field.
pub const P9_GETATTR_ALL: u64 = 0x0000_3fff;

// ---------------------------------------------------------------------------
// Tsetattr valid bits.

/// Setattr: `mode`.
pub const P9_SETATTR_MODE: u32 = 0x0000_0001;
/// Setattr: `uid`.
pub const P9_SETATTR_UID: u32 = 0x0000_0002;
/// Setattr: `gid`.
pub const P9_SETATTR_GID: u32 = 0x0000_0004;
/// Setattr: `size` (truncate).
pub const P9_SETATTR_SIZE: u32 = 0x0000_0008;
/// Setattr: atime (server's current time unless [`P9_SETATTR_ATIME_SET`]).
pub const P9_SETATTR_ATIME: u32 = 0x0000_0010;
/// Setattr: mtime (server's current time unless [`P9_SETATTR_MTIME_SET`]).
pub const P9_SETATTR_MTIME: u32 = 0x0000_0020;
/// Setattr: ctime (always the server's current time).
pub const P9_SETATTR_CTIME: u32 = 0x0000_0040;
/// Setattr: use `atime_sec`/`atime_nsec` from the message.
pub const P9_SETATTR_ATIME_SET: u32 = 0x0000_0080;
/// Setattr: use `mtime_sec`/`mtime_nsec` from the message.
pub const P9_SETATTR_MTIME_SET: u32 = 0x0000_0100;

// ---------------------------------------------------------------------------
// Tlock / Tgetlock.

/// Lock type: shared (read) lock.
pub const P9_LOCK_TYPE_RDLCK: u8 = 0;
/// Lock type: exclusive (write) lock.
pub const P9_LOCK_TYPE_WRLCK: u8 = 1;
/// Lock type: unlock.
pub const P9_LOCK_TYPE_UNLCK: u8 = 2;
/// Lock flag: blocking request (`F_SETLKW`).
pub const P9_LOCK_FLAGS_BLOCK: u32 = 1;
/// Lock flag: reclaim (reserved).
pub const P9_LOCK_FLAGS_RECLAIM: u32 = 2;
/// Lock flag (Astraea's): a whole-file `flock(2)` lock of the open file,
/// apart from its byte-range locks; the range is ignored. Servers that do
/// not know it take a byte-range lock of the whole file, as Linux's 9P
/// client makes of `flock`.
pub const P9_LOCK_FLAGS_FLOCK: u32 = 0x100;
/// Rlock status: lock acquired.
pub const P9_LOCK_SUCCESS: u8 = 0;
/// Rlock status: would block; the Linux client retries.
pub const P9_LOCK_BLOCKED: u8 = 1;
/// Rlock status: error.
pub const P9_LOCK_ERROR: u8 = 2;
/// Rlock status: server in grace period.
pub const P9_LOCK_GRACE: u8 = 3;

// ---------------------------------------------------------------------------
// Tlopen / Tlcreate flags (Linux `P9_DOTL_*`, equal to x86-64 Linux `O_*`).

/// Open flag: read only.
pub const P9_DOTL_RDONLY: u32 = 0o0;
/// Open flag: write only.
pub const P9_DOTL_WRONLY: u32 = 0o1;
/// Open flag: read and write.
pub const P9_DOTL_RDWR: u32 = 0o2;
/// Open flag: the access-mode mask.
pub const P9_DOTL_ACCMODE: u32 = 0o3;
/// Open flag: create.
pub const P9_DOTL_CREATE: u32 = 0o100;
/// Open flag: exclusive create.
pub const P9_DOTL_EXCL: u32 = 0o200;
/// Open flag: no controlling terminal.
pub const P9_DOTL_NOCTTY: u32 = 0o400;
/// Open flag: truncate.
pub const P9_DOTL_TRUNC: u32 = 0o1000;
/// Open flag: append.
pub const P9_DOTL_APPEND: u32 = 0o2000;
/// Open flag: non-blocking.
pub const P9_DOTL_NONBLOCK: u32 = 0o4000;
/// Open flag: data sync.
pub const P9_DOTL_DSYNC: u32 = 0o10000;
/// Open flag: async notification.
pub const P9_DOTL_FASYNC: u32 = 0o20000;
/// Open flag: direct I/O.
pub const P9_DOTL_DIRECT: u32 = 0o40000;
/// Open flag: large file.
pub const P9_DOTL_LARGEFILE: u32 = 0o100000;
/// Open flag: must be a directory.
pub const P9_DOTL_DIRECTORY: u32 = 0o200000;
/// Open flag: do not follow symlinks.
pub const P9_DOTL_NOFOLLOW: u32 = 0o400000;
/// Open flag: do not update atime.
pub const P9_DOTL_NOATIME: u32 = 0o1000000;
/// Open flag: close on exec.
pub const P9_DOTL_CLOEXEC: u32 = 0o2000000;
/// Open flag: sync.
pub const P9_DOTL_SYNC: u32 = 0o4000000;

/// Tunlinkat flag: remove a directory (Linux `AT_REMOVEDIR`).
pub const P9_DOTL_AT_REMOVEDIR: u32 = 0x200;

/// Txattrcreate flag: fail if the attribute exists.
pub const XATTR_CREATE: u32 = 1;
/// Txattrcreate flag: fail if the attribute does not exist.
pub const XATTR_REPLACE: u32 = 2;

// ---------------------------------------------------------------------------
// Rreaddir entry `type[1]` values (Linux `DT_*`).

/// Dirent type: unknown.
pub const DT_UNKNOWN: u8 = 0;
/// Dirent type: FIFO.
pub const DT_FIFO: u8 = 1;
/// Dirent type: character device.
pub const DT_CHR: u8 = 2;
/// Dirent type: directory.
pub const DT_DIR: u8 = 4;
/// Dirent type: block device.
pub const DT_BLK: u8 = 6;
/// Dirent type: regular file.
pub const DT_REG: u8 = 8;
/// Dirent type: symbolic link.
pub const DT_LNK: u8 = 10;
/// Dirent type: socket.
pub const DT_SOCK: u8 = 12;

/// A few Linux errno values commonly sent in `Rlerror`.
///
/// The codec itself never interprets `ecode`; these exist for documentation
/// and convenience only.
pub mod errno {
    /// Operation not permitted.
    pub const EPERM: u32 = 1;
    /// No such file or directory. Also the answer to `Tauth` when no
    /// authentication is required (what diod's client expects).
    pub const ENOENT: u32 = 2;
    /// Interrupted: the answer to a request cancelled by `Tflush`.
    pub const EINTR: u32 = 4;
    /// I/O error.
    pub const EIO: u32 = 5;
    /// Bad file descriptor (unknown fid).
    pub const EBADF: u32 = 9;
    /// Invalid argument.
    pub const EINVAL: u32 = 22;
    /// Protocol error (undecodable request).
    pub const EPROTO: u32 = 71;
    /// Message too long (exceeds msize).
    pub const EMSGSIZE: u32 = 90;
    /// Operation not supported. Never valid as an answer to `Tflush`.
    pub const EOPNOTSUPP: u32 = 95;
}

/// `Txattrcreate` flag (Astraea's): the attribute is set to an empty value.
/// Without it, `attr_size` 0 removes the attribute (QEMU's and Linux v9fs's
/// convention for `removexattr`).
pub const P9_XATTR_EMPTY: u32 = 0x8000_0000;
