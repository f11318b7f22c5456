//! Reads arbitrary bytes as a program's `sockaddr` (for both socket
//! families) and as the gateway's `ADDR!PORT` text. Nothing may panic; an
//! address that decodes encodes back to bytes that decode to it again.
#![no_main]

use astraea_libos::net::addr::{AF_INET, AF_INET6, decode, encode, parse_text};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for family in [AF_INET, AF_INET6] {
        if let Ok(a) = decode(data, family) {
            let again = encode(a, family);
            let back = decode(&again, family).expect("an encoded address decodes");
            assert_eq!(back.port(), a.port());
        }
    }
    if let Some(a) = parse_text(data) {
        let text = format!("{}!{}\n", a.ip(), a.port());
        assert_eq!(parse_text(text.as_bytes()), Some(a));
    }
});
