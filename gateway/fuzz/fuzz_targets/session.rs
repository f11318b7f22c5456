//! A hostile client's session: arbitrary sequences of 9P requests (built
//! from the input, plus raw frames) against a gateway exporting a small
//! scratch tree read-write, with `/net` on behind a policy that allows
//! nothing. The gateway must never panic, must answer every request with a
//! well-formed R-message carrying its tag, and must never reach outside its
//! export: a canary file beside the export is never read, and the
//! directory holding it never changes.
#![no_main]

use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, channel};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use astraea_9p::{
    Flock, Getlock, NONUNAME, RMessage, SetAttr, Str, TMessage, WalkNames,
};
use astraea_gateway::{AllowList, Export, Gateway, GatewayConfig};
use libfuzzer_sys::fuzz_target;

const CANARY: &[u8] = b"CANARY-OUTSIDE-THE-EXPORT";
const MSIZE: u32 = 64 << 10;

struct World {
    gw: Arc<Gateway>,
    root: PathBuf,
    outside: PathBuf,
    outside_listing: Vec<std::ffi::OsString>,
}

fn listing(dir: &Path) -> Vec<std::ffi::OsString> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .expect("outside directory")
        .map(|e| e.expect("entry").file_name())
        .collect();
    v.sort();
    v
}

fn world() -> &'static World {
    static W: OnceLock<World> = OnceLock::new();
    W.get_or_init(|| {
        let base = std::env::temp_dir().join(format!("astraea-gw-fuzz-{}", std::process::id()));
        let root = base.join("export");
        let outside = base.join("outside");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret"), CANARY).unwrap();
        std::os::unix::fs::symlink(&outside, base.join("link-out")).unwrap();
        let gw = Gateway::new(GatewayConfig {
            exports: vec![Export {
                host: root.clone(),
                guest: "/".into(),
                read_only: false,
            }],
            max_msize: MSIZE,
            max_fids: 64,
            max_outstanding: 64,
            console: false,
            net: true,
            net_policy: Arc::new(AllowList::new(Vec::new())),
            ..GatewayConfig::default()
        })
        .expect("gateway");
        let outside_listing = listing(&outside);
        World {
            gw,
            root,
            outside,
            outside_listing,
        }
    })
}

/// The scratch tree every run starts from.
fn reset(root: &Path) {
    let _ = std::fs::remove_dir_all(root);
    std::fs::create_dir_all(root.join("sub/deeper")).unwrap();
    std::fs::write(root.join("a"), b"hello").unwrap();
    std::fs::write(root.join("sub/b"), vec![7u8; 5000]).unwrap();
    std::os::unix::fs::symlink("../outside/secret", root.join("esc")).unwrap();
    std::os::unix::fs::symlink("/", root.join("abs")).unwrap();
    std::os::unix::fs::symlink("sub", root.join("rel")).unwrap();
}

/// Reads the input front to back; zeros once it runs out.
struct Input<'a>(&'a [u8]);

impl<'a> Input<'a> {
    fn bytes(&mut self, n: usize) -> &'a [u8] {
        let n = n.min(self.0.len());
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        a
    }
    fn u8(&mut self) -> u8 {
        self.bytes(1).first().copied().unwrap_or(0)
    }
    fn u16(&mut self) -> u16 {
        u16::from(self.u8()) | (u16::from(self.u8()) << 8)
    }
    fn u32(&mut self) -> u32 {
        u32::from(self.u16()) | (u32::from(self.u16()) << 16)
    }
    fn u64(&mut self) -> u64 {
        u64::from(self.u32()) | (u64::from(self.u32()) << 32)
    }
    /// Small numbers mostly, anything sometimes.
    fn num(&mut self) -> u64 {
        match self.u8() % 4 {
            0 => self.u64(),
            1 => u64::from(self.u16()),
            _ => u64::from(self.u8()),
        }
    }
    fn fid(&mut self) -> u32 {
        match self.u8() {
            255 => self.u32(),
            b => u32::from(b % 8),
        }
    }
    /// A name from the tree, `/net` and the usual traps, or raw bytes.
    fn name(&mut self) -> &'a [u8] {
        const NAMES: &[&[u8]] = &[
            b"a", b"sub", b"b", b"deeper", b"esc", b"abs", b"rel", b"new", b"..", b".", b"",
            b"net", b"tcp", b"udp", b"clone", b"ctl", b"data", b"listen", b"local", b"remote",
            b"status", b"0", b"1", b"env", b"dev", b"x/y", b"outside", b"\0",
        ];
        let k = usize::from(self.u8());
        match NAMES.get(k % (NAMES.len() + 1)) {
            Some(n) => n,
            None => {
                let len = usize::from(self.u8() % 16);
                self.bytes(len)
            }
        }
    }
    /// A `ctl` command (the network tree's text) or raw bytes.
    fn payload(&mut self) -> &'a [u8] {
        const CTL: &[&[u8]] = &[
            b"connect 127.0.0.1!9",
            b"connect [::1]!80",
            b"connect localhost!0",
            b"announce *!0",
            b"announce 0",
            b"bind ::!0",
            b"bind 127.0.0.1!65535",
            b"listen",
            b"listen 70000",
            b"reuseaddr",
            b"reuseport off",
            b"v6only",
            b"headers",
            b"hangup",
            b"nodelay",
            b"keepalive 10",
            b"linger 0",
            b"shutdown rdwr",
            b"disconnect",
            b"sockopt 0 35 e0000001000000000000",
            b"sockopt 41 20 ff0200000000000000000000000000010000000",
            b"sockopt 0 33 01",
            b"sockopt 0 1 01",
        ];
        let k = usize::from(self.u8());
        match CTL.get(k % (CTL.len() * 2)) {
            Some(c) => c,
            None => {
                let len = usize::from(self.u16() % 512);
                self.bytes(len)
            }
        }
    }
}

