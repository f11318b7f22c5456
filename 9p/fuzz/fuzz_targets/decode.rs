//! Decodes arbitrary bytes as a frame + message. Anything that decodes must
//! re-encode to exactly the same bytes and decode again to an equal value.
#![no_main]

use astraea_9p::{DirEntryIter, Frame, Header, Message, RMessage, TMessage};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Stream helpers must not panic either.
    let _ = Header::parse(data);
    let _ = Frame::parse_prefix(data);
    // Raw bytes as Rreaddir data.
    for entry in DirEntryIter::new(data) {
        let _ = entry;
    }

    let Ok(frame) = Frame::new_checked(data) else {
        return;
    };
    assert_eq!(frame.size() as usize, data.len());
    let t = TMessage::decode(&frame);
    let r = RMessage::decode(&frame);
    let Ok(msg) = Message::decode(&frame) else {
        assert!(t.is_err() && r.is_err());
        return;
    };
    match msg {
        Message::T(m) => assert_eq!(t, Ok(m)),
        Message::R(m) => assert_eq!(r, Ok(m)),
    }

    // Walk the borrowed sub-structures.
    match msg {
        Message::T(TMessage::Walk { names, .. }) => {
            assert_eq!(names.iter().count(), names.len());
        }
        Message::R(RMessage::Walk { qids }) => {
            assert_eq!(qids.iter().count(), qids.len());
        }
        Message::R(RMessage::Readdir { data }) => {
            for entry in DirEntryIter::new(data) {
                let _ = entry;
            }
        }
        _ => {}
    }

    let mut out = Vec::new();
    msg.encode(frame.tag(), &mut out)
        .expect("decoded message must re-encode");
    assert_eq!(out, data, "re-encoding is not byte-identical");
    assert_eq!(msg.encoded_len(), Ok(data.len()));

    let mut buf = vec![0u8; data.len()];
    assert_eq!(msg.encode_to_slice(frame.tag(), &mut buf), Ok(data.len()));
    assert_eq!(buf, data);

    let again = Frame::new_checked(&out).expect("re-encoded frame");
    assert_eq!(again.tag(), frame.tag());
    assert_eq!(Message::decode(&again), Ok(msg));
});
