//! Robustness: truncation, size-field lies, trailing garbage, walk limits,
//! oversized strings and random bytes. Nothing may panic; everything bad
//! must be an error.

mod common;

// Wrapped in a test module for `clippy::tests_outside_test_module`.
#[cfg(test)]
mod tests {
    use crate::common::{fix_size, goldens};
    use astraea_9p::*;
    use proptest::collection::vec;
    use proptest::prelude::*;

    /// Every strict prefix of `bytes` is rejected, both as-is (size lies) and
    /// with the size field patched to the prefix length (body truncated).
    fn assert_prefixes_fail(bytes: &[u8]) {
        for len in 0..bytes.len() {
            let prefix = &bytes[..len];
            assert!(Frame::new_checked(prefix).is_err(), "prefix {len} accepted");
            assert!(Message::from_bytes(prefix).is_err());
            assert!(TMessage::from_bytes(prefix).is_err());
            assert!(RMessage::from_bytes(prefix).is_err());
            if len >= HEADER_LEN {
                let mut patched = prefix.to_vec();
                fix_size(&mut patched);
                let frame = Frame::new_checked(&patched).expect("patched frame is well-formed");
                assert_eq!(
                    Message::decode(&frame),
                    Err(Error::Truncated),
                    "truncated body of {len} bytes decoded from {bytes:?}"
                );
            }
        }
    }

    /// Appending any byte (with the size patched) is `TrailingBytes`.
    fn assert_trailing_fails(bytes: &[u8]) {
        for extra in [0u8, 0xFF] {
            let mut longer = bytes.to_vec();
            longer.push(extra);
            fix_size(&mut longer);
            assert_eq!(
                Message::from_bytes(&longer).map(|_| ()),
                Err(Error::TrailingBytes)
            );
        }
    }

    /// A size field one more or one less than the buffer is `SizeMismatch`.
    fn assert_size_lies_fail(bytes: &[u8]) {
        let size = u32::from_le_bytes(bytes[..4].try_into().unwrap());
        for lie in [size.wrapping_add(1), size.wrapping_sub(1), 0, u32::MAX] {
            let mut v = bytes.to_vec();
            v[..4].copy_from_slice(&lie.to_le_bytes());
            assert_eq!(Frame::new_checked(&v), Err(Error::SizeMismatch));
        }
    }

    #[test]
    fn golden_prefixes_trailing_and_size_lies() {
        for (bytes, _, _) in goldens() {
            assert_prefixes_fail(&bytes);
            assert_trailing_fails(&bytes);
            assert_size_lies_fail(&bytes);
        }
    }

    #[test]
    fn every_kind_prefixes_and_trailing() {
        let f = crate::common::sample_fields();
        let strs = f.strs();
        for msg in crate::common::all_messages(&f, &strs) {
            let mut out = Vec::new();
            msg.encode(0x1234, &mut out).unwrap();
            assert_prefixes_fail(&out);
            assert_trailing_fails(&out);
            assert_size_lies_fail(&out);
        }
    }

    #[test]
    fn short_buffers() {
        assert_eq!(Frame::new_checked(&[]), Err(Error::Truncated));
        assert_eq!(
            Frame::new_checked(&[7, 0, 0, 0, 100, 0]),
            Err(Error::Truncated)
        );
        assert_eq!(Header::parse(&[7, 0, 0]), Err(Error::Truncated));
        // size < 7 can never be valid.
        for size in 0..7u8 {
            assert_eq!(
                Header::parse(&[size, 0, 0, 0, 100, 0, 0]),
                Err(Error::SizeMismatch)
            );
        }
        // A bare header of a message that needs a body.
        assert_eq!(
            Message::from_bytes(&[7, 0, 0, 0, 100, 0, 0]).map(|_| ()),
            Err(Error::Truncated)
        );
    }