/// One request from the input: a 9P message, or (rarely) a raw frame
/// (`true` with it: its tag is whatever the input says).
fn request(inp: &mut Input<'_>, tag: u16) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    let op = inp.u8();
    let fid = inp.fid();
    let msg = match op % 26 {
        0 => {
            // A raw frame: its size field is made right half of the time.
            let len = usize::from(inp.u8());
            let mut f = inp.bytes(len).to_vec();
            if f.len() >= 4 && op & 0x80 != 0 {
                let n = f.len() as u32;
                f[..4].copy_from_slice(&n.to_le_bytes());
            }
            return (f, true);
        }
        1 | 2 | 3 => {
            let newfid = inp.fid();
            let n = usize::from(inp.u8() % 5);
            let names: Vec<Str<'_>> = (0..n).map(|_| Str::new(inp.name())).collect();
            let names = WalkNames::new(&names).expect("at most 4 names");
            TMessage::Walk { fid, newfid, names }.encode(tag, &mut out)
        }
        4 | 5 => TMessage::Lopen {
            fid,
            flags: inp.num() as u32,
        }
        .encode(tag, &mut out),
        6 => TMessage::Lcreate {
            fid,
            name: Str::new(inp.name()),
            flags: inp.num() as u32,
            mode: inp.num() as u32,
            gid: inp.u32(),
        }
        .encode(tag, &mut out),
        7 | 8 => TMessage::Read {
            fid,
            offset: inp.num(),
            count: inp.num() as u32,
        }
        .encode(tag, &mut out),
        9 | 10 => TMessage::Write {
            fid,
            offset: inp.num(),
            data: inp.payload(),
        }
        .encode(tag, &mut out),
        11 => TMessage::Clunk { fid }.encode(tag, &mut out),
        12 => TMessage::Remove { fid }.encode(tag, &mut out),
        13 => TMessage::Getattr {
            fid,
            request_mask: inp.u64(),
        }
        .encode(tag, &mut out),
        14 => TMessage::Setattr {
            fid,
            attr: SetAttr {
                valid: inp.u32(),
                mode: inp.num() as u32,
                uid: inp.u32(),
                gid: inp.u32(),
                size: inp.num(),
                atime_sec: inp.num(),
                atime_nsec: inp.num(),
                mtime_sec: inp.num(),
                mtime_nsec: inp.num(),
            },
        }
        .encode(tag, &mut out),
        15 => TMessage::Readdir {
            fid,
            offset: inp.num(),
            count: inp.num() as u32,
        }
        .encode(tag, &mut out),
        16 => TMessage::Readlink { fid }.encode(tag, &mut out),
        17 => TMessage::Symlink {
            fid,
            name: Str::new(inp.name()),
            target: Str::new(inp.name()),
            gid: inp.u32(),
        }
        .encode(tag, &mut out),
        18 => TMessage::Mkdir {
            dfid: fid,
            name: Str::new(inp.name()),
            mode: inp.num() as u32,
            gid: inp.u32(),
        }
        .encode(tag, &mut out),
        19 => TMessage::Link {
            dfid: fid,
            fid: inp.fid(),
            name: Str::new(inp.name()),
        }
        .encode(tag, &mut out),
        20 => TMessage::Renameat {
            olddirfid: fid,
            oldname: Str::new(inp.name()),
            newdirfid: inp.fid(),
            newname: Str::new(inp.name()),
        }
        .encode(tag, &mut out),
        21 => TMessage::Unlinkat {
            dirfid: fid,
            name: Str::new(inp.name()),
            flags: inp.num() as u32,
        }
        .encode(tag, &mut out),
        22 => TMessage::Rename {
            fid,
            dfid: inp.fid(),
            name: Str::new(inp.name()),
        }
        .encode(tag, &mut out),
        23 => TMessage::Mknod {
            dfid: fid,
            name: Str::new(inp.name()),
            mode: inp.num() as u32,
            major: inp.u32(),
            minor: inp.u32(),
            gid: inp.u32(),
        }
        .encode(tag, &mut out),
        24 => match inp.u8() % 4 {
            0 => TMessage::Lock {
                fid,
                lock: Flock {
                    ty: inp.u8(),
                    flags: inp.u32(),
                    start: inp.num(),
                    length: inp.num(),
                    proc_id: inp.u32(),
                    client_id: Str::new(inp.name()),
                },
            }
            .encode(tag, &mut out),
            1 => TMessage::Getlock {
                fid,
                lock: Getlock {
                    ty: inp.u8(),
                    start: inp.num(),
                    length: inp.num(),
                    proc_id: inp.u32(),
                    client_id: Str::new(inp.name()),
                },
            }
            .encode(tag, &mut out),
            2 => TMessage::Fsync {
                fid,
                datasync: inp.u32(),
            }
            .encode(tag, &mut out),
            _ => TMessage::Statfs { fid }.encode(tag, &mut out),
        },
        _ => match inp.u8() % 3 {
            0 => TMessage::Flush {
                oldtag: inp.u16() % 8,
            }
            .encode(tag, &mut out),
            1 => TMessage::Xattrwalk {
                fid,
                newfid: inp.fid(),
                name: Str::new(inp.name()),
            }
            .encode(tag, &mut out),
            _ => TMessage::Attach {
                fid,
                afid: u32::MAX,
                uname: Str::from("fuzz"),
                aname: Str::new(inp.name()),
                n_uname: NONUNAME,
            }
            .encode(tag, &mut out),
        },
    };
    msg.expect("a request the codec encodes");
    (out, false)
}

