//! Proves a `syscall` site in arbitrary bytes taken as an ELF file (the
//! site's offset from the first 4 bytes): nothing may panic, and a proof
//! must name a movable instruction of 2 to 15 bytes that ends at the site
//! (under 5 only with dead padding to jump through).
#![no_main]

use astraea_libos::linux::unwind::{Reader, prove_site};
use libfuzzer_sys::fuzz_target;

struct Bytes<'a>(&'a [u8]);

impl Reader for Bytes<'_> {
    fn read(&self, at: u64, len: u64) -> Result<Vec<u8>, &'static str> {
        let end = at.checked_add(len).ok_or("overflow")?;
        let (at, end) = (usize::try_from(at).map_err(|_| "big")?, usize::try_from(end).map_err(|_| "big")?);
        self.0.get(at..end).map(<[u8]>::to_vec).ok_or("past the end")
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 4 {
        return;
    }
    let site = u64::from(u32::from_le_bytes([data[0], data[1], data[2], data[3]]));
    let file = Bytes(&data[4..]);
    if let Ok(p) = prove_site(&file, site) {
        assert!((2..=15).contains(&p.prev.len()));
        assert!(p.prev.len() >= 5 || !p.pads.is_empty());
        let s = site as usize;
        assert_eq!(file.0.get(s..s + 2), Some(&[0x0f, 0x05][..]));
    }
});
