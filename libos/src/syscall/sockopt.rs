//! `setsockopt(2)`, `getsockopt(2)`: the options a TCP socket has, kept
//! with the socket; `TCP_NODELAY` and `SO_KEEPALIVE` reach the host socket.

use crate::errno::Errno;
use crate::mm::user;

/// `setsockopt(fd, level, name, value, len)`.
pub fn setsockopt(a: &[u64; 6]) -> Result<u64, Errno> {
    super::socket::with(a[0], |s| {
        if a[4] > 1024 {
            return Err(Errno::EINVAL);
        }
        let value = user::read_vec(a[3], a[4])?;
        s.set_option(a[1] as u32, a[2] as u32, &value).map(|()| 0)
    })
}

/// `getsockopt(fd, level, name, value, len)`.
pub fn getsockopt(a: &[u64; 6]) -> Result<u64, Errno> {
    super::socket::with(a[0], |s| {
        let room = &user::read_array::<4>(a[4])?;
        let room = i32::from_le_bytes([room[0], room[1], room[2], room[3]]);
        if room < 0 {
            return Err(Errno::EINVAL);
        }
        let v = s.get_option(a[1] as u32, a[2] as u32)?;
        let n = v.len().min(room as usize);
        if n > 0 {
            user::copy_in(a[3], &v[..n])?;
        }
        user::copy_in(a[4], &(n as u32).to_le_bytes())?;
        Ok(0)
    })
}