    fn twalk_with(nwname: u16, names: usize) -> Vec<u8> {
        let mut v = vec![0, 0, 0, 0, 110, 1, 0, 1, 0, 0, 0, 2, 0, 0, 0];
        v.extend_from_slice(&nwname.to_le_bytes());
        for i in 0..names {
            v.extend_from_slice(&[1, 0, b'a' + (i % 26) as u8]);
        }
        fix_size(&mut v);
        v
    }

    #[test]
    fn walk_limits() {
        // 16 names are fine, 17 are not, whether or not the names are present.
        let sixteen = twalk_with(16, 16);
        let (_, m) = TMessage::from_bytes(&sixteen).unwrap();
        let TMessage::Walk { names, .. } = m else {
            panic!()
        };
        assert_eq!(names.len(), MAXWELEM);
        assert_eq!(
            TMessage::from_bytes(&twalk_with(17, 17)).map(|_| ()),
            Err(Error::TooManyWalkNames)
        );
        assert_eq!(
            TMessage::from_bytes(&twalk_with(17, 0)).map(|_| ()),
            Err(Error::TooManyWalkNames)
        );
        assert_eq!(
            TMessage::from_bytes(&twalk_with(u16::MAX, 0)).map(|_| ()),
            Err(Error::TooManyWalkNames)
        );
        // Count says 3, only 2 present; count says 1, 2 present.
        assert_eq!(
            TMessage::from_bytes(&twalk_with(3, 2)).map(|_| ()),
            Err(Error::Truncated)
        );
        assert_eq!(
            TMessage::from_bytes(&twalk_with(1, 2)).map(|_| ()),
            Err(Error::TrailingBytes)
        );

        // Rwalk: 17 qids.
        let mut r = vec![0, 0, 0, 0, 111, 1, 0, 17, 0];
        r.extend(std::iter::repeat_n(0u8, 17 * QID_LEN));
        fix_size(&mut r);
        assert_eq!(
            RMessage::from_bytes(&r).map(|_| ()),
            Err(Error::TooManyWalkQids)
        );

        // Construction side.
        let names = [Str::from("x"); 17];
        assert_eq!(
            WalkNames::new(&names).map(|_| ()),
            Err(Error::TooManyWalkNames)
        );
        assert!(WalkNames::new(&names[..16]).is_ok());
        let qids = [Qid::default(); 17];
        assert_eq!(
            WalkQids::new(&qids).map(|_| ()),
            Err(Error::TooManyWalkQids)
        );
        assert!(WalkQids::new(&qids[..16]).is_ok());
    }

    #[test]
    fn oversized_string_is_rejected_and_output_untouched() {
        let long = vec![b'x'; usize::from(u16::MAX) + 1];
        let ok = vec![b'x'; usize::from(u16::MAX)];
        let mut out = vec![1, 2, 3];
        let msg = TMessage::Xattrwalk {
            fid: 1,
            newfid: 2,
            name: Str::new(&long),
        };
        assert_eq!(msg.encode(1, &mut out), Err(Error::StringTooLong));
        assert_eq!(msg.encoded_len(), Err(Error::StringTooLong));
        assert_eq!(out, [1, 2, 3]);
        let mut buf = vec![0u8; 70_000];
        assert_eq!(msg.encode_to_slice(1, &mut buf), Err(Error::StringTooLong));

        let msg = TMessage::Xattrwalk {
            fid: 1,
            newfid: 2,
            name: Str::new(&ok),
        };
        msg.encode(1, &mut out).unwrap();
        assert_eq!(out.len(), 3 + 7 + 8 + 2 + 65535);

        let mut w = DirEntryWriter::new(u32::MAX);
        let e = DirEntry {
            name: Str::new(&long),
            ..DirEntry::default()
        };
        assert_eq!(w.push(&e), Err(Error::StringTooLong));
        assert!(w.is_empty());
        let mut v = Vec::new();
        assert_eq!(e.encode_into(&mut v), Err(Error::StringTooLong));
        assert!(v.is_empty());
    }

