//! The server's semantics through an in-memory client built on the codec.

mod common;

// Wrapped in a test module for `clippy::tests_outside_test_module`.
#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::os::unix::fs::PermissionsExt;
    use std::time::Duration;

    use astraea_9p::*;
    use astraea_gateway::{Gateway, GatewayConfig, GatewayError};

    use crate::common::*;

    const EPERM: u32 = 1;
    const ENOENT: u32 = 2;
    const EINTR: u32 = 4;
    const EBADF: u32 = 9;
    const EAGAIN: u32 = 11;
    const EEXIST: u32 = 17;
    const EXDEV: u32 = 18;
    const ENOTDIR: u32 = 20;
    const EINVAL: u32 = 22;
    const EMFILE: u32 = 24;
    const EROFS: u32 = 30;
    const ELOOP: u32 = 40;
    const EOPNOTSUPP: u32 = 95;
    const ENODATA: u32 = 61;

    #[test]
    fn version_and_auth() {
        let t = Tree::new();
        let (gw, _) = t.gateway();
        let c = Client::new(&gw);
        assert_eq!(c.version(8192), (8192, "9P2000.L".into()));
        assert_eq!(c.session.msize(), 8192);
        // The gateway caps msize at its maximum.
        assert_eq!(c.version(64 << 20).0, 1 << 20);
        // Other versions are declined.
        let reply = c.raw(encode(
            NOTAG,
            &TMessage::Version {
                msize: 8192,
                version: Str::from("9P2000"),
            },
        ));
        match RMessage::from_bytes(&reply).unwrap().1 {
            RMessage::Version { version, .. } => assert_eq!(version, "unknown"),
            other => panic!("{other:?}"),
        }
        c.version(8192);
        // Tauth: ENOENT, so clients attach without authentication.
        let auth = c.ok(&TMessage::Auth {
            afid: 1,
            uname: Str::from("u"),
            aname: Str::from(""),
            n_uname: NONUNAME,
        });
        assert_eq!(auth, Err(ENOENT));
        c.attach(ROOT, "").unwrap();
        // Tversion resets the session: the fid is gone.
        c.version(8192);
        assert_eq!(c.getattr(ROOT), Err(EBADF));
    }

    #[test]
    fn attach_and_walk() {
        let t = Tree::new();
        let (gw, _) = t.gateway();
        let c = Client::attached(&gw);
        let root = c.getattr(ROOT).unwrap();
        assert_eq!(root.qid.ty, QTDIR);
        let qids = c.walk(ROOT, 1, &["sub", "a.txt"]).unwrap();
        assert_eq!(qids.len(), 2);
        assert_eq!(qids[0].ty, QTDIR);
        assert_eq!(qids[1].ty, QTFILE);
        assert_eq!(c.getattr(1).unwrap().size, 3);
        // Clone a fid with an empty walk.
        assert_eq!(c.walk(1, 2, &[]).unwrap(), vec![]);
        assert_eq!(c.getattr(2).unwrap().qid, qids[1]);
        // First element missing: Rlerror(ENOENT), newfid not created.
        assert_eq!(c.walk(ROOT, 3, &["nope"]), Err(ENOENT));
        assert_eq!(c.clunk(3), Err(EBADF));
        // A later element missing: Rwalk with the qids up to the miss.
        let partial = c.walk(ROOT, 3, &["sub", "nope", "x"]).unwrap();
        assert_eq!(partial.len(), 1);
        assert_eq!(c.clunk(3), Err(EBADF));
        // Walking below a file.
        assert_eq!(c.walk(1, 3, &["x"]), Err(ENOTDIR));
        // newfid in use.
        assert_eq!(c.walk(ROOT, 1, &["sub"]), Err(EEXIST));
        // newfid == fid moves the fid.
        c.walk(2, 2, &[".."]).unwrap();
        assert_eq!(c.getattr(2).unwrap().qid, qids[0]);
        // 16 names is the limit; `.` and `..` work.
        let names = [
            ".", "sub", "..", "sub", ".", "..", "sub", "..", "sub", "..", ".", ".", "sub", "..",
            "sub", "a.txt",
        ];
        assert_eq!(c.walk(ROOT, 4, &names).unwrap().len(), 16);
        assert_eq!(c.getattr(4).unwrap().qid, qids[1]);
        // Unknown fid.
        assert_eq!(c.walk(77, 78, &["sub"]), Err(EBADF));
        // aname selects a subtree.
        let c2 = Client::new(&gw);
        c2.version(8192);
        let q = c2.attach(ROOT, "/sub").unwrap();
        assert_eq!(q, qids[0]);
        assert_eq!(c2.attach(1, "/nonexistent"), Err(ENOENT));
        let ro = c2.attach(2, "ro").unwrap();
        assert_eq!(ro.ty, QTDIR);
    }

    #[test]
    fn lopen_read_write_create() {
        let t = Tree::new();
        let (gw, _) = t.gateway();
        let c = Client::attached(&gw);
        assert_eq!(c.cat("hello.txt").unwrap(), b"hello world");
        c.walk_path(1, "hello.txt").unwrap();
        c.lopen(1, P9_DOTL_RDONLY).unwrap();
        assert_eq!(c.read(1, 6, 100).unwrap(), b"world");
        assert_eq!(c.read(1, 100, 100).unwrap(), b"");
        // Opening twice is refused; reading an unopened fid is EBADF.
        assert!(c.lopen(1, P9_DOTL_RDONLY).is_err());
        c.walk_path(2, "hello.txt").unwrap();
        assert_eq!(c.read(2, 0, 10), Err(EBADF));
        // Writing a read-only open fails.
        assert_eq!(c.write(1, 0, b"x"), Err(EBADF));
        // Create, write, read back.
        c.walk(ROOT, 3, &["sub"]).unwrap();
        let q = c
            .lcreate(3, "new.bin", P9_DOTL_RDWR | P9_DOTL_CREATE, 0o640)
            .unwrap();
        assert_eq!(q.ty, QTFILE);
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let mut off = 0;
        while off < data.len() {
            let end = (off + 60_000).min(data.len());
            let n = c.write(3, off as u64, &data[off..end]).unwrap();
            off += n as usize;
        }
        assert_eq!(std::fs::read(t.root().join("sub/new.bin")).unwrap(), data);
        let mode = std::fs::metadata(t.root().join("sub/new.bin"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o640 & !umask());
        assert_eq!(c.cat("sub/new.bin").unwrap(), data);
        // lcreate of an existing name with EXCL fails.
        c.walk(ROOT, 4, &["sub"]).unwrap();
        assert_eq!(
            c.lcreate(4, "new.bin", P9_DOTL_RDWR | P9_DOTL_EXCL, 0o600),
            Err(EEXIST)
        );
        // A read never returns more than msize allows, whatever count says.
        let small = Client::new(&gw);
        small.version(4096);
        small.attach(ROOT, "").unwrap();
        small.walk_path(1, "sub/new.bin").unwrap();
        small.lopen(1, P9_DOTL_RDONLY).unwrap();
        let chunk = small.read(1, 0, u32::MAX).unwrap();
        assert_eq!(chunk.len(), 4096 - 11);
        // O_TRUNC on open.
        c.walk_path(5, "sub/new.bin").unwrap();
        c.lopen(5, P9_DOTL_WRONLY | P9_DOTL_TRUNC).unwrap();
        assert_eq!(
            std::fs::metadata(t.root().join("sub/new.bin"))
                .unwrap()
                .len(),
            0
        );
        // fsync of an open fid.
        c.ok(&TMessage::Fsync {
            fid: 5,
            datasync: 0,
        })
        .unwrap();
        c.ok(&TMessage::Fsync {
            fid: 5,
            datasync: 1,
        })
        .unwrap();
    }

    fn umask() -> u32 {
        // The test process's umask applies to files the gateway creates.
        use std::os::unix::fs::OpenOptionsExt;
        let probe = tempfile::tempdir().unwrap();
        let p = probe.path().join("f");
        std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .mode(0o777)
            .open(&p)
            .unwrap();
        0o777 & !std::fs::metadata(&p).unwrap().permissions().mode()
    }

    #[test]
    fn readdir_paging() {
        let t = Tree::new();
        let dir = t.root().join("many");
        std::fs::create_dir(&dir).unwrap();
        let mut expected: HashSet<String> = HashSet::new();
        for i in 0..300 {
            let name = format!("file-with-a-longish-name-{i:04}");
            std::fs::write(dir.join(&name), "").unwrap();
            expected.insert(name);
        }
        expected.insert(".".into());
        expected.insert("..".into());
        let (gw, _) = t.gateway();
        let c = Client::attached(&gw);
        c.walk_path(1, "many").unwrap();
        c.lopen(1, P9_DOTL_RDONLY | P9_DOTL_DIRECTORY).unwrap();
        for count in [60, 100, 333, 8192] {
            let names = c.readdir_all(1, count).unwrap();
            assert_eq!(names.len(), expected.len(), "count {count}: no duplicates");
            let got: HashSet<String> = names.into_iter().collect();
            assert_eq!(got, expected, "count {count}");
        }
        // A count too small for one entry is an error, not an empty (EOF) reply.
        assert_eq!(c.readdir(1, 0, 10), Err(EINVAL));
        // Resuming from an offset from the middle gives the rest.
        let first = c.readdir(1, 0, 500).unwrap();
        let rest_from = first[3].1;
        let all = c.readdir_all(1, 4096).unwrap();
        let tail = {
            let mut names = Vec::new();
            let mut off = rest_from;
            loop {
                let b = c.readdir(1, off, 1000).unwrap();
                let Some(l) = b.last() else { break };
                off = l.1;
                names.extend(b.into_iter().map(|e| e.0));
            }
            names
        };
        assert_eq!(tail.len(), all.len() - 4);
        // The root merges the export with the synthetic entries.
        assert_eq!(
            c.ls("/").unwrap(),
            vec![
                "dev",
                "env",
                "esc_abs",
                "esc_rel",
                "hello.txt",
                "inside",
                "many",
                "ro",
                "sub"
            ]
        );
        // A synthetic root listing pages too.
        c.walk(ROOT, 2, &[]).unwrap();
        c.lopen(2, P9_DOTL_RDONLY).unwrap();
        let paged = c.readdir_all(2, 40).unwrap();
        assert_eq!(paged.len(), 11);
        // readdir of a file / an unopened fid.
        c.walk_path(3, "hello.txt").unwrap();
        c.lopen(3, P9_DOTL_RDONLY).unwrap();
        assert!(c.readdir(3, 0, 1000).is_err());
        c.walk_path(4, "sub").unwrap();
        assert_eq!(c.readdir(4, 0, 1000), Err(EBADF));
    }

    #[test]
    fn mkdir_unlinkat_remove() {
        let t = Tree::new();
        let (gw, _) = t.gateway();
        let c = Client::attached(&gw);
        let q = c.mkdir(ROOT, "d", 0o755).unwrap();
        assert_eq!(q.ty, QTDIR);
        assert!(t.root().join("d").is_dir());
        assert_eq!(c.mkdir(ROOT, "d", 0o755), Err(EEXIST));
        c.walk_path(1, "d").unwrap();
        c.lcreate(1, "f", P9_DOTL_WRONLY, 0o644).unwrap();
        c.clunk(1).unwrap();
        c.walk_path(1, "d").unwrap();
        // Not empty.
        assert!(c.unlinkat(ROOT, "d", P9_DOTL_AT_REMOVEDIR).is_err());
        c.unlinkat(1, "f", 0).unwrap();
        assert!(!t.root().join("d/f").exists());
        assert_eq!(c.unlinkat(1, "f", 0), Err(ENOENT));
        c.unlinkat(ROOT, "d", P9_DOTL_AT_REMOVEDIR).unwrap();
        assert!(!t.root().join("d").exists());
        // Bad names.
        for bad in ["", ".", "..", "a/b"] {
            assert_eq!(c.mkdir(ROOT, bad, 0o755), Err(EINVAL), "{bad:?}");
            assert_eq!(c.unlinkat(ROOT, bad, 0), Err(EINVAL), "{bad:?}");
        }
        // Mount points and synthetic entries cannot be removed or shadowed.
        assert!(c.unlinkat(ROOT, "ro", P9_DOTL_AT_REMOVEDIR).is_err());
        assert!(c.unlinkat(ROOT, "env", P9_DOTL_AT_REMOVEDIR).is_err());
        assert_eq!(c.mkdir(ROOT, "dev", 0o755), Err(EEXIST));
        // Tremove removes and clunks, even on failure.
        std::fs::write(t.root().join("gone"), "x").unwrap();
        c.walk_path(2, "gone").unwrap();
        c.ok(&TMessage::Remove { fid: 2 }).unwrap();
        assert!(!t.root().join("gone").exists());
        assert_eq!(c.clunk(2), Err(EBADF));
        c.walk_path(2, "ro").unwrap();
        assert!(c.ok(&TMessage::Remove { fid: 2 }).is_err());
        assert_eq!(c.clunk(2), Err(EBADF));
        // mknod: regular files, FIFOs and socket files (a partition's
        // Unix socket bound to a path) only.
        c.ok(&TMessage::Mknod {
            dfid: ROOT,
            name: Str::from("fifo"),
            mode: libc_s_ififo() | 0o600,
            major: 0,
            minor: 0,
            gid: 0,
        })
        .unwrap();
        use std::os::unix::fs::FileTypeExt;
        assert!(
            std::fs::symlink_metadata(t.root().join("fifo"))
                .unwrap()
                .file_type()
                .is_fifo()
        );
        c.ok(&TMessage::Mknod {
            dfid: ROOT,
            name: Str::from("sock"),
            mode: 0o140_000 | 0o755,
            major: 0,
            minor: 0,
            gid: 0,
        })
        .unwrap();
        assert!(
            std::fs::symlink_metadata(t.root().join("sock"))
                .unwrap()
                .file_type()
                .is_socket()
        );
        assert_eq!(
            c.ok(&TMessage::Mknod {
                dfid: ROOT,
                name: Str::from("null"),
                mode: 0o020_000 | 0o666,
                major: 1,
                minor: 3,
                gid: 0,
            }),
            Err(EPERM)
        );
    }

    fn libc_s_ififo() -> u32 {
        0o010_000
    }

    #[test]
    fn rename_and_renameat() {
        let t = Tree::new();
        let (gw, _) = t.gateway();
        let c = Client::attached(&gw);
        c.walk_path(1, "hello.txt").unwrap();
        c.walk_path(2, "sub").unwrap();
        c.ok(&TMessage::Rename {
            fid: 1,
            dfid: 2,
            name: Str::from("moved.txt"),
        })
        .unwrap();
        assert!(!t.root().join("hello.txt").exists());
        assert_eq!(
            std::fs::read(t.root().join("sub/moved.txt")).unwrap(),
            b"hello world"
        );
        // The fid follows its file.
        assert_eq!(c.getattr(1).unwrap().size, 11);
        c.lopen(1, P9_DOTL_RDONLY).unwrap();
        assert_eq!(c.read(1, 0, 5).unwrap(), b"hello");
        // Trenameat, including a directory that fids point into.
        c.mkdir(ROOT, "dir1", 0o755).unwrap();
        c.walk_path(3, "dir1").unwrap();
        c.lcreate(3, "inner", P9_DOTL_RDWR, 0o644).unwrap();
        c.write(3, 0, b"inner data").unwrap();
        c.ok(&TMessage::Renameat {
            olddirfid: ROOT,
            oldname: Str::from("dir1"),
            newdirfid: 2,
            newname: Str::from("dir2"),
        })
        .unwrap();
        assert!(t.root().join("sub/dir2/inner").exists());
        assert_eq!(c.getattr(3).unwrap().size, 10);
        c.walk_path(4, "sub/dir2/inner").unwrap();
        assert_eq!(c.getattr(4).unwrap().qid, c.getattr(3).unwrap().qid);
        // Renaming onto a mount point or across exports is refused.
        assert!(
            c.ok(&TMessage::Renameat {
                olddirfid: 2,
                oldname: Str::from("moved.txt"),
                newdirfid: ROOT,
                newname: Str::from("ro"),
            })
            .is_err()
        );
        c.walk_path(5, "ro").unwrap();
        assert_eq!(
            c.ok(&TMessage::Renameat {
                olddirfid: 2,
                oldname: Str::from("moved.txt"),
                newdirfid: 5,
                newname: Str::from("x"),
            }),
            Err(EROFS)
        );
        // Hard link.
        c.walk_path(6, "sub/moved.txt").unwrap();
        c.ok(&TMessage::Link {
            dfid: ROOT,
            fid: 6,
            name: Str::from("linked.txt"),
        })
        .unwrap();
        assert_eq!(
            std::fs::read(t.root().join("linked.txt")).unwrap(),
            b"hello world"
        );
    }

    #[test]
    fn getattr_setattr_statfs() {
        let t = Tree::new();
        let (gw, _) = t.gateway();
        let c = Client::attached(&gw);
        c.walk_path(1, "hello.txt").unwrap();
        let st = c.getattr(1).unwrap();
        let meta = std::fs::metadata(t.root().join("hello.txt")).unwrap();
        use std::os::unix::fs::MetadataExt;
        assert_eq!(st.size, 11);
        assert_eq!(st.mode, meta.mode());
        assert_eq!(st.uid, meta.uid());
        assert_eq!(st.mtime_sec, meta.mtime() as u64);
        assert_eq!(st.valid & P9_GETATTR_BASIC, P9_GETATTR_BASIC);
        // Truncate through setattr.
        let truncate = SetAttr {
            valid: P9_SETATTR_SIZE,
            size: 5,
            ..SetAttr::default()
        };
        c.setattr(1, truncate).unwrap();
        assert_eq!(std::fs::read(t.root().join("hello.txt")).unwrap(), b"hello");
        assert_eq!(c.getattr(1).unwrap().size, 5);
        // Mode and explicit times.
        c.setattr(
            1,
            SetAttr {
                valid: P9_SETATTR_MODE
                    | P9_SETATTR_ATIME
                    | P9_SETATTR_ATIME_SET
                    | P9_SETATTR_MTIME
                    | P9_SETATTR_MTIME_SET,
                mode: 0o600,
                atime_sec: 1_000_000,
                mtime_sec: 2_000_000,
                mtime_nsec: 5,
                ..SetAttr::default()
            },
        )
        .unwrap();
        let meta = std::fs::metadata(t.root().join("hello.txt")).unwrap();
        assert_eq!(meta.mode() & 0o7777, 0o600);
        assert_eq!(meta.atime(), 1_000_000);
        assert_eq!(meta.mtime(), 2_000_000);
        assert_eq!(meta.mtime_nsec(), 5);
        // chown to ourselves is allowed.
        c.setattr(
            1,
            SetAttr {
                valid: P9_SETATTR_UID | P9_SETATTR_GID,
                uid: meta.uid(),
                gid: meta.gid(),
                ..SetAttr::default()
            },
        )
        .unwrap();
        // Symlinks: getattr does not follow, readlink gives the target.
        c.walk_path(2, "inside").unwrap();
        let st = c.getattr(2).unwrap();
        assert_eq!(st.qid.ty, QTSYMLINK);
        let target = c
            .rpc(&TMessage::Readlink { fid: 2 }, |r| match r {
                RMessage::Readlink { target } => target.to_string(),
                _ => unreachable!(),
            })
            .unwrap();
        assert_eq!(target, "hello.txt");
        assert_eq!(c.ok(&TMessage::Readlink { fid: 1 }), Err(EINVAL));
        // Tsymlink.
        let q = c
            .rpc(
                &TMessage::Symlink {
                    fid: ROOT,
                    name: Str::from("new_link"),
                    target: Str::from("sub/a.txt"),
                    gid: 0,
                },
                |r| match r {
                    RMessage::Symlink { qid } => qid,
                    _ => unreachable!(),
                },
            )
            .unwrap();
        assert_eq!(q.ty, QTSYMLINK);
        assert_eq!(
            std::fs::read_link(t.root().join("new_link")).unwrap(),
            std::path::Path::new("sub/a.txt")
        );
        // statfs on a host file and on a synthetic one.
        let sfs = c
            .rpc(&TMessage::Statfs { fid: 1 }, |r| match r {
                RMessage::Statfs { statfs } => statfs,
                _ => unreachable!(),
            })
            .unwrap();
        assert!(sfs.bsize > 0 && sfs.namelen > 0);
        c.walk_path(3, "dev/cons").unwrap();
        c.ok(&TMessage::Statfs { fid: 3 }).unwrap();
        // Extended attributes: a missing one is ENODATA and makes no fid.
        assert_eq!(
            c.ok(&TMessage::Xattrwalk {
                fid: 1,
                newfid: 9,
                name: Str::from("user.x"),
            }),
            Err(ENODATA)
        );
        assert_eq!(c.clunk(9), Err(EBADF));
    }

    /// Opening a FIFO that nobody writes (or reads) answers at once: a
    /// blocking open would hold a worker for ever, and enough of them the
    /// whole gateway.
    #[test]
    fn opening_a_fifo_does_not_block() {
        let t = Tree::new();
        let fifo = std::ffi::CString::new(t.root().join("fifo").to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let (gw, _) = t.gateway();
        let c = Client::attached(&gw);
        let started = std::time::Instant::now();
        c.walk_path(1, "fifo").unwrap();
        c.walk_path(2, "fifo").unwrap();
        // For writing with no reader: ENXIO, not a wait.
        assert_eq!(c.lopen(2, P9_DOTL_WRONLY), Err(6));
        // For reading with no writer: opened at once.
        c.lopen(1, P9_DOTL_RDONLY).unwrap();
        assert!(started.elapsed() < TIMEOUT);
        c.clunk(1).unwrap();
        c.clunk(2).unwrap();
        still_answers(&c);
    }

    fn still_answers(c: &Client) {
        assert_eq!(c.cat("hello.txt").unwrap(), b"hello world");
    }

    fn lock_req(ty: u8) -> Flock<'static> {
        Flock {
            ty,
            flags: 0,
            start: 0,
            length: 0,
            proc_id: 42,
            client_id: Str::from("test"),
        }
    }

    fn lock(c: &Client, fid: u32, ty: u8) -> u8 {
        c.rpc(
            &TMessage::Lock {
                fid,
                lock: lock_req(ty),
            },
            |r| match r {
                RMessage::Lock { status } => status,
                _ => unreachable!(),
            },
        )
        .unwrap()
    }

    fn getlock(c: &Client, fid: u32) -> u8 {
        c.rpc(
            &TMessage::Getlock {
                fid,
                lock: Getlock {
                    ty: P9_LOCK_TYPE_WRLCK,
                    start: 0,
                    length: 0,
                    proc_id: 7,
                    client_id: Str::from("b"),
                },
            },
            |r| match r {
                RMessage::Getlock { lock } => lock.ty,
                _ => unreachable!(),
            },
        )
        .unwrap()
    }

    #[test]
    fn locks_contend_across_sessions() {
        let t = Tree::new();
        let (gw, _) = t.gateway();
        let a = Client::attached(&gw);
        let b = Client::attached(&gw);
        for c in [&a, &b] {
            c.walk_path(1, "hello.txt").unwrap();
            c.lopen(1, P9_DOTL_RDWR).unwrap();
        }
        assert_eq!(getlock(&b, 1), P9_LOCK_TYPE_UNLCK);
        assert_eq!(lock(&a, 1, P9_LOCK_TYPE_WRLCK), P9_LOCK_SUCCESS);
        assert_eq!(lock(&b, 1, P9_LOCK_TYPE_WRLCK), P9_LOCK_BLOCKED);
        assert_eq!(lock(&b, 1, P9_LOCK_TYPE_RDLCK), P9_LOCK_BLOCKED);
        assert_eq!(getlock(&b, 1), P9_LOCK_TYPE_WRLCK);
        assert_eq!(lock(&a, 1, P9_LOCK_TYPE_UNLCK), P9_LOCK_SUCCESS);
        assert_eq!(lock(&b, 1, P9_LOCK_TYPE_RDLCK), P9_LOCK_SUCCESS);
        // Shared locks coexist; a writer is blocked by readers.
        assert_eq!(lock(&a, 1, P9_LOCK_TYPE_RDLCK), P9_LOCK_SUCCESS);
        assert_eq!(lock(&a, 1, P9_LOCK_TYPE_WRLCK), P9_LOCK_BLOCKED);
        // Clunking releases the lock.
        b.clunk(1).unwrap();
        assert_eq!(lock(&a, 1, P9_LOCK_TYPE_WRLCK), P9_LOCK_SUCCESS);
        // A lock on an unopened fid.
        a.walk_path(2, "hello.txt").unwrap();
        assert_eq!(
            a.ok(&TMessage::Lock {
                fid: 2,
                lock: lock_req(P9_LOCK_TYPE_WRLCK)
            }),
            Err(EBADF)
        );
    }

    #[test]
    fn confinement() {
        let t = Tree::new();
        let (gw, _) = t.gateway();
        let c = Client::attached(&gw);
        let root = c.getattr(ROOT).unwrap().qid;
        // `..` at the root stays at the root.
        let q = c.walk(ROOT, 1, &["..", "..", ".."]).unwrap();
        assert_eq!(q.last().copied(), Some(root));
        assert_eq!(c.walk(ROOT, 2, &["..", "outside"]).unwrap().len(), 1);
        assert_eq!(c.clunk(2), Err(EBADF));
        // `..` inside an export is lexical and cannot climb out either.
        let q = c
            .walk(ROOT, 3, &["sub", "..", "..", "..", "hello.txt"])
            .unwrap();
        assert_eq!(q.len(), 5);
        assert_eq!(c.getattr(3).unwrap().size, 11);
        // A name with a slash is refused.
        assert_eq!(c.walk(ROOT, 4, &["../outside"]), Err(EINVAL));
        assert_eq!(c.walk(ROOT, 4, &["sub/../../outside"]), Err(EINVAL));
        // Symlinks: walking to the link is fine (it is inside) ...
        for link in ["esc_abs", "esc_rel"] {
            c.walk_path(10, link).unwrap();
            assert_eq!(c.getattr(10).unwrap().qid.ty, QTSYMLINK);
            // ... but opening through it is refused,
            let e = c.lopen(10, P9_DOTL_RDONLY).unwrap_err();
            assert!(e == EXDEV || e == ELOOP, "{link}: {e}");
            // and so is truncating or chmod-ing through it.
            let e = c
                .setattr(
                    10,
                    SetAttr {
                        valid: P9_SETATTR_SIZE,
                        size: 0,
                        ..SetAttr::default()
                    },
                )
                .unwrap_err();
            assert!(e == EXDEV || e == ELOOP, "{link}: {e}");
            let e = c
                .setattr(
                    10,
                    SetAttr {
                        valid: P9_SETATTR_MODE,
                        mode: 0o777,
                        ..SetAttr::default()
                    },
                )
                .unwrap_err();
            assert_eq!(e, EOPNOTSUPP);
            c.clunk(10).unwrap();
        }
        // Walking through a directory symlink that leaves the export stops there.
        let q = c.walk(ROOT, 11, &["sub", "esc_dir", "secret.txt"]).unwrap();
        assert_eq!(q.len(), 2, "the walk must stop at the escaping link");
        c.walk_path(12, "sub/esc_dir").unwrap();
        assert!(c.lcreate(12, "planted", P9_DOTL_WRONLY, 0o644).is_err());
        c.walk_path(13, "sub/esc_dir").unwrap();
        assert!(c.mkdir(13, "planted_dir", 0o755).is_err());
        assert!(c.unlinkat(13, "secret.txt", 0).is_err());
        assert!(
            c.ok(&TMessage::Symlink {
                fid: 13,
                name: Str::from("planted_link"),
                target: Str::from("x"),
                gid: 0
            })
            .is_err()
        );
        // A symlink the client creates cannot be used to escape either.
        let outside = t.base().join("outside");
        c.ok(&TMessage::Symlink {
            fid: ROOT,
            name: Str::from("mine"),
            target: Str::new(outside.as_os_str().as_encoded_bytes()),
            gid: 0,
        })
        .unwrap();
        let q = c.walk(ROOT, 14, &["mine", "secret.txt"]).unwrap();
        assert_eq!(q.len(), 1);
        c.walk_path(15, "mine").unwrap();
        assert!(c.lcreate(15, "planted2", P9_DOTL_WRONLY, 0o644).is_err());
        // An lcreate whose name is a dangling escaping symlink.
        std::os::unix::fs::symlink(outside.join("created_via_link"), t.root().join("dangling"))
            .unwrap();
        let e = c
            .lcreate(ROOT, "dangling", P9_DOTL_WRONLY | P9_DOTL_CREATE, 0o644)
            .unwrap_err();
        assert!(e == EXDEV || e == ELOOP || e == EEXIST, "{e}");
        // Renaming into an escaping directory link.
        c.walk_path(16, "sub/esc_dir").unwrap();
        assert!(
            c.ok(&TMessage::Renameat {
                olddirfid: ROOT,
                oldname: Str::from("hello.txt"),
                newdirfid: 16,
                newname: Str::from("stolen"),
            })
            .is_err()
        );
        assert!(t.root().join("hello.txt").exists());
        // A hard link into an escaping directory link.
        c.walk_path(17, "hello.txt").unwrap();
        assert!(
            c.ok(&TMessage::Link {
                dfid: 16,
                fid: 17,
                name: Str::from("linked"),
            })
            .is_err()
        );
        // Nothing outside was read, created or changed.
        assert_eq!(t.outside(), vec!["secret.txt"]);
        assert_eq!(
            std::fs::read(t.base().join("outside/secret.txt")).unwrap(),
            b"secret"
        );
        let mode = std::fs::metadata(t.base().join("outside/secret.txt"))
            .unwrap()
            .permissions()
            .mode();
        assert_ne!(mode & 0o777, 0o777);
    }

    #[test]
    fn read_only_export() {
        let t = Tree::new();
        let (gw, _) = t.gateway();
        let c = Client::attached(&gw);
        assert_eq!(c.cat("ro/file.txt").unwrap(), b"read only");
        assert_eq!(c.ls("ro").unwrap(), vec!["file.txt"]);
        c.walk_path(1, "ro").unwrap();
        assert_eq!(c.lcreate(1, "new", P9_DOTL_WRONLY, 0o644), Err(EROFS));
        c.walk_path(2, "ro").unwrap();
        assert_eq!(c.mkdir(2, "d", 0o755), Err(EROFS));
        assert_eq!(c.unlinkat(2, "file.txt", 0), Err(EROFS));
        c.walk_path(3, "ro/file.txt").unwrap();
        assert_eq!(c.lopen(3, P9_DOTL_WRONLY), Err(EROFS));
        assert_eq!(c.lopen(3, P9_DOTL_RDONLY | P9_DOTL_TRUNC), Err(EROFS));
        assert_eq!(
            c.setattr(
                3,
                SetAttr {
                    valid: P9_SETATTR_SIZE,
                    ..SetAttr::default()
                }
            ),
            Err(EROFS)
        );
        assert_eq!(
            c.ok(&TMessage::Rename {
                fid: 3,
                dfid: 2,
                name: Str::from("x")
            }),
            Err(EROFS)
        );
        assert_eq!(
            c.ok(&TMessage::Symlink {
                fid: 2,
                name: Str::from("l"),
                target: Str::from("file.txt"),
                gid: 0
            }),
            Err(EROFS)
        );
        assert_eq!(c.ok(&TMessage::Remove { fid: 3 }), Err(EROFS));
        assert_eq!(
            std::fs::read(t.base().join("ro/file.txt")).unwrap(),
            b"read only"
        );
        // Synthetic directories are read-only too.
        c.walk_path(4, "dev").unwrap();
        assert_eq!(c.mkdir(4, "x", 0o755), Err(EROFS));
        c.walk_path(5, "env").unwrap();
        assert_eq!(c.lcreate(5, "X", P9_DOTL_WRONLY, 0o644), Err(EROFS));
    }

    #[test]
    fn env_and_console() {
        let t = Tree::new();
        let (gw, console) = t.gateway();
        let c = Client::attached(&gw);
        assert_eq!(c.ls("env").unwrap(), vec!["HOME", "LANG"]);
        assert_eq!(c.cat("env/HOME").unwrap(), b"/home/astraea");
        c.walk_path(1, "env/LANG").unwrap();
        assert_eq!(c.getattr(1).unwrap().size, 7);
        assert_eq!(c.lopen(1, P9_DOTL_WRONLY), Err(EROFS));
        assert_eq!(c.ls("dev").unwrap(), vec!["cons"]);
        c.walk_path(2, "dev/cons").unwrap();
        c.lopen(2, P9_DOTL_RDWR).unwrap();
        assert_eq!(c.write(2, 0, b"hello, console\n").unwrap(), 15);
        assert_eq!(console.output(), b"hello, console\n");
        console.push_input(b"typed\n");
        assert_eq!(c.read(2, 0, 100).unwrap(), b"typed\n");
        console.push_input(b"abcdef");
        assert_eq!(c.read(2, 0, 4).unwrap(), b"abcd");
        assert_eq!(c.read(2, 0, 4).unwrap(), b"ef");
        // A shell's `> /dev/cons` truncates: accepted and ignored.
        c.setattr(
            2,
            SetAttr {
                valid: P9_SETATTR_SIZE,
                ..SetAttr::default()
            },
        )
        .unwrap();
        console.close_input();
        assert_eq!(c.read(2, 0, 4).unwrap(), b"");
        // Without a console there is no /dev/cons.
        let (gw2, _) = t.gateway_with(GatewayConfig {
            console: false,
            ..t.config()
        });
        let c2 = Client::attached(&gw2);
        assert_eq!(c2.walk_path(1, "dev/cons"), Err(ENOENT));
    }

    fn cons_read(_c: &Client, fid: u32, tag: u16) -> Vec<u8> {
        encode(
            tag,
            &TMessage::Read {
                fid,
                offset: 0,
                count: 100,
            },
        )
    }

    #[test]
    fn flush_of_a_blocked_console_read() {
        let t = Tree::new();
        let (gw, console) = t.gateway();
        let c = Client::attached(&gw);
        c.walk_path(1, "dev/cons").unwrap();
        c.lopen(1, P9_DOTL_RDONLY).unwrap();
        let log = Log::default();
        let read = c.send_logged(cons_read(&c, 1, 500), &log);
        std::thread::sleep(Duration::from_millis(100));
        assert!(read.try_recv().is_err(), "the read must be waiting");
        // Other requests are not delayed by the blocked read.
        for _ in 0..20 {
            c.getattr(ROOT).unwrap();
        }
        assert_eq!(c.cat("hello.txt").unwrap(), b"hello world");
        // Flush it: the old request is answered (EINTR) before the Rflush.
        let flush = c.send_logged(encode(501, &TMessage::Flush { oldtag: 500 }), &log);
        let old = read.recv_timeout(TIMEOUT).unwrap();
        assert_eq!(errno_of(&old), Some(EINTR));
        let rflush = flush.recv_timeout(TIMEOUT).unwrap();
        assert!(matches!(
            RMessage::from_bytes(&rflush).unwrap(),
            (501, RMessage::Flush)
        ));
        assert_eq!(log.tags(), vec![500, 501]);
        // Input typed after the flush goes to the next reader, not the cancelled one.
        console.push_input(b"later");
        assert_eq!(c.read(1, 0, 100).unwrap(), b"later");

        // A read answered with data before the flush: reply, then Rflush.
        let log = Log::default();
        console.push_input(b"x");
        let read = c.send_logged(cons_read(&c, 1, 600), &log);
        assert_eq!(
            RMessage::from_bytes(&read.recv_timeout(TIMEOUT).unwrap()).unwrap(),
            (600, RMessage::Read { data: b"x" })
        );
        // Now 600 is no longer in flight: a flush of it is answered at once.
        let f = c.send_logged(encode(601, &TMessage::Flush { oldtag: 600 }), &log);
        f.recv_timeout(TIMEOUT).unwrap();
        assert_eq!(log.tags(), vec![600, 601]);

        // Several flushes of one tag: the old reply, then each Rflush, in order.
        let log = Log::default();
        let read = c.send_logged(cons_read(&c, 1, 700), &log);
        std::thread::sleep(Duration::from_millis(50));
        let _f1 = c.send_logged(encode(701, &TMessage::Flush { oldtag: 700 }), &log);
        let _f2 = c.send_logged(encode(702, &TMessage::Flush { oldtag: 700 }), &log);
        read.recv_timeout(TIMEOUT).unwrap();
        let deadline = std::time::Instant::now() + TIMEOUT;
        while log.tags().len() < 3 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        let tags = log.tags();
        assert_eq!(tags[0], 700);
        assert_eq!(tags.len(), 3);
        // A flush of an unknown tag is answered immediately.
        let r = c.raw(encode(800, &TMessage::Flush { oldtag: 4242 }));
        assert!(matches!(
            RMessage::from_bytes(&r).unwrap(),
            (800, RMessage::Flush)
        ));
        assert_eq!(c.session.outstanding(), 0);
    }

    #[test]
    fn many_blocked_reads_delay_nothing() {
        let t = Tree::new();
        let (gw, console) = t.gateway();
        let c = Client::attached(&gw);
        c.walk_path(1, "dev/cons").unwrap();
        c.lopen(1, P9_DOTL_RDONLY).unwrap();
        let log = Log::default();
        let reads: Vec<_> = (0..40u16)
            .map(|i| c.send_logged(cons_read(&c, 1, 100 + i), &log))
            .collect();
        std::thread::sleep(Duration::from_millis(50));
        let start = std::time::Instant::now();
        for _ in 0..50 {
            c.getattr(ROOT).unwrap();
        }
        assert!(start.elapsed() < Duration::from_secs(5));
        assert!(log.tags().is_empty(), "no read may complete without input");
        // Tversion aborts them all (answered EINTR before the Rversion) and
        // forgets the fids.
        let version = c.send_logged(
            encode(
                NOTAG,
                &TMessage::Version {
                    msize: 8192,
                    version: Str::from(VERSION_9P2000L),
                },
            ),
            &log,
        );
        for r in reads {
            assert_eq!(errno_of(&r.recv_timeout(TIMEOUT).unwrap()), Some(EINTR));
        }
        version.recv_timeout(TIMEOUT).unwrap();
        assert_eq!(*log.tags().last().unwrap(), NOTAG);
        assert_eq!(log.tags().len(), 41);
        assert_eq!(c.session.fid_count(), 0);
        assert_eq!(c.session.outstanding(), 0);
        // The console input was not eaten by the aborted reads.
        console.push_input(b"kept");
        c.attach(ROOT, "").unwrap();
        c.walk_path(1, "dev/cons").unwrap();
        c.lopen(1, P9_DOTL_RDONLY).unwrap();
        assert_eq!(c.read(1, 0, 100).unwrap(), b"kept");
    }

    #[test]
    fn gateway_types_are_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Gateway>();
        check::<astraea_gateway::Session>();
        check::<GatewayConfig>();
    }

    #[test]
    fn flush_races() {
        // Flushes sent at random moments relative to quick requests: every
        // request gets exactly one reply and each Rflush follows its target.
        let t = Tree::new();
        let (gw, _) = t.gateway();
        let c = Client::attached(&gw);
        c.walk_path(1, "hello.txt").unwrap();
        c.lopen(1, P9_DOTL_RDONLY).unwrap();
        for round in 0..200u16 {
            let log = Log::default();
            let tag = 1000 + 2 * round;
            let a = c.send_logged(
                encode(
                    tag,
                    &TMessage::Read {
                        fid: 1,
                        offset: 0,
                        count: 64,
                    },
                ),
                &log,
            );
            let b = c.send_logged(encode(tag + 1, &TMessage::Flush { oldtag: tag }), &log);
            let ra = a.recv_timeout(TIMEOUT).unwrap();
            b.recv_timeout(TIMEOUT).unwrap();
            match RMessage::from_bytes(&ra).unwrap().1 {
                RMessage::Read { data } => assert_eq!(data, b"hello world"),
                RMessage::Lerror { ecode } => assert_eq!(ecode, EINTR),
                other => panic!("{other:?}"),
            }
            let tags = log.tags();
            assert_eq!(tags.len(), 2);
            // Either order is allowed only if the read finished before the
            // flush arrived; a pending read is always answered first.
            if tags[0] == tag + 1 {
                assert!(matches!(
                    RMessage::from_bytes(&ra).unwrap().1,
                    RMessage::Read { .. }
                ));
            }
        }
        assert_eq!(c.session.outstanding(), 0);
    }

    #[test]
    fn limits() {
        let t = Tree::new();
        let (gw, _) = t.gateway_with(GatewayConfig {
            max_fids: 4,
            max_outstanding: 2,
            max_msize: 65536,
            ..t.config()
        });
        let c = Client::attached(&gw);
        c.walk(ROOT, 1, &[]).unwrap();
        c.walk(ROOT, 2, &[]).unwrap();
        c.walk_path(3, "dev/cons").unwrap();
        assert_eq!(c.walk(ROOT, 4, &[]), Err(EMFILE));
        // Txattrwalk makes a fid too, under the same limit.
        assert_eq!(
            c.ok(&TMessage::Xattrwalk {
                fid: ROOT,
                newfid: 4,
                name: Str::from(""),
            }),
            Err(EMFILE)
        );
        assert_eq!(c.session.fid_count(), 4);
        c.clunk(1).unwrap();
        c.walk(ROOT, 4, &[]).unwrap();
        // Outstanding requests.
        c.lopen(3, P9_DOTL_RDONLY).unwrap();
        let r1 = c.send_raw(cons_read(&c, 3, 10));
        let r2 = c.send_raw(cons_read(&c, 3, 11));
        std::thread::sleep(Duration::from_millis(50));
        let third = c.raw(encode(
            12,
            &TMessage::Getattr {
                fid: ROOT,
                request_mask: P9_GETATTR_BASIC,
            },
        ));
        assert_eq!(errno_of(&third), Some(EAGAIN));
        // Flushes are not refused by the limit.
        let f1 = c.send_raw(encode(13, &TMessage::Flush { oldtag: 10 }));
        let f2 = c.send_raw(encode(14, &TMessage::Flush { oldtag: 11 }));
        for rx in [r1, r2, f1, f2] {
            rx.recv_timeout(TIMEOUT).unwrap();
        }
        c.getattr(ROOT).unwrap();
        // msize: the gateway's maximum wins; bigger frames are refused.
        assert_eq!(c.version(1 << 20).0, 65536);
        c.attach(ROOT, "").unwrap();
        c.walk_path(1, "hello.txt").unwrap();
        c.lopen(1, P9_DOTL_RDWR).unwrap();
        let big = vec![0u8; 70_000];
        let frame = encode(
            20,
            &TMessage::Write {
                fid: 1,
                offset: 0,
                data: &big,
            },
        );
        assert_eq!(errno_of(&c.raw(frame)), Some(EINVAL));
        assert_eq!(
            std::fs::metadata(t.root().join("hello.txt")).unwrap().len(),
            11
        );
        // A client msize below the minimum is refused.
        let reply = c.raw(encode(
            NOTAG,
            &TMessage::Version {
                msize: 100,
                version: Str::from(VERSION_9P2000L),
            },
        ));
        assert_eq!(errno_of(&reply), Some(EINVAL));
        // Bad configurations are errors, not panics.
        for cfg in [
            GatewayConfig {
                max_msize: 10,
                ..GatewayConfig::default()
            },
            GatewayConfig {
                max_msize: 64 << 20,
                ..GatewayConfig::default()
            },
            GatewayConfig {
                max_fids: 0,
                ..GatewayConfig::default()
            },
        ] {
            assert!(matches!(
                Gateway::new(cfg),
                Err(GatewayError::InvalidConfig(_))
            ));
        }
    }

    #[test]
    fn configuration_errors() {
        let t = Tree::new();
        let mut cfg = t.config();
        cfg.exports[1].guest = "relative".into();
        assert!(matches!(
            Gateway::new(cfg),
            Err(GatewayError::BadGuestPath(_))
        ));
        let mut cfg = t.config();
        cfg.exports[1].guest = "/".into();
        assert!(matches!(
            Gateway::new(cfg),
            Err(GatewayError::DuplicateExport(_))
        ));
        let mut cfg = t.config();
        cfg.exports[1].host = t.base().join("does-not-exist");
        assert!(matches!(
            Gateway::new(cfg),
            Err(GatewayError::ExportOpen { .. })
        ));
        let mut cfg = t.config();
        cfg.exports[1].guest = "/a/../b".into();
        assert!(matches!(
            Gateway::new(cfg),
            Err(GatewayError::BadGuestPath(_))
        ));
    }

    #[test]
    fn nested_exports_and_synthetic_dirs() {
        let t = Tree::new();
        let mut cfg = t.config();
        // No export at /: the root and /mnt are synthetic.
        cfg.exports[0].guest = "/mnt/data".into();
        cfg.exports[1].guest = "/mnt/ro".into();
        let (gw, _) = t.gateway_with(cfg);
        let c = Client::attached(&gw);
        assert_eq!(c.ls("/").unwrap(), vec!["dev", "env", "mnt"]);
        assert_eq!(c.ls("mnt").unwrap(), vec!["data", "ro"]);
        assert_eq!(c.cat("mnt/data/hello.txt").unwrap(), b"hello world");
        assert_eq!(c.mkdir(ROOT, "x", 0o755), Err(EROFS));
        c.walk_path(1, "mnt").unwrap();
        assert_eq!(c.mkdir(1, "x", 0o755), Err(EROFS));
        let st = c.getattr(1).unwrap();
        assert_eq!(st.mode, 0o040_555);
        // `..` from an export root goes back to the synthetic parent.
        let q = c
            .walk(ROOT, 2, &["mnt", "data", "sub", "..", "..", ".."])
            .unwrap();
        assert_eq!(q.last().copied(), Some(c.getattr(ROOT).unwrap().qid));
        // Writes inside the nested export work.
        c.walk_path(3, "mnt/data").unwrap();
        c.mkdir(3, "made", 0o755).unwrap();
        assert!(t.root().join("made").is_dir());
    }

    /// A directory between an export and a deeper mount point is the
    /// export's own directory (as under a bind mount on Linux): files are
    /// made and removed there, and it has the host directory's attributes.
    #[test]
    fn directory_between_mounts_is_the_enclosing_exports() {
        use std::os::unix::fs::MetadataExt;
        let t = Tree::new();
        let mut cfg = t.config();
        cfg.exports[1].guest = "/sub/deep".into();
        let (gw, _) = t.gateway_with(cfg);
        let c = Client::attached(&gw);
        let mut names = c.ls("sub").unwrap();
        names.sort();
        assert_eq!(names, vec!["a.txt", "deep", "esc_dir"]);
        c.walk_path(1, "sub").unwrap();
        let host = std::fs::metadata(t.root().join("sub")).unwrap();
        assert_eq!(c.getattr(1).unwrap().mode, host.mode());
        c.mkdir(1, "made", 0o755).unwrap();
        assert!(t.root().join("sub/made").is_dir());
        assert_eq!(c.unlinkat(1, "made", libc::AT_REMOVEDIR as u32), Ok(()));
        assert!(!t.root().join("sub/made").exists());
        // The mount point itself is not the host's to change.
        assert_eq!(c.mkdir(1, "deep", 0o755), Err(libc::EEXIST as u32));
        // The mounted export keeps its own rules.
        c.walk_path(2, "sub/deep").unwrap();
        assert_eq!(c.mkdir(2, "x", 0o755), Err(EROFS));
    }
}
