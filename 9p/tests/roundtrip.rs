//! Property tests: every message kind, with arbitrary field values, encodes
//! and decodes back to itself (and re-encodes to the same bytes).

mod common;

// Wrapped in a test module for `clippy::tests_outside_test_module`.
#[cfg(test)]
mod tests {
    use crate::common::Fields;
    use astraea_9p::*;
    use proptest::collection::vec;
    use proptest::prelude::*;

    fn qid() -> impl Strategy<Value = Qid> {
        (any::<u8>(), any::<u32>(), any::<u64>()).prop_map(|(ty, version, path)| Qid {
            ty,
            version,
            path,
        })
    }

    fn fields() -> impl Strategy<Value = Fields> {
        (
            vec(any::<u64>(), 32),
            vec(vec(any::<u8>(), 0..24), 16),
            prop_oneof![vec(any::<u8>(), 0..64), vec(any::<u8>(), 0..2048)],
            vec(qid(), 16),
            0usize..=16,
            0usize..=16,
        )
            .prop_map(|(n, strs, data, qids, nwalk, nqid)| Fields {
                n,
                strs,
                data,
                qids,
                nwalk,
                nqid,
            })
    }

    fn dir_entry() -> impl Strategy<Value = (Qid, u64, u8, Vec<u8>)> {
        (qid(), any::<u64>(), any::<u8>(), vec(any::<u8>(), 0..40))
    }

    proptest! {
        #[test]
        fn every_kind_round_trips(f in fields(), tag in any::<u16>()) {
            let strs = f.strs();
            let msgs = crate::common::all_messages(&f, &strs);
            crate::common::assert_covers_all_types(&msgs);
            for msg in &msgs {
                let mut out = Vec::new();
                msg.encode(tag, &mut out).unwrap();
                prop_assert_eq!(out.len(), msg.encoded_len().unwrap());

                let frame = Frame::new_checked(&out).unwrap();
                prop_assert_eq!(frame.tag(), tag);
                prop_assert_eq!(frame.msg_type(), msg.msg_type().as_u8());
                let back = Message::decode(&frame).unwrap();
                prop_assert_eq!(&back, msg);

                // Re-encoding the decoded (borrowed) form reproduces the bytes.
                let mut again = Vec::new();
                back.encode(tag, &mut again).unwrap();
                prop_assert_eq!(&again, &out);

                // Slice encoder agrees, and refuses a buffer one byte short.
                let mut buf = vec![0u8; out.len()];
                prop_assert_eq!(msg.encode_to_slice(tag, &mut buf), Ok(out.len()));
                prop_assert_eq!(&buf, &out);
                prop_assert_eq!(
                    msg.encode_to_slice(tag, &mut buf[..out.len() - 1]),
                    Err(Error::BufferTooSmall)
                );

                // Direction-specific decoders.
                match msg {
                    Message::T(t) => prop_assert_eq!(&TMessage::decode(&frame).unwrap(), t),
                    Message::R(r) => prop_assert_eq!(&RMessage::decode(&frame).unwrap(), r),
                }
            }
        }

        #[test]
        fn dir_entries_round_trip(
            entries in vec(dir_entry(), 0..20),
            budget in 0u32..2000,
        ) {
            let mut w = DirEntryWriter::new(budget);
            let mut pushed = Vec::new();
            for (qid, offset, ty, name) in &entries {
                let e = DirEntry { qid: *qid, offset: *offset, ty: *ty, name: Str::new(name) };
                let fits = w.fits(&e);
                let before = w.len();
                match w.push(&e) {
                    Ok(()) => {
                        prop_assert!(fits);
                        pushed.push(e);
                    }
                    Err(err) => {
                        prop_assert!(!fits);
                        prop_assert_eq!(err, Error::BufferTooSmall);
                        prop_assert_eq!(w.len(), before);
                    }
                }
                prop_assert!(w.len() <= budget as usize);
            }
            let decoded: Vec<_> = DirEntryIter::new(w.as_bytes()).collect::<Result<_, _>>().unwrap();
            prop_assert_eq!(&decoded, &pushed);

            let mut out = Vec::new();
            w.to_message().encode(1, &mut out).unwrap();
            let (_, msg) = RMessage::from_bytes(&out).unwrap();
            let via_msg: Vec<_> = DirEntryIter::from_message(&msg).unwrap().collect::<Result<_, _>>().unwrap();
            prop_assert_eq!(via_msg, pushed);
        }

        #[test]
        fn zero_copy_headers(tag in any::<u16>(), fid in any::<u32>(), offset in any::<u64>(), data in vec(any::<u8>(), 0..300)) {
            let count = data.len() as u32;
            let mut full = Vec::new();
            RMessage::Read { data: &data }.encode(tag, &mut full).unwrap();
            let hdr = encode_rread_header(tag, count).unwrap();
            prop_assert_eq!(&full[..RREAD_HEADER_LEN], &hdr[..]);
            prop_assert_eq!(&full[RREAD_HEADER_LEN..], &data[..]);

            full.clear();
            TMessage::Write { fid, offset, data: &data }.encode(tag, &mut full).unwrap();
            let hdr = encode_twrite_header(tag, fid, offset, count).unwrap();
            prop_assert_eq!(&full[..TWRITE_HEADER_LEN], &hdr[..]);
        }
    }
}
