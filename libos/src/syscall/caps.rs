//! `capget(2)`, `capset(2)`: a partition's program holds no capabilities
//! (as `/proc/self/status` says), and may only keep it so.

use crate::errno::Errno;
use crate::mm::user;

const V1: u32 = 0x1998_0330;
const V2: u32 = 0x2007_1026;
const V3: u32 = 0x2008_0522;

/// The header's version (the data words it implies), after Linux's
/// `cap_validate_magic`: an unknown one is answered with the preferred
/// version written back, and `None`.
fn header(hdr: u64) -> Result<(Option<u64>, i32), Errno> {
    let h = &user::read_array::<8>(hdr)?;
    let version = u32::from_le_bytes([h[0], h[1], h[2], h[3]]);
    let pid = i32::from_le_bytes([h[4], h[5], h[6], h[7]]);
    let words = match version {
        V1 => Some(1),
        V2 | V3 => Some(2),
        _ => {
            user::copy_in(hdr, &V3.to_le_bytes())?;
            None
        }
    };
    Ok((words, pid))
}

/// `capget(hdr, data)`: empty sets for this process's threads.
pub fn capget(a: &[u64; 6]) -> Result<u64, Errno> {
    let (words, pid) = header(a[0])?;
    let Some(words) = words else {
        // Asked without data: the version probe succeeds.
        return if a[1] == 0 { Ok(0) } else { Err(Errno::EINVAL) };
    };
    if pid < 0 {
        return Err(Errno::EINVAL);
    }
    if pid != 0
        && pid as u64 != crate::process::pid()
        && crate::process::thread(pid as u64).is_none()
    {
        return Err(Errno::ESRCH);
    }
    if a[1] == 0 {
        return Ok(0);
    }
    // effective, permitted, inheritable: 32 bits each per word.
    user::copy_in(a[1], &alloc::vec![0u8; 12 * words as usize])?;
    Ok(0)
}

/// `capset(hdr, data)`: keeping every set empty succeeds; gaining any
/// capability is `EPERM`.
pub fn capset(a: &[u64; 6]) -> Result<u64, Errno> {
    let (words, pid) = header(a[0])?;
    let words = words.ok_or(Errno::EINVAL)?;
    if pid != 0 && pid as u64 != crate::process::pid() {
        return Err(Errno::EPERM);
    }
    let data = user::read_vec(a[1], 12 * words)?;
    if data.iter().any(|&b| b != 0) {
        return Err(Errno::EPERM);
    }
    Ok(0)
}

/// `pkey_alloc(flags, rights)`: `EINVAL`, as Linux answers on a CPU without
/// protection keys (this one's, and a partition's).
pub fn pkey_alloc(_: &[u64; 6]) -> Result<u64, Errno> {
    Err(Errno::EINVAL)
}

/// `pkey_free(pkey)`: no key was ever handed out.
pub fn pkey_free(_: &[u64; 6]) -> Result<u64, Errno> {
    Err(Errno::EINVAL)
}

/// `pkey_mprotect(addr, len, prot, pkey)`: `mprotect` for the default key
/// (-1); any other key was never allocated.
pub fn pkey_mprotect(a: &[u64; 6]) -> Result<u64, Errno> {
    if a[3] as i32 != -1 {
        return Err(Errno::EINVAL);
    }
    super::mmap::mprotect(&[a[0], a[1], a[2], 0, 0, 0])
}
