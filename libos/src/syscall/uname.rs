//! `uname(2)`: a Linux release that glibc accepts, and the host's name
//! (the VMM passes it as `host.name=`), so that the program's
//! `gethostname` resolves as on the host (Java's `InetAddress.getLocalHost`
//! looks its name up in `/etc/hosts`).

use crate::errno::Errno;
use crate::mm::user;
use crate::sync::IrqLock;

/// The node name: at most 64 bytes.
static NODENAME: IrqLock<([u8; 64], usize)> = IrqLock::new(([0; 64], 0));

/// Sets the node name `uname` reports (cut to 64 bytes).
pub fn set_nodename(name: &str) {
    let b = name.as_bytes();
    let n = b.len().min(64);
    let mut v = NODENAME.lock();
    v.0[..n].copy_from_slice(&b[..n]);
    v.1 = n;
}

/// `uname(buf)`: six 65-byte fields.
pub fn uname(a: &[u64; 6]) -> Result<u64, Errno> {
    let (name, len) = *NODENAME.lock();
    let node: &[u8] = if len == 0 { b"astraea" } else { &name[..len] };
    let fields: [&[u8]; 6] = [
        b"Linux",
        node,
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
