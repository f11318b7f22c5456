//! An in-memory 9P2000.L client built on the codec, and a test tree.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::mpsc::{Receiver, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use astraea_9p::*;
use astraea_gateway::{Export, Gateway, GatewayConfig, MemConsole, Session};

pub const TIMEOUT: Duration = Duration::from_secs(10);

/// An errno from `Rlerror`.
pub type Errno = u32;

pub const ROOT: u32 = 0;

/// A client on one session; replies are matched by waiting per request.
pub struct Client {
    pub session: Session,
    next_tag: AtomicU16,
}

/// Every reply, in delivery order, for ordering checks.
#[derive(Clone, Default)]
pub struct Log(pub Arc<Mutex<Vec<Vec<u8>>>>);

impl Log {
    pub fn tags(&self) -> Vec<u16> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .map(|f| Frame::new_checked(f).unwrap().tag())
            .collect()
    }
}

pub fn encode(tag: u16, msg: &TMessage<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    msg.encode(tag, &mut out).unwrap();
    out
}

/// Checks a reply frame is a well-formed R-message and returns its tag.
pub fn check_reply(frame: &[u8]) -> u16 {
    let (tag, msg) = RMessage::from_bytes(frame).expect("reply decodes");
    let _ = msg;
    tag
}

pub fn errno_of(frame: &[u8]) -> Option<Errno> {
    match RMessage::from_bytes(frame).unwrap().1 {
        RMessage::Lerror { ecode } => Some(ecode),
        _ => None,
    }
}

impl Client {
    pub fn new(gw: &Arc<Gateway>) -> Client {
        Client {
            session: gw.session(),
            next_tag: AtomicU16::new(1),
        }
    }

    /// A client that negotiated `msize` and attached `ROOT` to `/`.
    pub fn attached(gw: &Arc<Gateway>) -> Client {
        let c = Client::new(gw);
        c.version(1 << 20);
        c.attach(ROOT, "").unwrap();
        c
    }

    /// [`attached`](Self::attached) on a session whose replies never block
    /// (as the VMM's and the vhost-user device's: small socket requests
    /// run on the submitting thread).
    #[allow(dead_code)]
    pub fn attached_nonblocking(gw: &Arc<Gateway>) -> Client {
        let c = Client {
            session: gw.session_nonblocking(),
            next_tag: AtomicU16::new(1),
        };
        c.version(1 << 20);
        c.attach(ROOT, "").unwrap();
        c
    }

    pub fn tag(&self) -> u16 {
        loop {
            let t = self.next_tag.fetch_add(1, Ordering::Relaxed);
            if t != NOTAG {
                return t;
            }
        }
    }

    /// Submits a raw frame; the reply arrives on the returned channel.
    pub fn send_raw(&self, frame: Vec<u8>) -> Receiver<Vec<u8>> {
        let (tx, rx) = channel();
        self.session.submit(
            frame,
            Box::new(move |r| {
                let _ = tx.send(r);
            }),
        );
        rx
    }

    /// Submits a raw frame, recording the reply in `log` too.
    pub fn send_logged(&self, frame: Vec<u8>, log: &Log) -> Receiver<Vec<u8>> {
        let (tx, rx) = channel();
        let log = log.clone();
        self.session.submit(
            frame,
            Box::new(move |r| {
                log.0.lock().unwrap().push(r.clone());
                let _ = tx.send(r);
            }),
        );
        rx
    }

    pub fn raw(&self, frame: Vec<u8>) -> Vec<u8> {
        self.send_raw(frame)
            .recv_timeout(TIMEOUT)
            .expect("reply within the timeout")
    }

    /// Sends `msg` with a fresh tag and returns the reply frame.
    pub fn call(&self, msg: &TMessage<'_>) -> Vec<u8> {
        let tag = self.tag();
        let reply = self.raw(encode(tag, msg));
        assert_eq!(check_reply(&reply), tag, "reply tag");
        reply
    }

