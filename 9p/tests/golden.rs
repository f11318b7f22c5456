//! Golden-byte tests: frames written by hand from diod's `protocol.md`
//! layouts, checked in both directions (decode the bytes, encode the value).

mod common;

// Wrapped in a test module for `clippy::tests_outside_test_module`.
#[cfg(test)]
mod tests {
    use astraea_9p::*;

    use crate::common::{cat, goldens};

    /// Decodes `bytes`, compares with `(tag, msg)`, re-encodes and compares bytes.
    fn check(bytes: &[u8], tag: u16, msg: Message<'_>) {
        let frame = Frame::new_checked(bytes)
            .unwrap_or_else(|e| panic!("{e}: len {} for {msg:?}", bytes.len()));
        assert_eq!(frame.size() as usize, bytes.len());
        assert_eq!(frame.msg_type(), msg.msg_type().as_u8());
        assert_eq!(frame.tag(), tag);
        assert_eq!(frame.body(), &bytes[7..]);
        assert_eq!(Message::decode(&frame).expect("decode"), msg);
        match msg {
            Message::T(t) => {
                assert_eq!(TMessage::decode(&frame).unwrap(), t);
                assert_eq!(
                    RMessage::decode(&frame),
                    Err(Error::UnexpectedType(frame.msg_type()))
                );
            }
            Message::R(r) => {
                assert_eq!(RMessage::decode(&frame).unwrap(), r);
                assert_eq!(
                    TMessage::decode(&frame),
                    Err(Error::UnexpectedType(frame.msg_type()))
                );
            }
        }
        let mut out = vec![0xAA]; // encode appends
        msg.encode(tag, &mut out).expect("encode");
        assert_eq!(&out[1..], bytes);
        assert_eq!(msg.encoded_len().unwrap(), bytes.len());
        let mut slice = vec![0u8; bytes.len()];
        assert_eq!(msg.encode_to_slice(tag, &mut slice), Ok(bytes.len()));
        assert_eq!(slice, bytes);
    }

    #[test]
    fn golden_frames_decode_and_encode() {
        for (bytes, tag, msg) in goldens() {
            check(&bytes, tag, msg);
        }
    }

    #[test]
    fn golden_walk_names_and_qids_iterate() {
        let g = goldens();
        let Message::T(TMessage::Walk { names, .. }) = Message::from_bytes(&g[3].0).unwrap().1
        else {
            panic!("not a walk")
        };
        let v: Vec<_> = names.iter().collect();
        assert_eq!(v, [Str::from("usr"), Str::from("bin")]);
        assert_eq!(names.len(), 2);
        assert_eq!(names.get(1), Some(Str::from("bin")));
        assert_eq!(names.get(2), None);
        let (arr, n) = names.to_array();
        assert_eq!(&arr[..n], &v[..]);

        let Message::R(RMessage::Walk { qids }) = Message::from_bytes(&g[4].0).unwrap().1 else {
            panic!("not an rwalk")
        };
        assert_eq!(qids.len(), 2);
        assert_eq!(
            qids.last(),
            Some(Qid {
                ty: QTFILE,
                version: 3,
                path: 0x0102_0304_0506_0708
            })
        );
    }