/// Waits for a reply and checks it: a well-formed R-message with the
/// request's tag (`None` for a raw frame, whose tag the gateway may not
/// have been able to read) that does not carry the canary.
fn check(rx: &Receiver<Vec<u8>>, tag: Option<u16>, wait: Duration) -> bool {
    let Ok(frame) = rx.recv_timeout(wait) else {
        return false;
    };
    let (rtag, msg) = RMessage::from_bytes(&frame).expect("the gateway's reply decodes");
    if let Some(tag) = tag {
        assert_eq!(rtag, tag, "a reply with another request's tag: {msg:?}");
    }
    assert!(
        !frame.windows(CANARY.len()).any(|w| w == CANARY),
        "a reply carried the file outside the export: {msg:?}"
    );
    true
}

fuzz_target!(|data: &[u8]| {
    let w = world();
    reset(&w.root);
    let session = w.gw.session();
    let mut inp = Input(data);
    let mut pending = Vec::new();

    let mut out = Vec::new();
    TMessage::Version {
        msize: MSIZE,
        version: Str::from("9P2000.L"),
    }
    .encode(0xffff, &mut out)
    .unwrap();
    let (tx, rx) = channel();
    session.submit(out, Box::new(move |r| tx.send(r).unwrap_or(())));
    assert!(check(&rx, Some(0xffff), Duration::from_secs(10)));
    let mut out = Vec::new();
    TMessage::Attach {
        fid: 0,
        afid: u32::MAX,
        uname: Str::from("fuzz"),
        aname: Str::from(""),
        n_uname: NONUNAME,
    }
    .encode(1, &mut out)
    .unwrap();
    let (tx, rx) = channel();
    session.submit(out, Box::new(move |r| tx.send(r).unwrap_or(())));
    assert!(check(&rx, Some(1), Duration::from_secs(10)));

    let mut tag = 0u16;
    for _ in 0..64 {
        if inp.0.is_empty() {
            break;
        }
        tag = (tag + 1) % 8;
        let (frame, raw) = request(&mut inp, tag);
        let tag = (!raw).then_some(tag);
        let (tx, rx) = channel();
        session.submit(frame, Box::new(move |r| tx.send(r).unwrap_or(())));
        // Most requests answer at once; one that waits (an accept, a read
        // of a socket) is left in flight, as a client may.
        if !check(&rx, tag, Duration::from_millis(20)) {
            pending.push((rx, tag));
        }
    }
    // Whatever still waits is cancelled; an answer that comes is checked.
    session.shutdown(Duration::ZERO);
    for (rx, tag) in pending {
        check(&rx, tag, Duration::from_secs(2));
    }
    drop(session);
    assert_eq!(
        listing(&w.outside),
        w.outside_listing,
        "the directory beside the export changed"
    );
    assert_eq!(std::fs::read(w.outside.join("secret")).unwrap(), CANARY);
});
