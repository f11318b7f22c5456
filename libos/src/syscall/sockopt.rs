//! `setsockopt(2)`, `getsockopt(2)`: the options a socket has, kept with
//! it as Linux checks and reports them (`net::options`); those the host
//! socket needs reach it through the gateway.

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
        let (level, name) = (a[1] as u32, a[2] as u32);
        let mut v = s.get_option(level, name)?;
        // Linux's `ip_getsockopt`: a value of 0..=255 read into fewer than
        // four bytes is one byte.
        if crate::net::options::Options::ip_byte(level, name)
            && (1..4).contains(&room)
            && v.len() >= 4
            && (0..=255).contains(&i32::from_le_bytes([v[0], v[1], v[2], v[3]]))
        {
            v.truncate(1);
        }
        let n = v.len().min(room as usize);
        if n > 0 {
            user::copy_in(a[3], &v[..n])?;
        }
        user::copy_in(a[4], &(n as u32).to_le_bytes())?;
        Ok(0)
    })
}