    #[test]
    fn dirent_iter_stops_on_garbage() {
        let good = crate::common::readdir_data(&[
            (Qid::default(), 1, DT_REG, b"a"),
            (Qid::default(), 2, DT_DIR, b"bb"),
        ]);
        for len in 0..good.len() {
            let items: Vec<_> = DirEntryIter::new(&good[..len]).collect();
            let oks = items.iter().filter(|r| r.is_ok()).count();
            let errs = items.iter().filter(|r| r.is_err()).count();
            let expect_ok = usize::from(len >= 25);
            assert_eq!(oks, expect_ok, "len {len}");
            // Exactly one error unless the cut fell on an entry boundary.
            assert_eq!(errs, usize::from(len != 0 && len != 25), "len {len}");
            if errs == 1 {
                assert_eq!(items.last(), Some(&Err(Error::Truncated)));
            }
        }
        // A name length pointing past the end.
        let mut bad = good.clone();
        bad[22] = 0xFF;
        let items: Vec<_> = DirEntryIter::new(&bad).collect();
        assert_eq!(items, [Err(Error::Truncated)]);
    }

    #[test]
    fn every_type_byte_with_small_bodies() {
        for ty in 0..=255u8 {
            for body_len in 0..64usize {
                let mut v = vec![0, 0, 0, 0, ty, 0, 0];
                v.extend((0..body_len).map(|i| (i as u8).wrapping_mul(37)));
                fix_size(&mut v);
                let res = Message::from_bytes(&v);
                if MsgType::from_u8(ty).is_none() {
                    assert_eq!(res.map(|_| ()), Err(Error::UnknownType(ty)));
                }
                if let Ok((tag, m)) = res {
                    let mut out = Vec::new();
                    m.encode(tag, &mut out).unwrap();
                    assert_eq!(out, v);
                }
            }
        }
    }

    /// Decode `data` every way the API allows; if it decodes, it must re-encode
    /// to the same bytes and decode to the same value.
    fn exercise(data: &[u8]) {
        let _ = Header::parse(data);
        let _ = Frame::parse_prefix(data);
        let _ = TMessage::from_bytes(data);
        let _ = RMessage::from_bytes(data);
        for e in DirEntryIter::new(data) {
            let _ = e;
        }
        if let Ok((tag, msg)) = Message::from_bytes(data) {
            let mut out = Vec::new();
            msg.encode(tag, &mut out).unwrap();
            assert_eq!(out, data);
            assert_eq!(Message::from_bytes(&out).unwrap(), (tag, msg));
            if let Message::R(r) = msg
                && let Some(it) = DirEntryIter::from_message(&r)
            {
                for e in it {
                    let _ = e;
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]

        #[test]
        fn random_bytes_never_panic(data in vec(any::<u8>(), 0..512)) {
            exercise(&data);
        }

        #[test]
        fn random_bodies_with_valid_headers_never_panic(
            ty in prop::sample::select(MsgType::ALL.to_vec()),
            tag in any::<u16>(),
            body in vec(any::<u8>(), 0..256),
        ) {
            let mut v = vec![0, 0, 0, 0, ty.as_u8()];
            v.extend_from_slice(&tag.to_le_bytes());
            v.extend_from_slice(&body);
            fix_size(&mut v);
            exercise(&v);
        }

        #[test]
        fn mutated_valid_messages_never_panic(
            which in 0usize..57,
            tag in any::<u16>(),
            flips in vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
            cut in any::<prop::sample::Index>(),
        ) {
            let f = crate::common::sample_fields();
            let strs = f.strs();
            let msgs = crate::common::all_messages(&f, &strs);
            let mut v = Vec::new();
            msgs[which].encode(tag, &mut v).unwrap();
            for (at, byte) in flips {
                let i = at.index(v.len());
                v[i] = byte;
            }
            exercise(&v);
            let cut = cut.index(v.len() + 1);
            exercise(&v[..cut]);
            let mut patched = v[..cut.max(HEADER_LEN.min(v.len()))].to_vec();
            fix_size(&mut patched);
            exercise(&patched);
        }
    }
}
