//! Hostile input: truncations, lying sizes, unknown fids and types,
//! duplicate tags, huge counts and random bytes. Every frame gets exactly one
//! well-formed reply, nothing panics, and valid requests work afterwards.

mod common;

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::sync::Arc;
    use std::time::Duration;

    use astraea_9p::*;
    use astraea_gateway::{Gateway, serve_stream};

    use crate::common::*;

    const EINVAL: u32 = 22;

    /// A small deterministic generator (xorshift64*), so failures reproduce.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }

        fn bytes(&mut self, n: usize) -> Vec<u8> {
            (0..n).map(|_| self.next() as u8).collect()
        }
    }

    /// Sends `frame`, checks exactly one well-formed reply comes back.
    fn one_reply(c: &Client, frame: Vec<u8>) -> Vec<u8> {
        let rx = c.send_raw(frame);
        let reply = rx.recv_timeout(TIMEOUT).expect("a reply");
        check_reply(&reply);
        assert!(reply.len() as u32 <= c.session.msize().max(11));
        // Exactly once: the sender side is gone after one call.
        assert!(rx.recv_timeout(Duration::from_millis(1)).is_err());
        reply
    }

    fn still_works(c: &Client) {
        c.version(65536);
        c.attach(ROOT, "").unwrap();
        assert_eq!(c.cat("hello.txt").unwrap(), b"hello world");
        assert!(c.ls("/").unwrap().contains(&"sub".to_string()));
    }

    fn valid_frames() -> Vec<Vec<u8>> {
        let names = [Str::from("sub"), Str::from("a.txt")];
        let data = b"payload";
        vec![
            encode(
                1,
                &TMessage::Attach {
                    fid: 5,
                    afid: NOFID,
                    uname: Str::from("u"),
                    aname: Str::from(""),
                    n_uname: NONUNAME,
                },
            ),
            encode(
                2,
                &TMessage::Walk {
                    fid: ROOT,
                    newfid: 6,
                    names: WalkNames::new(&names).unwrap(),
                },
            ),
            encode(
                3,
                &TMessage::Lopen {
                    fid: 6,
                    flags: P9_DOTL_RDONLY,
                },
            ),
            encode(
                4,
                &TMessage::Read {
                    fid: 6,
                    offset: 0,
                    count: 100,
                },
            ),
            encode(
                5,
                &TMessage::Write {
                    fid: 6,
                    offset: 0,
                    data,
                },
            ),
            encode(
                6,
                &TMessage::Readdir {
                    fid: ROOT,
                    offset: 0,
                    count: 100,
                },
            ),
            encode(
                7,
                &TMessage::Getattr {
                    fid: 6,
                    request_mask: P9_GETATTR_ALL,
                },
            ),
            encode(
                8,
                &TMessage::Lcreate {
                    fid: 6,
                    name: Str::from("x"),
                    flags: 0,
                    mode: 0o644,
                    gid: 0,
                },
            ),
            encode(
                9,
                &TMessage::Mkdir {
                    dfid: ROOT,
                    name: Str::from("hostile-dir"),
                    mode: 0o755,
                    gid: 0,
                },
            ),
            encode(
                10,
                &TMessage::Renameat {
                    olddirfid: ROOT,
                    oldname: Str::from("nope"),
                    newdirfid: ROOT,
                    newname: Str::from("nope2"),
                },
            ),
        ]
    }

    #[test]
    fn truncations_and_lying_sizes() {
        let t = Tree::new();
        let (gw, _) = t.gateway();
        let c = Client::attached(&gw);
        for frame in valid_frames() {
            for len in 0..frame.len() {
                // As is: the size field lies.
                let reply = one_reply(&c, frame[..len].to_vec());
                assert_eq!(errno_of(&reply), Some(EINVAL), "prefix {len}");
                // With the size patched: a truncated body.
                if len >= 7 {
                    let mut patched = frame[..len].to_vec();
                    let n = patched.len() as u32;
                    patched[..4].copy_from_slice(&n.to_le_bytes());
                    let reply = one_reply(&c, patched);
                    assert_eq!(errno_of(&reply), Some(EINVAL), "truncated to {len}");
                }
            }
            // Trailing garbage and sizes that lie upwards or downwards.
            let mut longer = frame.clone();
            longer.push(0);
            assert_eq!(errno_of(&one_reply(&c, longer.clone())), Some(EINVAL));
            let n = longer.len() as u32;
            longer[..4].copy_from_slice(&n.to_le_bytes());
            assert_eq!(errno_of(&one_reply(&c, longer)), Some(EINVAL));
            for size in [0u32, 6, 7, u32::MAX, frame.len() as u32 + 1] {
                let mut lie = frame.clone();
                lie[..4].copy_from_slice(&size.to_le_bytes());
                assert_eq!(errno_of(&one_reply(&c, lie)), Some(EINVAL));
            }
        }
        still_works(&c);
    }

    #[test]
    fn unknown_types_fids_and_duplicate_tags() {
        let t = Tree::new();
        let (gw, _) = t.gateway();
        let c = Client::attached(&gw);
        // Every type byte that is not a T-message, with an empty and a junk body.
        for ty in 0..=255u8 {
            if MsgType::from_u8(ty).is_some_and(|m| m.is_request()) {
                continue;
            }
            for body in [&[][..], &[1, 2, 3, 4, 5, 6, 7, 8, 9][..]] {
                let mut f = ((7 + body.len()) as u32).to_le_bytes().to_vec();
                f.push(ty);
                f.extend_from_slice(&77u16.to_le_bytes());
                f.extend_from_slice(body);
                let reply = one_reply(&c, f);
                assert_eq!(errno_of(&reply), Some(EINVAL), "type {ty}");
            }
        }
        // Unknown fids everywhere.
        let junk = [Str::from("x")];
        for msg in [
            TMessage::Walk {
                fid: 999,
                newfid: 1000,
                names: WalkNames::new(&junk).unwrap(),
            },
            TMessage::Lopen { fid: 999, flags: 0 },
            TMessage::Read {
                fid: 999,
                offset: 0,
                count: 10,
            },
            TMessage::Write {
                fid: 999,
                offset: 0,
                data: b"x",
            },
            TMessage::Clunk { fid: 999 },
            TMessage::Remove { fid: 999 },
            TMessage::Getattr {
                fid: 999,
                request_mask: 0,
            },
            TMessage::Statfs { fid: 999 },
            TMessage::Readdir {
                fid: 999,
                offset: 0,
                count: 100,
            },
            TMessage::Readlink { fid: 999 },
            TMessage::Fsync {
                fid: 999,
                datasync: 0,
            },
            TMessage::Mkdir {
                dfid: 999,
                name: Str::from("d"),
                mode: 0,
                gid: 0,
            },
            TMessage::Unlinkat {
                dirfid: 999,
                name: Str::from("d"),
                flags: 0,
            },
            TMessage::Rename {
                fid: 999,
                dfid: ROOT,
                name: Str::from("d"),
            },
            TMessage::Link {
                dfid: ROOT,
                fid: 999,
                name: Str::from("d"),
            },
        ] {
            let reply = c.call(&msg);
            assert!(errno_of(&reply).is_some(), "{msg:?}");
        }
        // Attach with NOFID, walk into NOFID.
        assert!(c.attach(NOFID, "").is_err());
        assert!(c.walk(ROOT, NOFID, &[]).is_err());
        // Huge counts are capped, not trusted.
        c.walk_path(1, "hello.txt").unwrap();
        c.lopen(1, P9_DOTL_RDONLY).unwrap();
        assert_eq!(c.read(1, 0, u32::MAX).unwrap(), b"hello world");
        assert_eq!(
            c.read(1, u64::MAX, u32::MAX).map(|d| d.len()).unwrap_or(0),
            0
        );
        c.walk(ROOT, 2, &[]).unwrap();
        c.lopen(2, P9_DOTL_RDONLY).unwrap();
        assert!(c.readdir(2, u64::MAX, u32::MAX).is_ok());
        assert!(c.readdir(2, u64::MAX / 2, u32::MAX).is_ok());
        // Duplicate tags: the newcomer gets EINVAL, the first is unharmed.
        c.walk_path(3, "dev/cons").unwrap();
        c.lopen(3, P9_DOTL_RDONLY).unwrap();
        let read = encode(
            40,
            &TMessage::Read {
                fid: 3,
                offset: 0,
                count: 10,
            },
        );
        let first = c.send_raw(read.clone());
        std::thread::sleep(Duration::from_millis(30));
        let dup = one_reply(&c, read);
        assert_eq!(errno_of(&dup), Some(EINVAL));
        let dup_flush = one_reply(&c, encode(40, &TMessage::Flush { oldtag: 1 }));
        assert_eq!(errno_of(&dup_flush), Some(EINVAL));
        assert!(first.try_recv().is_err());
        // Flushing itself, flushing NOTAG: Rflush at once.
        let r = one_reply(&c, encode(41, &TMessage::Flush { oldtag: 41 }));
        assert!(errno_of(&r).is_none());
        let r = one_reply(&c, encode(42, &TMessage::Flush { oldtag: NOTAG }));
        assert!(errno_of(&r).is_none());
        let f = one_reply(&c, encode(43, &TMessage::Flush { oldtag: 40 }));
        assert!(errno_of(&f).is_none());
        first.recv_timeout(TIMEOUT).unwrap();
        // Walk with 17 names is malformed.
        let mut w = encode(
            44,
            &TMessage::Walk {
                fid: ROOT,
                newfid: 9,
                names: WalkNames::EMPTY,
            },
        );
        w.truncate(w.len() - 2);
        w.extend_from_slice(&17u16.to_le_bytes());
        for _ in 0..17 {
            w.extend_from_slice(&1u16.to_le_bytes());
            w.push(b'a');
        }
        let n = w.len() as u32;
        w[..4].copy_from_slice(&n.to_le_bytes());
        assert_eq!(errno_of(&one_reply(&c, w)), Some(EINVAL));
        // Names with NUL bytes.
        assert!(c.walk(ROOT, 9, &["a\0b"]).is_err());
        assert!(c.mkdir(ROOT, "a\0b", 0o755).is_err());
        assert_eq!(c.session.outstanding(), 0);
        still_works(&c);
    }

    #[test]
    fn random_bytes() {
        let t = Tree::new();
        let (gw, _) = t.gateway();
        let c = Client::attached(&gw);
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let types: Vec<u8> = MsgType::ALL
            .iter()
            .filter(|m| m.is_request() && **m != MsgType::Tversion)
            .map(|m| m.as_u8())
            .collect();
        for i in 0..3000 {
            let len = rng.below(64) as usize;
            let mut f = rng.bytes(len);
            match i % 3 {
                // Pure noise.
                0 => {}
                // A correct size field.
                1 if len >= 4 => {
                    f[..4].copy_from_slice(&(len as u32).to_le_bytes());
                }
                // A correct size and a real request type, random body.
                _ if len >= 7 => {
                    f[..4].copy_from_slice(&(len as u32).to_le_bytes());
                    f[4] = types[rng.below(types.len() as u64) as usize];
                }
                _ => {}
            }
            one_reply(&c, f);
        }
        // Random but valid messages on random fids.
        for _ in 0..500 {
            let fid = rng.below(8) as u32;
            let msg = match rng.below(6) {
                0 => TMessage::Read {
                    fid,
                    offset: rng.next(),
                    count: rng.next() as u32,
                },
                1 => TMessage::Readdir {
                    fid,
                    offset: rng.next(),
                    count: rng.next() as u32,
                },
                2 => TMessage::Getattr {
                    fid,
                    request_mask: rng.next(),
                },
                3 => TMessage::Lopen {
                    fid,
                    flags: rng.next() as u32,
                },
                4 => TMessage::Clunk { fid: fid + 1 },
                _ => TMessage::Walk {
                    fid,
                    newfid: fid + 1,
                    names: WalkNames::EMPTY,
                },
            };
            let tag = rng.below(1000) as u16;
            one_reply(&c, encode(tag, &msg));
        }
        assert_eq!(c.session.outstanding(), 0);
        still_works(&c);
    }

    fn start_server(gw: Arc<Gateway>) -> u16 {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                let gw = gw.clone();
                std::thread::spawn(move || {
                    let _ = serve_stream(&gw, conn);
                });
            }
        });
        port
    }

    fn rpc_stream(s: &mut TcpStream, frame: &[u8]) -> Vec<u8> {
        s.write_all(frame).unwrap();
        let mut size = [0u8; 4];
        s.read_exact(&mut size).unwrap();
        let n = u32::from_le_bytes(size) as usize;
        let mut rest = vec![0u8; n - 4];
        s.read_exact(&mut rest).unwrap();
        let mut out = size.to_vec();
        out.extend(rest);
        out
    }

    #[test]
    fn streams_survive_each_other() {
        let t = Tree::new();
        let (gw, _) = t.gateway();
        let port = start_server(gw);
        let mut good = TcpStream::connect(("127.0.0.1", port)).unwrap();
        good.set_read_timeout(Some(TIMEOUT)).unwrap();
        let v = encode(
            NOTAG,
            &TMessage::Version {
                msize: 8192,
                version: Str::from(VERSION_9P2000L),
            },
        );
        let r = rpc_stream(&mut good, &v);
        assert!(matches!(
            RMessage::from_bytes(&r).unwrap().1,
            RMessage::Version { msize: 8192, .. }
        ));
        // Bad streams: a size below the header, a size far above msize,
        // garbage, and a connection that dies in the middle of a frame.
        for bad in [
            vec![3u8, 0, 0, 0],
            vec![0xff, 0xff, 0xff, 0x7f, 100, 0, 0],
            b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
            vec![50u8, 0, 0, 0, 110, 1, 0, 0],
        ] {
            let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
            s.set_read_timeout(Some(TIMEOUT)).unwrap();
            s.write_all(&bad).unwrap();
            let _ = s.shutdown(std::net::Shutdown::Write);
            let mut sink = Vec::new();
            // The gateway closes the stream (EOF), possibly after an Rlerror.
            let _ = s.read_to_end(&mut sink);
        }
        // Pipelined requests on the good stream, answered in any order.
        let attach = encode(
            1,
            &TMessage::Attach {
                fid: ROOT,
                afid: NOFID,
                uname: Str::from("u"),
                aname: Str::from(""),
                n_uname: NONUNAME,
            },
        );
        let r = rpc_stream(&mut good, &attach);
        assert!(matches!(
            RMessage::from_bytes(&r).unwrap().1,
            RMessage::Attach { .. }
        ));
        let mut batch = Vec::new();
        for tag in 10..40u16 {
            batch.extend(encode(
                tag,
                &TMessage::Getattr {
                    fid: ROOT,
                    request_mask: P9_GETATTR_BASIC,
                },
            ));
        }
        good.write_all(&batch).unwrap();
        let mut seen = Vec::new();
        for _ in 10..40 {
            let mut size = [0u8; 4];
            good.read_exact(&mut size).unwrap();
            let mut rest = vec![0u8; u32::from_le_bytes(size) as usize - 4];
            good.read_exact(&mut rest).unwrap();
            let mut f = size.to_vec();
            f.extend(rest);
            let (tag, msg) = RMessage::from_bytes(&f).unwrap();
            assert!(matches!(msg, RMessage::Getattr { .. }));
            seen.push(tag);
        }
        seen.sort();
        assert_eq!(seen, (10..40).collect::<Vec<_>>());
        // A malformed but well-sized frame gets Rlerror and the stream goes on.
        let mut junk = vec![9u8, 0, 0, 0, 110, 5, 0, 1, 2];
        junk[0] = 9;
        let r = rpc_stream(&mut good, &junk);
        assert_eq!(errno_of(&r), Some(EINVAL));
        let r = rpc_stream(&mut good, &encode(2, &TMessage::Clunk { fid: ROOT }));
        assert!(matches!(
            RMessage::from_bytes(&r).unwrap().1,
            RMessage::Clunk
        ));
        // A frame above the negotiated msize closes this stream only.
        let big = vec![0u8; 9000];
        let w = encode(
            3,
            &TMessage::Write {
                fid: 1,
                offset: 0,
                data: &big,
            },
        );
        good.write_all(&w).unwrap();
        let mut sink = Vec::new();
        let _ = good.read_to_end(&mut sink);
        let mut again = TcpStream::connect(("127.0.0.1", port)).unwrap();
        again.set_read_timeout(Some(TIMEOUT)).unwrap();
        let r = rpc_stream(&mut again, &v);
        assert!(matches!(
            RMessage::from_bytes(&r).unwrap().1,
            RMessage::Version { .. }
        ));
    }

    #[test]
    fn half_closed_stream_gets_its_replies() {
        let t = Tree::new();
        let (gw, _) = t.gateway();
        let port = start_server(gw);
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(TIMEOUT)).unwrap();
        let mut out = encode(
            NOTAG,
            &TMessage::Version {
                msize: 8192,
                version: Str::from(VERSION_9P2000L),
            },
        );
        out.extend(encode(
            1,
            &TMessage::Attach {
                fid: ROOT,
                afid: NOFID,
                uname: Str::from("u"),
                aname: Str::from(""),
                n_uname: NONUNAME,
            },
        ));
        s.write_all(&out).unwrap();
        s.shutdown(std::net::Shutdown::Write).unwrap();
        let mut all = Vec::new();
        s.read_to_end(&mut all).unwrap();
        let (first, rest) = Frame::parse_prefix(&all).unwrap();
        let (second, rest) = Frame::parse_prefix(rest).unwrap();
        let mut types = [first.msg_type(), second.msg_type()];
        types.sort();
        assert_eq!(types, [MsgType::Rversion.as_u8(), MsgType::Rattach.as_u8()]);
        assert!(rest.is_empty());
    }
}