    #[test]
    fn golden_readdir_entries() {
        let g = goldens();
        let (_, msg) = RMessage::from_bytes(&g[8].0).unwrap();
        let entries: Vec<_> = DirEntryIter::from_message(&msg)
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            entries,
            [
                DirEntry {
                    qid: Qid {
                        ty: QTDIR,
                        version: 0,
                        path: 1
                    },
                    offset: 1,
                    ty: DT_DIR,
                    name: Str::from(".")
                },
                DirEntry {
                    qid: Qid {
                        ty: QTFILE,
                        version: 7,
                        path: 0x1234
                    },
                    offset: 2,
                    ty: DT_REG,
                    name: Str::from("file")
                },
            ]
        );
        // The writer reproduces the same data.
        let mut w = DirEntryWriter::new(53);
        for e in &entries {
            w.push(e).unwrap();
        }
        assert_eq!(w.remaining(), 0);
        let RMessage::Readdir { data } = msg else {
            unreachable!()
        };
        assert_eq!(w.as_bytes(), data);
        let mut out = Vec::new();
        w.to_message().encode(3, &mut out).unwrap();
        assert_eq!(out, g[8].0);
    }

    #[test]
    fn zero_copy_headers_match_full_encoding() {
        let payload = b"payload bytes";
        let mut full = Vec::new();
        RMessage::Read { data: payload }
            .encode(77, &mut full)
            .unwrap();
        let hdr = encode_rread_header(77, payload.len() as u32).unwrap();
        assert_eq!(cat(&[&hdr, payload]), full);
        assert_eq!(
            Header::parse(&hdr).unwrap(),
            Header {
                size: full.len() as u32,
                msg_type: 117,
                tag: 77
            }
        );

        full.clear();
        RMessage::Readdir { data: payload }
            .encode(78, &mut full)
            .unwrap();
        let hdr = encode_rreaddir_header(78, payload.len() as u32).unwrap();
        assert_eq!(cat(&[&hdr, payload]), full);

        full.clear();
        TMessage::Write {
            fid: 5,
            offset: 1 << 40,
            data: payload,
        }
        .encode(79, &mut full)
        .unwrap();
        let hdr = encode_twrite_header(79, 5, 1 << 40, payload.len() as u32).unwrap();
        assert_eq!(cat(&[&hdr, payload]), full);

        assert_eq!(
            encode_rread_header(1, u32::MAX),
            Err(Error::MessageTooLarge)
        );
        assert_eq!(
            encode_twrite_header(1, 0, 0, u32::MAX - 22),
            Err(Error::MessageTooLarge)
        );
        assert!(encode_twrite_header(1, 0, 0, u32::MAX - 23).is_ok());
    }

    #[test]
    fn stream_parsing_splits_frames() {
        let g = goldens();
        let stream = cat(&[&g[0].0, &g[1].0, &g[5].0[..5]]);
        let (f1, rest) = Frame::parse_prefix(&stream).unwrap();
        assert_eq!(f1.as_bytes(), &g[0].0[..]);
        let (f2, rest) = Frame::parse_prefix(rest).unwrap();
        assert_eq!(f2.as_bytes(), &g[1].0[..]);
        assert_eq!(Frame::parse_prefix(rest), Err(Error::Truncated));
        assert_eq!(
            Frame::parse_prefix(&[3, 0, 0, 0, 100, 0, 0]),
            Err(Error::SizeMismatch)
        );
    }

    #[test]
    fn message_types_are_linux_numbers() {
        assert_eq!(MsgType::Rlerror.as_u8(), 7);
        assert_eq!(MsgType::Tstatfs.as_u8(), 8);
        assert_eq!(MsgType::Tversion.as_u8(), 100);
        assert_eq!(MsgType::Tauth.as_u8(), 102);
        assert_eq!(MsgType::Tattach.as_u8(), 104);
        assert_eq!(MsgType::Tflush.as_u8(), 108);
        assert_eq!(MsgType::Twalk.as_u8(), 110);
        assert_eq!(MsgType::Tread.as_u8(), 116);
        assert_eq!(MsgType::Twrite.as_u8(), 118);
        assert_eq!(MsgType::Tclunk.as_u8(), 120);
        assert_eq!(MsgType::Tremove.as_u8(), 122);
        for ty in 0..=255u8 {
            match MsgType::from_u8(ty) {
                Some(t) => {
                    assert_eq!(t.as_u8(), ty);
                    assert!(MsgType::ALL.contains(&t));
                    assert_eq!(t.is_request(), ty % 2 == 0);
                }
                None => assert!(!MsgType::ALL.iter().any(|t| t.as_u8() == ty)),
            }
        }
        assert_eq!(MsgType::from_u8(TLERROR), None);
        assert_eq!(MsgType::from_u8(107), None); // 9P2000 Rerror is not .L
        assert_eq!(MsgType::ALL.len(), 57);
    }

    #[test]
    fn every_kind_is_encodable_and_covered() {
        let f = crate::common::sample_fields();
        let strs = f.strs();
        let msgs = crate::common::all_messages(&f, &strs);
        crate::common::assert_covers_all_types(&msgs);
        for (i, m) in msgs.iter().enumerate() {
            let mut out = Vec::new();
            m.encode(i as u16, &mut out).unwrap();
            let (tag, back) = Message::from_bytes(&out).unwrap();
            assert_eq!(tag, i as u16);
            assert_eq!(&back, m);
        }
    }

    #[test]
    fn display_and_debug() {
        assert_eq!(format!("{}", Str::from("a\u{e9}")), "a\u{e9}");
        assert_eq!(format!("{}", Str::new(b"a\xffb")), "a\u{FFFD}b");
        assert_eq!(format!("{:?}", Str::new(b"a\"\n\xff")), r#""a\"\n\xff""#);
        assert_eq!(
            Error::UnknownType(3).to_string(),
            "unknown 9P2000.L message type 3"
        );
        for e in [
            Error::Truncated,
            Error::SizeMismatch,
            Error::UnexpectedType(1),
            Error::TooManyWalkNames,
            Error::TooManyWalkQids,
            Error::StringTooLong,
            Error::TrailingBytes,
            Error::BufferTooSmall,
            Error::MessageTooLarge,
        ] {
            assert!(!e.to_string().is_empty());
        }
        let e: &dyn core::error::Error = &Error::Truncated;
        assert_eq!(e.to_string(), "9P message truncated");
    }

    /// Writes every golden frame and one frame of every kind into the fuzz
    /// seed corpus (`fuzz/corpus/decode`, git-ignored). Run with
    /// `cargo test -p astraea-9p --test golden -- --ignored write_fuzz_seeds`.
    #[test]
    #[ignore = "writes files; run by hand before fuzzing"]
    fn write_fuzz_seeds() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/decode");
        std::fs::create_dir_all(&dir).unwrap();
        let mut frames: Vec<Vec<u8>> = goldens().into_iter().map(|(b, _, _)| b).collect();
        let mut f = crate::common::sample_fields();
        f.data.truncate(64);
        f.nwalk = 3;
        f.nqid = 3;
        let strs = f.strs();
        for m in crate::common::all_messages(&f, &strs) {
            let mut out = Vec::new();
            m.encode(1, &mut out).unwrap();
            frames.push(out);
        }
        for (i, frame) in frames.iter().enumerate() {
            std::fs::write(dir.join(format!("seed-{i:03}")), frame).unwrap();
        }
    }
}
