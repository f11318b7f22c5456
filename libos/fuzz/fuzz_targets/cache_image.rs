//! Reads arbitrary bytes as a file-cache image (a host file anyone may have
//! edited, loaded by `astraea run --cache-image`). Nothing may panic; every
//! block the reader yields lies inside the image at a 64 KiB-aligned offset
//! and is at most one block long, and a re-encoded file record reads back
//! the same.
#![no_main]

use astraea_libos::cache_image::{END_RECORD, MAX_BLOCK, Reader, Record, file_record};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut image = astraea_libos::cache_image::MAGIC.to_vec();
    image.extend_from_slice(data);
    let Ok(reader) = Reader::new(&image) else {
        return;
    };
    for rec in reader {
        match rec {
            Ok(Record::File(id)) => {
                let mut again = astraea_libos::cache_image::MAGIC.to_vec();
                again.extend(file_record(&id));
                again.extend(END_RECORD);
                let back: Vec<_> = Reader::new(&again).unwrap().collect();
                assert_eq!(back.len(), 1);
                assert_eq!(back[0], Ok(Record::File(id)));
            }
            Ok(Record::Block { data, offset, .. }) => {
                assert!(data.len() <= MAX_BLOCK);
                assert_eq!(offset % MAX_BLOCK as u64, 0);
                let start = offset as usize;
                assert_eq!(&image[start..start + data.len()], data);
            }
            Err(_) => break,
        }
    }
});
