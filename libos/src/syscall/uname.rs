//! `uname(2)`: a Linux release that glibc accepts.

use crate::errno::Errno;
use crate::mm::user;

/// `uname(buf)`: six 65-byte fields.
pub fn uname(a: &[u64; 6]) -> Result<u64, Errno> {
    let fields: [&[u8]; 6] = [
        b"Linux",
        b"astraea",
        b"6.1.0-astraea",
        b"#1 SMP",
        b"x86_64",
        b"(none)",
    ];
    let mut buf = [0u8; 65 * 6];
    for (i, f) in fields.iter().enumerate() {
        buf[i * 65..i * 65 + f.len()].copy_from_slice(f);
    }
    user::copy_in(a[0], &buf)?;
    Ok(0)
}