    /// Sends `msg`; `Err(errno)` for `Rlerror`, else `f` of the reply.
    pub fn rpc<T>(
        &self,
        msg: &TMessage<'_>,
        f: impl FnOnce(RMessage<'_>) -> T,
    ) -> Result<T, Errno> {
        let reply = self.call(msg);
        let (_, r) = RMessage::from_bytes(&reply).unwrap();
        match r {
            RMessage::Lerror { ecode } => Err(ecode),
            r => {
                assert_eq!(
                    r.msg_type().as_u8(),
                    msg.msg_type().as_u8() + 1,
                    "reply type for {msg:?}"
                );
                Ok(f(r))
            }
        }
    }

    pub fn ok(&self, msg: &TMessage<'_>) -> Result<(), Errno> {
        self.rpc(msg, |_| ())
    }

    pub fn version(&self, msize: u32) -> (u32, String) {
        let reply = self.raw(encode(
            NOTAG,
            &TMessage::Version {
                msize,
                version: Str::from(VERSION_9P2000L),
            },
        ));
        match RMessage::from_bytes(&reply).unwrap().1 {
            RMessage::Version { msize, version } => (msize, version.to_string()),
            other => panic!("Tversion answered {other:?}"),
        }
    }

    pub fn attach(&self, fid: u32, aname: &str) -> Result<Qid, Errno> {
        self.rpc(
            &TMessage::Attach {
                fid,
                afid: NOFID,
                uname: Str::from("test"),
                aname: Str::from(aname),
                n_uname: NONUNAME,
            },
            |r| match r {
                RMessage::Attach { qid } => qid,
                _ => unreachable!(),
            },
        )
    }

    pub fn walk(&self, fid: u32, newfid: u32, names: &[&str]) -> Result<Vec<Qid>, Errno> {
        let strs: Vec<Str<'_>> = names.iter().map(|n| Str::from(*n)).collect();
        self.rpc(
            &TMessage::Walk {
                fid,
                newfid,
                names: WalkNames::new(&strs).unwrap(),
            },
            |r| match r {
                RMessage::Walk { qids } => qids.iter().collect(),
                _ => unreachable!(),
            },
        )
    }

    /// Walks `path` (slash-separated, relative to ROOT) into `newfid`.
    pub fn walk_path(&self, newfid: u32, path: &str) -> Result<Vec<Qid>, Errno> {
        let names: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        let qids = self.walk(ROOT, newfid, &names)?;
        if qids.len() != names.len() {
            return Err(2);
        }
        Ok(qids)
    }

    pub fn lopen(&self, fid: u32, flags: u32) -> Result<Qid, Errno> {
        self.rpc(&TMessage::Lopen { fid, flags }, |r| match r {
            RMessage::Lopen { qid, .. } => qid,
            _ => unreachable!(),
        })
    }

    pub fn lcreate(&self, fid: u32, name: &str, flags: u32, mode: u32) -> Result<Qid, Errno> {
        self.rpc(
            &TMessage::Lcreate {
                fid,
                name: Str::from(name),
                flags,
                mode,
                gid: 0,
            },
            |r| match r {
                RMessage::Lcreate { qid, .. } => qid,
                _ => unreachable!(),
            },
        )
    }

    pub fn read(&self, fid: u32, offset: u64, count: u32) -> Result<Vec<u8>, Errno> {
        self.rpc(&TMessage::Read { fid, offset, count }, |r| match r {
            RMessage::Read { data } => data.to_vec(),
            _ => unreachable!(),
        })
    }

    pub fn write(&self, fid: u32, offset: u64, data: &[u8]) -> Result<u32, Errno> {
        self.rpc(&TMessage::Write { fid, offset, data }, |r| match r {
            RMessage::Write { count } => count,
            _ => unreachable!(),
        })
    }

    pub fn clunk(&self, fid: u32) -> Result<(), Errno> {
        self.ok(&TMessage::Clunk { fid })
    }

    pub fn getattr(&self, fid: u32) -> Result<Stat, Errno> {
        self.rpc(
            &TMessage::Getattr {
                fid,
                request_mask: P9_GETATTR_BASIC,
            },
            |r| match r {
                RMessage::Getattr { stat } => stat,
                _ => unreachable!(),
            },
        )
    }

    pub fn mkdir(&self, dfid: u32, name: &str, mode: u32) -> Result<Qid, Errno> {
        self.rpc(
            &TMessage::Mkdir {
                dfid,
                name: Str::from(name),
                mode,
                gid: 0,
            },
            |r| match r {
                RMessage::Mkdir { qid } => qid,
                _ => unreachable!(),
            },
        )
    }

    pub fn unlinkat(&self, dirfid: u32, name: &str, flags: u32) -> Result<(), Errno> {
        self.ok(&TMessage::Unlinkat {
            dirfid,
            name: Str::from(name),
            flags,
        })
    }

    pub fn setattr(&self, fid: u32, attr: SetAttr) -> Result<(), Errno> {
        self.ok(&TMessage::Setattr { fid, attr })
    }

    /// One Treaddir: `(name, offset, qid, type)` per entry.
    pub fn readdir(
        &self,
        fid: u32,
        offset: u64,
        count: u32,
    ) -> Result<Vec<(String, u64, Qid, u8)>, Errno> {
        self.rpc(&TMessage::Readdir { fid, offset, count }, |r| match r {
            RMessage::Readdir { data } => DirEntryIter::new(data)
                .map(|e| {
                    let e = e.unwrap();
                    (e.name.to_string(), e.offset, e.qid, e.ty)
                })
                .collect(),
            _ => unreachable!(),
        })
    }

    /// Reads a whole directory in Treaddir calls of `count` bytes.
    pub fn readdir_all(&self, fid: u32, count: u32) -> Result<Vec<String>, Errno> {
        let mut names = Vec::new();
        let mut offset = 0;
        loop {
            let batch = self.readdir(fid, offset, count)?;
            let Some(last) = batch.last() else {
                return Ok(names);
            };
            offset = last.1;
            names.extend(batch.into_iter().map(|e| e.0));
        }
    }

    /// Lists the directory at `path`, without `.` and `..`, sorted.
    pub fn ls(&self, path: &str) -> Result<Vec<String>, Errno> {
        let fid = 900;
        self.walk_path(fid, path)?;
        let res = self
            .lopen(fid, P9_DOTL_RDONLY)
            .and_then(|_| self.readdir_all(fid, 8192));
        self.clunk(fid).unwrap();
        let mut names: Vec<String> = res?.into_iter().filter(|n| n != "." && n != "..").collect();
        names.sort();
        Ok(names)
    }

    /// Reads the whole file at `path`.
    pub fn cat(&self, path: &str) -> Result<Vec<u8>, Errno> {
        let fid = 901;
        self.walk_path(fid, path)?;
        let res = self.lopen(fid, P9_DOTL_RDONLY).and_then(|_| {
            let mut out = Vec::new();
            loop {
                let chunk = self.read(fid, out.len() as u64, 65536)?;
                if chunk.is_empty() {
                    return Ok(out);
                }
                out.extend(chunk);
            }
        });
        self.clunk(fid).unwrap();
        res
    }
}

/// A temporary tree:
///
/// ```text
/// base/
///   root/                 exported read-write at /
///     hello.txt           "hello world"
///     sub/a.txt           "aaa"
///     esc_abs  -> base/outside/secret.txt   (absolute)
///     esc_rel  -> ../outside/secret.txt     (relative)
///     sub/esc_dir -> ../../outside          (relative, a directory)
///     inside -> hello.txt
///   ro/                   exported read-only at /ro
///     file.txt            "read only"
///   outside/secret.txt    "secret"          (not exported)
/// ```
pub struct Tree {
    pub dir: tempfile::TempDir,
}

impl Tree {
    pub fn new() -> Tree {
        let dir = tempfile::tempdir().unwrap();
        let b = dir.path();
        std::fs::create_dir_all(b.join("root/sub")).unwrap();
        std::fs::create_dir_all(b.join("ro")).unwrap();
        std::fs::create_dir_all(b.join("outside")).unwrap();
        std::fs::write(b.join("root/hello.txt"), "hello world").unwrap();
        std::fs::write(b.join("root/sub/a.txt"), "aaa").unwrap();
        std::fs::write(b.join("ro/file.txt"), "read only").unwrap();
        std::fs::write(b.join("outside/secret.txt"), "secret").unwrap();
        std::os::unix::fs::symlink(b.join("outside/secret.txt"), b.join("root/esc_abs")).unwrap();
        std::os::unix::fs::symlink("../outside/secret.txt", b.join("root/esc_rel")).unwrap();
        std::os::unix::fs::symlink("../../outside", b.join("root/sub/esc_dir")).unwrap();
        std::os::unix::fs::symlink("hello.txt", b.join("root/inside")).unwrap();
        Tree { dir }
    }

    pub fn base(&self) -> &Path {
        self.dir.path()
    }

    pub fn root(&self) -> PathBuf {
        self.base().join("root")
    }

    pub fn config(&self) -> GatewayConfig {
        GatewayConfig {
            exports: vec![
                Export {
                    host: self.root(),
                    guest: "/".into(),
                    read_only: false,
                },
                Export {
                    host: self.base().join("ro"),
                    guest: "/ro".into(),
                    read_only: true,
                },
            ],
            env: vec![
                ("HOME".into(), "/home/astraea".into()),
                ("LANG".into(), "C.UTF-8".into()),
            ],
            ..GatewayConfig::default()
        }
    }

    pub fn gateway(&self) -> (Arc<Gateway>, Arc<MemConsole>) {
        self.gateway_with(self.config())
    }

    pub fn gateway_with(&self, cfg: GatewayConfig) -> (Arc<Gateway>, Arc<MemConsole>) {
        let console = Arc::new(MemConsole::new());
        let gw = Gateway::with_console(cfg, console.clone()).unwrap();
        (gw, console)
    }

    /// The names in `outside/` (must stay exactly `secret.txt`).
    pub fn outside(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(self.base().join("outside"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }
}
