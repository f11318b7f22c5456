//! `ioctl(2)`: the console is a terminal (enough for `isatty`) exactly
//! where the user's host stream behind it is one (the VMM says which at
//! boot), so a program writing into a pipe or file behaves as on the host;
//! the generic descriptor requests work on everything; sockets answer
//! `FIONREAD`, `SIOCOUTQ` and the interface requests (`SIOCGIF*`, the
//! host's interfaces: `net::ifaces`); other files are not terminals.

use crate::errno::Errno;
use crate::fd::{self, File, O_NONBLOCK, Object};
use crate::mm::user;

const TCGETS: u64 = 0x5401;
const TIOCGWINSZ: u64 = 0x5413;
const FIONREAD: u64 = 0x541b;
const FIONBIO: u64 = 0x5421;
const FIONCLEX: u64 = 0x5450;
const FIOCLEX: u64 = 0x5451;
const FIOASYNC: u64 = 0x5452;

/// `ioctl(fd, request, arg)`.
pub fn ioctl(a: &[u64; 6]) -> Result<u64, Errno> {
    let o = fd::object(a[0])?;
    match a[1] {
        FIOCLEX | FIONCLEX => return fd::set_cloexec(a[0], a[1] == FIOCLEX).map(|_| 0),
        FIONBIO => {
            let on = u32::from_le_bytes(user::read_array::<4>(a[2])?);
            let flags = o.status_flags();
            o.set_status_flags(if on != 0 {
                flags | O_NONBLOCK
            } else {
                flags & !O_NONBLOCK
            });
            return Ok(0);
        }
        FIOASYNC => return Err(Errno::EINVAL),
        _ => {}
    }
    let console = matches!(&o, Object::File(f) if matches!(**f, File::Console { .. }));
    // The host stream behind a console descriptor, not the descriptor's
    // number: `dup2(1, 5)` makes 5 a terminal if stdout is one.
    let tty = matches!(&o, Object::File(f)
        if matches!(**f, File::Console { fd } if crate::console::is_terminal(fd)));
    match (a[1], &o) {
        (TCGETS, _) if tty => {
            // A cooked terminal: ICRNL|IXON, OPOST|ONLCR, B38400|CS8|CREAD, ISIG|ICANON|ECHO…
            // The kernel's struct termios: four flag words, c_line, c_cc[19].
            let mut t = [0u8; 36];
            t[0..4].copy_from_slice(&0x0500u32.to_le_bytes());
            t[4..8].copy_from_slice(&0x0005u32.to_le_bytes());
            t[8..12].copy_from_slice(&0x00bfu32.to_le_bytes());
            t[12..16].copy_from_slice(&0x8a3bu32.to_le_bytes());
            user::copy_in(a[2], &t)?;
            Ok(0)
        }
        (TIOCGWINSZ, _) if tty => {
            let (rows, cols) = crate::console::winsize();
            let ws: [u16; 4] = [rows, cols, 0, 0];
            let mut b = [0u8; 8];
            for (i, v) in ws.iter().enumerate() {
                b[i * 2..i * 2 + 2].copy_from_slice(&v.to_le_bytes());
            }
            user::copy_in(a[2], &b)?;
            Ok(0)
        }
        (FIONREAD, Object::PipeRead(p)) => {
            user::copy_in(a[2], &(p.available() as u32).to_le_bytes())?;
            Ok(0)
        }
        // Either end of a pipe: what it holds.
        (FIONREAD, Object::PipeWrite(p)) => {
            user::copy_in(a[2], &(p.buffered() as u32).to_le_bytes())?;
            Ok(0)
        }
        // A regular file: the bytes past the position (Linux's generic
        // FIONREAD).
        (FIONREAD, Object::File(f)) if matches!(**f, File::P9 { dir: false, .. }) => {
            let File::P9 { fid, offset, .. } = &**f else {
                return Err(Errno::ENOTTY);
            };
            let c = crate::p9::mounted().ok_or(Errno::EBADF)?;
            let size = c.getattr(*fid)?.size;
            let left = size.saturating_sub(*offset.lock()).min(i32::MAX as u64) as u32;
            user::copy_in(a[2], &left.to_le_bytes())?;
            Ok(0)
        }
        // epoll's own ioctl answers every other request with EINVAL.
        (_, Object::Epoll(_)) => Err(Errno::EINVAL),
        (_, Object::Like(l)) => l.ioctl(a[1], a[2]),
        (FIONREAD, _) if console => {
            user::copy_in(a[2], &0u32.to_le_bytes())?;
            Ok(0)
        }
        _ => Err(Errno::ENOTTY),
    }
}
