//! Shared test helpers: a builder that turns one bag of arbitrary field
//! values into one message of every kind, and golden frames.
#![allow(dead_code)]

use astraea_9p::*;

/// Owned raw material for [`all_messages`].
#[derive(Debug, Clone)]
pub struct Fields {
    /// At least 32 numbers; truncated to each field's width.
    pub n: Vec<u64>,
    /// At least 16 strings.
    pub strs: Vec<Vec<u8>>,
    /// Payload for Twrite/Rread/Rreaddir.
    pub data: Vec<u8>,
    /// At least 16 qids.
    pub qids: Vec<Qid>,
    /// Number of walk names to use (0..=16).
    pub nwalk: usize,
    /// Number of walk qids to use (0..=16).
    pub nqid: usize,
}

impl Fields {
    pub fn strs(&self) -> Vec<Str<'_>> {
        self.strs.iter().map(|s| Str::new(s)).collect()
    }
}

/// One message of every 9P2000.L kind (T and R), built from `f`.
/// `strs` must be `f.strs()`.
pub fn all_messages<'a>(f: &'a Fields, strs: &'a [Str<'a>]) -> Vec<Message<'a>> {
    let n = |i: usize| f.n[i];
    let w = |i: usize| f.n[i] as u32;
    let h = |i: usize| f.n[i] as u16;
    let b = |i: usize| f.n[i] as u8;
    let s = |i: usize| strs[i];
    let q = |i: usize| f.qids[i];
    let names = WalkNames::new(&strs[..f.nwalk]).unwrap();
    let qids = WalkQids::new(&f.qids[..f.nqid]).unwrap();
    let data: &[u8] = &f.data;
    let stat = Stat {
        valid: n(0),
        qid: q(0),
        mode: w(1),
        uid: w(2),
        gid: w(3),
        nlink: n(4),
        rdev: n(5),
        size: n(6),
        blksize: n(7),
        blocks: n(8),
        atime_sec: n(9),
        atime_nsec: n(10),
        mtime_sec: n(11),
        mtime_nsec: n(12),
        ctime_sec: n(13),
        ctime_nsec: n(14),
        btime_sec: n(15),
        btime_nsec: n(16),
        generation: n(17),
        data_version: n(18),
    };
    let attr = SetAttr {
        valid: w(0),
        mode: w(1),
        uid: w(2),
        gid: w(3),
        size: n(4),
        atime_sec: n(5),
        atime_nsec: n(6),
        mtime_sec: n(7),
        mtime_nsec: n(8),
    };
    let statfs = StatFs {
        ty: w(0),
        bsize: w(1),
        blocks: n(2),
        bfree: n(3),
        bavail: n(4),
        files: n(5),
        ffree: n(6),
        fsid: n(7),
        namelen: w(8),
    };
    let flock = Flock {
        ty: b(0),
        flags: w(1),
        start: n(2),
        length: n(3),
        proc_id: w(4),
        client_id: s(0),
    };
    let getlock = Getlock {
        ty: b(5),
        start: n(6),
        length: n(7),
        proc_id: w(8),
        client_id: s(1),
    };
    use RMessage as R;
    use TMessage as T;
    let t = [
        T::Version {
            msize: w(0),
            version: s(0),
        },
        T::Auth {
            afid: w(1),
            uname: s(1),
            aname: s(2),
            n_uname: w(2),
        },
        T::Attach {
            fid: w(3),
            afid: w(4),
            uname: s(3),
            aname: s(4),
            n_uname: w(5),
        },
        T::Flush { oldtag: h(6) },
        T::Walk {
            fid: w(7),
            newfid: w(8),
            names,
        },
        T::Lopen {
            fid: w(9),
            flags: w(10),
        },
        T::Lcreate {
            fid: w(11),
            name: s(5),
            flags: w(12),
            mode: w(13),
            gid: w(14),
        },
        T::Read {
            fid: w(15),
            offset: n(16),
            count: w(17),
        },
        T::Write {
            fid: w(18),
            offset: n(19),
            data,
        },
        T::Clunk { fid: w(20) },
        T::Remove { fid: w(21) },
        T::Getattr {
            fid: w(22),
            request_mask: n(23),
        },
        T::Setattr { fid: w(24), attr },
        T::Statfs { fid: w(25) },
        T::Readdir {
            fid: w(26),
            offset: n(27),
            count: w(28),
        },
        T::Readlink { fid: w(29) },
        T::Symlink {
            fid: w(30),
            name: s(6),
            target: s(7),
            gid: w(31),
        },
        T::Mknod {
            dfid: w(0),
            name: s(8),
            mode: w(1),
            major: w(2),
            minor: w(3),
            gid: w(4),
        },
        T::Mkdir {
            dfid: w(5),
            name: s(9),
            mode: w(6),
            gid: w(7),
        },
        T::Link {
            dfid: w(8),
            fid: w(9),
            name: s(10),
        },
        T::Rename {
            fid: w(10),
            dfid: w(11),
            name: s(11),
        },
        T::Renameat {
            olddirfid: w(12),
            oldname: s(12),
            newdirfid: w(13),
            newname: s(13),
        },
        T::Unlinkat {
            dirfid: w(14),
            name: s(14),
            flags: w(15),
        },
        T::Fsync {
            fid: w(16),
            datasync: w(17),
        },
        T::Lock {
            fid: w(18),
            lock: flock,
        },
        T::Getlock {
            fid: w(19),
            lock: getlock,
        },
        T::Xattrwalk {
            fid: w(20),
            newfid: w(21),
            name: s(15),
        },
        T::Xattrcreate {
            fid: w(22),
            name: s(0),
            attr_size: n(23),
            flags: w(24),
        },
    ];
    let r = [
        R::Lerror { ecode: w(0) },
        R::Version {
            msize: w(1),
            version: s(1),
        },
        R::Auth { aqid: q(1) },
        R::Attach { qid: q(2) },
        R::Flush,
        R::Walk { qids },
        R::Lopen {
            qid: q(3),
            iounit: w(2),
        },
        R::Lcreate {
            qid: q(4),
            iounit: w(3),
        },
        R::Read { data },
        R::Write { count: w(4) },
        R::Clunk,
        R::Remove,
        R::Getattr { stat },
        R::Setattr,
        R::Statfs { statfs },
        R::Readdir { data },
        R::Readlink { target: s(2) },
        R::Symlink { qid: q(5) },
        R::Mknod { qid: q(6) },
        R::Mkdir { qid: q(7) },
        R::Link,
        R::Rename,
        R::Renameat,
        R::Unlinkat,
        R::Fsync,
        R::Lock { status: b(5) },
        R::Getlock { lock: getlock },
        R::Xattrwalk { size: n(6) },
        R::Xattrcreate,
    ];
    t.into_iter()
        .map(Message::T)
        .chain(r.into_iter().map(Message::R))
        .collect()
}

