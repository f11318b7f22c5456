//! `ioctl(2)`: the console is a terminal (enough for `isatty`); other files
//! are not.

use crate::errno::Errno;
use crate::fd::{self, File};
use crate::mm::user;

const TCGETS: u64 = 0x5401;
const TIOCGWINSZ: u64 = 0x5413;

/// `ioctl(fd, request, arg)`.
pub fn ioctl(a: &[u64; 6]) -> Result<u64, Errno> {
    match (&*fd::get(a[0])?, a[1]) {
        (File::Console { .. }, TCGETS) => {
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
        (File::Console { .. }, TIOCGWINSZ) => {
            let ws: [u16; 4] = [24, 80, 0, 0];
            let mut b = [0u8; 8];
            for (i, v) in ws.iter().enumerate() {
                b[i * 2..i * 2 + 2].copy_from_slice(&v.to_le_bytes());
            }
            user::copy_in(a[2], &b)?;
            Ok(0)
        }
        _ => Err(Errno::ENOTTY),
    }
}