/// A fixed, deterministic `Fields` (for non-proptest tests).
pub fn sample_fields() -> Fields {
    Fields {
        n: (0..32u64)
            .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (i << 3))
            .collect(),
        strs: (0..16).map(|i| format!("name-{i}").into_bytes()).collect(),
        data: (0..=255u8).collect(),
        qids: (0..16u32)
            .map(|i| Qid {
                ty: (i * 8) as u8,
                version: i * 1000,
                path: u64::from(i) << 40,
            })
            .collect(),
        nwalk: 16,
        nqid: 16,
    }
}

/// Every message type appears exactly once in `all_messages`.
pub fn assert_covers_all_types(msgs: &[Message<'_>]) {
    let mut types: Vec<u8> = msgs.iter().map(|m| m.msg_type().as_u8()).collect();
    types.sort_unstable();
    let all: Vec<u8> = MsgType::ALL.iter().map(|t| t.as_u8()).collect();
    assert_eq!(types, all);
}

/// Builds Rreaddir data from (name, offset) pairs.
pub fn readdir_data(entries: &[(Qid, u64, u8, &[u8])]) -> Vec<u8> {
    let mut w = DirEntryWriter::new(u32::MAX);
    for &(qid, offset, ty, name) in entries {
        w.push(&DirEntry {
            qid,
            offset,
            ty,
            name: Str::new(name),
        })
        .unwrap();
    }
    w.into_inner()
}

/// Sets the size field of `frame` to its length.
pub fn fix_size(frame: &mut [u8]) {
    let len = frame.len() as u32;
    if let Some(size) = frame.get_mut(..4) {
        size.copy_from_slice(&len.to_le_bytes());
    }
}

pub fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

/// All golden frames, paired with their meaning. Shared with the robustness tests.
pub fn goldens() -> Vec<(Vec<u8>, u16, Message<'static>)> {
    static NAMES: [Str<'static>; 2] = [Str::from_text("usr"), Str::from_text("bin")];
    static QIDS: [Qid; 2] = [
        Qid {
            ty: QTDIR,
            version: 0,
            path: 2,
        },
        Qid {
            ty: QTFILE,
            version: 3,
            path: 0x0102_0304_0506_0708,
        },
    ];
    let readdir: &'static [u8] = Box::leak(
        cat(&[
            // qid: type 0x80, version 0, path 1
            &[0x80, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0],
            &[1, 0, 0, 0, 0, 0, 0, 0], // offset 1
            &[4],                      // DT_DIR
            &[1, 0, b'.'],             // name "."
            // qid: type 0, version 7, path 0x1234
            &[0x00, 7, 0, 0, 0, 0x34, 0x12, 0, 0, 0, 0, 0, 0],
            &[2, 0, 0, 0, 0, 0, 0, 0], // offset 2
            &[8],                      // DT_REG
            &[4, 0, b'f', b'i', b'l', b'e'],
        ])
        .into_boxed_slice(),
    );
    vec![
        (
            // Tversion msize=8192 "9P2000.L", tag NOTAG: size = 4+1+2+4+2+8 = 21
            cat(&[
                &[21, 0, 0, 0],
                &[100],
                &[0xFF, 0xFF],
                &[0x00, 0x20, 0, 0],
                &[8, 0],
                b"9P2000.L",
            ]),
            NOTAG,
            Message::T(TMessage::Version {
                msize: 8192,
                version: Str::from(VERSION_9P2000L),
            }),
        ),
        (
            // Rversion msize=65560 "9P2000.L"
            cat(&[
                &[21, 0, 0, 0],
                &[101],
                &[0xFF, 0xFF],
                &[0x18, 0x00, 0x01, 0x00],
                &[8, 0],
                b"9P2000.L",
            ]),
            NOTAG,
            Message::R(RMessage::Version {
                msize: 65560,
                version: Str::from("9P2000.L"),
            }),
        ),
        (
            // Tattach tag 1 fid 0 afid NOFID uname "root" aname "" n_uname 0
            // size = 7 + 4 + 4 + 6 + 2 + 4 = 27
            cat(&[
                &[27, 0, 0, 0],
                &[104],
                &[1, 0],
                &[0, 0, 0, 0],
                &[0xFF, 0xFF, 0xFF, 0xFF],
                &[4, 0, b'r', b'o', b'o', b't'],
                &[0, 0],
                &[0, 0, 0, 0],
            ]),
            1,
            Message::T(TMessage::Attach {
                fid: 0,
                afid: NOFID,
                uname: Str::from("root"),
                aname: Str::from(""),
                n_uname: 0,
            }),
        ),
        (
            // Twalk tag 1 fid 1 newfid 2 ["usr", "bin"]: size = 7 + 4 + 4 + 2 + 5 + 5 = 27
            cat(&[
                &[27, 0, 0, 0],
                &[110],
                &[1, 0],
                &[1, 0, 0, 0],
                &[2, 0, 0, 0],
                &[2, 0],
                &[3, 0, b'u', b's', b'r'],
                &[3, 0, b'b', b'i', b'n'],
            ]),
            1,
            Message::T(TMessage::Walk {
                fid: 1,
                newfid: 2,
                names: WalkNames::new(&NAMES).unwrap(),
            }),
        ),
        (
            // Rwalk tag 1 with 2 qids: size = 7 + 2 + 26 = 35
            cat(&[
                &[35, 0, 0, 0],
                &[111],
                &[1, 0],
                &[2, 0],
                &[0x80, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0],
                &[0x00, 3, 0, 0, 0, 8, 7, 6, 5, 4, 3, 2, 1],
            ]),
            1,
            Message::R(RMessage::Walk {
                qids: WalkQids::new(&QIDS).unwrap(),
            }),
        ),
        (
            // Rlerror tag 5 ecode ENOENT
            cat(&[&[11, 0, 0, 0], &[7], &[5, 0], &[2, 0, 0, 0]]),
            5,
            Message::R(RMessage::Lerror {
                ecode: errno::ENOENT,
            }),
        ),
        (
            // Tgetattr tag 2 fid 9 mask BASIC
            cat(&[
                &[19, 0, 0, 0],
                &[24],
                &[2, 0],
                &[9, 0, 0, 0],
                &[0xFF, 0x07, 0, 0, 0, 0, 0, 0],
            ]),
            2,
            Message::T(TMessage::Getattr {
                fid: 9,
                request_mask: P9_GETATTR_BASIC,
            }),
        ),
        (
            // Rgetattr tag 0x0201, full layout: size = 7 + 153 = 160
            cat(&[
                &[160, 0, 0, 0],
                &[25],
                &[0x01, 0x02],
                &[0xFF, 0x07, 0, 0, 0, 0, 0, 0],             // valid
                &[0x80, 1, 0, 0, 0, 8, 7, 6, 5, 4, 3, 2, 1], // qid
                &[0xED, 0x41, 0, 0],                         // mode 040755
                &[0xE8, 0x03, 0, 0],                         // uid 1000
                &[100, 0, 0, 0],                             // gid 100
                &[2, 0, 0, 0, 0, 0, 0, 0],                   // nlink
                &[0, 0, 0, 0, 0, 0, 0, 0],                   // rdev
                &[0, 0x10, 0, 0, 0, 0, 0, 0],                // size 4096
                &[0, 0x10, 0, 0, 0, 0, 0, 0],                // blksize 4096
                &[8, 0, 0, 0, 0, 0, 0, 0],                   // blocks
                &[0x00, 0xF1, 0x53, 0x65, 0, 0, 0, 0],       // atime_sec 1700000000
                &[1, 0, 0, 0, 0, 0, 0, 0],                   // atime_nsec
                &[2, 0, 0, 0, 0, 0, 0, 0],                   // mtime_sec
                &[3, 0, 0, 0, 0, 0, 0, 0],                   // mtime_nsec
                &[4, 0, 0, 0, 0, 0, 0, 0],                   // ctime_sec
                &[5, 0, 0, 0, 0, 0, 0, 0],                   // ctime_nsec
                &[6, 0, 0, 0, 0, 0, 0, 0],                   // btime_sec
                &[7, 0, 0, 0, 0, 0, 0, 0],                   // btime_nsec
                &[9, 0, 0, 0, 0, 0, 0, 0],                   // gen
                &[0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF], // data_version
            ]),
            0x0201,
            Message::R(RMessage::Getattr {
                stat: Stat {
                    valid: P9_GETATTR_BASIC,
                    qid: Qid {
                        ty: QTDIR,
                        version: 1,
                        path: 0x0102_0304_0506_0708,
                    },
                    mode: 0o40755,
                    uid: 1000,
                    gid: 100,
                    nlink: 2,
                    rdev: 0,
                    size: 4096,
                    blksize: 4096,
                    blocks: 8,
                    atime_sec: 1_700_000_000,
                    atime_nsec: 1,
                    mtime_sec: 2,
                    mtime_nsec: 3,
                    ctime_sec: 4,
                    ctime_nsec: 5,
                    btime_sec: 6,
                    btime_nsec: 7,
                    generation: 9,
                    data_version: u64::MAX,
                },
            }),
        ),
        (
            // Rreaddir tag 3 with "." and "file": count = 25 + 28 = 53, size = 7 + 4 + 53 = 64
            cat(&[&[64, 0, 0, 0], &[41], &[3, 0], &[53, 0, 0, 0], readdir]),
            3,
            Message::R(RMessage::Readdir { data: readdir }),
        ),
        (
            // Tlock tag 9 fid 7 WRLCK BLOCK start 0 length 0 proc_id 4242 "host"
            // size = 7 + 4 + 1 + 4 + 8 + 8 + 4 + 6 = 42
            cat(&[
                &[42, 0, 0, 0],
                &[52],
                &[9, 0],
                &[7, 0, 0, 0],
                &[1],
                &[1, 0, 0, 0],
                &[0, 0, 0, 0, 0, 0, 0, 0],
                &[0, 0, 0, 0, 0, 0, 0, 0],
                &[0x92, 0x10, 0, 0],
                &[4, 0, b'h', b'o', b's', b't'],
            ]),
            9,
            Message::T(TMessage::Lock {
                fid: 7,
                lock: Flock {
                    ty: P9_LOCK_TYPE_WRLCK,
                    flags: P9_LOCK_FLAGS_BLOCK,
                    start: 0,
                    length: 0,
                    proc_id: 4242,
                    client_id: Str::from("host"),
                },
            }),
        ),
        (
            // Rlock tag 9 status BLOCKED
            cat(&[&[8, 0, 0, 0], &[53], &[9, 0], &[1]]),
            9,
            Message::R(RMessage::Lock {
                status: P9_LOCK_BLOCKED,
            }),
        ),
        (
            // Twrite tag 4 fid 3 offset 0x100 data "hi": size = 7 + 4 + 8 + 4 + 2 = 25
            cat(&[
                &[25, 0, 0, 0],
                &[118],
                &[4, 0],
                &[3, 0, 0, 0],
                &[0, 1, 0, 0, 0, 0, 0, 0],
                &[2, 0, 0, 0],
                b"hi",
            ]),
            4,
            Message::T(TMessage::Write {
                fid: 3,
                offset: 0x100,
                data: b"hi",
            }),
        ),
        (
            // Rread tag 4 data "abc"
            cat(&[&[14, 0, 0, 0], &[117], &[4, 0], &[3, 0, 0, 0], b"abc"]),
            4,
            Message::R(RMessage::Read { data: b"abc" }),
        ),
        (
            // Tfsync tag 6 fid 1 datasync 1
            cat(&[&[15, 0, 0, 0], &[50], &[6, 0], &[1, 0, 0, 0], &[1, 0, 0, 0]]),
            6,
            Message::T(TMessage::Fsync {
                fid: 1,
                datasync: 1,
            }),
        ),
        (
            // Tflush tag 7 oldtag 4
            cat(&[&[9, 0, 0, 0], &[108], &[7, 0], &[4, 0]]),
            7,
            Message::T(TMessage::Flush { oldtag: 4 }),
        ),
        (
            // Rflush tag 7 (empty body)
            cat(&[&[7, 0, 0, 0], &[109], &[7, 0]]),
            7,
            Message::R(RMessage::Flush),
        ),
        (
            // Tunlinkat tag 8 dirfid 2 "d" AT_REMOVEDIR: size = 7 + 4 + 3 + 4 = 18
            cat(&[
                &[18, 0, 0, 0],
                &[76],
                &[8, 0],
                &[2, 0, 0, 0],
                &[1, 0, b'd'],
                &[0, 2, 0, 0],
            ]),
            8,
            Message::T(TMessage::Unlinkat {
                dirfid: 2,
                name: Str::from("d"),
                flags: P9_DOTL_AT_REMOVEDIR,
            }),
        ),
        (
            // Rlopen tag 8 qid(file, v1, path 5) iounit 0
            cat(&[
                &[24, 0, 0, 0],
                &[13],
                &[8, 0],
                &[0, 1, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0],
                &[0, 0, 0, 0],
            ]),
            8,
            Message::R(RMessage::Lopen {
                qid: Qid {
                    ty: QTFILE,
                    version: 1,
                    path: 5,
                },
                iounit: 0,
            }),
        ),
    ]
}
